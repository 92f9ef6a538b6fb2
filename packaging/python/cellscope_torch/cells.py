"""Cellscope's recurrent cells in plain PyTorch, written so that `torch.jit.script` compiles them.

Each cell is written from the papers' equations as Cellscope implements them (core/model/cells/*.cpp),
with Cellscope's parameter names, so that a state_dict exported by `cellscope-cli export` loads with
strict=True. One interface for all of them:

    xp = cell.input_projection(x)              # the input half of the affine maps, whole sequence [T, B, *]
    state = cell.step(xp[t], state, whh, ds)   # one time step; state is a list of tensors, state[0] = h
    out, state = cell(x, state, extra)         # the whole sequence ([T, B, H], final state)

`step`'s `whh` is the recurrent weight of this forward (word_lm's weight drop; None: the cell's own) and
`ds` a list that receives the MZU's zone disagreement per step (None: not wanted); `forward`'s `extra` a list
that receives the MZU's training term. Dropout-like options (candidate dropout) act in training mode only, as in
Cellscope. The same modules are the Python peers of `cellscope-cli bench --peer` (core/run/bench/peers/peers.py).

TorchScript (SCRIPTING_NOTES.md beside this file): every option is resolved in __init__ into a typed attribute
(torch.jit.Final for what selects a code path); a parameter a configuration lacks is registered as None, so
its `is not None` test is decided when the model is compiled and the state_dict keeps Cellscope's names;
transitions and layers are the module's own children (Cellscope's names `transition1`, `layer0`), which
TorchScript unrolls with `named_children()` / `children()`.
"""
import math
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

try:
    from torch.jit import Final
except ImportError:  # pragma: no cover (torch < 1.8)
    from typing_extensions import Final  # type: ignore


def uniform(shape, fan_in):
    k = 1.0 / math.sqrt(max(fan_in, 1))
    return nn.Parameter(torch.empty(*shape).uniform_(-k, k))


def need(m, key):
    """model.<key> of a resolved model section (every option that applies filled in, as Cellscope resolves a
    config): a missing key is refused by name, never replaced by a default restated here."""
    if key not in m:
        raise ValueError("cellscope_torch: model.%s is missing from the model section of cell %r: a resolved section "
                         "is needed (load() reads one from an export; models.with_defaults(section, schema) fills "
                         "one in from export.json's schema)" % (key, m.get("cell")))
    return m[key]


ANY = None  # any value of the option's type (numbers: the range Cellscope validated)
BOOL = (False, True)

# The cell families this package builds, as Cellscope's cell registry names them (cells/registry.h,
# CellInfo::family): family -> {"cells": its cells, "options": the model options it implements (option -> the
# values implemented, ANY = every value; an enum value Cellscope adds is refused by name until it is implemented
# here: tests/core/test_export_torch_registry.cpp exports every value of every enum), "defaults": its options'
# defaults in a bare section (models.BARE_DEFAULTS), "build": (resolved model section, input size) -> the cell}.
# Each family registers itself beside its class (register_family, at the end of this file; mcrnn and script in
# models.py, whose builders need the model layer): a new cell is its class and one register_family call here.
FAMILIES = {}
# cell -> family, from FAMILIES. load() compares it with the family export.json's schema gives the run's cell, and
# refuses a cell this table lacks or one whose family is not Cellscope's.
CELL_FAMILIES = {}


def register_family(name, cells, options, defaults, build):
    """Adds a cell family (FAMILIES) and its cells (CELL_FAMILIES)."""
    FAMILIES[name] = {"cells": tuple(cells), "options": dict(options), "defaults": dict(defaults), "build": build}
    for c in cells:
        CELL_FAMILIES[c] = name


def family(cell):
    """Cellscope's family of a cell this package builds (CELL_FAMILIES); NotImplementedError for any other."""
    if cell not in CELL_FAMILIES:
        raise NotImplementedError("cellscope_torch: cell '%s' is not implemented (implemented: %s)"
                                  % (cell, ", ".join(CELL_FAMILIES)))
    return CELL_FAMILIES[cell]


class Cell(nn.Module):
    """Base: the step-wise loop over time."""

    hidden_size: Final[int]

    def __init__(self):
        super().__init__()
        self.hidden_size = 0

    def initial_state(self, B: int, like: Tensor) -> List[Tensor]:
        return [like.new_zeros([B, self.hidden_size])]

    def input_projection(self, x: Tensor) -> Tensor:
        return x

    def recurrent_weight(self) -> Optional[Tensor]:
        """The w_hh of this forward (word_lm's DropConnect mask in training); None: the cell's own."""
        return None

    def with_previous_output(self, state: List[Tensor], h0: Tensor, recurrence: bool) -> List[Tensor]:
        """A decoder's initial state whose previous output is h0 (RNNSearch's bridge s_0); with recurrence
        (model.bridge = recurrence) also every state the cell's recurrence reads as its past (Cellscope's
        CellImpl::with_previous_output). The default: state[0] = h0."""
        state[0] = h0
        return state

    def step(self, xp: Tensor, state: List[Tensor], whh: Optional[Tensor],
             ds: Optional[List[Tensor]]) -> List[Tensor]:
        raise NotImplementedError("cellscope_torch: Cell.step")

    def forward(self, x: Tensor, state: Optional[List[Tensor]] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, List[Tensor]]:
        if state is None:
            state = self.initial_state(x.shape[1], x)
        whh = self.recurrent_weight()
        outs: List[Tensor] = []
        for xt in self.input_projection(x).unbind(0):
            state = self.step(xt, state, whh, None)
            outs.append(state[0])
        return torch.stack(outs), state


# ---------------------------------------------------------------- RNN, GRU, LSTM (cells/baseline.cpp)
class GateCell(Cell):
    """rnn (1 gate), gru (3: r, z, n) and lstm (4: i, f, g, o); layer normalization per gate chunk of the input
    and hidden pre-activations (Ba et al. 2016) when model.layer_norm, candidate dropout in training."""

    GATES = {"rnn": 1, "gru": 3, "lstm": 4}
    kind: Final[str]
    gates: Final[int]
    I: Final[int]
    ln: Final[bool]
    cdrop: Final[float]
    weight_drop: float  # word_lm's DropConnect of w_hh (training; set by the model after construction)

    def __init__(self, kind, I, H, layer_norm=False, candidate_dropout=0.0):
        super().__init__()
        self.kind, self.gates, self.hidden_size, self.I = kind, self.GATES[kind], H, I
        self.ln, self.cdrop = bool(layer_norm), float(candidate_dropout)
        self.weight_drop = 0.0
        G, k = self.gates * H, 1.0 / math.sqrt(H)
        self.w_ih = nn.Parameter(torch.empty(G, I).uniform_(-k, k))
        self.w_hh = nn.Parameter(torch.empty(G, H).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(G).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(G).uniform_(-k, k))
        # a transition GRU (no input) has no input LN (cells/baseline.cpp); absent parameters are None
        for name in ("ln_x_gain", "ln_x_bias", "ln_h_gain", "ln_h_bias"):
            self.register_parameter(name, None)
        if layer_norm:
            if I > 0:
                self.ln_x_gain = nn.Parameter(torch.ones(self.gates, H))
                self.ln_x_bias = nn.Parameter(torch.zeros(self.gates, H))
            self.ln_h_gain = nn.Parameter(torch.ones(self.gates, H))
            self.ln_h_bias = nn.Parameter(torch.zeros(self.gates, H))

    def initial_state(self, B: int, like: Tensor) -> List[Tensor]:
        z = like.new_zeros([B, self.hidden_size])
        if self.kind == "lstm":
            return [z, z.clone()]
        return [z]

    def _ln(self, a: Tensor, g: Tensor, b: Tensor) -> Tensor:
        shp = a.shape
        v = a.reshape([-1, self.gates, self.hidden_size])
        return (F.layer_norm(v, [self.hidden_size], eps=1e-5) * g + b).reshape(shp)

    def input_projection(self, x: Tensor) -> Tensor:
        a = x @ self.w_ih.t()
        g, b = self.ln_x_gain, self.ln_x_bias
        if g is not None and b is not None:  # model.layer_norm (None-ness is decided when compiling)
            a = self._ln(a, g, b)
        return a + self.b_ih

    def recurrent_weight(self) -> Optional[Tensor]:
        # one DropConnect mask of w_hh per forward (AWD-LSTM), training only
        if self.weight_drop > 0 and self.training:
            return F.dropout(self.w_hh, self.weight_drop, True)
        return None

    def hidden_projection(self, h: Tensor, whh: Optional[Tensor] = None) -> Tensor:
        w = self.w_hh
        if whh is not None:
            w = whh
        g, b = self.ln_h_gain, self.ln_h_bias
        if g is not None and b is not None:  # model.layer_norm
            return self._ln(h @ w.t(), g, b) + self.b_hh
        return torch.addmm(self.b_hh, h, w.t())

    def _cdrop(self, n: Tensor) -> Tensor:
        if self.cdrop > 0 and self.training:
            return F.dropout(n, self.cdrop, True)
        return n

    def step(self, xp: Tensor, state: List[Tensor], whh: Optional[Tensor],
             ds: Optional[List[Tensor]]) -> List[Tensor]:
        h = state[0]
        hp = self.hidden_projection(h, whh)
        H = self.hidden_size
        if self.kind == "rnn":
            return [self._cdrop(torch.tanh(xp + hp))]
        if self.kind == "gru":
            r = torch.sigmoid(xp[:, :H] + hp[:, :H])
            z = torch.sigmoid(xp[:, H:2 * H] + hp[:, H:2 * H])
            n = self._cdrop(torch.tanh(xp[:, 2 * H:] + r * hp[:, 2 * H:]))
            return [n + z * (h - n)]
        g4 = xp + hp
        i, f = torch.sigmoid(g4[:, :H]), torch.sigmoid(g4[:, H:2 * H])
        g, o = self._cdrop(torch.tanh(g4[:, 2 * H:3 * H])), torch.sigmoid(g4[:, 3 * H:])
        c = f * state[1] + i * g
        return [o * torch.tanh(c), c]


class HoRNN(Cell):
    """ho_rnn (cells/hornn.cpp): Soltani and Jiang's higher-order RNN, h_t = f(W_in x_t + b_ih + sum_{n=1..N}
    W_hn h_{t-n} + b_hh), w_hh [H, N*H] = [W_h1 | ... | W_hN]; the state is [h_{t-1}, ..., h_{t-N}], newest first."""

    order: Final[int]
    sigmoid: Final[bool]

    def __init__(self, I, H, order, activation):
        super().__init__()
        if activation not in ("tanh", "sigmoid"):
            raise NotImplementedError("cellscope_torch: model.ho_activation = %r is not implemented" % activation)
        self.hidden_size, self.order, self.sigmoid = H, int(order), activation == "sigmoid"
        k = 1.0 / math.sqrt(H)
        self.w_ih = nn.Parameter(torch.empty(H, I).uniform_(-k, k))
        self.w_hh = nn.Parameter(torch.empty(H, self.order * H).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(H).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(H).uniform_(-k, k))

    def initial_state(self, B: int, like: Tensor) -> List[Tensor]:
        out: List[Tensor] = []
        for _ in range(self.order):
            out.append(like.new_zeros([B, self.hidden_size]))
        return out

    def input_projection(self, x: Tensor) -> Tensor:
        return x @ self.w_ih.t() + self.b_ih

    def with_previous_output(self, state: List[Tensor], h0: Tensor, recurrence: bool) -> List[Tensor]:
        """With recurrence the N preceding states are all s_0 (HoRnnCellImpl::with_previous_output)."""
        for k in range(self.order if recurrence else 1):
            state[k] = h0
        return state

    def step(self, xp: Tensor, state: List[Tensor], whh: Optional[Tensor],
             ds: Optional[List[Tensor]]) -> List[Tensor]:
        pre = torch.addmm(xp + self.b_hh, torch.cat(state, 1), self.w_hh.t())
        h = torch.sigmoid(pre) if self.sigmoid else torch.tanh(pre)
        out = [h]
        for n in range(self.order - 1):  # h_{t-N} drops out
            out.append(state[n])
        return out


class HMLevel(nn.Module):
    """One level of hm_rnn (HmRnnLevelImpl): rows (f, i, o, g, z~), no z~ row and no w_td at the top."""

    top: Final[bool]

    def __init__(self, I, H, top):
        super().__init__()
        k, rows = 1.0 / math.sqrt(H), 4 * H + (0 if top else 1)
        self.top = bool(top)
        self.w_bu = nn.Parameter(torch.empty(rows, I).uniform_(-k, k))
        self.w_rec = nn.Parameter(torch.empty(rows, H).uniform_(-k, k))
        self.register_parameter("w_td", None)
        if not top:
            self.w_td = nn.Parameter(torch.empty(rows, H).uniform_(-k, k))
        self.b = nn.Parameter(torch.empty(rows).uniform_(-k, k))
        self.w_out = nn.Parameter(torch.empty(H, H).uniform_(-k, k))


class HMRNN(Cell):
    """hm_rnn (cells/hmrnn.cpp): Chung, Ahn and Bengio's HM-LSTM, L levels in one layer. Per level l the
    pre-activation s = U_l h^l_{t-1} + z^l_{t-1} U_{l+1} h^{l+1}_{t-1} + z^{l-1}_t W_{l-1} h^{l-1}_t + b (rows f, i,
    o, g, z~), FLUSH / UPDATE / COPY from z^l_{t-1} and z^{l-1}_t (z^0 = 1), z = step(hard sigmoid) with the
    straight-through gradient (the top level has no boundary), and the output module
    h^e = ReLU(sum_l sigm(w^l . [h^1..h^L]) W^e_l h^l). State [h^e, h^1..h^L, c^1..c^L, z^1..z^L]."""

    levels: Final[int]
    slope: Final[float]

    def __init__(self, I, H, levels, slope):
        super().__init__()
        self.hidden_size, self.levels, self.slope = H, int(levels), float(slope)
        for l in range(self.levels):
            setattr(self, "level%d" % l, HMLevel(I if l == 0 else H, H, l + 1 == self.levels))
        k = 1.0 / math.sqrt(H)
        self.w_gate = nn.Parameter(torch.empty(self.levels, self.levels * H).uniform_(-k, k))

    def initial_state(self, B: int, like: Tensor) -> List[Tensor]:
        out: List[Tensor] = [like.new_zeros([B, self.hidden_size])]
        for _ in range(2 * self.levels):
            out.append(like.new_zeros([B, self.hidden_size]))
        for _ in range(self.levels):
            out.append(like.new_zeros([B, 1]))
        return out

    def with_previous_output(self, state: List[Tensor], h0: Tensor, recurrence: bool) -> List[Tensor]:
        """With recurrence h^e and every level's h are s_0 (HmRnnCellImpl::with_previous_output)."""
        for k in range(1 + self.levels if recurrence else 1):
            state[k] = h0
        return state

    def step(self, xp: Tensor, state: List[Tensor], whh: Optional[Tensor],
             ds: Optional[List[Tensor]]) -> List[Tensor]:
        H, L = self.hidden_size, self.levels
        hs: List[Tensor] = []
        cs: List[Tensor] = []
        zs: List[Tensor] = []
        outs: List[Tensor] = []
        below = xp
        z_below = xp.new_ones([xp.shape[0], 1])  # z^0 = 1
        l = 0
        for lv in self.children():  # level0, level1, ... (TorchScript unrolls the loop)
            hp, cp, zp = state[1 + l], state[1 + L + l], state[1 + 2 * L + l]
            pre = torch.addmm(lv.b, hp, lv.w_rec.t()) + z_below * (below @ lv.w_bu.t())
            w_td = lv.w_td
            if w_td is not None:
                pre = pre + zp * (state[2 + l] @ w_td.t())
            f, i = torch.sigmoid(pre[:, :H]), torch.sigmoid(pre[:, H:2 * H])
            o, g = torch.sigmoid(pre[:, 2 * H:3 * H]), torch.tanh(pre[:, 3 * H:4 * H])
            ig = i * g
            cn = zp * ig + (1 - zp) * (z_below * (f * cp + ig) + (1 - z_below) * cp)
            copy = (1 - zp) * (1 - z_below)
            hn = copy * hp + (1 - copy) * (o * torch.tanh(cn))
            if lv.top:
                zn = torch.zeros_like(zp)
            else:
                soft = torch.clamp((self.slope * pre[:, 4 * H:4 * H + 1] + 1) / 2, 0.0, 1.0)
                zn = soft + ((soft > 0.5).to(soft.dtype) - soft).detach()  # straight-through
            hs.append(hn)
            cs.append(cn)
            zs.append(zn)
            outs.append(hn @ lv.w_out.t())
            below, z_below = hn, zn
            l += 1
        gates = torch.sigmoid(torch.cat(hs, 1) @ self.w_gate.t())
        he = gates[:, 0:1] * outs[0]
        for k in range(1, L):
            he = he + gates[:, k:k + 1] * outs[k]
        return [torch.relu(he)] + hs + cs + zs


class GRUDT(Cell):
    """GRU+DT (MZU paper, Table 4 baseline): a GRU then L transition GRUs with zero input per step; a transition
    is fed b_ih alone (W_ih 0 vanishes). Shared transitions (model.share_transition) reuse the first GRU."""

    I: Final[int]
    shared: Final[bool]
    depth: Final[int]

    def __init__(self, I, H, depth=1, share_transition=True, layer_norm=False, candidate_dropout=0.0):
        super().__init__()
        self.hidden_size, self.I = H, I
        self.first = GateCell("gru", I, H, layer_norm, candidate_dropout)
        self.shared = bool(share_transition)
        self.depth = int(depth)
        if not share_transition:
            for l in range(depth):
                setattr(self, "transition%d" % (l + 1), GateCell("gru", 0, H, layer_norm, candidate_dropout))

    def transitions(self):
        """The transition GRUs in order (Python use; forward unrolls the children)."""
        return [self.first if self.shared else getattr(self, "transition%d" % (l + 1)) for l in range(self.depth)]

    def input_projection(self, x: Tensor) -> Tensor:
        return self.first.input_projection(x)

    def step(self, xp: Tensor, state: List[Tensor], whh: Optional[Tensor],
             ds: Optional[List[Tensor]]) -> List[Tensor]:
        state = self.first.step(xp, state, None, None)
        if self.shared:
            for _ in range(self.depth):
                bias = self.first.b_ih
                state = self.first.step(bias.unsqueeze(0).expand([state[0].shape[0], -1]), state, None, None)
        else:
            for name, tr in self.named_children():
                if name != "first":
                    state = tr.step(tr.b_ih.unsqueeze(0).expand([state[0].shape[0], -1]), state, None, None)
        return state

    def forward(self, x: Tensor, state: Optional[List[Tensor]] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, List[Tensor]]:
        if self.first.ln or (self.first.cdrop > 0 and self.training):
            if state is None:
                state = self.initial_state(x.shape[1], x)
            outs: List[Tensor] = []
            for xt in self.input_projection(x).unbind(0):
                state = self.step(xt, state, None, None)
                outs.append(state[0])
            return torch.stack(outs), state
        # LibTorch's GRU cell kernel per step (the same equations as step()): as the Python peer of
        # `bench --peer` has always run it
        h = x.new_zeros([x.shape[1], self.hidden_size]) if state is None else state[0]
        f = self.first
        zero_in, zero = x.new_zeros([x.shape[1], self.I]), x.new_zeros([x.shape[1], 0])
        outs = []
        for xt in x.unbind(0):
            h = torch.gru_cell(xt, h, f.w_ih, f.w_hh, f.b_ih, f.b_hh)
            if self.shared:
                for _ in range(self.depth):
                    h = torch.gru_cell(zero_in, h, f.w_ih, f.w_hh, f.b_ih, f.b_hh)
            else:
                for name, tr in self.named_children():
                    if name != "first":
                        h = torch.gru_cell(zero, h, tr.w_ih, tr.w_hh, tr.b_ih, tr.b_hh)
            outs.append(h)
        return torch.stack(outs), [h]


# ---------------------------------------------------------------- MZU (cells/mzu.cpp, MZU eqs. 1-19)
def squash(s: Tensor) -> Tensor:
    n2 = (s * s).sum(-1, keepdim=True)  # eq. 13, safe at s = 0 like Cellscope's
    return s * (torch.sqrt(n2 + 1e-12) / (1 + n2))


def zone_disagreement_of_cosines(cosm: Tensor, pairs: str, form: str) -> Tensor:
    """eq. 18 from the zones' cosine matrix [.., N, N]: 'all' pairs or the 'distinct' ones, of cos or cos^2."""
    v = cosm * cosm if form == "squared_cosine" else cosm
    if pairs == "all":
        return -v.mean([-1, -2])
    N = cosm.shape[-1]
    if N < 2:
        return v.new_zeros(v.shape[:-2])
    off = v.sum([-1, -2]) - v.diagonal(0, -2, -1).sum(-1)
    return off * (-1.0 / (N * (N - 1)))


class MZUBlock(nn.Module):
    """One depth of an MZU: the M-functions M_h, M_g stacked on a leading K dim."""

    comp: Final[str]
    H: Final[int]
    N: Final[int]
    dz: Final[int]
    I: Final[int]
    m_h: Final[bool]
    m_g: Final[bool]
    K: Final[int]
    R: Final[int]
    J: Final[int]
    do: Final[int]
    iters: Final[int]
    sat_qkv: Final[str]
    gcn_act: Final[str]
    gcn_edges: Final[str]
    gcn_adj: Final[str]
    gcn_abs_degree: Final[bool]
    ffn_residual: Final[bool]
    ln: Final[bool]
    ln_pos: Final[str]
    cdrop: Final[float]
    pairs: Final[str]
    form: Final[str]

    OPTIONAL = ("w_x", "b_reg", "w_qkv", "w_g", "w_c", "w1", "b1", "w2", "b2", "wo", "bo", "ln_z_gain", "ln_z_bias",
                "ln_c_gain", "ln_c_bias", "ln_g_gain", "ln_g_bias")

    def __init__(self, m, I):
        super().__init__()
        comp = m["cell"][:3]
        H, N = int(m["hidden"]), int(need(m, "zones"))
        self.comp, self.H, self.N, self.dz, self.I = comp, H, N, H // N, int(I)
        self.m_h, self.m_g = not need(m, "regular_trans"), not need(m, "regular_gate")
        self.K = int(self.m_h) + int(self.m_g)
        self.R = 2 - self.K
        # the options of one MZU only (Cellscope's schema has them for that cell alone); "" / 0: not this cell's
        caps = int(need(m, "capsules")) if comp == "cap" else 0
        self.J, self.do = (caps, H // caps) if comp == "cap" else (N, self.dz)
        self.iters = int(need(m, "routing_iters")) if comp == "cap" else 0
        self.sat_qkv = need(m, "sat_qkv") if comp == "sat" else ""
        gcn = comp == "gcn"
        self.gcn_act = need(m, "gcn_activation") if gcn else ""
        self.gcn_edges = need(m, "gcn_edges") if gcn else ""
        self.gcn_adj = need(m, "gcn_adjacency") if gcn else ""
        # eq. 9's degree (an older run's config and an MC-RNN's gcn_mzu base say signed_clamped: Cellscope's
        # config/schema.h as_written and cells/mcrnn.h mcrnn_base_model fill it in)
        self.gcn_abs_degree = gcn and need(m, "gcn_degree") == "absolute"
        self.ffn_residual = bool(need(m, "ffn_residual"))
        self.ln = bool(need(m, "layer_norm"))
        self.ln_pos = need(m, "ln_position")
        self.cdrop = float(need(m, "candidate_dropout"))
        self.pairs = need(m, "disagreement_pairs")
        self.form = need(m, "disagreement_form")
        K, R, dz, J, do, D = self.K, self.R, self.dz, self.J, self.do, need(m, "filter")
        for name in self.OPTIONAL:  # what this configuration lacks stays None (out of the state_dict)
            self.register_parameter(name, None)
        G = (K + R) * H
        if I > 0:
            self.w_x = uniform((G, I), I + H)
        self.w_h = uniform((G, H), I + H)
        if R > 0:
            self.b_reg = uniform((R * H,), I + H)
        if K > 0:
            if comp == "sat":
                self.w_qkv = uniform((K if self.sat_qkv == "shared" else K * N, dz, 3 * dz), dz)
            elif comp == "gcn":
                self.w_g = uniform((K, dz, dz), dz)
            else:
                self.w_c = uniform((K, dz, J * do), dz)
            self.w1, self.b1 = uniform((K, do, D), do), uniform((K, 1, D), do)
            self.w2, self.b2 = uniform((K, D, do), D), uniform((K, 1, do), D)
            self.wo, self.bo = uniform((K, J * do, H), J * do), uniform((K, 1, H), J * do)
            if self.ln and self.ln_pos == "zones":
                self.ln_z_gain = nn.Parameter(torch.ones(K, N, dz))
                self.ln_z_bias = nn.Parameter(torch.zeros(K, N, dz))
        if self.ln:
            pre = self.ln_pos != "zones"
            if pre or not self.m_h:
                self.ln_c_gain, self.ln_c_bias = nn.Parameter(torch.ones(H)), nn.Parameter(torch.zeros(H))
            if pre or not self.m_g:
                self.ln_g_gain, self.ln_g_bias = nn.Parameter(torch.ones(H)), nn.Parameter(torch.zeros(H))

    def reg_bias(self) -> Tensor:
        b = self.b_reg
        if b is not None:
            return torch.cat([b.new_zeros(self.K * self.H), b])
        raise RuntimeError("mzu: this block has no regular map")

    def input_projection(self, x: Tensor) -> Tensor:  # eq. 4's input half for the whole sequence (+ regular bias)
        w = self.w_x
        if w is not None:
            a = x @ w.t()
            return a + self.reg_bias() if self.R > 0 else a
        raise RuntimeError("mzu: a transition block has no input")

    def compose(self, Z: Tensor, cosm: Optional[Tensor]) -> Tensor:  # Z [K, B, N, dz] -> [K, B*J, do]
        K, B, N, dz = Z.shape[0], Z.shape[1], Z.shape[2], Z.shape[3]
        w_qkv = self.w_qkv
        if w_qkv is not None:  # sat, eq. 6
            if self.sat_qkv == "shared":
                qkv = torch.bmm(Z.reshape(K, B * N, dz), w_qkv).view(K * B, N, 3 * dz)
            else:
                Zn = Z.transpose(1, 2).reshape(K * N, B, dz)
                qkv = torch.bmm(Zn, w_qkv).view(K, N, B, 3 * dz).transpose(1, 2).reshape(K * B, N, 3 * dz)
            q, k, v = qkv.chunk(3, -1)
            attn = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dz), -1)
            return torch.bmm(attn, v).view(K, B * N, dz)
        w_g = self.w_g
        if w_g is not None and cosm is not None:  # gcn, eqs. 7-9
            w = torch.relu(cosm) if self.gcn_edges == "relu_cosine" else cosm
            A = w if self.gcn_adj == "cosine" else w + torch.eye(N, dtype=w.dtype, device=w.device)
            deg = A.abs().sum(-1) if self.gcn_abs_degree else A.sum(-1)
            dinv = deg.clamp_min(1e-2).rsqrt()
            Ahat = A * dinv.unsqueeze(-1) * dinv.unsqueeze(-2)
            O = torch.bmm(torch.bmm(Ahat, Z.reshape(K * B, N, dz)).view(K, B * N, dz), w_g)
            if self.gcn_act == "relu":
                return torch.relu(O)
            if self.gcn_act == "tanh":
                return torch.tanh(O)
            if self.gcn_act == "sigmoid":
                return torch.sigmoid(O)
            return O
        w_c = self.w_c
        if w_c is not None:  # cap: eqs. 10-14, dynamic routing
            J, do = self.J, self.do
            u = torch.bmm(Z.reshape(K, B * N, dz), w_c).view(K, B, N, J, do)
            b = u.new_zeros([K, B, N, J])
            o = u.new_zeros([K, B, J, do])
            for it in range(self.iters):
                c = torch.softmax(b, -1)
                o = squash((c.unsqueeze(-1) * u).sum(2))
                if it + 1 < self.iters:
                    b = b + (u * o.unsqueeze(2)).sum(-1)
            return o.reshape(K, B * J, do)
        raise RuntimeError("mzu: no zone composition")

    def forward(self, xp: Optional[Tensor], h: Tensor, want_dzone: bool) -> Tuple[Tensor, Optional[Tensor]]:
        """One depth at one step; xp None for a t-MZU (zero input). Returns h_t and D_zone [B, K] or None."""
        B, K, R, H, N, dz = h.shape[0], self.K, self.R, self.H, self.N, self.dz
        if xp is not None:
            a = xp + h @ self.w_h.t()
        else:
            a = h @ self.w_h.t()
            if R > 0:
                a = a + self.reg_bias()
        regs: List[Tensor] = []
        if R > 0:
            regs = a[:, K * H:].chunk(R, 1)
        D: Optional[Tensor] = None
        mout: List[Tensor] = []
        w1, b1, w2, b2, wo, bo = self.w1, self.b1, self.w2, self.b2, self.wo, self.bo
        if w1 is not None and b1 is not None and w2 is not None and b2 is not None and wo is not None \
                and bo is not None:  # K > 0: M-functions
            Z = a[:, :K * H].reshape(B, K, N, dz).transpose(0, 1)  # zones, eq. 4
            zg, zb = self.ln_z_gain, self.ln_z_bias
            if zg is not None and zb is not None:  # layer_norm with ln_position = zones
                Z = F.layer_norm(Z, [dz], eps=1e-5) * zg.unsqueeze(1) + zb.unsqueeze(1)
            cosm: Optional[Tensor] = None
            if self.comp == "gcn" or want_dzone:
                Zb = Z.reshape(K * B, N, dz)
                # Tensor.norm(2, -1, keepdim=True) in eager PyTorch 1.13 is this op
                zn = Zb / torch.linalg.vector_norm(Zb, 2.0, [-1], True).clamp_min(1e-12)
                cm = torch.bmm(zn, zn.transpose(1, 2))
                cosm = cm
                if want_dzone:
                    D = zone_disagreement_of_cosines(cm, self.pairs, self.form).view(K, B).t()  # eq. 18
            O = self.compose(Z, cosm)
            f = torch.baddbmm(b2, torch.baddbmm(b1, O, w1).relu(), w2)  # eq. 5
            if self.ffn_residual:
                f = f + O
            mout = torch.baddbmm(bo, f.view(K, B, self.J * self.do), wo).unbind(0)
        cand_pre = mout[0] if self.m_h else regs[0]
        gate_pre = mout[K - 1] if self.m_g else regs[R - 1]
        cg, cb = self.ln_c_gain, self.ln_c_bias
        if cg is not None and cb is not None:
            cand_pre = F.layer_norm(cand_pre, [H], cg, cb, 1e-5)
        gg, gb = self.ln_g_gain, self.ln_g_bias
        if gg is not None and gb is not None:
            gate_pre = F.layer_norm(gate_pre, [H], gg, gb, 1e-5)
        cand = torch.tanh(cand_pre)  # eq. 2
        if self.cdrop > 0 and self.training:
            cand = F.dropout(cand, self.cdrop, True)
        g = torch.sigmoid(gate_pre)  # eq. 3
        return h + g * (cand - h), D  # eq. 1


class MZU(Cell):
    """MZU with deep transition (eqs. 15-17); zone disagreement (eqs. 18-19) as an extra training loss.

    forward(x, state, extra): `extra`, a list, receives eq. 19's term -lambda sum D_zone / (T B) ('mean') or the
    raw sum ('sum') when autograd is on and lambda != 0 (model.disagreement_warmup's schedule is the trainer's
    business and not applied here)."""

    shared: Final[bool]
    depth: Final[int]
    lam: Final[float]
    scale: Final[str]

    def __init__(self, m, I):
        super().__init__()
        L = int(need(m, "depth"))
        self.first = MZUBlock(m, I)
        self.shared = bool(need(m, "share_transition"))
        self.depth = L
        if not self.shared:
            for l in range(L):
                setattr(self, "transition%d" % (l + 1), MZUBlock(m, 0))
        self.lam = float(need(m, "zone_disagreement"))
        self.scale = need(m, "disagreement_scale")
        self.hidden_size = int(m["hidden"])

    def transitions(self):
        """The t-MZU blocks in order (Python use; forward unrolls the children)."""
        return [self.first if self.shared else getattr(self, "transition%d" % (l + 1)) for l in range(self.depth)]

    def regularised(self) -> bool:
        """Whether eq. 19's term is computed (lambda != 0 and M-functions to measure)."""
        return self.lam != 0 and self.first.K > 0

    def input_projection(self, x: Tensor) -> Tensor:
        return self.first.input_projection(x)

    def step(self, xp: Tensor, state: List[Tensor], whh: Optional[Tensor],
             ds: Optional[List[Tensor]]) -> List[Tensor]:
        want = ds is not None
        h, d = self.first(xp, state[0], want)
        dl: List[Tensor] = []
        if d is not None:
            dl.append(d)
        if self.shared:
            for _ in range(self.depth):
                h, d = self.first(None, h, want)
                if d is not None:
                    dl.append(d)
        else:
            for name, tr in self.named_children():
                if name != "first":
                    h, d = tr(None, h, want)
                    if d is not None:
                        dl.append(d)
        if ds is not None:
            ds.append(torch.cat(dl, 1).sum(1))  # eq. 19: sum over every M-function of every depth
        return [h]

    def forward(self, x: Tensor, state: Optional[List[Tensor]] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, List[Tensor]]:
        T, B = x.shape[0], x.shape[1]
        if state is None:
            state = self.initial_state(B, x)
        ds: Optional[List[Tensor]] = None
        if extra is not None and self.regularised() and torch.is_grad_enabled():
            ds = []
        outs: List[Tensor] = []
        for xt in self.input_projection(x).unbind(0):
            state = self.step(xt, state, None, ds)
            outs.append(state[0])
        if ds is not None and extra is not None:
            tot = torch.stack(ds).sum()
            extra.append(tot * (-self.lam) if self.scale == "sum" else tot * (-self.lam / (B * T)))
        return torch.stack(outs), state


# ---------------------------------------------------------------- CRU (cells/cru.cpp, CRU eqs. 1-14)
class CRU(Cell):
    """Contextual Recurrent Units: same-length convolutions over the whole sequence (outside the time loop), then
    a GRU recurrence whose input terms are the convolutions (shallow: a GRU over them; deep: as they are;
    deep_enhanced: W_g (phi_g(e~) + e) + b_g)."""

    fusion: Final[str]
    I: Final[int]
    k: Final[int]
    act: Final[str]
    window: Final[str]
    reset_after: Final[bool]
    cdrop: Final[float]
    d: Final[int]
    nconv: Final[int]

    def __init__(self, m, I):
        super().__init__()
        H, k = int(m["hidden"]), int(need(m, "filter_length"))
        self.fusion = m["cell"][4:]
        self.hidden_size, self.I, self.k = H, int(I), k
        self.act = need(m, "conv_activation")
        self.window = need(m, "conv_window")
        self.reset_after = bool(need(m, "reset_after"))
        self.cdrop = float(need(m, "candidate_dropout"))
        if self.fusion == "shallow":
            d, nconv = (need(m, "conv_channels") or I), 1
        elif self.fusion == "deep":
            d, nconv = H, 3
        else:
            d, nconv = I, 3
        self.d, self.nconv = int(d), nconv
        kc, kh = 1.0 / math.sqrt(k * I), 1.0 / math.sqrt(H)
        # conv_w is [C, k*I] offset-major as in Cellscope; forward views it as Conv1d's [C, I, k].
        self.conv_w = nn.Parameter(torch.empty(nconv * d, k * I).uniform_(-kc, kc))
        self.conv_b = nn.Parameter(torch.empty(nconv * d).uniform_(-kc, kc))
        self.register_parameter("w_ih", None)  # deep fusion has no input map
        self.register_parameter("b_ih", None)
        if self.fusion == "shallow":
            self.w_ih = nn.Parameter(torch.empty(3 * H, d).uniform_(-kh, kh))
        elif self.fusion == "deep_enhanced":
            self.w_ih = nn.Parameter(torch.empty(3, H, d).uniform_(-kh, kh))
        if self.fusion != "deep":
            self.b_ih = nn.Parameter(torch.empty(3 * H).uniform_(-kh, kh))
        self.w_hh = nn.Parameter(torch.empty(3 * H, H).uniform_(-kh, kh))
        self.b_hh = nn.Parameter(torch.empty(3 * H).uniform_(-kh, kh))

    def conv(self, x: Tensor) -> Tensor:
        I = x.shape[2]
        k, C = self.k, self.conv_w.shape[0]
        left = k - 1 if self.window == "causal" else (k - 1) // 2  # causal: nothing after t (CRU_NOTES.md)
        xc = F.pad(x.permute(1, 2, 0), [left, k - 1 - left])  # [B, I, T + k - 1]
        c = F.conv1d(xc, self.conv_w.view(C, k, I).transpose(1, 2), self.conv_b).permute(2, 0, 1)  # eq. 8
        if self.act == "relu":
            return torch.relu(c)
        if self.act == "tanh":
            return torch.tanh(c)
        return c

    def input_projection(self, x: Tensor) -> Tensor:
        T, B = x.shape[0], x.shape[1]
        H, c = self.hidden_size, self.conv(x)
        w, b = self.w_ih, self.b_ih
        if w is not None and b is not None:  # shallow, deep_enhanced
            if self.fusion == "shallow":
                return c @ w.t() + b  # eq. 6: the GRU's input half over c
            u = c.view(T, B, 3, self.d) + x.unsqueeze(2)  # eqs. 12-14: W_g (phi_g(e~) + e) + b_g
            return torch.einsum("tbgd,ghd->tbgh", [u, w]).reshape(T, B, 3 * H) + b
        return c  # deep: eqs. 9-11

    def step(self, xp: Tensor, state: List[Tensor], whh: Optional[Tensor],
             ds: Optional[List[Tensor]]) -> List[Tensor]:
        h, H = state[0], self.hidden_size
        if self.reset_after:
            hp = h @ self.w_hh.t() + self.b_hh
            r = torch.sigmoid(xp[:, :H] + hp[:, :H])
            z = torch.sigmoid(xp[:, H:2 * H] + hp[:, H:2 * H])
            n = torch.tanh(xp[:, 2 * H:] + r * hp[:, 2 * H:])
        else:
            hp = h @ self.w_hh[:2 * H].t() + self.b_hh[:2 * H]
            r = torch.sigmoid(xp[:, :H] + hp[:, :H])
            z = torch.sigmoid(xp[:, H:2 * H] + hp[:, H:])
            n = torch.tanh(xp[:, 2 * H:] + (r * h) @ self.w_hh[2 * H:].t() + self.b_hh[2 * H:])
        if self.cdrop > 0 and self.training:
            n = F.dropout(n, self.cdrop, True)
        return [n + z * (h - n)]

    def forward(self, x: Tensor, state: Optional[List[Tensor]] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, List[Tensor]]:
        if state is None:
            state = self.initial_state(x.shape[1], x)
        w, b = self.w_ih, self.b_ih
        if w is not None and b is not None and self.fusion == "shallow" and self.reset_after \
                and not (self.cdrop > 0 and self.training):
            # shallow fusion is exactly a GRU over the convolution: LibTorch's GRU kernel (eq. 6)
            out, hn = torch.gru(self.conv(x), state[0].unsqueeze(0), [w, self.w_hh, b, self.b_hh],
                                True, 1, 0.0, self.training, False, False)
            return out, [hn.squeeze(0)]
        outs: List[Tensor] = []
        for xt in self.input_projection(x).unbind(0):
            state = self.step(xt, state, None, None)
            outs.append(state[0])
        return torch.stack(outs), state


# ---------------------------------------------------------------- MC-RNN (cells/mcrnn.cpp, MC-RNN eqs. 1-6)
class MCRNN(Cell):
    """Multi-Channel RNN: n-1 staggered block channels over a base cell f, W_j = I + alpha D_j, attention over
    the channels. State: [h, t, history [B, K, n-1, H], the base's extra state (LSTM c) per channel].

    The base is any step-wise cell here (rnn, gru, lstm, gru_dt, sat/gcn/cap_mzu). An MZU base's zone
    disagreement (eqs. 18-19) is the training term of each step's MZU call over the B*K channel rows, as
    Cellscope's MC-RNN calls its base step by step: -lambda sum D / (B K) per step ('mean'), summed over the steps,
    or the raw sum ('sum')."""

    n1: Final[int]
    A: Final[int]
    alpha: Final[float]
    memory: Final[str]
    clamp: Final[bool]
    base_reg: Final[bool]
    base_lam: Final[float]
    base_scale: Final[str]

    def __init__(self, m, I, base):
        super().__init__()
        H, n = int(m["hidden"]), int(need(m, "block"))
        A = int(need(m, "attention") or H)
        self.hidden_size, self.n1, self.A, self.alpha = H, n - 1, A, float(need(m, "dist_scale"))
        self.memory = need(m, "lstm_memory")
        # model.state_clamp (cells/mcrnn.h): s of eq. 2 clamped to [-1, 1]; 'auto' is on for every base but lstm.
        # An export without the key was written before the option existed, when s was never clamped.
        sc = m.get("state_clamp", "off")
        self.clamp = sc == "on" or (sc == "auto" and need(m, "base") != "lstm")
        self.base = base
        self.base_reg = isinstance(base, MZU) and base.regularised()
        self.base_lam = float(base.lam) if isinstance(base, MZU) else 0.0
        self.base_scale = base.scale if isinstance(base, MZU) else "mean"
        k, kv = 1.0 / math.sqrt(H), 1.0 / math.sqrt(H + I)
        self.w_dist = nn.Parameter(torch.empty(n - 1, H, H).uniform_(-k, k) * 0.5)
        self.v_h = nn.Parameter(torch.empty(A, H).uniform_(-kv, kv))
        self.v_x = nn.Parameter(torch.empty(A, I).uniform_(-kv, kv))
        self.r = nn.Parameter(torch.empty(A).uniform_(-1 / math.sqrt(A), 1 / math.sqrt(A)))

    def initial_state(self, B: int, like: Tensor) -> List[Tensor]:
        K, n1, H = self.n1, self.n1, self.hidden_size
        s = [like.new_zeros([B, H]), torch.zeros([B], dtype=torch.int64, device=like.device),
             like.new_zeros([B, K, n1, H])]
        for e in self.base.initial_state(1, like)[1:]:
            shp = [B, K]
            if self.memory == "average":
                shp.append(n1)
            shp.extend(e.shape[1:])
            s.append(like.new_zeros(shp))
        return s

    def with_previous_output(self, state: List[Tensor], h0: Tensor, recurrence: bool) -> List[Tensor]:
        """With recurrence the channel history h_t^k, t <= 0, starts at s_0 too (McRnnCellImpl::with_previous_output)."""
        state[0] = h0
        if recurrence:
            state[2] = h0.unsqueeze(1).unsqueeze(2).expand_as(state[2]).contiguous()
        return state

    def coefficients(self, t: int, like: Tensor) -> Tensor:  # eqs. 1-2: c[k][j] = [j <= m_t^k] / m_t^k
        K = n1 = self.n1
        c: List[float] = []
        for k in range(1, K + 1):
            m = (t - k - 1) % n1
            if m < 0:  # a non-negative mod as Cellscope's mcrnn_in_degree
                m += n1
            m += 1
            for j in range(n1):
                c.append(1.0 / m if j < m else 0.0)
        return torch.tensor(c, dtype=torch.float64).view(1, K, n1, 1).to(device=like.device, dtype=like.dtype)

    def input_projections(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        """The base's input projection and V_x x_t for the whole sequence."""
        return self.base.input_projection(x), x @ self.v_x.t()

    def forward(self, x: Tensor, state: Optional[List[Tensor]] = None,
                extra: Optional[List[Tensor]] = None) -> Tuple[Tensor, List[Tensor]]:
        T, B = x.shape[0], x.shape[1]
        if state is None:
            state = self.initial_state(B, x)
        H, K, n1, A = self.hidden_size, self.n1, self.n1, self.A
        W = torch.eye(H, dtype=x.dtype, device=x.device).unsqueeze(0) + self.alpha * self.w_dist  # eq. 2's W_j
        wcat = W.transpose(1, 2).reshape(n1 * H, H)
        xb, vx = self.input_projections(x)
        t0 = int(state[1].reshape(-1)[0]) if state[1].numel() > 0 else 0
        hist, mem = state[2], state[3:]
        coef = [self.coefficients(t0 + 1 + p, x) for p in range(n1)]
        whh = self.base.recurrent_weight()  # one weight-drop mask of the base's w_hh per forward
        ds: Optional[List[Tensor]] = None
        if extra is not None and self.base_reg and torch.is_grad_enabled():
            ds = []
        outs: List[Tensor] = []
        h = state[0]
        xbs, vxs = xb.unbind(0), vx.unbind(0)
        for i in range(len(xbs)):
            xbt, vxt = xbs[i], vxs[i]
            cf = coef[i % n1]
            s = (hist * cf).reshape(B * K, n1 * H) @ wcat  # eq. 2
            if self.clamp:
                s = s.clamp(-1.0, 1.0)  # model.state_clamp
            bs = [s]
            for e in mem:
                bs.append(((e * cf).sum(2) if self.memory == "average" else e).reshape(B * K, -1))
            xrep = xbt.unsqueeze(1).expand([B, K, xbt.shape[1]]).reshape(B * K, -1)
            ns = self.base.step(xrep, bs, whh, ds)  # eq. 3
            hk = ns[0]
            h3 = hk.view(B, K, H)
            e = torch.tanh((hk @ self.v_h.t()).view(B, K, A) + vxt.unsqueeze(1)) @ self.r  # eq. 4
            a = torch.softmax(e, 1)  # eq. 5
            h = torch.bmm(a.unsqueeze(1), h3).squeeze(1)  # eq. 6
            outs.append(h)
            hist = torch.cat([h3.unsqueeze(2), hist[:, :, :n1 - 1]], 2) if n1 > 1 else h3.unsqueeze(2)
            new_mem: List[Tensor] = []
            for j in range(len(mem)):
                ci = ns[1 + j].reshape(B, K, -1)
                if self.memory == "average":
                    new_mem.append(torch.cat([ci.unsqueeze(2), mem[j][:, :, :n1 - 1]], 2) if n1 > 1
                                   else ci.unsqueeze(2))
                else:
                    new_mem.append(ci)
            mem = new_mem
        if ds is not None and extra is not None:
            tot = torch.stack(ds).sum()
            extra.append(tot * (-self.base_lam) if self.base_scale == "sum" else tot * (-self.base_lam / (B * K)))
        return torch.stack(outs), [h, state[1] + T, hist] + mem


# ---------------------------------------------------------------- the families of this file (FAMILIES)
def _baseline(m, I):
    if m["cell"] == "gru_dt":
        return GRUDT(I, m["hidden"], need(m, "depth"), need(m, "share_transition"), need(m, "layer_norm"),
                     need(m, "candidate_dropout"))
    return GateCell(m["cell"], I, m["hidden"], need(m, "layer_norm"), need(m, "candidate_dropout"))


register_family("baseline", ("rnn", "gru", "lstm", "gru_dt"),
                {"layer_norm": BOOL, "candidate_dropout": ANY, "depth": ANY, "share_transition": BOOL},
                {"layer_norm": False, "candidate_dropout": 0.0, "depth": 1, "share_transition": True}, _baseline)
register_family("mzu", ("sat_mzu", "gcn_mzu", "cap_mzu"),
                {"layer_norm": BOOL, "candidate_dropout": ANY, "depth": ANY, "share_transition": BOOL, "zones": ANY,
                 "filter": ANY, "capsules": ANY, "routing_iters": ANY, "zone_disagreement": ANY,
                 "disagreement_scale": ("mean", "sum"), "disagreement_pairs": ("all", "distinct"),
                 "disagreement_form": ("cosine", "squared_cosine"), "disagreement_warmup": ANY, "regular_gate": BOOL,
                 "regular_trans": BOOL, "ln_position": ("preact", "zones"), "ffn_residual": BOOL,
                 "gcn_activation": ("relu", "tanh", "sigmoid", "identity"), "gcn_edges": ("cosine", "relu_cosine"),
                 "gcn_degree": ("absolute", "signed_clamped"), "gcn_adjacency": ("cosine_plus_identity", "cosine"),
                 "sat_qkv": ("shared", "per_zone")},
                {"layer_norm": True, "candidate_dropout": 0.0, "depth": 1, "share_transition": True, "zones": 4,
                 "filter": 512, "capsules": 2, "routing_iters": 3, "zone_disagreement": 1.0,
                 "disagreement_scale": "mean", "disagreement_pairs": "all", "disagreement_form": "cosine",
                 "disagreement_warmup": 0, "regular_gate": False, "regular_trans": False, "ln_position": "preact",
                 "ffn_residual": False, "gcn_activation": "relu", "gcn_edges": "cosine", "gcn_degree": "absolute",
                 "gcn_adjacency": "cosine_plus_identity", "sat_qkv": "shared"},
                lambda m, I: MZU(m, I))
register_family("cru", ("cru_shallow", "cru_deep", "cru_deep_enhanced"),
                {"candidate_dropout": ANY, "filter_length": ANY, "conv_channels": ANY,
                 "conv_window": ("centered", "causal"), "conv_activation": ("relu", "tanh", "identity"),
                 "reset_after": BOOL},
                {"candidate_dropout": 0.0, "filter_length": 3, "conv_channels": 0, "conv_window": "centered",
                 "conv_activation": "relu", "reset_after": True},
                lambda m, I: CRU(m, I))
register_family("hornn", ("ho_rnn",), {"ho_order": ANY, "ho_activation": ("tanh", "sigmoid")},
                {"ho_order": 3, "ho_activation": "tanh"},
                lambda m, I: HoRNN(I, m["hidden"], need(m, "ho_order"), need(m, "ho_activation")))
register_family("hmrnn", ("hm_rnn",), {"hm_levels": ANY, "hm_slope": ANY}, {"hm_levels": 2, "hm_slope": 1.0},
                lambda m, I: HMRNN(I, m["hidden"], need(m, "hm_levels"), need(m, "hm_slope")))
