"""Reading a directory written by `cellscope-cli export` (model.pt, config.json, vocab.json, reference.pt,
export.json) and checking the rebuilt model against Cellscope's own logits on the reference batch."""
import copy
import inspect
import json
import os
import pickle

import torch

from .cells import CELL_FAMILIES
from .models import BASE_KEY, TASKS, build_model


def _read_json(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        raise FileNotFoundError("cellscope_torch: %s has no %s (not a directory written by `cellscope-cli export`)"
                                % (d, name))
    with open(p, encoding="utf-8") as f:
        return json.load(f)


# The export format this package reads: export.json's "format_version" (and "format": "cellscope-torch-export N"),
# written by cellscope-cli export (core/run/export/torch_schema.h, kTorchExportFormat). 2: export.json carries
# "schema", the defaults, choices and families of Cellscope's registries, which this package reads instead of
# restating them.
FORMAT_VERSION = 2


class ExportFormatError(ValueError):
    """An export.json of a format this package does not read (older or newer), or none at all."""


def read_manifest(d):
    """export.json of the export d, its format checked: ExportFormatError naming the format and what to do for an
    export of another format than FORMAT_VERSION."""
    man = _read_json(d, "export.json")
    fmt = man.get("format") if isinstance(man, dict) else None
    if not isinstance(fmt, str) or not fmt.startswith("cellscope-torch-export "):
        raise ExportFormatError("cellscope_torch: %s/export.json is not a manifest of `cellscope-cli export` (its "
                                "\"format\" is %r)" % (d, fmt))
    try:
        version = int(man.get("format_version", fmt.split(" ", 1)[1]))
    except (TypeError, ValueError):
        raise ExportFormatError("cellscope_torch: %s/export.json: export format %r is not a version number"
                                % (d, fmt)) from None
    by = "cellscope-cli %s" % man.get("cellscope_version", "?")
    if version > FORMAT_VERSION:
        raise ExportFormatError("cellscope_torch: %s was written by %s in export format %d; this cellscope_torch "
                                "reads format %d: use the cellscope_torch of that Cellscope (its packaging/python, "
                                "or its .deb)" % (d, by, version, FORMAT_VERSION))
    if version < FORMAT_VERSION:
        run = man.get("run", "RUN_DIR")
        raise ExportFormatError("cellscope_torch: %s was written by %s in export format %d, which carries no schema "
                                "(this cellscope_torch reads format %d): export the run again with this Cellscope: "
                                "cellscope-cli export %s --out %s --force" % (d, by, version, FORMAT_VERSION, run, d))
    if fmt != "cellscope-torch-export %d" % version or not isinstance(man.get("schema"), dict):
        raise ExportFormatError("cellscope_torch: %s/export.json: format %r with format_version %r and %s schema: "
                                "not as cellscope-cli writes it" % (d, fmt, man.get("format_version"),
                                                                     "a" if isinstance(man.get("schema"), dict)
                                                                     else "no"))
    return man


def resolved_model(cfg, manifest, d="."):
    """The model section to build from: config.json's (the run's resolved section), checked complete against
    export.json's schema (every option Cellscope has for the run's cell and task, with its default, is there), the
    cell's family checked against Cellscope's, and an MC-RNN's base section under models.BASE_KEY."""
    schema = manifest["schema"]
    m = dict(cfg["model"])
    cell = m.get("cell")
    if schema.get("cell") != cell:
        raise ValueError("cellscope_torch: %s: config.json's model.cell %r is not export.json's %r"
                         % (d, cell, schema.get("cell")))
    for c in [cell] + ([schema["base"]["cell"]] if "base" in schema else []):
        fam = schema.get("cells", {}).get(c)
        if c not in CELL_FAMILIES:
            raise NotImplementedError("cellscope_torch: cell '%s' (Cellscope's family %s) is not implemented "
                                      "(implemented: %s)" % (c, fam, ", ".join(CELL_FAMILIES)))
        if CELL_FAMILIES[c] != fam:
            raise NotImplementedError("cellscope_torch: cell '%s' is of family %s in Cellscope (export.json) and %s "
                                      "here: this cellscope_torch builds a different cell" % (c, fam, CELL_FAMILIES[c]))
    missing = sorted(k for k, o in schema.get("options", {}).items()
                     if o.get("default") is not None and k not in m)
    if missing:
        raise ValueError("cellscope_torch: %s/config.json lacks %s, which Cellscope's schema (export.json) has for "
                         "cell %s: not a resolved configuration" % (d, ", ".join("model." + k for k in missing), cell))
    if "base" in schema:
        m[BASE_KEY] = dict(schema["base"]["model"])
    return m


# torch.load's weights_only (PyTorch 1.13 and newer): model.pt and reference.pt hold plain tensors in a pickle that
# the weights-only unpickler accepts, the default of torch.load from PyTorch 2.6 on.
_WEIGHTS_ONLY = "weights_only" in inspect.signature(torch.load).parameters


def load_tensors(path, map_location="cpu"):
    """torch.load of an export's tensor file (model.pt, reference.pt): a dict name -> tensor, read with
    weights_only=True where this torch has the argument, so no code in the file runs. An export written by a
    cellscope-cli older than its weights-only model.pt (a torch::pickle_save file) is refused with a message
    saying to export the run again."""
    if not _WEIGHTS_ONLY:
        return torch.load(path, map_location=map_location)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError("cellscope_torch: %s does not load with torch.load(weights_only=True) (written by "
                                     "an older cellscope-cli export? export the run again): %s" % (path, e)) from e


def read_vocab(d):
    """The vocabulary as a list of symbols (id = index), or None when the export has no vocab.json."""
    p = os.path.join(d, "vocab.json")
    if not os.path.exists(p):
        return None
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def _with_exported_script(d, cfg, manifest):
    """(the config to build from, the script's path): a script-cell run is built from the export's copy of its
    TorchScript file (export.json names it), checked against the SHA-256 the run recorded; other runs as they are."""
    m = cfg.get("model", {})
    if m.get("cell") != "script":
        return cfg, None
    name = (manifest.get("script") or {}).get("file", "script_cell.pt")
    path = os.path.join(d, name)
    if not os.path.isfile(path):
        raise FileNotFoundError("cellscope_torch: %s has no %s, the run's TorchScript cell (model.cell = script): "
                                "export the run again with this version of cellscope-cli" % (d, name))
    if not m.get("script_sha256"):
        raise ValueError("cellscope_torch: %s/config.json records no model.script_sha256: cannot tell whether %s is "
                         "the script the run was trained with" % (d, path))
    out = copy.deepcopy(cfg)
    out["model"]["script"] = path  # ScriptCell checks its SHA-256 against model.script_sha256
    return out, path


def load(d, map_location="cpu"):
    """Rebuild the model of an exported run and load its weights (strict: every name and shape must match).

    Returns (model in eval mode, info) with info = {"task", "cell", "config", "vocab", "manifest", "dir", "script"}
    (script: the path of the export's TorchScript cell, model.cell = "script"; else None).
    Raises NotImplementedError naming the option when the run uses something this package does not build, and
    script_cell.ScriptMismatchError when the export's script is not the one the run recorded (model.script_sha256)."""
    manifest = read_manifest(d)
    cfg = _read_json(d, "config.json")
    state = load_tensors(os.path.join(d, "model.pt"), map_location=map_location)
    if not isinstance(state, dict):
        raise ValueError("cellscope_torch: %s/model.pt is not a dict of tensors" % d)
    vocab = read_vocab(d)
    if "src_embed.weight" in state:  # seq2seq: the source's vocabulary size (the target's below)
        V = state["src_embed.weight"].shape[0]
    elif "embed.weight" in state:
        V = state["embed.weight"].shape[0]
    elif vocab is not None:
        V = len(vocab)
    else:
        raise ValueError("cellscope_torch: %s: cannot tell the vocabulary size" % d)
    classes = state["out.weight"].shape[0] if "out.weight" in state and "out_w" not in state else None
    target = state["tgt_embed.weight"].shape[0] if "tgt_embed.weight" in state else None
    build_cfg, script = _with_exported_script(d, cfg, manifest)
    build_cfg = dict(build_cfg, model=resolved_model(build_cfg, manifest, d))
    model = build_model(build_cfg, V, classes, target)
    model.load_state_dict(state, strict=True)
    model.eval()
    task = cfg["task"]["name"] if isinstance(cfg.get("task"), dict) else cfg.get("task")
    info = {"task": task, "cell": cfg["model"]["cell"], "config": cfg, "vocab": vocab, "manifest": manifest,
            "dir": d, "script": script}
    return model, info


def reference_inputs(task, ref):
    """The arguments of the model's forward for the reference batch `ref` (reference.pt's dict) of `task`, as
    check() feeds them (models.TASKS)."""
    return TASKS[task]["inputs"](ref)


def logits_of(out):
    """The logits of a forward's result (language models and seq2seq return (logits, state))."""
    return out[0] if isinstance(out, tuple) else out


def check(d, model=None):
    """Run the reference batch of an export through the rebuilt model (eval mode, float32 as Cellscope) and
    compare with Cellscope's logits and loss on it. `model`: the loaded model (load()'s) or its
    torch.jit.script / torch.jit.load form; None: load(d).

    Returns {"task", "cell", "max_abs", "max_rel", "loss", "cellscope_loss", "loss_diff", "shape"}: max_abs the
    largest |logit difference|, max_rel the largest |difference| / max(|Cellscope's logit|, 1)."""
    if model is None:
        model, info = load(d)
        task, cell = info["task"], info["cell"]
    else:
        cfg = _read_json(d, "config.json")
        task, cell = cfg["task"]["name"], cfg["model"]["cell"]
    p = os.path.join(d, "reference.pt")
    if not os.path.exists(p):
        raise FileNotFoundError("cellscope_torch: %s has no reference.pt (the export of task '%s' writes none)"
                                % (d, task))
    ref = load_tensors(p)
    model.eval()
    with torch.no_grad():
        logits = logits_of(model(*reference_inputs(task, ref)))
        loss = TASKS[task]["loss"](logits, ref)
        loss = loss.double().item()
    theirs = ref["logits"]
    diff = (logits - theirs).abs()
    return {"task": task, "cell": cell, "shape": list(theirs.shape), "max_abs": diff.max().item(),
            "max_rel": (diff / theirs.abs().clamp_min(1.0)).max().item(), "loss": loss,
            "cellscope_loss": ref["loss"].item(), "loss_diff": abs(loss - ref["loss"].item())}


_ST_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
              torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
              torch.bool: "BOOL"}


def safetensors_bytes(state):
    """The safetensors format of a dict name -> tensor (the format `cellscope-cli export` writes and
    `cellscope-cli import` reads; no safetensors package needed: Debian 12 has none). Little-endian, tensors in
    the dict's order, the header padded with spaces to a multiple of 8 as safetensors' own writer does."""
    import struct
    import sys
    if sys.byteorder != "little":
        raise ValueError("cellscope_torch: safetensors files are little-endian; this machine is not")
    header, blobs, off = {}, [], 0
    for name, t in state.items():
        t = t.detach().cpu().contiguous()
        if t.dtype not in _ST_DTYPES:
            raise ValueError("cellscope_torch: tensor %r has dtype %s, which safetensors here does not write"
                             % (name, t.dtype))
        b = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def _replace_file(path, write):
    """write(f) into a temporary file beside path (a name of this call's own), then os.replace onto path."""
    import tempfile
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_export(model, d):
    """Write a model's weights back into the export folder d (model.safetensors and model.pt, Cellscope's tensor
    names), so that `cellscope-cli import d` makes a Cellscope run of it: fine-tune or edit a model from load(d) in
    PyTorch, save_export(model, d), then import, analyse and compare it in Cellscope.

    model: a model from load(d) (or one built like it), or a TorchNNLanguageModel / torch.nn.RNN, GRU, LSTM from
    to_torch_nn(d), whose weights go back to Cellscope's names first (from_torch_nn). Every name and shape must be
    the export's (export.json's "parameters"): ValueError listing the differences, before anything is written.
    export.json records the save ("saved": {"by", "time"}); reference.pt keeps the exported weights' logits, so
    check(d) now measures how far the saved weights moved from them."""
    import datetime
    from .torch_nn import from_torch_nn, is_torch_nn
    manifest = read_manifest(d)
    if is_torch_nn(model):
        model = from_torch_nn(model, d)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    want = {k: list(v) for k, v in (manifest.get("parameters") or {}).items()}
    have = {k: list(v.shape) for k, v in state.items()}
    problems = ["%s: %s here, %s in the export" % (k, have[k], want[k]) for k in have if k in want and have[k] != want[k]]
    problems += ["%s: not in the export" % k for k in have if k not in want]
    problems += ["%s: missing here" % k for k in want if k not in have]
    if problems:
        raise ValueError("cellscope_torch.save_export: the model does not fit the export in %s:\n  %s"
                         % (d, "\n  ".join(problems[:10])))
    bad = [k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise ValueError("cellscope_torch.save_export: NaN or Inf in %s" % ", ".join(bad[:10]))
    st = safetensors_bytes(state)
    _replace_file(os.path.join(d, "model.safetensors"), lambda f: f.write(st))
    _replace_file(os.path.join(d, "model.pt"), lambda f: torch.save(state, f))
    manifest["saved"] = {"by": "cellscope_torch.save_export",
                         "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    text = (json.dumps(manifest, indent=2) + "\n").encode("utf-8")
    _replace_file(os.path.join(d, "export.json"), lambda f: f.write(text))
    return d
