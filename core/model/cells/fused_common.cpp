#include "cells/fused_common.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cs {

bool fast_paths_enabled() {
  const char* v = std::getenv("CELLSCOPE_FAST");
  return !(v && std::strcmp(v, "0") == 0);
}

c10::DeviceType& fast_path_device_type() {
  static c10::DeviceType t = c10::DeviceType::CPU;
  return t;
}

bool fast_path_device_ok(const at::Tensor& x) { return x.defined() && x.device().type() == fast_path_device_type(); }

namespace fused {

PoolTuning& pool_tuning() {
  static PoolTuning t;
  return t;
}

namespace {

// A tensor of `shape` over the start of e's storage, NOT an autograd view of the pool's tensor (a
// custom autograd function may return it as an output, which a view would restrict).
at::Tensor over(const at::Tensor& flat, at::IntArrayRef shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return at::empty({0}, flat.options()).set_(flat.storage(), 0, shape, strides);
}

struct Entry {
  at::Tensor flat;       // 1-d over the whole storage; the pool's own reference
  int64_t last_use = 0;  // pool clock when last handed out
};

struct Pool {
  std::vector<Entry> entries;
  int64_t clock = 0, reused = 0, allocated = 0;
};
thread_local Pool tl_pool;

bool is_free(const Entry& e) { return e.flat.storage().use_count() == 1; }

int64_t bytes_of(const Entry& e) { return static_cast<int64_t>(e.flat.storage().nbytes()); }

// Drops free buffers idle for too long, then the oldest free ones beyond the byte cap.
void trim(Pool& p) {
  const auto& tu = pool_tuning();
  std::vector<Entry> keep;
  keep.reserve(p.entries.size());
  for (auto& e : p.entries)
    if (!(is_free(e) && p.clock - e.last_use > tu.max_idle_calls)) keep.push_back(std::move(e));
  p.entries = std::move(keep);
  int64_t free_bytes = 0;
  for (auto& e : p.entries)
    if (is_free(e)) free_bytes += bytes_of(e);
  while (free_bytes > tu.max_free_bytes) {
    size_t oldest = p.entries.size();
    for (size_t i = 0; i < p.entries.size(); ++i)
      if (is_free(p.entries[i]) && (oldest == p.entries.size() || p.entries[i].last_use < p.entries[oldest].last_use))
        oldest = i;
    if (oldest == p.entries.size()) break;
    free_bytes -= bytes_of(p.entries[oldest]);
    p.entries.erase(p.entries.begin() + static_cast<std::ptrdiff_t>(oldest));
  }
}

}  // namespace

at::Tensor pool_empty(at::IntArrayRef shape, const at::TensorOptions& opt) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  const int64_t bytes = n * static_cast<int64_t>(c10::elementSize(opt.dtype().toScalarType()));
  if (bytes < pool_tuning().min_bytes) return at::empty(shape, opt);
  Pool& p = tl_pool;
  ++p.clock;
  // The smallest free buffer that fits and wastes at most half of itself (plus 64k elements).
  size_t best = p.entries.size();
  for (size_t i = 0; i < p.entries.size(); ++i) {
    const auto& f = p.entries[i].flat;
    if (f.scalar_type() != opt.dtype().toScalarType() || f.device() != opt.device() || f.numel() < n ||
        f.numel() > 2 * n + (1 << 16) || !is_free(p.entries[i]))
      continue;
    if (best == p.entries.size() || f.numel() < p.entries[best].flat.numel()) best = i;
  }
  if (best < p.entries.size()) {
    ++p.reused;
    p.entries[best].last_use = p.clock;
    return over(p.entries[best].flat, shape);
  }
  trim(p);
  ++p.allocated;
  Entry e;
  e.flat = at::empty({n}, opt);
  e.last_use = p.clock;
  p.entries.push_back(e);
  return over(e.flat, shape);
}

PoolStats pool_stats() {
  PoolStats s;
  for (const auto& e : tl_pool.entries) {
    ++s.held;
    if (is_free(e)) {
      ++s.free;
      s.free_bytes += bytes_of(e);
    }
  }
  s.reused = tl_pool.reused;
  s.allocated = tl_pool.allocated;
  return s;
}

void pool_release() {
  std::vector<Entry> keep;
  for (auto& e : tl_pool.entries)
    if (!is_free(e)) keep.push_back(std::move(e));
  tl_pool.entries = std::move(keep);
}

bool core_has_openmp() {
#ifdef _OPENMP
  return true;
#else
  return false;
#endif
}

int parallel_threads_used(int64_t n) {
  std::atomic<int> seen{0};
  at::parallel_for(0, n, 1, [&](int64_t, int64_t) {
    const int me = at::get_thread_num() + 1;
    int cur = seen.load();
    while (cur < me && !seen.compare_exchange_weak(cur, me)) {
    }
  });
  return seen.load();
}

}  // namespace fused
}  // namespace cs
