// The large-block CPU allocator (core/base/util/cpu_cache.h): huge-page blocks, reuse within the
// budget, the limits, and LibTorch running on it as installed.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "util/cpu_block_cache.h"
#include "util/cpu_cache.h"

namespace test_cpu_cache {  // this file's own names in a unity build (tests/README.md)

using cs::CpuBlockCache;
using cs::CpuCacheOptions;

namespace {

constexpr size_t MB = size_t(1) << 20;
constexpr size_t KB = size_t(1) << 10;

CpuCacheOptions small_blocks() {
  CpuCacheOptions o;
  o.min_bytes = 1 * MB;  // small sizes, so the test needs little memory
  o.huge_min_bytes = 8 * MB;
  return o;
}

void fill(const c10::DataPtr& d, size_t n, unsigned char v) { std::memset(d.get(), v, n); }

char* at_(const c10::DataPtr& d, size_t off = 0) { return static_cast<char*>(d.get()) + off; }

// Pages of [p, p + n) resident now (mincore).
size_t resident_pages(void* p, size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((n + page - 1) / page);
  EXPECT_EQ(mincore(p, n, v.data()), 0);
  size_t r = 0;
  for (unsigned char c : v) r += c & 1;
  return r;
}

}  // namespace

TEST(CpuCache, SizesAreRoundedAndLargeOnesGoOnHugePages) {
  CpuBlockCache c(small_blocks());
  EXPECT_EQ(c.rounded(1 * MB + 1), 1 * MB + 64 * KB);
  EXPECT_EQ(c.rounded(3 * MB), 3 * MB);
  EXPECT_EQ(c.rounded(8 * MB - 100), 8 * MB);  // rounds to 8 MB: a huge-page size
  EXPECT_EQ(c.rounded(9 * MB), 10 * MB);       // 2 MB units from 8 MB on
  c10::DataPtr a = c.allocate(9 * MB);
  ASSERT_NE(a.get(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % (2 * MB), 0u);
  fill(a, 9 * MB, 7);  // all of it writable
  c10::DataPtr s = c.allocate(3 * MB);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.get()) % 64, 0u);  // c10's alignment at least
  fill(s, 3 * MB, 1);
  EXPECT_EQ(c.stats().misses, 2);
  EXPECT_EQ(c.stats().mapped_bytes, int64_t(13 * MB));
}

TEST(CpuCache, SmallBlocksGoToTheDefaultAllocator) {
  CpuBlockCache c(small_blocks());
  c10::DataPtr s = c.allocate(1000);
  ASSERT_NE(s.get(), nullptr);
  fill(s, 1000, 1);
  const auto st = c.stats();
  EXPECT_EQ(st.hits + st.misses, 0);
  EXPECT_EQ(st.live_blocks, 0);
}

// Allocator::raw_allocate / raw_deallocate, as oneDNN's scratch memory uses them (LibTorch 2.x's LSTM on
// the CPU): raw_allocate needs a DataPtr whose context is its data, raw_deallocate a raw_deleter. A
// large block goes back to the cache (reused by the next request), a small one to the default allocator.
TEST(CpuCache, RawAllocationsOfBothSizesAreReturned) {
  CpuBlockCache c(small_blocks());
  ASSERT_NE(c.raw_deleter(), nullptr);
  void* big = c.raw_allocate(3 * MB);
  ASSERT_NE(big, nullptr);
  std::memset(big, 5, 3 * MB);
  EXPECT_EQ(c.stats().live_blocks, 1);
  c.raw_deallocate(big);
  EXPECT_EQ(c.stats().live_blocks, 0);
  EXPECT_EQ(c.stats().free_blocks, 1);
  c10::DataPtr again = c.allocate(3 * MB);
  EXPECT_EQ(again.get(), big);  // the same block, reused
  void* small = c.raw_allocate(1000);
  ASSERT_NE(small, nullptr);
  std::memset(small, 1, 1000);
  c.raw_deallocate(small);  // to the default allocator, not the cache
  EXPECT_EQ(c.stats().live_blocks, 1);
  EXPECT_EQ(c.stats().hits + c.stats().misses, 2);
}

TEST(CpuCache, FreedMemoryIsCarvedForSmallerRequestsAndMergedAgain) {
  CpuBlockCache c(small_blocks());
  c10::DataPtr a = c.allocate(6 * MB);
  char* base = at_(a);
  fill(a, 6 * MB, 3);
  a.clear();  // kept: one free block of 6 MB
  EXPECT_EQ(c.stats().free_blocks, 1);
  EXPECT_EQ(c.stats().free_bytes, int64_t(6 * MB));
  c10::DataPtr b = c.allocate(2 * MB);  // the front of it
  EXPECT_EQ(at_(b), base);
  c10::DataPtr d = c.allocate(4 * MB);  // exactly the rest
  EXPECT_EQ(at_(d), base + 2 * MB);
  EXPECT_EQ(at_(d)[0], 3);  // the same pages, not new ones
  auto st = c.stats();
  EXPECT_EQ(st.hits, 2);
  EXPECT_EQ(st.misses, 1);
  EXPECT_EQ(st.free_blocks, 0);
  EXPECT_EQ(st.mapped_bytes, int64_t(6 * MB));
  b.clear();
  d.clear();  // merged with its free neighbour: 6 MB in one piece again
  st = c.stats();
  EXPECT_EQ(st.free_blocks, 1);
  EXPECT_EQ(st.free_bytes, int64_t(6 * MB));
  c10::DataPtr e = c.allocate(6 * MB);
  EXPECT_EQ(at_(e), base);
  EXPECT_EQ(c.stats().misses, 1);
}

TEST(CpuCache, TheSmallestFreeBlockThatHoldsARequestIsTaken) {
  CpuBlockCache c(small_blocks());
  c10::DataPtr big = c.allocate(5 * MB), small = c.allocate(3 * MB), mid = c.allocate(4 * MB);
  char* p3 = at_(small);
  char* p4 = at_(mid);
  big.clear();
  small.clear();
  mid.clear();
  c10::DataPtr x = c.allocate(3 * MB + 10);  // rounds to 3 MB + 64 KB: the 4 MB block holds it, the 3 MB one does not
  EXPECT_EQ(at_(x), p4);
  c10::DataPtr y = c.allocate(2 * MB);  // the 3 MB block is the smallest that holds it
  EXPECT_EQ(at_(y), p3);
}

TEST(CpuCache, NewMemoryIsMappedWithinThePeakOfLentBytes) {
  CpuBlockCache c(small_blocks());
  c10::DataPtr a = c.allocate(4 * MB), b = c.allocate(4 * MB);  // peak lent: 8 MB
  a.clear();
  b.clear();
  EXPECT_EQ(c.stats().peak_live_bytes, int64_t(8 * MB));
  EXPECT_EQ(c.stats().mapped_bytes, int64_t(8 * MB));
  // 6 MB fits in neither free segment (separate mappings do not merge): a new one, and to stay
  // within the 8 MB peak, wholly free segments are unmapped first: 8 + 6 > 8, 4 + 6 > 8, 0 + 6.
  c10::DataPtr d = c.allocate(6 * MB);
  auto st = c.stats();
  EXPECT_EQ(st.dropped, 2);
  EXPECT_EQ(st.mapped_bytes, int64_t(6 * MB));
  // What is lent plus a request may exceed the peak: then that is the limit (6 + 3 MB).
  c10::DataPtr e = c.allocate(3 * MB);
  st = c.stats();
  EXPECT_EQ(st.misses, 4);
  EXPECT_EQ(st.dropped, 2);
  EXPECT_EQ(st.mapped_bytes, int64_t(9 * MB));
  EXPECT_EQ(st.peak_live_bytes, int64_t(9 * MB));
}

TEST(CpuCache, FreeBlocksAmongLentOnesGiveTheirPagesBackPastThePeak) {
  CpuBlockCache c(small_blocks());
  c10::DataPtr x = c.allocate(8 * MB);
  x.clear();
  c10::DataPtr p = c.allocate(2 * MB), q = c.allocate(2 * MB), r = c.allocate(4 * MB);  // all of x's segment
  EXPECT_EQ(c.stats().misses, 1);
  char* pp = at_(p);
  char* pr = at_(r);
  std::memset(pp, 4, 2 * MB);
  std::memset(pr, 4, 4 * MB);
  p.clear();
  r.clear();                              // 2 MB and 4 MB free, q between them: no segment is wholly free
  c10::DataPtr big = c.allocate(5 * MB);  // no free block holds it, nothing can be unmapped
  auto st = c.stats();
  EXPECT_EQ(st.misses, 2);
  EXPECT_EQ(st.mapped_bytes, int64_t(13 * MB));
  // Resident 8 + 5 MB against the 8 MB peak (+10%): the 4 MB block's pages go back (9 MB, still
  // over 8.8), then the 2 MB block's (7 MB).
  EXPECT_EQ(st.advised_bytes, int64_t(6 * MB));
  EXPECT_EQ(resident_pages(pr, 4 * MB), 0u);
  EXPECT_EQ(resident_pages(pp, 2 * MB), 0u);
  EXPECT_LE(st.mapped_bytes - st.advised_bytes, int64_t(8 * MB));
  // Lent again: the given-back pages, zeroed, counted resident again.
  c10::DataPtr again = c.allocate(4 * MB);
  EXPECT_EQ(at_(again), pr);
  EXPECT_EQ(at_(again)[0], 0);
  st = c.stats();
  EXPECT_EQ(st.hits_given_back, 1);
  EXPECT_EQ(st.advised_bytes, int64_t(2 * MB));
}

TEST(CpuCache, AnAllowanceKeepsMoreBeyondThePeak) {
  CpuCacheOptions o = small_blocks();
  o.max_free_bytes = 64 * MB;
  CpuBlockCache c(o);
  c10::DataPtr a = c.allocate(4 * MB);
  a.clear();
  c10::DataPtr d = c.allocate(6 * MB);  // within peak + allowance: the free 4 MB stays
  EXPECT_EQ(c.stats().dropped, 0);
  EXPECT_EQ(c.stats().mapped_bytes, int64_t(10 * MB));
}

TEST(CpuCache, WithoutKeepingAWhollyFreeSegmentIsUnmapped) {
  CpuCacheOptions o = small_blocks();
  o.keep = false;
  CpuBlockCache c(o);
  c10::DataPtr a = c.allocate(3 * MB);
  fill(a, 3 * MB, 2);
  a.clear();
  auto st = c.stats();
  EXPECT_EQ(st.free_blocks, 0);
  EXPECT_EQ(st.mapped_bytes, 0);
  EXPECT_EQ(st.dropped, 1);
  c10::DataPtr b = c.allocate(3 * MB);
  EXPECT_EQ(c.stats().hits, 0);
  EXPECT_EQ(c.stats().misses, 2);
}

TEST(CpuCache, IdleFreeSegmentsAreUnmapped) {
  CpuCacheOptions o = small_blocks();
  o.max_idle = 2;
  o.max_free_bytes = 64 * MB;  // so that only idleness unmaps
  CpuBlockCache c(o);
  c10::DataPtr a = c.allocate(2 * MB);
  a.clear();
  EXPECT_EQ(c.stats().free_blocks, 1);
  for (int i = 0; i < 3; ++i) c10::DataPtr other = c.allocate(6 * MB);  // three large allocations that do not fit in it
  // the 2 MB segment was not used in more than max_idle allocations: unmapped (the 6 MB one is reused)
  const auto st = c.stats();
  EXPECT_EQ(st.free_blocks, 1);
  EXPECT_EQ(st.free_bytes, int64_t(6 * MB));
  EXPECT_EQ(st.mapped_bytes, int64_t(6 * MB));
}

TEST(CpuCache, ReleaseGivesTheFreeMemoryBackAndRestartsThePeak) {
  CpuBlockCache c(small_blocks());
  c10::DataPtr a = c.allocate(4 * MB);
  c10::DataPtr w = c.allocate(2 * MB);
  char* abase = at_(a);
  a.clear();
  c10::DataPtr keep = c.allocate(1 * MB);  // carved from a's segment: 3 MB of it stay free beside a lent block
  EXPECT_EQ(at_(keep), abase);
  char* free_part = at_(keep) + 1 * MB;
  fill(keep, 1 * MB, 5);
  std::memset(free_part, 9, 3 * MB);  // resident (as what a step's tensor there left)
  const size_t pages = 3 * MB / static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ASSERT_EQ(resident_pages(free_part, 3 * MB), pages);
  w.clear();  // a wholly free segment
  EXPECT_EQ(c.stats().peak_live_bytes, int64_t(6 * MB));
  EXPECT_EQ(c.stats().mapped_bytes, int64_t(6 * MB));
  c.release();
  const auto st = c.stats();
  EXPECT_EQ(st.peak_live_bytes, int64_t(1 * MB));  // what is lent now
  EXPECT_EQ(st.mapped_bytes, int64_t(4 * MB));     // w's segment unmapped
  EXPECT_EQ(st.free_bytes, int64_t(3 * MB));
  EXPECT_EQ(resident_pages(free_part, 3 * MB), 0u);  // given back, though still mapped
  EXPECT_EQ(at_(keep)[0], 5);                        // the lent block untouched
  c10::DataPtr again = c.allocate(3 * MB);           // the free part lent again: faulted in anew, zeroed
  EXPECT_EQ(at_(again), free_part);
  EXPECT_EQ(at_(again)[0], 0);
}

TEST(CpuCache, StepsAfterTheFirstFaultNothingInAndStayNearThePeak) {
  // A CRU deep training step's large allocations at batch 32, in order, from a trace of
  // `bench --peer-child` (sizes in 64 KB units; "F k" frees the step's k-th allocation). The
  // parameters' gradients and Adam's moments stay lent throughout.
  CpuBlockCache c(small_blocks());
  std::vector<c10::DataPtr> state;
  for (int u : {72, 48, 150, 450, 150, 96, 48, 72, 72, 72, 48, 48}) state.push_back(c.allocate(size_t(u) * 64 * KB));
  const char* step_events =
      "A75 A76 A225 F1 A450 A450 F3 A48 F5 A28 F0 A28 A28 A28 F8 F7 A150 F9 A48 A48 F12 F10 F11 A450 F4 A225 A72 "
      "F13 F2 F15 A76 F14 A75 F16 F17 A72 A72 F18 F19 A48 A48 F20 F21 F6";
  auto step = [&] {
    std::vector<c10::DataPtr> blocks;
    std::istringstream in(step_events);
    std::string e;
    while (in >> e) {
      const int v = std::stoi(e.substr(1));
      if (e[0] == 'A') {
        blocks.push_back(c.allocate(size_t(v) * 64 * KB));
        std::memset(blocks.back().get(), 1, size_t(v) * 64 * KB);  // touched, as a tensor is
      } else {
        blocks.at(static_cast<size_t>(v)).clear();
      }
    }
  };
  step();
  step();  // the second step may still settle
  const auto settled = c.stats();
  const int64_t peak = settled.peak_live_bytes;
  for (int s = 0; s < 5; ++s) step();
  const auto after = c.stats();
  EXPECT_EQ(after.misses, settled.misses) << "later steps mapped new memory";
  EXPECT_EQ(after.hits_given_back, settled.hits_given_back) << "later steps faulted given-back pages in";
  EXPECT_EQ(after.peak_live_bytes, peak);
  EXPECT_LE(after.mapped_bytes - after.advised_bytes, peak + peak / 10);  // resident: within 10% of the peak
}

TEST(CpuCache, LibTorchRunsOnItAsInstalled) {
  // The test harness installs it as cellscope-cli does; only a sanitizer build or
  // CELLSCOPE_CPU_CACHE=0 leaves it off, and then the status says so.
  const bool on = cs::install_cpu_cache();
  EXPECT_EQ(on, cs::cpu_cache_installed());
  const std::string status = cs::cpu_cache_status();
  if (!on) {
    EXPECT_TRUE(status.find("sanitizer") != std::string::npos ||
                status.find("CELLSCOPE_CPU_CACHE=0") != std::string::npos)
        << status;
    return;
  }
  EXPECT_EQ(status.rfind("on:", 0), 0u) << status;
  const auto before = cs::cpu_cache_stats();
  {
    at::Tensor a = at::arange(12 << 20, at::kInt).remainder(1000);  // 48 MB: over min_bytes
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data_ptr()) % (2 * MB), 0u);
    at::Tensor b = a * 2 + 1;  // another large block
    EXPECT_EQ(b[123456].item<int>(), 2 * 456 + 1);
    EXPECT_TRUE(at::equal(b.remainder(2), at::ones_like(b)));
    EXPECT_EQ(b.max().item<int>(), 1999);
  }
  {
    // An LSTM through LibTorch's own kernel: LibTorch 2.x runs it with oneDNN on the CPU, whose
    // scratch memory comes from raw_allocate and goes back through raw_deallocate.
    at::manual_seed(1);
    const int64_t T = 40, B = 64, H = 256;
    at::Tensor x = at::randn({T, B, H});
    std::vector<at::Tensor> w = {at::randn({4 * H, H}) * 0.05, at::randn({4 * H, H}) * 0.05, at::zeros({4 * H}),
                                 at::zeros({4 * H})};
    auto out = at::lstm(x, {at::zeros({1, B, H}), at::zeros({1, B, H})}, w, true, 1, 0.0, false, false, false);
    EXPECT_TRUE(at::isfinite(std::get<0>(out)).all().item<bool>());
  }
  const auto after = cs::cpu_cache_stats();
  EXPECT_GE(after.hits + after.misses, before.hits + before.misses + 2);
  EXPECT_EQ(after.live_blocks, before.live_blocks);  // every block returned
}

}  // namespace test_cpu_cache
