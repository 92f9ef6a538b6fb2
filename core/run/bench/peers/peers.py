#!/usr/bin/python3
"""Plain PyTorch (eager, Python) peers of Cellscope's cells: the yardstick of `bench --peer`.

Each cell is written the way a researcher would write it in PyTorch's Python frontend:
nn.Module, a Python loop over time, torch ops (no TorchScript, no custom kernels), inside
the same character-LM training step as `cellscope-cli bench` (core/run/bench/bench.cpp):
embedding -> cell -> linear -> cross-entropy (+ the cell's extra loss) -> backward ->
clip_grad_norm_(5) -> Adam(lr 1e-3).

Parameter names are Cellscope's (CharLMModel.named_parameters()), so a model exported by
`cellscope-cli bench --peer-export DIR` loads 1:1 (see README.md).

Usage (run with Debian's python3-torch, /usr/bin/python3):
  peers.py check DIR [DIR ...]     load model.json/params.f64/x.i64/y.i64 of each DIR, compute the
                                   loss and gradients in double, compare with Cellscope's; JSON out,
                                   exit 1 on a mismatch
  peers.py time --model-json JSON --batch B --seq T --vocab V --threads N [--iters N]
                                   seconds per training step (median) and peak memory; JSON out
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------- options
# The model.* values each peer implements: Cellscope's option defaults of today and the
# values the bench sets. A resolved model section with any other value is refused (the peer
# would be a different model), so a new option or a changed default fails the check loudly.
SUPPORTED = {
    "common": {"layers": [1], "dropout": [0.0]},
    "gru_dt": {"layer_norm": [False], "candidate_dropout": [0.0], "share_transition": [False, True]},
    "mzu": {"candidate_dropout": [0.0], "ln_position": ["preact", "zones"], "disagreement_scale": ["mean", "sum"],
            "gcn_activation": ["relu", "tanh", "sigmoid", "identity"], "gcn_edges": ["cosine", "relu_cosine"],
            "sat_qkv": ["per_zone", "shared"], "regular_gate": [False, True], "regular_trans": [False, True],
            "ffn_residual": [False, True], "share_transition": [False, True], "layer_norm": [False, True],
            "disagreement_pairs": ["all"], "disagreement_form": ["cosine"], "disagreement_warmup": [0],
            "gcn_adjacency": ["cosine_plus_identity"]},
    "cru": {"candidate_dropout": [0.0], "conv_activation": ["relu", "tanh", "identity"], "reset_after": [True, False],
            "conv_window": ["centered", "causal"]},
    "mcrnn": {"base": ["lstm"], "lstm_memory": ["prev"], "layer_norm": [False], "candidate_dropout": [0.0]},
}
# Keys a peer reads (values free) or that do not change the model.
FREE = {"cell", "embed", "hidden", "depth", "zones", "filter", "capsules", "routing_iters", "zone_disagreement",
        "filter_length", "conv_channels", "block", "attention", "dist_scale"}


def family(cell):
    if cell.endswith("_mzu"):
        return "mzu"
    if cell.startswith("cru_"):
        return "cru"
    return cell


def check_options(m):
    fam = family(m["cell"])
    if fam not in ("gru_dt", "mzu", "cru", "mcrnn"):
        raise SystemExit("peers.py: no peer for cell '%s'" % m["cell"])
    allowed = dict(SUPPORTED["common"])
    allowed.update(SUPPORTED[fam])
    for k, v in m.items():
        if k in FREE:
            continue
        if k not in allowed:
            raise SystemExit("peers.py: the %s peer does not know model.%s (= %r); teach it that option" % (m["cell"], k, v))
        if v not in allowed[k]:
            raise SystemExit("peers.py: the %s peer does not implement model.%s = %r (only %r)" % (m["cell"], k, v, allowed[k]))


def uniform(shape, fan_in):
    k = 1.0 / math.sqrt(max(fan_in, 1))
    return nn.Parameter(torch.empty(*shape).uniform_(-k, k))


# ---------------------------------------------------------------- GRU+DT
class GRUDT(nn.Module):
    """A GRU then L transition GRUs with zero input per step (cells/baseline.cpp gru_dt)."""

    def __init__(self, m, I):
        super().__init__()
        H, L = m["hidden"], m.get("depth", 1)
        self.first = nn.GRUCell(I, H)
        self.I = I
        if m.get("share_transition", True) and L > 0:
            # shared (cells/BASELINE_NOTES.md): every transition GRU is the first GRU, zero input
            self.trans = [self.first] * L
        else:
            for l in range(L):
                setattr(self, "transition%d" % (l + 1), nn.GRUCell(0, H))
            self.trans = [getattr(self, "transition%d" % (l + 1)) for l in range(L)]
        self.H = H

    def forward(self, x, extra):
        T, B, _ = x.shape
        h = x.new_zeros(B, self.H)
        zero = x.new_zeros(B, 0)
        zero_in = x.new_zeros(B, self.I)
        outs = []
        for xt in x.unbind(0):
            h = self.first(xt, h)
            for tr in self.trans:
                h = tr(zero_in if tr is self.first else zero, h)
            outs.append(h)
        return torch.stack(outs)

    # Cellscope's names for nn.GRUCell's parameters
    RENAME = {"weight_ih": "w_ih", "weight_hh": "w_hh", "bias_ih": "b_ih", "bias_hh": "b_hh"}


# ---------------------------------------------------------------- MZU
def squash(s):
    n2 = (s * s).sum(-1, keepdim=True)  # eq. 13, safe at s = 0 like Cellscope's
    return s * (torch.sqrt(n2 + 1e-12) / (1 + n2))


class MZUBlock(nn.Module):
    """One depth of an MZU: the M-functions M_h, M_g stacked on a leading K dim (cells/mzu.cpp)."""

    def __init__(self, m, I):
        super().__init__()
        comp = m["cell"][:3]
        H, N = m["hidden"], m.get("zones", 4)
        self.comp, self.H, self.N, self.dz = comp, H, N, H // N
        self.m_h, self.m_g = not m.get("regular_trans", False), not m.get("regular_gate", False)
        self.K = int(self.m_h) + int(self.m_g)
        self.R = 2 - self.K
        self.J, self.do = (m.get("capsules", 2), H // m.get("capsules", 2)) if comp == "cap" else (N, self.dz)
        self.iters = m.get("routing_iters", 3)
        self.sat_qkv = m.get("sat_qkv", "shared")
        self.gcn_act = m.get("gcn_activation", "relu")
        self.gcn_edges = m.get("gcn_edges", "cosine")
        self.ffn_residual = m.get("ffn_residual", False)
        self.ln = m.get("layer_norm", True)
        self.ln_pos = m.get("ln_position", "preact")
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
            A = w + torch.eye(N, dtype=w.dtype)
            dinv = A.sum(-1).clamp_min(1e-2).rsqrt()
            Ahat = A * dinv.unsqueeze(-1) * dinv.unsqueeze(-2)
            O = torch.bmm(torch.bmm(Ahat, Z.reshape(K * B, N, dz)).view(K, B * N, dz), self.w_g)
            return {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}.get(self.gcn_act, lambda t: t)(O)
        # cap: eqs. 10-14, dynamic routing
        J, do = self.J, self.do
        u = torch.bmm(Z.reshape(K, B * N, dz), self.w_c).view(K, B, N, J, do)
        b = u.new_zeros(K, B, N, J)
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
                    D = -cosm.mean((1, 2)).view(K, B).t()  # eq. 18
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
        g = torch.sigmoid(gate_pre)  # eq. 3
        return h + g * (cand - h), D  # eq. 1


class MZU(nn.Module):
    """MZU with deep transition (eqs. 15-17) and zone disagreement (eqs. 18-19)."""

    def __init__(self, m, I):
        super().__init__()
        L = m.get("depth", 1)
        self.first = MZUBlock(m, I)
        if m.get("share_transition", True):
            self.trans = [self.first] * L
        else:
            for l in range(L):
                setattr(self, "transition%d" % (l + 1), MZUBlock(m, 0))
            self.trans = [getattr(self, "transition%d" % (l + 1)) for l in range(L)]
        self.lam = m.get("zone_disagreement", 1.0)
        self.scale = m.get("disagreement_scale", "mean")
        self.H = m["hidden"]

    def forward(self, x, extra):
        T, B, _ = x.shape
        reg = self.lam != 0 and torch.is_grad_enabled() and self.first.K > 0
        h = x.new_zeros(B, self.H)
        outs = []
        for xt in self.first.input_projection(x).unbind(0):
            h, d = self.first(xt, h, reg)
            ds = [d]
            for tr in self.trans:
                h, d = tr(None, h, reg)
                ds.append(d)
            if reg:
                per_token = torch.cat(ds, 1).sum(1)  # eq. 19: sum over every M-function of every depth
                term = per_token.sum() if self.scale == "sum" else per_token.sum() / (B * T)
                extra.append(term * (-self.lam))
            outs.append(h)
        return torch.stack(outs)


# ---------------------------------------------------------------- CRU
class CRU(nn.Module):
    """Contextual Recurrent Units (cells/cru.cpp): same-length convolutions, then a GRU recurrence."""

    def __init__(self, m, I):
        super().__init__()
        H, k = m["hidden"], m.get("filter_length", 3)
        self.fusion = m["cell"][4:]
        self.H, self.I, self.k = H, I, k
        self.act = m.get("conv_activation", "relu")
        self.window = m.get("conv_window", "centered")
        self.reset_after = m.get("reset_after", True)
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
        if self.fusion == "shallow" and self.reset_after:
            self.gru = nn.GRU(d, H)  # shallow fusion is a GRU over the convolution (eq. 6)
        else:
            if self.fusion == "shallow":
                self.w_ih = nn.Parameter(torch.empty(3 * H, d).uniform_(-kh, kh))
            elif self.fusion == "deep_enhanced":
                self.w_ih = nn.Parameter(torch.empty(3, H, d).uniform_(-kh, kh))
            if self.fusion != "deep":
                self.b_ih = nn.Parameter(torch.empty(3 * H).uniform_(-kh, kh))
            self.w_hh = nn.Parameter(torch.empty(3 * H, H).uniform_(-kh, kh))
            self.b_hh = nn.Parameter(torch.empty(3 * H).uniform_(-kh, kh))

    RENAME = {"gru.weight_ih_l0": "w_ih", "gru.weight_hh_l0": "w_hh", "gru.bias_ih_l0": "b_ih", "gru.bias_hh_l0": "b_hh"}

    def forward(self, x, extra):
        T, B, I = x.shape
        k, C = self.k, self.conv_w.shape[0]
        left = k - 1 if self.window == "causal" else (k - 1) // 2  # causal: nothing after t (CRU_NOTES.md)
        xc = F.pad(x.permute(1, 2, 0), (left, k - 1 - left))  # [B, I, T + k - 1]
        c = F.conv1d(xc, self.conv_w.view(C, k, I).transpose(1, 2), self.conv_b).permute(2, 0, 1)  # eq. 8
        c = {"relu": torch.relu, "tanh": torch.tanh}.get(self.act, lambda t: t)(c)
        H = self.H
        if self.fusion == "shallow" and self.reset_after:
            return self.gru(c, x.new_zeros(1, B, H))[0]
        if self.fusion == "shallow":
            xp = c @ self.w_ih.t() + self.b_ih
        elif self.fusion == "deep":
            xp = c  # eqs. 9-11
        else:  # eqs. 12-14: W_g (phi_g(e~) + e) + b_g
            u = c.view(T, B, 3, self.d) + x.unsqueeze(2)
            xp = torch.einsum("tbgd,ghd->tbgh", u, self.w_ih).reshape(T, B, 3 * H) + self.b_ih
        h = x.new_zeros(B, H)
        outs = []
        for xt in xp.unbind(0):
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
            h = n + z * (h - n)
            outs.append(h)
        return torch.stack(outs)


# ---------------------------------------------------------------- MC-RNN
class LSTMBase(nn.Module):
    """The LSTM step of MC-RNN's base cell f (eq. 3), its input half hoisted by the caller."""

    def __init__(self, I, H):
        super().__init__()
        k = 1.0 / math.sqrt(H)
        self.w_ih = nn.Parameter(torch.empty(4 * H, I).uniform_(-k, k))
        self.w_hh = nn.Parameter(torch.empty(4 * H, H).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(4 * H).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(4 * H).uniform_(-k, k))

    def forward(self, xp, h, c):
        i, f, g, o = (xp + h @ self.w_hh.t() + self.b_hh).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


class MCRNN(nn.Module):
    """Multi-Channel RNN over an LSTM (cells/mcrnn.cpp): n-1 channels, W_j = I + alpha D_j, attention."""

    def __init__(self, m, I):
        super().__init__()
        H, n = m["hidden"], m.get("block", 3)
        A = m.get("attention", 0) or H
        self.H, self.n1, self.A, self.alpha = H, n - 1, A, m.get("dist_scale", 0.1)
        self.base = LSTMBase(I, H)
        k, kv = 1.0 / math.sqrt(H), 1.0 / math.sqrt(H + I)
        self.w_dist = nn.Parameter(torch.empty(n - 1, H, H).uniform_(-k, k) * 0.5)
        self.v_h = nn.Parameter(torch.empty(A, H).uniform_(-kv, kv))
        self.v_x = nn.Parameter(torch.empty(A, I).uniform_(-kv, kv))
        self.r = nn.Parameter(torch.empty(A).uniform_(-1 / math.sqrt(A), 1 / math.sqrt(A)))

    def coefficients(self, t, dtype):  # eq. 1-2: c[k][j] = [j <= m_t^k] / m_t^k
        K = n1 = self.n1
        c = torch.zeros(1, K, n1, 1, dtype=dtype)
        for k in range(1, K + 1):
            m = (t - k - 1) % n1 + 1
            c[0, k - 1, :m, 0] = 1.0 / m
        return c

    def forward(self, x, extra):
        T, B, _ = x.shape
        H, K, n1, A = self.H, self.n1, self.n1, self.A
        W = torch.eye(H, dtype=x.dtype).unsqueeze(0) + self.alpha * self.w_dist  # eq. 2's W_j
        wcat = W.transpose(1, 2).reshape(n1 * H, H)
        xb = x @ self.base.w_ih.t() + self.base.b_ih  # the base's input half, once for all channels
        vx = x @ self.v_x.t()
        hist = x.new_zeros(B, K, n1, H)
        c = x.new_zeros(B, K, H)
        coef = [self.coefficients(p + 1, x.dtype) for p in range(n1)]
        outs = []
        for t, (xbt, vxt) in enumerate(zip(xb.unbind(0), vx.unbind(0))):
            s = (hist * coef[t % n1]).reshape(B * K, n1 * H) @ wcat  # eq. 2
            xrep = xbt.unsqueeze(1).expand(B, K, xbt.shape[1]).reshape(B * K, -1)
            h, cn = self.base(xrep, s, c.reshape(B * K, H))  # eq. 3
            h3 = h.view(B, K, H)
            e = torch.tanh((h @ self.v_h.t()).view(B, K, A) + vxt.unsqueeze(1)) @ self.r  # eq. 4
            a = torch.softmax(e, 1)  # eq. 5
            outs.append(torch.bmm(a.unsqueeze(1), h3).squeeze(1))  # eq. 6
            hist = torch.cat([h3.unsqueeze(2), hist[:, :, :n1 - 1]], 2) if n1 > 1 else h3.unsqueeze(2)
            c = cn.view(B, K, H)
        return torch.stack(outs)


# ---------------------------------------------------------------- the char-LM model
CELLS = {"gru_dt": GRUDT, "mzu": MZU, "cru": CRU, "mcrnn": MCRNN}


class CharLM(nn.Module):
    def __init__(self, m, vocab):
        super().__init__()
        check_options(m)
        E = m["embed"]
        self.embed = nn.Embedding(vocab, E)
        self.stack = nn.Module()
        self.stack.layer0 = CELLS[family(m["cell"])](m, E)
        self.out = nn.Linear(m["hidden"], vocab)

    def forward(self, x):
        extra = []
        h = self.stack.layer0(self.embed(x), extra)
        return self.out(h), (sum(extra) if extra else None)

    def cellscope_names(self):
        """Cellscope's name of each parameter -> the parameter."""
        out = {}
        for name, p in self.named_parameters():
            parts = name.split(".")
            rename = getattr(type(self.stack.layer0), "RENAME", {})
            for i in range(len(parts)):
                tail = ".".join(parts[i:])
                if name.startswith("stack.layer0.") and tail in rename:
                    parts = parts[:i] + [rename[tail]]
                    break
            out[".".join(parts)] = p
        return out


def loss_of(model, x, y, V):
    logits, extra = model(x)
    loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
    return loss + extra if extra is not None else loss, loss


# ---------------------------------------------------------------- check mode
def read_raw(path, dtype, count):
    import numpy as np
    a = np.fromfile(path, dtype=dtype)
    if a.size != count:
        raise SystemExit("peers.py: %s holds %d values, expected %d" % (path, a.size, count))
    return torch.from_numpy(a.copy())


def check_dir(d, tol):
    with open(os.path.join(d, "model.json")) as f:
        meta = json.load(f)
    m, B, T, V = meta["model"], meta["batch"], meta["seq"], meta["vocab"]
    torch.manual_seed(0)
    model = CharLM(m, V).double()
    named = model.cellscope_names()
    index = meta["params"]
    total = sum(math.prod(e["shape"]) for e in index)
    params = read_raw(os.path.join(d, "params.f64"), "<f8", total)
    grads = read_raw(os.path.join(d, "grads.f64"), "<f8", total)
    mine, theirs = set(named), {e["name"] for e in index}
    if mine != theirs:
        return {"dir": d, "cell": m["cell"], "ok": False,
                "error": "parameter names differ: only Cellscope %s, only Python %s" % (sorted(theirs - mine), sorted(mine - theirs))}
    with torch.no_grad():
        for e in index:
            p = named[e["name"]]
            if list(p.shape) != e["shape"]:
                return {"dir": d, "cell": m["cell"], "ok": False,
                        "error": "%s: shape %s in Python, %s in Cellscope" % (e["name"], list(p.shape), e["shape"])}
            p.copy_(params[e["offset"]:e["offset"] + p.numel()].view(p.shape))
    x = read_raw(os.path.join(d, "x.i64"), "<i8", T * B).view(T, B)
    y = read_raw(os.path.join(d, "y.i64"), "<i8", T * B).view(T, B)
    model.train()
    loss, nll = loss_of(model, x, y, V)
    model.zero_grad()
    loss.backward()
    rel = lambda a, b: abs(a - b) / max(abs(b), 1e-300)
    res = {"dir": d, "cell": m["cell"], "loss": loss.item(), "cellscope_loss": meta["loss"],
           "loss_rel_err": rel(loss.item(), meta["loss"]), "params": {}}
    worst = res["loss_rel_err"]
    for e in index:
        p = named[e["name"]]
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        gc = grads[e["offset"]:e["offset"] + p.numel()].view(p.shape)
        scale = max(gc.abs().max().item(), 1e-300) if p.numel() else 1.0
        err = (g - gc).abs().max().item() / scale if p.numel() else 0.0
        nerr = rel(g.norm().item(), gc.norm().item()) if gc.norm().item() > 0 else g.norm().item()
        res["params"][e["name"]] = {"grad_norm": g.norm().item(), "cellscope_grad_norm": gc.norm().item(),
                                    "norm_rel_err": nerr, "max_rel_err": err}
        worst = max(worst, err, nerr)
    res["worst_rel_err"] = worst
    res["ok"] = bool(worst <= tol)
    return res


# ---------------------------------------------------------------- time mode
def vm_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def reset_hwm():
    try:  # Linux >= 4.0: writing 5 resets VmHWM to the current RSS
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def gemm_gflops(n=1024, seconds=1.0):
    """GFLOP/s of a large float32 matrix product in this process, median (as bench.cpp's gemm_gflops)."""
    a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
    torch.mm(a, b, out=c)
    torch.mm(a, b, out=c)
    ts, start = [], time.perf_counter()
    while len(ts) < 3 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        torch.mm(a, b, out=c)
        ts.append(time.perf_counter() - t0)
        if len(ts) >= 200:
            break
    ts.sort()
    return 2.0 * n ** 3 / ts[len(ts) // 2] / 1e9


def time_steps(m, B, T, V, iters, min_seconds):
    torch.manual_seed(0)
    model = CharLM(m, V)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randint(0, V, (T, B))
    y = torch.randint(0, V, (T, B))

    def step():
        loss, _ = loss_of(model, x, y, V)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()

    # Peak memory of a training step: VmHWM reset after the set-up, minus the RSS then
    # (the first step also allocates the gradients and Adam's moments).
    reset = reset_hwm()
    base = vm_kib("VmRSS")
    step()
    peak = vm_kib("VmHWM")
    step()
    ts, start = [], time.perf_counter()
    while True:
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
        if iters > 0 and len(ts) >= iters:
            break
        if iters <= 0 and ((time.perf_counter() - start >= min_seconds and len(ts) >= 3) or len(ts) >= 200):
            break
    in_order = list(ts)  # as timed, to show any warm-up trend
    ts.sort()
    return {"seconds_per_step": ts[len(ts) // 2], "gemm_gflops": gemm_gflops(), "steps_timed": len(ts), "step_seconds": in_order, "peak_step_bytes": (peak - base) * 1024,
            "peak_rss_bytes": vm_kib("VmHWM") * 1024, "hwm_reset": reset, "threads": torch.get_num_threads(),
            "torch": torch.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("check")
    c.add_argument("dirs", nargs="+")
    c.add_argument("--tol", type=float, default=1e-10)
    t = sub.add_parser("time")
    t.add_argument("--model-json", required=True)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--seq", type=int, default=150)
    t.add_argument("--vocab", type=int, default=96)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--iters", type=int, default=0)
    t.add_argument("--min-seconds", type=float, default=3.0)
    a = ap.parse_args()
    if a.mode == "check":
        torch.set_num_threads(1)
        results = [check_dir(d, a.tol) for d in a.dirs]
        print(json.dumps({"ok": all(r["ok"] for r in results), "tol": a.tol, "results": results}))
        return 0 if all(r["ok"] for r in results) else 1
    torch.set_num_threads(a.threads)
    r = time_steps(json.loads(a.model_json), a.batch, a.seq, a.vocab, a.iters, a.min_seconds)
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
