// Task::export_reference of each task (tasks/task.h): the reference batch an export for plain PyTorch carries
// (reference.pt, run/export/torch_export.h), so that cellscope_torch.check() can hold the Python model to
// this model's logits and loss. The names are the ones packaging/python/cellscope_torch reads.
#include <torch/nn/functional.h>

#include <algorithm>

#include "tasks/classify.h"
#include "tasks/cloze.h"
#include "tasks/eval_scope.h"
#include "tasks/seq2seq.h"
#include "tasks/stream_lm.h"
#include "util/error.h"

namespace cs {

namespace {

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

// The examples of a reference batch of the sentence, cloze and seq2seq tasks: min(eval_batch, N) of the valid
// split's N, spread evenly over it (its first and its last among them), in the split's order. The split is
// ordered by length, so its first examples alone had one length and no padding, and check() never exercised
// a padded batch; spread, they span the split's lengths.
std::vector<int64_t> reference_indices(int64_t eval_batch, int64_t N) {
  const int64_t n = std::min<int64_t>(eval_batch, N);
  if (n < 1) throw UserError("the valid split is empty: no reference batch");
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = n == 1 ? 0 : (i * (N - 1) + (n - 1) / 2) / (n - 1);
  return idx;  // strictly increasing: (N - 1) / (n - 1) >= 1
}

}  // namespace

// The run's first validation batch of a stream LM, as stream_nll scores it first: B streams
// (min(eval_batch, (N-1)/bptt)), the first segment of min(bptt, n) inputs, zero state, eval mode.
Named StreamLMTask::export_reference() {
  const std::vector<int32_t>& ids = valid_tokens();
  const int64_t N = static_cast<int64_t>(ids.size());
  if (N < 2) throw UserError("the valid split is empty: no reference batch");
  const int64_t B = std::max<int64_t>(1, std::min<int64_t>(eval_batch_, (N - 1) / std::max<int64_t>(bptt_, 1)));
  const int64_t n = (N - 1) / B;
  const int64_t l = std::min(bptt_, n);
  auto all = torch::from_blob(const_cast<int32_t*>(ids.data()), {N}, torch::kInt32).to(torch::kInt64);
  auto x = all.narrow(0, 0, B * n).view({B, n}).narrow(1, 0, l).t().contiguous().to(device_);
  auto y = all.narrow(0, 1, B * n).view({B, n}).narrow(1, 0, l).t().contiguous().to(device_);
  torch::NoGradGuard ng;
  EvalScope es(*model());
  auto st = stream_model().initial_state(B, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  StepContext ctx;
  auto logits = stream_model().forward(x, st, ctx);
  auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
  return {{"x", x},
          {"y", y},
          {"mask", torch::ones_like(x, torch::kFloat32)},
          {"logits", logits},
          {"loss", loss.to(torch::kFloat64)}};
}

// A validation batch of a sentence task (classify, absa): reference_indices' examples as one padded batch,
// as evaluate() batches them; the loss is the batch mean.
Named SentenceTask::export_reference() {
  const auto& s = split("valid");
  const SentenceBatch b = make_batch(s, reference_indices(eval_batch_, static_cast<int64_t>(s.labels.size())));
  auto& net = *model_;
  EvalScope es(net);
  StepContext ctx;
  auto logits = net.forward(b, ctx);
  torch::Tensor loss;
  if (net.binary) loss = torch::binary_cross_entropy_with_logits(logits.squeeze(1), b.labels.to(logits.dtype()));
  else loss = torch::nll_loss(torch::log_softmax(logits, 1), b.labels);
  const int64_t T = b.tokens.size(0);
  auto mask = (torch::arange(T, b.lengths.options()).unsqueeze(1) < b.lengths.unsqueeze(0)).to(torch::kFloat32);
  Named r = {{"x", b.tokens}, {"lengths", b.lengths}, {"y", b.labels},
             {"mask", mask},  {"logits", logits},     {"loss", loss.to(torch::kFloat64)}};
  if (b.aspect.defined()) {
    r.emplace_back("aspect", b.aspect);
    r.emplace_back("aspect_len", b.aspect_len);
  }
  return r;
}

// A validation batch of a cloze run: reference_indices' questions as one batch (make_cloze_batch); the scores
// are P(candidate | D, Q) [B, C], the loss the mean -log P(answer) (clamped at 1e-12, as evaluate() does).
Named ClozeTask::export_reference() {
  const auto& all = items("valid");
  std::vector<const ClozeItem*> its;
  for (int64_t i : reference_indices(o_.eval_batch, static_cast<int64_t>(all.size())))
    its.push_back(&all[static_cast<size_t>(i)]);
  const ClozeBatch b = make_cloze_batch(its, kPad, device_);
  auto& net = *model_;
  EvalScope es(net);
  StepContext ctx;
  auto prob = net.forward(b, ctx).prob;
  auto loss = -torch::log(prob.gather(1, b.answer.unsqueeze(1)).squeeze(1).clamp_min(1e-12)).mean();
  return {{"doc", b.doc},
          {"doc_len", b.doc_len},
          {"query", b.query},
          {"query_len", b.query_len},
          {"features", b.features},
          {"cand_mask", b.cand_mask},
          {"cand_valid", b.cand_valid.to(torch::kFloat32)},
          {"y", b.answer},
          {"logits", prob},
          {"loss", loss.to(torch::kFloat64)}};
}

// A validation batch of a seq2seq run: reference_indices' pairs of the valid split
// (make_batch: src [S, B], src_len, y_in = <s> y, y_out = y </s>, y_mask), teacher-forced; the logits are the
// decoder's output ([T, B, V]; log P of the mixture with model.copy) and the loss the mean NLL of the real target
// tokens, as batch_nll sums it.
Named Seq2SeqTask::export_reference() {
  const auto& ex = examples("valid");
  std::vector<const Example*> ptrs;
  for (int64_t i : reference_indices(o_.eval_batch, static_cast<int64_t>(ex.size())))
    ptrs.push_back(&ex[static_cast<size_t>(i)]);
  const auto b = make_batch(ptrs);
  auto& net = *model_;
  EvalScope es(net);
  StepContext ctx;
  auto enc = net.encode(b.src, b.src_len, ctx);
  auto st = net.decoder_initial_state(enc);
  auto logits = net.decode(b.y_in, enc, st, ctx);
  auto nll =
      torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), b.y_out.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  auto loss = (nll * b.y_mask.reshape({-1})).sum() / b.y_mask.sum();
  return {{"src", b.src},
          {"src_len", b.src_len},
          {"x", b.y_in},
          {"y", b.y_out},
          {"mask", b.y_mask},
          {"logits", logits},
          {"loss", loss.to(torch::kFloat64)}};
}

}  // namespace cs
