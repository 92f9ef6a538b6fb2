// What the analyses (core/inspect/analysis) and generation (tasks/generate.cpp) read from a
// trained task through Task's inspection methods (tasks/task.h), so that neither
// needs the concrete task class. Plain types; the methods are implemented in
// tasks/<task>_inspect.cpp.
#pragma once
#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tasks/eval_scope.h"  // EvalScope, used with the inspection methods

namespace cs {

class Vocab;

// A text as the task's model reads it.
struct EncodedText {
  std::vector<int32_t> ids;         // in the task's vocabulary
  std::vector<std::string> tokens;  // as read: characters, words; "<unk>" for a word the vocabulary lacks
};

// One sequence of a split, scored once (metric by sequence length).
struct ScoredSequence {
  int64_t length = 0;  // what the buckets are keyed by: characters of a line, words of a sentence, tokens
  int64_t units = 0;   // what the metric averages over: scored characters / tokens (LMs), 1 (classifiers)
  double sum = 0;      // NLL in nats (LMs) or 1 for a correct prediction (classifiers)
  // seq2seq (metric "bleu", a corpus statistic: BLEU of each bucket's pairs together): the decode and its reference
  std::string hypothesis, reference;
};
struct SequenceScores {
  std::string metric;       // "bpc" | "ppl" | "accuracy" | "bleu"
  std::string length_unit;  // "characters" | "tokens" | "words"
  std::vector<ScoredSequence> sequences;
};

// A language model stepped token by token from a zero state, batch 1 (generation).
struct TokenStepper {
  const Vocab* vocab = nullptr;
  bool words = false;                     // word-level: tokens joined by spaces, <eos> a line break
  std::string start_symbol;               // fed first when there is no seed ("\n", "<eos>")
  std::vector<std::string> seed_symbols;  // the seed text tokenised as the run's corpus is
  // ids [T, 1] -> logits [T, 1, V]; the recurrent state is carried from call to call.
  std::function<torch::Tensor(const torch::Tensor&)> forward;
};

}  // namespace cs
