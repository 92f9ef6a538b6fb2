// A sweep's spec: parsing and checking it, the bundled sweeps, its grid of points.
#include "sweep/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "dist/launch.h"
#include "train/launch.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/paths.h"
#include "sweep/sweep_internal.h"

namespace cs {

namespace sweep_internal {

json parse_json_file(const std::string& path) {
  try {
    return parse_json(read_file(path), "'" + path + "'");
  } catch (const json::parse_error& e) {
    throw UserError("'" + path + "' is not valid JSON: " + json_error_text(e));
  }
}

namespace {

bool excluded(const SweepSpec& spec, const std::vector<int>& idx, int64_t seed) {
  for (auto& x : spec.exclude) {
    if (!x.seeds.empty() && std::find(x.seeds.begin(), x.seeds.end(), seed) == x.seeds.end()) continue;
    bool all = true;
    for (size_t w = 0; w < x.where.size(); ++w) {
      const auto& labels = x.where[w].second;
      const size_t a = x.axis_index[w];
      all = all && std::find(labels.begin(), labels.end(), spec.axes[a].labels[idx[a]]) != labels.end();
    }
    if (all) return true;
  }
  return false;
}

}  // namespace

std::vector<SweepPoint> enumerate_points(const SweepSpec& spec) {
  std::vector<SweepPoint> out;
  const size_t A = spec.axes.size();
  std::vector<int> idx(A, 0);
  while (true) {
    for (int64_t seed : spec.seeds) {
      if (excluded(spec, idx, seed)) continue;
      SweepPoint p;
      p.index = static_cast<int>(out.size());
      p.value_index = idx;
      p.seed = seed;
      for (size_t a = 0; a < A; ++a) {
        p.labels.push_back(spec.axes[a].labels[idx[a]]);
        p.id += spec.axes[a].name + "=" + p.labels.back() + ",";
      }
      p.id += "seed=" + std::to_string(seed);
      out.push_back(std::move(p));
    }
    bool wrapped = true;  // advance the index like an odometer
    for (size_t a = A; a-- > 0;) {
      if (++idx[a] < static_cast<int>(spec.axes[a].labels.size())) {
        wrapped = false;
        break;
      }
      idx[a] = 0;
    }
    if (wrapped) break;
  }
  return out;
}

}  // namespace sweep_internal

namespace {

std::string value_label(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// Names that are safe as a directory name.
bool valid_sweep_name(const std::string& n) {
  if (n.empty() || n.size() > 100 || n[0] == '.') return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

SweepAxis parse_axis(const json& a, const std::string& where) {
  SweepAxis axis;
  if (!a.is_object())
    throw UserError(where + ": expected {\"option\": PATH, \"values\": [...]} or {\"name\": N, \"values\": [...]}");
  const std::string option = a.value("option", std::string());
  axis.name = a.value("name", option);
  if (axis.name.empty()) throw UserError(where + ": an axis needs \"option\" (an option path) or \"name\"");
  if (!a.contains("values") || !a["values"].is_array() || a["values"].empty())
    throw UserError(where + ".values: expected a non-empty array");
  const json& vals = a["values"];
  for (size_t i = 0; i < vals.size(); ++i) {
    const json& v = vals[i];
    const std::string w = where + ".values[" + std::to_string(i) + "]";
    if (v.is_object()) {
      if (!v.contains("set") || !v["set"].is_object())
        throw UserError(w + ": a named value needs \"set\": {\"section.key\": value}");
      axis.labels.push_back(v.value("label", v["set"].dump()));
      axis.sets.push_back(v["set"]);
    } else {
      if (option.empty()) throw UserError(w + ": a plain value needs the axis's \"option\" path");
      axis.labels.push_back(value_label(v));
      axis.sets.push_back(json{{option, v}});
    }
    for (auto& [path, _] : axis.sets.back().items())
      if (path.find('.') == std::string::npos)
        throw UserError(w + ": '" + path + "' is not an option path (section.key)");
  }
  std::set<std::string> seen;
  for (auto& l : axis.labels)
    if (!seen.insert(l).second) throw UserError(where + ": the value label '" + l + "' appears twice");
  return axis;
}

std::vector<std::string> name_list(const json& j, const std::string& where) {
  std::vector<std::string> out;
  if (j.is_null()) return out;
  if (j.is_string()) return {j.get<std::string>()};
  if (!j.is_array()) throw UserError(where + ": expected an axis name or a list of them");
  for (auto& x : j) {
    if (!x.is_string()) throw UserError(where + ": expected axis names (strings)");
    out.push_back(x.get<std::string>());
  }
  return out;
}

// The spec's "paper" object (SweepPaperLabel); every problem names its JSON path.
SweepPaperLabel parse_paper(const json& p) {
  SweepPaperLabel o;
  if (!p.is_object())
    throw UserError("paper: expected {\"source\", \"dataset\", \"dataset_used\", \"settings\", \"departures\"}");
  static const std::set<std::string> keys = {"source", "dataset", "dataset_used", "settings", "departures"};
  for (auto& [k, v] : p.items())
    if (!keys.count(k))
      throw UserError("paper: unknown key '" + k + "' (source, dataset, dataset_used, settings, departures)");
  auto text = [&](const json& o2, const char* k, const std::string& at) {
    if (!o2.contains(k) || !o2[k].is_string() || o2[k].get<std::string>().empty())
      throw UserError(at + "." + k + ": expected a non-empty string");
    return o2[k].get<std::string>();
  };
  o.source = text(p, "source", "paper");
  o.dataset = text(p, "dataset", "paper");
  o.dataset_used = text(p, "dataset_used", "paper");
  if (p.contains("settings")) {
    if (!p["settings"].is_object()) throw UserError("paper.settings: expected {\"section.key\": the paper's value}");
    for (auto& [k, v] : p["settings"].items())
      if (k.find('.') == std::string::npos)
        throw UserError("paper.settings: '" + k + "' is not an option path (section.key)");
    o.settings = p["settings"];
  }
  if (p.contains("departures")) {
    if (!p["departures"].is_array()) throw UserError("paper.departures: expected a list");
    for (size_t i = 0; i < p["departures"].size(); ++i) {
      const json& d = p["departures"][i];
      const std::string at = "paper.departures[" + std::to_string(i) + "]";
      if (!d.is_object()) throw UserError(at + ": expected {\"setting\", \"paper\", \"ours\", \"reason\"}");
      o.departures.push_back(
          {text(d, "setting", at), text(d, "paper", at), text(d, "ours", at), text(d, "reason", at)});
    }
  }
  return o;
}

// The spec's "exclude" list; every key must name an axis (or "seed") and every value one of its labels,
// so that a typo cannot leave the grid whole while the tables say a point was left out.
std::vector<SweepExclusion> parse_exclude(const json& j, const SweepSpec& s) {
  std::vector<SweepExclusion> out;
  if (!j.is_array()) throw UserError("exclude: expected a list of {\"where\": {AXIS: value(s)}, \"reason\": ...}");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = "exclude[" + std::to_string(i) + "]";
    const json& e = j[i];
    if (!e.is_object() || !e.contains("where") || !e["where"].is_object() || e["where"].empty())
      throw UserError(at + ": expected {\"where\": {AXIS: value or [values], \"seed\": [seeds]}, \"reason\": ...}");
    if (!e.contains("reason") || !e["reason"].is_string() || e["reason"].get<std::string>().empty())
      throw UserError(at + ".reason: expected a non-empty string (it is printed under the sweep's tables)");
    SweepExclusion x;
    x.reason = e["reason"].get<std::string>();
    for (auto& [key, v] : e["where"].items()) {
      const json vals = v.is_array() ? v : json::array({v});
      if (vals.empty()) throw UserError(at + ".where." + key + ": expected a value or a non-empty list");
      if (key == "seed") {
        for (auto& sd : vals) {
          if (!sd.is_number_integer() || std::find(s.seeds.begin(), s.seeds.end(), sd.get<int64_t>()) == s.seeds.end())
            throw UserError(at + ".where.seed: " + sd.dump() + " is not one of the spec's seeds");
          x.seeds.push_back(sd.get<int64_t>());
        }
        continue;
      }
      const std::string name = key;  // a structured binding is not captured by a lambda before C++20
      auto axis = std::find_if(s.axes.begin(), s.axes.end(), [&](const SweepAxis& a) { return a.name == name; });
      if (axis == s.axes.end()) throw UserError(at + ".where: '" + key + "' is not an axis of the grid (or \"seed\")");
      std::vector<std::string> labels;
      for (auto& lv : vals) {
        const std::string l = value_label(lv);
        if (std::find(axis->labels.begin(), axis->labels.end(), l) == axis->labels.end())
          throw UserError(at + ".where." + key + ": '" + l + "' is not one of the axis's values");
        labels.push_back(l);
      }
      x.where.emplace_back(key, labels);
    }
    // in the grid's order (a JSON object's keys come sorted by name), each with its axis's index
    SweepExclusion sorted;
    sorted.seeds = x.seeds;
    sorted.reason = x.reason;
    for (size_t a = 0; a < s.axes.size(); ++a)
      for (auto& w : x.where)
        if (w.first == s.axes[a].name) {
          sorted.where.push_back(w);
          sorted.axis_index.push_back(a);
        }
    out.push_back(std::move(sorted));
  }
  return out;
}

}  // namespace

std::string SweepExclusion::text() const {
  std::string s;
  for (auto& [axis, labels] : where) {
    std::string v;
    for (auto& l : labels) v += (v.empty() ? "" : " | ") + l;
    s += (s.empty() ? "" : ", ") + axis + "=" + v;
  }
  if (!seeds.empty()) {
    std::string v;
    for (auto sd : seeds) v += (v.empty() ? "" : " | ") + std::to_string(sd);
    s += (s.empty() ? "" : ", ") + std::string("seed=") + v;
  }
  return s + ": not run (" + reason + ")";
}

void set_option_path(json& cfg, const std::string& path, const json& value) {
  const auto dot = path.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == path.size())
    throw UserError("'" + path + "' is not an option path (section.key, e.g. model.hidden)");
  const std::string section = path.substr(0, dot), key = path.substr(dot + 1);
  if (!cfg.is_object()) throw UserError("the base configuration is not a JSON object");
  if (cfg.contains(section) && cfg[section].is_string() && section == "task") {
    // The short form "task": "char_lm" -> {"name": "char_lm"}.
    cfg[section] = json{{"name", cfg[section].get<std::string>()}};
  }
  if (value.is_null()) {
    if (cfg.contains(section) && cfg[section].is_object()) cfg[section].erase(key);
    return;
  }
  if (!cfg.contains(section) || cfg[section].is_null()) cfg[section] = json::object();
  if (!cfg[section].is_object()) throw UserError(path + ": the section '" + section + "' is not an object");
  cfg[section][key] = value;
}

SweepSpec SweepSpec::from_json(const json& j) {
  if (!j.is_object()) throw UserError("a sweep spec is a JSON object {name, base, grid, seeds, table}");
  SweepSpec s;
  s.name = j.value("name", std::string());
  if (!valid_sweep_name(s.name))
    throw UserError(
        "name: expected a sweep name of letters, digits, '-', '_' or '.' (it names the directory sweeps/<name>)");
  s.notes = j.value("notes", std::string());
  if (j.contains("paper")) s.paper = parse_paper(j["paper"]);
  if (!j.contains("base")) throw UserError("base: missing (a configuration object or a preset name)");
  const json& b = j["base"];
  if (b.is_string()) {
    const std::string preset = join_path(join_path(resources_dir(), "presets"), b.get<std::string>() + ".json");
    if (file_exists(b.get<std::string>())) s.base = sweep_internal::parse_json_file(b.get<std::string>());
    else if (file_exists(preset)) s.base = sweep_internal::parse_json_file(preset);
    else throw UserError("base: '" + b.get<std::string>() + "' is neither a config file nor a preset");
  } else if (b.is_object()) {
    s.base = b;
  } else {
    throw UserError("base: expected a configuration object or a preset name");
  }
  s.base.erase("name");
  s.base.erase("notes");
  if (j.contains("set")) {
    if (!j["set"].is_object()) throw UserError("set: expected {\"section.key\": value, ...}");
    for (auto& [p, v] : j["set"].items()) set_option_path(s.base, p, v);
  }
  const json grid = j.value("grid", json::object());
  if (grid.is_object()) {
    for (auto& [path, vals] : grid.items())
      s.axes.push_back(parse_axis(json{{"option", path}, {"values", vals}}, "grid." + path));
  } else if (grid.is_array()) {
    for (size_t i = 0; i < grid.size(); ++i) s.axes.push_back(parse_axis(grid[i], "grid[" + std::to_string(i) + "]"));
  } else {
    throw UserError("grid: expected {\"section.key\": [values]} or a list of axes");
  }
  std::set<std::string> names;
  for (auto& a : s.axes)
    if (a.name == "seed" || !names.insert(a.name).second)
      throw UserError("grid: the axis name '" + a.name + "' is used twice (or is 'seed')");
  const json seeds = j.value("seeds", json::array({1}));
  if (!seeds.is_array() || seeds.empty()) throw UserError("seeds: expected a non-empty list of integers");
  for (auto& x : seeds) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0) throw UserError("seeds: expected non-negative integers");
    s.seeds.push_back(x.get<int64_t>());
  }
  if (std::set<int64_t>(s.seeds.begin(), s.seeds.end()).size() != s.seeds.size())
    throw UserError("seeds: a seed appears twice");
  if (j.contains("exclude")) {
    s.exclude = parse_exclude(j["exclude"], s);
    if (sweep_internal::enumerate_points(s).empty()) throw UserError("exclude: leaves no point of the grid to run");
  }
  const json t = j.value("table", json::object());
  if (!t.is_object()) throw UserError("table: expected an object {rows, cols, metric, best}");
  s.table.rows = name_list(t.value("rows", json()), "table.rows");
  s.table.cols = name_list(t.value("cols", json()), "table.cols");
  s.table.metric = t.value("metric", std::string("test"));
  s.table.best = t.value("best", std::string("column"));
  if (t.contains("higher_is_better")) s.table.higher_is_better = t["higher_is_better"].get<bool>() ? 1 : 0;
  if (s.table.best != "column" && s.table.best != "row" && s.table.best != "all" && s.table.best != "none")
    throw UserError("table.best: expected column, row, all or none");
  const std::string m = s.table.metric;
  if (!(m == "test" || m == "valid" || m.rfind("test.", 0) == 0 || m.rfind("valid.", 0) == 0))
    throw UserError("table.metric: expected test, valid, test.<key> or valid.<key> (e.g. test.accuracy)");
  for (auto* v : {&s.table.rows, &s.table.cols})
    for (auto& n : *v)
      if (!names.count(n)) throw UserError("table: '" + n + "' is not an axis of the grid");
  // Axes named neither in rows nor in cols join the rows (in grid order).
  for (auto& a : s.axes)
    if (std::find(s.table.rows.begin(), s.table.rows.end(), a.name) == s.table.rows.end() &&
        std::find(s.table.cols.begin(), s.table.cols.end(), a.name) == s.table.cols.end())
      s.table.rows.push_back(a.name);
  s.source = j;
  s.source["base"] = s.base;
  s.source.erase("set");  // already applied to base
  return s;
}

std::vector<json> bundled_sweeps() {
  std::vector<json> out;
  const std::string dir = join_path(resources_dir(), "sweeps");
  if (!dir_exists(dir)) return out;
  for (auto& n : list_dir(dir)) {
    if (n.size() < 6 || n.substr(n.size() - 5) != ".json") continue;
    const std::string path = join_path(dir, n), name = n.substr(0, n.size() - 5);
    // A file that does not load is listed with its error (an installation problem to see, not
    // to hide); `sweep run NAME` then gives the same message.
    try {
      const SweepSpec spec = load_sweep_spec(path);
      out.push_back({{"name", name}, {"notes", spec.source.value("notes", "")}, {"path", path}});
    } catch (const std::exception& e) {
      out.push_back({{"name", name}, {"notes", ""}, {"path", path}, {"error", e.what()}});
    }
  }
  return out;
}

SweepSpec load_sweep_spec(const std::string& arg) {
  std::string path = arg;
  if (dir_exists(arg) && file_exists(join_path(arg, "sweep.json"))) path = join_path(arg, "sweep.json");
  else if (!file_exists(arg)) {
    const std::string b = join_path(join_path(resources_dir(), "sweeps"), arg + ".json");
    if (!file_exists(b))
      throw UserError("'" + arg + "' is neither a sweep spec file nor a bundled sweep (cellscope-cli sweep list)");
    path = b;
  }
  try {
    return SweepSpec::from_json(sweep_internal::parse_json_file(path));
  } catch (const UserError& e) {
    throw UserError(path + ": " + e.what());
  }
}

std::vector<std::string> sweep_datasets(const SweepSpec& spec) {
  std::vector<std::string> out;
  for (auto& p : sweep_internal::enumerate_points(spec)) {
    json raw = spec.base;
    try {
      for (size_t a = 0; a < spec.axes.size(); ++a)
        for (auto& [path, v] : spec.axes[a].sets[p.value_index[a]].items()) set_option_path(raw, path, v);
    } catch (const UserError&) {
      continue;  // an invalid point names no dataset (expand_sweep reports it)
    }
    if (!raw.contains("dataset") || !raw["dataset"].is_object()) continue;
    const json& d = raw["dataset"];
    const std::string name = d.contains("name") && d["name"].is_string()   ? d["name"].get<std::string>()
                             : d.contains("path") && d["path"].is_string() ? d["path"].get<std::string>()
                                                                           : std::string();
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec) {
  std::vector<SweepPoint> out = sweep_internal::enumerate_points(spec);
  std::vector<std::string> problems;
  for (auto& p : out) {
    json raw = spec.base;
    try {
      for (size_t a = 0; a < spec.axes.size(); ++a)
        for (auto& [path, v] : spec.axes[a].sets[p.value_index[a]].items()) set_option_path(raw, path, v);
      set_option_path(raw, "training.seed", p.seed);
      auto errs = validate_config(raw);
      for (auto& e : errs) problems.push_back("point " + p.id + ": " + e.str());
      if (errs.empty()) p.config = resolve_config(raw);
    } catch (const UserError& e) {
      problems.push_back("point " + p.id + ": " + e.what());
    }
  }
  if (!problems.empty()) {
    std::string msg = "sweep '" + spec.name + "': " + std::to_string(problems.size()) + " invalid point(s):";
    for (size_t i = 0; i < problems.size() && i < 20; ++i) msg += "\n  " + problems[i];
    if (problems.size() > 20) msg += "\n  ...";
    throw UserError(msg);
  }
  return out;
}

}  // namespace cs
