// A stack of recurrent layers built from the registry (model.cell, model.layers),
// with dropout between layers. Tasks put an embedding before it and a head after.
#pragma once
#include <torch/nn/pimpl.h>

#include <functional>

#include "cells/cell.h"
#include "config/json.h"

namespace cs {

using Cells = std::vector<std::shared_ptr<CellImpl>>;

// The one layer loop of a stack (CellStack, Bidirectional, the word LM): model.layers layers of
// model.cell from the registry, `directions` cells a layer (made in that order), layer 0 reading
// input_size features and each next one what all directions of the layer before write
// (directions x its hidden size). `model_of(l)`, when given, is the section layer l is made from
// (the word LM's tied last layer). The caller registers the cells under its own names.
std::vector<Cells> make_layers(const json& model, int64_t input_size, int directions = 1,
                               const std::function<json(int)>& model_of = nullptr);

// h through the layers of a one-direction stack, layer l's state read from and written back to
// states[l]; `between(h, l)` is applied to what goes into layer l > 0 (the stack's dropout).
// While layer l runs the probe's prefix is "l<l>/" (cleared after). `tokens`: h is that embedding
// lookup and the first layer may fold it (CellImpl::forward_tokens).
torch::Tensor run_layers(const Cells& layers, torch::Tensor h, std::vector<State>& states, StepContext& ctx,
                         const std::function<torch::Tensor(const torch::Tensor&)>& between,
                         const TokenInput* tokens = nullptr);
std::vector<State> initial_states(const Cells& layers, int64_t batch, const torch::TensorOptions& opts);
double flops_per_step(const Cells& layers);  // the sum of the layers'

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
