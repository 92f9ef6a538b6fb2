// Products with a pre-packed weight (core/model/cells/packed_gemm.h): against at::mm / addmm
// for every remainder of the 6 x 16 micro-tile, transposed weights, bias rows, an added matrix
// (also in place), 1 and 2 threads; and the fallback where the kernel does not apply.

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdlib>

#include "cells/packed_gemm.h"

namespace test_packed_gemm {  // this file's own names in a unity build (tests/README.md)

using cs::fused::PackedMatrix;

namespace {

// Largest difference over the scale of the terms summed (sum_k |x_ik| |y_kj|, plus |self|):
// float rounding is relative to that, not to the result, which a few terms can cancel (a single
// 1 x 64 x 1 dot product of random numbers may come out near 0).
double sum_err(const at::Tensor& got, const at::Tensor& want, const at::Tensor& x, const at::Tensor& y,
               const at::Tensor& self = at::Tensor()) {
  at::Tensor scale = at::mm(x.abs(), y.abs());
  if (self.defined()) scale = scale + self.abs();
  return ((got - want).abs() / scale.clamp_min(1e-30)).max().item<double>();
}

struct EnvGuard {
  explicit EnvGuard(const char* v) {
    const char* o = std::getenv("CELLSCOPE_PACKED_GEMM");
    had = o != nullptr;
    if (had) old = o;
    if (v) setenv("CELLSCOPE_PACKED_GEMM", v, 1);
    else unsetenv("CELLSCOPE_PACKED_GEMM");
  }
  ~EnvGuard() {
    if (had) setenv("CELLSCOPE_PACKED_GEMM", old.c_str(), 1);
    else unsetenv("CELLSCOPE_PACKED_GEMM");
  }
  bool had = false;
  std::string old;
};

}  // namespace

TEST(PackedGemm, agreesWithAtMmForEveryTileRemainder) {
  EnvGuard env(nullptr);
#if defined(__x86_64__)
  // On a CPU with AVX2 and FMA (this project's machines) the kernel must be on; elsewhere the
  // same checks run through the ATen fallback.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    ASSERT_TRUE(cs::fused::packed_gemm_enabled());
  }
#endif
  const bool kernel = cs::fused::packed_gemm_enabled();
  at::manual_seed(16);
  const int old = at::get_num_threads();
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (int64_t M : {1, 2, 3, 5, 6, 7, 12, 13, 32, 37}) {
      for (int64_t N : {1, 7, 16, 17, 33, 48, 100}) {
        for (int64_t K : {1, 3, 64, 129}) {
          auto a = at::randn({M, K});
          auto w = at::randn({N, K});  // the recurrent weight, used as w^T
          PackedMatrix p(w.t());
          ASSERT_EQ(p.packed(), kernel);
          ASSERT_EQ(p.k(), K);
          ASSERT_EQ(p.n(), N);
          auto ref = at::mm(a, w.t());
          auto out = at::full({M, N}, 1e6f);  // every element must be written
          p.mm(out, a);
          ASSERT_LT(sum_err(out, ref, a, w.t()), 1e-5) << M << "x" << K << "x" << N << " threads " << threads;
          // bias row (at::addmm_out(out, bias, a, w^T))
          auto bias = at::randn({N});
          p.addmm(out, bias, a);
          ASSERT_LT(sum_err(out, at::addmm(bias, a, w.t()), a, w.t(), bias.expand({M, N})), 1e-5)
              << M << "x" << K << "x" << N;
          // an added matrix, as dh_prev = dh*z + d(Uh) W; and in place (self is out)
          auto add = at::randn({M, N});
          p.addmm(out, add, a);
          ASSERT_LT(sum_err(out, at::addmm(add, a, w.t()), a, w.t(), add), 1e-5) << M << "x" << K << "x" << N;
          auto acc = add.clone();
          p.addmm(acc, acc, a);
          ASSERT_LT(sum_err(acc, at::addmm(add, a, w.t()), a, w.t(), add), 1e-5) << M << "x" << K << "x" << N;
        }
      }
    }
  }
  at::set_num_threads(old);
}

TEST(PackedGemm, stridedOperandsAndOutputRowsOfALargerBuffer) {
  EnvGuard env(nullptr);
  // W not transposed (the backward's d(Uh) W), a left factor that is a row slice of a wider
  // buffer, an output that is a column block of a wider buffer, a transposed left factor.
  at::manual_seed(17);
  auto w = at::randn({48, 20});
  PackedMatrix p(w);
  auto big = at::randn({9, 100});
  auto a = big.narrow(1, 10, 48);  // row stride 100
  auto outbuf = at::zeros({9, 50});
  auto out = outbuf.narrow(1, 5, 20);
  p.mm(out, a);
  EXPECT_LT(sum_err(out, at::mm(a, w), a, w), 1e-5);
  EXPECT_EQ(outbuf.narrow(1, 0, 5).abs().max().item<float>(), 0.f) << "wrote outside the output block";
  EXPECT_EQ(outbuf.narrow(1, 25, 25).abs().max().item<float>(), 0.f) << "wrote outside the output block";
  auto at_ = at::randn({48, 9}).t();  // column stride 9: copied
  auto o2 = at::empty({9, 20});
  p.mm(o2, at_);
  EXPECT_LT(sum_err(o2, at::mm(at_, w), at_, w), 1e-5);
  // Leading blocks of B (MC-RNN's eq. 2 per channel: the first m_k blocks of its weight): a
  // narrower left factor uses B's first rows, a narrower output B's first columns.
  {
    auto wide = at::randn({40, 37});
    PackedMatrix pw(wide);
    auto a2 = at::randn({7, 24});
    auto o3 = at::full({7, 21}, 1e6f);
    pw.mm(o3, a2);
    EXPECT_LT(
        sum_err(o3, at::mm(a2, wide.narrow(0, 0, 24).narrow(1, 0, 21)), a2, wide.narrow(0, 0, 24).narrow(1, 0, 21)),
        1e-5);
    auto bias = at::randn({21});
    pw.addmm(o3, bias, a2);
    EXPECT_LT(sum_err(o3, at::addmm(bias, a2, wide.narrow(0, 0, 24).narrow(1, 0, 21)), a2,
                      wide.narrow(0, 0, 24).narrow(1, 0, 21), bias.expand({7, 21})),
              1e-5);
    EXPECT_THROW(pw.mm(at::empty({7, 38}), a2), c10::Error);  // wider than B
  }
  // A mismatched factor is refused with the expected shape in the message.
  try {
    p.mm(o2, at::randn({9, 49}));
    FAIL() << "a [9, 49] factor for K = 48 was accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("48"), std::string::npos) << e.what();
  }
}

TEST(PackedGemm, fallsBackToAtenForDoubleAndWhenSwitchedOff) {
  auto w = at::randn({5, 7}, at::kDouble);
  auto a = at::randn({3, 5}, at::kDouble);
  {
    EnvGuard env(nullptr);
    PackedMatrix p(w);
    EXPECT_FALSE(p.packed()) << "double keeps ATen's product (the 1e-10 agreement tests rely on it)";
    auto out = at::empty({3, 7}, at::kDouble);
    p.mm(out, a);
    EXPECT_TRUE(at::equal(out, at::mm(a, w)));
    auto bias = at::randn({7}, at::kDouble);
    p.addmm(out, bias, a);
    EXPECT_TRUE(at::equal(out, at::addmm(bias, a, w)));
  }
  {
    EnvGuard env("0");
    EXPECT_FALSE(cs::fused::packed_gemm_enabled());
    auto wf = w.to(at::kFloat), af = a.to(at::kFloat);
    PackedMatrix p(wf);
    EXPECT_FALSE(p.packed());
    auto out = at::empty({3, 7});
    p.mm(out, af);
    EXPECT_TRUE(at::equal(out, at::mm(af, wf)));
  }
}

}  // namespace test_packed_gemm
