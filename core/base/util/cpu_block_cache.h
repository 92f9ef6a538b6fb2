// The caching CPU allocator behind util/cpu_cache.h (issue #16; notes: util/CPU_CACHE_NOTES.md).
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

#include "util/cpu_cache.h"

namespace cs {

// The allocator itself (tests use an instance directly; the process uses the one
// install_cpu_cache() sets as LibTorch's CPU allocator).
//
// Large blocks are carved from segments (one mmap each): a request takes the smallest free
// block that holds it, split off the front of it; a freed block merges with the free blocks
// next to it in its segment. A segment is made only when no free block holds the request, and
// then only within the peak (cpu_cache.h), making room by unmapping wholly free segments,
// the longest unused first.
class CpuBlockCache final : public c10::Allocator {
 public:
  explicit CpuBlockCache(CpuCacheOptions o = {});
  ~CpuBlockCache() override;  // unmaps the segments; live blocks must be gone (a test's instance)
  // Small blocks: the allocator that was LibTorch's CPU allocator before (its DataPtr as is).
  // Large blocks: carved as above. (No raw_deleter: raw_allocate is not offered, as ATen's CPU
  // tensors do not use it.)
  c10::DataPtr allocate(size_t nbytes) const override;
  // Unmaps every wholly free segment, gives the pages of the other free blocks back to the
  // system (MADV_DONTNEED: they are faulted in anew when used), and starts the peak of lent
  // bytes anew from what is lent now.
  void release();
  CpuCacheStats stats() const;
  const CpuCacheOptions& options() const { return opt_; }
  size_t rounded(size_t nbytes) const;  // the block size a request of nbytes gets

 private:
  struct Segment;
  struct Block;  // the DataPtr's context while lent
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  static void return_block(void* block);  // the DataPtr's deleter
  void free_locked(Block* b) const;
  void list_locked(Block* b) const;    // into the free set, counted
  void unlist_locked(Block* b) const;  // out of it
  void unmap_segment_locked(Segment* s) const;
  bool drop_oldest_free_segment_locked() const;  // false: none wholly free
  void trim_idle_locked() const;                 // max_idle
  void release_locked();

  CpuCacheOptions opt_;
  c10::Allocator* fallback_;
  mutable std::mutex mu_;
  mutable std::set<Block*, BySize> free_;  // free blocks by size, then address
  mutable std::vector<Segment*> segments_;
  mutable CpuCacheStats stats_;
  mutable int64_t clock_ = 0;  // large allocations so far
};

}  // namespace cs
