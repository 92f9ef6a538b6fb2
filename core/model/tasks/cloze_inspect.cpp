// The cloze task's inspection: every question scored (the CLI's `cloze scores`), accuracy
// by document length (analysis `length`) and one question's AoA weights (analysis `aoa`).
#include <algorithm>

#include "tasks/cloze.h"
#include "tasks/eval_scope.h"
#include "util/error.h"

namespace cs {

std::vector<ClozeScore> ClozeTask::score_split(const std::string& split) {
  const auto& its = items(split);
  const auto& exs = examples(split);
  std::vector<ClozeScore> out(its.size());
  EvalScope es(*model_);
  const int64_t N = static_cast<int64_t>(its.size());
  for (int64_t p = 0; p < N; p += o_.eval_batch) {
    std::vector<const ClozeItem*> bi;
    const int64_t end = std::min(N, p + o_.eval_batch);
    for (int64_t k = p; k < end; ++k) bi.push_back(&its[static_cast<size_t>(k)]);
    auto b = make_cloze_batch(bi, kPad, device_);
    StepContext ctx;
    auto prob = model_->forward(b, ctx).prob.to(torch::kCPU).to(torch::kFloat64).contiguous();
    auto pa = prob.accessor<double, 2>();
    for (int64_t k = p; k < end; ++k) {
      ClozeScore& s = out[static_cast<size_t>(k)];
      const ClozeItem& it = its[static_cast<size_t>(k)];
      s.example = &exs[static_cast<size_t>(k)];
      s.answer = it.answer;
      for (size_t c = 0; c < it.cand_pos.size(); ++c) s.prob.push_back(pa[k - p][static_cast<int64_t>(c)]);
      s.predicted = static_cast<int64_t>(std::max_element(s.prob.begin(), s.prob.end()) - s.prob.begin());
    }
  }
  return out;
}

SequenceScores ClozeTask::sequence_scores(const std::string& split) {
  SequenceScores r;
  r.metric = "accuracy";
  r.length_unit = "tokens";
  for (auto& s : score_split(split)) {
    ScoredSequence q;
    q.length = static_cast<int64_t>(s.example->document.size());
    q.units = 1;
    q.sum = s.predicted == s.answer ? 1.0 : 0.0;
    r.sequences.push_back(q);
  }
  return r;
}

ClozeAttention ClozeTask::cloze_attention(const std::string& split, int64_t index) {
  const auto& its = items(split);
  if (its.empty()) throw UserError("the " + split + " split has no question");
  if (index < 0 || index >= static_cast<int64_t>(its.size()))
    throw UserError("question " + std::to_string(index) + " out of range: the " + split + " split has " +
                    std::to_string(its.size()) + " questions (0.." + std::to_string(its.size() - 1) + ")");
  const ClozeItem& it = its[static_cast<size_t>(index)];
  const ClozeExample& e = examples(split)[static_cast<size_t>(index)];
  EvalScope es(*model_);
  auto b = make_cloze_batch({&it}, kPad, device_);
  StepContext ctx;
  auto out = model_->forward(b, ctx);
  auto cpu = [](const torch::Tensor& t) { return t.to(torch::kCPU).to(torch::kFloat64).contiguous(); };
  auto s = cpu(out.aoa.s[0]), alpha = cpu(out.aoa.alpha[0].mean(1)), beta = cpu(out.aoa.beta[0]),
       prob = cpu(out.prob[0]);
  auto vec = [](const torch::Tensor& t) {
    return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  };
  ClozeAttention a;
  a.document = e.document;
  a.query = e.query;
  a.candidates = e.candidates;
  a.answer = it.answer;
  a.s = vec(s);
  a.alpha_mean = vec(alpha);
  a.beta = vec(beta);
  a.prob = vec(prob);
  a.predicted = static_cast<int64_t>(std::max_element(a.prob.begin(), a.prob.end()) - a.prob.begin());
  a.source = e.source;
  return a;
}

}  // namespace cs
