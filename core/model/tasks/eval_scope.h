// Scoped evaluation: the module in eval mode and no autograd for the scope; the
// previous training mode is restored on exit (also when the scope exits by an exception).
// Used by the tasks' evaluate(), generation and the analyses.
#pragma once
#include <ATen/core/grad_mode.h>
#include <torch/nn/module.h>

namespace cs {

class EvalScope {
 public:
  explicit EvalScope(torch::nn::Module& mod) : m_(mod), was_(mod.is_training()) { m_.eval(); }
  ~EvalScope() {
    if (was_) m_.train();
  }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  torch::nn::Module& m_;
  bool was_;
  at::NoGradGuard ng_;
};

}  // namespace cs
