// The caching CPU allocator behind util/cpu_cache.h (issue #16; notes: util/CPU_CACHE_NOTES.md).
#pragma once

#include <c10/core/Allocator.h>

#include <map>
#include <mutex>

#include "util/cpu_cache.h"

namespace cs {

// The allocator itself (tests use an instance directly; the process uses the one
// install_cpu_cache() sets as LibTorch's CPU allocator).
class CpuBlockCache final : public c10::Allocator {
 public:
  explicit CpuBlockCache(CpuCacheOptions o = {});
  ~CpuBlockCache() override;  // frees the free blocks; live ones must be gone (a test's instance)
  // Small blocks: the allocator that was LibTorch's CPU allocator before (its DataPtr as is).
  // Large blocks: a cached block of the same rounded size, or new memory (c10::alloc_cpu).
  // (No raw_deleter: raw_allocate is not offered, as ATen's CPU tensors do not use it.)
  c10::DataPtr allocate(size_t nbytes) const override;
  void release();  // drops every free block
  CpuCacheStats stats() const;
  const CpuCacheOptions& options() const { return opt_; }

 private:
  struct Lease;                          // a large block lent out (the DataPtr's context)
  static void return_block(void* lease);  // its deleter: back into the cache
  void trim_locked() const;               // limits: max_free_bytes, max_idle

  struct Free {
    void* ptr;
    size_t bytes;
    int64_t freed_at;  // the large-allocation counter when it came back
  };
  CpuCacheOptions opt_;
  c10::Allocator* fallback_;
  mutable std::mutex mu_;
  mutable std::multimap<size_t, Free> free_;  // by rounded size
  mutable CpuCacheStats stats_;
  mutable int64_t clock_ = 0;
};

}  // namespace cs
