// Finite-difference gradient check for tests (double precision).
#pragma once
#include <torch/nn/module.h>
#include <torch/types.h>

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

}  // namespace cstest
