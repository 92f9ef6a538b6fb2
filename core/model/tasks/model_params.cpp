#include "tasks/model_params.h"

#include "tasks/char_lm.h"
#include "tasks/task.h"
#include "util/error.h"

namespace cs {

std::vector<std::pair<std::string, int64_t>> model_parameter_breakdown(const json& cfg, int64_t vocab) {
  const std::string task = cfg.at("task").at("name").get<std::string>();
  if (task != "char_lm")
    throw UserError("params --vocab builds the model without data for task char_lm only (task is '" + task + "')");
  CharLMModel net(cfg.at("model"), vocab);
  return parameter_breakdown_of(*net);
}

}  // namespace cs
