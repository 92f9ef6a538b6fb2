// A run's saved checkpoints for the analyses: which exist, loading one as a task, and
// a value evaluated at every one of them (the over-training kinds).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/results.h"

namespace cs {

class Task;

struct CheckpointInfo {
  std::string id;     // "step_100", "best" or "last": pass to load_checkpoint_task
  int64_t step = -1;  // training step (-1 unknown)
  std::string label;  // "step 100", "step 300 (best)", "last (step 400)"
  bool is_best = false, is_last = false;
};
// step_<N> checkpoints in step order, then last and best (steps read from the files'
// trainer state where named checkpoints are absent). Empty if the run has none.
std::vector<CheckpointInfo> list_checkpoints(const std::string& run_dir);
// `id`: "best", "last", "step_N" or "N". Throws UserError when absent.
std::unique_ptr<Task> load_checkpoint_task(const std::string& run_dir, const std::string& id);
// The same checkpoint, its task reading `dataset` (a resolved dataset section, e.g. another
// run's) instead of its own: the run's vocabulary and weights on other data (symbols the
// vocabulary lacks read as <unk>). Metric by length compares runs on the same data this way.
std::unique_ptr<Task> load_checkpoint_task_on(const std::string& run_dir, const std::string& id, const json& dataset);
// How a checkpoint is called in captions: "step 40", "best (step 40)", "last (step 60)".
std::string checkpoint_label(const std::string& run_dir, const std::string& id);
// Its training step (-1 when unknown).
int64_t checkpoint_step(const std::string& run_dir, const std::string& id);

// One series per key of values(task, text), evaluated at every step_N checkpoint (x = step;
// `last` when the run kept no step checkpoints). An empty text = each checkpoint's
// default_text. UserError when the run has no checkpoints.
std::vector<Series> over_checkpoints(
    const std::string& run_dir, const std::string& text,
    const std::function<std::map<std::string, double>(Task&, const std::string&)>& values);

}  // namespace cs
