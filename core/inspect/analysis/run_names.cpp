// Short names of compared runs (run_names.h).
#include "analysis/run_names.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "cells/registry.h"
#include "config/common_options.h"
#include "train/run_store.h"
#include "util/error.h"

namespace cs {

namespace {

std::string dir_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return basename_of(d);
}

// "1e-3", "2.5e-4" for small magnitudes; "0.05", "5", "1.5" otherwise (%g, 4 digits).
std::string short_number(double v) {
  char buf[64];
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a < 0.01) {
    int e = static_cast<int>(std::floor(std::log10(a)));
    double m = v / std::pow(10.0, e);
    if (std::fabs(std::fabs(m) - 10.0) < 1e-9) m /= 10, ++e;
    std::snprintf(buf, sizeof buf, "%.3ge%d", m, e);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return short_number(v.get<double>());
  return v.dump();
}

// 300000 -> "300k", 1500000 -> "1.5M", 1200 -> "1.2k", 999 -> "999".
std::string count_text(int64_t n) {
  char buf[64];
  if (n >= 1000000) std::snprintf(buf, sizeof buf, "%.4gM", static_cast<double>(n) / 1e6);
  else if (n >= 1000) std::snprintf(buf, sizeof buf, "%.4gk", static_cast<double>(n) / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

std::string spaced(std::string k) {
  std::replace(k.begin(), k.end(), '_', ' ');
  return k;
}

// Flattened "section.key" -> value of a resolved config (top-level scalars as "key").
void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (!j.is_object()) return;
  for (auto& [k, v] : j.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) flatten(v, key, out);
    else out[key] = v;
  }
}

// Options that never make a name: bookkeeping that leaves the trained model unchanged,
// free text, and what the cell token already says.
bool never_named(const std::string& key) {
  // Besides the bookkeeping options (config/common_options.h): the evaluation's schedule and
  // batching (they may change results, but a name made of them reads as noise), and what the
  // cell token already says.
  static const std::set<std::string> skip = {"training.eval_every", "training.eval_batch", "model.cell",
                                             "model.depth",         "model.base",          "model.block"};
  return is_bookkeeping_option(key) || skip.count(key) != 0;
}

// Order of the parts of a name: what a reader compares first.
int priority(const std::string& key) {
  static const std::vector<std::string> order = {
      "task.name",           "model.hidden",    "model.layers",   "model.embed",
      "model.zones",         "model.filter",    "model.capsules", "model.routing_iters",
      "model.filter_length", "model.attention", "training.lr",    "model.zone_disagreement",
      "training.optimizer",  "dataset.name",    "dataset.path",   "dataset.max_chars",
      "training.batch",      "training.bptt",   "model.dropout",  "model.candidate_dropout",
      "model.layer_norm",    "training.steps",  "training.seed"};
  auto it = std::find(order.begin(), order.end(), key);
  return it == order.end() ? static_cast<int>(order.size()) : static_cast<int>(it - order.begin());
}

}  // namespace

std::string cell_short_name(const json& model) {
  if (!model.is_object() || !model.contains("cell") || !model["cell"].is_string()) return "";
  const std::string cell = model["cell"].get<std::string>();
  const CellInfo* info = find_cell_info(cell);  // each cell's own (CellInfo::short_name, short_name_suffix)
  if (!info) return cell;                       // a cell this build lacks: its name as the config has it
  std::string s = info->short_name.empty() ? cell : info->short_name;
  if (info->short_name_suffix) return s + info->short_name_suffix(model);
  const int64_t depth =
      model.contains("depth") && model["depth"].is_number_integer() ? model["depth"].get<int64_t>() : 0;
  if (depth == 1) s += "+DT";
  else if (depth > 1) s += "+DT" + std::to_string(depth);
  return s;
}

std::string option_short(const std::string& key, const json& v) {
  const std::string leaf = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
  const bool num = v.is_number(), integer = v.is_number_integer();
  if (key == "model.hidden" && integer) return "h" + value_text(v);
  if (key == "model.embed" && integer) return "e" + value_text(v);
  if (key == "model.layers" && integer) return value_text(v) + (v.get<int64_t>() == 1 ? " layer" : " layers");
  if (key == "model.zones" && integer) return value_text(v) + " zones";
  if (key == "model.filter" && integer) return "f" + value_text(v);
  if (key == "model.capsules" && integer) return value_text(v) + " capsules";
  if (key == "model.routing_iters" && integer) return value_text(v) + " iters";
  if (key == "model.filter_length" && integer) return "filter " + value_text(v);
  if (key == "model.zone_disagreement" && num) return "\u03bb " + value_text(v);
  if (key == "model.dropout" && num) return "dropout " + value_text(v);
  if (key == "model.candidate_dropout" && num) return "cand. dropout " + value_text(v);
  if (key == "model.layer_norm" && v.is_boolean()) return v.get<bool>() ? "LN" : "no LN";
  if (key == "training.lr" && num) return "lr " + value_text(v);
  if (key == "training.weight_decay" && num) return "wd " + value_text(v);
  if (key == "training.steps" && integer) return count_text(v.get<int64_t>()) + " steps";
  if (key == "training.seed") return "seed " + value_text(v);
  if (key == "training.optimizer" && v.is_string()) return v.get<std::string>();
  if (key == "task.name" && v.is_string()) return v.get<std::string>();
  if (key == "dataset.name" && v.is_string()) return v.get<std::string>();
  if (key == "dataset.path" && v.is_string()) return basename_of(v.get<std::string>());
  if (key == "dataset.max_chars" && integer)
    return v.get<int64_t>() <= 0 ? std::string("all chars") : count_text(v.get<int64_t>()) + " chars";
  if (v.is_boolean()) return (v.get<bool>() ? "" : "no ") + spaced(leaf);
  return spaced(leaf) + " " + value_text(v);
}

RunIdentity read_run_identity(const std::string& run_dir) {
  RunIdentity r;
  r.dir = run_dir;
  RunStore store(run_dir);
  if (file_exists(store.path("config.json"))) {
    try {
      r.config = store.read_config();
    } catch (const std::exception&) {
      r.config = json::object();  // named by its directory
    }
  }
  r.label = store.read_label();
  return r;
}

std::vector<std::string> comparison_names(const std::vector<RunIdentity>& runs, const RunNameOptions& opt) {
  const size_t n = runs.size();
  std::vector<std::string> out(n);
  auto model_of = [](const RunIdentity& r) {
    return r.config.is_object() && r.config.contains("model") ? r.config["model"] : json::object();
  };
  if (n == 1) {
    const std::string cell = cell_short_name(model_of(runs[0]));
    out[0] = !runs[0].label.empty() ? runs[0].label
             : cell.empty()         ? dir_name(runs[0].dir)
                                    : cell + " (" + dir_name(runs[0].dir) + ")";
    return out;
  }
  // The parts each run can be named by: the cell token when cells (or their deep
  // transition, MC-RNN block/base) differ, then every option all the runs have whose
  // values differ.
  std::vector<std::map<std::string, json>> flat(n);
  for (size_t i = 0; i < n; ++i) flatten(runs[i].config, "", flat[i]);
  std::vector<std::string> cells(n);
  for (size_t i = 0; i < n; ++i) cells[i] = cell_short_name(model_of(runs[i]));
  const bool cells_differ =
      std::any_of(cells.begin(), cells.end(), [&](const std::string& c) { return c != cells[0]; });
  std::vector<std::string> keys;
  for (auto& [k, v] : flat[0]) {
    if (never_named(k) || std::find(opt.ignore_keys.begin(), opt.ignore_keys.end(), k) != opt.ignore_keys.end())
      continue;
    bool everywhere = true, differs = false;
    for (size_t i = 1; i < n; ++i) {
      auto it = flat[i].find(k);
      if (it == flat[i].end()) everywhere = false;
      else if (it->second != v) differs = true;
    }
    if (everywhere && differs) keys.push_back(k);
  }
  std::stable_sort(keys.begin(), keys.end(),
                   [](const std::string& a, const std::string& b) { return priority(a) < priority(b); });
  auto name_with = [&](size_t i, size_t parts) {
    if (!runs[i].label.empty()) return runs[i].label;
    std::string s = cells_differ ? cells[i] : std::string();
    for (size_t k = 0; k < keys.size() && k < parts; ++k) {
      const std::string p = option_short(keys[k], flat[i].at(keys[k]));
      if (!p.empty()) s += (s.empty() ? "" : " ") + p;
    }
    return s.empty() ? dir_name(runs[i].dir) : s;
  };
  auto all_distinct = [&] {
    std::set<std::string> seen(out.begin(), out.end());
    return seen.size() == out.size();
  };
  // At most max_parts options (the cell token not counted), more only while two names are equal.
  size_t parts = std::min(opt.max_parts, keys.size());
  for (;; ++parts) {
    for (size_t i = 0; i < n; ++i) out[i] = name_with(i, parts);
    if (all_distinct() || parts >= keys.size()) break;
  }
  // Still equal (the same configuration, or equal labels): the directory tells them apart.
  std::map<std::string, int> count;
  for (auto& s : out) ++count[s];
  for (size_t i = 0; i < n; ++i)
    if (count[out[i]] > 1) out[i] += " (" + dir_name(runs[i].dir) + ")";
  return out;
}

std::vector<std::string> comparison_names_of_dirs(const std::vector<std::string>& run_dirs, const RunNameOptions& opt) {
  std::vector<RunIdentity> ids;
  for (auto& d : run_dirs) ids.push_back(read_run_identity(d));
  return comparison_names(ids, opt);
}

}  // namespace cs
