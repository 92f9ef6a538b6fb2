// Finite-difference gradient check for tests (double precision).
#pragma once
#include <torch/nn/module.h>
#include <torch/types.h>

#include <algorithm>
#include <functional>
#include <string>

namespace cstest {

struct GradCheckResult {
  double max_abs_err = 0, max_rel_err = 0;
  int64_t checked = 0;
  std::string worst;  // parameter name of the worst entry
};

// `loss` must be a deterministic scalar function of the module's parameters (and
// of `extra` inputs, which are checked too when they require grad). Checks up to
// `max_per_tensor` entries of each parameter (spread evenly) with central differences.
inline GradCheckResult grad_check(torch::nn::Module& m, const std::function<torch::Tensor()>& loss,
                                  std::vector<torch::Tensor> extra = {}, int64_t max_per_tensor = 12,
                                  double eps = 1e-6) {
  GradCheckResult r;
  std::vector<std::pair<std::string, torch::Tensor>> ps;
  for (auto& p : m.named_parameters()) ps.emplace_back(p.key(), p.value());
  for (size_t i = 0; i < extra.size(); ++i) ps.emplace_back("input" + std::to_string(i), extra[i]);
  for (auto& [n, p] : ps)
    if (p.grad().defined()) p.mutable_grad().zero_();
  auto l = loss();
  l.backward();
  std::vector<torch::Tensor> grads;
  for (auto& [n, p] : ps) grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  torch::NoGradGuard ng;
  for (size_t k = 0; k < ps.size(); ++k) {
    auto& p = ps[k].second;
    auto flat = p.view({-1});
    const int64_t n = flat.numel();
    if (n == 0) continue;
    const int64_t stride = std::max<int64_t>(1, n / max_per_tensor);
    for (int64_t i = 0; i < n; i += stride) {
      const double orig = flat[i].item<double>();
      flat[i] = orig + eps;
      const double lp = loss().item<double>();
      flat[i] = orig - eps;
      const double lm = loss().item<double>();
      flat[i] = orig;
      const double num = (lp - lm) / (2 * eps);
      const double ana = grads[k].view({-1})[i].item<double>();
      const double abs_err = std::abs(num - ana);
      const double rel = abs_err / std::max(1e-3, std::max(std::abs(num), std::abs(ana)));
      ++r.checked;
      if (rel > r.max_rel_err) {
        r.max_rel_err = rel;
        r.worst = ps[k].first + "[" + std::to_string(i) + "]";
      }
      r.max_abs_err = std::max(r.max_abs_err, abs_err);
    }
  }
  return r;
}

// Tolerance of a float path against the DOUBLE result of the same model, weights and inputs
// (the exact value up to double rounding), rather than a fixed bound against another float path.
// How far float rounding moves a quantity depends on its conditioning (a gradient that is a
// difference of nearly equal terms, e.g. through a softmax over nearly identical channels, loses
// the same digits in every float evaluation) and on the BLAS kernel's order of summation, which
// changes with OPENBLAS_CORETYPE, the CPU and the thread count. `stepwise_err` = the step-wise
// (autograd) float path's own error against that double result: it measures the quantity's
// conditioning on the kernel at hand. A float path passes within kFloatErrFactor times it, or
// within `floor` (what every well-conditioned quantity reaches); a wrong formula is off by far
// more than either. Two float evaluations of one quantity were measured up to 2.3x apart. Never
// above kFloatErrCap: a step-wise path that far from double means the double run is not the same
// computation (other dropout masks or loss weights), and the check must fail, not pass vacuously.
constexpr double kFloatErrFactor = 10.0, kFloatErrCap = 1e-2;
inline double float_tolerance(double stepwise_err, double floor = 1e-4) {
  return std::min(kFloatErrCap, std::max(floor, kFloatErrFactor * stepwise_err));
}

}  // namespace cstest
