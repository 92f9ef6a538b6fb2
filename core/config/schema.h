// The configuration schema: one JSON document {task, dataset, model, training}.
// Every option a user can set is declared here once, with its type, default,
// range, the cells/tasks it applies to and a help text citing the paper. The
// validator, the CLI's --set overrides, `params`, and the GUI's generated forms
// all read this table, so a new cell only adds OptionSpecs (see cells/registry).
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace cs {

using json = nlohmann::json;

enum class OptType { Int, Float, Bool, String, Enum };

struct OptionSpec {
  std::string section;  // "task" | "dataset" | "model" | "training"
  std::string key;      // key inside the section, e.g. "hidden"
  OptType type = OptType::Int;
  json default_value;   // null: no default (required or optional-unset)
  double min = -1e300;  // numeric range, inclusive
  double max = 1e300;
  std::vector<std::string> choices;  // for Enum
  std::string help;                  // tooltip: what it does, which equation/table
  std::vector<std::string> cells;    // empty: every cell; else only these cells
  std::vector<std::string> tasks;    // empty: every task; else only these tasks
  bool advanced = false;             // GUI hides it under "Advanced"
  // Common model option that applies only to cells listing it in CellInfo::common_options.
  bool opt_in = false;

  std::string path() const { return section + "." + key; }
  bool applies_to(const std::string& cell, const std::string& task) const;
};

struct ConfigError {
  std::string path;     // JSON path, e.g. "model.zones"
  std::string message;  // what is wrong and what was expected
  std::string str() const { return path + ": " + message; }
};

// Build an OptionSpec; cells and tasks declare their options with these.
OptionSpec make_option(const std::string& section, const std::string& key, OptType type, json default_value,
                       double min, double max, const std::string& help);
OptionSpec make_choice(const std::string& section, const std::string& key, json default_value,
                       std::vector<std::string> choices, const std::string& help);

// All options known to the build (common ones + every registered cell's and task's).
const std::vector<OptionSpec>& all_options();

// Options that apply to a given cell and task, in declaration order.
std::vector<OptionSpec> options_for(const std::string& cell, const std::string& task);

// Validate a config document. Reports every problem with its JSON path: unknown
// keys, wrong types, out-of-range values, options the chosen cell/task does not
// have, cross-field constraints (e.g. hidden not divisible by zones). Empty = valid.
std::vector<ConfigError> validate_config(const json& cfg);

// Fill in defaults for every applicable option (call after validation). The
// resolved config is what a run stores in config.json.
json resolve_config(const json& cfg);

// Apply "model.hidden=512" style overrides. Value parsed as JSON when it parses,
// otherwise taken as a string. Throws UserError naming the override when malformed.
void apply_override(json& cfg, const std::string& assignment);

// Validate + resolve, throwing UserError listing every problem (one per line).
json load_and_resolve(const json& cfg);

// Cross-field validators registered by cells and tasks (called by validate_config
// with the merged config; they append errors).
using ConfigCheck = std::function<void(const json& cfg, std::vector<ConfigError>& errors)>;

}  // namespace cs
