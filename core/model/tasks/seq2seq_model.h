// The encoder-decoder with attention of the seq2seq task (tasks/SEQ2SEQ_NOTES.md). Two
// architectures, `model.architecture`:
//
// luong (the default for configs without the key, i.e. every run made before it existed):
//   encoder: source embedding -> CellStack (model.cell, model.layers), right-padded batch;
//            its outputs at the real positions are the attention memory h̄_s.
//   decoder: target embedding of the previous token -> CellStack (the same cell and options,
//            zero initial state), then Luong et al. (2015) global attention, "general" score:
//              score(h_t, h̄_s) = h_tᵀ W_a h̄_s,  a_t = softmax_s(score) over the real source positions,
//              c_t = Σ_s a_ts h̄_s,  h̃_t = tanh(W_c [c_t; h_t]),  p(y_t | y_<t, x) = softmax(W_o h̃_t + b_o).
// rnnsearch (Bahdanau et al. 2015, the MC-RNN paper's Baseline-RNN; the paper presets and sweeps):
//   encoder: a forward CellStack over the source and a backward CellStack over each source reversed
//            within its length (reverse_padded: the padding is read last, never first);
//            annotations h_j = [→h_j; ←h_j] (2H).
//   decoder: s_0^l = tanh(W_s^l ←h_1 + b_s^l) in each layer's output state; then per step i
//              e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j),  α_ij = softmax_j(e_ij) over the real positions,
//              c_i = Σ_j α_ij h_j,  s_i = f(s_{i-1}, [E y_{i-1}; c_i])      (the context in the input),
//              t_i = maxout_2(W_t [s_i; E y_{i-1}; c_i] + b_t),  p(y_i | y_<i, x) = softmax(W_o t_i + b_o),
//            with s_{i-1} the top decoder layer's output: the decoder steps token by token.
//   model.copy (off by default; not in the MC-RNN paper): the pointer-generator of See et al. (2017),
//            eqs. 8-9 there, with a shared vocabulary (h_t = s_i, c_t = c_i with rnnsearch):
//              p_gen = σ(w_c·c_t + w_h·h_t + w_x·x_t + b),
//              P(w) = p_gen softmax(W_o h̃_t + b_o)_w + (1 - p_gen) Σ_{s: x_s = w} a_ts,
//            and decode() returns log P(w) in place of the logits (a log-distribution is its own
//            log_softmax, so the loss, greedy and beam search take it unchanged).
// Padding: the encoder is causal and padded at the end (the backward one over the per-length
// reversal), so a sentence's real positions do not see its padding, and the attention masks the
// padded positions; the decoder's padded target positions are masked out of the loss by the task.
#pragma once
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "cells/stack.h"
#include "config/json.h"

namespace cs {

struct Seq2SeqEncoded {
  torch::Tensor memory;  // [B, S, H] encoder outputs
  torch::Tensor mask;    // [B, S] bool, true at real source positions
  torch::Tensor src;     // [B, S] int64 source ids (the copy distribution's targets)
  // rnnsearch only (undefined with luong):
  torch::Tensor keys;            // [B, S, A] U_a h_j, computed once per source
  torch::Tensor first_backward;  // [B, H] ←h_1: the backward encoder's top output at the first position
  // The same source repeated k times (one row per beam hypothesis); needs batch 1.
  Seq2SeqEncoded repeat_rows(int64_t k) const;
};

class Seq2SeqModelImpl : public torch::nn::Module {
 public:
  Seq2SeqModelImpl(const json& model, int64_t source_vocab, int64_t target_vocab, int64_t pad_id);
  // src [S, B] int64 padded with pad_id, lengths [B] int64.
  Seq2SeqEncoded encode(const torch::Tensor& src, const torch::Tensor& lengths, StepContext& ctx);
  // The decoder's state before <s>: zero (luong), or the bridge from ←h_1 (rnnsearch).
  std::vector<State> decoder_initial_state(const Seq2SeqEncoded& enc);
  // Decoder over target inputs y_in [T, B] (teacher forcing, or T = 1 per generation step),
  // `states` carried in/out. Returns logits [T, B, V]; `attention` (if given) gets a [T, B, S].
  torch::Tensor decode(const torch::Tensor& y_in, const Seq2SeqEncoded& enc, std::vector<State>& states,
                       StepContext& ctx, torch::Tensor* attention = nullptr);
  // rnnsearch's additive attention for one step: s_{i-1} [B, Hd] -> c_i [B, He] (weights α_i [B, S]).
  torch::Tensor additive_attention(const torch::Tensor& s_prev, const Seq2SeqEncoded& enc, torch::Tensor* alpha);
  // luong: the attention layer alone: decoder outputs h [T, B, H] -> h̃ [T, B, H] (weights [T, B, S]).
  // `context` (if given) gets c_t [T, B, He].
  torch::Tensor attend(const torch::Tensor& h, const Seq2SeqEncoded& enc, torch::Tensor* attention = nullptr,
                       torch::Tensor* context = nullptr);
  // Encoder + decoder recurrent FLOPs per token, and the attention + output per target token.
  double encoder_flops_per_token() const;
  double decoder_flops_per_token(int64_t source_len) const;

  torch::nn::Embedding src_embed{nullptr}, tgt_embed{nullptr};
  CellStack encoder{nullptr}, decoder{nullptr};
  CellStack encoder_bwd{nullptr};  // rnnsearch: the backward encoder
  // luong: attn_w = W_a [He <- Hd], combine = W_c. rnnsearch: attn_w = W_a [A <- Hd], attn_u = U_a
  // [A <- He], attn_v = v_a, bridge = W_s (all layers' W_s^l stacked), combine = W_t [2 Hd <- Hd + E + He].
  torch::nn::Linear attn_w{nullptr}, combine{nullptr}, out{nullptr};
  torch::nn::Linear attn_u{nullptr}, attn_v{nullptr}, bridge{nullptr};
  bool rnnsearch = false;
  bool bridge_output_only = false;       // model.bridge = output (runs written before it): s_0 into state[0] only
  torch::nn::Linear copy_gate{nullptr};  // model.copy: w_c, w_h, w_x, b of p_gen
  bool copy = false;
  double dropout = 0.0;
  int64_t pad_id = 0;
};
TORCH_MODULE(Seq2SeqModel);

}  // namespace cs
