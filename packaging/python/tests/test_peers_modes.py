"""peers.py time's modes (core/run/bench/peers/peers.py): the default output, --cudnn-gru, the refusals
(--device cuda without CUDA, --mode compile* without torch.compile, --cudnn-gru with a compile mode),
--compile-timeout, and --mode compile_step's step-wise forward against the model's own forward, bit for bit
(the bodies it compiles restate cellscope_torch's per-step code). The compile modes themselves run where
torch.compile exists (PyTorch >= 2) and are skipped on Debian 12's 1.13."""
import copy
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "core", "run", "bench", "peers", "peers.py"))
DEFAULT_KEYS = ["seconds_per_step", "gemm_gflops", "steps_timed", "step_seconds", "peak_step_bytes",
                "peak_rss_bytes", "hwm_reset", "threads", "torch"]
HAS_COMPILE = hasattr(torch, "compile")


def load_peers():
    spec = importlib.util.spec_from_file_location("cellscope_peers", PEERS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


peers = load_peers()

# The resolved model sections `bench --peer` hands peers.py (bench --peer-export's model.json), at tiny sizes
SECTIONS = {
    "gru_dt": {"candidate_dropout": 0.0, "cell": "gru_dt", "depth": 1, "dropout": 0.0, "embed": 8, "hidden": 8,
               "layer_norm": False, "layers": 1, "share_transition": True},
    "sat_mzu": {"candidate_dropout": 0.0, "cell": "sat_mzu", "depth": 1, "disagreement_form": "cosine",
                "disagreement_pairs": "all", "disagreement_scale": "mean", "disagreement_warmup": 0, "dropout": 0.0,
                "embed": 8, "ffn_residual": False, "filter": 16, "hidden": 8, "layer_norm": True, "layers": 1,
                "ln_position": "preact", "regular_gate": False, "regular_trans": False, "sat_qkv": "shared",
                "share_transition": True, "zone_disagreement": 1.0, "zones": 4},
    "cru_shallow": {"candidate_dropout": 0.0, "cell": "cru_shallow", "conv_activation": "relu", "conv_channels": 0,
                    "conv_window": "causal", "dropout": 0.0, "embed": 8, "filter_length": 3, "hidden": 8,
                    "layers": 1, "reset_after": True},
    "mcrnn": {"attention": 0, "base": "lstm", "block": 4, "candidate_dropout": 0.0, "cell": "mcrnn",
              "dist_scale": 0.1, "dropout": 0.0, "embed": 8, "hidden": 8, "layer_norm": False, "layers": 1,
              "lstm_memory": "prev", "state_clamp": "auto"},
}
MZU = SECTIONS["sat_mzu"]
SECTIONS.update({
    "gru_dt_unshared": dict(SECTIONS["gru_dt"], depth=2, share_transition=False),
    "gcn_mzu": dict(MZU, cell="gcn_mzu", gcn_activation="relu", gcn_adjacency="cosine_plus_identity",
                    gcn_degree="absolute", gcn_edges="cosine", depth=2, share_transition=False),
    "cap_mzu": dict({k: v for k, v in MZU.items() if k != "sat_qkv"}, cell="cap_mzu", capsules=2, routing_iters=3,
                    disagreement_scale="sum"),
    "cru_deep": dict(SECTIONS["cru_shallow"], cell="cru_deep"),
    "cru_deep_enhanced": dict(SECTIONS["cru_shallow"], cell="cru_deep_enhanced", reset_after=False),
    "cru_shallow_reset_before": dict(SECTIONS["cru_shallow"], reset_after=False),
    "mcrnn_sat": dict(SECTIONS["mcrnn"], base="sat_mzu"),
})


def run_time(*args, env=None):
    e = dict(os.environ, CELLSCOPE_BENCH_GEMM_SECONDS="0.05")
    e.update(env or {})
    return subprocess.run([sys.executable, PEERS, "time", "--batch", "3", "--seq", "5", "--vocab", "11",
                           "--iters", "2"] + list(args), capture_output=True, text=True, env=e, timeout=900)


def last_json(out):
    return json.loads(out.strip().splitlines()[-1])


def test_default_output_keys_unchanged():
    r = run_time("--model-json", json.dumps(SECTIONS["gru_dt"]))
    assert r.returncode == 0, r.stderr
    j = last_json(r.stdout)
    assert list(j) == DEFAULT_KEYS
    assert j["steps_timed"] == 2 and j["seconds_per_step"] > 0


def test_cudnn_gru_cpu():
    r = run_time("--model-json", json.dumps(SECTIONS["sat_mzu"]), "--cudnn-gru")
    assert r.returncode == 0, r.stderr
    j = last_json(r.stdout)
    assert set(DEFAULT_KEYS) <= set(j)
    assert j["model"] == "torch.nn.GRU" and j["mode"] == "eager" and j["device"] == "cpu"


def test_cudnn_gru_is_embedding_gru_linear():
    torch.manual_seed(0)
    m = peers.FusedGRULM(11, 8, 6)
    assert isinstance(m.gru, torch.nn.GRU) and m.gru.num_layers == 1
    assert (m.gru.input_size, m.gru.hidden_size) == (8, 6)
    logits, _ = m(torch.randint(0, 11, (5, 3)))
    assert logits.shape == (5, 3, 11)


def test_cudnn_gru_refuses_compile_modes():
    for mode in ("compile", "compile_step"):
        r = run_time("--model-json", json.dumps(SECTIONS["gru_dt"]), "--cudnn-gru", "--mode", mode)
        assert r.returncode != 0
        assert "--cudnn-gru runs with --mode eager only" in r.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_refused_without_cuda():
    r = run_time("--model-json", json.dumps(SECTIONS["gru_dt"]), "--device", "cuda")
    assert r.returncode != 0
    assert "peers.py: --device cuda but torch.cuda.is_available() is False" in r.stderr


@pytest.mark.skipif(HAS_COMPILE, reason="torch.compile exists (PyTorch >= 2)")
def test_compile_refused_before_torch2():
    for mode in ("compile", "compile_step"):
        r = run_time("--model-json", json.dumps(SECTIONS["gru_dt"]), "--mode", mode)
        assert r.returncode != 0
        assert ("peers.py: --mode %s needs PyTorch 2 (torch.compile); this is torch %s" % (mode, torch.__version__)
                in r.stderr)


def test_compile_timeout_exits_3():
    big = dict(SECTIONS["gru_dt"], embed=128, hidden=256)
    r = run_time("--model-json", json.dumps(big), "--seq", "60", "--batch", "16", "--compile-timeout", "0.001")
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "--compile-timeout" in r.stderr and r.stdout == ""


def grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_stepwise_forward_is_the_models(name):
    """compile_step's loop with the bodies not compiled: the loss and every gradient equal the model's own
    forward's, bit for bit, in double."""
    V, T, B = 11, 7, 3
    torch.manual_seed(0)
    model = peers.make_model(SECTIONS[name], V).double().train()
    twin = copy.deepcopy(model)
    x, y = torch.randint(0, V, (T, B)), torch.randint(0, V, (T, B))
    loss, nll = peers.loss_of(model, x, y, V)
    loss.backward()
    sw = peers.StepwiseLoss(twin, V, lambda f: f)
    loss2, nll2 = sw(x, y)
    loss2.backward()
    assert torch.equal(loss, loss2) and torch.equal(nll, nll2), (loss.item(), loss2.item())
    g, g2 = grads(model), grads(twin)
    assert set(g) == set(g2) and g
    for k in g:
        assert torch.equal(g[k], g2[k]), k
    if name == "cru_shallow":
        assert sw.compiled.startswith("nothing")


def test_mcrnn_coefficients_on_a_device_are_the_packages():
    """cuda_ready's coefficient table (the MC-RNN on CUDA), tried on the CPU: the same tensors, the same loss."""
    V, T, B = 11, 9, 3
    torch.manual_seed(0)
    model = peers.make_model(SECTIONS["mcrnn"], V).train()
    cell = model.stack.layer0
    want = [cell.coefficients(t, torch.zeros(1)) for t in range(12)]
    want64 = cell.coefficients(5, torch.zeros(1, dtype=torch.float64))
    x, y = torch.randint(0, V, (T, B)), torch.randint(0, V, (T, B))
    loss = peers.loss_of(model, x, y, V)[0]
    peers.cuda_ready(model, "cpu")
    assert "coefficients" in vars(cell)
    for t in range(12):
        assert torch.equal(cell.coefficients(t, torch.zeros(1)), want[t])
    assert torch.equal(cell.coefficients(5, torch.zeros(1, dtype=torch.float64)), want64)  # other dtypes: as made
    assert torch.equal(peers.loss_of(model, x, y, V)[0], loss)


# Inductor on the CPU (a C++ compiler and PyTorch's headers needed): compiling the whole unrolled forward takes
# one to two minutes a cell on a 2-core machine even at seq 4, so only GRU+DT's is compiled here
@pytest.mark.skipif(not HAS_COMPILE, reason="torch.compile needs PyTorch >= 2")
@pytest.mark.parametrize("mode,name,torch_mode", [
    ("compile", "gru_dt", "reduce-overhead"), ("compile_step", "gru_dt", "default"),
    ("compile_step", "sat_mzu", "reduce-overhead"), ("compile_step", "cru_shallow", "reduce-overhead"),
    ("compile_step", "mcrnn", "reduce-overhead")])
def test_compile_modes_on_cpu(mode, name, torch_mode):
    r = run_time("--model-json", json.dumps(SECTIONS[name]), "--mode", mode, "--seq", "4", "--compile-mode", torch_mode)
    assert r.returncode == 0, r.stderr[-3000:]
    j = last_json(r.stdout)
    assert j["mode"] == mode and j["device"] == "cpu" and j["compile_seconds"] > 0 and j["compiled"]
    assert j["compile_mode"] == torch_mode
    assert set(DEFAULT_KEYS) <= set(j)
