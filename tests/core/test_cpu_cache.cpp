// The large-block CPU allocator (core/base/util/cpu_cache.h): huge-page blocks, reuse within the
// budget, the limits, and LibTorch running on it as installed.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>

#include "util/cpu_block_cache.h"
#include "util/cpu_cache.h"

using cs::CpuBlockCache;
using cs::CpuCacheOptions;

namespace {

constexpr size_t MB = size_t(1) << 20;

CpuCacheOptions small_blocks(size_t budget) {
  CpuCacheOptions o;
  o.min_bytes = 1 * MB;  // small sizes, so the test needs little memory
  o.max_free_bytes = budget;
  return o;
}

void fill(const c10::DataPtr& d, size_t n, unsigned char v) { std::memset(d.get(), v, n); }

}  // namespace

TEST(CpuCache, LargeBlocksAreHugePageAlignedAndReusedForTheSameRoundedSize) {
  CpuBlockCache c(small_blocks(64 * MB));
  c10::DataPtr a = c.allocate(3 * MB);
  ASSERT_NE(a.get(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % (2 * MB), 0u);
  fill(a, 3 * MB, 7);  // all of it writable
  void* first = a.get();
  a.clear();  // freed: kept (within the budget)
  EXPECT_EQ(c.stats().free_blocks, 1);
  EXPECT_EQ(c.stats().free_bytes, int64_t(4 * MB));  // rounded to 2 MB
  c10::DataPtr b = c.allocate(4 * MB - 100);        // the same rounded size: the same block
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(c.stats().hits, 1);
  c10::DataPtr d = c.allocate(5 * MB);  // another size: new memory
  EXPECT_NE(d.get(), first);
  EXPECT_EQ(c.stats().misses, 2);
  EXPECT_EQ(c.stats().live_blocks, 2);
  EXPECT_EQ(c.stats().free_blocks, 0);
}

TEST(CpuCache, SmallBlocksGoToTheDefaultAllocator) {
  CpuBlockCache c(small_blocks(64 * MB));
  c10::DataPtr s = c.allocate(1000);
  ASSERT_NE(s.get(), nullptr);
  fill(s, 1000, 1);
  const auto st = c.stats();
  EXPECT_EQ(st.hits + st.misses, 0);
  EXPECT_EQ(st.live_blocks, 0);
}

TEST(CpuCache, WithoutABudgetNothingIsKept) {
  CpuBlockCache c(small_blocks(0));  // the installed default
  c10::DataPtr a = c.allocate(3 * MB);
  fill(a, 3 * MB, 2);
  a.clear();
  EXPECT_EQ(c.stats().free_blocks, 0);
  EXPECT_EQ(c.stats().free_bytes, 0);
  EXPECT_EQ(c.stats().dropped, 1);
  c10::DataPtr b = c.allocate(3 * MB);
  EXPECT_EQ(c.stats().hits, 0);
  EXPECT_EQ(c.stats().misses, 2);
}

TEST(CpuCache, OldestFreeBlocksAreDroppedOverTheBudget) {
  CpuBlockCache c(small_blocks(8 * MB));
  c10::DataPtr a = c.allocate(4 * MB), b = c.allocate(4 * MB), d = c.allocate(4 * MB);
  void* pb = b.get();
  void* pd = d.get();
  a.clear();
  b.clear();
  d.clear();  // 12 MB free > 8 MB: a, the oldest, goes
  EXPECT_EQ(c.stats().free_bytes, int64_t(8 * MB));
  EXPECT_EQ(c.stats().dropped, 1);
  c10::DataPtr x = c.allocate(4 * MB), y = c.allocate(4 * MB);
  EXPECT_TRUE((x.get() == pd && y.get() == pb) || (x.get() == pb && y.get() == pd));  // the kept two, newest first
  EXPECT_EQ(x.get(), pd);
}

TEST(CpuCache, IdleFreeBlocksAreDropped) {
  CpuCacheOptions o = small_blocks(64 * MB);
  o.max_idle = 2;
  CpuBlockCache c(o);
  c10::DataPtr a = c.allocate(4 * MB);
  a.clear();
  EXPECT_EQ(c.stats().free_blocks, 1);
  for (int i = 0; i < 3; ++i) c10::DataPtr other = c.allocate(6 * MB);  // three large allocations of another size
  // the 4 MB block was not asked for in more than max_idle allocations: dropped (the 6 MB one is reused)
  const auto st = c.stats();
  EXPECT_EQ(st.free_blocks, 1);
  EXPECT_EQ(st.free_bytes, int64_t(6 * MB));
  c.release();
  EXPECT_EQ(c.stats().free_blocks, 0);
  EXPECT_EQ(c.stats().free_bytes, 0);
}

TEST(CpuCache, LibTorchRunsOnItAsInstalled) {
  // The test harness installs it as cellscope-cli does; only a sanitizer build or
  // CELLSCOPE_CPU_CACHE=0 leaves it off, and then the status says so.
  const bool on = cs::install_cpu_cache();
  EXPECT_EQ(on, cs::cpu_cache_installed());
  const std::string status = cs::cpu_cache_status();
  if (!on) {
    EXPECT_TRUE(status.find("sanitizer") != std::string::npos || status.find("CELLSCOPE_CPU_CACHE=0") != std::string::npos)
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
  const auto after = cs::cpu_cache_stats();
  EXPECT_GE(after.hits + after.misses, before.hits + before.misses + 2);
  EXPECT_EQ(after.live_blocks, before.live_blocks);  // both returned
}
