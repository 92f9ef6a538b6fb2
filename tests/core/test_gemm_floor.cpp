// The GEMM floor of `bench --peer` (core/run/bench/gemm_floor.h): every matrix product
// of a call is recorded once, with its layout, and the floor is the sum of their replayed times.

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <stdexcept>

#include "bench/gemm_floor.h"

namespace test_gemm_floor {  // this file's own names in a unity build (tests/README.md)

namespace {

double flops_of(int64_t b, int64_t m, int64_t k, int64_t n) { return 2.0 * b * m * k * n; }

}  // namespace

TEST(GemmFloor, recordsEachProductOnceWithItsShapeAndFlops) {
  auto a = at::randn({5, 7}), b = at::randn({7, 3}), bt = at::randn({3, 7});
  auto bias = at::randn({3});
  auto x = at::randn({4, 5, 6}), y = at::randn({4, 6, 2}), acc = at::zeros({4, 5, 2});
  auto out = at::empty({5, 3});
  const cs::GemmFloor f = cs::measure_gemm_floor([&] {
    (void)at::mm(a, b);
    at::mm_out(out, a, b);             // same layout: one shape, two calls
    (void)at::addmm(bias, a, bt.t());  // a transposed factor: another layout
    acc.baddbmm_(x, y);                // ATen's CPU baddbmm runs addmm_ per batch entry: not counted again
    (void)at::bmm(x, y);
    (void)at::relu(a);  // not a product
    (void)(a + 1.0);
  });
  EXPECT_EQ(f.calls, 5);
  EXPECT_EQ(f.shapes, 3);  // mm a x b, mm a x bt^T, bmm x y (baddbmm and bmm share the op and layout)
  const double want = 3 * flops_of(1, 5, 7, 3) + 2 * flops_of(4, 5, 6, 2);
  EXPECT_DOUBLE_EQ(f.flops, want);
  EXPECT_GT(f.seconds, 0.0);
  double sum = 0;
  int64_t calls = 0;
  bool saw_transposed = false;
  for (const auto& s : f.by_shape) {
    EXPECT_GT(s.second.second, 0.0);
    sum += s.second.second * static_cast<double>(s.second.first);
    calls += s.second.first;
    if (s.first.op == "mm" && s.first.b_strides == std::vector<int64_t>{1, 7}) saw_transposed = true;
  }
  EXPECT_DOUBLE_EQ(sum, f.seconds);
  EXPECT_EQ(calls, f.calls);
  EXPECT_TRUE(saw_transposed) << "the transposed factor's strides are kept";
  const auto j = f.to_json(2);
  EXPECT_EQ(j["top"].size(), 2u);
  EXPECT_EQ(j["calls"].get<int64_t>(), 5);
}

TEST(GemmFloor, recordsProductsOfWorkerThreadsAndStopsAfterwards) {
  const int old = at::get_num_threads();
  at::set_num_threads(2);
  auto w = at::randn({16, 16});
  std::vector<at::Tensor> xs;
  for (int i = 0; i < 8; ++i) xs.push_back(at::randn({4, 16}));
  const cs::GemmFloor f = cs::measure_gemm_floor([&] {
    at::parallel_for(0, 8, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) (void)at::mm(xs[static_cast<size_t>(i)], w);
    });
  });
  at::set_num_threads(old);
  EXPECT_EQ(f.calls, 8);
  EXPECT_DOUBLE_EQ(f.flops, 8 * flops_of(1, 4, 16, 16));
  // The observer is gone once the call returns, and a throwing call leaves none behind.
  EXPECT_THROW(cs::measure_gemm_floor([&] {
                 (void)at::mm(w, w);
                 throw std::runtime_error("boom");
               }),
               std::runtime_error);
  (void)at::mm(w, w);
  const cs::GemmFloor none = cs::measure_gemm_floor([&] { (void)at::relu(w); });
  EXPECT_EQ(none.calls, 0);
  EXPECT_EQ(none.seconds, 0.0);
  const cs::GemmFloor one = cs::measure_gemm_floor([&] { (void)at::mm(w, w); });
  EXPECT_EQ(one.calls, 1);
}

}  // namespace test_gemm_floor
