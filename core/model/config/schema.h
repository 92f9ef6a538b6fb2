// The configuration schema: one JSON document {task, dataset, model, training}.
// The schema is assembled here from the field tables (config/option_spec.h) of the
// common sections (config/common_options.h) and of every registered cell and task;
// each option is declared once, in its table, with its type, range, the cells/tasks
// it applies to and a help text citing the paper; its default is its struct's member
// initialiser. The validator, the CLI's --set overrides, `params`, and the GUI's
// generated forms all read the assembled list.
#pragma once
#include <string>
#include <vector>

#include "config/json.h"
#include "config/option_spec.h"

namespace cs {

// All options known to the build (common ones + every registered cell's and task's).
const std::vector<OptionSpec>& all_options();

// Whether option `o` applies to a cell and task (its cells/tasks lists; an opt-in
// common option applies to the cells listing it in CellInfo::common_options).
bool option_applies(const OptionSpec& o, const std::string& cell, const std::string& task);

// Options that apply to a given cell and task, in declaration order.
std::vector<OptionSpec> options_for(const std::string& cell, const std::string& task);

// Validate a config document. Reports every problem with its JSON path: unknown
// keys, wrong types, out-of-range values, options the chosen cell/task does not
// have, cross-field constraints (e.g. hidden not divisible by zones), a training.device that
// is not cpu/cuda/cuda:N, and (device cpu) a configuration whose training needs more memory than
// this machine has (training_memory_lower_bound). Empty = valid.
std::vector<ConfigError> validate_config(const json& cfg);

// Fill in defaults for every applicable option (call after validation). The
// resolved config is what a run stores in config.json.
json resolve_config(const json& cfg);

// A run's stored config.json read as it meant when the run was written: an option added later
// that changes what the run's other keys mean gets the value such runs had, where the key is
// absent (the schema default is what new runs get). Today: dataset.tokenizer = "legacy" for the
// tasks that have it (data/TOKENIZER_NOTES.md) and model.gcn_degree = "signed_clamped" for gcn_mzu
// (and MC-RNN over it; cells/MZU_NOTES.md). RunStore::read_config applies it; a document that
// is not a stored config (no task name, cell or dataset object) is returned unchanged.
json as_written(json stored_cfg);

// Apply "model.hidden=512" style overrides. Value parsed as JSON when it parses,
// otherwise taken as a string. Throws UserError naming the override when malformed.
void apply_override(json& cfg, const std::string& assignment);

// The largest integer an Int option accepts (2^53: a JSON number is a double, and beyond this
// not every integer is representable), whatever the option's own range.
inline constexpr double kMaxExactInteger = 9007199254740992.0;

// A lower bound of the main memory training a resolved config takes, in bytes: the recurrent
// weights with their gradients, and one batch's hidden states kept for backpropagation.
// Deliberately low (embeddings, output layer, optimizer state and activations inside the cells
// are left out), so that a config it refuses can never train on the machine.
struct MemoryEstimate {
  double parameters = 0;
  double states = 0;
  double total() const { return parameters + states; }
};
MemoryEstimate training_memory_lower_bound(const json& resolved_cfg, const std::string& task);
// Physical memory of this machine in bytes (0 when unknown).
double physical_memory_bytes();

// Validate + resolve, throwing UserError "invalid <what>:" listing every problem (one per line).
json load_and_resolve(const json& cfg, const std::string& what = "configuration");

}  // namespace cs
