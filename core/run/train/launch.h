// Starting a training run, shared by the CLI (`cellscope-cli train`) and the
// workbench window. The sequence is the one that keeps a run directory
// consistent whatever fails: validate -> set threads + seed -> make_task (loads
// and checks the data) -> create the RunStore -> write config.json + vocab ->
// build the Trainer. Nothing is created on disk before the config and the data
// have been checked, so a bad option or a missing file leaves no run directory.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/schema.h"
#include "train/run_store.h"
#include "train/trainer.h"

namespace cs {

struct LaunchOptions {
  // New run: the directory to create; empty = a fresh one under `workspace`
  // (cs::new_run_dir); `workspace` empty = cs::default_workspace().
  std::string run_dir;
  std::string workspace;
  // Resume the run in this directory instead of starting a new one (its
  // config.json is read; `overrides` are applied on top of it). The directory is locked
  // (RunStore::lock_for_writing) and nothing in it is written until the overrides passed
  // check_resume_changes and last.pt loaded and matched the model.
  std::string resume_dir;
  // Fork: a NEW run (run_dir / workspace as for a new run) that starts from checkpoint
  // `fork_which` ("last", "best" or a step number) of the run in `fork_dir`: its config.json
  // with the overrides applied (the same checks as a resume), weights, optimizer, task state,
  // RNG and step counter restored. The child's config.json records
  // "parent": {"run_dir": <absolute path>, "step": N, "checkpoint": "step_N.pt" | "last.pt" | "best.pt"}.
  // The parent is only read.
  std::string fork_dir;
  std::string fork_which = "last";
  // LibTorch intra-op threads used when training.threads is 0:
  // 0 = all cores (CLI); the GUI passes (cores - 1, at least 1).
  int default_threads = 0;
  // > 0: intra-op threads regardless of training.threads (data-parallel workers).
  int threads = 0;
  // Data-parallel worker (dist/dist.h, owned by the caller): only rank 0 creates and
  // writes the run directory; the Trainer averages gradients over the ranks.
  DistContext* dist = nullptr;
  // A new run only (import_run.h): the folder whose `vocab` file the task takes as its vocabulary
  // (as a resumed run's), and a step run after the trainer is built and before the run directory
  // is created, which may change the model's weights and add records to the config; what it
  // throws leaves no run directory.
  std::string vocab_dir;
  std::function<void(Trainer& trainer, json& cfg)> before_create;
};

struct LaunchedRun {
  json cfg;  // resolved
  std::shared_ptr<RunStore> store;
  std::unique_ptr<Trainer> trainer;
  bool resumed = false;
  bool forked = false;
  std::vector<std::string> notes;  // what the caller tells the user (e.g. the run's own script copy used)
};

// What a resume or fork may not change (resolved configs before and after the overrides):
// one "path: old -> new" line per differing option of task.*, dataset.* (except dataset.path,
// a moved corpus), model.cell, training.optimizer and training.batch (the carried state and
// the data layout depend on it). Other model options (dropout, lambda, ...) pass when every
// parameter shape still matches the checkpoint (checked at load). Empty: allowed.
std::vector<std::string> architecture_changes(const json& before, const json& after);

// `train CONFIG --run-dir DIR` run again (a requeued Slurm step, a restarted pod): true when
// DIR/config.json holds the configuration `raw_cfg` resolves to (training.threads and
// training.device aside: where it runs, not what it is), so that the command resumes DIR; false
// when DIR has no config.json (absent, empty, stranded: a new run as before); UserError naming
// the first differences when it holds another configuration.
bool run_dir_holds_this_run(const json& raw_cfg, const std::string& run_dir);

// Split "RUN_DIR[@STEP]" (STEP: a number, best or last; default last) as `train --fork` takes it.
std::pair<std::string, std::string> parse_fork_source(const std::string& spec);

// Threads for a GUI-hosted run: hardware threads - 1, at least 1.
int gui_training_threads();

// Validate + resolve `raw_cfg` (ignored when resuming; pass the overrides in
// it as a partial config, or an empty object), build the task and the trainer,
// and create/update the run directory. Throws UserError (invalid config, bad
// data, not a run directory) before anything is written.
LaunchedRun start_run(const json& raw_cfg, const LaunchOptions& options);

}  // namespace cs
