#include "tasks/seq2seq_model.h"

#include <torch/nn/functional.h>

#include "config/common_options.h"

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
  encoder = register_module("encoder", CellStack(m, mo.embed));
  decoder = register_module("decoder", CellStack(m, mo.embed));
  const int64_t He = encoder->output_size(), Hd = decoder->output_size();
  attn_w = register_module("attn_w", torch::nn::Linear(torch::nn::LinearOptions(Hd, He).bias(false)));
  combine = register_module("combine", torch::nn::Linear(torch::nn::LinearOptions(He + Hd, Hd).bias(false)));
  out = register_module("out", torch::nn::Linear(Hd, target_vocab));
  copy = m.value("copy", false);
  if (copy) {
    TORCH_CHECK(source_vocab == target_vocab,
                "model.copy needs one vocabulary for both sides (dataset.shared_vocab): source ", source_vocab,
                " vs target ", target_vocab, " pieces");
    copy_gate = register_module("copy_gate", torch::nn::Linear(He + Hd + mo.embed, 1));
  }
}

Seq2SeqEncoded Seq2SeqModelImpl::encode(const torch::Tensor& src, const torch::Tensor& lengths, StepContext& ctx) {
  auto x = F::dropout(src_embed(src), F::DropoutFuncOptions().p(dropout).training(is_training()));
  auto st = encoder->initial_state(src.size(1), x.options());
  auto h = encoder->forward(x, st, ctx);  // [S, B, H]
  Seq2SeqEncoded e;
  e.memory = h.transpose(0, 1);  // [B, S, H]
  auto pos = torch::arange(src.size(0), lengths.options()).unsqueeze(0);  // [1, S]
  e.mask = pos < lengths.unsqueeze(1);                                    // [B, S]
  e.src = src.transpose(0, 1);                                            // [B, S]
  return e;
}

std::vector<State> Seq2SeqModelImpl::decoder_initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  return decoder->initial_state(batch, opts);
}

torch::Tensor Seq2SeqModelImpl::attend(const torch::Tensor& h, const Seq2SeqEncoded& enc, torch::Tensor* attention,
                                       torch::Tensor* context) {
  auto q = attn_w(h).transpose(0, 1);                          // [B, T, He]
  auto scores = torch::bmm(q, enc.memory.transpose(1, 2));     // [B, T, S]
  scores = scores.masked_fill(enc.mask.logical_not().unsqueeze(1), -std::numeric_limits<float>::infinity());
  auto a = torch::softmax(scores, -1);                         // [B, T, S]
  auto c = torch::bmm(a, enc.memory).transpose(0, 1);          // [T, B, He]
  if (attention) *attention = a.transpose(0, 1);               // [T, B, S]
  if (context) *context = c;
  return torch::tanh(combine(torch::cat({c, h}, -1)));
}

torch::Tensor Seq2SeqModelImpl::decode(const torch::Tensor& y_in, const Seq2SeqEncoded& enc, std::vector<State>& states,
                                       StepContext& ctx, torch::Tensor* attention) {
  auto x = F::dropout(tgt_embed(y_in), F::DropoutFuncOptions().p(dropout).training(is_training()));
  auto h = decoder->forward(x, states, ctx);
  torch::Tensor a, c;
  auto ht = attend(h, enc, copy ? &a : attention, copy ? &c : nullptr);
  if (copy && attention) *attention = a;
  ht = F::dropout(ht, F::DropoutFuncOptions().p(dropout).training(is_training()));
  auto logits = out(ht);
  if (!copy) return logits;
  // See et al. (2017) eq. 8: p_gen from the context, the decoder state and the decoder input;
  // eq. 9: the mixture of the vocabulary distribution and the attention scattered onto the
  // source ids (padded positions have a_ts = 0). Returned as log P (clamped at 1e-12).
  auto p_gen = torch::sigmoid(copy_gate(torch::cat({c, h, x}, -1)));  // [T, B, 1]
  const int64_t T = a.size(0), B = a.size(1), S = a.size(2);
  auto p_copy = torch::zeros_like(logits).scatter_add(2, enc.src.unsqueeze(0).expand({T, B, S}), a);
  return (p_gen * torch::softmax(logits, -1) + (1 - p_gen) * p_copy).clamp_min(1e-12).log();
}

double Seq2SeqModelImpl::decoder_flops_per_token(int64_t S) const {
  const double He = static_cast<double>(encoder->output_size()), Hd = static_cast<double>(decoder->output_size());
  const double V = static_cast<double>(out->weight.size(0));
  // model.copy: the gate's dot product, the mixture and the scatter (about 3 per vocabulary entry)
  const double gate = copy ? 2.0 * static_cast<double>(copy_gate->weight.size(1)) + 3.0 * V : 0.0;
  return decoder->flops_per_step() + 2.0 * (Hd * He + 2.0 * He * static_cast<double>(S) + (He + Hd) * Hd + Hd * V) +
         gate;
}

}  // namespace cs
