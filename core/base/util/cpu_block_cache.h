// The caching CPU allocator behind util/cpu_cache.h (notes: util/CPU_CACHE_NOTES.md).
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

#include "util/cpu_cache.h"
#include "util/torch_compat.h"

namespace cs {

// The allocator itself (tests use an instance directly; the process uses the one
// install_cpu_cache() sets as LibTorch's CPU allocator).
//
// Large blocks are carved from segments (one mmap each): a request takes the smallest free
// block that holds it, split off the front of it; a freed block merges with the free blocks
// next to it in its segment. A segment is made only when no free block holds the request, and
// the resident bytes stay within the peak (cpu_cache.h): wholly free segments are unmapped to
// make room, the longest unused first, and past the peak plus `over_peak`, the largest free
// blocks give their pages back.
class CpuBlockCache final : public torch_compat::AllocatorBase {
 public:
  explicit CpuBlockCache(CpuCacheOptions o = {});
  ~CpuBlockCache() override;  // unmaps the segments; live blocks must be gone (a test's instance)
  // Small blocks: LibTorch's default CPU allocator (its DataPtr as is). Large blocks: carved as
  // above, the DataPtr's context its data pointer. LibTorch calls it through `allocate`
  // (torch_compat.h).
  c10::DataPtr allocate_bytes(size_t nbytes) const override;
  // Allocator::raw_allocate / raw_deallocate (oneDNN's scratch memory: LibTorch 2.x's LSTM on the
  // CPU frees through it): a large block goes back to its cache, a small one to the default allocator.
  c10::DeleterFnPtr raw_deleter() const override;
  // Unmaps every wholly free segment, gives the pages of the other free blocks back to the
  // system (MADV_DONTNEED: they are faulted in anew when used), and starts the peak of lent
  // bytes anew from what is lent now.
  void release();
  CpuCacheStats stats() const;
  const CpuCacheOptions& options() const { return opt_; }
  size_t rounded(size_t nbytes) const;  // the block size a request of nbytes gets

 private:
  struct Segment;
  struct Block;  // a large block: lent, or free in a set
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeSet = std::set<Block*, BySize>;  // by size, then address
  static void return_block(void* data);      // the DataPtr's deleter (and raw_deleter)
  static void lent_index_add(void* data, Block* b);
  static Block* lent_index_take(void* data);  // nullptr: not a large block of any instance
  FreeSet& set_of(const Block* b) const;
  void list_locked(Block* b) const;     // into its free set, counted
  void unlist_locked(Block* b) const;   // out of it
  Block* merge_locked(Block* b) const;  // with free neighbours of its kind; returns the merged block
  void free_locked(Block* b) const;
  int64_t resident_locked() const;  // mapped minus the free bytes given back
  void make_room_locked(int64_t extra, int64_t limit) const;
  bool advise_largest_locked() const;  // the largest resident free block's pages given back
  void unmap_segment_locked(Segment* s) const;
  int64_t last_used_locked(const Segment* s) const;
  bool drop_oldest_free_segment_locked() const;  // false: none wholly free
  void trim_idle_locked() const;                 // max_idle
  void release_locked();

  CpuCacheOptions opt_;
  c10::Allocator* fallback_;
  mutable std::mutex mu_;
  mutable FreeSet free_;     // free blocks whose pages are resident
  mutable FreeSet advised_;  // free blocks whose pages were given back
  mutable std::vector<Segment*> segments_;
  mutable CpuCacheStats stats_;
  mutable int64_t clock_ = 0;  // large allocations so far
};

}  // namespace cs
