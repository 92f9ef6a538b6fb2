#include "config/schema.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "cells/registry.h"
#include "config/common_options.h"
#include "tasks/task.h"
#include "util/error.h"

namespace cs {

bool option_applies(const OptionSpec& o, const std::string& cell, const std::string& task) {
  const auto& tasks = o.tasks;
  const auto& cells = o.cells;
  const auto& key = o.key;
  const bool opt_in = o.opt_in;
  if (!tasks.empty() && std::find(tasks.begin(), tasks.end(), task) == tasks.end()) return false;
  if (opt_in) {
    const auto& reg = cell_registry();
    auto it = std::find_if(reg.begin(), reg.end(), [&](const CellInfo& c) { return c.name == cell; });
    if (it == reg.end()) return false;
    return std::find(it->common_options.begin(), it->common_options.end(), key) != it->common_options.end();
  }
  if (!cells.empty() && std::find(cells.begin(), cells.end(), cell) == cells.end()) return false;
  return true;
}

namespace {

// The common sections' specs from their field tables, in declaration order.
template <class Opts>
void append(std::vector<OptionSpec>& v, const OptionTable<Opts>& table) {
  for (auto& o : table.specs()) v.push_back(o);
}

std::vector<OptionSpec> build_options() {
  std::vector<OptionSpec> v;
  // ---- task
  append(v, task_section_table());
  for (auto& t : task_registry()) v.back().choices.push_back(t.name);
  // ---- dataset
  append(v, dataset_option_table());
  // ---- model
  const size_t cell_at = v.size();
  append(v, model_option_table());
  for (auto& c : cell_registry()) v[cell_at].choices.push_back(c.name);
  for (auto& c : cell_registry())
    for (auto o : c.options) {
      o.section = o.section.empty() ? "model" : o.section;
      if (o.cells.empty()) o.cells = {c.name};
      v.push_back(o);
    }
  // ---- training
  append(v, training_option_table());
  for (auto& t : task_registry())
    for (auto o : t.options) {
      if (o.tasks.empty()) o.tasks = {t.name};
      v.push_back(o);
    }
  return v;
}

const char* type_name(OptType t) {
  switch (t) {
    case OptType::Int: return "an integer";
    case OptType::Float: return "a number";
    case OptType::Bool: return "true or false";
    case OptType::String: return "a string";
    case OptType::Enum: return "one of the listed names";
  }
  return "?";
}

std::string dump_short(const json& v) {
  // replace: a string that is not UTF-8 (a --set value, a config file in Latin-1) is shown with
  // U+FFFD instead of making dump() throw type_error 316 (exit 1; found by tests/fuzz).
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

void check_value(const OptionSpec& o, const json& v, std::vector<ConfigError>& errs) {
  const std::string p = o.path();
  auto bad_type = [&] {
    errs.push_back({p, std::string("expected ") + type_name(o.type) + ", got " + dump_short(v)});
  };
  switch (o.type) {
    case OptType::Int: {
      if (!v.is_number()) return bad_type();
      double d = v.get<double>();
      if (std::floor(d) != d) return bad_type();
      if (d < o.min || d > o.max) {
        std::ostringstream ss;
        ss << "expected an integer in [" << o.min << ", " << (o.max >= 1e300 ? std::string("inf") : std::to_string((long long)o.max))
           << "], got " << dump_short(v);
        errs.push_back({p, ss.str()});
      }
      break;
    }
    case OptType::Float: {
      if (!v.is_number()) return bad_type();
      double d = v.get<double>();
      if (!std::isfinite(d) || d < o.min || d > o.max) {
        std::ostringstream ss;
        ss << "expected a number in [" << o.min << ", " << o.max << "], got " << dump_short(v);
        errs.push_back({p, ss.str()});
      }
      break;
    }
    case OptType::Bool:
      if (!v.is_boolean()) return bad_type();
      break;
    case OptType::String:
      if (!v.is_string()) return bad_type();
      break;
    case OptType::Enum: {
      std::string list;
      for (auto& c : o.choices) list += (list.empty() ? "" : ", ") + c;
      if (!v.is_string() || std::find(o.choices.begin(), o.choices.end(), v.get<std::string>()) == o.choices.end())
        errs.push_back({p, "expected one of: " + list + "; got " + dump_short(v)});
      break;
    }
  }
}

// The config accepts "task": "char_lm" as a shorthand for "task": {"name": "char_lm"}.
json normalised(const json& cfg) {
  json c = cfg;
  if (c.contains("task") && c["task"].is_string()) c["task"] = json{{"name", c["task"]}};
  return c;
}

const std::vector<std::string> kSections = {"task", "dataset", "model", "training"};

}  // namespace

const std::vector<OptionSpec>& all_options() {
  static const std::vector<OptionSpec> v = build_options();
  return v;
}

std::vector<OptionSpec> options_for(const std::string& cell, const std::string& task) {
  std::vector<OptionSpec> out;
  std::set<std::string> seen;
  for (auto& o : all_options())
    if (option_applies(o, cell, task) && seen.insert(o.path()).second) out.push_back(o);
  return out;
}

std::vector<ConfigError> validate_config(const json& raw) {
  std::vector<ConfigError> errs;
  if (!raw.is_object()) {
    errs.push_back({"$", "expected a JSON object with sections task, dataset, model, training; got " + dump_short(raw)});
    return errs;
  }
  json cfg = normalised(raw);
  for (auto& [k, v] : cfg.items()) {
    if (k == "name" || k == "notes" || k == "$schema") {
      if (!v.is_string()) errs.push_back({k, "expected a string"});
      continue;
    }
    if (std::find(kSections.begin(), kSections.end(), k) == kSections.end()) {
      errs.push_back({k, "unknown section (expected task, dataset, model, training, name, notes)"});
      continue;
    }
    if (!v.is_object()) errs.push_back({k, "expected an object, got " + dump_short(v)});
  }
  if (!errs.empty()) return errs;

  // Which cell and task? (validated like any option; fall back to defaults to keep checking)
  std::string task = task_section_table().defaults().name, cell = model_option_table().defaults().cell;
  if (cfg.contains("task") && cfg["task"].contains("name") && cfg["task"]["name"].is_string())
    task = cfg["task"]["name"].get<std::string>();
  if (cfg.contains("model") && cfg["model"].contains("cell") && cfg["model"]["cell"].is_string())
    cell = cfg["model"]["cell"].get<std::string>();

  for (const auto& section : kSections) {
    if (!cfg.contains(section)) continue;
    for (auto& [key, val] : cfg[section].items()) {
      std::vector<const OptionSpec*> specs;
      for (auto& o : all_options())
        if (o.section == section && o.key == key) specs.push_back(&o);
      const std::string path = section + "." + key;
      if (specs.empty()) {
        std::string known;
        std::set<std::string> ks;
        for (auto& o : all_options())
          if (o.section == section && option_applies(o, cell, task) && ks.insert(o.key).second)
            known += (known.empty() ? "" : ", ") + o.key;
        errs.push_back({path, "unknown option (known here: " + known + ")"});
        continue;
      }
      const OptionSpec* spec = nullptr;
      for (auto* s : specs)
        if (option_applies(*s, cell, task)) spec = s;
      if (!spec) {
        std::set<std::string> where;
        for (auto* s : specs) {
          if (!s->tasks.empty() && std::find(s->tasks.begin(), s->tasks.end(), task) == s->tasks.end()) {
            for (auto& t : s->tasks) where.insert("task " + t);
          } else if (s->opt_in) {
            for (auto& c : cell_registry())
              if (std::find(c.common_options.begin(), c.common_options.end(), key) != c.common_options.end())
                where.insert("cell " + c.name);
          } else {
            for (auto& c : s->cells) where.insert("cell " + c);
          }
        }
        std::string w;
        for (auto& x : where) w += (w.empty() ? "" : ", ") + x;
        errs.push_back({path, "option not available for cell '" + cell + "' with task '" + task + "' (available for: " + w + ")"});
        continue;
      }
      if (val.is_null() && spec->default_value.is_null()) continue;  // explicit "unset"
      check_value(*spec, val, errs);
    }
  }
  if (!errs.empty()) return errs;
  // Cross-field checks on the resolved config.
  json res = resolve_config(cfg);
  const auto& reg = cell_registry();
  auto ci = std::find_if(reg.begin(), reg.end(), [&](const CellInfo& c) { return c.name == cell; });
  if (ci != reg.end() && ci->check) ci->check(res, errs);
  const auto& treg = task_registry();
  auto ti = std::find_if(treg.begin(), treg.end(), [&](const TaskInfo& t) { return t.name == task; });
  if (ti != treg.end() && ti->check) ti->check(res, errs);
  return errs;
}

json resolve_config(const json& raw) {
  json cfg = normalised(raw);
  for (auto& s : kSections)
    if (!cfg.contains(s)) cfg[s] = json::object();
  std::string task = cfg["task"].value("name", task_section_table().defaults().name);
  std::string cell = cfg["model"].value("cell", model_option_table().defaults().cell);
  cfg["task"]["name"] = task;
  cfg["model"]["cell"] = cell;
  for (auto& o : options_for(cell, task)) {
    auto& sec = cfg[o.section];
    if (!sec.contains(o.key) && !o.default_value.is_null()) sec[o.key] = o.default_value;
    // integers given as 512.0 are stored as integers
    if (o.type == OptType::Int && sec.contains(o.key) && sec[o.key].is_number_float())
      sec[o.key] = static_cast<int64_t>(sec[o.key].get<double>());
    if (o.type == OptType::Float && sec.contains(o.key) && sec[o.key].is_number_integer())
      sec[o.key] = sec[o.key].get<double>();
  }
  return cfg;
}

void apply_override(json& cfg, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError("--set '" + assignment + "': expected SECTION.KEY=VALUE, e.g. model.hidden=512");
  std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  json v;
  try {
    v = parse_json(value, "--set '" + path + "=...'");
  } catch (const json::parse_error&) {
    v = value;  // bare words are strings: model.cell=gru
  }
  // A document that is not an object (an array, a number...) has no sections to set: before this
  // check, cfg[section] threw nlohmann's type_error (exit 1, library text; found by tests/fuzz).
  if (!cfg.is_object() && !cfg.is_null())
    throw UserError("--set '" + assignment + "': the configuration is not a JSON object");
  if (path == "task") {
    cfg["task"] = json{{"name", v}};
    return;
  }
  auto dot = path.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == path.size())
    throw UserError("--set '" + assignment + "': expected SECTION.KEY=VALUE, e.g. model.hidden=512");
  std::string section = path.substr(0, dot), key = path.substr(dot + 1);
  if (section == "task" && cfg.contains("task") && cfg["task"].is_string())
    cfg["task"] = json{{"name", cfg["task"]}};
  if (!cfg.contains(section) || !cfg[section].is_object()) cfg[section] = json::object();
  cfg[section][key] = v;
}

json load_and_resolve(const json& cfg, const std::string& what) {
  auto errs = validate_config(cfg);
  if (!errs.empty()) {
    std::string msg = "invalid " + what + ":";
    for (auto& e : errs) msg += "\n  " + e.str();
    throw UserError(msg);
  }
  return resolve_config(cfg);
}

}  // namespace cs
