// torch.save's zip format and safetensors, written by hand (state_dict_file.h). Why not torch::pickle_save or
// torch::save: pickle_save tags a dict with torch.jit._pickle.restore_type_tag and torch::save writes a
// TorchScript archive, and torch.load(..., weights_only=True) (PyTorch >= 2.6's default) refuses both. The pickle
// below uses only the opcodes and globals of torch/_weights_only_unpickler.py (1.13 and 2.x alike).
#include "util/state_dict_file.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "util/error.h"

namespace cs {

namespace state_dict_file {
namespace {

struct DtypeNames {
  const char* storage;      // torch.<storage> in the pickle
  const char* safetensors;  // the safetensors dtype
};

DtypeNames dtype_names(const std::string& name, const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return {"FloatStorage", "F32"};
    case at::kDouble:
      return {"DoubleStorage", "F64"};
    case at::kHalf:
      return {"HalfStorage", "F16"};
    case at::kBFloat16:
      return {"BFloat16Storage", "BF16"};
    case at::kLong:
      return {"LongStorage", "I64"};
    case at::kInt:
      return {"IntStorage", "I32"};
    case at::kShort:
      return {"ShortStorage", "I16"};
    case at::kChar:
      return {"CharStorage", "I8"};
    case at::kByte:
      return {"ByteStorage", "U8"};
    case at::kBool:
      return {"BoolStorage", "BOOL"};
    default:
      break;
  }
  throw std::invalid_argument("state_dict_file: tensor '" + name + "' has dtype " +
                              std::string(c10::toString(t.scalar_type())) +
                              ", which neither torch.save's weights-only form nor safetensors is written for here");
}

bool host_is_little_endian() {
  const uint16_t one = 1;
  unsigned char b = 0;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

// The elements of a contiguous CPU copy of t as little-endian bytes, which both formats store: the copy's own
// memory on a little-endian host (no second copy of a large model), swapped into `swapped` on a big-endian one.
class LeBytes {
 public:
  explicit LeBytes(const at::Tensor& t) : c_(t.detach().to(at::kCPU).contiguous()) {
    const size_t item = c_.element_size();
    if (item > 1 && !host_is_little_endian()) {
      swapped_.assign(static_cast<const char*>(c_.data_ptr()), size());
      for (size_t i = 0; i < swapped_.size(); i += item)
        for (size_t a = i, b = i + item - 1; a < b; ++a, --b) std::swap(swapped_[a], swapped_[b]);
      swapped_used_ = true;
    }
  }
  size_t size() const { return static_cast<size_t>(c_.numel()) * c_.element_size(); }
  // Never null: PyTorchStreamWriter gets a valid pointer for an empty record too.
  const char* data() const {
    static const char none = 0;
    if (swapped_used_) return swapped_.empty() ? &none : swapped_.data();
    return size() ? static_cast<const char*>(c_.data_ptr()) : &none;
  }

 private:
  at::Tensor c_;
  std::string swapped_;
  bool swapped_used_ = false;
};

void check_names(const NamedTensors& items) {
  std::set<std::string> seen;
  for (auto& [k, v] : items) {
    if (!v.defined()) throw std::invalid_argument("state_dict_file: tensor '" + k + "' is undefined");
    if (!seen.insert(k).second) throw std::invalid_argument("state_dict_file: the name '" + k + "' appears twice");
  }
}

// A protocol-2 pickle, opcode by opcode (Lib/pickle.py names them).
class Pickle {
 public:
  std::string out;

  void op(char c) { out.push_back(c); }
  void global(const char* module, const char* name) {
    op('c');  // GLOBAL
    out += module;
    out += '\n';
    out += name;
    out += '\n';
  }
  void str(const std::string& s) {
    op('X');  // BINUNICODE
    le(static_cast<uint64_t>(s.size()), 4);
    out += s;
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');  // BININT1
      le(static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      op('M');  // BININT2
      le(static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');  // BININT, signed
      le(static_cast<uint64_t>(v), 4);
    } else {
      op('\x8a');  // LONG1: 8 bytes of two's complement are always enough for an int64
      le(8, 1);
      le(static_cast<uint64_t>(v), 8);
    }
  }
  void tuple(const std::vector<int64_t>& v) {
    if (v.empty()) return op(')');  // EMPTY_TUPLE
    if (v.size() > 3) op('(');      // MARK
    for (int64_t x : v) integer(x);
    op(v.size() == 1 ? '\x85' : v.size() == 2 ? '\x86' : v.size() == 3 ? '\x87' : 't');  // TUPLE1/2/3, TUPLE
  }

 private:
  void le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
};

// Row-major strides as a contiguous tensor of `size` has them (a size-0 dimension counts as 1, as in ATen).
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& size) {
  std::vector<int64_t> st(size.size());
  int64_t s = 1;
  for (size_t i = size.size(); i-- > 0;) {
    st[i] = s;
    s *= std::max<int64_t>(size[i], 1);
  }
  return st;
}

}  // namespace
}  // namespace state_dict_file

std::string torch_state_dict_bytes(const NamedTensors& items) {
  using namespace state_dict_file;
  check_names(items);
  // data.pkl: {name: _rebuild_tensor_v2(persistent_id(('storage', torch.<T>Storage, '<i>', 'cpu', numel)),
  // 0, size, stride, False, OrderedDict()), ...}, what torch.save writes for a CPU tensor of its own storage.
  Pickle p;
  p.op('\x80');  // PROTO 2
  p.op('\x02');
  p.op('}');                      // EMPTY_DICT
  if (!items.empty()) p.op('(');  // MARK
  std::vector<LeBytes> data;
  data.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& [name, t] = items[i];
    const DtypeNames dn = dtype_names(name, t);
    data.emplace_back(t);
    const std::vector<int64_t> size = t.sizes().vec();
    p.str(name);
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.op('(');  // MARK: the arguments
    p.op('(');  // MARK: the persistent id
    p.str("storage");
    p.global("torch", dn.storage);
    p.str(std::to_string(i));
    p.str("cpu");
    p.integer(t.numel());
    p.op('t');     // TUPLE
    p.op('Q');     // BINPERSID
    p.integer(0);  // storage offset
    p.tuple(size);
    p.tuple(contiguous_strides(size));
    p.op('\x89');                            // NEWFALSE: requires_grad
    p.global("collections", "OrderedDict");  // backward hooks: OrderedDict()
    p.op(')');
    p.op('R');  // REDUCE
    p.op('t');  // TUPLE: the arguments
    p.op('R');  // REDUCE: _rebuild_tensor_v2(...)
  }
  if (!items.empty()) p.op('u');  // SETITEMS
  p.op('.');                      // STOP

  std::string zip;
  {
    caffe2::serialize::PyTorchStreamWriter w([&zip](const void* buf, size_t n) -> size_t {
      zip.append(static_cast<const char*>(buf), n);
      return n;
    });
    w.writeRecord("data.pkl", p.out.data(), p.out.size());
    // The records torch.save (2.x) adds; torch.load reads them where present. The data is little-endian.
    w.writeRecord(".format_version", "1", 1);
    w.writeRecord("byteorder", "little", 6);
    for (size_t i = 0; i < data.size(); ++i) w.writeRecord("data/" + std::to_string(i), data[i].data(), data[i].size());
    w.writeEndOfFile();
  }
  return zip;
}

void write_torch_state_dict(const std::string& path, const NamedTensors& items) {
  atomic_write(path, torch_state_dict_bytes(items));
}

std::string safetensors_bytes(const NamedTensors& items) {
  using namespace state_dict_file;
  check_names(items);
  // The header keeps `items` order (ordered_json); readers go by data_offsets, which must tile the data.
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t end = 0;
  for (auto& [name, t] : items) {
    if (name == "__metadata__") throw std::invalid_argument("state_dict_file: '__metadata__' is not a tensor name");
    const uint64_t begin = end;
    end += static_cast<uint64_t>(t.numel()) * t.element_size();
    nlohmann::ordered_json e;
    e["dtype"] = dtype_names(name, t).safetensors;
    e["shape"] = t.sizes().vec();
    e["data_offsets"] = nlohmann::ordered_json::array({begin, end});
    h[name] = std::move(e);
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-aligned, as safetensors' own writer does
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((static_cast<uint64_t>(header.size()) >> (8 * i)) & 0xff);
  out.reserve(out.size() + header.size() + end);
  out += header;
  for (auto& [name, t] : items) {
    const LeBytes b(t);
    out.append(b.data(), b.size());
  }
  return out;
}

void write_safetensors(const std::string& path, const NamedTensors& items) {
  atomic_write(path, safetensors_bytes(items));
}

NamedTensors read_safetensors(const std::string& path) { return parse_safetensors(read_file(path), path); }

NamedTensors parse_safetensors(const std::string& bytes, const std::string& path) {
  using namespace state_dict_file;
  auto bad = [&](const std::string& why) {
    return UserError("'" + path + "' is not a safetensors file that can be read: " + why);
  };
  if (bytes.size() < 8)
    throw bad("it has " + std::to_string(bytes.size()) + " bytes, fewer than the 8 of its header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (n > bytes.size() - 8 || n > (100u << 20))
    throw bad("its header length " + std::to_string(n) + " exceeds the file (" + std::to_string(bytes.size()) +
              " bytes)");
  const nlohmann::json header =
      nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n), nullptr, false);
  if (!header.is_object()) throw bad("its header is not a JSON object");
  const size_t data = 8 + static_cast<size_t>(n), data_size = bytes.size() - data;
  struct Entry {
    std::string name;
    at::ScalarType type;
    std::vector<int64_t> shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  static const std::pair<const char*, at::ScalarType> kTypes[] = {
      {"F32", at::kFloat}, {"F64", at::kDouble}, {"F16", at::kHalf}, {"BF16", at::kBFloat16}, {"I64", at::kLong},
      {"I32", at::kInt},   {"I16", at::kShort},  {"I8", at::kChar},  {"U8", at::kByte},       {"BOOL", at::kBool}};
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto& e = it.value();
    const std::string where = "tensor '" + it.key() + "'";
    if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() || !e.contains("shape") ||
        !e["shape"].is_array() || !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2)
      throw bad(where + " lacks dtype, shape or data_offsets [begin, end]");
    Entry x{it.key(), at::kFloat, {}, 0, 0};
    const std::string dt = e["dtype"].get<std::string>();
    const auto t = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const auto& k) { return dt == k.first; });
    if (t == std::end(kTypes)) throw bad(where + " has dtype '" + dt + "', which Cellscope does not read");
    x.type = t->second;
    uint64_t numel = 1;
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t(1) << 40))
        throw bad(where + " has a shape that is not a list of sizes");
      x.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
      numel *= d.get<uint64_t>();
      if (numel > (uint64_t(1) << 40)) throw bad(where + " is too large");
    }
    for (int i = 0; i < 2; ++i)
      if (!e["data_offsets"][i].is_number_unsigned()) throw bad(where + " has data_offsets that are not byte offsets");
    x.begin = e["data_offsets"][0].get<uint64_t>();
    x.end = e["data_offsets"][1].get<uint64_t>();
    const uint64_t want = numel * static_cast<uint64_t>(c10::elementSize(x.type));
    if (x.end < x.begin || x.end > data_size)
      throw bad(where + "'s bytes [" + std::to_string(x.begin) + ", " + std::to_string(x.end) + ") lie outside its " +
                std::to_string(data_size) + " bytes of data");
    if (x.end - x.begin != want)
      throw bad(where + " has " + std::to_string(x.end - x.begin) + " bytes for " + std::to_string(numel) + " " + dt +
                " values (expected " + std::to_string(want) + ")");
    entries.push_back(std::move(x));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  if (!host_is_little_endian()) throw bad("this machine is big-endian; safetensors files are little-endian");
  NamedTensors out;
  for (const auto& x : entries) {
    at::Tensor t = at::empty(x.shape, at::TensorOptions().dtype(x.type));
    if (x.end > x.begin) std::memcpy(t.data_ptr(), bytes.data() + data + x.begin, x.end - x.begin);
    out.emplace_back(x.name, t);
  }
  return out;
}

}  // namespace cs
