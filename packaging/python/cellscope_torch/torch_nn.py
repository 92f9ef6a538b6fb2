"""Cellscope's rnn, gru and lstm as PyTorch's own torch.nn.RNN, torch.nn.GRU and torch.nn.LSTM.

Cellscope's baseline cells (cells/baseline.cpp; GateCell here) compute exactly what PyTorch's do: the same
gate order (GRU r, z, n; LSTM i, f, g, o), the GRU's reset gate applied to the hidden projection with its bias
(n = tanh(W_in x + b_in + r * (W_hn h + b_hn))), h' = (1 - z) * n + z * h, and tanh for the plain RNN. Only the
names differ: layer k's w_ih, w_hh, b_ih, b_hh are torch.nn's weight_ih_lk, weight_hh_lk, bias_ih_lk,
bias_hh_lk. to_torch_nn() renames them and checks what cannot be carried over:

- refused (ValueError, naming the option): a cell other than rnn, gru or lstm; model.layer_norm (torch.nn's
  cells have none); layers of different sizes (word_lm's tie_weights makes the last layer as wide as the
  embedding; one torch.nn module has one hidden size);
- carried over in evaluation, different in training (listed in the result's `training_differences` and
  warned about once): model.candidate_dropout, word_lm's weight_drop (DropConnect of w_hh) and its locked and
  embedding dropouts (torch.nn's `dropout` between layers is the char LM's model.dropout, the same operation).

    import cellscope_torch as ct
    lm = ct.to_torch_nn("exported/")      # or a model from ct.load(); a CharLM or WordLM -> TorchNNLanguageModel
    logits, (h, c) = lm(x)                # x [T, B] ids; state as torch.nn.LSTM returns it
    gru = lm.rnn                          # the torch.nn.GRU / LSTM / RNN itself
"""
import warnings
from typing import List, Optional, Tuple, Union

import torch
from torch import Tensor, nn

from .cells import GateCell
from .models import CellStack, CharLM, WordLM

_ONEDNN_LSTM_UNSOUND = None


def onednn_lstm_unsound() -> bool:
    """True when this torch's oneDNN LSTM computes wrong values without gradients (Debian 13's torch 2.6,
    built against the system's oneDNN 3.7: 0.26 off on a 16-unit LSTM under torch.no_grad(), right with
    gradients or with oneDNN off; docs/PLATFORMS.md). Probed once per process on a small LSTM of fixed weights,
    as Cellscope's C++ LSTM probes LibTorch (cells/baseline.cpp, onednn_lstm_unsound)."""
    global _ONEDNN_LSTM_UNSOUND
    if _ONEDNN_LSTM_UNSOUND is None:
        T, B, E, H = 3, 2, 5, 16

        def fixed(n, phase):
            return torch.sin(torch.arange(n, dtype=torch.float32) * 0.37 + phase)

        m = nn.LSTM(E, H)
        with torch.no_grad():
            for i, p in enumerate((m.weight_ih_l0, m.weight_hh_l0, m.bias_ih_l0, m.bias_hh_l0)):
                p.copy_(fixed(p.numel(), 0.4 + 0.1 * i).reshape(p.shape) * (0.5 if p.dim() == 2 else 0.1))
            x = fixed(T * B * E, 0.1).reshape(T, B, E)
            h0, c0 = fixed(B * H, 0.2).reshape(1, B, H), fixed(B * H, 0.3).reshape(1, B, H)
            as_is = m(x, (h0, c0))[0]
            with torch.backends.mkldnn.flags(enabled=False):
                native = m(x, (h0, c0))[0]
        # no warning: what to_torch_nn returns is then exact, and callers count its warnings (training differences)
        _ONEDNN_LSTM_UNSOUND = bool((as_is - native).abs().max().item() > 1e-4)
    return _ONEDNN_LSTM_UNSOUND


class LSTM(nn.LSTM):
    """torch.nn.LSTM that runs with oneDNN off where this torch's oneDNN LSTM is unsound (onednn_lstm_unsound);
    elsewhere exactly torch.nn.LSTM. What to_torch_nn gives for cell lstm: a torch.nn.LSTM (isinstance holds,
    its state_dict is torch.nn.LSTM's), whose logits are then the model's on every torch. Only built where the
    probe finds the defect."""

    def forward(self, *args, **kwargs):
        if onednn_lstm_unsound():
            with torch.backends.mkldnn.flags(enabled=False):
                return super().forward(*args, **kwargs)
        return super().forward(*args, **kwargs)


_NN_BASE = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}


def _nn_class(kind: str):
    """What to_torch_nn builds: torch.nn's own module, or for an LSTM on a torch whose oneDNN LSTM is unsound
    the LSTM above (elsewhere a plain torch.nn.LSTM, scriptable as ever)."""
    return LSTM if kind == "lstm" and onednn_lstm_unsound() else _NN_BASE[kind]


def _cells_of(model) -> List[GateCell]:
    if isinstance(model, (CellStack, WordLM)):
        cells = model.layers()
    elif isinstance(model, CharLM):
        cells = model.stack.layers()
    elif isinstance(model, GateCell):
        cells = [model]
    else:
        raise ValueError("cellscope_torch.to_torch_nn: a %s has no torch.nn counterpart (char_lm and word_lm models, "
                         "their cell stack or one cell of cell rnn, gru or lstm)" % type(model).__name__)
    for l, c in enumerate(cells):
        if not isinstance(c, GateCell):
            raise ValueError("cellscope_torch.to_torch_nn: layer %d is a %s; only cells rnn, gru and lstm are "
                             "torch.nn.RNN, GRU and LSTM" % (l, type(c).__name__))
        if c.ln_h_gain is not None or c.ln_x_gain is not None:
            raise ValueError("cellscope_torch.to_torch_nn: layer %d uses model.layer_norm; torch.nn.%s has no "
                             "layer normalization" % (l, _NN_BASE[c.kind].__name__))
    kinds = {c.kind for c in cells}
    sizes = {c.hidden_size for c in cells}
    if len(kinds) != 1 or len(sizes) != 1:
        raise ValueError("cellscope_torch.to_torch_nn: the layers' hidden sizes %s differ (word_lm's "
                         "tie_weights makes the last layer as wide as the embedding); one torch.nn module has "
                         "one hidden size" % [c.hidden_size for c in cells])
    return cells


def rnn_of(cells: List[GateCell], dropout: float = 0.0) -> nn.Module:
    """torch.nn.RNN / GRU / LSTM (seq-first, as Cellscope) with the cells' weights, layer by layer."""
    c0 = cells[0]
    rnn = _nn_class(c0.kind)(input_size=c0.I, hidden_size=c0.hidden_size, num_layers=len(cells), bias=True,
                       dropout=float(dropout) if len(cells) > 1 else 0.0)
    with torch.no_grad():
        for l, c in enumerate(cells):
            for ours, theirs in (("w_ih", "weight_ih_l%d"), ("w_hh", "weight_hh_l%d"), ("b_ih", "bias_ih_l%d"),
                                 ("b_hh", "bias_hh_l%d")):
                dst = getattr(rnn, theirs % l)
                src = getattr(c, ours)
                if dst.shape != src.shape:
                    raise ValueError("cellscope_torch.to_torch_nn: layer %d's %s is %s, torch.nn expects %s"
                                     % (l, ours, list(src.shape), list(dst.shape)))
                dst.copy_(src)
    rnn.to(dtype=c0.w_ih.dtype, device=c0.w_ih.device)
    return rnn


class TorchNNLanguageModel(nn.Module):
    """A char_lm or word_lm run as embedding -> torch.nn.RNN/GRU/LSTM -> linear.
    forward(x [T, B] ids, state=None) -> (logits [T, B, V], state in torch.nn's form: h [L, B, H], or (h, c))."""

    def __init__(self, embed: nn.Embedding, rnn: nn.Module, out_weight: Tensor, out_bias: Tensor,
                 tied: bool, training_differences: List[str]):
        super().__init__()
        self.embed = embed
        self.rnn = rnn
        self.tied = tied
        self.out = nn.Linear(out_weight.shape[1], out_weight.shape[0])
        with torch.no_grad():
            self.out.weight.copy_(out_weight)
            self.out.bias.copy_(out_bias)
        if tied:  # word_lm's tie_weights: the output layer is the embedding
            self.out.weight = self.embed.weight
        self.training_differences = list(training_differences)

    def forward(self, x: Tensor, state: Optional[Union[Tensor, Tuple[Tensor, Tensor]]] = None):
        h, state2 = self.rnn(self.embed(x), state)
        return self.out(h), state2


def _differences(model, cells: List[GateCell]) -> List[str]:
    out = []
    if any(c.cdrop > 0 for c in cells):
        out.append("model.candidate_dropout %g (dropout on the candidate inside the cell)" % cells[0].cdrop)
    if any(c.weight_drop > 0 for c in cells):
        out.append("word_lm's weight_drop %g (DropConnect of w_hh)" % cells[0].weight_drop)
    if isinstance(model, WordLM):
        for name in ("dropouti", "dropouth", "dropout", "dropoute"):
            if getattr(model, name) > 0:
                out.append("word_lm's %s %g (locked or embedding dropout)" % (name, getattr(model, name)))
    if isinstance(model, CharLM) and model.dropout > 0:
        out.append("char_lm's model.dropout %g on the embedding and the output (nn.Dropout around the module)"
                   % model.dropout)
    return out


def to_torch_nn(model, map_location="cpu"):
    """torch.nn's module for a Cellscope model of cell rnn, gru or lstm (see the module's text).

    model: an export directory (loaded with cellscope_torch.load), a CharLM or WordLM (-> TorchNNLanguageModel),
    their CellStack (-> torch.nn.RNN/GRU/LSTM) or one GateCell (-> a one-layer torch.nn module). The result is in
    the model's mode (eval for a loaded export) and gives its logits to float rounding."""
    if isinstance(model, str):
        from .exported import load
        model, _ = load(model, map_location=map_location)
    cells = _cells_of(model)
    diffs = _differences(model, cells)
    if diffs:
        warnings.warn("cellscope_torch.to_torch_nn: the same model in evaluation; in training torch.nn has no "
                      + "; ".join(diffs), stacklevel=2)
    if isinstance(model, GateCell):
        out = rnn_of(cells)
    elif isinstance(model, CellStack):
        out = rnn_of(cells, model.dropout)
    elif isinstance(model, CharLM):
        out = TorchNNLanguageModel(_copy_embedding(model.embed), rnn_of(cells, model.stack.dropout),
                                   model.out.weight.detach(), model.out.bias.detach(), False, diffs)
    else:  # WordLM
        tied = model.out_w is None
        emb = _copy_embedding(model.embed)
        w = model.embed.weight if tied else model.out_w
        out = TorchNNLanguageModel(emb, rnn_of(cells), w.detach(), model.out_b.detach(), tied, diffs)
    out.train(model.training)
    if not hasattr(out, "training_differences"):
        out.training_differences = diffs
    return out


def _copy_embedding(e: nn.Embedding) -> nn.Embedding:
    n = nn.Embedding(e.num_embeddings, e.embedding_dim)
    with torch.no_grad():
        n.weight.copy_(e.weight)
    return n.to(dtype=e.weight.dtype, device=e.weight.device)


def state_to_torch_nn(state, kind: str):
    """Cellscope's state (per layer: [h] or [h, c]) as torch.nn's: h [L, B, H] (rnn, gru) or (h, c) (lstm)."""
    h = torch.stack([s[0] for s in state])
    if kind == "lstm":
        return h, torch.stack([s[1] for s in state])
    return h


def state_from_torch_nn(state, kind: str):
    """torch.nn's state back into Cellscope's per-layer lists."""
    if kind == "lstm":
        h, c = state
        return [[h[l], c[l]] for l in range(h.shape[0])]
    return [[state[l]] for l in range(state.shape[0])]


def is_torch_nn(model) -> bool:
    """True for what to_torch_nn returns (a TorchNNLanguageModel, or a torch.nn.RNN, GRU or LSTM)."""
    return isinstance(model, (TorchNNLanguageModel, nn.RNN, nn.GRU, nn.LSTM))


def from_torch_nn(module, like):
    """The inverse of to_torch_nn: a Cellscope model (cellscope_torch's classes, Cellscope's tensor names) holding
    the weights of `module` (a TorchNNLanguageModel, or a torch.nn.RNN/GRU/LSTM for the cell stack), e.g. after
    fine-tuning it in PyTorch. like: the export directory (loaded with load) or a Cellscope model of the same
    architecture; it is copied, not changed. save_export(module, d) calls this itself."""
    import copy as _copy
    if isinstance(like, str):
        from .exported import load
        like, _ = load(like)
    model = _copy.deepcopy(like)
    cells = _cells_of(model)
    rnn = module.rnn if isinstance(module, TorchNNLanguageModel) else module
    if not isinstance(rnn, _NN_BASE[cells[0].kind]) or rnn.num_layers != len(cells):
        raise ValueError("cellscope_torch.from_torch_nn: a %d-layer torch.nn.%s does not fit a %d-layer %s model"
                         % (getattr(rnn, "num_layers", 0), type(rnn).__name__, len(cells), cells[0].kind))
    with torch.no_grad():
        for l, c in enumerate(cells):
            for ours, theirs in (("w_ih", "weight_ih_l%d"), ("w_hh", "weight_hh_l%d"), ("b_ih", "bias_ih_l%d"),
                                 ("b_hh", "bias_hh_l%d")):
                dst, src = getattr(c, ours), getattr(rnn, theirs % l)
                if dst.shape != src.shape:
                    raise ValueError("cellscope_torch.from_torch_nn: layer %d's %s is %s here, %s in the module"
                                     % (l, ours, list(dst.shape), list(src.shape)))
                dst.copy_(src)
        if isinstance(module, TorchNNLanguageModel):
            model.embed.weight.copy_(module.embed.weight)
            if isinstance(model, CharLM):
                model.out.weight.copy_(module.out.weight)
                model.out.bias.copy_(module.out.bias)
            else:  # WordLM: tied (out_w None: the embedding is the output layer) or its own output weights
                if model.out_w is not None:
                    model.out_w.copy_(module.out.weight)
                model.out_b.copy_(module.out.bias)
    return model
