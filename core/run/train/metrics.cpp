#include "train/metrics.h"

#include <cmath>
#include <fstream>
#include <limits>

namespace cs {

json MetricsRecord::to_json() const {
  json j = {{"step", step}, {"epoch", epoch}, {"elapsed", elapsed}};
  if (eval) {
    j["eval"] = true;
    j["split"] = split;
  }
  for (auto& [k, v] : values) j[k] = std::isfinite(v) ? json(v) : json(nullptr);
  return j;
}

MetricsRecord MetricsRecord::from_json(const json& j) {
  MetricsRecord r;
  for (auto& [k, v] : j.items()) {
    if (k == "step") r.step = v.get<int64_t>();
    else if (k == "epoch") r.epoch = v.get<double>();
    else if (k == "elapsed") r.elapsed = v.get<double>();
    else if (k == "eval") r.eval = v.get<bool>();
    else if (k == "split") r.split = v.get<std::string>();
    else if (v.is_number()) r.values[k] = v.get<double>();
    else if (v.is_null()) r.values[k] = std::numeric_limits<double>::quiet_NaN();
  }
  return r;
}

std::vector<json> read_json_lines(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string l;
  while (std::getline(in, l)) {
    if (l.empty()) continue;
    try {
      out.push_back(parse_json(l, path));
    } catch (...) {
      // torn last line of a killed run: ignore
    }
  }
  return out;
}

std::vector<MetricsRecord> read_metrics(const std::string& path) {
  std::vector<MetricsRecord> out;
  for (auto& j : read_json_lines(path)) {
    if (!j.is_object()) continue;
    try {
      out.push_back(MetricsRecord::from_json(j));
    } catch (...) {
      // a line with a field of the wrong type: skipped like a torn one
    }
  }
  return out;
}

}  // namespace cs
