// LibTorch's CPU allocator for large blocks: huge pages, and an optional cache (issue #16;
// notes: util/CPU_CACHE_NOTES.md).
//
// glibc serves every block over 32 MB with mmap and unmaps it at free, so each training step
// page-faults its large tensors in anew, 4 KB at a time, and the kernel zeroes every page: at
// batch 256, seq 150 a char-LM step allocates gigabytes that way (one [T B, 3H] gate tensor is
// 236 MB). The fast paths' own buffers already come from fused::pool_empty; this allocator
// covers every other tensor (autograd's activations and gradients, the input projections).
// Blocks over `min_bytes` are mapped at 2 MB boundaries with MADV_HUGEPAGE, so a first touch
// faults 2 MB in at once (and the products run with fewer TLB misses): -9% per step for CRU
// shallow at batch 256, -5% for MC-RNN at batch 32, the same peak memory. Optionally
// (`max_free_bytes`, CELLSCOPE_CPU_CACHE_MB) freed blocks are kept for a later request of the
// same rounded size, as PyTorch's CUDA caching allocator does; that is off by default because
// kept blocks are resident memory: +20% peak at batch 256 for a further -5%.
//
// Blocks up to `min_bytes` go to LibTorch's default allocator unchanged. Kept free blocks are
// dropped when they exceed `max_free_bytes` (oldest first) or have not been reused for
// `max_idle` large allocations; `cpu_cache_release()` drops them all (the trainer calls it when a
// run ends). The bench's peak-memory figure releases them before it starts measuring, so what
// is kept during the measured steps counts.
#pragma once
// (No LibTorch headers here: the workbench's main includes it. The allocator class is in
// util/cpu_block_cache.h.)

#include <cstddef>
#include <cstdint>
#include <string>

namespace cs {

struct CpuCacheOptions {
  size_t min_bytes = size_t(32) << 20;       // smaller blocks: the default allocator (glibc's heap reuses them)
  size_t round_bytes = size_t(2) << 20;      // sizes rounded up to this (a request reuses a block of its rounded size)
  size_t max_free_bytes = 0;                 // free blocks kept for reuse beyond this are dropped, oldest first
                                             // (0: none kept; CELLSCOPE_CPU_CACHE_MB sets it for the process)
  int64_t max_idle = 1024;                   // a free block not reused for this many large allocations is dropped
  bool huge_pages = true;                    // new blocks mapped 2 MB-aligned with MADV_HUGEPAGE (sizes rounded to 2 MB)
};

struct CpuCacheStats {
  int64_t hits = 0;        // large allocations served by a cached block
  int64_t misses = 0;      // large allocations that took new memory
  int64_t live_blocks = 0;
  int64_t free_blocks = 0;
  int64_t free_bytes = 0;
  int64_t dropped = 0;     // blocks given back to the system (limits, idle, release)
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
