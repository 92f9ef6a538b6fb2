"""Exports written by hand for the tests of cellscope_torch (no C++ build needed): a run's resolved model section,
the export.json of the current format with a schema as cellscope-cli writes it, the weights of a model this package
builds (seeded) and a reference batch of its own logits. What they check is the package's reading of an export
(format versions, the schema, refusals); the agreement with Cellscope's own logits is tests/core/test_export_torch_python.cpp's
and, with CELLSCOPE_CLI set, test_cli_export.py's."""
import json
import os

import pytest
import torch
import torch.nn.functional as F

import cellscope_torch as ct

# Cellscope's families of the cells these tests use (what export.json's schema.cells holds; the registry's, as of
# format 2)
CELLS = {"rnn": "baseline", "gru": "baseline", "lstm": "baseline", "gru_dt": "baseline", "sat_mzu": "mzu",
         "gcn_mzu": "mzu", "cap_mzu": "mzu", "mcrnn": "mcrnn", "cru_shallow": "cru", "cru_deep": "cru",
         "cru_deep_enhanced": "cru", "script": "script"}


def schema_of(model, base=None, cells=None):
    """A schema as cellscope-cli export writes it for the resolved section `model` (every option its default: the
    tests' sections hold the values they want)."""
    opts = {k: {"type": "string" if isinstance(v, str) else "float" if isinstance(v, float) else
                "bool" if isinstance(v, bool) else "int", "default": v}
            for k, v in model.items() if k != "cell"}
    cells = dict(CELLS if cells is None else cells)
    s = {"cell": model["cell"], "family": cells.get(model["cell"]), "options": opts, "cells": cells,
         "tasks": ["char_lm", "word_lm", "classify", "absa", "cloze", "seq2seq"]}
    if base is not None:
        s["base"] = {"cell": base["cell"], "family": cells.get(base["cell"]), "model": base}
    return s


def write_export(d, model, base=None, manifest_edit=None, V=7, T=5, B=2):
    """An export of a char_lm run with the resolved model section `model` into the directory d (created)."""
    os.makedirs(d, exist_ok=True)
    cfg = {"task": {"name": "char_lm"}, "model": dict(model), "training": {"bptt": T, "eval_batch": B}}
    torch.manual_seed(0)
    m = dict(model)
    if base is not None:
        m[ct.models.BASE_KEY] = base
    net = ct.CharLM(m, V).eval()
    state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    torch.save(state, os.path.join(d, "model.pt"))
    x = torch.randint(0, V, (T, B))
    y = torch.randint(0, V, (T, B))
    with torch.no_grad():
        logits, _ = net(x)
    loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1)).double()
    torch.save({"x": x, "y": y, "mask": torch.ones(T, B), "logits": logits, "loss": loss},
               os.path.join(d, "reference.pt"))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(["<unk>"] + [chr(ord("a") + i) for i in range(V - 1)], f)
    man = {"format": "cellscope-torch-export %d" % ct.FORMAT_VERSION, "format_version": ct.FORMAT_VERSION,
           "cellscope_version": "0.0.0-test", "run": "/runs/r1", "task": "char_lm", "cell": model["cell"],
           "parameters": {k: list(v.shape) for k, v in state.items()}, "reference": True,
           "files": ["model.pt", "config.json", "vocab.json", "reference.pt"], "schema": schema_of(model, base)}
    if manifest_edit:
        manifest_edit(man)
    with open(os.path.join(d, "export.json"), "w") as f:
        json.dump(man, f)
    return d


GRU = {"cell": "gru", "embed": 4, "hidden": 6, "layers": 1, "dropout": 0.0, "layer_norm": False,
       "candidate_dropout": 0.0}
SAT = {"cell": "sat_mzu", "embed": 4, "hidden": 8, "layers": 1, "dropout": 0.0, "layer_norm": True,
       "candidate_dropout": 0.0, "depth": 1, "share_transition": True, "zones": 2, "filter": 6,
       "zone_disagreement": 1.0, "disagreement_scale": "mean", "disagreement_pairs": "all",
       "disagreement_form": "cosine", "disagreement_warmup": 0, "regular_gate": False, "regular_trans": False,
       "ln_position": "preact", "ffn_residual": False, "sat_qkv": "shared"}


@pytest.fixture
def gru_export(tmp_path):
    return write_export(str(tmp_path / "gru"), GRU)
