// Bidirectional wrapper usable with every registered cell (the CRU paper's bi-CRU
// and bi-GRU, the MZU paper's Bi-RNN ABSA encoder): per layer, one cell reads the
// sentence forward and another cell of the same type (own parameters) reads it
// backward. Sentences are padded at the end; the backward direction starts at
// each sentence's own last token, not at the padding: each sequence is reversed
// within its length, run forward, and the outputs reversed back.
// Padded positions of every layer's input are set to zero, so cells that look at
// neighbouring positions (CRU's convolution) see zeros past the end, exactly as at
// the boundary of an unpadded sentence.
#pragma once
#include <torch/nn/pimpl.h>

#include "cells/cell.h"
#include "config/json.h"

namespace cs {

// Reverse each sequence of x [T, B, ...] within its length (lengths [B], int64):
// out[t, b] = x[len_b - 1 - t, b] for t < len_b, x[t, b] otherwise.
torch::Tensor reverse_padded(const torch::Tensor& x, const torch::Tensor& lengths);
// Mask [T, B, 1] (x's dtype) with 1 at t < len_b.
torch::Tensor length_mask(const torch::Tensor& lengths, int64_t T, const torch::TensorOptions& opts);

struct BiOutput {
  torch::Tensor output;  // [T, B, 2H]: forward and backward outputs at each position (zero at padding)
  torch::Tensor final;   // [B, 2H]: forward output at each sentence's last token, backward output at its first
};

class BidirectionalImpl : public torch::nn::Module {
 public:
  // `model` is the resolved "model" section (cell, hidden, layers, dropout, cell options).
  BidirectionalImpl(const json& model, int64_t input_size);
  // x [T, B, I] (padded at the end), lengths [B] int64 (1 <= len <= T).
  // Probe series get the prefixes "fwd/l<i>/" and "bwd/l<i>/"; the backward series are
  // in the backward cell's processing order (step t = position len_b - 1 - t of sentence b).
  BiOutput forward(const torch::Tensor& x, const torch::Tensor& lengths, StepContext& ctx);
  int64_t output_size() const { return 2 * fwd.back()->hidden_size(); }
  double flops_per_step() const;
  std::vector<std::shared_ptr<CellImpl>> fwd, bwd;

 private:
  double dropout_ = 0.0;
};
TORCH_MODULE(Bidirectional);

}  // namespace cs
