// What `cellscope-cli export` writes into export.json for the Python package (packaging/python/cellscope_torch)
// so that it reads Cellscope's schema instead of restating it: the export format's version, which the package
// checks, and the "schema" object of one run, generated from the cell and task registries and the option
// tables (config/schema.h). The package's README.md ("export.json's schema") documents the fields.
#pragma once
#include <string>

#include "config/json.h"

namespace cs {

// The version of the export's layout; export.json's "format" is "cellscope-torch-export N" and its
// "format_version" N. 2: export.json carries "schema" (below). cellscope_torch refuses a version it does not
// read, naming it. Raise it whenever the package must read something new to rebuild a model.
inline constexpr int kTorchExportFormat = 2;
std::string torch_export_format();  // "cellscope-torch-export 2"

// The schema of the resolved configuration `cfg` (a run's config.json as resolved):
//   "cell", "family": model.cell and its registry family (CellInfo::family);
//   "options": every model.* option that applies to this cell and task (options_for), key ->
//              {"type": int|float|bool|string|enum, "default": this cell's default (null: none), "choices": [...]
//              (enum only)};
//   "cells": every registered cell -> its family; "tasks": every registered task;
//   "base" (model.cell = mcrnn): {"cell", "family", "model": the resolved section the base is built from
//              (mcrnn_base_model: its own options at their defaults)}.
json torch_export_schema(const json& cfg);

}  // namespace cs
