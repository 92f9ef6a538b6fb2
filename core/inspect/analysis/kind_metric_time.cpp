// An evaluation metric against elapsed training seconds, several runs (CRU paper Fig. 4).
#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/run_names.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cs {

namespace {
// "task" of a config: {"name": ...} when resolved, a plain string in a hand-written one.
std::string task_name_of(const json& cfg) {
  if (!cfg.contains("task")) return "";
  const auto& t = cfg["task"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("name") && t["name"].is_string()) return t["name"].get<std::string>();
  return "";
}

std::string primary_metric_of(const json& cfg) {
  const std::string tn = task_name_of(cfg);
  return tn == "char_lm" ? "bpc" : tn == "word_lm" ? "ppl" : "accuracy";
}
}  // namespace

SeriesSet metric_vs_time(const std::vector<std::string>& run_dirs, const std::string& split,
                         const std::string& metric_in) {
  SeriesSet s;
  s.title = "Evaluation metric over training time";
  s.x_label = "training time (s)";
  s.style = "line";
  std::string metric_used;
  const auto names = comparison_names_of_dirs(run_dirs);
  for (size_t i = 0; i < run_dirs.size(); ++i) {
    const std::string& d = run_dirs[i];
    RunStore st(d);
    if (!file_exists(st.path("config.json"))) throw UserError("'" + d + "' is not a run directory (no config.json)");
    const json cfg = st.read_config();
    std::string metric = metric_in;
    if (metric.empty()) metric = primary_metric_of(cfg);
    metric_used = metric;
    Series e;
    e.name = names[i];
    for (auto& line : st.read_metrics()) {
      auto r = MetricsRecord::from_json(line);
      if (!r.eval || r.split != split) continue;
      auto it = r.values.find(metric);
      if (it == r.values.end()) continue;
      e.x.push_back(r.elapsed);
      e.y.push_back(it->second);
    }
    if (e.x.empty())
      throw UserError(
          "run '" + d + "' has no '" + split + "' evaluations of " + metric +
          " in metrics.jsonl (the trainer evaluates test only at the end unless training.track_test is set: "
          "use --split valid, or train with --set training.track_test=true)");
    s.series.push_back(e);
  }
  s.y_label = split + " " + metric_used;
  s.caption = "CRU paper Fig. 4: " + split + " " + metric_used +
              " against elapsed training seconds (metrics.jsonl eval lines), one curve per run.";
  return s;
}

namespace {
AnalysisResult run_metric_time(const AnalysisKind&, const AnalysisRequest& req) {
  SeriesSet s = metric_vs_time(req.runs, req.split, req.metric);
  return result_of(std::move(s));
}
}  // namespace

AnalysisKind metric_time_kind() {
  AnalysisKind k;
  k.name = "metric_time";
  k.title = "Metric over training time";
  k.help = "evaluation metric vs elapsed training seconds for several runs (CRU Fig. 4)";
  k.caption =
      "Evaluation metric (default: the primary metric on the split; the test split needs runs trained with "
      "training.track_test, on in the CRU paper presets, since otherwise test is evaluated only at the end) against "
      "elapsed training seconds, from metrics.jsonl; one curve per run (CRU paper Fig. 4).";
  k.tasks = {"char_lm", "word_lm", "classify", "absa"};
  k.inputs.split = k.inputs.metric = true;
  k.multi_run = true;
  k.over_training = true;
  k.default_split = "valid";
  k.run = run_metric_time;
  return k;
}

}  // namespace cs
