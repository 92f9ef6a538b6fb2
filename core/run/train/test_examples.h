// RUN_DIR/test_examples.json: the per-example results of a run's final test evaluation (issue #51
// item 1), so that a paired comparison of two runs can test the difference against the test set's
// own sampling error (a paired bootstrap over test examples, sweep/significance.h), not only against
// the spread over seeds. Written by the trainer after it scores the best checkpoint on test, for
// the tasks whose metric is a mean over examples (char_lm: lines, word_lm: sentences, classify and
// absa: examples, cloze: questions; not seq2seq, whose BLEU is a corpus statistic). Notes:
// core/run/sweep/SWEEP_NOTES.md, "Significance".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cs {

struct SequenceScores;

struct TestExamples {
  std::string metric;          // the task's primary metric: "bpc" | "ppl" | "accuracy"
  std::string unit;            // what an example is: "line", "sentence", "example", "question"
  std::vector<double> sums;    // per example: NLL in nats (LMs) or 1 / 0 (correct / wrong)
  std::vector<int64_t> units;  // per example: the characters / tokens scored (LMs), 1 (classifiers)

  // The metric recomputed from the examples (bpc: sum / units / ln 2; ppl: exp(sum / units);
  // accuracy: the mean), to check against summary.json's test metric.
  double metric_value() const;
  // Per-example scores whose mean over the examples is the metric's per-unit quantity (loss in
  // nats per character or token, or accuracy): sums[i] / (total units / N). The paired bootstrap
  // resamples these with the normalisation fixed (a ratio estimator's usual approximation).
  std::vector<double> scores() const;
};

// The file's name in a run directory.
constexpr const char* kTestExamplesFile = "test_examples.json";

// `scores` of a task's test split as the file holds it; nullopt for a metric that is not a mean
// over examples (seq2seq's BLEU).
std::optional<TestExamples> test_examples_of(const SequenceScores& scores);
// Written atomically into run_dir.
void write_test_examples(const std::string& run_dir, const TestExamples& e);
// RUN_DIR's file; nullopt when it has none (runs from before it, seq2seq runs, runs without a test
// split); a file that cannot be read or is inconsistent is a UserError naming it.
std::optional<TestExamples> read_test_examples(const std::string& run_dir);

}  // namespace cs
