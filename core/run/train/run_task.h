// A run's task rebuilt from its directory, in two halves, for commands that read the checkpoint
// themselves (export reads it once and takes weights, step and hash from that one read):
// load_run_task (trainer.h) is make_run_task followed by load_run_checkpoint.
#pragma once
#include <memory>
#include <string>

#include "config/json.h"

namespace torch::serialize {
class InputArchive;
}

namespace cs {

class Task;

// The task built from RUN_DIR/config.json (dataset, the run's vocabulary, model), its weights
// still the initial ones; `resolved` gets that resolved configuration. UserError when run_dir
// is not a run directory.
std::unique_ptr<Task> make_run_task(const std::string& run_dir, json* resolved = nullptr);

// load_run_checkpoint from a checkpoint archive already read (read_checkpoint_bytes, checkpoint.h):
// checked against the task's model, then its weights loaded; `path` names it in messages.
void load_checkpoint_weights(Task& task, torch::serialize::InputArchive& ar, const std::string& path);

}  // namespace cs
