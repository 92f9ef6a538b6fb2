// Cell registry: name -> options (schema), cross-field checks, factory.
// Adding a cell family = its own .h/.cpp (options struct, field table, module and a
// register_<family>_cells(std::vector<CellInfo>&) function) plus one line in
// registry.cpp's family list; see cells/README.md. The trainer, the config validator,
// the CLI and the GUI discover cells only through here.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cells/cell.h"
#include "config/option_spec.h"

namespace cs {

struct CellInfo {
  std::string name;                 // config value of model.cell, e.g. "gru", "sat_mzu"
  std::string family;               // e.g. "baseline", "mzu", "cru", "mcrnn", "script" (export.json names it)
  std::string description;          // one line, cites the paper
  std::vector<OptionSpec> options;  // cell-specific model.* options (cells = {name} implied)
  ConfigCheck check;                // optional cross-field validation
  // Build layer `layer` of a stack; `model` is the resolved "model" section.
  std::function<std::shared_ptr<CellImpl>(const json& model, int64_t input_size, int layer)> make;
  bool needs_whole_sequence = false;  // CRU's convolution: no per-step streaming
  // Which of the common model options (declared in config/common_options.cpp with
  // opt_in = true, e.g. "layer_norm", "candidate_dropout") this cell honours.
  std::vector<std::string> common_options;
  // This cell's own defaults of some of those common options (e.g. the MZUs train with
  // layer normalization by default, as in the paper): options_for() reports them and
  // resolve_config() fills them in.
  std::map<std::string, json> common_defaults;
  // Why this cell's fast path (LibTorch's fused kernel, or a hand-written sequence function of
  // cells/FUSED_NOTES.md) does not run a training forward of the resolved model section `model`
  // (a task's model options included, e.g. word_lm's model.weight_drop); "" = it runs, given
  // CELLSCOPE_FAST not 0, no probe, StepContext::stepwise false and CPU tensors. Each family
  // answers with the same function its cells' dispatcher asks on every call. Unset: no fast path.
  std::function<std::string(const json& model)> fast_path_refusal;
  // The cell's name in legends and run names (analysis/run_names.h: "satMZU", "CRU deep"); "" = `name`.
  std::string short_name;
  // What run names add to short_name for a model section, e.g. a HO-RNN's "-3" for model.ho_order = 3 (the
  // section may be partial: an older run's config; read what is there). Unset: model.depth's "+DT<n>".
  std::function<std::string(const json& model)> short_name_suffix;
  // Why this cell cannot be an MC-RNN's base cell (model.base, cells/mcrnn.cpp); "" = it can.
  std::string mcrnn_base_refusal;
  // For a cell whose output at step t can read inputs after t (the CRU's centered convolution): adds the error
  // of a model section (possibly unresolved) where it does, naming the option that makes it causal. The language
  // models, which predict the next token, call it in their config check (tasks/task_common.h). Unset: never.
  std::function<void(const json& model, std::vector<ConfigError>& errs)> future_reads;
};

const std::vector<CellInfo>& cell_registry();
const CellInfo& cell_info(const std::string& name);  // throws UserError listing known cells
std::vector<std::string> cell_names();
const CellInfo* find_cell_info(const std::string& name);  // nullptr when no cell has that name
// CellInfo::fast_path_refusal of the resolved model section's cell ("" = its fast path runs).
std::string fast_path_refusal(const json& model);
// A family's refusal (a fixed text, nullptr = none) as the hook returns it.
inline std::string fast_path_refusal_text(const char* reason) { return reason ? reason : ""; }

}  // namespace cs
