// The decode API of seq2seq runs (used by `cellscope-cli decode` and the Decode tab): decode a split of a trained
// run with greedy or beam search and score it (BLEU, ROUGE, and the lead baseline).
// Declared here beside the task; defined in the inspect layer
// (core/inspect/analysis/seq2seq_decode_run.cpp), which loads the run's checkpoint, so callers
// link cellscope_core (the CLI, the GUI, the tests).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace cs {
struct DecodeOptions {
  std::string split = "valid";      // "train" | "valid" | "test"
  std::string checkpoint = "best";  // "best" | "last" | "step_N"
  int64_t max_examples = 20;        // the first N examples of the split (0 = all)
  int64_t beam = 10;                // 1 = greedy
  double length_penalty = 1.0;      // alpha of the length normalisation
  int64_t max_length = 0;           // 0 = the task's default
};
struct DecodeSample {
  std::string source, reference, hypothesis;
  double score = 0;
};
struct DecodeReport {
  std::vector<DecodeSample> samples;
  std::map<std::string, double> metrics;  // "bleu", "rouge1", "rouge2", "rougeL", and "lead_bleu", "lead_rouge1"...
  int64_t step = 0;                       // the checkpoint's training step
};
// Decodes the split with the run's model. `progress(done, total)` after each example; returning false
// cancels (decode_run then throws cs::Cancelled, declared here). Throws UserError on a run that is not seq2seq.
struct Cancelled : std::runtime_error {
  using std::runtime_error::runtime_error;
};
DecodeReport decode_run(const std::string& run_dir, const DecodeOptions& o,
                        const std::function<bool(int64_t, int64_t)>& progress = {});
}  // namespace cs
