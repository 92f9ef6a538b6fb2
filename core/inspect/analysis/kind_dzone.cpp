// Mean zone disagreement D_zone (MZU eq. 18) per M-function, on a text and over training.
#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "util/error.h"

namespace cs {

std::map<std::string, double> mean_dzone(Task& task, const std::string& text) {
  Probe p = probe_text_or_split(task, text);
  std::map<std::string, double> out;
  for (auto& k : keys_named(p, {"dzone"})) {
    auto d = p.stacked(k).to(torch::kFloat64);  // [T, B, M]
    const int64_t M = d.size(-1);
    auto mean = d.reshape({-1, M}).mean(0);
    const std::string pre = k.substr(0, k.size() - 5);  // "l0/" (or "l0/base/", "fwd/l0/")
    // M-functions in recording order: per depth, M_h then M_g (those the cell has)
    std::vector<std::string> names;
    bool mh = p.has(pre + "zones_h"), mg = p.has(pre + "zones_g");
    const int per_depth = (mh ? 1 : 0) + (mg ? 1 : 0);
    for (int64_t i = 0; i < M; ++i) {
      std::string nm = per_depth == 2 ? (i % 2 == 0 ? "M_h" : "M_g") : (mh ? "M_h" : "M_g");
      const int64_t depth = per_depth > 0 ? i / per_depth : i;
      out[pre + nm + (depth > 0 ? " depth " + std::to_string(depth) : std::string())] = mean[i].item<double>();
    }
  }
  if (out.empty()) throw UserError("this run's cells record no zone disagreement (needs an MZU cell with M-functions)");
  return out;
}

SeriesSet dzone_over_training(const std::string& run_dir, const std::string& text) {
  SeriesSet s;
  s.title = "Zone disagreement over training";
  s.x_label = "step";
  s.y_label = "mean D_zone";
  s.series = over_checkpoints(run_dir, text, [](Task& task, const std::string& t) { return mean_dzone(task, t); });
  s.caption =
      "Mean zone disagreement D_zone = -mean_ij cos(z_i, z_j) (MZU eq. 18) of each M-function on the text, at "
      "every saved checkpoint (higher = zones more different).";
  return s;
}

namespace {
AnalysisResult run_dzone(const AnalysisKind& kind, const AnalysisRequest& req) {
  load_for(kind, req.runs[0], req.checkpoint);  // checks the task (and that a checkpoint exists)
  SeriesSet s = dzone_over_training(req.runs[0], req.text);
  return result_of(std::move(s));
}
}  // namespace

AnalysisKind dzone_kind() {
  AnalysisKind k;
  k.name = "dzone";
  k.title = "Zone disagreement over training";
  k.help = "mean D_zone per M-function at every checkpoint (MZU eq. 18)";
  k.caption =
      "Mean zone disagreement D_zone = -mean_ij cos(z_i, z_j) (MZU eq. 18) of every M-function on the text at every "
      "saved checkpoint (step_N).";
  k.tasks = {"char_lm", "word_lm", "classify", "absa"};
  k.cells = {"sat_mzu", "gcn_mzu", "cap_mzu"};
  k.inputs.text = true;
  k.over_training = true;
  k.run = run_dzone;
  return k;
}

}  // namespace cs
