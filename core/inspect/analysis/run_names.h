// Short, readable names for runs shown together (comparison legends, side-by-side
// panel titles, the CLI's analyze output): the run's label (label.txt, set with
// `cellscope-cli label RUN TEXT`), else the options that differ between the compared
// runs, abbreviated ("gcnMZU+DT h256" vs "GRU h128", "lr 2e-3"). Qt-free: the
// Compare tab, the Analyses tab (through the analyses' results) and the CLI use the
// same function, so a legend on screen and in an exported figure read the same.
// Rules and the abbreviation table: core/inspect/analysis/ANALYSIS_NOTES.md.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "config/schema.h"

namespace cs {

// What a name is made of: the run directory, the user's label ("" = none) and the
// resolved configuration (config.json).
struct RunIdentity {
  std::string dir;
  std::string label;
  json config;
};
// Reads config.json and label.txt of a run directory (missing files: empty).
RunIdentity read_run_identity(const std::string& run_dir);

struct RunNameOptions {
  // Flattened keys ("training.seed") never used in a name (e.g. the seed of a seed group).
  std::vector<std::string> ignore_keys;
  // Options per name; more only when needed to tell the runs apart.
  size_t max_parts = 2;
};

// One name per run, in order. A labelled run is named by its label. One run alone:
// "<cell> (<directory name>)", e.g. "GRU (gru-tiny)". Several: the abbreviated options
// whose values differ between them (cell and deep transition first, then sizes,
// learning rate, data, seed, ...; options only some runs have, bookkeeping such as
// eval_every or threads, and notes are left out); the directory name when nothing
// differs; " (<directory name>)" added to names that would still be equal.
std::vector<std::string> comparison_names(const std::vector<RunIdentity>& runs, const RunNameOptions& opt = {});
// The same for run directories (read_run_identity of each).
std::vector<std::string> comparison_names_of_dirs(const std::vector<std::string>& run_dirs,
                                                  const RunNameOptions& opt = {});

// The cell as the papers write it, from a model section: "GRU", "gcnMZU+DT", "capMZU+DT2",
// "GRU+DT", "MC-RNN-3/LSTM", "CRU deep"; "" when the section has no cell.
std::string cell_short_name(const json& model);
// One option abbreviated: ("training.lr", 0.002) -> "lr 2e-3", ("model.hidden", 256) -> "h256",
// ("dataset.max_chars", 300000) -> "300k chars", ("model.layer_norm", true) -> "LN".
std::string option_short(const std::string& key, const json& value);

}  // namespace cs
