// Contextual Recurrent Units (Cui et al., arXiv 1911.05960): a GRU whose inputs
// are (or contain) same-length embedding-wise convolutions of the input window.
//   cru_shallow        eqs. 5-8:   c_t = phi(e~_t), h_t = GRU(h_{t-1}, c_t)
//   cru_deep           eqs. 9-11:  three CNNs phi_r, phi_z, phi feed the gates directly
//   cru_deep_enhanced  eqs. 12-14: the word embedding is added back: W_g(phi_g(e~_t) + e_t)
// All convolutions of a sequence are computed at once in input_projection()
// (outside the time loop); the recurrence is the GRU's. See cells/CRU_NOTES.md.
#pragma once
#include <torch/nn/pimpl.h>

#include "cells/cell.h"
#include "config/option_spec.h"

namespace cs {

enum class CRUFusion { Shallow, Deep, DeepEnhanced };
// f of eq. 8 (model.conv_activation).
enum class ConvActivation { Relu, Tanh, Identity };
constexpr EnumNames<ConvActivation, 3> enum_names(ConvActivation) {
  return {{{ConvActivation::Relu, "relu"}, {ConvActivation::Tanh, "tanh"}, {ConvActivation::Identity, "identity"}}};
}
// Window of eq. 8 around t (model.conv_window): Centered (the paper's same-length windows, for
// tasks that read the whole text) or Causal (e_{t-k+1..t}: what a language model may see; CRU_NOTES.md).
enum class ConvWindow { Centered, Causal };
constexpr EnumNames<ConvWindow, 2> enum_names(ConvWindow) {
  return {{{ConvWindow::Centered, "centered"}, {ConvWindow::Causal, "causal"}}};
}

// The members are the only defaults of the CRU cells' model.* options (cru_option_table()).
struct CRUOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  CRUFusion fusion = CRUFusion::DeepEnhanced;
  int64_t filter_length = 3;  // k (paper default 3; Fig. 3 sweeps 1..)
  int64_t conv_channels = 0;  // d; 0 = automatic (shallow: input size; deep: hidden; deep-enhanced: input size)
  ConvActivation conv_activation = ConvActivation::Relu;  // f of eq. 8
  bool reset_after = true;  // torch/cuDNN GRU: r * (U_n h + b_hn); false: U_n (r * h) as in eq. 3/11/14
  ConvWindow conv_window = ConvWindow::Centered;
};

// The CRU cells' model.* options (field table: schema entries and binding).
const OptionTable<CRUOptions>& cru_option_table();

// Same-length convolution over time: x [T, B, I], weight [C, k*I] (offset-major:
// column j*I + i multiplies x[t + j - left, :, i]), bias [C] -> [T, B, C].
// Padding: left = (k-1)/2 by default, right = k-1-left (for even k the extra position is on
// the right, i.e. the window of eq. 8 starts at t - left); left = k-1 is the causal window
// (nothing after t). Positions outside [0, T) are zero. One GEMM over the whole sequence.
inline int64_t same_conv_left_pad(int64_t k) { return (k - 1) / 2; }
torch::Tensor same_length_conv(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               int64_t k, int64_t left = -1);

class CRUCellImpl : public CellImpl {
 public:
  explicit CRUCellImpl(const CRUOptions& o);
  std::string type_name() const override;
  int64_t input_size() const override { return opt_.input_size; }
  int64_t hidden_size() const override { return opt_.hidden_size; }
  // [T,B,I] -> [T,B,3H] gate pre-activations (r, z, n order) from the convolutions.
  torch::Tensor input_projection(const torch::Tensor& x) override;
  State step(const torch::Tensor& xproj_t, const State& s, StepContext& ctx) override;
  SeqOutput forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) override;
  // The fast path with the convolutions folded into the embedding table (cells/token_fold.h).
  SeqOutput forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx) override;
  double flops_per_step() const override;
  const CRUOptions& options() const { return opt_; }
  int64_t channels() const { return channels_; }
  // The convolution outputs (after the activation) for a whole sequence: [T, B, n_conv * d]
  // (shallow: phi; deep/deep-enhanced: [phi_r, phi_z, phi]).
  torch::Tensor conv_outputs(const torch::Tensor& x);
  // The same for x = in.table[in.tokens]: each window's product folded into the table.
  torch::Tensor conv_outputs_tokens(const TokenInput& in);

  // Parameters. conv_w [n_conv*d, k*I], conv_b [n_conv*d] (n_conv = 1 for shallow, 3 otherwise,
  // gate order r, z, n). w_ih: shallow [3H, d], deep-enhanced [3, H, d] (W_r, W_z, W), deep: none.
  torch::Tensor conv_w, conv_b, w_ih, b_ih, w_hh, b_hh;
  // Dropout on the candidate activation (common option model.candidate_dropout).
  void set_candidate_dropout(double p) { candidate_dropout_ = p; }

 private:
  torch::Tensor project_convs(const torch::Tensor& x, const torch::Tensor& conv);
  torch::Tensor activate(const torch::Tensor& c) const;  // f of eq. 8
  int64_t conv_left_pad() const;                         // the window's left padding (conv_window)
  bool fast_ok(const torch::Tensor& x, const StepContext& ctx) const;
  CRUOptions opt_;
  int64_t channels_ = 0, n_conv_ = 1;
  double candidate_dropout_ = 0.0;
};

}  // namespace cs
