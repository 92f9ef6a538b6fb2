#include "cells/registry.h"

#include "util/error.h"

// The cell families, in registry order: ONE line each. X(f) names the family's
// `void f(std::vector<CellInfo>&)`, defined in the family's own .cpp (cells/README.md).
#define CELLSCOPE_CELL_FAMILIES(X) \
  X(register_baseline_cells)       \
  X(register_mzu_cells)            \
  X(register_mcrnn_cells)          \
  X(register_cru_cells)            \
  X(register_hornn_cells)          \
  X(register_hmrnn_cells)          \
  X(register_script_cells)

namespace cs {

#define CELLSCOPE_DECLARE_FAMILY(f) void f(std::vector<CellInfo>& out);
CELLSCOPE_CELL_FAMILIES(CELLSCOPE_DECLARE_FAMILY)
#undef CELLSCOPE_DECLARE_FAMILY

const std::vector<CellInfo>& cell_registry() {
  static const std::vector<CellInfo> reg = [] {
    std::vector<CellInfo> v;
#define CELLSCOPE_REGISTER_FAMILY(f) f(v);
    CELLSCOPE_CELL_FAMILIES(CELLSCOPE_REGISTER_FAMILY)
#undef CELLSCOPE_REGISTER_FAMILY
    return v;
  }();
  return reg;
}

const CellInfo* find_cell_info(const std::string& name) {
  for (auto& c : cell_registry())
    if (c.name == name) return &c;
  return nullptr;
}

const CellInfo& cell_info(const std::string& name) {
  if (const CellInfo* c = find_cell_info(name)) return *c;
  std::string known;
  for (auto& c : cell_registry()) known += (known.empty() ? "" : ", ") + c.name;
  throw UserError("unknown cell '" + name + "' (known: " + known + ")");
}

std::vector<std::string> cell_names() {
  std::vector<std::string> v;
  for (auto& c : cell_registry()) v.push_back(c.name);
  return v;
}

std::string fast_path_refusal(const json& model) {
  const std::string cell = resolved<std::string>(model, "model", "cell");
  const CellInfo& c = cell_info(cell);
  if (!c.fast_path_refusal) return "cell '" + c.name + "' has no fast path";
  return c.fast_path_refusal(model);
}

}  // namespace cs

// A unity batch's next files do not see this file's macros (tests/check_unity.py).
#undef CELLSCOPE_CELL_FAMILIES
