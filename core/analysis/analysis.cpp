#include "analysis/analysis.h"

#include <torch/nn/functional.h>

#include <cmath>
#include <sstream>

#include "cells/cell.h"
#include "tasks/char_lm.h"
#include "analysis/csv_text.h"
#include "util/error.h"

namespace cs {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

using analysis_text::num;
using analysis_text::csv_field;

// Run the model step-wise with a probe over `ids` (batch 1, eval mode, zero state).
Probe probe_text(CharLMTask& task, const std::vector<int32_t>& ids) {
  auto& net = task.net();
  const bool was_training = net->is_training();
  net->eval();
  torch::NoGradGuard ng;
  auto x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).view({-1, 1});
  auto states = net->stack->initial_state(1, torch::TensorOptions());
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  ctx.stepwise = true;
  net->forward(x, states, ctx);
  if (was_training) net->train();
  return probe;
}

std::vector<int32_t> encode(CharLMTask& task, const std::vector<std::string>& syms) {
  std::vector<int32_t> ids;
  ids.reserve(syms.size());
  for (auto& s : syms) ids.push_back(task.corpus().vocab.id(s));
  return ids;
}

std::string layer_prefix(CharLMTask& task, int layer) {
  const int n = static_cast<int>(task.net()->stack->layers.size());
  if (layer < 0) layer = n + layer;
  if (layer < 0 || layer >= n)
    throw UserError("layer " + std::to_string(layer) + " out of range (the model has " + std::to_string(n) + " layers)");
  return "l" + std::to_string(layer) + "/";
}

torch::Tensor series(const Probe& p, const std::string& key, const std::string& cell) {
  if (!p.has(key)) throw UserError("cell '" + cell + "' does not record '" + key + "' for this analysis");
  return p.stacked(key);
}

}  // namespace

json LabeledMatrix::to_json() const {
  json rowsj = json::array();
  for (int64_t r = 0; r < rows(); ++r) {
    json row = json::array();
    for (int64_t c = 0; c < cols(); ++c) row.push_back(std::isfinite(at(r, c)) ? json(at(r, c)) : json(nullptr));
    rowsj.push_back(row);
  }
  return {{"rows", row_labels}, {"columns", col_labels}, {"values", rowsj}, {"caption", caption}};
}

std::string LabeledMatrix::to_csv() const {
  std::string o = "row";
  for (auto& c : col_labels) o += "," + csv_field(c);
  o += "\n";
  for (int64_t r = 0; r < rows(); ++r) {
    o += csv_field(row_labels[static_cast<size_t>(r)]);
    for (int64_t c = 0; c < cols(); ++c) o += "," + num(at(r, c));
    o += "\n";
  }
  return o;
}

std::string display_symbol(const std::string& s) {
  if (s == " ") return "_";
  if (s == "\n") return "\u23CE";
  if (s == "\t") return "\u21E5";
  return s;
}

LabeledMatrix relevance_map(CharLMTask& task, const std::string& text, int64_t last_k, int layer) {
  auto syms = utf8_symbols(text);
  const int64_t T = static_cast<int64_t>(syms.size());
  if (T < 2) throw UserError("relevance needs a text of at least 2 characters");
  last_k = std::max<int64_t>(1, std::min(last_k, T));
  Probe p = probe_text(task, encode(task, syms));
  const std::string pre = layer_prefix(task, layer);
  const std::string cell = task.config()["model"].value("cell", "");
  // candidate activation h~_t and hidden state h_j of the same layer, [T, H]. Deep-transition
  // cells record once per depth and step: take the last depth (whose state is carried).
  auto per_step = [&](const std::string& key) {
    auto s = series(p, pre + key, cell);
    const int64_t D = s.size(0) / T;
    return s.reshape({T, D, -1}).select(1, D - 1).to(torch::kFloat64);
  };
  auto cand = torch::nn::functional::normalize(per_step("candidate"), torch::nn::functional::NormalizeFuncOptions().dim(1));
  auto hid = torch::nn::functional::normalize(per_step("h"), torch::nn::functional::NormalizeFuncOptions().dim(1));
  auto cos = torch::mm(cand.narrow(0, T - last_k, last_k), hid.t()).contiguous();  // [K, T]
  LabeledMatrix m;
  for (int64_t k = 0; k < last_k; ++k) m.row_labels.push_back(display_symbol(syms[static_cast<size_t>(T - last_k + k)]));
  for (auto& s : syms) m.col_labels.push_back(display_symbol(s));
  m.values.assign(static_cast<size_t>(last_k * T), kNaN);
  auto acc = cos.accessor<double, 2>();
  for (int64_t k = 0; k < last_k; ++k) {
    const int64_t t = T - last_k + k;
    for (int64_t j = 0; j < t; ++j) m.values[static_cast<size_t>(k * T + j)] = acc[k][j];
  }
  m.caption = "Relevance: cosine between the candidate activation at each of the last " + std::to_string(last_k) +
              " characters (rows) and the hidden state at every earlier character (columns); MZU paper Fig. 3.";
  return m;
}

LabeledMatrix zone_relevance(CharLMTask& task, const std::string& text, int64_t t, int layer) {
  auto syms = utf8_symbols(text);
  const int64_t T = static_cast<int64_t>(syms.size());
  if (T < 2) throw UserError("zone relevance needs a text of at least 2 characters");
  if (t < 0) t = T + t;
  if (t < 1 || t >= T) throw UserError("character index out of range");
  Probe p = probe_text(task, encode(task, syms));
  const std::string pre = layer_prefix(task, layer);
  auto zones = series(p, pre + "zones_h", task.config()["model"].value("cell", ""));  // [T, 1, N, dz]
  zones = zones.reshape({T, zones.size(-2), zones.size(-1)}).to(torch::kFloat64);
  const int64_t N = zones.size(1);
  auto zn = torch::nn::functional::normalize(zones, torch::nn::functional::NormalizeFuncOptions().dim(2));
  // cos(zone i at t, zone i at j): [N, T]
  auto cos = (zn.select(0, t).unsqueeze(0) * zn).sum(2).t().contiguous();
  LabeledMatrix m;
  for (int64_t i = 0; i < N; ++i) m.row_labels.push_back("zone " + std::to_string(i + 1));
  for (auto& s : syms) m.col_labels.push_back(display_symbol(s));
  m.values.assign(static_cast<size_t>(N * T), kNaN);
  auto acc = cos.accessor<double, 2>();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < t; ++j) m.values[static_cast<size_t>(i * T + j)] = acc[i][j];
  m.caption = "Zone-specific relevance of character " + std::to_string(t) + " ('" + display_symbol(syms[static_cast<size_t>(t)]) +
              "'): cosine between zone i of the candidate's M-function at that character and zone i at every earlier "
              "character (Cellscope's definition of MZU paper Fig. 3c).";
  return m;
}

std::vector<int64_t> default_length_edges() { return {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 120}; }

std::vector<LengthBucket> make_buckets(const std::vector<int64_t>& edges) {
  if (edges.size() < 2) throw UserError("length buckets need at least two edges");
  std::vector<LengthBucket> b;
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    if (edges[i + 1] <= edges[i]) throw UserError("length bucket edges must increase");
    LengthBucket k;
    k.lo = edges[i];
    k.hi = edges[i + 1];
    k.label = edges[i] % 10 == 0 ? std::to_string(edges[i] / 10) : "(" + std::to_string(edges[i]) + "," + std::to_string(edges[i + 1]) + "]";
    b.push_back(k);
  }
  return b;
}

void accumulate_buckets(const std::vector<float>& per_pos, const std::vector<std::pair<size_t, size_t>>& spans,
                        std::vector<LengthBucket>& buckets) {
  for (auto [b, e] : spans) {
    const int64_t len = static_cast<int64_t>(e - b);
    for (auto& k : buckets) {
      if (len > k.lo && len <= k.hi) {
        double s = 0;
        for (size_t i = b; i < e; ++i) s += per_pos[i];
        k.nll += s;
        k.chars += len;
        k.sequences += 1;
        break;
      }
    }
  }
}

std::vector<std::pair<size_t, size_t>> line_spans_of(const std::vector<int32_t>& ids, int32_t newline_id) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t start = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    if (i == ids.size() || ids[i] == newline_id) {
      if (i > start) out.emplace_back(start, i);
      start = i + 1;
    }
  }
  return out;
}

std::vector<LengthBucket> bpc_by_length(CharLMTask& task, const std::string& split, const std::vector<int64_t>& edges) {
  const auto& c = task.corpus();
  const std::vector<int32_t>* ids = split == "valid" ? &c.valid : split == "test" ? &c.test : split == "train" ? &c.train : nullptr;
  if (!ids) throw UserError("unknown split '" + split + "'");
  std::vector<float> per_pos;
  const bool was = task.net()->is_training();
  task.net()->eval();
  task.nll_of(*ids, task.config()["training"].value("eval_batch", 16), &per_pos);
  if (was) task.net()->train();
  auto spans = line_spans_of(*ids, c.vocab.id("\n"));
  // position 0 of the split has no prediction: drop it from the first span
  if (!spans.empty() && spans[0].first == 0) spans[0].first = 1;
  auto buckets = make_buckets(edges);
  accumulate_buckets(per_pos, spans, buckets);
  return buckets;
}

json buckets_to_json(const std::vector<LengthBucket>& b) {
  json a = json::array();
  for (auto& k : b)
    a.push_back({{"label", k.label}, {"lo", k.lo}, {"hi", k.hi}, {"sequences", k.sequences}, {"chars", k.chars},
                 {"bpc", std::isfinite(k.bpc()) ? json(k.bpc()) : json(nullptr)}});
  return a;
}

std::string buckets_to_csv(const std::vector<LengthBucket>& b) {
  std::string o = "bucket,lo,hi,sequences,chars,bpc\n";
  for (auto& k : b)
    o += csv_field(k.label) + "," + std::to_string(k.lo) + "," + std::to_string(k.hi) + "," + std::to_string(k.sequences) +
         "," + std::to_string(k.chars) + "," + num(k.bpc()) + "\n";
  return o;
}

}  // namespace cs
