// SentenceTask's inspection methods (tasks/task.h): the text tokenised with the run's
// rules, the model probed on one sentence or on the first sentences of a split,
// examples scored for accuracy by length, and class probabilities (CRU paper Table 5).
#include <algorithm>
#include <limits>

#include "data/tokenizer.h"
#include "tasks/classify.h"
#include "util/error.h"

namespace cs {

EncodedText SentenceTask::encode_text(const std::string& text) const {
  // the run's tokenizer rules; a word the vocabulary lacks is tried lower-cased (runs
  // with dataset.lowercase = true only hold lower-case words), lower-cased by the run's tokenizer
  EncodedText e;
  TokenizerOptions to = sentence_tokenizer_options(sentence_option_table(absa_).read(cfg_));
  to.lowercase = false;
  for (auto& t : tokenize(text, to)) {
    int32_t id = vocab_.id(t);
    std::string shown = t;
    if (id == Vocab::kUnkId) {
      std::string l = lowercase_word(t, to.rules, to.locale);
      id = vocab_.id(l);
      shown = l;
    }
    e.ids.push_back(id);
    e.tokens.push_back(id == Vocab::kUnkId ? std::string(Vocab::kUnk) : shown);
  }
  return e;
}

SentenceBatch SentenceTask::batch_of(const std::vector<std::vector<int32_t>>& seqs) const {
  Split sp;
  std::vector<int64_t> idx;
  for (size_t i = 0; i < seqs.size(); ++i) {
    sp.tokens.push_back(seqs[i].empty() ? std::vector<int32_t>{0} : seqs[i]);
    sp.aspect.push_back({0});
    sp.labels.push_back(0);
    sp.hard.push_back(0);
    idx.push_back(static_cast<int64_t>(i));
  }
  return make_batch(sp, idx);
}

void SentenceTask::probe_sequence(const std::vector<int32_t>& ids, Probe& probe) {
  StepContext ctx;
  ctx.probe = &probe;
  ctx.stepwise = true;
  EvalScope es(*model_);
  model_->forward(batch_of({ids}), ctx);
}

bool SentenceTask::probe_split_sentences(const std::string& name, int64_t max, Probe& probe) {
  if (name != "train" && name != "valid" && name != "test") return false;
  const auto& sp = split(name);
  const auto n = static_cast<long>(std::min<size_t>(static_cast<size_t>(std::max<int64_t>(max, 0)), sp.tokens.size()));
  std::vector<std::vector<int32_t>> seqs(sp.tokens.begin(), sp.tokens.begin() + n);
  if (seqs.empty()) throw UserError("split '" + name + "' is empty");
  StepContext ctx;
  ctx.probe = &probe;
  ctx.stepwise = true;
  EvalScope es(*model_);
  model_->forward(batch_of(seqs), ctx);
  return true;
}

std::string SentenceTask::split_text(const std::string& name, int64_t max_tokens) const {
  const auto& sp = split(name);
  if (sp.tokens.empty()) return "";
  std::string t;
  for (size_t i = 0; i < sp.tokens[0].size() && static_cast<int64_t>(i) < max_tokens; ++i)
    t += (i ? " " : "") + vocab_.symbol(sp.tokens[0][i]);
  return t;
}

std::string SentenceTask::default_analysis_text() const {
  return split_text(has_split("valid") ? "valid" : "test", std::numeric_limits<int64_t>::max());
}

SequenceScores SentenceTask::sequence_scores(const std::string& name) {
  // MC-RNN paper Fig. 4 / CRU: accuracy per sentence length (tokens)
  if (!has_split(name)) throw UserError("this run has no '" + name + "' split");
  const auto& sp = split(name);
  SequenceScores out;
  out.metric = "accuracy";
  out.length_unit = "tokens";
  EvalScope es(*model_);
  const int64_t n = static_cast<int64_t>(sp.tokens.size());
  for (int64_t i0 = 0; i0 < n; i0 += 64) {
    std::vector<int64_t> idx;
    for (int64_t i = i0; i < std::min(n, i0 + 64); ++i) idx.push_back(i);
    auto b = make_batch(sp, idx);
    StepContext ctx;
    auto logits = model_->forward(b, ctx);
    auto pred = logits.size(1) == 1 ? (logits.squeeze(1) > 0).to(torch::kInt64) : logits.argmax(1);
    auto pa = pred.contiguous();
    for (size_t j = 0; j < idx.size(); ++j) {
      const auto ex = static_cast<size_t>(idx[j]);
      ScoredSequence s;
      s.length = static_cast<int64_t>(sp.tokens[ex].size());
      s.units = 1;
      s.sum = pa[static_cast<int64_t>(j)].item<int64_t>() == sp.labels[ex] ? 1.0 : 0.0;
      out.sequences.push_back(s);
    }
  }
  return out;
}

torch::Tensor SentenceTask::class_probabilities(const std::vector<std::vector<int32_t>>& seqs) {
  EvalScope es(*model_);
  StepContext ctx;
  auto logits = model_->forward(batch_of(seqs), ctx).to(torch::kFloat64);
  if (logits.size(1) == 1) {
    auto p1 = torch::sigmoid(logits.squeeze(1));
    return torch::stack({1 - p1, p1}, 1);
  }
  return torch::softmax(logits, 1);
}

std::string SentenceTask::cell_name() const { return cfg_.at("model").at("cell").get<std::string>(); }

}  // namespace cs
