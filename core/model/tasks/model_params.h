// Parameter counts of a task's model built without its data (cellscope-cli params --vocab N).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "config/json.h"

namespace cs {

// Build the model of a resolved config with a vocabulary of `vocab` symbols (no data
// loaded) and return its parameter count grouped like Task::parameter_breakdown().
// Supported for char_lm; other tasks throw UserError.
std::vector<std::pair<std::string, int64_t>> model_parameter_breakdown(const json& resolved_cfg, int64_t vocab);

}  // namespace cs
