// The higher-order RNN (HO-RNN, Soltani and Jiang 2016, "Higher Order Recurrent Neural Networks"),
// one of the MC-RNN paper's two related baselines (its Table 2). See cells/HORNN_NOTES.md.
#pragma once
#include "cells/cell.h"
#include "config/option_spec.h"

namespace cs {

// The nonlinearity f of the HORNN recurrence (model.ho_activation).
enum class HoActivation { Tanh, Sigmoid };
constexpr EnumNames<HoActivation, 2> enum_names(HoActivation) {
  return {{{HoActivation::Tanh, "tanh"}, {HoActivation::Sigmoid, "sigmoid"}}};
}

// The members are the only defaults of the ho_rnn cell's model.* options (hornn_option_table()).
struct HoRnnOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t order = 3;  // N: how many preceding states feed h_t (model.ho_order)
  HoActivation activation = HoActivation::Tanh;
};

const OptionTable<HoRnnOptions>& hornn_option_table();

// h_t = f(W_in x_t + b_in + sum_{n=1..N} W_hn h_{t-n} + b_h): HORNN's recurrence with every one
// of the N preceding states on its own weighted path (HORNN_NOTES.md). Parameters follow
// torch::nn::RNN's names: w_ih [H, I], b_ih [H], b_hh [H], and w_hh [H, N*H] holding
// [W_h1 | W_h2 | ... | W_hN] side by side, so that order 1 is model.cell = rnn's tanh RNN exactly.
// The state is {h_{t-1}, h_{t-2}, ..., h_{t-N}}, newest first; output_of() is h_{t-1}.
class HoRnnCellImpl : public CellImpl {
 public:
  explicit HoRnnCellImpl(const HoRnnOptions& o);
  std::string type_name() const override { return "ho_rnn"; }
  int64_t input_size() const override { return opt_.input_size; }
  int64_t hidden_size() const override { return opt_.hidden_size; }
  State initial_state(int64_t batch, const torch::TensorOptions& opts) const override;
  // An encoder-decoder's bridge: every state before the sequence is h0 (h_{t-n} = h0 for n >= 1),
  // as an MC-RNN decoder's channels read it (tasks/SEQ2SEQ_NOTES.md).
  State with_previous_output(State s, const torch::Tensor& h0) const override;
  torch::Tensor input_projection(const torch::Tensor& x) override;  // W_in x + b_in, hoisted
  State step(const torch::Tensor& xp, const State& s, StepContext& ctx) override;
  double flops_per_step() const override;
  const HoRnnOptions& options() const { return opt_; }
  torch::Tensor w_ih, w_hh, b_ih, b_hh;

 private:
  HoRnnOptions opt_;
};

}  // namespace cs
