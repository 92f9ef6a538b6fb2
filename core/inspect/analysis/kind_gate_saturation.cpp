// Gate saturation (fraction of gate values < 0.1 and > 0.9), on a text and over training.
#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "util/error.h"

namespace cs {

std::vector<GateSaturation> gate_saturation(Task& task, const std::string& text) {
  Probe p = probe_text_or_split(task, text);
  std::vector<GateSaturation> out;
  for (auto& k : keys_named(p, gate_names())) {
    auto v = p.stacked(k).to(torch::kFloat64).reshape({-1});
    GateSaturation g;
    g.key = k;
    g.count = v.numel();
    if (g.count > 0) {
      g.below = (v < 0.1).sum().item<double>() / static_cast<double>(g.count);
      g.above = (v > 0.9).sum().item<double>() / static_cast<double>(g.count);
    }
    out.push_back(g);
  }
  if (out.empty()) throw UserError("this run's cells record no gates (RNN?)");
  return out;
}

SeriesSet gate_saturation_over_training(const std::string& run_dir, const std::string& text) {
  SeriesSet s;
  s.title = "Gate saturation over training";
  s.x_label = "step";
  s.y_label = "fraction of gate values";
  s.series = over_checkpoints(run_dir, text, [](Task& task, const std::string& t) {
    std::map<std::string, double> v;
    for (auto& g : gate_saturation(task, t)) {
      v[g.key + " < 0.1"] = g.below;
      v[g.key + " > 0.9"] = g.above;
    }
    return v;
  });
  s.caption = "Fraction of gate values below 0.1 and above 0.9 (saturated) on the text, at every saved checkpoint.";
  return s;
}

namespace {
AnalysisResult run_gate_saturation(const AnalysisKind& kind, const AnalysisRequest& req) {
  load_for(kind, req.runs[0], req.checkpoint);  // checks the task (and that a checkpoint exists)
  SeriesSet s = gate_saturation_over_training(req.runs[0], req.text);
  return result_of(std::move(s));
}
}  // namespace

AnalysisKind gate_saturation_kind() {
  AnalysisKind k;
  k.name = "gate_saturation";
  k.title = "Gate saturation over training";
  k.help = "fraction of gate values < 0.1 and > 0.9 at every checkpoint";
  k.caption = "Fraction of gate values below 0.1 and above 0.9 on the text at every saved checkpoint (step_N).";
  k.tasks = {"char_lm", "word_lm", "classify", "absa"};
  k.inputs.text = true;
  k.over_training = true;
  k.run = run_gate_saturation;
  return k;
}

}  // namespace cs
