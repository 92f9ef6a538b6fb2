// `cellscope-cli cv`: k-fold cross-validation for the sentence tasks (the CRU
// paper's 10-fold CV on MR and SUBJ). One ordinary run per fold in
// <out>/fold-<i> (dataset.folds = K, dataset.fold = i), then <out>/cv_summary.json
// with each fold's best valid and test accuracy and their mean and (sample) standard deviation.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "tasks/task.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cli {

using cs::json;

int cmd_cv(const std::vector<std::string>& a) {
  auto args = parse(a, "cv");
  if (args.positional.size() != 1) throw UsageError("expected one CONFIG (a JSON file or a preset name)");
  json raw = load_config_arg(args.positional[0], args.all("set"));
  if (!raw.contains("dataset") || !raw["dataset"].is_object()) raw["dataset"] = json::object();
  if (!raw.contains("training") || !raw["training"].is_object()) raw["training"] = json::object();
  int64_t K = args.get_int("folds", raw["dataset"].value("folds", 0));
  if (K == 0) K = 10;
  if (K < 2) throw UsageError("--folds must be >= 2");
  if (args.has("steps")) raw["training"]["steps"] = args.get_int("steps", 0);
  raw["dataset"]["folds"] = K;
  raw["dataset"]["fold"] = 0;
  json cfg0 = cs::load_and_resolve(raw);  // validate once before any run
  const std::string task_name = cfg0["task"]["name"];
  if (task_name != "classify" && task_name != "absa")
    throw cs::UserError("cv: task '" + task_name + "' has no folds (classify or absa)");
  const std::string out =
      args.has("out") ? args.get("out") : cs::new_run_dir(args.get("workspace", cs::default_workspace()), cfg0) + "-cv";
  cs::make_dirs(out);
  json folds = json::array();
  std::vector<double> tests, valids;
  for (int64_t f = 0; f < K; ++f) {
    json r = raw;
    r["dataset"]["fold"] = f;
    json cfg = cs::load_and_resolve(r);
    cs::set_threads(cfg["training"].value("threads", 0));
    cs::seed_everything(cfg["training"].value("seed", 1));
    auto task = cs::make_task(cfg);
    auto store = std::make_shared<cs::RunStore>(cs::join_path(out, "fold-" + std::to_string(f)));
    store->create();
    store->write_config(cfg);
    const std::string vt = task->vocab_text();
    if (!vt.empty()) cs::atomic_write(store->path("vocab"), vt);
    cs::Trainer trainer(cfg, std::move(task), store);
    auto outcome = trainer.run();
    const auto& s = outcome.summary;
    json fj = {{"fold", f}, {"run_dir", outcome.run_dir}, {"status", s.status}};
    if (s.has_best) {
      fj["best_valid"] = s.best_valid;
      valids.push_back(s.best_valid);
    }
    if (s.has_test) {
      fj["test"] = s.test_metric;
      tests.push_back(s.test_metric);
    }
    folds.push_back(fj);
    if (!args.has("json"))
      std::cerr << "fold " << f << "/" << K << ": " << s.status
                << (s.has_test ? "  test " + s.primary_metric + " " + std::to_string(s.test_metric) : "") << "\n";
  }
  auto stats = [](const std::vector<double>& v) {
    json j = {{"n", v.size()}};
    if (v.empty()) return j;
    double m = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    double s2 = 0;
    for (double x : v) s2 += (x - m) * (x - m);
    j["mean"] = m;
    j["std"] = v.size() > 1 ? std::sqrt(s2 / static_cast<double>(v.size() - 1)) : 0.0;
    return j;
  };
  json summary = {{"folds", K},        {"task", task_name},    {"cell", cfg0["model"]["cell"]}, {"metric", "accuracy"},
                  {"per_fold", folds}, {"test", stats(tests)}, {"best_valid", stats(valids)}};
  cs::atomic_write(cs::join_path(out, "cv_summary.json"), summary.dump(2) + "\n");
  if (args.has("json")) {
    std::cout << summary.dump() << "\n";
  } else if (!tests.empty()) {
    std::cerr << std::fixed << std::setprecision(4) << "test accuracy over " << tests.size()
              << " folds: " << summary["test"]["mean"].get<double>() << " +- " << summary["test"]["std"].get<double>()
              << "\n"
              << "summary: " << cs::join_path(out, "cv_summary.json") << "\n";
  }
  return 0;
}

}  // namespace cli
