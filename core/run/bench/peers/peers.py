#!/usr/bin/python3
"""Plain PyTorch (eager, Python) peers of Cellscope's cells: the yardstick of `bench --peer`.

Each cell is written the way a researcher would write it in PyTorch's Python frontend:
nn.Module, a Python loop over time, torch ops (no TorchScript, no custom kernels); the cells and the
char-LM model are those of the cellscope_torch package (packaging/python/cellscope_torch), inside
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


def time_steps(m, B, T, V, iters, min_seconds):
    torch.manual_seed(0)
    model = make_model(m, V)
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
