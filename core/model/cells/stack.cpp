#include "cells/stack.h"

#include <torch/nn/functional.h>

#include "cells/registry.h"
#include "config/common_options.h"

namespace cs {

std::vector<Cells> make_layers(const json& model, int64_t input_size, int directions,
                               const std::function<json(int)>& model_of) {
  const ModelOptions mo = read_model_options(model);
  const auto& info = cell_info(mo.cell);
  const int n = static_cast<int>(mo.layers);
  std::vector<Cells> out;
  int64_t in = input_size;
  for (int l = 0; l < n; ++l) {
    const json ml = model_of ? model_of(l) : model;
    Cells cells;
    for (int d = 0; d < directions; ++d) cells.push_back(info.make(ml, in, l));
    in = directions * cells[0]->hidden_size();  // the next layer reads every direction
    out.push_back(std::move(cells));
  }
  return out;
}

torch::Tensor run_layers(const Cells& layers, torch::Tensor h, std::vector<State>& states, StepContext& ctx,
                         const std::function<torch::Tensor(const torch::Tensor&)>& between, const TokenInput* tokens) {
  for (size_t l = 0; l < layers.size(); ++l) {
    if (l > 0) h = between(h);
    if (ctx.probe) ctx.probe->prefix = "l" + std::to_string(l) + "/";
    auto out = l == 0 && tokens ? layers[l]->forward_tokens(h, tokens, states[l], ctx)
                                : layers[l]->forward_sequence(h, states[l], ctx);
    states[l] = std::move(out.state);
    h = out.output;
  }
  if (ctx.probe) ctx.probe->prefix.clear();
  return h;
}

std::vector<State> initial_states(const Cells& layers, int64_t batch, const torch::TensorOptions& opts) {
  std::vector<State> s;
  for (auto& l : layers) s.push_back(l->initial_state(batch, opts));
  return s;
}

double flops_per_step(const Cells& layers) {
  double f = 0;
  for (auto& l : layers) f += l->flops_per_step();
  return f;
}

CellStackImpl::CellStackImpl(const json& model, int64_t input_size) {
  dropout_ = read_model_options(model).dropout;
  for (auto& cells : make_layers(model, input_size))
    layers.push_back(register_module("layer" + std::to_string(layers.size()), cells[0]));
}

std::vector<State> CellStackImpl::initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  return initial_states(layers, batch, opts);
}

torch::Tensor CellStackImpl::forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx,
                                     const TokenInput* tokens) {
  namespace F = torch::nn::functional;
  const auto between = [&](const torch::Tensor& h) {  // dropout between layers
    return dropout_ > 0 ? F::dropout(h, F::DropoutFuncOptions().p(dropout_).training(is_training())) : h;
  };
  return run_layers(layers, x, states, ctx, between, tokens);
}

double CellStackImpl::flops_per_step() const { return cs::flops_per_step(layers); }

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
