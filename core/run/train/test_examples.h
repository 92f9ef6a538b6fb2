// RUN_DIR/test_examples.json: the per-example results of a run's final test evaluation (issue #51
// item 1), so that a paired comparison of two runs can test the difference against the test set's
// own sampling error (a paired bootstrap over test examples, sweep/significance.h), not only against
// the spread over seeds. Written by the trainer after it scores the best checkpoint on test, for
// the tasks whose metric is a mean over examples (char_lm: lines, word_lm: sentences, classify and
// absa: examples, cloze: questions) and for seq2seq, whose BLEU is a corpus statistic, each sentence
// pair's BLEU statistics (so that a resample's BLEU is computed from its sums) and ROUGE F1 (whose mean
// is the corpus ROUGE). Notes: core/run/sweep/SWEEP_NOTES.md, "Significance".
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cs {

struct SequenceScores;

struct TestExamples {
  std::string metric;          // the task's primary metric: "bpc" | "ppl" | "accuracy" | "bleu"
  std::string unit;            // what an example is: "line", "sentence", "example", "question", "sentence pair"
  std::vector<double> sums;    // per example: NLL in nats (LMs) or 1 / 0 (correct / wrong); empty for bleu
  std::vector<int64_t> units;  // per example: the characters / tokens scored (LMs), 1 (classifiers)
  // bleu (seq2seq) only. Per sentence pair, sacreBLEU's segment statistics (data/text_metrics.h,
  // BleuSegmentStats) flattened: [hypothesis length, closest reference length, correct_1..4,
  // total_1..4], scored with the default BleuOptions as the task scores (bleu_signature below).
  std::vector<std::vector<int64_t>> bleu;
  std::string bleu_signature, rouge_signature;
  // Metrics that are the mean of a per-example score, by name: for seq2seq "rouge1", "rouge2" and
  // "rougeL", each pair's F1 x 100 (rouge-score's corpus figure is their mean).
  std::map<std::string, std::vector<double>> means;

  // The number of examples.
  size_t count() const { return metric == "bleu" ? bleu.size() : sums.size(); }
  // The metric recomputed from the examples (bpc: sum / units / ln 2; ppl: exp(sum / units);
  // accuracy: the mean; bleu: BLEU of the summed statistics), to check against the run's test metric.
  double metric_value() const;
  // Per-example scores whose mean over the examples is the metric's per-unit quantity (loss in
  // nats per character or token, or accuracy): sums[i] / (total units / N). The paired bootstrap
  // resamples these with the normalisation fixed (a ratio estimator's usual approximation).
  std::vector<double> scores() const;
  // Per-example scores whose mean is the test metric `name` ("rouge1": the means entry; the primary
  // metric when it is a mean over examples: scores()); nullopt when the file cannot give them (bleu,
  // a corpus statistic: bleu_stats_of).
  std::optional<std::vector<double>> mean_scores(const std::string& name) const;
};

// BLEU (0..100, the default BleuOptions) of the summed statistics of `bleu` rows, each row as
// TestExamples::bleu holds it; `weights[i]` times row i (a bootstrap resample's multiplicities).
double bleu_of_rows(const std::vector<std::vector<int64_t>>& rows, const std::vector<int>* weights = nullptr);

// Whether `value`, a metric recomputed from stored examples, is the recorded `evaluated` figure exactly
// (to 1e-6 relative): what a seq2seq file's BLEU must be to be written.
inline bool same_metric(double value, double evaluated) {
  return std::abs(value - evaluated) <= 1e-6 * std::max(1.0, std::abs(evaluated));
}

// The file's name in a run directory.
constexpr const char* kTestExamplesFile = "test_examples.json";

// `scores` of a task's test split as the file holds it (seq2seq: from each pair's hypothesis and
// reference); nullopt for a metric it cannot hold.
std::optional<TestExamples> test_examples_of(const SequenceScores& scores);
// Written atomically into run_dir.
void write_test_examples(const std::string& run_dir, const TestExamples& e);
// RUN_DIR's file; nullopt when it has none (runs from before it, seq2seq runs before 2026-12-05 unless
// `decode RUN --test-examples` wrote it, runs without a test split); a file that cannot be read or is inconsistent is a
// UserError naming it.
std::optional<TestExamples> read_test_examples(const std::string& run_dir);

}  // namespace cs
