#include "cells/stack.h"

#include <torch/nn/functional.h>

#include "cells/registry.h"
#include "config/common_options.h"

namespace cs {

CellStackImpl::CellStackImpl(const json& model, int64_t input_size) {
  const ModelOptions mo = read_model_options(model);
  const auto& info = cell_info(mo.cell);
  const int n = static_cast<int>(mo.layers);
  dropout_ = mo.dropout;
  int64_t in = input_size;
  for (int l = 0; l < n; ++l) {
    auto cell = info.make(model, in, l);
    layers.push_back(register_module("layer" + std::to_string(l), cell));
    in = cell->hidden_size();
  }
}

std::vector<State> CellStackImpl::initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  std::vector<State> s;
  for (auto& l : layers) s.push_back(l->initial_state(batch, opts));
  return s;
}

torch::Tensor CellStackImpl::forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx,
                                     const TokenInput* tokens) {
  torch::Tensor h = x;
  for (size_t l = 0; l < layers.size(); ++l) {
    if (l > 0 && dropout_ > 0)
      h = torch::nn::functional::dropout(
          h, torch::nn::functional::DropoutFuncOptions().p(dropout_).training(is_training()));
    if (ctx.probe) ctx.probe->prefix = "l" + std::to_string(l) + "/";
    auto out = l == 0 && tokens ? layers[l]->forward_tokens(h, tokens, states[l], ctx)
                                : layers[l]->forward_sequence(h, states[l], ctx);
    states[l] = std::move(out.state);
    h = out.output;
  }
  if (ctx.probe) ctx.probe->prefix.clear();
  return h;
}

double CellStackImpl::flops_per_step() const {
  double f = 0;
  for (auto& l : layers) f += l->flops_per_step();
  return f;
}

std::vector<State> detach_states(const std::vector<State>& s) {
  std::vector<State> out;
  out.reserve(s.size());
  for (auto& st : s) {
    State d;
    for (auto& t : st) d.push_back(t.detach());
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace cs
