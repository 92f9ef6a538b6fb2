// metrics.jsonl: one JSON object per logged step (training lines) or evaluation
// (lines with "eval": true and "split"). The one place that knows its format: the
// trainer writes it through MetricsRecord::to_json, the run store, the analyses and
// the workbench read it with read_metrics.
#pragma once
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "config/schema.h"

namespace cs {

// One metrics.jsonl line as a plain struct.
struct MetricsRecord {
  int64_t step = 0;
  double epoch = 0;
  bool eval = false;
  std::string split;   // for eval lines: "valid" or "test"
  double elapsed = 0;  // wall-clock seconds of training so far (pauses excluded, resumes summed)
  // When the line was written: seconds since the Unix epoch (system clock), the wall time of
  // the TensorBoard point (train/TENSORBOARD_NOTES.md). NaN when unknown (files written before
  // the field existed); written as "wall_time" only when known.
  double wall_time = std::numeric_limits<double>::quiet_NaN();
  bool has_wall_time() const { return std::isfinite(wall_time); }
  // Cumulative training FLOPs up to this step (3 x the analytic forward FLOPs of every step,
  // train/TRAIN_NOTES.md "Training FLOPs"); NaN when unknown: files written before the field
  // existed, or a run resumed from a checkpoint without it. Written as "train_flops" only
  // when known.
  double train_flops = std::numeric_limits<double>::quiet_NaN();
  bool has_train_flops() const { return std::isfinite(train_flops); }
  std::map<std::string, double> values;  // loss, bpc, lr, grad_norm, throughput, ... (null -> NaN)
  // Text facts of an evaluation line, written as JSON strings beside the values, e.g. seq2seq's
  // "decode": "beam 5, lp 1" (which decode made its BLEU/ROUGE). Readers of numbers skip them.
  std::map<std::string, std::string> labels;
  json to_json() const;
  static MetricsRecord from_json(const json& j);
};

// Every JSON line of a .jsonl file, in order; a missing file gives an empty vector. Empty lines
// are skipped, and so is an unparseable LAST line (the torn line of a killed run). An
// unparseable line before the last is a damaged file: UserError "<path>:<line>: malformed line
// (...)".
std::vector<json> read_json_lines(const std::string& path);
// The records of a metrics.jsonl file (same rules; a line that is not an object, or has a field
// of the wrong type, is an error naming <path>:<line> as well).
std::vector<MetricsRecord> read_metrics(const std::string& path);
// The same without throwing, for live views: the records before the first malformed line, and
// its message in `problem` ("" when the file is sound).
std::vector<MetricsRecord> read_metrics(const std::string& path, std::string* problem);
// The lines of a metrics.jsonl file as JSON objects, each one checked as read_metrics checks it
// (UserError "<path>:<line>: ..." for a line that is not an object or has a field of the wrong
// type): what a resume trims and rewrites, never read through unchecked access.
std::vector<json> read_metrics_lines(const std::string& path);

}  // namespace cs
