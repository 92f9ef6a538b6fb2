// Baseline cells: vanilla RNN (tanh), GRU, LSTM and the deep-transition GRU
// ("GRU+DT", the MZU paper's baseline, Table 4). See cells/BASELINE_NOTES.md.
#pragma once
#include <torch/nn/pimpl.h>

#include "cells/cell.h"
#include "config/option_spec.h"

namespace cs {

// depth and share_transition are gru_dt's model.* options; their members are the only
// defaults (baseline_option_table()). Sizes and the common options come from the model section.
struct BaselineOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  bool layer_norm = false;         // LN on the gates' pre-activations (forces step-wise path)
  double candidate_dropout = 0.0;  // dropout on the candidate activation (forces step-wise in training)
  int64_t depth = 1;               // GRU+DT: number of transition GRUs L after the first
  bool share_transition = true;    // GRU+DT: the transition GRUs reuse the first GRU's parameters (as the MZUs)
};

// gru_dt's model.* options (field table: schema entries and binding).
const OptionTable<BaselineOptions>& baseline_option_table();
// The options of baseline cell `cell` (rnn, gru, lstm, gru_dt) from a resolved model section.
BaselineOptions read_baseline_options(const json& model, int64_t input_size, const std::string& cell);
// The weight drop a task sets on every GateCellBase after building the cells (word_lm's
// model.weight_drop, GateCellBase::weight_drop); 0 for a model section without one.
double model_weight_drop(const json& model);

// Why LibTorch's fused kernel (at::rnn_tanh, at::gru, at::lstm) does not run a forward of an rnn,
// gru or lstm cell with options `o` (`training`: in training mode); nullptr = it runs, given no
// probe and ctx.stepwise false. Asked by GateCellBase on every call and by the registry's hook.
const char* gate_cell_fused_refusal(const BaselineOptions& o, bool training);

// Layout follows torch::nn::{RNN,GRU,LSTM}: w_ih [G*H, I], w_hh [G*H, H], b_ih, b_hh,
// gate order (r, z, n) for GRU and (i, f, g, o) for LSTM, so weights copy 1:1.
class GateCellBase : public CellImpl {
 public:
  GateCellBase(const BaselineOptions& o, int gates, const std::string& name);
  int64_t input_size() const override { return opt_.input_size; }
  int64_t hidden_size() const override { return opt_.hidden_size; }
  std::string type_name() const override { return name_; }
  torch::Tensor input_projection(const torch::Tensor& x) override;  // W_ih x + b_ih, hoisted
  // The same for x = in.table[in.tokens], with W_ih x folded into the table (cells/token_fold.h)
  torch::Tensor input_projection_tokens(const TokenInput& in);
  double flops_per_step() const override;
  const BaselineOptions& options() const { return opt_; }
  torch::Tensor w_ih, w_hh, b_ih, b_hh;
  torch::Tensor ln_x_gain, ln_x_bias, ln_h_gain, ln_h_bias;  // only with layer_norm
  // Weight drop (DropConnect on w_hh, AWD-LSTM; set by word_lm's model.weight_drop): one
  // mask per forward in training, sampled by WeightDropScope, used by every step.
  double weight_drop = 0.0;
  bool begin_weight_drop();  // samples the mask; false if one is active or none is needed
  void end_weight_drop() { w_hh_drop_ = torch::Tensor(); }

 protected:
  // Can the fused LibTorch kernel be used for this call?
  bool fused_ok(const StepContext& ctx) const;
  torch::Tensor hidden_projection(const torch::Tensor& h);  // W_hh h + b_hh (+ LN)
  torch::Tensor candidate_dropout(const torch::Tensor& n);
  const torch::Tensor& whh() const { return w_hh_drop_.defined() ? w_hh_drop_ : w_hh; }
  torch::Tensor w_hh_drop_;
  BaselineOptions opt_;
  int gates_;
  std::string name_;
};

// RAII: sample a GateCellBase's weight-drop mask for one forward (no-op for other cells).
class WeightDropScope {
 public:
  explicit WeightDropScope(CellImpl* c) : g_(dynamic_cast<GateCellBase*>(c)) { owns_ = g_ && g_->begin_weight_drop(); }
  ~WeightDropScope() {
    if (owns_) g_->end_weight_drop();
  }
  WeightDropScope(const WeightDropScope&) = delete;
  WeightDropScope& operator=(const WeightDropScope&) = delete;

 private:
  GateCellBase* g_;
  bool owns_ = false;
};

// h_t = tanh(W x_t + U h_{t-1} + b)
class RNNCellImpl : public GateCellBase {
 public:
  explicit RNNCellImpl(const BaselineOptions& o) : GateCellBase(o, 1, "rnn") {}
  State step(const torch::Tensor& xp, const State& s, StepContext& ctx) override;
  SeqOutput forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) override;
};

// torch's GRU formulation: r = s(.), z = s(.), n = tanh(W_n x + b_in + r * (U_n h + b_hn)),
// h' = (1 - z) * n + z * h. (CRU paper eqs. 1-4 / MZU eqs. 1-3 with g = 1 - z; the
// reset gate is applied after U_n, as cuDNN and torch::nn::GRU do.)
class GRUCellImpl : public GateCellBase {
 public:
  explicit GRUCellImpl(const BaselineOptions& o) : GateCellBase(o, 3, "gru") {}
  State step(const torch::Tensor& xp, const State& s, StepContext& ctx) override;
  SeqOutput forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) override;
};

// torch's LSTM: i, f, g, o; c' = f c + i g; h' = o tanh(c'). State {h, c}.
class LSTMCellImpl : public GateCellBase {
 public:
  explicit LSTMCellImpl(const BaselineOptions& o) : GateCellBase(o, 4, "lstm") {}
  State initial_state(int64_t batch, const torch::TensorOptions& opts) const override;
  State step(const torch::Tensor& xp, const State& s, StepContext& ctx) override;
  SeqOutput forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) override;
};

// GRU+DT: per time step one GRU on x_t, then L transition GRUs whose input is a
// zero vector (so only their hidden weights and biases act): MZU paper eqs. 15-17
// with M-functions replaced by the GRU's affine maps. The last depth's state is carried.
class GRUDTCellImpl : public CellImpl {
 public:
  explicit GRUDTCellImpl(const BaselineOptions& o);
  std::string type_name() const override { return "gru_dt"; }
  int64_t input_size() const override { return opt_.input_size; }
  int64_t hidden_size() const override { return opt_.hidden_size; }
  torch::Tensor input_projection(const torch::Tensor& x) override;
  State step(const torch::Tensor& xp, const State& s, StepContext& ctx) override;
  // The fused fast path (cells/fused_gru_dt.h) where it applies, else the step-wise loop.
  SeqOutput forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) override;
  SeqOutput forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx) override;
  double flops_per_step() const override;
  std::shared_ptr<GRUCellImpl> first;
  std::vector<std::shared_ptr<GRUCellImpl>> transitions;  // L entries (shared: all are `first`)

 private:
  bool fast_ok(const torch::Tensor& x, const StepContext& ctx) const;  // the fused path applies to x
  BaselineOptions opt_;
};

}  // namespace cs
