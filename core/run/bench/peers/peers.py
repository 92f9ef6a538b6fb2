#!/usr/bin/python3
"""Plain PyTorch (eager, Python) peers of Cellscope's cells: the yardstick of `bench --peer`.

Each cell is written the way a researcher would write it in PyTorch's Python frontend:
nn.Module, a Python loop over time, torch ops (no TorchScript, no custom kernels); the cells and the
char-LM model are those of the cellscope_torch package (packaging/python/cellscope_torch), inside
the same character-LM training step as `cellscope-cli bench` (core/run/bench/bench.cpp):
embedding -> cell -> linear -> cross-entropy (+ the cell's extra loss) -> backward ->
clip_grad_norm_(5) -> Adam(lr 1e-3). `time` also runs them on a GPU (--device cuda), compiled (--mode compile,
compile_step: what a researcher does next) and times torch.nn.GRU in the same step (--cudnn-gru); README.md,
"On a GPU".

Parameter names are Cellscope's (CharLMModel.named_parameters()), so a model exported by
`cellscope-cli bench --peer-export DIR` loads 1:1 (see README.md).

Usage (run with Debian's python3-torch, /usr/bin/python3):
  peers.py check DIR [DIR ...]     load model.json/params.f64/x.i64/y.i64 of each DIR, compute the
                                   loss and gradients in double, compare with Cellscope's; JSON out,
                                   exit 1 on a mismatch
  peers.py time --model-json JSON --batch B --seq T --vocab V --threads N [--iters N] [--min-seconds S]
                [--device cpu|cuda] [--mode eager|compile|compile_step] [--compile-mode M]
                [--compile-timeout S] [--cudnn-gru]
                                   seconds per training step (median) and peak memory; JSON out (the last
                                   line of stdout). The defaults (cpu, eager) print the keys bench --peer reads
                                   and nothing else; any other option adds device, mode, model,
                                   first_step_seconds, warmup_steps (and with cuda: gpu, cuda, cudnn, tf32,
                                   gemm_gflops_by_n, peak_first_step_bytes, peak_reserved_bytes)
    --device cuda                  model and batch on the GPU, a synchronisation before each clock reading,
                                   TF32 off (true float32 as Cellscope); peak_step_bytes from the caching
                                   allocator (its peak over every step since the set-up, less the bytes
                                   allocated then); gemm_gflops from float32 products of n = 1024..4096 on the GPU
    --mode compile                 torch.compile(mode="reduce-overhead") of the whole forward and loss
                                   (embedding, the loop over time, output, cross entropy); backward, clipping
                                   and Adam eager; torch.compiler.cudagraph_mark_step_begin() each step;
                                   compile_seconds = the first step's wall time; 3 warm-up steps, not 1
    --mode compile_step            the same, but only the cell's time step compiled, the loop over time in
                                   Python (StepwiseLoss; cru_shallow has no step loop and runs as it is)
    --compile-mode M               torch.compile's mode there (default reduce-overhead; default,
                                   max-autotune-no-cudagraphs: without CUDA graphs, should they fail)
    --compile-timeout S            exit 3 if the first step and the warm-up steps take more than S s (0: none)
    --cudnn-gru                    time torch.nn.GRU(embed, hidden) (cuDNN's fused GRU on cuda) in the same
                                   char-LM step instead of the model's cell; --mode eager only
"""
import argparse
import json
import math
import os
import sys
import threading
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


def _find_package():
    """cellscope_torch: from the source tree (packaging/python, next to core/) when this script runs there, else
    the installed one (/usr/lib/python3/dist-packages/cellscope_torch, the .deb)."""
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "packaging", "python"))
    if os.path.isdir(os.path.join(src, "cellscope_torch")) and src not in sys.path:
        sys.path.insert(0, src)


_find_package()
import cellscope_torch  # noqa: E402  (the model code: one code base with `cellscope-cli export`'s Python side)


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
            "gcn_adjacency": ["cosine_plus_identity"], "gcn_degree": ["absolute", "signed_clamped"]},
    "cru": {"candidate_dropout": [0.0], "conv_activation": ["relu", "tanh", "identity"], "reset_after": [True, False],
            "conv_window": ["centered", "causal"]},
    "mcrnn": {"base": ["lstm", "sat_mzu", "gcn_mzu", "cap_mzu"], "lstm_memory": ["prev"], "layer_norm": [False], "candidate_dropout": [0.0],
              "state_clamp": ["auto", "off", "on"]},
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


def make_model(m, V):
    """The char-LM model of the bench: cellscope_torch's (Cellscope's parameter names), the options checked."""
    check_options(m)
    return cellscope_torch.CharLM(m, V)


def cellscope_names(model):
    """Cellscope's name of each parameter -> the parameter (the package uses Cellscope's names as they are)."""
    return dict(model.named_parameters())


def loss_of(model, x, y, V):
    extra = []
    logits, _ = model(x, extra=extra)
    loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
    return loss + sum(extra) if extra else loss, loss


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
    model = make_model(m, V).double()
    named = cellscope_names(model)
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


def gemm_seconds():
    """How long the GEMM rate is measured: 1 s, or CELLSCOPE_BENCH_GEMM_SECONDS (as bench.cpp)."""
    try:
        s = float(os.environ.get("CELLSCOPE_BENCH_GEMM_SECONDS", ""))
    except ValueError:
        return 1.0
    return s if 0.0 < s < 3600.0 else 1.0


def gemm_gflops(n=1024, seconds=None):
    """GFLOP/s of a large float32 matrix product in this process, median (as bench.cpp's gemm_gflops)."""
    seconds = gemm_seconds() if seconds is None else seconds
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


def gemm_gflops_cuda(seconds=None):
    """--device cuda: GFLOP/s of float32 matrix products on the GPU (TF32 off), n = 1024, 2048, 4096, each the
    median of batches of products timed between two synchronisations; the largest rate and each size's."""
    seconds = gemm_seconds() if seconds is None else seconds
    by_n = {}
    for n in (1024, 2048, 4096):
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        c = torch.empty(n, n, device="cuda")
        reps = max(1, (4096 // n) ** 3 * 4)  # about 0.01 s a batch on an H100/H200
        for _ in range(2):
            torch.mm(a, b, out=c)
        torch.cuda.synchronize()
        ts, start = [], time.perf_counter()
        while len(ts) < 3 or time.perf_counter() - start < seconds / 3:
            t0 = time.perf_counter()
            for _ in range(reps):
                torch.mm(a, b, out=c)
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) / reps)
            if len(ts) >= 200:
                break
        ts.sort()
        by_n[str(n)] = 2.0 * n ** 3 / ts[len(ts) // 2] / 1e9
        del a, b, c
    return max(by_n.values()), by_n


def cuda_set_up():
    """--device cuda: compute in true float32 as Cellscope does (no TF32 in cuBLAS or cuDNN); what the JSON says
    about the device. Only the legacy switches are set: PyTorch >= 2.9 refuses to read its TF32 state once the
    legacy and the new (fp32_precision) APIs were mixed, and Inductor still reads the legacy one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # >= 2.9: "Please use the new API settings to control TF32 behavior"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    info = {"device": "cuda", "gpu": torch.cuda.get_device_name(), "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "tf32": False}
    try:  # read back: both False, else say so
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            info["tf32"] = bool(torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32)
    except Exception as e:  # noqa: BLE001 (a PyTorch that refuses the legacy getter: report, keep going)
        info["tf32_readback_error"] = str(e)[:300]
    prec = {}
    for name, owner in (("matmul", "cuda.matmul"), ("cudnn_conv", "cudnn.conv"), ("cudnn_rnn", "cudnn.rnn")):
        try:  # the new API's view of the same state (PyTorch >= 2.9), where it exists
            obj = torch.backends
            for part in owner.split("."):
                obj = getattr(obj, part)
            p = getattr(obj, "fp32_precision", None)
            if p is not None:
                prec[name] = str(p)
        except Exception:  # noqa: BLE001
            pass
    if prec:
        info["fp32_precision"] = prec
    return info


def cuda_ready(model, device):
    """cellscope_torch's MC-RNN makes eqs. 1-2's coefficient tensor anew at every step (MCRNN.coefficients, on the
    host, then copied to the model's device): on a GPU a host-to-device copy per step. Each MC-RNN gets the package's
    own tensors made once on the device instead: they depend on t only through t mod (n - 1), so one per residue
    (the same values; no host tensor is left in a compiled graph), as a researcher timing it on a GPU would."""
    for mod in model.modules():
        if isinstance(mod, cellscope_torch.MCRNN) and mod.n1 > 0:
            orig, n1 = mod.coefficients, mod.n1
            table = [orig(r, torch.zeros(1)).to(device) for r in range(n1)]  # float32, as the model

            def coefficients(t, like, table=table, orig=orig, n1=n1):
                if like.dtype == torch.float32 and like.device == table[0].device:
                    return table[t % n1]
                return orig(t, like).to(like.device)

            mod.coefficients = coefficients  # an instance attribute: the class (and cellscope_torch) unchanged


class FusedGRULM(nn.Module):
    """--cudnn-gru: the bench's char LM around torch.nn.GRU (one layer: cuDNN's fused GRU on CUDA, LibTorch's on
    the CPU): embedding -> GRU -> linear."""

    def __init__(self, V, E, H):
        super().__init__()
        self.embed = nn.Embedding(V, E)
        self.gru = nn.GRU(E, H)
        self.out = nn.Linear(H, V)

    def forward(self, x, extra=None):
        h, _ = self.gru(self.embed(x))
        return self.out(h), None


class StepwiseLoss:
    """--mode compile_step: loss_of(model, x, y, V) with the cell's loop over time in Python and the body of one
    time step a function of its own, passed through `wrap` once (torch.compile for compile_step; the identity in
    the test that checks this against loss_of bit for bit, packaging/python/tests/test_peers_modes.py). The
    bodies are the per-step code of the cells' forward() in cellscope_torch (cells.py), calling the cells' own
    step() where forward() does: GRU+DT's torch.gru_cell chain, the MZUs' and deep CRUs' step(), MC-RNN's loop
    body (eqs. 2-6 around the base's step()). A shallow CRU (reset after U) has no step: one torch.gru over the
    sequence, run as it is. Parameters and tensors made once per forward are arguments, so each body compiles
    once (twice: the zero initial state needs no gradient, the later ones do)."""

    def __init__(self, model, V, wrap):
        if not isinstance(model, cellscope_torch.CharLM) or model.stack.n != 1 or model.dropout > 0 \
                or model.stack.dropout > 0:
            raise SystemExit("peers.py: --mode compile_step needs a one-layer char LM without dropout")
        self.model, self.V = model, V
        c = self.cell = model.stack.layer0
        self.compiled = "the cell's time step (%s)" % type(c).__name__
        if isinstance(c, cellscope_torch.GRUDT):
            f = c.first
            trs = [tr for name, tr in c.named_children() if name != "first"]

            def gru_cells(xt, h, zero_in, zero):  # GRUDT.forward's loop body (its default path)
                h = torch.gru_cell(xt, h, f.w_ih, f.w_hh, f.b_ih, f.b_hh)
                if c.shared:
                    for _ in range(c.depth):
                        h = torch.gru_cell(zero_in, h, f.w_ih, f.w_hh, f.b_ih, f.b_hh)
                else:
                    for tr in trs:
                        h = torch.gru_cell(zero, h, tr.w_ih, tr.w_hh, tr.b_ih, tr.b_hh)
                return h

            self.gru_cells = wrap(gru_cells)
            self.cell_step = wrap(lambda xt, h: c.step(xt, [h], None, None)[0])  # its layer-norm / dropout path
            self.run = self.run_grudt
        elif isinstance(c, cellscope_torch.MZU):
            def mzu_step(xt, h):
                ds = []
                h2 = c.step(xt, [h], None, ds)[0]
                return h2, ds[0]

            self.mzu_step = wrap(mzu_step)
            self.mzu_step_plain = wrap(lambda xt, h: c.step(xt, [h], None, None)[0])
            self.run = self.run_mzu
        elif isinstance(c, cellscope_torch.CRU):
            self.cru_step = wrap(lambda xt, h: c.step(xt, [h], None, None)[0])
            self.run = self.run_cru
            if c.w_ih is not None and c.fusion == "shallow" and c.reset_after:
                self.compiled = "nothing: cru_shallow runs one torch.gru over the sequence (no per-step loop)"
        elif isinstance(c, cellscope_torch.MCRNN):
            self.mc_step = wrap(self.mcrnn_body)
            self.run = self.run_mcrnn
        else:
            raise SystemExit("peers.py: --mode compile_step has no step for %s" % type(c).__name__)

    def __call__(self, x, y):
        m, V = self.model, self.V
        extra = []
        h = self.run(m.embed(x), extra)  # CharLM.forward without dropout, CellStack with one layer
        logits = m.out(h)
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        return loss + sum(extra) if extra else loss, loss

    def run_grudt(self, x, extra):
        c = self.cell
        if c.first.ln or (c.first.cdrop > 0 and c.training):  # GRUDT.forward's step() path
            h = c.initial_state(x.shape[1], x)[0]
            outs = []
            for xt in c.input_projection(x).unbind(0):
                h = self.cell_step(xt, h)
                outs.append(h)
            return torch.stack(outs)
        h = x.new_zeros([x.shape[1], c.hidden_size])
        zero_in, zero = x.new_zeros([x.shape[1], c.I]), x.new_zeros([x.shape[1], 0])
        outs = []
        for xt in x.unbind(0):
            h = self.gru_cells(xt, h, zero_in, zero)
            outs.append(h)
        return torch.stack(outs)

    def run_mzu(self, x, extra):  # MZU.forward
        c = self.cell
        T, B = x.shape[0], x.shape[1]
        h = c.initial_state(B, x)[0]
        want = c.regularised() and torch.is_grad_enabled()
        ds, outs = [], []
        for xt in c.input_projection(x).unbind(0):
            if want:
                h, d = self.mzu_step(xt, h)
                ds.append(d)
            else:
                h = self.mzu_step_plain(xt, h)
            outs.append(h)
        if want:
            tot = torch.stack(ds).sum()
            extra.append(tot * (-c.lam) if c.scale == "sum" else tot * (-c.lam / (B * T)))
        return torch.stack(outs)

    def run_cru(self, x, extra):  # CRU.forward
        c = self.cell
        if c.w_ih is not None and c.b_ih is not None and c.fusion == "shallow" and c.reset_after \
                and not (c.cdrop > 0 and c.training):
            return c(x, None, extra)[0]
        h = c.initial_state(x.shape[1], x)[0]
        outs = []
        for xt in c.input_projection(x).unbind(0):
            h = self.cru_step(xt, h)
            outs.append(h)
        return torch.stack(outs)

    def mcrnn_body(self, xbt, vxt, cf, hist, mem, wcat, whh, want):
        """One step of MCRNN.forward (eqs. 2-6): -> h, the channel history, the base's extra state, D or None."""
        c = self.cell
        B, K, n1, H, A = hist.shape[0], c.n1, c.n1, c.hidden_size, c.A
        ds = [] if want else None
        s = (hist * cf).reshape(B * K, n1 * H) @ wcat  # eq. 2
        if c.clamp:
            s = s.clamp(-1.0, 1.0)  # model.state_clamp
        bs = [s]
        for e in mem:
            bs.append(((e * cf).sum(2) if c.memory == "average" else e).reshape(B * K, -1))
        xrep = xbt.unsqueeze(1).expand([B, K, xbt.shape[1]]).reshape(B * K, -1)
        ns = c.base.step(xrep, bs, whh, ds)  # eq. 3
        hk = ns[0]
        h3 = hk.view(B, K, H)
        e = torch.tanh((hk @ c.v_h.t()).view(B, K, A) + vxt.unsqueeze(1)) @ c.r  # eq. 4
        a = torch.softmax(e, 1)  # eq. 5
        h = torch.bmm(a.unsqueeze(1), h3).squeeze(1)  # eq. 6
        hist = torch.cat([h3.unsqueeze(2), hist[:, :, :n1 - 1]], 2) if n1 > 1 else h3.unsqueeze(2)
        new_mem = []
        for j in range(len(mem)):
            ci = ns[1 + j].reshape(B, K, -1)
            if c.memory == "average":
                new_mem.append(torch.cat([ci.unsqueeze(2), mem[j][:, :, :n1 - 1]], 2) if n1 > 1 else ci.unsqueeze(2))
            else:
                new_mem.append(ci)
        return h, hist, new_mem, (ds[0] if want else None)

    def run_mcrnn(self, x, extra):  # MCRNN.forward from the zero state (t0 = 0)
        c = self.cell
        B = x.shape[1]
        state = c.initial_state(B, x)
        H, n1 = c.hidden_size, c.n1
        W = torch.eye(H, dtype=x.dtype, device=x.device).unsqueeze(0) + c.alpha * c.w_dist  # eq. 2's W_j
        wcat = W.transpose(1, 2).reshape(n1 * H, H)
        xb, vx = c.input_projections(x)
        hist, mem = state[2], state[3:]
        coef = [c.coefficients(1 + p, x) for p in range(n1)]
        whh = c.base.recurrent_weight()
        want = c.base_reg and torch.is_grad_enabled()
        ds, outs = [], []
        xbs, vxs = xb.unbind(0), vx.unbind(0)
        for i in range(len(xbs)):
            h, hist, mem, d = self.mc_step(xbs[i], vxs[i], coef[i % n1], hist, mem, wcat, whh, want)
            if want:
                ds.append(d)
            outs.append(h)
        if want:
            tot = torch.stack(ds).sum()
            extra.append(tot * (-c.base_lam) if c.base_scale == "sum" else tot * (-c.base_lam / (B * c.n1)))
        return torch.stack(outs)


def compiler(torch_mode):
    """torch.compile with `torch_mode` (--compile-mode; "reduce-overhead": Inductor and CUDA graphs), static shapes."""
    def wrap(fn):
        return torch.compile(fn, mode=torch_mode, dynamic=False)
    return wrap


def start_watchdog(seconds):
    """--compile-timeout: exit 3 (os._exit: whatever the main thread is in) unless cancelled within `seconds`."""
    if not seconds or seconds <= 0:
        return None

    def fire():
        sys.stderr.write("peers.py: the first (compiling) step and the warm-up steps had not finished after "
                         "--compile-timeout %g s; giving up (exit 3)\n" % seconds)
        sys.stderr.flush()
        os._exit(3)

    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return t


def dynamo_stats():
    """What torch.compile did: graphs made, graph breaks, the CUDA graphs Inductor skipped (diagnostics)."""
    out = {}
    try:
        from torch._dynamo.utils import counters
        out["dynamo_graphs"] = int(counters["stats"].get("unique_graphs", 0))
        gb = counters.get("graph_break", {})
        out["graph_breaks"] = int(sum(gb.values()))
        if gb:
            out["graph_break_reasons"] = [str(k)[:200] for k in list(gb)[:3]]
        out["cudagraph_skips"] = int(counters.get("inductor", {}).get("cudagraph_skips", 0))
    except Exception:  # noqa: BLE001 (private counters: best effort)
        pass
    return out


def time_steps(m, B, T, V, iters, min_seconds, device="cpu", mode="eager", cudnn_gru=False, compile_timeout=0.0,
               compile_mode="reduce-overhead"):
    cuda = device == "cuda"
    info = cuda_set_up() if cuda else {}
    torch.manual_seed(0)
    model = FusedGRULM(V, int(m["embed"]), int(m["hidden"])) if cudnn_gru else make_model(m, V)
    model.train()
    if cuda:
        model = model.to(device)
        cuda_ready(model, device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randint(0, V, (T, B))
    y = torch.randint(0, V, (T, B))
    if cuda:
        x, y = x.to(device), y.to(device)

    compiled, mark = None, None
    if mode == "eager":
        def forward_loss():
            return loss_of(model, x, y, V)[0]
    else:
        mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
        if mode == "compile":  # the whole forward: embedding, the T-step loop, output, loss
            def whole_forward(xx, yy):
                return loss_of(model, xx, yy, V)[0]

            whole = compiler(compile_mode)(whole_forward)
            compiled = "forward and loss (embedding, the loop over time, output, cross entropy)"

            def forward_loss():
                return whole(x, y)
        else:  # compile_step: the cell's step only, the loop in Python
            sw = StepwiseLoss(model, V, compiler(compile_mode))
            compiled = sw.compiled

            def forward_loss():
                return sw(x, y)[0]

    def step():
        if mark is not None:
            mark()  # reduce-overhead (CUDA graphs): a new training step; the last one's outputs are done with
        loss = forward_loss()
        if mode == "eager":
            opt.zero_grad()
        else:  # no .grad left pointing into the CUDA graphs' memory (the default of PyTorch >= 2.0, said here)
            opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    # Peak memory of a training step. CPU: VmHWM reset after the set-up, minus the RSS then (the first step also
    # allocates the gradients and Adam's moments). CUDA: the caching allocator's peak since the set-up over every
    # step (the first, the warm-up and the timed ones: CUDA graphs are recorded after the first), minus the bytes
    # allocated then.
    warmups = 1 if mode == "eager" else 3  # compile modes: CUDA graph trees warm up, then record, then replay
    if cuda:
        sync()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        reset = reset_hwm()
        base = vm_kib("VmRSS")
    dog = start_watchdog(compile_timeout)
    t_first = time.perf_counter()
    step()
    sync()
    first = time.perf_counter() - t_first
    peak = torch.cuda.max_memory_allocated() if cuda else vm_kib("VmHWM")
    for _ in range(warmups):
        step()
    sync()
    if dog is not None:
        dog.cancel()
    ts, start = [], time.perf_counter()
    while True:
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        ts.append(time.perf_counter() - t0)
        if iters > 0 and len(ts) >= iters:
            break
        if iters <= 0 and ((time.perf_counter() - start >= min_seconds and len(ts) >= 3) or len(ts) >= 200):
            break
    in_order = list(ts)  # as timed, to show any warm-up trend
    ts.sort()
    if not cuda:
        r = {"seconds_per_step": ts[len(ts) // 2], "gemm_gflops": gemm_gflops(), "steps_timed": len(ts),
             "step_seconds": in_order, "peak_step_bytes": (peak - base) * 1024, "peak_rss_bytes": vm_kib("VmHWM") * 1024,
             "hwm_reset": reset, "threads": torch.get_num_threads(), "torch": torch.__version__}
        if mode == "eager" and not cudnn_gru:
            return r  # the default: the keys bench --peer has always had
        r["device"] = "cpu"
    else:
        peak_all = torch.cuda.max_memory_allocated()
        gemm, by_n = gemm_gflops_cuda()
        r = {"seconds_per_step": ts[len(ts) // 2], "gemm_gflops": gemm, "gemm_gflops_by_n": by_n,
             "steps_timed": len(ts), "step_seconds": in_order, "peak_step_bytes": peak_all - base,
             "peak_first_step_bytes": peak - base, "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
             "peak_rss_bytes": vm_kib("VmHWM") * 1024, "threads": torch.get_num_threads(), "torch": torch.__version__}
        r.update(info)
    r["mode"] = mode
    r["model"] = "torch.nn.GRU" if cudnn_gru else "cellscope_torch.CharLM"
    r["first_step_seconds"] = first
    r["warmup_steps"] = warmups
    if mode != "eager":
        r["compile_seconds"] = first
        r["compile_mode"] = compile_mode
        r["compiled"] = compiled
        r.update(dynamo_stats())
    return r


def time_many(a):
    """`time-many`: each job of --jobs measured in turn, one JSON line each ({"job": K, ...time's keys} or
    {"job": K, "error": ...}), flushed at once. A compile over --compile-timeout ends the process (exit 3,
    the watchdog): the caller starts the jobs after it anew."""
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("peers.py: --device cuda but torch.cuda.is_available() is False")
    torch.set_num_threads(a.threads)
    with open(a.jobs) as f:
        jobs = json.load(f)
    for job in jobs:
        mode, cudnn = job.get("mode", "eager"), bool(job.get("cudnn_gru", False))
        try:
            if cudnn and mode != "eager":
                raise ValueError("--cudnn-gru runs with --mode eager only")
            if mode != "eager" and not hasattr(torch, "compile"):
                raise ValueError("--mode %s needs PyTorch 2 (torch.compile); this is torch %s" % (mode, torch.__version__))
            r = time_steps(job["model"], int(job["batch"]), a.seq, a.vocab, a.iters, a.min_seconds, a.device, mode,
                           cudnn, a.compile_timeout, a.compile_mode)
        except Exception as e:  # noqa: BLE001 (one job's failure is that job's result)
            r = {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")}
        r["job"] = job.get("job")
        print(json.dumps(r), flush=True)
        if mode != "eager" and hasattr(torch, "_dynamo"):
            torch._dynamo.reset()  # the next model compiles afresh (and CUDA graph trees' pools go)
        if a.device == "cuda":
            torch.cuda.empty_cache()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
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
    t.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    t.add_argument("--mode", choices=("eager", "compile", "compile_step"), default="eager")
    t.add_argument("--compile-timeout", type=float, default=0.0, metavar="SECONDS",
                   help="exit 3 if the first step and the warm-up steps take longer (0: no limit)")
    t.add_argument("--compile-mode", default="reduce-overhead",
                   choices=("reduce-overhead", "default", "max-autotune", "max-autotune-no-cudagraphs"),
                   help="torch.compile's mode in the compile modes (an escape hatch: default reduce-overhead)")
    t.add_argument("--cudnn-gru", action="store_true",
                   help="time torch.nn.GRU(embed, hidden) in the same step instead of the model's cell")
    m = sub.add_parser("time-many", help="many `time` measurements in one process (one import of torch, one "
                       "CUDA start): bench --peer --device cuda")
    m.add_argument("--jobs", required=True, help='a JSON file: [{"job": K, "model": {...}, "batch": B, "mode": '
                   '"eager|compile|compile_step", "cudnn_gru": false}, ...]')
    for k, v in (("--seq", 150), ("--vocab", 96), ("--threads", 1), ("--iters", 0)):
        m.add_argument(k, type=int, default=v)
    m.add_argument("--min-seconds", type=float, default=3.0)
    m.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    m.add_argument("--compile-timeout", type=float, default=0.0, metavar="SECONDS")
    m.add_argument("--compile-mode", default="reduce-overhead",
                   choices=("reduce-overhead", "default", "max-autotune", "max-autotune-no-cudagraphs"))
    a = ap.parse_args()
    if a.command == "time-many":
        return time_many(a)
    if a.command == "check":
        torch.set_num_threads(1)
        results = [check_dir(d, a.tol) for d in a.dirs]
        print(json.dumps({"ok": all(r["ok"] for r in results), "tol": a.tol, "results": results}))
        return 0 if all(r["ok"] for r in results) else 1
    if a.cudnn_gru and a.mode != "eager":
        raise SystemExit("peers.py: --cudnn-gru runs with --mode eager only (torch.nn.GRU is one fused kernel "
                         "already), not --mode %s" % a.mode)
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("peers.py: --device cuda but torch.cuda.is_available() is False")
    if a.mode != "eager" and not hasattr(torch, "compile"):
        raise SystemExit("peers.py: --mode %s needs PyTorch 2 (torch.compile); this is torch %s"
                         % (a.mode, torch.__version__))
    torch.set_num_threads(a.threads)
    r = time_steps(json.loads(a.model_json), a.batch, a.seq, a.vocab, a.iters, a.min_seconds, a.device, a.mode,
                   a.cudnn_gru, a.compile_timeout, a.compile_mode)
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
