// A trained run exported for plain PyTorch (packaging/python/cellscope_torch; its README.md lists the files):
// the one function `cellscope-cli export` and the window's Export for PyTorch both call, in-process. Each task
// builds its own reference batch (Task::export_reference); what is written is the same for every task. The
// layout and its choices: core/run/export/EXPORT_TORCH_NOTES.md.
#pragma once
#include <cstdint>
#include <string>

#include "config/json.h"

namespace cs {

struct TorchExportOptions {
  std::string run_dir;
  std::string out;                  // the export folder: absent, empty, or (force) an earlier export
  std::string checkpoint = "best";  // best, last, step_N or N
  bool force = false;               // replace `out` when it is an earlier export (never anything else)
};

struct TorchExport {
  std::string out;               // `out`, absolute
  double seconds = 0;            // wall time of the export
  json manifest;                 // export.json as written
  json config;                   // the run's resolved configuration (config.json of the export)
  std::string checkpoint_file;   // e.g. "best.pt"
  int64_t step = -1;             // the checkpoint's step (-1: one without trainer state)
  int64_t tensors = 0;           // parameters and buffers written
  std::string script_copy_used;  // a script cell whose model.script is gone: the run's copy that was exported
};

// Writes the export into a folder of its own beside `out` (.OUT.tmp-XXXXXX, a unique name) and renames it onto
// `out` at the end, so a failure leaves no half-written folder and no other path is touched. Bad input (not a
// run, no such checkpoint, a corrupt one, `out` not an earlier export, a script cell whose script changed, a run
// without its vocabulary) throws UserError before anything is written.
TorchExport export_torch(const TorchExportOptions& o);

// "best", "last", "step_N" or "N" -> the form checkpoint_path() takes ("best", "last", "N"); UserError otherwise.
std::string export_checkpoint_name(const std::string& s);

}  // namespace cs
