"""TorchScript and ONNX forms of a loaded model (see README.md, "TorchScript and ONNX", for what works per cell).

`script()`: `torch.jit.script` of the model as it is (every cell and task compiles: the loop over time, the
state lists and the options are TorchScript; SCRIPTING_NOTES.md), or the compiler's reason. A scripted model
takes any sequence length and batch size, saves with `torch.jit.save` and runs in LibTorch without Python.
`trace()` records the loop unrolled for the example's sequence length (the batch size stays free). ONNX export
traces the same way (`export_onnx`, opset 14, Debian's python3-torch 1.13), checked with onnx.checker (the tests
also run it with onnxruntime where that imports: Debian 13 has it, Debian 12 does not).
"""
import io
import warnings

import torch

from .script_cell import ScriptCell


class LogitsOnly(torch.nn.Module):
    """The model with one tensor out (the logits), as tracing and ONNX need; x [T, B] ids (sentence tasks: x and
    lengths)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, lengths=None):
        if lengths is None:
            return self.model(x)[0]
        return self.model(x, lengths)


def cpu_fuser_off():
    """Turns off TorchScript's TensorExpr fuser for the CPU in this process, where this torch build has it on, and
    says so once (a warning); returns whether it was on. A torch built with LLVM (Debian 13's python3-torch 2.6;
    `torch._C._llvm_enabled()`) fuses CPU graphs on a scripted or traced module's second call, and for these
    models that compile never finished (classify, absa, cloze, seq2seq: over 20 CPU-minutes, seen with
    2.6.0+debian; the graph optimizer itself, with the fuser off, takes milliseconds). Builds without LLVM
    (Debian 12's 1.13) have it off already. `script()`, `trace()` and `load_scripted()` call it; a scripted file
    run elsewhere needs `torch._C._jit_override_can_fuse_on_cpu(False)` there too (README.md)."""
    if not torch._C._jit_can_fuse_on_cpu():
        return False
    torch._C._jit_override_can_fuse_on_cpu(False)
    warnings.warn("cellscope_torch: TorchScript's CPU fuser (TensorExpr with LLVM) is now off in this process: with "
                  "it, this torch build's compile of a scripted Cellscope model does not finish (README.md)",
                  RuntimeWarning, stacklevel=3)
    return True


def load_scripted(path):
    """torch.jit.load of a scripted model saved from `script()`, with the CPU fuser off as `script()` leaves it."""
    cpu_fuser_off()
    return torch.jit.load(path)


def script(model):
    """(torch.jit.script of the model, None) or (None, the compiler's first line of why not). The scripted model
    has the eager model's forward (and `forward_with_extra`, which returns the training terms a Python `extra`
    list would receive: TorchScript copies a list passed in from Python). Turns the CPU fuser off first where
    this torch build has it on (`cpu_fuser_off`)."""
    cpu_fuser_off()
    try:
        return torch.jit.script(model), None
    except Exception as e:  # TorchScript's frontend raises several kinds
        msg = str(e).strip().split("\n")[0] or type(e).__name__
        return None, msg


def trace(model, *example):
    """TorchScript by tracing (eval mode): a ScriptModule returning the logits for inputs shaped like `example`
    in the time dimension. Turns the CPU fuser off first (`cpu_fuser_off`)."""
    cpu_fuser_off()
    model.eval()
    with torch.no_grad():
        return torch.jit.trace(LogitsOnly(model), example, check_trace=False)


def export_onnx(model, path, *example, opset=14):
    """ONNX of the model traced on `example` (eval mode), checked with onnx.checker; returns
    {"nodes", "opset", "inputs", "outputs"}. The batch dimension is dynamic; the sequence length is the example's
    (the time loop is unrolled)."""
    import onnx  # Debian: python3-onnx

    model.eval()
    names = ["x", "lengths"][:len(example)]
    axes = {"x": {1: "batch"}, "logits": {0: "batch"} if len(example) > 1 else {1: "batch"}}
    if len(example) > 1:
        axes["lengths"] = {0: "batch"}
    buf = io.BytesIO()
    # A script cell (model.cell = "script") calls a TorchScript module, which torch.onnx's own tracer refuses
    # ("not part of the active trace"): the model traced first (trace() records the call) exports.
    target = trace(model, *example) if any(isinstance(m, ScriptCell) for m in model.modules()) else LogitsOnly(model)
    with torch.no_grad():
        torch.onnx.export(target, tuple(example), buf, opset_version=opset, input_names=names,
                          output_names=["logits"], dynamic_axes=axes)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto)
    with open(path, "wb") as f:
        f.write(buf.getvalue())

    def dims(v):
        return [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]

    return {"nodes": len(proto.graph.node), "opset": opset, "inputs": {v.name: dims(v) for v in proto.graph.input},
            "outputs": {v.name: dims(v) for v in proto.graph.output}}
