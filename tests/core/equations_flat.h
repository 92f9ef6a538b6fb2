// Shared by the equation tests (test_equations_*.cpp): tensors read into plain double
// arrays for the hand-written reference loops, and the comparison.
#pragma once
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace cstest {

using Vec = std::vector<double>;

// A tensor's values (detached, double, contiguous) with its sizes; t(i), t(i, j), t(i, j, k).
struct Flat {
  std::vector<double> v;
  std::vector<int64_t> s;
  bool def = false;
  Flat() = default;
  explicit Flat(const torch::Tensor& t) {
    if (!t.defined()) return;
    def = true;
    auto c = t.detach().to(torch::kDouble).contiguous();
    v.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    s = c.sizes().vec();
  }
  double operator()(int64_t i) const { return v[static_cast<size_t>(i)]; }
  double operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * s[1] + j)]; }
  double operator()(int64_t i, int64_t j, int64_t k) const { return v[static_cast<size_t>((i * s[1] + j) * s[2] + k)]; }
};

inline double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

}  // namespace cstest
