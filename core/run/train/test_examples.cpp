// RUN_DIR/test_examples.json (test_examples.h).
#include "train/test_examples.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "config/json.h"
#include "data/text_metrics.h"
#include "tasks/inspect.h"
#include "util/error.h"

namespace cs {

double bleu_of_rows(const std::vector<std::vector<int64_t>>& rows, const std::vector<int>* weights) {
  if (rows.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t width = rows.front().size();
  const size_t orders = width >= 4 ? (width - 2) / 2 : 0;
  std::vector<int64_t> correct(orders, 0), total(orders, 0);
  int64_t sys_len = 0, ref_len = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t w = weights ? (*weights)[i] : 1;
    if (w == 0) continue;
    const auto& r = rows[i];
    sys_len += w * r[0];
    ref_len += w * r[1];
    for (size_t n = 0; n < orders; ++n) {
      correct[n] += w * r[2 + n];
      total[n] += w * r[2 + orders + n];
    }
  }
  BleuOptions o;
  o.max_ngram_order = static_cast<int>(orders);
  return bleu_from_counts(correct, total, sys_len, ref_len, o).bleu;
}

double TestExamples::metric_value() const {
  if (metric == "bleu") return bleu_of_rows(bleu);
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

std::optional<std::vector<double>> TestExamples::mean_scores(const std::string& name) const {
  if (auto it = means.find(name); it != means.end()) return it->second;
  if (name == metric && metric != "bleu") return scores();
  return std::nullopt;
}

namespace {

// seq2seq: each pair's BLEU statistics and ROUGE F1, as the task's text_metrics score the split
// (the default BleuOptions and RougeOptions).
TestExamples seq2seq_test_examples(const SequenceScores& s) {
  TestExamples e;
  e.metric = "bleu";
  e.unit = "sentence pair";
  std::vector<std::string> hyps, refs;
  for (const auto& q : s.sequences) {
    hyps.push_back(q.hypothesis);
    refs.push_back(q.reference);
  }
  const BleuOptions bo;
  const RougeOptions ro;
  e.bleu_signature = bleu_signature(bo, 1);
  e.rouge_signature = rouge_signature(ro);
  for (const auto& st : bleu_segment_stats(hyps, {refs}, bo)) {
    std::vector<int64_t> row = {st.hypothesis_length, st.reference_length};
    row.insert(row.end(), st.correct.begin(), st.correct.end());
    row.insert(row.end(), st.total.begin(), st.total.end());
    e.bleu.push_back(std::move(row));
  }
  std::vector<double> r1, r2, rl;
  for (size_t i = 0; i < hyps.size(); ++i) {
    const RougePairScore p = rouge_pair(refs[i], hyps[i], ro);
    r1.push_back(100.0 * p.rouge1.f1);
    r2.push_back(100.0 * p.rouge2.f1);
    rl.push_back(100.0 * p.rougeL.f1);
  }
  e.means["rouge1"] = std::move(r1);
  e.means["rouge2"] = std::move(r2);
  e.means["rougeL"] = std::move(rl);
  return e;
}

}  // namespace

std::optional<TestExamples> test_examples_of(const SequenceScores& s) {
  if (s.metric == "bleu") {
    if (s.sequences.empty()) return std::nullopt;
    return seq2seq_test_examples(s);
  }
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
  json j = {{"metric", e.metric},        {"unit", e.unit}, {"count", e.count()},
            {"value", e.metric_value()}, {"sums", e.sums}, {"units", e.units}};
  if (e.metric == "bleu") {
    j["bleu"] = e.bleu;
    j["bleu_signature"] = e.bleu_signature;
    j["rouge_signature"] = e.rouge_signature;
  }
  if (!e.means.empty()) j["means"] = e.means;
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
    if (e.metric == "bleu") {
      e.bleu = j.at("bleu").get<std::vector<std::vector<int64_t>>>();
      e.bleu_signature = j.value("bleu_signature", "");
      e.rouge_signature = j.value("rouge_signature", "");
      if (e.bleu.empty()) throw UserError("'" + p + "': no sentence pairs (expected at least 1)");
      for (const auto& row : e.bleu)
        if (row.size() != e.bleu.front().size() || row.size() < 4 || row.size() % 2 != 0)
          throw UserError("'" + p + "': a pair's BLEU statistics have " + std::to_string(row.size()) +
                          " numbers (expected 2 + 2 x the n-gram order, the same for every pair)");
    } else if (e.sums.size() != e.units.size() || e.sums.empty()) {
      throw UserError("'" + p + "': " + std::to_string(e.sums.size()) + " sums but " + std::to_string(e.units.size()) +
                      " unit counts (expected the same number, at least 1)");
    }
    if (j.contains("means")) e.means = j.at("means").get<std::map<std::string, std::vector<double>>>();
    for (const auto& [name, v] : e.means)
      if (v.size() != e.count())
        throw UserError("'" + p + "': " + name + " has " + std::to_string(v.size()) + " scores for " +
                        std::to_string(e.count()) + " examples (expected one per example)");
    return e;
  } catch (const json::exception& ex) {
    throw UserError("'" + p + "' is not a valid test-examples file: " + json_error_text(ex));
  }
}

}  // namespace cs
