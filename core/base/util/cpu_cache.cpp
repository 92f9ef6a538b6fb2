#include "util/cpu_block_cache.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace cs {

struct CpuBlockCache::Lease {
  const CpuBlockCache* owner;
  void* ptr;
  size_t bytes;  // rounded
};

namespace {

constexpr size_t kHuge = size_t(2) << 20;

// A block of `bytes` (a multiple of 2 MB): with huge pages, mapped at a 2 MB boundary and
// advised for transparent huge pages (a first touch faults 2 MB in at once instead of 4 KB);
// else LibTorch's aligned allocation.
void* new_block(size_t bytes, bool huge) {
  if (!huge) return c10::alloc_cpu(bytes);
  void* raw = mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TORCH_CHECK(raw != MAP_FAILED, "CPU block cache: out of memory allocating ", bytes, " bytes");
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (base + kHuge - 1) & ~(uintptr_t(kHuge) - 1);
  if (start > base) munmap(raw, start - base);
  const uintptr_t end = start + bytes, raw_end = base + bytes + kHuge;
  if (raw_end > end) munmap(reinterpret_cast<void*>(end), raw_end - end);
  madvise(reinterpret_cast<void*>(start), bytes, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(start);
}

void free_block(void* p, size_t bytes, bool huge) {
  if (huge) munmap(p, bytes);
  else c10::free_cpu(p);
}

}  // namespace

CpuBlockCache::CpuBlockCache(CpuCacheOptions o) : opt_(o), fallback_(c10::GetDefaultCPUAllocator()) {
  opt_.round_bytes = std::max<size_t>(opt_.round_bytes, 64);
  if (opt_.huge_pages) opt_.round_bytes = (opt_.round_bytes + kHuge - 1) / kHuge * kHuge;
}

CpuBlockCache::~CpuBlockCache() { release(); }

c10::DataPtr CpuBlockCache::allocate(size_t nbytes) const {
  if (nbytes < opt_.min_bytes) return fallback_->allocate(nbytes);
  const size_t bytes = (nbytes + opt_.round_bytes - 1) / opt_.round_bytes * opt_.round_bytes;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> g(mu_);
    ++clock_;
    auto range = free_.equal_range(bytes);
    if (range.first != range.second) {
      auto it = std::prev(range.second);  // the most recently returned one: likeliest still in cache
      p = it->second.ptr;
      free_.erase(it);
      stats_.free_bytes -= static_cast<int64_t>(bytes);
      --stats_.free_blocks;
      ++stats_.hits;
    } else {
      ++stats_.misses;
    }
    ++stats_.live_blocks;
    trim_locked();  // idle blocks age with every large allocation
  }
  if (!p) {
    try {
      p = new_block(bytes, opt_.huge_pages);  // throws c10::Error when the memory is not there
    } catch (...) {
      // Out of memory with blocks in the cache: give them back and try once more.
      const_cast<CpuBlockCache*>(this)->release();
      try {
        p = new_block(bytes, opt_.huge_pages);
      } catch (...) {
        std::lock_guard<std::mutex> g(mu_);
        --stats_.live_blocks;
        throw;
      }
    }
  }
  auto* lease = new Lease{this, p, bytes};
  return {p, lease, &CpuBlockCache::return_block, c10::Device(c10::DeviceType::CPU)};
}

void CpuBlockCache::return_block(void* ctx) {
  auto* lease = static_cast<Lease*>(ctx);
  const CpuBlockCache* self = lease->owner;
  {
    std::lock_guard<std::mutex> g(self->mu_);
    --self->stats_.live_blocks;
    self->free_.emplace(lease->bytes, Free{lease->ptr, lease->bytes, self->clock_});
    self->stats_.free_bytes += static_cast<int64_t>(lease->bytes);
    ++self->stats_.free_blocks;
    self->trim_locked();
  }
  delete lease;
}

void CpuBlockCache::trim_locked() const {
  // Idle blocks first (a shape that is not requested any more), then the oldest while over the limit.
  for (auto it = free_.begin(); it != free_.end();) {
    if (clock_ - it->second.freed_at > opt_.max_idle) {
      free_block(it->second.ptr, it->second.bytes, opt_.huge_pages);
      stats_.free_bytes -= static_cast<int64_t>(it->second.bytes);
      --stats_.free_blocks;
      ++stats_.dropped;
      it = free_.erase(it);
    } else {
      ++it;
    }
  }
  while (stats_.free_bytes > static_cast<int64_t>(opt_.max_free_bytes) && !free_.empty()) {
    auto oldest = free_.begin();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second.freed_at < oldest->second.freed_at) oldest = it;
    free_block(oldest->second.ptr, oldest->second.bytes, opt_.huge_pages);
    stats_.free_bytes -= static_cast<int64_t>(oldest->second.bytes);
    --stats_.free_blocks;
    ++stats_.dropped;
    free_.erase(oldest);
  }
}

void CpuBlockCache::release() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& kv : free_) {
    free_block(kv.second.ptr, kv.second.bytes, opt_.huge_pages);
    ++stats_.dropped;
  }
  free_.clear();
  stats_.free_bytes = 0;
  stats_.free_blocks = 0;
}

CpuCacheStats CpuBlockCache::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitizer = true;
#else
constexpr bool kSanitizer = false;
#endif
#else
constexpr bool kSanitizer = false;
#endif

std::atomic<CpuBlockCache*> g_installed{nullptr};
std::string g_status = "off: install_cpu_cache() not called";

}  // namespace

bool install_cpu_cache() {
  static const bool installed = [] {
    const char* e = std::getenv("CELLSCOPE_CPU_CACHE");
    if (kSanitizer) {
      g_status = "off: sanitizer build (AddressSanitizer must see every free)";
      return false;
    }
    if (e && std::string(e) == "0") {
      g_status = "off: CELLSCOPE_CPU_CACHE=0";
      return false;
    }
    // No free blocks kept by default: kept blocks are resident memory the step's peak would
    // count (+20% at batch 256 measured); huge pages alone took most of the gain (CPU_CACHE_NOTES.md).
    CpuCacheOptions o;
    if (const char* v = std::getenv("CELLSCOPE_CPU_CACHE_MB")) o.max_free_bytes = size_t(std::atoll(v)) << 20;
    if (const char* v = std::getenv("CELLSCOPE_CPU_CACHE_HUGE")) o.huge_pages = std::string(v) != "0";
    // Never destroyed: tensors may outlive main()'s locals and free their blocks at exit.
    auto* cache = new CpuBlockCache(o);
    c10::SetCPUAllocator(cache, /*priority=*/1);
    if (c10::GetCPUAllocator() != cache) {
      g_status = "off: another CPU allocator has a higher priority";
      return false;
    }
    g_installed.store(cache);
    g_status = "on: blocks over " + std::to_string(o.min_bytes >> 20) + " MB " +
               (o.huge_pages ? "on transparent huge pages" : "mapped as usual") + ", " +
               (o.max_free_bytes ? std::to_string(o.max_free_bytes >> 20) + " MB of freed blocks kept for reuse"
                                 : "none kept after free");
    return true;
  }();
  return installed;
}

bool cpu_cache_installed() { return g_installed.load() != nullptr; }

std::string cpu_cache_status() { return g_status; }

CpuCacheStats cpu_cache_stats() {
  CpuBlockCache* c = g_installed.load();
  return c ? c->stats() : CpuCacheStats{};
}

void cpu_cache_release() {
  if (CpuBlockCache* c = g_installed.load()) c->release();
}

}  // namespace cs
