// A tiny char_lm run for the checkpoint and run-directory targets: a GRU with embed 8 and
// hidden 16 on a 2,000-character fixture corpus (tests/core/fixture_text.h), so that loading
// a checkpoint into it costs milliseconds.
#pragma once
#include <string>
#include "config/json.h"

namespace csfuzz {

// The corpus file (written into the scratch directory on first use).
const std::string& tiny_corpus();
// The raw (unresolved) config of the tiny run.
cs::json tiny_config();
// Train the tiny run for 3 steps with a checkpoint every step into `run_dir` (a new
// directory): config.json, vocab, metrics.jsonl, summary.json, checkpoints/. For seeds.
void train_tiny_run(const std::string& run_dir);

}  // namespace csfuzz
