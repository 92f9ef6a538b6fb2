// Zone-specific relevance (Cellscope's definition of MZU paper Fig. 3c).
#include <torch/nn/functional.h>

#include <limits>

#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "util/error.h"

namespace cs {

LabeledMatrix zone_relevance(Task& task, const std::string& text, int64_t t, int layer) {
  namespace F = torch::nn::functional;
  const auto enc = task.encode_text(text);
  const int64_t T = static_cast<int64_t>(enc.ids.size());
  if (T < 2) throw UserError("zone relevance needs a text of at least 2 characters");
  if (t < 0) t = T + t;
  if (t < 1 || t >= T) throw UserError("character index out of range");
  Probe p = probe_ids(task, enc.ids);
  const std::string pre = layer_of(p, layer);
  auto zones = recorded(p, pre + "zones_h", task.cell_name());  // [T, 1, N, dz]
  zones = zones.reshape({T, zones.size(-2), zones.size(-1)}).to(torch::kFloat64);
  const int64_t N = zones.size(1);
  auto zn = F::normalize(zones, F::NormalizeFuncOptions().dim(2));
  // cos(zone i at t, zone i at j): [N, T]
  auto cos = (zn.select(0, t).unsqueeze(0) * zn).sum(2).t().contiguous();
  LabeledMatrix m;
  for (int64_t i = 0; i < N; ++i) m.row_labels.push_back("zone " + std::to_string(i + 1));
  for (auto& s : enc.tokens) m.col_labels.push_back(display_symbol(s));
  m.values.assign(static_cast<size_t>(N * T), std::numeric_limits<double>::quiet_NaN());
  auto acc = cos.accessor<double, 2>();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < t; ++j) m.values[static_cast<size_t>(i * T + j)] = acc[i][j];
  m.caption = "Zone-specific relevance of character " + std::to_string(t) + " ('" +
              display_symbol(enc.tokens[static_cast<size_t>(t)]) +
              "'): cosine between zone i of the candidate's M-function at that character and zone i at every earlier "
              "character (Cellscope's definition of MZU paper Fig. 3c).";
  return m;
}

namespace {
AnalysisResult run_zone_relevance(const AnalysisKind& kind, const AnalysisRequest& req) {
  auto t = load_for(kind, req.runs[0], req.checkpoint);
  HeatmapSet h;
  h.matrices.push_back(zone_relevance(*t, text_or_default(req, *t), req.position, req.layer));
  h.titles.push_back(run_titles(req)[0]);
  h.shared_min = -1;
  h.shared_max = 1;
  h.x_label = "earlier character j";
  h.y_label = "zone";
  h.value_label = "cosine";
  h.few_rows = true;
  AnalysisResult r;
  r.caption = h.matrices[0].caption;
  r.data = std::move(h);
  return r;
}
}  // namespace

AnalysisKind zone_relevance_kind() {
  AnalysisKind k;
  k.name = "zone_relevance";
  k.title = "Zone-specific relevance";
  k.help = "per zone: cosine between zone i at character t and zone i at every earlier character (MZU Fig. 3c)";
  k.caption =
      "Zone-specific relevance (Cellscope's definition of MZU paper Fig. 3c, which the paper leaves open): for the chosen "
      "character t and every zone i of the candidate's M-function M_h, cos(z_i at t, z_i at j) for every earlier "
      "character j, where z_i is zone i of eq. 4 (before composition). One row per zone.";
  k.tasks = {"char_lm"};
  k.cells = {"sat_mzu", "gcn_mzu", "cap_mzu"};
  k.inputs.text = k.inputs.position = k.inputs.layer = true;
  k.colour_map = true;
  k.run = run_zone_relevance;
  return k;
}

}  // namespace cs
