// metrics.jsonl: one JSON object per logged step (training lines) or evaluation
// (lines with "eval": true and "split"). The one place that knows its format: the
// trainer writes it through MetricsRecord::to_json, the run store, the analyses and
// the workbench read it with read_metrics.
#pragma once
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
  std::string split;  // for eval lines: "valid" or "test"
  double elapsed = 0;
  std::map<std::string, double> values;  // loss, bpc, lr, grad_norm, throughput, ... (null -> NaN)
  json to_json() const;
  static MetricsRecord from_json(const json& j);
};

// Every JSON line of a .jsonl file, in order. Empty and unparseable lines (the torn
// last line of a killed run) are skipped; a missing file gives an empty vector.
std::vector<json> read_json_lines(const std::string& path);
// The records of a metrics.jsonl file (same tolerance).
std::vector<MetricsRecord> read_metrics(const std::string& path);

}  // namespace cs
