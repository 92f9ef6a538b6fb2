#include "analysis/checkpoints.h"

#include <torch/serialize.h>

#include "analysis/kinds.h"
#include "config/schema.h"
#include "tasks/task.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cs {

std::vector<CheckpointInfo> list_checkpoints(const std::string& run_dir) {
  RunStore store(run_dir);
  std::vector<CheckpointInfo> out;
  for (auto s : store.checkpoint_steps()) {
    CheckpointInfo c;
    c.id = "step_" + std::to_string(s);
    c.step = s;
    c.label = "step " + std::to_string(s);
    out.push_back(c);
  }
  RunSummary sum;
  bool has_sum = file_exists(store.path("summary.json"));
  if (has_sum) sum = store.read_summary();
  const std::string cdir = store.checkpoint_dir();
  if (file_exists(join_path(cdir, "last.pt"))) {
    CheckpointInfo c;
    c.id = "last";
    c.is_last = true;
    c.step = has_sum ? sum.step : -1;
    c.label = "last" + (c.step >= 0 ? " (step " + std::to_string(c.step) + ")" : std::string());
    for (auto& o : out)
      if (o.step == c.step) o.is_last = true;
    out.push_back(c);
  }
  if (file_exists(join_path(cdir, "best.pt"))) {
    CheckpointInfo c;
    c.id = "best";
    c.is_best = true;
    c.step = has_sum && sum.has_best ? sum.best_step : -1;
    c.label = "best" + (c.step >= 0 ? " (step " + std::to_string(c.step) + ")" : std::string());
    for (auto& o : out)
      if (o.step == c.step && o.step >= 0 && !o.is_best && o.id.rfind("step_", 0) == 0) {
        o.is_best = true;
        o.label += " (best)";
      }
    out.push_back(c);
  }
  return out;
}

namespace {
// "best" | "last" | "N" from "best", "last", "step_N", "N" ("" = best); UserError otherwise.
std::string checkpoint_which(const std::string& id) {
  std::string which = id.empty() ? "best" : id;
  if (which.rfind("step_", 0) == 0) which = which.substr(5);
  if (which != "best" && which != "last" &&
      (which.empty() || which.find_first_not_of("0123456789") != std::string::npos))
    throw UserError("checkpoint must be best, last, a step number or step_N; got '" + id + "'");
  return which;
}
}  // namespace

std::unique_ptr<Task> load_checkpoint_task(const std::string& run_dir, const std::string& id) {
  return load_run_task(run_dir, checkpoint_which(id));
}

std::unique_ptr<Task> load_checkpoint_task_on(const std::string& run_dir, const std::string& id, const json& dataset) {
  // As load_run_task, with the dataset section replaced: the task reads the run's saved
  // vocabulary (run_dir/vocab) and encodes the other data with it.
  return load_run_task(run_dir, checkpoint_which(id), &dataset);
}

std::string checkpoint_label(const std::string& run_dir, const std::string& id) {
  const std::string which = checkpoint_which(id);
  const std::string want = which == "best" || which == "last" ? which : "step_" + which;
  for (auto& c : list_checkpoints(run_dir))
    if (c.id == want) return c.label;
  return which == "best" || which == "last" ? which : "step " + which;
}

int64_t checkpoint_step(const std::string& run_dir, const std::string& id) {
  const std::string which = checkpoint_which(id);
  if (which != "best" && which != "last") return std::stoll(which);
  for (auto& c : list_checkpoints(run_dir))
    if (c.id == which) return c.step;
  return -1;
}

namespace {
std::vector<CheckpointInfo> history_checkpoints(const std::string& run_dir) {
  std::vector<CheckpointInfo> out;
  for (auto& c : list_checkpoints(run_dir))
    if (c.id.rfind("step_", 0) == 0) out.push_back(c);
  if (out.empty())
    for (auto& c : list_checkpoints(run_dir))
      if (c.id == "last") out.push_back(c);
  if (out.empty()) throw UserError("run '" + run_dir + "' has no checkpoints");
  return out;
}
}  // namespace

std::vector<Series> over_checkpoints(
    const std::string& run_dir, const std::string& text,
    const std::function<std::map<std::string, double>(Task&, const std::string&)>& values) {
  std::map<std::string, Series> by;
  for (auto& c : history_checkpoints(run_dir)) {
    auto task = load_checkpoint_task(run_dir, c.id);
    const std::string t = text.empty() ? default_text(*task) : text;
    for (auto& [k, v] : values(*task, t)) {
      by[k].name = k;
      by[k].x.push_back(static_cast<double>(c.step));
      by[k].y.push_back(v);
    }
  }
  std::vector<Series> out;
  for (auto& [k, v] : by) out.push_back(v);
  return out;
}

}  // namespace cs
