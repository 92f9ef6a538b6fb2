// LibTorch's CPU allocator for large blocks: memory reused from step to step, on huge pages
// (notes: util/CPU_CACHE_NOTES.md).
//
// glibc serves every block over 32 MB with mmap and unmaps it at free, and gives the top of its
// heap back when more than twice its mmap threshold is free there, so each training step
// page-faulted its large tensors in anew, 4 KB at a time, with the kernel zeroing every page:
// at batch 256, seq 150 one [T B, 3H] gate tensor is 236 MB; at batch 32 a CRU deep step faulted
// about 40 MB in. Blocks of `min_bytes` and more come from here instead:
// - Freed memory is kept and lent again, carved to the size asked for (the smallest free block
//   that holds a request, split; freed neighbours merged), as PyTorch's CUDA caching allocator
//   does. New memory is mapped only where no free block holds a request, and the resident
//   bytes (lent, and free but not given back) are held within the peak: the most ever lent at
//   once since the last release (`peak_live_bytes`, or what is lent plus the new request if that
//   is more), plus `max_free_bytes` (0 by default; CELLSCOPE_CPU_CACHE_MB). Wholly free segments
//   make room first, the longest unused first. Where none is left (free blocks scattered among
//   lent ones), the resident bytes may go `over_peak` (10%) of the peak over that, and past it
//   the largest free blocks give their pages back (MADV_DONTNEED; faulted in anew, zeroed,
//   when lent again). So a step's resident peak stays within 10% of what its lent blocks
//   reach, and the steps after the first fault (almost) nothing in. `cpu_cache_release()`
//   gives all free memory back (the trainer calls it when a run ends; the bench before it
//   measures a step's peak).
// - Segments of `huge_min_bytes` and more are mapped at 2 MB boundaries with MADV_HUGEPAGE
//   (sizes rounded to 2 MB): a first touch faults 2 MB in at once instead of 4 KB, and the
//   products run with fewer TLB misses. Smaller sizes are rounded to `round_bytes`.
// Blocks under `min_bytes` go to LibTorch's default allocator unchanged.
#pragma once
// (No LibTorch headers here: the workbench's main includes it. The allocator class is in
// util/cpu_block_cache.h.)

#include <cstddef>
#include <cstdint>
#include <string>

namespace cs {

struct CpuCacheOptions {
  size_t min_bytes = size_t(1) << 20;       // smaller blocks: the default allocator (glibc's heap)
  size_t round_bytes = size_t(64) << 10;    // sizes rounded up to this (blocks are carved in these units)
  size_t huge_min_bytes = size_t(8) << 20;  // from this rounded size on: 2 MB-aligned, MADV_HUGEPAGE, rounded to 2 MB
  bool huge_pages = true;                   // false: every block mapped as usual
  bool keep = true;                         // false: a segment is unmapped as soon as it is wholly free
  size_t max_free_bytes = 0;                // resident beyond the peak of lent bytes (CELLSCOPE_CPU_CACHE_MB)
  double over_peak = 0.10;                  // past the limit by this fraction of the peak, free pages are given back
  int64_t max_idle = 65536;                 // a wholly free segment unused for this many large allocations is unmapped
                                            // (an MZU step at batch 256 makes thousands; the peak bounds memory anyway)
};

struct CpuCacheStats {
  int64_t hits = 0;             // large allocations carved from free memory
  int64_t hits_given_back = 0;  // of those, from free memory whose pages had been given back (faulted in anew)
  int64_t misses = 0;           // large allocations that mapped a new segment
  int64_t live_blocks = 0;
  int64_t live_bytes = 0;
  int64_t peak_live_bytes = 0;  // the most lent at once since the last release (the limit on mapping)
  int64_t free_blocks = 0;
  int64_t free_bytes = 0;
  int64_t segments = 0;
  int64_t mapped_bytes = 0;   // all segments: lent + free
  int64_t advised_bytes = 0;  // free bytes whose pages were given back (MADV_DONTNEED): not resident
  int64_t dropped = 0;        // segments unmapped (room for a new one, idle, release, keep = false)
};

// Sets the cache as LibTorch's CPU allocator for this process (once; later calls return the
// first answer). Off where CELLSCOPE_CPU_CACHE is "0", and in sanitizer builds (AddressSanitizer
// must see every free). Returns whether the cache is installed.
bool install_cpu_cache();
bool cpu_cache_installed();
std::string cpu_cache_status();  // "on: ..." or "off: why" (cellscope-cli info)
// The installed cache's statistics (zeros when none) and release (nothing when none).
CpuCacheStats cpu_cache_stats();
void cpu_cache_release();

}  // namespace cs
