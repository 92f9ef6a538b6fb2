// Shared parts of the hand-written fast paths (fused_*.cpp).
//
// The switch: the environment variable CELLSCOPE_FAST=0 turns every fast path off (the autograd
// reference runs instead), e.g. to measure the speed-up (`CELLSCOPE_FAST=0 cellscope-cli bench
// ...`) or to rule a fast path out when a result looks wrong. Any other value, or unset, leaves
// them on.
//
// The workspace pool: see pool_empty() and FUSED_NOTES.md ("Workspace pool").
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>

namespace cs {

// False when CELLSCOPE_FAST is set to "0" (read at every call, so a test may change it).
bool fast_paths_enabled();

// True when `x` lives in CPU memory. The fast paths run hand-written loops over raw pointers and
// CPU GEMMs, so a model on another device (training.device: cuda) takes the step-wise autograd
// path, which runs there through ATen's own kernels. Every *_fast_path_applies caller checks it.
bool fast_path_device_ok(const at::Tensor& x);
// The device type fast_path_device_ok accepts: CPU. Only a test changes it (to see every caller
// consult the check with CPU tensors standing in for another device's: a CPU-only LibTorch has
// no other device whose tensors hold data).
c10::DeviceType& fast_path_device_type();

namespace fused {

// Rows per parallel chunk for rows of `width` elements: about ATen's elementwise grain
// (at::internal::GRAIN_SIZE = 32768 elements) per task, so small batches run on one thread
// without a fork/join per step.
inline int64_t row_grain(int64_t width) {
  return std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(1, width));
}

// An uninitialised tensor of `shape` for a fast path's per-sequence buffers (saved activations,
// gradient buffers, outputs). Large buffers (>= pool_min_bytes) come from a per-thread pool that
// keeps a reference to every buffer it handed out and reuses one once nothing else refers to its
// storage any more (its storage's use count is back to the pool's own 1). Without it, each
// training step would mmap and page-fault hundreds of MB anew (glibc serves blocks > 32 MB by
// mmap and unmaps them at free): measured 1.2 s of a 4.7 s step for GRU+DT at batch 256. A
// buffer is only ever reused when no tensor, autograd graph or gradient views it.
at::Tensor pool_empty(at::IntArrayRef shape, const at::TensorOptions& opt);

struct PoolTuning {
  int64_t min_bytes = 1 << 20;                // smaller buffers go to the allocator directly
  int64_t max_idle_calls = 256;               // a free buffer not reused for this many pool calls is dropped
  int64_t max_free_bytes = int64_t(4) << 30;  // free buffers beyond this are dropped, oldest first
};
PoolTuning& pool_tuning();

struct PoolStats {
  int64_t held = 0;  // buffers the pool refers to (lent or free)
  int64_t free = 0;  // of which nothing else refers to
  int64_t free_bytes = 0;
  int64_t reused = 0;     // pool_empty calls served by a free buffer (this thread, since start)
  int64_t allocated = 0;  // pool_empty calls that allocated a new pooled buffer
};
PoolStats pool_stats();  // this thread's pool
void pool_release();     // drop this thread's free buffers

// How many of the intra-op threads an at::parallel_for over n single items compiled in the
// core actually used (the highest at::get_thread_num() + 1 seen). A check that the core is
// built with OpenMP: without it ATen's parallel_for runs everything on the calling thread.
int parallel_threads_used(int64_t n);
// Whether the core was compiled with OpenMP (GCC builds: always; see core/CMakeLists.txt).
bool core_has_openmp();

}  // namespace fused
}  // namespace cs
