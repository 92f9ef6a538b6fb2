"""With CELLSCOPE_CLI (a cellscope-cli; ctest's cellscope_torch_pytest sets it): tiny runs trained and exported by
Cellscope itself load here and give its reference logits. Without it the test is skipped, and says so (-rs)."""
import json
import os
import subprocess

import pytest

import cellscope_torch as ct

CLI = os.environ.get("CELLSCOPE_CLI")


@pytest.mark.skipif(not CLI, reason="CELLSCOPE_CLI is not set: no cellscope-cli to export a run with")
@pytest.mark.parametrize("model", [
    {"cell": "gru"},
    {"cell": "mcrnn", "block": 3, "base": "sat_mzu"},  # the base's options come from export.json's schema
])
def test_a_run_exported_by_cellscope_loads_and_agrees(tmp_path, model):
    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 40)
    cfg = {"task": "char_lm", "dataset": {"path": str(text)}, "model": dict(model, embed=6, hidden=8),
           "training": {"batch": 4, "steps": 2, "eval_every": 0, "threads": 1, "eval_test": False, "bptt": 12,
                        "eval_batch": 3}}
    cfg_path = tmp_path / "cfg.json"
    cfg_path.write_text(json.dumps(cfg))
    run, out = tmp_path / "run", tmp_path / "exp"
    for argv in (["train", str(cfg_path), "--run-dir", str(run)], ["export", str(run), "--out", str(out)]):
        r = subprocess.run([CLI] + argv, capture_output=True, text=True)
        assert r.returncode == 0, (argv, r.stderr)
    man = ct.read_manifest(str(out))
    assert man["format_version"] == ct.FORMAT_VERSION
    model_, info = ct.load(str(out))
    r = ct.check(str(out), model_)
    assert r["max_abs"] <= 1e-5 and r["loss_diff"] <= 1e-6, r
