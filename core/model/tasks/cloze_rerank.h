// The re-ranking step of the cloze readers (CRU paper Table 3 "+ Re-ranking", after Cui et
// al. 2017): the reader's candidate probabilities from `cellscope-cli cloze scores` (the cloze
// JSONL contract) are combined log-linearly with language-model scores of the query sentence
// with each candidate filled in: a Global LM (a Cellscope word_lm run), a Local LM (an n-gram
// LM of the document itself) and a Word-class LM (an n-gram LM over word classes, trained on
// training documents); the weights are tuned on valid by an exhaustive grid. Choices and
// their reasons: CLOZE_RERANK_NOTES.md.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config/json.h"
#include "tasks/inspect.h"

namespace cs {

class Task;
class WordNet;

// One question of the JSONL contract.
struct ClozeScored {
  std::vector<std::string> document;    // the context words
  std::vector<std::string> query;       // with exactly one "XXXXX"
  std::vector<std::string> candidates;  // >= 2, distinct
  std::vector<double> prob;             // the reader's probability of each candidate, in [0, 1]
  int64_t answer = 0;                   // index into candidates
  // The query with candidate c in the blank.
  std::vector<std::string> filled(size_t c) const;
};

// One JSON object per non-blank line. Any problem is ONE UserError "<source>:<line>: ..."
// naming the field (not an object, missing/mistyped field, no or several XXXXX, prob and
// candidates of different lengths, prob outside [0, 1], answer out of range). No questions
// at all is an error too.
std::vector<ClozeScored> parse_cloze_scores(const std::string& text, const std::string& source);
std::vector<ClozeScored> read_cloze_scores(const std::string& path);

// An n-gram LM with interpolated absolute discounting (Ney, Essen & Kneser 1994):
//   P1(w) = (c(w) + 1) / (N + V + 1)                      add-one unigram; an unseen word gets 1 / (N + V + 1)
//   Pk(w | h) = (max(c(h w) - D, 0) + D * N1+(h .) * P(k-1)(w | h')) / c(h .)   when c(h .) > 0
//   Pk(w | h) = P(k-1)(w | h')                            when the history h was never seen
// with N the training tokens (words and </s>), V their distinct types, h' = h without its
// first word, c(h .) the count of h as a history, N1+(h .) its distinct continuations.
// Sentences are scored as <s> w1 .. wn </s> (every word and </s> predicted; <s> only a history).
class NgramLM {
 public:
  explicit NgramLM(int order = 3, double discount = 0.75);
  void add_sentence(const std::vector<std::string>& words);
  // P(w | history): only the last order-1 words of `history` are used ("<s>" may start it).
  double prob(const std::vector<std::string>& history, const std::string& w) const;
  double sentence_logprob(const std::vector<std::string>& words) const;  // natural log
  int order() const { return order_; }

 private:
  double p(const std::vector<std::string>& ctx, size_t from, const std::string& w) const;
  int order_;
  double d_;
  int64_t tokens_ = 0;
  std::vector<std::unordered_map<std::string, int64_t>> ngram_;       // [k] joined k-gram -> count
  std::vector<std::unordered_map<std::string, int64_t>> hist_n_;      // [k] joined (k-1)-history -> c(h .)
  std::vector<std::unordered_map<std::string, int64_t>> hist_types_;  // [k] -> N1+(h .)
};

// The log-probability (natural log) that a language model stepped token by token gives the
// symbols: the stepper's start symbol is fed first and every symbol is predicted (a symbol
// outside the vocabulary counts as <unk>). The Global LM feature.
double stepper_logprob(const TokenStepper& v, const std::vector<std::string>& symbols);
// Global LM from a loaded word_lm run: the words joined by spaces, tokenised as the run's
// corpus (Task::token_stepper), scored by stepper_logprob from a zero state, no grad.
std::function<double(const std::vector<std::string>&)> task_lm_scorer(Task& task);

// Whether a Global LM has seen the questions it re-scores (CLOZE_RERANK_NOTES.md, "Test
// overlap"). Each question's query with its answer filled in (the book's own sentence) is
// tokenised as the LM reads text (`tokenize`, words outside the LM's vocabulary as <unk>), and
// its word kLmOverlapOrder-grams (those holding <unk> or <eos> left out) are looked up in the LM's
// training tokens. A question with at least kLmOverlapMinNgrams such n-grams is checked; it is
// found when at least half of them occur in the training tokens. The LM overlaps the split when
// at least kLmOverlapWarnFraction of the checked questions are found. Unseen text of the same
// book matches few 5-grams by chance (CLOZE_RERANK_NOTES.md has the measured fractions).
inline constexpr int kLmOverlapOrder = 5;
inline constexpr int kLmOverlapMinNgrams = 3;
inline constexpr double kLmOverlapWarnFraction = 0.05;
struct LmOverlap {
  int64_t questions = 0, checked = 0, found = 0;
  double fraction() const { return checked ? static_cast<double>(found) / static_cast<double>(checked) : 0.0; }
  bool overlaps() const { return found > 0 && fraction() >= kLmOverlapWarnFraction; }
  json to_json() const;
  // The warning for the LM run `lm` and `split` ("test"); "" when it does not overlap.
  std::string warning(const std::string& lm, const std::string& split) const;
};
LmOverlap lm_overlap(const std::vector<ClozeScored>& qs, const std::vector<std::string>& lm_train_tokens,
                     const std::function<std::vector<std::string>(const std::vector<std::string>&)>& tokenize);
// The training split of a loaded word_lm run as symbols (its corpus' train ids, <unk> for the
// words its vocabulary dropped), and its tokeniser of a word list (joined by spaces, tokenised
// as the run's corpus; symbols outside its vocabulary as <unk>). UserError for another task.
std::vector<std::string> lm_training_symbols(Task& task);
std::function<std::vector<std::string>(const std::vector<std::string>&)> task_lm_tokenizer(Task& task);

// The word classes of the Word-class LM (CLOZE_RERANK_NOTES.md): a word among the `frequent`
// ones (lower-cased) is its own class; punctuation is its own class; otherwise the WordNet
// lexicographer file of a common noun ("n05" = noun.animal), of a verb ("v38"), "adj",
// "adv", "Cap" (capitalised, not in WordNet), "w" (anything else).
class WordClasses {
 public:
  WordClasses(const WordNet* wn, std::unordered_set<std::string> frequent);
  std::string of(const std::string& word) const;
  // The `k` most frequent lower-cased words of `sentences` (ties: alphabetical).
  static std::unordered_set<std::string> most_frequent(const std::vector<std::vector<std::string>>& sentences,
                                                       int64_t k);

 private:
  const WordNet* wn_;
  std::unordered_set<std::string> frequent_;
};

struct RerankOptions {
  int order = 3;                 // n of the Local and Word-class LMs
  double discount = 0.75;        // D of the absolute discounting
  int64_t frequent_words = 100;  // words that are their own class in the Word-class LM
  // Candidate weights of each LM feature (the reader's log-probability has weight 1).
  std::vector<double> grid = {0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3};
};

// Per question, per candidate, per feature.
using FeatureTable = std::vector<std::vector<std::vector<double>>>;

// The models behind the features (rerank_cloze builds them). Features per candidate, in
// this order: "reader" = log max(p, 1e-12); "local_lm" = NgramLM(order, discount) trained on
// the lower-cased document, scoring the lower-cased filled-in query; "global_lm" = global_lm
// of the filled-in query (when set); "word_class_lm" = class_lm of the query's classes (when set).
struct RerankModels {
  int order = 3;
  double discount = 0.75;
  std::function<double(const std::vector<std::string>&)> global_lm;
  const WordClasses* classes = nullptr;
  const NgramLM* class_lm = nullptr;
  std::vector<std::string> feature_names() const;
};
FeatureTable rerank_features(const std::vector<ClozeScored>& qs, const RerankModels& m);

// Index of the best candidate of one question under `weights` (ties: the first).
int64_t rerank_choice(const std::vector<std::vector<double>>& cand_features, const std::vector<double>& weights);
double rerank_accuracy(const FeatureTable& f, const std::vector<int64_t>& answers, const std::vector<double>& weights);

struct TunedWeights {
  std::vector<double> weights;  // weights[0] = 1 (the reader)
  double accuracy = 0;          // on the tuning set
  int64_t evaluated = 0;        // grid points tried
};
// Exhaustive grid over weights[1..K-1] in `grid` (weights[0] fixed at 1): the point with the
// highest accuracy; ties go to the smallest sum of weights, then to the first in grid order.
// With 0 in the grid, the reader alone is a grid point, so the tuned accuracy is never below it.
TunedWeights tune_weights(const FeatureTable& f, const std::vector<int64_t>& answers, const std::vector<double>& grid);

struct RerankReport {
  std::vector<std::string> features;
  std::vector<double> weights;
  int64_t valid_questions = 0, test_questions = 0;
  double valid_before = 0, valid_after = 0, test_before = 0, test_after = 0;
  int64_t grid_points = 0;
  std::string class_lm_training;  // what the Word-class LM was trained on
  json to_json() const;
  std::string to_text() const;
};

// The whole step: features of valid and test, weights tuned on valid, accuracies before
// (the reader alone) and after. `global_lm` may be empty (no Global LM feature); `wn` null
// = no Word-class LM. The Word-class LM is trained on `train` (documents and filled-in
// queries) when it is non-empty, else on valid's documents (CLOZE_RERANK_NOTES.md).
RerankReport rerank_cloze(const std::vector<ClozeScored>& valid, const std::vector<ClozeScored>& test,
                          const std::vector<ClozeScored>& train, const WordNet* wn,
                          const std::function<double(const std::vector<std::string>&)>& global_lm,
                          const RerankOptions& o);

}  // namespace cs
