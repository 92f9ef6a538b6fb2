// The hierarchical multiscale RNN (HM-RNN, Chung, Ahn and Bengio 2017, "Hierarchical Multiscale
// Recurrent Neural Networks"), in its HM-LSTM form: the MC-RNN paper's other related baseline
// (its Table 2). See cells/HMRNN_NOTES.md.
#pragma once
#include "cells/cell.h"
#include "config/option_spec.h"

namespace cs {

// The members are the only defaults of the hm_rnn cell's model.* options (hmrnn_option_table()).
struct HmRnnOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t levels = 2;  // L: the levels of the hierarchy, each an LSTM of hidden_size (model.hm_levels)
  double slope = 1.0;  // a of the boundary detector's hard sigmoid, max(0, min(1, (a x + 1) / 2)) (model.hm_slope)
};

const OptionTable<HmRnnOptions>& hmrnn_option_table();

// One level's parameters (submodule "level<l>" of the cell): rows in the paper's order (f, i, o, g, z~), no z~
// row and no w_td at the top.
struct HmRnnLevelImpl : torch::nn::Module {
  torch::Tensor w_bu, w_rec, w_td, b, w_out;
};

// One Cellscope layer holds all L levels, since a level reads the level above it (the top-down term).
// Per level l (1-based in the notes, 0-based here), in submodule level<l>: w_bu [4H+1, in_l] (in_0 = input,
// else H), w_rec [4H+1, H], w_td [4H+1, H] (every level but the top), b [4H+1], w_out [H, H] (the output
// module's W^e_l); the top level's have 4H rows. The output module's w_gate [L, L*H] (the w^l of g^l).
// State: {h^e, h^1..h^L, c^1..c^L, z^1..z^L} (z as [B, 1]); output_of() is the output module's h^e.
class HmRnnCellImpl : public CellImpl {
 public:
  explicit HmRnnCellImpl(const HmRnnOptions& o);
  std::string type_name() const override { return "hm_rnn"; }
  int64_t input_size() const override { return opt_.input_size; }
  int64_t hidden_size() const override { return opt_.hidden_size; }
  State initial_state(int64_t batch, const torch::TensorOptions& opts) const override;
  // An encoder-decoder's bridge: h^e and every level's h start as h0; c and z stay zero (HMRNN_NOTES.md).
  State with_previous_output(State s, const torch::Tensor& h0) const override;
  State step(const torch::Tensor& x, const State& s, StepContext& ctx) override;
  double flops_per_step() const override;
  const HmRnnOptions& options() const { return opt_; }
  std::vector<std::shared_ptr<HmRnnLevelImpl>> levels;
  torch::Tensor w_gate;

 private:
  HmRnnOptions opt_;
};

}  // namespace cs
