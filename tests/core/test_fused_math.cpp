// The fast paths' vectorised row functions (core/model/cells/fused_math.h) against std::.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cells/fused_math.h"

namespace test_fused_math {  // this file's own names in a unity build (tests/README.md)

namespace {

// Values over the whole useful range, with every length remainder of the 8-lane loop, the
// branch point of tanh (0.625), tiny and huge magnitudes.
std::vector<float> probe_values() {
  std::vector<float> v = {0.f,     -0.f,    1e-30f, -1e-30f, 1e-7f, -3e-5f, 0.3f, 0.6249f, 0.625f,
                          0.6251f, -0.625f, 1.f,    -1.f,    5.f,   -9.f,   15.f, -20.f,   44.f,
                          -50.f,   87.f,    -87.f,  88.5f,   -90.f, 200.f,  -1e6f};
  std::mt19937 g(7);
  std::normal_distribution<float> n(0.f, 3.f);
  for (int i = 0; i < 1003; ++i) v.push_back(n(g));
  return v;
}

double rel(double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-30); }

}  // namespace

TEST(FusedMath, FloatSigmoidAndTanhAgreeWithStdToFloatRounding) {
  const auto v = probe_values();
  for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(9), size_t(17), v.size()}) {
    std::vector<float> s(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)), t(n);
    cs::fused::sigmoid_inplace(s.data(), static_cast<int64_t>(n));
    cs::fused::tanh_to(v.data(), t.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      const double x = v[i];
      const double ws = 1.0 / (1.0 + std::exp(-x)), wt = std::tanh(x);
      // relative to the exact value (double), where the value is a normal float; else absolute
      if (ws > 1e-37) EXPECT_LT(rel(s[i], ws), 1e-6) << "sigmoid(" << x << ") = " << s[i] << ", want " << ws;
      else EXPECT_LT(std::abs(s[i]), 1e-37) << x;
      EXPECT_LT(rel(t[i], wt), 1e-6) << "tanh(" << x << ") = " << t[i] << ", want " << wt;
      if (wt != 0) {
        EXPECT_EQ(std::signbit(t[i]), std::signbit(wt)) << x;
      }  // (the sign of a zero is not kept)
    }
  }
}

TEST(FusedMath, NaNPropagatesAndInPlaceEqualsOutOfPlace) {
  std::vector<float> x = {1.f, std::numeric_limits<float>::quiet_NaN(), -2.f, 0.1f, 3.f, -0.7f, 0.f, 9.f, -1.f};
  std::vector<float> s = x, t(x.size()), u = x;
  cs::fused::sigmoid_inplace(s.data(), static_cast<int64_t>(s.size()));
  cs::fused::tanh_to(x.data(), t.data(), static_cast<int64_t>(x.size()));
  cs::fused::tanh_inplace(u.data(), static_cast<int64_t>(u.size()));
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_TRUE(std::isnan(t[1]));
  for (size_t i = 0; i < x.size(); ++i)
    if (i != 1) {
      EXPECT_EQ(t[i], u[i]);
    }
}

TEST(FusedMath, DoubleIsStdExactly) {
  std::vector<double> x = {-30.0, -1.5, -0.2, 0.0, 1e-9, 0.4, 2.0, 17.0};
  std::vector<double> s = x, t(x.size());
  cs::fused::sigmoid_inplace(s.data(), static_cast<int64_t>(s.size()));
  cs::fused::tanh_to(x.data(), t.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(s[i], 1.0 / (1.0 + std::exp(-x[i])));
    EXPECT_EQ(t[i], std::tanh(x[i]));
  }
}

}  // namespace test_fused_math
