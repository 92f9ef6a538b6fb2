#include "train/checkpoint.h"

#include <fcntl.h>
#include <torch/nn/module.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace {
constexpr char kMagic[8] = {'C', 'S', 'C', 'K', 'P', 'T', '0', '1'};
constexpr size_t kHeader = 24;  // magic, payload length (u64 LE), FNV-1a 64 of the payload (u64 LE)

void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void check_module(torch::nn::Module& m, torch::serialize::InputArchive& ar, const std::string& prefix,
                  const std::string& path, const std::string& hint) {
  auto fail = [&](const std::string& what) {
    throw UserError("checkpoint '" + path + "' does not match the model built from the run's configuration: " + what +
                    (hint.empty() ? "" : ". " + hint));
  };
  std::vector<std::string> expected;
  auto check_tensor = [&](const std::string& key, const torch::Tensor& mine) {
    expected.push_back(key);
    torch::Tensor theirs;
    if (!ar.try_read(key, theirs)) fail("parameter '" + prefix + key + "' is missing from the checkpoint");
    if (theirs.sizes() != mine.sizes())
      fail("parameter '" + prefix + key + "' has shape " + shape_text(theirs.sizes()) + " in the checkpoint, " +
           shape_text(mine.sizes()) + " in the model");
  };
  for (const auto& p : m.named_parameters(/*recurse=*/false)) check_tensor(p.key(), p.value());
  for (const auto& b : m.named_buffers(/*recurse=*/false)) check_tensor(b.key(), b.value());
  for (const auto& c : m.named_children()) {
    expected.push_back(c.key());
    torch::serialize::InputArchive sub;
    if (!ar.try_read(c.key(), sub)) fail("module '" + prefix + c.key() + "' is missing from the checkpoint");
    check_module(*c.value(), sub, prefix + c.key() + ".", path, hint);
  }
  for (const auto& k : ar.keys())
    if (std::find(expected.begin(), expected.end(), k) == expected.end())
      fail("the checkpoint has '" + prefix + k + "', which the model lacks");
}
}  // namespace

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

void write_checkpoint_file(torch::serialize::OutputArchive& ar, const std::string& path) {
  std::ostringstream ss;
  ar.save_to(ss);
  const std::string payload = ss.str();
  std::string file(kMagic, sizeof kMagic);
  put_u64(file, payload.size());
  put_u64(file, fnv1a64(payload.data(), payload.size()));
  file += payload;
  // atomic_write: temp file, fsync, rename, fsync of the directory
  atomic_write(path, file);
}

bool checkpoint_has_checksum(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[8];
  const ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return n == 8 && std::memcmp(head, kMagic, 8) == 0;
}

void read_checkpoint_file(const std::string& path, torch::serialize::InputArchive& ar,
                          c10::optional<torch::Device> device) {
  if (!file_exists(path)) throw UserError("checkpoint '" + path + "' does not exist");
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const UserError&) {
    throw UserError("checkpoint '" + path + "' cannot be read: " + std::strerror(errno));
  }
  read_checkpoint_bytes(bytes, path, ar, device);
}

void read_checkpoint_bytes(const std::string& bytes, const std::string& path, torch::serialize::InputArchive& ar,
                           c10::optional<torch::Device> device) {
  const char* data = bytes.data();
  size_t size = bytes.size();
  if (size >= 8 && std::memcmp(data, kMagic, 8) == 0) {
    if (size < kHeader || get_u64(data + 8) != size - kHeader ||
        get_u64(data + 16) != fnv1a64(data + kHeader, size - kHeader))
      throw UserError("checkpoint '" + path + "' is corrupted (checksum mismatch)");
    data += kHeader;
    size -= kHeader;
  }
  // else: a bare LibTorch archive from before checksums (docs/RELIABILITY.md): loaded unverified
  try {
    ar.load_from(data, size, device);
  } catch (const std::exception& e) {
    throw UserError("checkpoint '" + path + "' is unreadable or corrupted: " + first_line(e.what()));
  }
}

void check_model_matches(torch::nn::Module& model, torch::serialize::InputArchive& ar, const std::string& path,
                         const std::string& hint) {
  torch::serialize::InputArchive m;
  try {
    if (!ar.try_read("model", m)) throw UserError("checkpoint '" + path + "' has no model weights");
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw UserError("checkpoint '" + path + "' is unreadable or corrupted: " + first_line(e.what()));
  }
  check_module(model, m, "", path, hint);
}

}  // namespace cs
