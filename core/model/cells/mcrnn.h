// Multi-Channel RNN (Xu et al., AAAI 2019): a wrapper around any step-wise
// Cellscope cell f. See cells/MCRNN_NOTES.md for every choice the paper leaves open.
//
// Block size n, K = n - 1 channels, all parameters shared across channels.
//   m_t^k     = ((t - k - 1) mod (n - 1)) + 1                       (eq. 1)
//   s_{t-1}^k = (1 / m_t^k) sum_{j=1..m_t^k} W_j h_{t-j}^k           (eq. 2)
//   h_t^k     = f(s_{t-1}^k, x_t)                                    (eq. 3)
//   e_t^k = r^T tanh(V [h_t^k; x_t]),  a_t^k = softmax_k(e_t^k),
//   h_t^att = sum_k a_t^k h_t^k                                      (eqs. 4-6)
// Channels are folded into the batch dimension ([B, K, ...] -> [B*K, ...]) and
// the sum over distances is one matrix product per step (sec. 5.3).
#pragma once
#include <torch/nn/pimpl.h>

#include "cells/cell.h"
#include "config/option_spec.h"

namespace cs {

struct CellInfo;

// What the base's extra state (the LSTM memory c) is at each node (model.lstm_memory).
enum class LstmMemory { Prev, Average };
constexpr EnumNames<LstmMemory, 2> enum_names(LstmMemory) {
  return {{{LstmMemory::Prev, "prev"}, {LstmMemory::Average, "average"}}};
}

// Whether s_{t-1}^k of eq. 2 is clamped to [-1, 1] before the base cell reads it (model.state_clamp): 'auto' is
// 'on' for every base but lstm (the paper's base, kept as eq. 3 is written). MCRNN_NOTES.md "GRU and RNN bases".
enum class StateClamp { Auto, Off, On };
constexpr EnumNames<StateClamp, 3> enum_names(StateClamp) {
  return {{{StateClamp::Auto, "auto"}, {StateClamp::Off, "off"}, {StateClamp::On, "on"}}};
}
// Whether a state_clamp setting clamps over a base cell named `base` (what 'auto' resolves to).
bool mcrnn_clamps_state(StateClamp c, const std::string& base);

// The members are the only defaults of the mcrnn cell's model.* options (mcrnn_option_table()).
struct McRnnOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t block = 3;                          // n; channels K = n - 1 ("MC-RNN-K")
  std::string base = "lstm";                  // base cell f of eq. 3 (built by the registry; unused by the cell itself)
  int64_t attention = 0;                      // rows of V (0 = hidden_size)
  LstmMemory lstm_memory = LstmMemory::Prev;  // the base's extra state (LSTM c)
  double dist_scale = 0.1;                    // alpha: W_j = I + alpha * D_j (D_j the parameter); 1 = W_j itself
  StateClamp state_clamp = StateClamp::Auto;  // s of eq. 2 clamped to [-1, 1] (auto: all bases but lstm)
};

// The mcrnn cell's model.* options (field table: schema entries and binding).
const OptionTable<McRnnOptions>& mcrnn_option_table();
// The resolved model section the base cell of an MC-RNN is built from (model.base as model.cell, the base's own
// options at their defaults, a gcn_mzu base's gcn_degree signed_clamped): what make() hands the base's factory,
// and what `cellscope-cli export` writes for the Python package (export.json's schema.base.model).
json mcrnn_base_model(const json& model);

// The in-degree m_t^k of eq. 1 (t >= 1 the global position, k in 1..n-1).
int64_t mcrnn_in_degree(int64_t t, int64_t k, int64_t n);

// State layout (batch is dim 0 of every tensor, so tasks can narrow/carry it):
//   [0] h_att [B, H]                        the layer output (eq. 6)
//   [1] t     [B] int64                     steps already taken (global position of the last step)
//   [2] hist  [B, K, n-1, H]                h_{t-1..t-n+1}^k, distance-major in dim 2
//   [3..]     base extras (LSTM c):  "prev": [B, K, X]; "average": [B, K, n-1, X]
class McRnnCellImpl : public CellImpl {
 public:
  McRnnCellImpl(const McRnnOptions& o, std::shared_ptr<CellImpl> base);
  std::string type_name() const override { return "mcrnn"; }
  int64_t input_size() const override { return opt_.input_size; }
  int64_t hidden_size() const override { return opt_.hidden_size; }
  int64_t channels() const { return opt_.block - 1; }
  State initial_state(int64_t batch, const torch::TensorOptions& opts) const override;
  // [T,B,I] -> [T,B, G_base + a]: the base's input projection and V_x x_t, both
  // hoisted (x_t is shared by all channels, so they are computed once, not K times).
  torch::Tensor input_projection(const torch::Tensor& x) override;
  State step(const torch::Tensor& xproj_t, const State& s, StepContext& ctx) override;
  SeqOutput forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) override;
  // The fast path with the base's input half and V_x x_t folded into the table (token_fold.h).
  SeqOutput forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx) override;
  double flops_per_step() const override;
  // h0 as every node before the sequence: h_t^k = h0 for t <= 0 in every channel (the zero state's h_t^k = 0,
  // sec. 3.1, with h0 in place of 0) and h_att = h0; the base's extra state (LSTM c) stays as given.
  State with_previous_output(State s, const torch::Tensor& h0) const override;
  CellImpl& base() { return *base_; }
  const McRnnOptions& options() const { return opt_; }
  // Whether this cell clamps s of eq. 2 to [-1, 1] (model.state_clamp resolved against its base).
  bool clamps_state() const { return clamp_state_; }

  // [n-1, H, H]: the parameter D_j behind W_j (eq. 2), index j-1: W_j = I + alpha D_j
  // (alpha = dist_scale; see MCRNN_NOTES.md "Parametrisation of W_j").
  torch::Tensor w_dist;
  // W_j for j = 1..n-1 as one [n-1, H, H] tensor (eq. 2's weights).
  torch::Tensor dist_weights() const;
  torch::Tensor v_h, v_x;  // V = [V_h V_x] (eq. 4): [a, H], [a, I]
  torch::Tensor r;         // [a] (eq. 4)

 private:
  // One step at global position t (1-based); `wcat` = [W_1^T; ...; W_{n-1}^T] ([(n-1)H, H]).
  // `coef` = coefficients(t).
  State step_at(int64_t t, const torch::Tensor& xp, const State& s, const torch::Tensor& wcat,
                const torch::Tensor& coef, StepContext& ctx);
  torch::Tensor coefficients(int64_t t, const torch::TensorOptions& opts) const;  // [1, K, n-1, 1]
  SeqOutput forward_impl(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx);
  McRnnOptions opt_;
  std::shared_ptr<CellImpl> base_;
  int64_t base_proj_ = 0;        // width of the base's input projection
  bool clamp_state_ = false;     // model.state_clamp resolved against the base (clamps_state())
  double base_input_flops_ = 0;  // FLOPs of that projection per step
  size_t base_state_size_ = 1;   // tensors in the base's state
};

}  // namespace cs
