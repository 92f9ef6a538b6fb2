// SHA-256 (FIPS 180-4) of a byte string or a file, as lower-case hex. Used to record which
// TorchScript cell a run was trained with (cells/SCRIPT_CELL_NOTES.md), which dataset files and
// configuration a report was made from, and to check checkpoints. No torch here.
//
// Files are read in 1 MiB pieces (a checkpoint is never held in memory whole). Where the processor
// has the x86 SHA extensions (SHA-NI: Intel since Ice Lake and Goldmont, AMD since Zen), blocks are
// compressed with them, else by the portable code; both give the same digest (tests/core/test_sha256.cpp).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace cs {

std::string sha256_hex(const std::string& bytes);
// The file's SHA-256; throws UserError naming the file when it cannot be read.
std::string file_sha256(const std::string& path);

// Incremental SHA-256: update() any number of times, then hex() (once; the object is then spent).
class Sha256 {
 public:
  // kBest: SHA-NI where the processor has it; kPortable: the portable code (to test one against the other).
  enum class Engine { kBest, kPortable };
  explicit Sha256(Engine engine = Engine::kBest);
  void update(const void* data, size_t n);
  std::string hex();
  // Whether kBest uses the processor's SHA instructions on this machine.
  static bool cpu_instructions();

 private:
  std::array<uint32_t, 8> h_;
  unsigned char buf_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
  bool shani_ = false;
  bool done_ = false;
  void blocks(const unsigned char* p, size_t n);
};

}  // namespace cs
