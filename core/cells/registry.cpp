#include "cells/registry.h"

#include "util/error.h"

namespace cs {

const std::vector<CellInfo>& cell_registry() {
  static const std::vector<CellInfo> reg = [] {
    std::vector<CellInfo> v;
    register_baseline_cells(v);
    register_mzu_cells(v);
    register_mcrnn_cells(v);
    register_cru_cells(v);
    // Further cell families register here (one line each).
    return v;
  }();
  return reg;
}

const CellInfo& cell_info(const std::string& name) {
  for (auto& c : cell_registry())
    if (c.name == name) return c;
  std::string known;
  for (auto& c : cell_registry()) known += (known.empty() ? "" : ", ") + c.name;
  throw UserError("unknown cell '" + name + "' (known: " + known + ")");
}

std::vector<std::string> cell_names() {
  std::vector<std::string> v;
  for (auto& c : cell_registry()) v.push_back(c.name);
  return v;
}

}  // namespace cs
