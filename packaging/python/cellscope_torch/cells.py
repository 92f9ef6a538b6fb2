"""Cellscope's recurrent cells in plain PyTorch (eager, Python).

Each cell is written from the papers' equations as Cellscope implements them (core/model/cells/*.cpp),
with Cellscope's parameter names, so that a state_dict exported by `cellscope-cli export` loads with
strict=True. One interface for all of them:

    xp = cell.input_projection(x)        # the input half of the affine maps, whole sequence [T, B, *]
    state = cell.step(xp[t], state)      # one time step; state is a list of tensors, state[0] = h
    out, state = cell(x, state)          # the whole sequence ([T, B, H], final state)

The same modules are the Python peers of `cellscope-cli bench --peer` (core/run/bench/peers/peers.py).
Dropout-like options (candidate dropout) act in training mode only, as in Cellscope.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def uniform(shape, fan_in):
    k = 1.0 / math.sqrt(max(fan_in, 1))
    return nn.Parameter(torch.empty(*shape).uniform_(-k, k))


def family(cell):
    if cell.endswith("_mzu"):
        return "mzu"
    if cell.startswith("cru_"):
        return "cru"
    if cell in ("rnn", "gru", "lstm"):
        return "gate"
    return cell


class Cell(nn.Module):
    """Base: the step-wise loop over time."""

    hidden_size = 0

    def initial_state(self, B, like):
        return [like.new_zeros(B, self.hidden_size)]

    def input_projection(self, x):
        return x

    def step(self, xp, state):
        raise NotImplementedError

    def forward(self, x, state=None):
        if state is None:
            state = self.initial_state(x.shape[1], x)
        outs = []
        for xt in self.input_projection(x).unbind(0):
            state = self.step(xt, state)
            outs.append(state[0])
        return torch.stack(outs), state


# ---------------------------------------------------------------- RNN, GRU, LSTM (cells/baseline.cpp)
class GateCell(Cell):
    """rnn (1 gate), gru (3: r, z, n) and lstm (4: i, f, g, o); layer normalization per gate chunk of the input
    and hidden pre-activations (Ba et al. 2016) when model.layer_norm, candidate dropout in training."""

    GATES = {"rnn": 1, "gru": 3, "lstm": 4}

    def __init__(self, kind, I, H, layer_norm=False, candidate_dropout=0.0):
        super().__init__()
        self.kind, self.gates, self.hidden_size, self.I = kind, self.GATES[kind], H, I
        self.ln, self.cdrop = layer_norm, candidate_dropout
        self.weight_drop, self._whh = 0.0, None  # word_lm's DropConnect of w_hh (training; set by the model)
        G, k = self.gates * H, 1.0 / math.sqrt(H)
        self.w_ih = nn.Parameter(torch.empty(G, I).uniform_(-k, k))
        self.w_hh = nn.Parameter(torch.empty(G, H).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(G).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(G).uniform_(-k, k))
        if layer_norm:
            if I > 0:  # a transition GRU (no input) has no input LN (cells/baseline.cpp)
                self.ln_x_gain = nn.Parameter(torch.ones(self.gates, H))
                self.ln_x_bias = nn.Parameter(torch.zeros(self.gates, H))
            self.ln_h_gain = nn.Parameter(torch.ones(self.gates, H))
            self.ln_h_bias = nn.Parameter(torch.zeros(self.gates, H))

    def initial_state(self, B, like):
        z = like.new_zeros(B, self.hidden_size)
        return [z, z.clone()] if self.kind == "lstm" else [z]

    def _ln(self, a, g, b):
        shp = a.shape
        v = a.reshape(-1, self.gates, self.hidden_size)
        return (F.layer_norm(v, (self.hidden_size,), eps=1e-5) * g + b).reshape(shp)

    def input_projection(self, x):
        a = x @ self.w_ih.t()
        if self.ln:
            a = self._ln(a, self.ln_x_gain, self.ln_x_bias)
        return a + self.b_ih

    def begin_weight_drop(self):  # one DropConnect mask of w_hh per forward (AWD-LSTM), training only
        if self.weight_drop > 0 and self.training:
            self._whh = F.dropout(self.w_hh, self.weight_drop, True)

    def end_weight_drop(self):
        self._whh = None

    def whh(self):
        return self.w_hh if self._whh is None else self._whh

    def hidden_projection(self, h):
        if self.ln:
            return self._ln(h @ self.whh().t(), self.ln_h_gain, self.ln_h_bias) + self.b_hh
        return torch.addmm(self.b_hh, h, self.whh().t())

    def _cdrop(self, n):
        return F.dropout(n, self.cdrop, True) if self.cdrop > 0 and self.training else n

    def step(self, xp, state):
        h = state[0]
        hp = self.hidden_projection(h)
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


class GRUDT(Cell):
    """GRU+DT (MZU paper, Table 4 baseline): a GRU then L transition GRUs with zero input per step; a transition
    is fed b_ih alone (W_ih 0 vanishes). Shared transitions (model.share_transition) reuse the first GRU."""

    def __init__(self, I, H, depth=1, share_transition=True, layer_norm=False, candidate_dropout=0.0):
        super().__init__()
        self.hidden_size, self.I = H, I
        self.first = GateCell("gru", I, H, layer_norm, candidate_dropout)
        self.shared = share_transition
        self.depth = depth
        if not share_transition:
            for l in range(depth):
                setattr(self, "transition%d" % (l + 1), GateCell("gru", 0, H, layer_norm, candidate_dropout))

    def transitions(self):
        return [self.first if self.shared else getattr(self, "transition%d" % (l + 1)) for l in range(self.depth)]

    def input_projection(self, x):
        return self.first.input_projection(x)

    def step(self, xp, state):
        state = self.first.step(xp, state)
        for tr in self.transitions():
            state = tr.step(tr.b_ih.unsqueeze(0).expand(state[0].shape[0], -1), state)
        return state

    def forward(self, x, state=None):
        if self.first.ln or (self.first.cdrop > 0 and self.training):
            return super().forward(x, state)
        # LibTorch's GRU cell kernel per step (the same equations as step()): as the Python peer of
        # `bench --peer` has always run it
        h = x.new_zeros(x.shape[1], self.hidden_size) if state is None else state[0]
        f, trs = self.first, self.transitions()
        zero_in, zero = x.new_zeros(x.shape[1], self.I), x.new_zeros(x.shape[1], 0)
        outs = []
        for xt in x.unbind(0):
            h = torch.gru_cell(xt, h, f.w_ih, f.w_hh, f.b_ih, f.b_hh)
            for tr in trs:
                h = torch.gru_cell(zero_in if tr is f else zero, h, tr.w_ih, tr.w_hh, tr.b_ih, tr.b_hh)
            outs.append(h)
        return torch.stack(outs), [h]


# ---------------------------------------------------------------- MZU (cells/mzu.cpp, MZU eqs. 1-19)
def squash(s):
    n2 = (s * s).sum(-1, keepdim=True)  # eq. 13, safe at s = 0 like Cellscope's
    return s * (torch.sqrt(n2 + 1e-12) / (1 + n2))


def zone_disagreement_of_cosines(cosm, pairs, form):
    """eq. 18 from the zones' cosine matrix [.., N, N]: 'all' pairs or the 'distinct' ones, of cos or cos^2."""
    v = cosm * cosm if form == "squared_cosine" else cosm
    if pairs == "all":
        return -v.mean((-1, -2))
    N = cosm.shape[-1]
    if N < 2:
        return v.new_zeros(v.shape[:-2])
    off = v.sum((-1, -2)) - v.diagonal(0, -2, -1).sum(-1)
    return off * (-1.0 / (N * (N - 1)))


class MZUBlock(nn.Module):
    """One depth of an MZU: the M-functions M_h, M_g stacked on a leading K dim."""

    def __init__(self, m, I):
        super().__init__()
        comp = m["cell"][:3]
        H, N = m["hidden"], m.get("zones", 4)
        self.comp, self.H, self.N, self.dz, self.I = comp, H, N, H // N, I
        self.m_h, self.m_g = not m.get("regular_trans", False), not m.get("regular_gate", False)
        self.K = int(self.m_h) + int(self.m_g)
        self.R = 2 - self.K
        self.J, self.do = (m.get("capsules", 2), H // m.get("capsules", 2)) if comp == "cap" else (N, self.dz)
        self.iters = m.get("routing_iters", 3)
        self.sat_qkv = m.get("sat_qkv", "shared")
        self.gcn_act = m.get("gcn_activation", "relu")
        self.gcn_edges = m.get("gcn_edges", "cosine")
        self.gcn_adj = m.get("gcn_adjacency", "cosine_plus_identity")
        self.ffn_residual = m.get("ffn_residual", False)
        self.ln = m.get("layer_norm", True)
        self.ln_pos = m.get("ln_position", "preact")
        self.cdrop = m.get("candidate_dropout", 0.0)
        self.pairs = m.get("disagreement_pairs", "all")
        self.form = m.get("disagreement_form", "cosine")
        K, R, dz, J, do, D = self.K, self.R, self.dz, self.J, self.do, m.get("filter", 512)
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

    def reg_bias(self):
        return torch.cat([self.b_reg.new_zeros(self.K * self.H), self.b_reg])

    def input_projection(self, x):  # eq. 4's input half for the whole sequence (+ the regular maps' bias)
        a = x @ self.w_x.t()
        return a + self.reg_bias() if self.R > 0 else a

    def compose(self, Z, cosm):  # Z [K, B, N, dz] -> [K, B*J, do]
        K, B, N, dz = Z.shape
        if self.comp == "sat":  # eq. 6
            if self.sat_qkv == "shared":
                qkv = torch.bmm(Z.reshape(K, B * N, dz), self.w_qkv).view(K * B, N, 3 * dz)
            else:
                Zn = Z.transpose(1, 2).reshape(K * N, B, dz)
                qkv = torch.bmm(Zn, self.w_qkv).view(K, N, B, 3 * dz).transpose(1, 2).reshape(K * B, N, 3 * dz)
            q, k, v = qkv.chunk(3, -1)
            attn = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dz), -1)
            return torch.bmm(attn, v).view(K, B * N, dz)
        if self.comp == "gcn":  # eqs. 7-9
            w = torch.relu(cosm) if self.gcn_edges == "relu_cosine" else cosm
            A = w if self.gcn_adj == "cosine" else w + torch.eye(N, dtype=w.dtype, device=w.device)
            dinv = A.sum(-1).clamp_min(1e-2).rsqrt()
            Ahat = A * dinv.unsqueeze(-1) * dinv.unsqueeze(-2)
            O = torch.bmm(torch.bmm(Ahat, Z.reshape(K * B, N, dz)).view(K, B * N, dz), self.w_g)
            if self.gcn_act == "relu":
                return torch.relu(O)
            if self.gcn_act == "tanh":
                return torch.tanh(O)
            if self.gcn_act == "sigmoid":
                return torch.sigmoid(O)
            return O
        # cap: eqs. 10-14, dynamic routing
        J, do = self.J, self.do
        u = torch.bmm(Z.reshape(K, B * N, dz), self.w_c).view(K, B, N, J, do)
        b = u.new_zeros(K, B, N, J)
        o = u.new_zeros(K, B, J, do)
        for it in range(self.iters):
            c = torch.softmax(b, -1)
            o = squash((c.unsqueeze(-1) * u).sum(2))
            if it + 1 < self.iters:
                b = b + (u * o.unsqueeze(2)).sum(-1)
        return o.reshape(K, B * J, do)

    def forward(self, xp, h, want_dzone):
        """One depth at one step; xp None for a t-MZU (zero input). Returns h_t and D_zone [B, K] or None."""
        B, K, R, H, N, dz = h.shape[0], self.K, self.R, self.H, self.N, self.dz
        if xp is not None:
            a = xp + h @ self.w_h.t()
        else:
            a = h @ self.w_h.t()
            if R > 0:
                a = a + self.reg_bias()
        regs = a[:, K * H:].chunk(R, 1) if R > 0 else []
        D = None
        mout = []
        if K > 0:
            Z = a[:, :K * H].reshape(B, K, N, dz).transpose(0, 1)  # zones, eq. 4
            if self.ln and self.ln_pos == "zones":
                Z = F.layer_norm(Z, (dz,), eps=1e-5) * self.ln_z_gain.unsqueeze(1) + self.ln_z_bias.unsqueeze(1)
            cosm = None
            if self.comp == "gcn" or want_dzone:
                Zb = Z.reshape(K * B, N, dz)
                zn = Zb / Zb.norm(2, -1, keepdim=True).clamp_min(1e-12)
                cosm = torch.bmm(zn, zn.transpose(1, 2))
                if want_dzone:
                    D = zone_disagreement_of_cosines(cosm, self.pairs, self.form).view(K, B).t()  # eq. 18
            O = self.compose(Z, cosm)
            f = torch.baddbmm(self.b2, torch.baddbmm(self.b1, O, self.w1).relu(), self.w2)  # eq. 5
            if self.ffn_residual:
                f = f + O
            mout = torch.baddbmm(self.bo, f.view(K, B, self.J * self.do), self.wo).unbind(0)
        cand_pre = mout[0] if self.m_h else regs[0]
        gate_pre = mout[K - 1] if self.m_g else regs[R - 1]
        if hasattr(self, "ln_c_gain"):
            cand_pre = F.layer_norm(cand_pre, (H,), self.ln_c_gain, self.ln_c_bias, 1e-5)
        if hasattr(self, "ln_g_gain"):
            gate_pre = F.layer_norm(gate_pre, (H,), self.ln_g_gain, self.ln_g_bias, 1e-5)
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

    def __init__(self, m, I):
        super().__init__()
        L = m.get("depth", 1)
        self.first = MZUBlock(m, I)
        self.shared = m.get("share_transition", True)
        self.depth = L
        if not self.shared:
            for l in range(L):
                setattr(self, "transition%d" % (l + 1), MZUBlock(m, 0))
        self.lam = m.get("zone_disagreement", 1.0)
        self.scale = m.get("disagreement_scale", "mean")
        self.hidden_size = m["hidden"]

    def transitions(self):
        return [self.first if self.shared else getattr(self, "transition%d" % (l + 1)) for l in range(self.depth)]

    def input_projection(self, x):
        return self.first.input_projection(x)

    def step(self, xp, state, ds=None):
        want = ds is not None
        h, d = self.first(xp, state[0], want)
        dl = [d]
        for tr in self.transitions():
            h, d = tr(None, h, want)
            dl.append(d)
        if want:
            ds.append(torch.cat(dl, 1).sum(1))  # eq. 19: sum over every M-function of every depth
        return [h]

    def forward(self, x, state=None, extra=None):
        T, B = x.shape[0], x.shape[1]
        if state is None:
            state = self.initial_state(B, x)
        reg = extra is not None and self.lam != 0 and torch.is_grad_enabled() and self.first.K > 0
        ds = [] if reg else None
        outs = []
        for xt in self.input_projection(x).unbind(0):
            state = self.step(xt, state, ds)
            outs.append(state[0])
        if reg:
            tot = torch.stack(ds).sum()
            extra.append(tot * (-self.lam) if self.scale == "sum" else tot * (-self.lam / (B * T)))
        return torch.stack(outs), state


# ---------------------------------------------------------------- CRU (cells/cru.cpp, CRU eqs. 1-14)
class CRU(Cell):
    """Contextual Recurrent Units: same-length convolutions over the whole sequence (outside the time loop), then
    a GRU recurrence whose input terms are the convolutions (shallow: a GRU over them; deep: as they are;
    deep_enhanced: W_g (phi_g(e~) + e) + b_g)."""

    def __init__(self, m, I):
        super().__init__()
        H, k = m["hidden"], m.get("filter_length", 3)
        self.fusion = m["cell"][4:]
        self.hidden_size, self.I, self.k = H, I, k
        self.act = m.get("conv_activation", "relu")
        self.window = m.get("conv_window", "centered")
        self.reset_after = m.get("reset_after", True)
        self.cdrop = m.get("candidate_dropout", 0.0)
        if self.fusion == "shallow":
            d, nconv = (m.get("conv_channels", 0) or I), 1
        elif self.fusion == "deep":
            d, nconv = H, 3
        else:
            d, nconv = I, 3
        self.d, self.nconv = d, nconv
        kc, kh = 1.0 / math.sqrt(k * I), 1.0 / math.sqrt(H)
        # conv_w is [C, k*I] offset-major as in Cellscope; forward views it as Conv1d's [C, I, k].
        self.conv_w = nn.Parameter(torch.empty(nconv * d, k * I).uniform_(-kc, kc))
        self.conv_b = nn.Parameter(torch.empty(nconv * d).uniform_(-kc, kc))
        if self.fusion == "shallow":
            self.w_ih = nn.Parameter(torch.empty(3 * H, d).uniform_(-kh, kh))
        elif self.fusion == "deep_enhanced":
            self.w_ih = nn.Parameter(torch.empty(3, H, d).uniform_(-kh, kh))
        if self.fusion != "deep":
            self.b_ih = nn.Parameter(torch.empty(3 * H).uniform_(-kh, kh))
        self.w_hh = nn.Parameter(torch.empty(3 * H, H).uniform_(-kh, kh))
        self.b_hh = nn.Parameter(torch.empty(3 * H).uniform_(-kh, kh))

    def conv(self, x):
        T, B, I = x.shape
        k, C = self.k, self.conv_w.shape[0]
        left = k - 1 if self.window == "causal" else (k - 1) // 2  # causal: nothing after t (CRU_NOTES.md)
        xc = F.pad(x.permute(1, 2, 0), (left, k - 1 - left))  # [B, I, T + k - 1]
        c = F.conv1d(xc, self.conv_w.view(C, k, I).transpose(1, 2), self.conv_b).permute(2, 0, 1)  # eq. 8
        if self.act == "relu":
            return torch.relu(c)
        if self.act == "tanh":
            return torch.tanh(c)
        return c

    def input_projection(self, x):
        T, B, _ = x.shape
        H, c = self.hidden_size, self.conv(x)
        if self.fusion == "shallow":
            return c @ self.w_ih.t() + self.b_ih  # eq. 6: the GRU's input half over c
        if self.fusion == "deep":
            return c  # eqs. 9-11
        u = c.view(T, B, 3, self.d) + x.unsqueeze(2)  # eqs. 12-14: W_g (phi_g(e~) + e) + b_g
        return torch.einsum("tbgd,ghd->tbgh", u, self.w_ih).reshape(T, B, 3 * H) + self.b_ih

    def step(self, xt, state):
        h, H = state[0], self.hidden_size
        if self.reset_after:
            hp = h @ self.w_hh.t() + self.b_hh
            r = torch.sigmoid(xt[:, :H] + hp[:, :H])
            z = torch.sigmoid(xt[:, H:2 * H] + hp[:, H:2 * H])
            n = torch.tanh(xt[:, 2 * H:] + r * hp[:, 2 * H:])
        else:
            hp = h @ self.w_hh[:2 * H].t() + self.b_hh[:2 * H]
            r = torch.sigmoid(xt[:, :H] + hp[:, :H])
            z = torch.sigmoid(xt[:, H:2 * H] + hp[:, H:])
            n = torch.tanh(xt[:, 2 * H:] + (r * h) @ self.w_hh[2 * H:].t() + self.b_hh[2 * H:])
        if self.cdrop > 0 and self.training:
            n = F.dropout(n, self.cdrop, True)
        return [n + z * (h - n)]

    def forward(self, x, state=None):
        if state is None:
            state = self.initial_state(x.shape[1], x)
        if self.fusion == "shallow" and self.reset_after and not (self.cdrop > 0 and self.training):
            # shallow fusion is exactly a GRU over the convolution: LibTorch's GRU kernel (eq. 6)
            out, hn = torch._VF.gru(self.conv(x), state[0].unsqueeze(0), [self.w_ih, self.w_hh, self.b_ih, self.b_hh],
                                    True, 1, 0.0, self.training, False, False)
            return out, [hn.squeeze(0)]
        return super().forward(x, state)


# ---------------------------------------------------------------- MC-RNN (cells/mcrnn.cpp, MC-RNN eqs. 1-6)
class MCRNN(Cell):
    """Multi-Channel RNN: n-1 staggered block channels over a base cell f, W_j = I + alpha D_j, attention over
    the channels. State: [h, t, history [B, K, n-1, H], the base's extra state (LSTM c) per channel]."""

    def __init__(self, m, I, base):
        super().__init__()
        H, n = m["hidden"], m.get("block", 3)
        A = m.get("attention", 0) or H
        self.hidden_size, self.n1, self.A, self.alpha = H, n - 1, A, m.get("dist_scale", 0.1)
        self.memory = m.get("lstm_memory", "prev")
        self.base = base
        k, kv = 1.0 / math.sqrt(H), 1.0 / math.sqrt(H + I)
        self.w_dist = nn.Parameter(torch.empty(n - 1, H, H).uniform_(-k, k) * 0.5)
        self.v_h = nn.Parameter(torch.empty(A, H).uniform_(-kv, kv))
        self.v_x = nn.Parameter(torch.empty(A, I).uniform_(-kv, kv))
        self.r = nn.Parameter(torch.empty(A).uniform_(-1 / math.sqrt(A), 1 / math.sqrt(A)))

    def initial_state(self, B, like):
        K, n1, H = self.n1, self.n1, self.hidden_size
        s = [like.new_zeros(B, H), torch.zeros(B, dtype=torch.int64, device=like.device),
             like.new_zeros(B, K, n1, H)]
        for e in self.base.initial_state(1, like)[1:]:
            shp = [B, K] + ([n1] if self.memory == "average" else []) + list(e.shape[1:])
            s.append(like.new_zeros(*shp))
        return s

    def coefficients(self, t, like):  # eqs. 1-2: c[k][j] = [j <= m_t^k] / m_t^k
        K = n1 = self.n1
        c = torch.zeros(1, K, n1, 1, dtype=torch.float64)
        for k in range(1, K + 1):
            m = (t - k - 1) % n1 + 1
            c[0, k - 1, :m, 0] = 1.0 / m
        return c.to(like.dtype)

    def input_projection(self, x):
        return self.base.input_projection(x), x @ self.v_x.t()

    def forward(self, x, state=None):
        T, B, _ = x.shape
        if state is None:
            state = self.initial_state(B, x)
        H, K, n1, A = self.hidden_size, self.n1, self.n1, self.A
        W = torch.eye(H, dtype=x.dtype, device=x.device).unsqueeze(0) + self.alpha * self.w_dist  # eq. 2's W_j
        wcat = W.transpose(1, 2).reshape(n1 * H, H)
        xb, vx = self.input_projection(x)
        t0 = int(state[1].reshape(-1)[0]) if state[1].numel() else 0
        hist, extra = state[2], state[3:]
        coef = [self.coefficients(t0 + 1 + p, x) for p in range(n1)]
        outs = []
        h = state[0]
        for i, (xbt, vxt) in enumerate(zip(xb.unbind(0), vx.unbind(0))):
            cf = coef[i % n1]
            s = (hist * cf).reshape(B * K, n1 * H) @ wcat  # eq. 2
            bs = [s]
            for e in extra:
                bs.append(((e * cf).sum(2) if self.memory == "average" else e).reshape(B * K, -1))
            xrep = xbt.unsqueeze(1).expand(B, K, xbt.shape[1]).reshape(B * K, -1)
            ns = self.base.step(xrep, bs)  # eq. 3
            hk = ns[0]
            h3 = hk.view(B, K, H)
            e = torch.tanh((hk @ self.v_h.t()).view(B, K, A) + vxt.unsqueeze(1)) @ self.r  # eq. 4
            a = torch.softmax(e, 1)  # eq. 5
            h = torch.bmm(a.unsqueeze(1), h3).squeeze(1)  # eq. 6
            outs.append(h)
            hist = torch.cat([h3.unsqueeze(2), hist[:, :, :n1 - 1]], 2) if n1 > 1 else h3.unsqueeze(2)
            new_extra = []
            for j, ej in enumerate(extra):
                ci = ns[1 + j].reshape(B, K, -1)
                if self.memory == "average":
                    new_extra.append(torch.cat([ci.unsqueeze(2), ej[:, :, :n1 - 1]], 2) if n1 > 1 else ci.unsqueeze(2))
                else:
                    new_extra.append(ci)
            extra = new_extra
        return torch.stack(outs), [h, state[1] + T, hist] + extra
