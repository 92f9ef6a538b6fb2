#include "tasks/seq2seq_model.h"

#include <torch/nn/functional.h>

#include "config/common_options.h"

namespace cs {

namespace F = torch::nn::functional;

Seq2SeqModelImpl::Seq2SeqModelImpl(const json& m, int64_t source_vocab, int64_t target_vocab, int64_t pad) : pad_id(pad) {
  const ModelOptions mo = read_model_options(m);
  dropout = mo.dropout;
  src_embed = register_module("src_embed", torch::nn::Embedding(torch::nn::EmbeddingOptions(source_vocab, mo.embed).padding_idx(pad)));
  tgt_embed = register_module("tgt_embed", torch::nn::Embedding(torch::nn::EmbeddingOptions(target_vocab, mo.embed).padding_idx(pad)));
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
}

Seq2SeqEncoded Seq2SeqModelImpl::encode(const torch::Tensor& src, const torch::Tensor& lengths, StepContext& ctx) {
  auto x = F::dropout(src_embed(src), F::DropoutFuncOptions().p(dropout).training(is_training()));
  auto st = encoder->initial_state(src.size(1), x.options());
  auto h = encoder->forward(x, st, ctx);  // [S, B, H]
  Seq2SeqEncoded e;
  e.memory = h.transpose(0, 1);  // [B, S, H]
  auto pos = torch::arange(src.size(0), lengths.options()).unsqueeze(0);  // [1, S]
  e.mask = pos < lengths.unsqueeze(1);                                    // [B, S]
  return e;
}

std::vector<State> Seq2SeqModelImpl::decoder_initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  return decoder->initial_state(batch, opts);
}

torch::Tensor Seq2SeqModelImpl::attend(const torch::Tensor& h, const Seq2SeqEncoded& enc, torch::Tensor* attention) {
  auto q = attn_w(h).transpose(0, 1);                          // [B, T, He]
  auto scores = torch::bmm(q, enc.memory.transpose(1, 2));     // [B, T, S]
  scores = scores.masked_fill(enc.mask.logical_not().unsqueeze(1), -std::numeric_limits<float>::infinity());
  auto a = torch::softmax(scores, -1);                         // [B, T, S]
  auto c = torch::bmm(a, enc.memory).transpose(0, 1);          // [T, B, He]
  if (attention) *attention = a.transpose(0, 1);               // [T, B, S]
  return torch::tanh(combine(torch::cat({c, h}, -1)));
}

torch::Tensor Seq2SeqModelImpl::decode(const torch::Tensor& y_in, const Seq2SeqEncoded& enc, std::vector<State>& states,
                                       StepContext& ctx, torch::Tensor* attention) {
  auto x = F::dropout(tgt_embed(y_in), F::DropoutFuncOptions().p(dropout).training(is_training()));
  auto h = decoder->forward(x, states, ctx);
  auto ht = attend(h, enc, attention);
  ht = F::dropout(ht, F::DropoutFuncOptions().p(dropout).training(is_training()));
  return out(ht);
}

double Seq2SeqModelImpl::decoder_flops_per_token(int64_t S) const {
  const double He = static_cast<double>(encoder->output_size()), Hd = static_cast<double>(decoder->output_size());
  const double V = static_cast<double>(out->weight.size(0));
  return decoder->flops_per_step() + 2.0 * (Hd * He + 2.0 * He * static_cast<double>(S) + (He + Hd) * Hd + Hd * V);
}

}  // namespace cs
