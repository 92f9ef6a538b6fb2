#include "train/metrics.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <utility>

#include "util/error.h"

namespace cs {

json MetricsRecord::to_json() const {
  json j = {{"step", step}, {"epoch", epoch}, {"elapsed", elapsed}};
  if (has_train_flops()) j["train_flops"] = train_flops;
  if (has_wall_time()) j["wall_time"] = wall_time;
  if (eval) {
    j["eval"] = true;
    j["split"] = split;
  }
  for (auto& [k, v] : values) j[k] = std::isfinite(v) ? json(v) : json(nullptr);
  for (auto& [k, v] : labels) j[k] = v;
  return j;
}

MetricsRecord MetricsRecord::from_json(const json& j) {
  MetricsRecord r;
  for (auto& [k, v] : j.items()) {
    if (k == "step") r.step = v.get<int64_t>();
    else if (k == "epoch") r.epoch = v.get<double>();
    else if (k == "elapsed") r.elapsed = v.get<double>();
    else if (k == "train_flops")
      r.train_flops = v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
    else if (k == "wall_time") r.wall_time = v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
    else if (k == "eval") r.eval = v.get<bool>();
    else if (k == "split") r.split = v.get<std::string>();
    else if (v.is_number()) r.values[k] = v.get<double>();
    else if (v.is_null()) r.values[k] = std::numeric_limits<double>::quiet_NaN();
    else if (v.is_string()) r.labels[k] = v.get<std::string>();
  }
  return r;
}

namespace {

struct Line {
  size_t no = 0;
  json value;
};

// The JSON lines of a file with their line numbers. Only the LAST non-empty line may be
// unparseable (the torn line of a process killed mid-write, or a reader racing the writer): it
// is dropped. Any earlier one is a malformed file: `problem` receives "<path>:<line>: ..." and
// the lines before it are returned (when `problem` is null, UserError is thrown instead).
std::vector<Line> json_lines(const std::string& path, std::string* problem) {
  std::vector<Line> out;
  std::ifstream in(path);
  std::vector<std::pair<size_t, std::string>> raw;
  std::string l;
  for (size_t no = 1; std::getline(in, l); ++no)
    if (!l.empty() && l.find_first_not_of(" \t\r") != std::string::npos) raw.emplace_back(no, std::move(l));
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string where = path + ":" + std::to_string(raw[i].first);
    try {
      out.push_back({raw[i].first, parse_json(raw[i].second, where)});
    } catch (const std::exception& e) {
      if (i + 1 == raw.size()) break;  // torn last line: ignored
      const std::string msg = where + ": malformed line (" + json_error_text(e) +
                              "); only the last line of a JSON-lines file may be cut short";
      if (!problem) throw UserError(msg);
      *problem = msg;
      break;
    }
  }
  return out;
}

// The lines of `path` that are sound metrics records, with the records; the first line that is
// not goes to `problem` (or UserError when `problem` is null).
std::vector<MetricsRecord> records(const std::string& path, std::string* problem, std::vector<json>* lines = nullptr) {
  std::vector<MetricsRecord> out;
  for (auto& l : json_lines(path, problem)) {
    const std::string where = path + ":" + std::to_string(l.no);
    std::string msg;
    if (!l.value.is_object()) {
      msg = where + ": expected a JSON object per line";
    } else {
      try {
        out.push_back(MetricsRecord::from_json(l.value));
        if (lines) lines->push_back(std::move(l.value));
        continue;
      } catch (const std::exception& e) {
        msg = where + ": malformed metrics line (" + json_error_text(e) + ")";
      }
    }
    if (!problem) throw UserError(msg);
    if (problem->empty()) *problem = msg;
    break;
  }
  return out;
}

}  // namespace

std::vector<json> read_json_lines(const std::string& path) {
  std::vector<json> out;
  for (auto& l : json_lines(path, nullptr)) out.push_back(std::move(l.value));
  return out;
}

std::vector<MetricsRecord> read_metrics(const std::string& path) { return records(path, nullptr); }

std::vector<json> read_metrics_lines(const std::string& path) {
  std::vector<json> lines;
  records(path, nullptr, &lines);
  return lines;
}

std::vector<MetricsRecord> read_metrics(const std::string& path, std::string* problem) {
  std::string p;
  auto out = records(path, &p);
  if (problem) *problem = p;
  return out;
}

}  // namespace cs
