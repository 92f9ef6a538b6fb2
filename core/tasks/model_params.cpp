#include "tasks/model_params.h"

#include <map>

#include "tasks/char_lm.h"
#include "util/error.h"

namespace cs {

std::vector<std::pair<std::string, int64_t>> model_parameter_breakdown(const json& cfg, int64_t vocab) {
  const std::string task = cfg.at("task").at("name").get<std::string>();
  if (task != "char_lm")
    throw UserError("params --vocab builds the model without data for task char_lm only (task is '" + task + "')");
  CharLMModel net(cfg.at("model"), vocab);
  std::vector<std::pair<std::string, int64_t>> out;
  std::map<std::string, size_t> idx;
  for (auto& p : net->named_parameters(/*recurse=*/true)) {
    // group by the first two path components, e.g. "stack.layer0" (as Task::parameter_breakdown)
    const std::string k = p.key();
    std::string group = k;
    auto d1 = k.find('.');
    if (d1 != std::string::npos) {
      auto d2 = k.find('.', d1 + 1);
      group = k.substr(0, d2 == std::string::npos ? d1 : d2);
    }
    auto it = idx.find(group);
    if (it == idx.end()) {
      it = idx.emplace(group, out.size()).first;
      out.emplace_back(group, 0);
    }
    out[it->second].second += p.value().numel();
  }
  return out;
}

}  // namespace cs
