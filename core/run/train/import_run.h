// `cellscope-cli import DIR` (and the window's File > Import from PyTorch...): a new run made from a
// `cellscope-cli export` folder whose weights may have changed in PyTorch since (fine-tuned, pruned,
// edited with cellscope_torch and written back with cellscope_torch.save_export), so that the model is
// analysed and compared in Cellscope like any run. The design: train/IMPORT_NOTES.md.
#pragma once
#include <cstdint>
#include <string>

#include "train/launch.h"

namespace cs {

struct ImportOptions {
  std::string dir;       // the export folder: export.json, config.json, vocab.cellscope, model.safetensors
  LaunchOptions launch;  // run_dir / workspace / threads of the new run (resume, fork and hooks unused)
  std::string label;     // the new run's label ("" = none)
};

struct ImportedRun {
  std::string run_dir;
  int64_t tensors = 0;         // tensors loaded: every parameter and buffer of the model
  std::string weights_sha256;  // of DIR/model.safetensors as read
  std::string primary_metric;  // the task's, e.g. "bpc"
  double valid = 0, test = 0;  // the primary metric on the valid and test splits
  bool has_test = false;
};

// Checks everything before a directory is made (the folder's files, the configuration, the data, every
// tensor's name, shape and dtype against the model the configuration builds); then creates the run
// (config.json recording "imported": {dir, weights, weights_sha256, source_run, source_step, time}),
// writes its checkpoints (last.pt, best.pt: the weights, a fresh optimizer), evaluates the valid and
// test splits and writes metrics.jsonl and summary.json (status "finished", step 0, reason naming the
// folder). UserError naming the problem, and no run directory, on any failure.
ImportedRun import_run(const ImportOptions& o);

}  // namespace cs
