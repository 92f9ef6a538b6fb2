// A stack of recurrent layers built from the registry (model.cell, model.layers),
// with dropout between layers. Tasks put an embedding before it and a head after.
#pragma once
#include <torch/nn/pimpl.h>

#include "cells/cell.h"
#include "config/json.h"

namespace cs {

class CellStackImpl : public torch::nn::Module {
 public:
  // `model` is the resolved "model" config section.
  CellStackImpl(const json& model, int64_t input_size);
  std::vector<State> initial_state(int64_t batch, const torch::TensorOptions& opts) const;
  // x [T, B, I] -> [T, B, H]; `states` in/out (one State per layer).
  // `tokens`: x is the embedding lookup tokens->table[tokens->tokens] (null: not known to be one);
  // the first layer may fold it (CellImpl::forward_tokens).
  torch::Tensor forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx,
                        const TokenInput* tokens = nullptr);
  int64_t output_size() const { return layers.back()->hidden_size(); }
  double flops_per_step() const;
  std::vector<std::shared_ptr<CellImpl>> layers;

 private:
  double dropout_ = 0.0;
};
TORCH_MODULE(CellStack);

// Detach every tensor of the states (truncated BPTT).
std::vector<State> detach_states(const std::vector<State>& s);

}  // namespace cs
