"""cellscope_torch reading an export: the format version, the schema instead of restated defaults, refusals."""
import json
import os

import pytest
import torch

import cellscope_torch as ct
from conftest import GRU, SAT, write_export


def edit_json(path, fn):
    with open(path) as f:
        j = json.load(f)
    fn(j)
    with open(path, "w") as f:
        json.dump(j, f)


def test_current_format_loads_and_agrees_with_its_reference(gru_export):
    model, info = ct.load(gru_export)
    assert info["manifest"]["format_version"] == ct.FORMAT_VERSION == 2
    r = ct.check(gru_export, model)
    assert r["max_abs"] == 0.0 and r["loss_diff"] < 1e-12, r


def test_newer_format_is_refused_naming_both_versions(tmp_path):
    d = write_export(str(tmp_path / "e"), GRU, manifest_edit=lambda m: m.update(
        format="cellscope-torch-export 3", format_version=3, cellscope_version="9.9.9"))
    with pytest.raises(ct.ExportFormatError) as e:
        ct.load(d)
    msg = str(e.value)
    assert "export format 3" in msg and "reads format 2" in msg and "cellscope-cli 9.9.9" in msg, msg


def test_older_format_is_refused_with_the_command_that_exports_it_again(tmp_path):
    def old(m):
        m["format"] = "cellscope-torch-export 1"
        del m["format_version"], m["schema"]
    d = write_export(str(tmp_path / "e"), GRU, manifest_edit=old)
    with pytest.raises(ct.ExportFormatError) as e:
        ct.load(d)
    assert "cellscope-cli export /runs/r1 --out %s --force" % d in str(e.value), str(e.value)
    with pytest.raises(ct.ExportFormatError):  # save_export reads the same manifest
        ct.save_export(ct.CharLM(GRU, 7), d)


@pytest.mark.parametrize("edit, words", [
    (lambda m: m.update(format="something else"), "not a manifest"),
    (lambda m: m.update(format_version="two"), "not a version number"),
    (lambda m: m.pop("schema"), "no schema"),
    (lambda m: m.update(format="cellscope-torch-export 2", format_version=1), "format_version 1"),
])
def test_malformed_manifest_is_refused(tmp_path, edit, words):
    d = write_export(str(tmp_path / "e"), GRU, manifest_edit=edit)
    with pytest.raises(ct.ExportFormatError) as e:
        ct.load(d)
    assert words in str(e.value) or "written by" in str(e.value), str(e.value)


def test_an_option_of_the_schema_missing_from_config_is_refused_not_defaulted(tmp_path):
    d = write_export(str(tmp_path / "e"), SAT)
    edit_json(os.path.join(d, "config.json"), lambda c: c["model"].pop("zones"))
    with pytest.raises(ValueError) as e:
        ct.load(d)
    assert "model.zones" in str(e.value), str(e.value)


def test_a_cell_this_package_lacks_is_refused_by_name(tmp_path):
    d = write_export(str(tmp_path / "e"), GRU)
    def newcell(m):
        m["schema"]["cells"]["foo_mzu"] = "mzu"
        m["schema"]["cell"] = "foo_mzu"
    edit_json(os.path.join(d, "export.json"), newcell)
    edit_json(os.path.join(d, "config.json"), lambda c: c["model"].update(cell="foo_mzu"))
    with pytest.raises(NotImplementedError) as e:
        ct.load(d)
    assert "foo_mzu" in str(e.value) and "family mzu" in str(e.value), str(e.value)


def test_a_cell_of_another_family_in_cellscope_is_refused(tmp_path):
    d = write_export(str(tmp_path / "e"), GRU)
    edit_json(os.path.join(d, "export.json"), lambda m: m["schema"]["cells"].update(gru="mzu"))
    with pytest.raises(NotImplementedError) as e:
        ct.load(d)
    assert "family mzu in Cellscope" in str(e.value), str(e.value)


def test_an_enum_value_this_package_does_not_implement_is_refused(tmp_path):
    d = write_export(str(tmp_path / "e"), SAT)
    edit_json(os.path.join(d, "config.json"), lambda c: c["model"].update(disagreement_form="l1"))
    with pytest.raises(NotImplementedError) as e:
        ct.load(d)
    assert "model.disagreement_form = 'l1'" in str(e.value), str(e.value)


def test_an_option_this_package_does_not_know_is_refused(tmp_path):
    d = write_export(str(tmp_path / "e"), GRU)
    edit_json(os.path.join(d, "config.json"), lambda c: c["model"].update(new_knob=3))
    with pytest.raises(NotImplementedError) as e:
        ct.load(d)
    assert "model.new_knob" in str(e.value), str(e.value)


def test_an_mcrnn_base_is_built_from_the_export_not_from_defaults_here(tmp_path):
    # the base's section as cellscope-cli writes it (mcrnn_base_model): zones 2, filter 6, not BARE_DEFAULTS' 4, 512
    mc = {"cell": "mcrnn", "embed": 4, "hidden": 8, "layers": 1, "dropout": 0.0, "layer_norm": False,
          "candidate_dropout": 0.0, "block": 3, "attention": 0, "lstm_memory": "prev", "dist_scale": 0.1,
          "base": "sat_mzu"}
    base = dict(SAT, **{k: v for k, v in mc.items() if k != "cell"}, cell="sat_mzu")
    base["layer_norm"] = False
    d = write_export(str(tmp_path / "e"), mc, base=base)
    model, _ = ct.load(d)
    blk = model.stack.layer0.base.first
    assert (blk.N, blk.ln) == (2, False), (blk.N, blk.ln)
    assert ct.check(d, model)["max_abs"] == 0.0
    # without the schema's base the package would build another model: the weights no longer fit
    edit_json(os.path.join(d, "export.json"), lambda m: m["schema"]["base"]["model"].update(zones=4))
    with pytest.raises(RuntimeError):
        ct.load(d)


def test_a_bare_section_takes_the_bare_defaults_and_an_export_never_does():
    # the bench peers' path (core/run/bench/peers/peers.py): a section that is not an export's
    net = ct.CharLM({"cell": "sat_mzu", "embed": 4, "hidden": 8}, 5)
    assert net.stack.layer0.first.N == ct.BARE_DEFAULTS["mzu"]["zones"]
    # the strict reading: a model other than CharLM built from an incomplete section names the option
    with pytest.raises(ValueError) as e:
        ct.WordLM({"cell": "gru", "embed": 4, "hidden": 8, "layers": 1, "dropout": 0.0}, 5)
    assert "model." in str(e.value)


def test_with_defaults_fills_from_the_schema_only_what_is_missing():
    schema = {"options": {"zones": {"default": 4}, "filter": {"default": 512}, "x": {"default": None}}}
    assert ct.with_defaults({"cell": "sat_mzu", "zones": 2}, schema) == {"cell": "sat_mzu", "zones": 2, "filter": 512}


def test_every_implemented_cell_builds_from_bare_defaults():
    for cell in ct.CELLS:
        if cell == "script":
            continue  # needs a TorchScript file (tests/core/test_export_torch.cpp exports such runs)
        out, _ = ct.CharLM({"cell": cell, "embed": 4, "hidden": 8}, 5)(torch.randint(0, 5, (3, 2)))
        assert out.shape == (3, 2, 5), cell


def test_the_distribution_version_is_cellscopes():
    import re
    import subprocess
    import sys
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "..", "..", "CMakeLists.txt")) as f:
        want = re.search(r"project\(Cellscope VERSION ([0-9.]+)", f.read()).group(1)
    r = subprocess.run([sys.executable, "setup.py", "--version"], cwd=here, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == want, (r.stdout, want)
