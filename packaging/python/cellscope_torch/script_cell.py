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

from typing import Dict, List

import torch

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
