#include "cells/cell.h"

#include <torch/nn/functional.h>

#include "util/error.h"

namespace cs {

void Probe::record(const std::string& name, const torch::Tensor& value) {
  series[prefix + name].push_back(value.detach().to(torch::kCPU).clone());
}

torch::Tensor Probe::stacked(const std::string& key) const {
  auto it = series.find(key);
  if (it == series.end() || it->second.empty()) throw UserError("probe has no series '" + key + "'");
  return torch::stack(it->second, 0);
}

void StepContext::add_loss(const torch::Tensor& term) { extra_loss = extra_loss.defined() ? extra_loss + term : term; }

void StepContext::add_metric(const std::string& name, double value, int64_t count) {
  auto& m = metrics[name];
  m.first += value;
  m.second += count;
}

void StepContext::add_metric(const std::string& name, const torch::Tensor& value, int64_t count) {
  if (!tensor_metrics) {
    add_metric(name, value.item<double>(), count);
    return;
  }
  auto& m = metric_tensors[name];
  m.first = m.first.defined() ? m.first + value.detach() : value.detach();
  m.second += count;
}

State CellImpl::initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  return {torch::zeros({batch, hidden_size()}, opts)};
}

torch::Tensor CellImpl::input_projection(const torch::Tensor& x) { return x; }

SeqOutput CellImpl::forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  return run_stepwise(x, s0, ctx);
}

SeqOutput CellImpl::run_stepwise(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  TORCH_CHECK(x.dim() == 3, type_name(), ": expected input [T, B, I], got ", x.sizes());
  TORCH_CHECK(x.size(2) == input_size(), type_name(), ": expected input size ", input_size(), ", got ", x.size(2));
  torch::Tensor xp = input_projection(x);
  // unbind(0), never xp[t]: indexing a grad-requiring tensor per step makes backward O(T^2).
  std::vector<torch::Tensor> steps = xp.unbind(0);
  std::vector<torch::Tensor> outs;
  outs.reserve(steps.size());
  State s = s0;
  for (auto& xt : steps) {
    s = step(xt, s, ctx);
    outs.push_back(output_of(s));
  }
  return {torch::stack(outs, 0), s};
}

torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& gain, const torch::Tensor& bias) {
  return torch::layer_norm(x, {x.size(-1)}, gain, bias, 1e-5);
}

}  // namespace cs
