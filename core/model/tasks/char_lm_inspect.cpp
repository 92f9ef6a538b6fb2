// CharLMTask's inspection methods (tasks/task.h): the text as characters of the run's
// vocabulary, the model probed from a zero state, lines scored for BPC by length
// (MZU paper Fig. 2), and the model stepped for generation.
#include <memory>

#include "data/utf8.h"
#include "tasks/char_lm.h"
#include "tasks/task_common.h"
#include "util/error.h"

namespace cs {

namespace {
const std::vector<int32_t>& char_split_ids(const CharCorpus& c, const std::string& split) {
  return split_named(split, c.train, c.valid, c.test);
}
}  // namespace

EncodedText CharLMTask::encode_text(const std::string& text) const {
  EncodedText e;
  for (auto& s : utf8_symbols(text)) {
    e.ids.push_back(corpus_.vocab.id(s));
    e.tokens.push_back(s);
  }
  return e;
}

void CharLMTask::probe_sequence(const std::vector<int32_t>& ids, Probe& probe) {
  StepContext ctx;
  ctx.probe = &probe;
  ctx.stepwise = true;
  auto x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).view({-1, 1});
  EvalScope es(*model_);
  auto states = model_->stack->initial_state(1, torch::TensorOptions());
  model_->forward(x, states, ctx);
}

std::string CharLMTask::split_text(const std::string& split, int64_t max_tokens) const {
  const auto& v = char_split_ids(corpus_, split);
  std::string t;
  for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < max_tokens; ++i) t += corpus_.vocab.symbol(v[i]);
  return t;
}

std::string CharLMTask::default_analysis_text() const { return split_text("valid", 120); }

SequenceScores CharLMTask::sequence_scores(const std::string& split) {
  // MZU paper Fig. 2: the split evaluated once (state carried), its lines (newline
  // excluded) scored by their characters' NLL.
  const auto& ids = char_split_ids(corpus_, split);
  std::vector<float> per_pos;
  {
    EvalScope es(*model_);
    nll_of(ids, eval_batch_, &per_pos);
  }
  auto spans = line_spans(ids, corpus_.vocab.id("\n"));
  // position 0 of the split has no prediction: drop it from the first span
  if (!spans.empty() && spans[0].first == 0) spans[0].first = 1;
  SequenceScores out;
  out.metric = "bpc";
  out.length_unit = "characters";
  for (auto [b, e] : spans) {
    ScoredSequence s;
    s.length = s.units = static_cast<int64_t>(e - b);
    for (size_t i = b; i < e; ++i) s.sum += per_pos[i];
    out.sequences.push_back(s);
  }
  return out;
}

std::string CharLMTask::cell_name() const { return cfg_.at("model").at("cell").get<std::string>(); }

TokenStepper CharLMTask::token_stepper(const std::string& seed_text) {
  TokenStepper v;
  v.vocab = &corpus_.vocab;
  auto net = model_;
  auto states =
      std::make_shared<std::vector<State>>(net->stack->initial_state(1, torch::TensorOptions().dtype(torch::kFloat32)));
  v.forward = [net, states](const torch::Tensor& x) mutable {
    StepContext ctx;
    return net->forward(x, *states, ctx);
  };
  v.seed_symbols = utf8_symbols(seed_text);
  v.start_symbol = "\n";
  return v;
}

}  // namespace cs
