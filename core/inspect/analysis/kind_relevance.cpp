// Per-character relevance (MZU paper Fig. 3a/b): r(t, j) = cos(h~_t, h_j).
#include <torch/nn/functional.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "data/vocab.h"
#include "util/error.h"

namespace cs {

LabeledMatrix relevance_map(Task& task, const std::string& text, int64_t last_k, int layer) {
  namespace F = torch::nn::functional;
  const auto enc = task.encode_text(text);
  const int64_t T = static_cast<int64_t>(enc.ids.size());
  if (T < 2) throw UserError("relevance needs a text of at least 2 characters");
  last_k = std::max<int64_t>(1, std::min(last_k, T));
  Probe p = probe_ids(task, enc.ids);
  const std::string pre = layer_of(p, layer);
  const std::string cell = task.cell_name();
  // candidate activation h~_t and hidden state h_j of the same layer, [T, H]. Deep-transition
  // cells record once per depth and step: take the last depth (whose state is carried).
  auto per_step = [&](const std::string& key) {
    auto s = recorded(p, pre + key, cell);
    const int64_t D = s.size(0) / T;
    return s.reshape({T, D, -1}).select(1, D - 1).to(torch::kFloat64);
  };
  auto cand = F::normalize(per_step("candidate"), F::NormalizeFuncOptions().dim(1));
  auto hid = F::normalize(per_step("h"), F::NormalizeFuncOptions().dim(1));
  auto cos = torch::mm(cand.narrow(0, T - last_k, last_k), hid.t()).contiguous();  // [K, T]
  LabeledMatrix m;
  for (int64_t k = 0; k < last_k; ++k)
    m.row_labels.push_back(display_symbol(enc.tokens[static_cast<size_t>(T - last_k + k)]));
  for (auto& s : enc.tokens) m.col_labels.push_back(display_symbol(s));
  m.values.assign(static_cast<size_t>(last_k * T), std::numeric_limits<double>::quiet_NaN());
  auto acc = cos.accessor<double, 2>();
  for (int64_t k = 0; k < last_k; ++k) {
    const int64_t t = T - last_k + k;
    for (int64_t j = 0; j < t; ++j) m.values[static_cast<size_t>(k * T + j)] = acc[k][j];
  }
  m.caption = "Relevance: cosine between the candidate activation at each of the last " + std::to_string(last_k) +
              " characters (rows) and the hidden state at every earlier character (columns); MZU paper Fig. 3.";
  return m;
}

namespace {
AnalysisResult run_relevance(const AnalysisKind& kind, const AnalysisRequest& req) {
  HeatmapSet h;
  h.x_label = "earlier character j";
  h.y_label = "character t (last K)";
  h.value_label = "cosine";
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  // Every run on the same characters: the given text or the first run's, each run
  // encoding it with its own vocabulary; symbols a run does not know are marked.
  const auto names = run_titles(req);
  SharedText text;
  std::vector<std::string> warnings;
  for (size_t i = 0; i < req.runs.size(); ++i) {
    auto t = load_for(kind, req.runs[i], checkpoint_of(req, i));
    if (i == 0) text = shared_text(req, *t, names[0]);
    auto m = relevance_map(*t, text.text, req.last_k, req.layer);
    const EncodedText enc = t->encode_text(text.text);
    const auto unknown = unknown_symbols(enc);
    if (!unknown.empty()) {
      const int64_t T = m.cols(), K = m.rows();
      for (int64_t j = 0; j < T && j < static_cast<int64_t>(enc.ids.size()); ++j)
        if (enc.ids[static_cast<size_t>(j)] == Vocab::kUnkId) {
          m.col_labels[static_cast<size_t>(j)] = mark_unknown(m.col_labels[static_cast<size_t>(j)]);
          if (j >= T - K) m.row_labels[static_cast<size_t>(j - (T - K))] = m.col_labels[static_cast<size_t>(j)];
        }
      std::string list;
      for (auto& u : unknown) list += (list.empty() ? "" : " ") + mark_unknown(u);
      warnings.push_back(names[i] + " does not know " + list + " (read as <unk>; marked \u00abx\u00bb in its panel).");
    }
    for (double v : m.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    h.matrices.push_back(m);
    h.titles.push_back(names[i]);
  }
  // two runs: the same text, one colour scale
  if (std::isfinite(lo)) h.shared_min = lo, h.shared_max = hi;
  AnalysisResult r;
  r.caption = h.matrices[0].caption + " " + text_note(text);
  r.warnings = warnings;
  r.data = std::move(h);
  return r;
}
}  // namespace

AnalysisKind relevance_kind() {
  AnalysisKind k;
  k.name = "relevance";
  k.title = "Per-character relevance";
  k.help =
      "cosine between the candidate at each of the last K characters and every earlier hidden state (MZU Fig. 3a/b)";
  k.caption =
      "Relevance r(t, j) = cos(h~_t, h_j): the cosine between the candidate activation at character t (rows: the last K "
      "characters) and the hidden state at every earlier character j (columns) of the same layer, the model run from a "
      "zero state in eval mode (MZU paper Fig. 3a/b). Two runs share one colour scale.";
  k.tasks = {"char_lm"};
  k.inputs.text = k.inputs.last_k = k.inputs.layer = true;
  k.multi_run = true;
  k.colour_map = true;
  k.run = run_relevance;
  return k;
}

}  // namespace cs
