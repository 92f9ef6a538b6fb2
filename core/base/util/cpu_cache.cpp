#include "util/cpu_block_cache.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include <sys/mman.h>
#include <unistd.h>

namespace cs {

struct CpuBlockCache::Block {
  const CpuBlockCache* owner;
  Segment* seg;
  char* ptr;
  size_t bytes;
  bool free = false;
  bool advised = false;   // free, and its pages given back (MADV_DONTNEED): not resident
  int64_t freed_at = 0;   // the large-allocation clock when it was last freed
  Block* prev = nullptr;  // neighbours in the segment, by address
  Block* next = nullptr;
};

struct CpuBlockCache::Segment {
  char* base;
  size_t bytes;
  Block* first = nullptr;  // the block at base (never merged away: merges keep the lower block)
  int64_t lent = 0;        // blocks lent from it
};

bool CpuBlockCache::BySize::operator()(const Block* a, const Block* b) const {
  return a->bytes != b->bytes ? a->bytes < b->bytes : a->ptr < b->ptr;
}

namespace {

constexpr size_t kHuge = size_t(2) << 20;

// A new mapping of `bytes` (a multiple of the page size). With `huge` (bytes a multiple of
// 2 MB): at a 2 MB boundary and advised for transparent huge pages, so a first touch faults
// 2 MB in at once instead of 4 KB. Page-aligned either way, more than c10's 64 bytes.
void* map_bytes(size_t bytes, bool huge) {
  const size_t extra = huge ? kHuge : 0;
  void* raw = mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  if (!huge) return raw;
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (base + kHuge - 1) & ~(uintptr_t(kHuge) - 1);
  if (start > base) munmap(raw, start - base);
  const uintptr_t end = start + bytes, raw_end = base + bytes + extra;
  if (raw_end > end) munmap(reinterpret_cast<void*>(end), raw_end - end);
  madvise(reinterpret_cast<void*>(start), bytes, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(start);
}

// The large blocks lent, by data pointer, over every instance: a DataPtr's context must be its data
// pointer for Allocator::raw_allocate / raw_deallocate (oneDNN's scratch memory, LibTorch 2.x's LSTM
// on the CPU), so the deleter finds its block here. Never destroyed (blocks may be freed at exit).
std::mutex& lent_index_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_map<void*, void*>& lent_index() {
  static auto* m = new std::unordered_map<void*, void*>;
  return *m;
}

}  // namespace

void CpuBlockCache::lent_index_add(void* data, Block* b) {
  std::lock_guard<std::mutex> g(lent_index_mutex());
  lent_index()[data] = b;
}

CpuBlockCache::Block* CpuBlockCache::lent_index_take(void* data) {
  std::lock_guard<std::mutex> g(lent_index_mutex());
  auto it = lent_index().find(data);
  if (it == lent_index().end()) return nullptr;
  auto* b = static_cast<Block*>(it->second);
  lent_index().erase(it);
  return b;
}

c10::DeleterFnPtr CpuBlockCache::raw_deleter() const { return &CpuBlockCache::return_block; }

CpuBlockCache::CpuBlockCache(CpuCacheOptions o) : opt_(o), fallback_(c10::GetDefaultCPUAllocator()) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  opt_.round_bytes = std::max<size_t>((opt_.round_bytes + page - 1) / page * page, page);
  opt_.min_bytes = std::max<size_t>(opt_.min_bytes, 1);
  opt_.over_peak = std::max(opt_.over_peak, 0.0);
}

CpuBlockCache::~CpuBlockCache() {
  std::lock_guard<std::mutex> g(mu_);
  for (Segment* s : segments_) {
    for (Block* b = s->first; b;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
    munmap(s->base, s->bytes);
    delete s;
  }
  free_.clear();
  advised_.clear();
  segments_.clear();
}

size_t CpuBlockCache::rounded(size_t nbytes) const {
  const size_t b = (nbytes + opt_.round_bytes - 1) / opt_.round_bytes * opt_.round_bytes;
  if (opt_.huge_pages && b >= opt_.huge_min_bytes) return (b + kHuge - 1) / kHuge * kHuge;
  return b;
}

CpuBlockCache::FreeSet& CpuBlockCache::set_of(const Block* b) const { return b->advised ? advised_ : free_; }

void CpuBlockCache::list_locked(Block* b) const {
  set_of(b).insert(b);
  ++stats_.free_blocks;
  stats_.free_bytes += static_cast<int64_t>(b->bytes);
  if (b->advised) stats_.advised_bytes += static_cast<int64_t>(b->bytes);
}

void CpuBlockCache::unlist_locked(Block* b) const {
  set_of(b).erase(b);
  --stats_.free_blocks;
  stats_.free_bytes -= static_cast<int64_t>(b->bytes);
  if (b->advised) stats_.advised_bytes -= static_cast<int64_t>(b->bytes);
}

int64_t CpuBlockCache::resident_locked() const { return stats_.mapped_bytes - stats_.advised_bytes; }

CpuBlockCache::Block* CpuBlockCache::merge_locked(Block* b) const {
  // b (free, not listed) takes its free neighbours of the same kind (resident or given back):
  // the resident count stays exact. The lower block survives.
  auto merge_next = [](Block* into) {
    Block* gone = into->next;
    into->bytes += gone->bytes;
    into->next = gone->next;
    if (gone->next) gone->next->prev = into;
    delete gone;
  };
  if (b->next && b->next->free && b->next->advised == b->advised) {
    unlist_locked(b->next);
    merge_next(b);
  }
  if (b->prev && b->prev->free && b->prev->advised == b->advised) {
    Block* lower = b->prev;
    unlist_locked(lower);
    lower->freed_at = std::max(lower->freed_at, b->freed_at);
    merge_next(lower);
    b = lower;
  }
  return b;
}

bool CpuBlockCache::advise_largest_locked() const {
  if (free_.empty()) return false;
  Block* b = *std::prev(free_.end());
  unlist_locked(b);
  madvise(b->ptr, b->bytes, MADV_DONTNEED);
  b->advised = true;
  list_locked(merge_locked(b));
  return true;
}

void CpuBlockCache::make_room_locked(int64_t extra, int64_t limit) const {
  // Resident (lent + free not given back) + extra within the limit: wholly free segments are
  // unmapped first, the longest unused first; then, only past the limit plus over_peak of the
  // peak, the largest free blocks among lent ones give their pages back.
  const auto slack = static_cast<int64_t>(opt_.over_peak * static_cast<double>(stats_.peak_live_bytes));
  while (resident_locked() + extra > limit) {
    if (drop_oldest_free_segment_locked()) continue;
    if (resident_locked() + extra <= limit + slack) return;
    if (!advise_largest_locked()) return;
  }
}

c10::DataPtr CpuBlockCache::allocate_bytes(size_t nbytes) const {
  if (nbytes < opt_.min_bytes) return fallback_->allocate(nbytes);
  const size_t bytes = rounded(nbytes);
  const auto ibytes = static_cast<int64_t>(bytes);
  std::lock_guard<std::mutex> g(mu_);
  ++clock_;
  // The limit: the most lent at once so far (or what is lent plus this request, if more), plus
  // the allowance.
  const int64_t limit =
      std::max(stats_.peak_live_bytes, stats_.live_bytes + ibytes) + static_cast<int64_t>(opt_.max_free_bytes);
  Block key{this, nullptr, nullptr, bytes};
  // The smallest free block that holds it (lowest address on ties): resident ones first, then
  // ones whose pages were given back (faulted in anew, zeroed).
  Block* b = nullptr;
  for (FreeSet* set : {&free_, &advised_}) {
    auto it = set->lower_bound(&key);
    if (it != set->end()) {
      b = *it;
      break;
    }
  }
  if (b) {
    unlist_locked(b);
    if (b->bytes > bytes) {  // the rest stays free, of the same kind
      auto* rest = new Block{this, b->seg, b->ptr + bytes, b->bytes - bytes, true, b->advised, b->freed_at, b, b->next};
      if (b->next) b->next->prev = rest;
      b->next = rest;
      b->bytes = bytes;
      list_locked(rest);
    }
    b->free = false;
    const bool was_advised = b->advised;
    b->advised = false;
    ++b->seg->lent;
    if (was_advised) {
      ++stats_.hits_given_back;
      make_room_locked(0, limit);  // its pages become resident again
    }
    ++stats_.hits;
  } else {
    ++stats_.misses;
    make_room_locked(ibytes, limit);
    const bool huge = opt_.huge_pages && bytes >= opt_.huge_min_bytes;
    void* p = map_bytes(bytes, huge);
    if (!p) {
      // Out of memory with free memory mapped: give it all back and try once more.
      const_cast<CpuBlockCache*>(this)->release_locked();
      p = map_bytes(bytes, huge);
      TORCH_CHECK(p, "CPU block cache: out of memory allocating ", bytes, " bytes");
    }
    auto* s = new Segment{static_cast<char*>(p), bytes};
    b = new Block{this, s, s->base, bytes};
    s->first = b;
    s->lent = 1;
    segments_.push_back(s);
    ++stats_.segments;
    stats_.mapped_bytes += ibytes;
  }
  ++stats_.live_blocks;
  stats_.live_bytes += ibytes;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  trim_idle_locked();
  lent_index_add(b->ptr, b);
  return {b->ptr, b->ptr, &CpuBlockCache::return_block, c10::Device(c10::DeviceType::CPU)};
}

void CpuBlockCache::return_block(void* data) {
  Block* b = lent_index_take(data);
  if (!b) {
    // Not one of ours: a small block that raw_allocate took from the fallback (the default CPU
    // allocator, the same for every instance) and raw_deallocate hands back through raw_deleter().
    c10::GetDefaultCPUAllocator()->raw_deleter()(data);
    return;
  }
  const CpuBlockCache* self = b->owner;
  std::lock_guard<std::mutex> g(self->mu_);
  self->free_locked(b);
}

void CpuBlockCache::free_locked(Block* b) const {
  --stats_.live_blocks;
  stats_.live_bytes -= static_cast<int64_t>(b->bytes);
  --b->seg->lent;
  b->free = true;
  b->freed_at = clock_;
  list_locked(merge_locked(b));
  if (!opt_.keep && b->seg->lent == 0) unmap_segment_locked(b->seg);
  trim_idle_locked();
}

void CpuBlockCache::unmap_segment_locked(Segment* s) const {
  TORCH_CHECK(s->lent == 0, "CPU block cache: unmapping a segment with blocks lent");
  for (Block* b = s->first; b;) {
    Block* next = b->next;
    unlist_locked(b);
    delete b;
    b = next;
  }
  munmap(s->base, s->bytes);
  --stats_.segments;
  stats_.mapped_bytes -= static_cast<int64_t>(s->bytes);
  ++stats_.dropped;
  segments_.erase(std::find(segments_.begin(), segments_.end(), s));
  delete s;
}

int64_t CpuBlockCache::last_used_locked(const Segment* s) const {
  int64_t t = 0;
  for (const Block* b = s->first; b; b = b->next) t = std::max(t, b->freed_at);
  return t;
}

bool CpuBlockCache::drop_oldest_free_segment_locked() const {
  Segment* oldest = nullptr;
  int64_t when = 0;
  for (Segment* s : segments_) {
    if (s->lent) continue;
    const int64_t t = last_used_locked(s);
    if (!oldest || t < when) {
      oldest = s;
      when = t;
    }
  }
  if (!oldest) return false;
  unmap_segment_locked(oldest);
  return true;
}

void CpuBlockCache::trim_idle_locked() const {
  // A wholly free segment not used in max_idle large allocations (a shape no longer asked for).
  for (size_t i = 0; i < segments_.size();) {
    Segment* s = segments_[i];
    if (s->lent == 0 && clock_ - last_used_locked(s) > opt_.max_idle)
      unmap_segment_locked(s);  // segments_[i] is the next one now
    else ++i;
  }
}

void CpuBlockCache::release_locked() {
  while (drop_oldest_free_segment_locked()) {
  }
  // Free blocks among lent ones: their pages go back (faulted in anew, zeroed, when lent again).
  while (advise_largest_locked()) {
  }
  stats_.peak_live_bytes = stats_.live_bytes;
}

void CpuBlockCache::release() {
  std::lock_guard<std::mutex> g(mu_);
  release_locked();
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
    // Freed memory reused, resident memory held within the peak of lent bytes (+10%: a step's
    // resident peak about as without reuse); CELLSCOPE_CPU_CACHE_MB allows that much more,
    // CELLSCOPE_CPU_CACHE_KEEP=0 unmaps a segment once wholly free (CPU_CACHE_NOTES.md).
    CpuCacheOptions o;
    if (const char* v = std::getenv("CELLSCOPE_CPU_CACHE_MB")) o.max_free_bytes = size_t(std::atoll(v)) << 20;
    if (const char* v = std::getenv("CELLSCOPE_CPU_CACHE_KEEP")) o.keep = std::string(v) != "0";
    if (const char* v = std::getenv("CELLSCOPE_CPU_CACHE_HUGE")) o.huge_pages = std::string(v) != "0";
    // Never destroyed: tensors may outlive main()'s locals and free their blocks at exit.
    auto* cache = new CpuBlockCache(o);
    c10::SetCPUAllocator(cache, /*priority=*/1);
    if (c10::GetCPUAllocator() != cache) {
      g_status = "off: another CPU allocator has a higher priority";
      return false;
    }
    g_installed.store(cache);
    g_status =
        "on: blocks of " + std::to_string(o.min_bytes >> 20) + " MB and more " +
        (o.keep
             ? "reused after free, resident memory held within the peak of lent bytes" +
                   (o.max_free_bytes ? " + " + std::to_string(o.max_free_bytes >> 20) + " MB" : std::string()) + " (+" +
                   std::to_string(static_cast<int>(o.over_peak * 100 + 0.5)) + "% before free pages are given back)"
             : std::string("unmapped at free")) +
        (o.huge_pages ? ", from " + std::to_string(o.huge_min_bytes >> 20) + " MB on transparent huge pages"
                      : std::string());
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
