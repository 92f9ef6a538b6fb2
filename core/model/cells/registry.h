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
  std::string name;         // config value of model.cell, e.g. "gru", "sat_mzu"
  std::string family;       // "baseline" | "mzu" | "cru" | "mcrnn"
  std::string description;  // one line, cites the paper
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
};

const std::vector<CellInfo>& cell_registry();
const CellInfo& cell_info(const std::string& name);  // throws UserError listing known cells
std::vector<std::string> cell_names();

}  // namespace cs
