"""Write a recurrent cell for Cellscope's ``model.cell = "script"`` (cells/SCRIPT_CELL_NOTES.md).

A script cell is a ``torch.nn.Module`` that runs ONE recurrent step::

    input_size: int            # size of x_t (the embedding, or the layer below's output)
    hidden_size: int           # size of the output, state[0]
    state_sizes: List[int]     # the size of each state tensor; state_sizes[0] == hidden_size

    def forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]:
        # x [B, input_size], state[i] [B, state_sizes[i]]
        return new_state, {"gate": ..., "candidate": ...}   # named tensors [B, ...] for the analyses

and optionally ``reset_parameters(self) -> None``, which Cellscope calls (after seeding with the
run's training.seed) to initialise the parameters; without it every parameter is drawn from
U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).

``save_cell(module, path)`` scripts the module, runs the checks Cellscope runs when it loads the
file (attributes, forward's signature, one trial call on a zero batch) and saves it with
``torch.jit.save``. Only ``torch`` is needed (Debian: python3-torch).
"""

import hashlib
import os
from typing import Dict, List, Optional

import torch

from .cells import Cell

SIGNATURE = "forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]"
# Names the analyses read from forward's dict (recorded per layer as l<N>/<name>):
#   candidate  the candidate activation (per-character relevance, with h)
#   h          the output; recorded from state[0] when the dict has no "h"
#   gate, reset, forget, output_gate   gate histograms and saturation
ANALYSIS_NAMES = ("candidate", "h", "gate", "reset", "forget", "output_gate")


class ScriptCellError(ValueError):
    """The cell would be refused by Cellscope; the message says why."""


def _int_attr(m, name: str) -> int:
    v = getattr(m, name, None)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ScriptCellError(
            f"the module has no int attribute '{name}' (a script cell declares input_size: int, "
            "hidden_size: int and state_sizes: List[int])")
    return v


def check_cell(scripted: torch.jit.ScriptModule, batch: int = 2) -> Dict[str, object]:
    """The checks Cellscope runs at load; returns what the cell declares and the dict's names."""
    input_size = _int_attr(scripted, "input_size")
    hidden_size = _int_attr(scripted, "hidden_size")
    sizes = getattr(scripted, "state_sizes", None)
    if not isinstance(sizes, list) or not all(isinstance(s, int) for s in sizes):
        raise ScriptCellError("the module has no List[int] attribute 'state_sizes'")
    if input_size <= 0 or hidden_size <= 0:
        raise ScriptCellError("input_size and hidden_size must be positive")
    if not sizes or sizes[0] != hidden_size or min(sizes) <= 0:
        raise ScriptCellError(f"state_sizes {sizes} must be positive and start with hidden_size ({hidden_size})")
    schema = scripted.forward.schema
    args, rets = schema.arguments, schema.returns
    ok = (len(args) == 3 and str(args[1].type) == "Tensor" and str(args[2].type) == "List[Tensor]"
          and len(rets) == 1 and str(rets[0].type) == "Tuple[List[Tensor], Dict[str, Tensor]]")
    if not ok:
        raise ScriptCellError(f"wrong signature of forward: expected {SIGNATURE}, found {schema}")
    params = list(scripted.parameters())
    dtype = params[0].dtype if params else torch.float32
    was_training = scripted.training
    scripted.eval()
    try:
        with torch.no_grad():
            new_state, named = scripted(torch.zeros(batch, input_size, dtype=dtype),
                                        [torch.zeros(batch, s, dtype=dtype) for s in sizes])
    except Exception as e:  # the script's own error, as Cellscope would report it
        raise ScriptCellError(f"the trial call forward(x [{batch}, {input_size}], state {sizes}) failed: {e}") from e
    finally:
        scripted.train(was_training)
    if len(new_state) != len(sizes):
        raise ScriptCellError(f"forward returned {len(new_state)} state tensors, state_sizes declares {len(sizes)}")
    for i, (t, s) in enumerate(zip(new_state, sizes)):
        if list(t.shape) != [batch, s]:
            raise ScriptCellError(f"shape mismatch: new state[{i}] is {list(t.shape)}, expected {[batch, s]}")
    for k, v in named.items():
        if not k or "/" in k:
            raise ScriptCellError(f"the name '{k}' in forward's dict is empty or contains '/'")
        if v.dim() < 1 or v.shape[0] != batch:
            raise ScriptCellError(f"shape mismatch: dict entry '{k}' is {list(v.shape)}, expected [batch, ...]")
    return {"input_size": input_size, "hidden_size": hidden_size, "state_sizes": sizes, "names": sorted(named)}


def save_cell(module: torch.nn.Module, path: str) -> Dict[str, object]:
    """Script `module` (unless it already is a ScriptModule), check it as Cellscope does, save it to
    `path` with torch.jit.save and check the saved file again. Returns check_cell's answer."""
    scripted = module if isinstance(module, torch.jit.ScriptModule) else torch.jit.script(module)
    check_cell(scripted)
    torch.jit.save(scripted, path)
    return check_cell(torch.jit.load(path))


# ---------------------------------------------------------------- a script cell in an exported model
def file_sha256(path: str) -> str:
    """The file's SHA-256 as lower-case hex (what Cellscope records in model.script_sha256)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ScriptMismatchError(ValueError):
    """The script file is not the one the run was trained with (its SHA-256 differs from the recorded one)."""


def _flat(name: str) -> str:
    # Cellscope's name of a script parameter: the module's with '.' turned into '__' (SCRIPT_CELL_NOTES.md)
    return name.replace(".", "__")


def _drop_script_keys(module, state_dict, prefix, _metadata):
    for k in [k for k in state_dict if k.startswith(prefix + "_script.")]:
        del state_dict[k]


class ScriptCell(Cell):
    """``model.cell = "script"`` in plain PyTorch, as Cellscope's ScriptCellImpl (cells/script_cell.cpp) runs it.

    Each instance loads the file with ``torch.jit.load`` (one per layer and direction: its own parameters).
    The module's parameters and buffers become this module's own under Cellscope's names (``w_ih``,
    ``conv__weight``: '.' turned into '__'), the very tensors the TorchScript module computes with, so
    ``load_state_dict(strict=True)``, the optimizer, ``.double()`` / ``.to()`` and autograd all act on what the
    script uses. The TorchScript module is the submodule ``_script`` (so that ``torch.jit.trace`` and ONNX export
    can call it), left out of the state_dict (its names would appear twice) and fed the same tensors on
    ``load_state_dict``; ``parameters()`` yields each tensor once, by Cellscope's name.

    The loop over time is ``Cell.forward``'s (cells.py): the input projection is the identity, each step calls
    the script's ``forward(x_t, state)`` with the graph optimizer off (as Cellscope's PlainJit), the output is
    ``state[0]`` and the initial state zeros of ``state_sizes``. The named tensors of forward's dict (the
    analyses' probes) are dropped.

    `sha256`: the SHA-256 the run recorded (model.script_sha256); a file whose hash differs is refused
    (ScriptMismatchError naming the file and both hashes). `input_size` / `hidden_size`: what the layer reads and
    model.hidden; a file declaring others is refused (ScriptCellError)."""

    def __init__(self, path: str, input_size: int = 0, hidden_size: int = 0, sha256: str = ""):
        super().__init__()
        if not os.path.isfile(path):
            raise FileNotFoundError(f"cellscope_torch: the script cell '{path}' does not exist")
        if sha256:
            found = file_sha256(path)
            if found != sha256:
                raise ScriptMismatchError(
                    f"cellscope_torch: the script cell '{path}' is not the script this run was trained with: its "
                    f"SHA-256 is {found}, the run recorded {sha256} (model.script_sha256 in config.json). Export the "
                    "run again, or copy the run's RUN_DIR/script_cell.pt here.")
        try:
            module = torch.jit.load(path, map_location="cpu")
        except Exception as e:  # torch.jit.load raises RuntimeError and others
            first = (str(e).strip().split("\n") or [""])[0]
            raise ScriptCellError(f"cellscope_torch: '{path}' is not a TorchScript file: {first}") from e
        try:
            info = check_cell(module)
        except ScriptCellError as e:
            raise ScriptCellError(f"cellscope_torch: the script cell '{path}': {e}") from e
        if (input_size and info["input_size"] != input_size) or (hidden_size and info["hidden_size"] != hidden_size):
            raise ScriptCellError(
                f"cellscope_torch: the script cell '{path}' declares input_size {info['input_size']} and hidden_size "
                f"{info['hidden_size']}, the model reads {input_size} inputs with model.hidden {hidden_size}")
        self._path = path
        self.input_size = info["input_size"]
        self.hidden_size = info["hidden_size"]
        self.state_sizes = list(info["state_sizes"])
        self._script = module  # a submodule, out of the state_dict: see the class's notes
        for name, t in module.named_parameters():
            self.register_parameter(_flat(name), torch.nn.Parameter(t.detach(), requires_grad=t.requires_grad))
        for name, t in module.named_buffers():
            self.register_buffer(_flat(name), t)
        self._slots = [n for n, _ in module.named_parameters()] + [n for n, _ in module.named_buffers()]
        self._push()
        module.train(self.training)
        self._register_state_dict_hook(_drop_script_keys)
        self._register_load_state_dict_pre_hook(self._feed_script_keys)

    def _feed_script_keys(self, state_dict, prefix, *_):
        # the submodule's own names get the same tensors, so that a strict load finds every key it expects
        for name in self._slots:
            if prefix + _flat(name) in state_dict:
                state_dict[prefix + "_script." + name] = state_dict[prefix + _flat(name)]

    def _push(self):
        """Point the TorchScript module's parameter and buffer slots at this module's tensors."""
        for name in self._slots:
            *owners, leaf = name.split(".")
            target = self._script
            for o in owners:
                target = getattr(target, o)
            mine = getattr(self, _flat(name))
            if getattr(target, leaf) is not mine:
                setattr(target, leaf, mine)

    def _apply(self, fn):
        # .to(), .double(), ... may replace tensors (buffers always): the script must compute with the new ones
        super()._apply(fn)
        self._push()
        return self

    def initial_state(self, B: int, like: torch.Tensor) -> List[torch.Tensor]:
        return [like.new_zeros([B, s]) for s in self.state_sizes]

    def input_projection(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def step(self, xp: torch.Tensor, state: List[torch.Tensor], whh: Optional[torch.Tensor],
             ds: Optional[List[torch.Tensor]]) -> List[torch.Tensor]:
        if torch.jit.is_scripting():
            # inside a scripted model the call is part of the model's graph (the optimizer's setting is the
            # caller's: torch.jit.optimized_execution(False) around the call to match Cellscope exactly)
            new_state, _named = self._script(xp, state)
            return new_state
        return self._eager_step(xp, state)

    @torch.jit.unused
    def _eager_step(self, xp: torch.Tensor, state: List[torch.Tensor]) -> List[torch.Tensor]:
        with torch.jit.optimized_execution(False):
            new_state, _named = self._script(xp, list(state))
        return list(new_state)
