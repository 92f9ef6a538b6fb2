// Named tensors as files that Python reads without running code from them (the export for plain PyTorch,
// core/run/export/EXPORT_TORCH_NOTES.md): torch.save's zip format, whose pickle names only what
// torch.load(..., weights_only=True) allows (PyTorch >= 2.6 loads with that by default), and safetensors.
// Both take the tensors in order, as contiguous little-endian CPU copies; torch's headers stay out of here.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace at {
class Tensor;
}

namespace cs {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// torch.save({name: tensor, ...}): a zip (caffe2's PyTorchStreamWriter, as torch.save) with data.pkl, a
// protocol-2 pickle of a plain dict in `items` order whose only globals are torch._utils._rebuild_tensor_v2,
// collections.OrderedDict and torch.<Type>Storage, and one data/<i> record per tensor. Float 16/32/64,
// bfloat16, int 8/16/32/64, uint8 and bool; another dtype (complex, quantized) throws std::invalid_argument.
// A name must be unique (std::invalid_argument). Values are detached; requires_grad is not kept.
std::string torch_state_dict_bytes(const NamedTensors& items);
// torch_state_dict_bytes written to `path` atomically (cs::atomic_write).
void write_torch_state_dict(const std::string& path, const NamedTensors& items);

// The safetensors format (8-byte little-endian header length, a JSON header {name: {dtype, shape,
// data_offsets}, "__metadata__": {"format": "pt"}} padded with spaces to a multiple of 8, then the tensors'
// bytes back to back in `items` order). The same dtypes as above (F16, BF16, F32, F64, I8, I16, I32, I64, U8,
// BOOL); names must be unique and not "__metadata__".
std::string safetensors_bytes(const NamedTensors& items);
void write_safetensors(const std::string& path, const NamedTensors& items);
// The tensors of a safetensors file (any writer's: safetensors.torch.save_file, cellscope_torch's
// save_export, write_safetensors), in the order of their data, as float/int CPU tensors of their own
// memory. UserError naming the file and what is wrong with it: too short, a header that is not JSON or
// not the format's, an unknown dtype, a shape that does not fit its byte range, a range outside the data.
NamedTensors read_safetensors(const std::string& path);
// The same from the file's bytes, read once by the caller (who may hash them too); `path` names it.
NamedTensors parse_safetensors(const std::string& bytes, const std::string& path);

}  // namespace cs
