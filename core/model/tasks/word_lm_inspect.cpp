// WordLMTask's inspection methods (tasks/task.h): the text as words of the run's
// vocabulary, the model probed from a zero state, sentences scored for perplexity by
// length (MC-RNN paper Fig. 4), and the model stepped for generation.
#include <algorithm>
#include <memory>

#include "data/tokenizer.h"
#include "data/word_corpus.h"
#include "tasks/word_lm.h"
#include "tasks/task_common.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace {
const std::vector<int32_t>& word_split_ids(const WordCorpus& c, const std::string& split) {
  return split_named(split, c.train, c.valid, c.test);
}

// A seed text tokenised as the corpus was (word_corpus.cpp): PTB = whitespace-separated
// words, a line end = <eos>; plain text = word_text_tokens with the run's dataset.tokenizer,
// dataset.lowercase and dataset.eos (paragraph, line or none: "none" adds no <eos> at all).
std::vector<std::string> word_seed_tokens(const std::string& text, const WordLMOptions& ds, DatasetFormat format) {
  if (format != DatasetFormat::PtbWord)
    return word_text_tokens(text, word_tokenizer_options(ds.tokenizer, ds.lowercase, ds.locale), ds.eos,
                            /*seed=*/true);
  std::vector<std::string> out;
  const auto lines = split_lines(text);
  const bool ended = !text.empty() && text.back() == '\n';
  for (size_t i = 0; i < lines.size(); ++i) {
    for (auto& w : split_ascii_words(lines[i])) out.push_back(std::move(w));
    if (i + 1 < lines.size() || ended) out.push_back("<eos>");
  }
  return out;
}
}  // namespace

EncodedText WordLMTask::encode_text(const std::string& text) const {
  // The text tokenised as the corpus was (word_seed_tokens: the run's dataset.tokenizer, lowercase
  // and eos), so "The whale," reads as the, whale, "," and not as two unknown words. A vocabulary
  // symbol written whole between blanks (<eos>, <unk>: how default_analysis_text() and the views
  // show them) stays that symbol instead of being split at its brackets.
  const WordLMOptions ds = word_lm_option_table().read(cfg_);
  std::vector<std::string> toks;
  std::string seg;
  auto flush = [&] {
    for (auto& t : word_seed_tokens(seg, ds, corpus_.format)) toks.push_back(std::move(t));
    seg.clear();
  };
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  for (size_t i = 0; i < text.size();) {
    size_t j = i;
    while (j < text.size() && !blank(text[j])) ++j;
    const std::string word = text.substr(i, j - i);
    if (word == "<eos>" || word == Vocab::kUnk) {
      flush();
      toks.push_back(word);
    } else {
      seg += word;
    }
    size_t k = j;
    while (k < text.size() && blank(text[k])) ++k;
    seg += text.substr(j, k - j);
    i = k;
  }
  flush();
  EncodedText e;
  for (auto& t : toks) {
    const int32_t id = corpus_.vocab.id(t);
    e.ids.push_back(id);
    e.tokens.push_back(id == Vocab::kUnkId ? std::string(Vocab::kUnk) : t);
  }
  return e;
}

void WordLMTask::probe_sequence(const std::vector<int32_t>& ids, Probe& probe) {
  StepContext ctx;
  ctx.probe = &probe;
  ctx.stepwise = true;
  auto x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).view({-1, 1});
  EvalScope es(*model_);
  auto states = model_->initial_state(1, torch::TensorOptions());
  model_->forward(x, states, ctx);
}

std::string WordLMTask::split_text(const std::string& split, int64_t max_tokens) const {
  const auto& v = word_split_ids(corpus_, split);
  std::string t;
  for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < max_tokens; ++i)
    t += (i ? " " : "") + corpus_.vocab.symbol(v[i]);
  return t;
}

std::string WordLMTask::default_analysis_text() const { return split_text("valid", 30); }

SequenceScores WordLMTask::sequence_scores(const std::string& split) {
  // MC-RNN paper Fig. 4 (language model): sentences = the tokens up to and including each
  // <eos>, keyed by their word count (without <eos>); every token of the span is scored.
  const auto& ids = word_split_ids(corpus_, split);
  // streams of 70 tokens, 10 in parallel (the stream layout changes only the carried state)
  std::vector<float> per;
  {
    EvalScope es(*model_);
    nll_of(ids, 10, nullptr, &per);
  }
  const int32_t eos = corpus_.vocab.id("<eos>");
  SequenceScores out;
  out.metric = "ppl";
  out.length_unit = "tokens";
  size_t start = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != eos) continue;
    const size_t b = std::max<size_t>(start, 1);  // position 0 has no prediction
    const int64_t words = static_cast<int64_t>(i - start);
    if (words > 0) {
      ScoredSequence s;
      s.length = words;
      s.units = static_cast<int64_t>(i + 1 - b);
      for (size_t j = b; j <= i; ++j) s.sum += per[j];
      out.sequences.push_back(s);
    }
    start = i + 1;
  }
  return out;
}

std::string WordLMTask::cell_name() const { return cfg_.at("model").at("cell").get<std::string>(); }

TokenStepper WordLMTask::token_stepper(const std::string& seed_text) {
  TokenStepper v;
  v.vocab = &corpus_.vocab;
  auto net = model_;
  auto states =
      std::make_shared<std::vector<State>>(net->initial_state(1, torch::TensorOptions().dtype(torch::kFloat32)));
  v.forward = [net, states](const torch::Tensor& x) mutable {
    StepContext ctx;
    return net->forward(x, *states, ctx);
  };
  v.seed_symbols = word_seed_tokens(seed_text, word_lm_option_table().read(cfg_), corpus_.format);
  v.start_symbol = "<eos>";
  v.words = true;
  return v;
}

}  // namespace cs
