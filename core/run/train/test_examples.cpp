// RUN_DIR/test_examples.json (test_examples.h).
#include "train/test_examples.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "config/json.h"
#include "tasks/inspect.h"
#include "util/error.h"

namespace cs {

double TestExamples::metric_value() const {
  const double sum = std::accumulate(sums.begin(), sums.end(), 0.0);
  const double n = static_cast<double>(std::accumulate(units.begin(), units.end(), int64_t{0}));
  if (n <= 0) return std::numeric_limits<double>::quiet_NaN();
  if (metric == "bpc") return sum / n / std::log(2.0);
  if (metric == "ppl") return std::exp(sum / n);
  return sum / n;  // accuracy
}

std::vector<double> TestExamples::scores() const {
  const double total = static_cast<double>(std::accumulate(units.begin(), units.end(), int64_t{0}));
  const double per_example = sums.empty() ? 1.0 : total / static_cast<double>(sums.size());
  std::vector<double> out(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) out[i] = sums[i] / per_example;
  return out;
}

std::optional<TestExamples> test_examples_of(const SequenceScores& s) {
  if (s.metric != "bpc" && s.metric != "ppl" && s.metric != "accuracy") return std::nullopt;
  TestExamples e;
  e.metric = s.metric;
  e.unit = s.metric == "bpc" ? "line" : s.metric == "ppl" ? "sentence" : "example";
  for (const auto& q : s.sequences) {
    if (q.units <= 0) continue;  // an empty line scores nothing
    e.sums.push_back(q.sum);
    e.units.push_back(q.units);
  }
  return e;
}

void write_test_examples(const std::string& run_dir, const TestExamples& e) {
  json j = {{"metric", e.metric},        {"unit", e.unit}, {"count", e.sums.size()},
            {"value", e.metric_value()}, {"sums", e.sums}, {"units", e.units}};
  atomic_write(join_path(run_dir, kTestExamplesFile), j.dump() + "\n");
}

std::optional<TestExamples> read_test_examples(const std::string& run_dir) {
  const std::string p = join_path(run_dir, kTestExamplesFile);
  if (!file_exists(p)) return std::nullopt;
  try {
    const json j = parse_json(read_file(p), p);
    TestExamples e;
    e.metric = j.at("metric").get<std::string>();
    e.unit = j.at("unit").get<std::string>();
    e.sums = j.at("sums").get<std::vector<double>>();
    e.units = j.at("units").get<std::vector<int64_t>>();
    if (e.sums.size() != e.units.size() || e.sums.empty())
      throw UserError("'" + p + "': " + std::to_string(e.sums.size()) + " sums but " + std::to_string(e.units.size()) +
                      " unit counts (expected the same number, at least 1)");
    return e;
  } catch (const json::exception& ex) {
    throw UserError("'" + p + "' is not a valid test-examples file: " + json_error_text(ex));
  }
}

}  // namespace cs
