#include "tasks/seq2seq_model.h"

#include <torch/nn/functional.h>

#include "cells/bidirectional.h"
#include "config/common_options.h"
#include "config/option_spec.h"
#include "tasks/seq2seq.h"
#include "util/error.h"

namespace cs {

namespace F = torch::nn::functional;

Seq2SeqModelImpl::Seq2SeqModelImpl(const json& m, int64_t source_vocab, int64_t target_vocab, int64_t pad)
    : pad_id(pad) {
  const ModelOptions mo = read_model_options(m);
  dropout = mo.dropout;
  src_embed = register_module(
      "src_embed", torch::nn::Embedding(torch::nn::EmbeddingOptions(source_vocab, mo.embed).padding_idx(pad)));
  tgt_embed = register_module(
      "tgt_embed", torch::nn::Embedding(torch::nn::EmbeddingOptions(target_vocab, mo.embed).padding_idx(pad)));
  {
    torch::NoGradGuard ng;
    src_embed->weight.uniform_(-0.1, 0.1);
    tgt_embed->weight.uniform_(-0.1, 0.1);
    src_embed->weight[pad].zero_();
    tgt_embed->weight[pad].zero_();
  }
  rnnsearch = enum_from_json<Seq2SeqArchitecture>(m.value("architecture", json("luong")), "model.architecture") ==
              Seq2SeqArchitecture::Rnnsearch;
  bridge_output_only =
      enum_from_json<Seq2SeqBridge>(m.value("bridge", json("recurrence")), "model.bridge") == Seq2SeqBridge::Output;
  encoder = register_module("encoder", CellStack(m, mo.embed));
  if (!rnnsearch) {
    decoder = register_module("decoder", CellStack(m, mo.embed));
    const int64_t he = encoder->output_size(), hd = decoder->output_size();
    attn_w = register_module("attn_w", torch::nn::Linear(torch::nn::LinearOptions(hd, he).bias(false)));
    combine = register_module("combine", torch::nn::Linear(torch::nn::LinearOptions(he + hd, hd).bias(false)));
    out = register_module("out", torch::nn::Linear(hd, target_vocab));
  } else {
    encoder_bwd = register_module("encoder_bwd", CellStack(m, mo.embed));
    const int64_t he = encoder->output_size() + encoder_bwd->output_size();  // h_j = [→h_j; ←h_j]
    decoder = register_module("decoder", CellStack(m, mo.embed + he));       // input [E y_{i-1}; c_i]
    const int64_t hd = decoder->output_size(), A = hd;
    int64_t bridged = 0;  // every layer's output state gets its own W_s^l (rows of `bridge`)
    {
      torch::NoGradGuard ng;
      const auto s0 = decoder->initial_state(1, torch::TensorOptions());
      for (size_t l = 0; l < s0.size(); ++l) {
        const int64_t H = decoder->layers[l]->hidden_size();
        if (s0[l].empty() || s0[l][0].dim() != 2 || s0[l][0].size(1) != H)
          throw UserError("model.architecture rnnsearch: the state of cell '" + mo.cell +
                          "' does not start with its output [B, hidden]; use model.architecture luong");
        bridged += H;
      }
    }
    attn_w = register_module("attn_w", torch::nn::Linear(torch::nn::LinearOptions(hd, A).bias(false)));
    attn_u = register_module("attn_u", torch::nn::Linear(torch::nn::LinearOptions(he, A).bias(false)));
    attn_v = register_module("attn_v", torch::nn::Linear(torch::nn::LinearOptions(A, 1).bias(false)));
    bridge = register_module("bridge", torch::nn::Linear(encoder_bwd->output_size(), bridged));
    combine = register_module("combine", torch::nn::Linear(hd + mo.embed + he, 2 * hd));  // maxout: 2 pieces
    out = register_module("out", torch::nn::Linear(hd, target_vocab));
  }
  copy = m.value("copy", false);
  if (copy) {
    TORCH_CHECK(source_vocab == target_vocab,
                "model.copy needs one vocabulary for both sides (dataset.shared_vocab): source ", source_vocab,
                " vs target ", target_vocab, " pieces");
    const int64_t he = rnnsearch ? attn_u->weight.size(1) : encoder->output_size();
    copy_gate = register_module("copy_gate", torch::nn::Linear(he + decoder->output_size() + mo.embed, 1));
  }
}

Seq2SeqEncoded Seq2SeqEncoded::repeat_rows(int64_t k) const {
  TORCH_CHECK(memory.size(0) == 1, "Seq2SeqEncoded::repeat_rows: expected batch 1, got ", memory.size(0));
  Seq2SeqEncoded e{memory.expand({k, -1, -1}), mask.expand({k, -1}), src.expand({k, -1}), {}, {}};
  if (keys.defined()) e.keys = keys.expand({k, -1, -1});
  if (first_backward.defined()) e.first_backward = first_backward.expand({k, -1});
  return e;
}

Seq2SeqEncoded Seq2SeqModelImpl::encode(const torch::Tensor& src, const torch::Tensor& lengths, StepContext& ctx) {
  auto x = F::dropout(src_embed(src), F::DropoutFuncOptions().p(dropout).training(is_training()));
  auto st = encoder->initial_state(src.size(1), x.options());
  auto h = encoder->forward(x, st, ctx);  // [S, B, H]; with rnnsearch →h_j
  Seq2SeqEncoded e;
  auto pos = torch::arange(src.size(0), lengths.options()).unsqueeze(0);  // [1, S]
  e.mask = pos < lengths.unsqueeze(1);                                    // [B, S]
  e.src = src.transpose(0, 1);                                            // [B, S]
  if (!rnnsearch) {
    e.memory = h.transpose(0, 1);  // [B, S, H]
    return e;
  }
  // The backward direction: each source reversed within its length, so the backward stack reads
  // x_{len}, ..., x_1 first and the padding after (never seen by a real position); reversed back,
  // position j holds ←h_j. Its own context without the probe: the encoder analyses show the
  // forward direction (a second stack would append to the same series); its loss terms and
  // metrics join ctx's.
  const auto len = lengths.to(x.device(), torch::kInt64);
  StepContext bctx;
  bctx.step = ctx.step;
  bctx.loss_units = ctx.loss_units;
  bctx.stepwise = ctx.stepwise;
  bctx.token_mask = ctx.token_mask;  // real positions stay first after the reversal: the same mask
  auto sb = encoder_bwd->initial_state(src.size(1), x.options());
  auto hb = reverse_padded(encoder_bwd->forward(reverse_padded(x, len), sb, bctx), len);  // [S, B, H] ←h_j
  if (bctx.extra_loss.defined()) ctx.add_loss(bctx.extra_loss);
  for (auto& [k, v] : bctx.metrics) ctx.add_metric("bwd/" + k, v.first, v.second);
  ctx.fast_path_calls += bctx.fast_path_calls;
  ctx.folded_flops += bctx.folded_flops;
  auto real = length_mask(len, src.size(0), h.options());      // [S, B, 1]
  e.memory = (torch::cat({h, hb}, 2) * real).transpose(0, 1);  // h_j = [→h_j; ←h_j], [B, S, 2H], 0 at padding
  e.keys = attn_u(e.memory);                                   // U_a h_j [B, S, A], once per source
  e.first_backward = hb[0];                                    // ←h_1 [B, H]
  return e;
}

std::vector<State> Seq2SeqModelImpl::decoder_initial_state(const Seq2SeqEncoded& enc) {
  auto st = decoder->initial_state(enc.memory.size(0), enc.memory.options());
  if (!rnnsearch) return st;  // luong: zero state, the source reaches the decoder through attention only
  // Bahdanau's s_0 = tanh(W_s ←h_1), one W_s^l per layer, as each layer's output before the first step
  // (model.bridge = recurrence: the h_0 of GRU/LSTM/RNN/MZU, and for an MC-RNN every h_t^k with t <= 0 and ĥ_0;
  // output: state[0] only, as runs written before the option); LSTM c and MC-RNN's position stay zero
  // (SEQ2SEQ_NOTES.md "Initial decoder state").
  auto s0 = torch::tanh(bridge(enc.first_backward));
  int64_t off = 0;
  for (size_t l = 0; l < st.size(); ++l) {
    const int64_t H = decoder->layers[l]->hidden_size();
    const auto h0 = s0.narrow(1, off, H);
    if (bridge_output_only) st[l][0] = h0;
    else st[l] = decoder->layers[l]->with_previous_output(std::move(st[l]), h0);
    off += H;
  }
  return st;
}

torch::Tensor Seq2SeqModelImpl::additive_attention(const torch::Tensor& s_prev, const Seq2SeqEncoded& enc,
                                                   torch::Tensor* alpha) {
  // e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j)                                     [B, S]
  auto e = attn_v(torch::tanh(attn_w(s_prev).unsqueeze(1) + enc.keys)).squeeze(2);
  // α_ij = exp(e_ij) / Σ_k exp(e_ik) over the real source positions k
  auto a = torch::softmax(e.masked_fill(enc.mask.logical_not(), -std::numeric_limits<float>::infinity()), -1);
  if (alpha) *alpha = a;
  // c_i = Σ_j α_ij h_j                                                           [B, He]
  return torch::bmm(a.unsqueeze(1), enc.memory).squeeze(1);
}

torch::Tensor Seq2SeqModelImpl::attend(const torch::Tensor& h, const Seq2SeqEncoded& enc, torch::Tensor* attention,
                                       torch::Tensor* context) {
  auto q = attn_w(h).transpose(0, 1);                       // [B, T, He]
  auto scores = torch::bmm(q, enc.memory.transpose(1, 2));  // [B, T, S]
  scores = scores.masked_fill(enc.mask.logical_not().unsqueeze(1), -std::numeric_limits<float>::infinity());
  auto a = torch::softmax(scores, -1);                 // [B, T, S]
  auto c = torch::bmm(a, enc.memory).transpose(0, 1);  // [T, B, He]
  if (attention) *attention = a.transpose(0, 1);       // [T, B, S]
  if (context) *context = c;
  return torch::tanh(combine(torch::cat({c, h}, -1)));
}

torch::Tensor Seq2SeqModelImpl::decode(const torch::Tensor& y_in, const Seq2SeqEncoded& enc, std::vector<State>& states,
                                       StepContext& ctx, torch::Tensor* attention) {
  auto x = F::dropout(tgt_embed(y_in), F::DropoutFuncOptions().p(dropout).training(is_training()));
  torch::Tensor h, ht, a, c;  // decoder outputs, pre-output, attention weights, contexts (all [T, B, ...])
  if (!rnnsearch) {
    h = decoder->forward(x, states, ctx);
    ht = attend(h, enc, &a, &c);
  } else {
    // Token by token: c_i depends on s_{i-1}. unbind(0), never x[t] (backward stays O(T)).
    const auto xs = x.unbind(0);
    const torch::Tensor full_mask = ctx.token_mask;
    const auto masks = full_mask.defined() ? full_mask.unbind(0) : std::vector<torch::Tensor>{};
    std::vector<torch::Tensor> ss, cs, as;
    for (size_t i = 0; i < xs.size(); ++i) {
      const auto s_prev = decoder->layers.back()->output_of(states.back());  // s_{i-1} (top layer) [B, Hd]
      torch::Tensor ai;
      auto ci = additive_attention(s_prev, enc, &ai);                   // c_i [B, He], α_i [B, S]
      if (full_mask.defined()) ctx.token_mask = masks[i].unsqueeze(0);  // this step's [1, B]
      // s_i = f(s_{i-1}, [E y_{i-1}; c_i])
      auto si = decoder->forward(torch::cat({xs[i], ci}, -1).unsqueeze(0), states, ctx).squeeze(0);
      ss.push_back(si);
      cs.push_back(ci);
      as.push_back(ai);
    }
    ctx.token_mask = full_mask;
    h = torch::stack(ss);  // s_i [T, B, Hd]
    c = torch::stack(cs);  // c_i [T, B, He]
    a = torch::stack(as);  // α_i [T, B, S]
    // t_i = maxout_2(W_t [s_i; E y_{i-1}; c_i] + b_t): the max over pairs of the 2 Hd pre-activations
    auto pre = combine(torch::cat({h, x, c}, -1));
    ht = std::get<0>(pre.view({pre.size(0), pre.size(1), -1, 2}).max(-1));
  }
  if (attention) *attention = a;
  ht = F::dropout(ht, F::DropoutFuncOptions().p(dropout).training(is_training()));
  auto logits = out(ht);  // W_o h̃_t + b_o (luong), W_o t_i + b_o (rnnsearch)
  if (!copy) return logits;
  // See et al. (2017) eq. 8: p_gen from the context, the decoder state and the decoder input;
  // eq. 9: the mixture of the vocabulary distribution and the attention scattered onto the
  // source ids (padded positions have a_ts = 0). Returned as log P (clamped at 1e-12).
  auto p_gen = torch::sigmoid(copy_gate(torch::cat({c, h, x}, -1)));  // [T, B, 1]
  const int64_t T = a.size(0), B = a.size(1), S = a.size(2);
  auto p_copy = torch::zeros_like(logits).scatter_add(2, enc.src.unsqueeze(0).expand({T, B, S}), a);
  return (p_gen * torch::softmax(logits, -1) + (1 - p_gen) * p_copy).clamp_min(1e-12).log();
}

double Seq2SeqModelImpl::encoder_flops_per_token() const {
  if (!rnnsearch) return encoder->flops_per_step();
  const double He = static_cast<double>(attn_u->weight.size(1)), A = static_cast<double>(attn_u->weight.size(0));
  return encoder->flops_per_step() + encoder_bwd->flops_per_step() + 2.0 * He * A;  // both directions, U_a h_j
}

double Seq2SeqModelImpl::decoder_flops_per_token(int64_t S) const {
  const double Hd = static_cast<double>(decoder->output_size()), V = static_cast<double>(out->weight.size(0));
  const double Sd = static_cast<double>(S);
  // model.copy: the gate's dot product, the mixture and the scatter (about 3 per vocabulary entry)
  const double gate = copy ? 2.0 * static_cast<double>(copy_gate->weight.size(1)) + 3.0 * V : 0.0;
  if (rnnsearch) {
    const double He = static_cast<double>(attn_u->weight.size(1)), A = static_cast<double>(attn_u->weight.size(0));
    // W_a s, v_aᵀ tanh(.) over S, the context, W_t [s; y; c] (2 Hd rows), W_o t
    return decoder->flops_per_step() +
           2.0 * (Hd * A + Sd * A + Sd * He + static_cast<double>(combine->weight.numel()) + Hd * V) + gate;
  }
  const double He = static_cast<double>(encoder->output_size());
  return decoder->flops_per_step() + 2.0 * (Hd * He + 2.0 * He * Sd + (He + Hd) * Hd + Hd * V) + gate;
}

}  // namespace cs
