// The differences between the LibTorch versions Cellscope builds against, each in one place:
// Debian 12's 1.13, Debian 13's 2.6 and PyTorch's own 2.x builds (with CUDA). Every entry names
// the versions it bridges; the code elsewhere uses the names defined here and has no version
// #if of its own (docs/PLATFORMS.md).
#pragma once

#include <ATen/core/TensorBase.h>
#include <c10/core/Allocator.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/version.h>

#include <cstddef>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

// True when the LibTorch being compiled against is MAJOR.MINOR or newer.
#define CS_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace cs::torch_compat {

// c10::Allocator, 1.13 .. 2.2 vs 2.3 and newer: `allocate` was `const` and became non-const, and
// `copy_data` (the copy behind `Allocator::clone`) became a pure virtual. An allocator derives from
// `AllocatorBase`, implements `allocate_bytes` (const) and, from 2.3, gets both overrides from here.
class AllocatorBase : public c10::Allocator {
 public:
  virtual c10::DataPtr allocate_bytes(size_t nbytes) const = 0;
#if CS_TORCH_AT_LEAST(2, 3)
  c10::DataPtr allocate(size_t nbytes) override { return allocate_bytes(nbytes); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count) std::memcpy(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t nbytes) const override { return allocate_bytes(nbytes); }
#endif
};

// c10d, 1.13 vs 2.0 and newer: a process group's collectives live in `c10d::ProcessGroup` up to
// 1.13; from 2.0 a backend (ProcessGroupGloo, ProcessGroupNCCL) is a `c10d::Backend`, which has the
// same allreduce / broadcast / allgather calls and is what their constructors make.
#if CS_TORCH_AT_LEAST(2, 0)
using DistBackend = c10d::Backend;
#else
using DistBackend = c10d::ProcessGroup;
#endif

// torch::autograd::Function<F>::apply, LibTorch 2.x with GCC 13 and 14: apply() reserves a fresh
// std::vector<bool> (CppNode::is_variable_input_), and GCC's -Warray-bounds reads libstdc++'s copy of
// its zero words as an 8-byte access out of bounds (a false positive of GCC's value ranges in
// libstdc++'s vector<bool>, reported by -Wstringop-overflow too on some inlinings; LibTorch 1.13's apply
// reserves no vector<bool>). The custom functions of the fast paths are called through here, so that
// these two diagnostics are off for these calls alone: GCC (12 and newer) honours a diagnostic pragma
// at any function of an inlining chain.
template <class F, class... Args>
inline auto autograd_apply(Args&&... args) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
  return F::apply(std::forward<Args>(args)...);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

// torch::optim::Optimizer::state(), 1.13 vs 2.x: the per-parameter state (Adam's moments, SGD's momentum) is
// keyed by the parameter's TensorImpl address, held as the text c10::guts::to_string makes of it ("0x55d0...")
// up to 1.13 and as the address itself (void*) in 2.x. Chosen by the map's key type, so no version number is
// involved; the string is made as c10::guts::to_string makes it (an ostream of the pointer).
template <class StateMap>
typename StateMap::key_type optimizer_state_key(const StateMap&, const at::TensorBase& param) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream text;
    text << param.unsafeGetTensorImpl();
    return text.str();
  } else {
    return param.unsafeGetTensorImpl();
  }
}

}  // namespace cs::torch_compat
