#include "config/schema.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

#include <unistd.h>

#include "cells/registry.h"
#include "config/common_options.h"
#include "data/tokenizer.h"
#include "data/utf8.h"
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
    case OptType::Int:
      return "an integer";
    case OptType::Float:
      return "a number";
    case OptType::Bool:
      return "true or false";
    case OptType::String:
      return "a string";
    case OptType::Enum:
      return "one of the listed names";
  }
  return "?";
}

void check_value(const OptionSpec& o, const json& v, std::vector<ConfigError>& errs) {
  const std::string p = o.path();
  auto bad_type = [&] { errs.push_back({p, std::string("expected ") + type_name(o.type) + ", got " + dump_short(v)}); };
  switch (o.type) {
    case OptType::Int: {
      if (!v.is_number()) return bad_type();
      double d = v.get<double>();
      if (std::floor(d) != d) return bad_type();
      // Integers are read as int64: nothing beyond 2^53 (the largest a JSON number, a double,
      // holds exactly), whatever the option's own range says.
      const double lo = std::max(o.min, -kMaxExactInteger), hi = std::min(o.max, kMaxExactInteger);
      // (an integer literal is compared exactly: 2^53 + 1 reads as the double 2^53)
      const bool beyond = (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxExactInteger)) ||
                          (v.is_number_integer() && !v.is_number_unsigned() &&
                           v.get<int64_t>() < -static_cast<int64_t>(kMaxExactInteger));
      if (beyond || d < lo || d > hi) {
        std::ostringstream ss;
        ss << "expected an integer in [" << std::to_string((long long)lo) << ", " << std::to_string((long long)hi)
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
    case OptType::Enum:
      if (!v.is_string() || std::find(o.choices.begin(), o.choices.end(), v.get<std::string>()) == o.choices.end())
        errs.push_back({p, choice_error(o.choices, v)});
      break;
  }
}

// The config accepts "task": "char_lm" as a shorthand for "task": {"name": "char_lm"}.
json normalised(const json& cfg) {
  json c = cfg;
  if (c.contains("task") && c["task"].is_string()) c["task"] = json{{"name", c["task"]}};
  return c;
}

const std::vector<std::string> kSections = {"task", "dataset", "model", "training"};

// training.device: "cpu", "cuda" or "cuda:N" (whether CUDA is there is the trainer's check).
bool valid_device(const std::string& d) {
  if (d == "cpu" || d == "cuda") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5 || d.size() > 8) return false;
  return d.find_first_not_of("0123456789", 5) == std::string::npos;
}

std::string gigabytes(double bytes) {
  std::ostringstream ss;
  ss << std::fixed << std::setprecision(1) << bytes / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return ss.str();
}

// What a resolved config asks of the program and the machine (datasets/README.md and
// docs/RELIABILITY.md, "Bad input and limits").
void check_resources(const json& res, const std::string& task, std::vector<ConfigError>& errs) {
  const json& tr = res.at("training");
  const std::string device = tr.value("device", std::string("cpu"));
  if (!valid_device(device)) {
    errs.push_back({"training.device", "'" + device + "' is not a device (expected cpu, cuda or cuda:N)"});
    return;
  }
  if (device != "cpu") return;  // the estimate below is for main memory
  const MemoryEstimate m = training_memory_lower_bound(res, task);
  const double have = physical_memory_bytes();
  if (have > 0 && m.total() > have) {
    const bool states = m.states > m.parameters;
    errs.push_back(
        {states ? (task == "classify" || task == "absa" ? "training.batch" : "training.bptt") : "model.hidden",
         "this configuration needs at least " + gigabytes(m.total()) + " of memory to train (" +
             gigabytes(m.parameters) + " for the recurrent weights and their gradients, " + gigabytes(m.states) +
             " for one batch's hidden states), more than this machine's " + gigabytes(have) +
             ": reduce model.hidden, model.layers, training.batch or the sequence length"});
  }
}

}  // namespace

const std::vector<OptionSpec>& all_options() {
  static const std::vector<OptionSpec> v = build_options();
  return v;
}

std::vector<OptionSpec> options_for(const std::string& cell, const std::string& task) {
  std::vector<OptionSpec> out;
  std::set<std::string> seen;
  const CellInfo* ci = nullptr;
  for (auto& c : cell_registry())
    if (c.name == cell) ci = &c;
  for (auto& o : all_options())
    if (option_applies(o, cell, task) && seen.insert(o.path()).second) {
      out.push_back(o);
      // a cell's own default of a common option it opts into (CellInfo::common_defaults)
      if (ci && o.opt_in && ci->common_defaults.count(o.key)) out.back().default_value = ci->common_defaults.at(o.key);
    }
  return out;
}

// The "parent" record `train --fork` writes (train/launch.h): the checkpoint a run started from.
static void check_parent_record(const json& v, std::vector<ConfigError>& errs) {
  if (!v.is_object()) {
    errs.push_back(
        {"parent",
         "expected an object {\"run_dir\": string, \"step\": integer, \"checkpoint\": string}, got " + dump_short(v)});
    return;
  }
  for (auto& [pk, pv] : v.items())
    if (pk != "run_dir" && pk != "step" && pk != "checkpoint")
      errs.push_back({"parent." + pk, "unknown key (expected run_dir, step, checkpoint)"});
  for (const char* need : {"run_dir", "checkpoint"})
    if (!v.contains(need) || !v[need].is_string()) errs.push_back({std::string("parent.") + need, "expected a string"});
  if (!v.contains("step") || !v["step"].is_number_integer() || v["step"].get<int64_t>() < 0)
    errs.push_back({"parent.step", "expected a non-negative integer"});
}

// The "imported" record `cellscope-cli import` writes (train/import_run.h): the weights a run was made from.
static void check_imported_record(const json& v, std::vector<ConfigError>& errs) {
  if (!v.is_object()) {
    errs.push_back(
        {"imported", "expected an object {\"dir\", \"weights\", \"weights_sha256\", ...}, got " + dump_short(v)});
    return;
  }
  for (auto& [ik, iv] : v.items()) {
    if (ik == "source_step") {
      if (!iv.is_number_integer() || iv.get<int64_t>() < 0)
        errs.push_back({"imported.source_step", "expected a non-negative integer"});
    } else if (ik != "dir" && ik != "weights" && ik != "weights_sha256" && ik != "source_run" && ik != "time") {
      errs.push_back(
          {"imported." + ik, "unknown key (expected dir, weights, weights_sha256, source_run, source_step, time)"});
    } else if (!iv.is_string()) {
      errs.push_back({"imported." + ik, "expected a string"});
    }
  }
}

std::vector<ConfigError> validate_config(const json& raw) {
  std::vector<ConfigError> errs;
  if (!raw.is_object()) {
    errs.push_back(
        {"$", "expected a JSON object with sections task, dataset, model, training; got " + dump_short(raw)});
    return errs;
  }
  json cfg = normalised(raw);
  for (auto& [k, v] : cfg.items()) {
    if (k == "name" || k == "notes" || k == "$schema") {
      if (!v.is_string()) errs.push_back({k, "expected a string"});
      continue;
    }
    if (k == "parent") {  // written by `train --fork` (train/launch.h): the checkpoint a run started from
      check_parent_record(v, errs);
      continue;
    }
    if (k == "imported") {  // written by `cellscope-cli import` (train/import_run.h): the weights a run was made from
      check_imported_record(v, errs);
      continue;
    }
    if (std::find(kSections.begin(), kSections.end(), k) == kSections.end()) {
      errs.push_back({k, "unknown section (expected task, dataset, model, training, name, notes, parent, imported)"});
      continue;
    }
    if (!v.is_object()) errs.push_back({k, "expected an object, got " + dump_short(v)});
  }
  if (!errs.empty()) return errs;

  // dataset.locale (word_lm, classify, absa, cloze, seq2seq): a language ICU knows, or "" (data/tokenizer.h)
  if (cfg.contains("dataset") && cfg["dataset"].is_object() && cfg["dataset"].contains("locale") &&
      cfg["dataset"]["locale"].is_string())
    if (const std::string why = locale_error(cfg["dataset"]["locale"].get<std::string>()); !why.empty())
      errs.push_back({"dataset.locale", why});

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
        errs.push_back(
            {path, "option not available for cell '" + cell + "' with task '" + task + "' (available for: " + w + ")"});
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
  // dataset.format: one the task reads (the registry, data/dataset_formats.h).
  if (res.contains("dataset"))
    if (const std::string why = format_task_error(read_dataset_options(res["dataset"]).format, task); !why.empty())
      errs.push_back({"dataset.format", why});
  if (errs.empty()) check_resources(res, task, errs);
  return errs;
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

MemoryEstimate training_memory_lower_bound(const json& res, const std::string& task) {
  // Doubles throughout: the products of the allowed ranges (65536^3 x 16 ...) do not fit int64.
  auto num = [&](const char* section, const char* key, double dflt) {
    const json& s = res.contains(section) ? res.at(section) : json::object();
    return s.contains(key) && s.at(key).is_number() ? s.at(key).get<double>() : dflt;
  };
  const double E = num("model", "embed", 1), H = num("model", "hidden", 1), L = num("model", "layers", 1);
  const double B = num("training", "batch", 1);
  // Sequence length of one training batch: bptt for the language models; for the sentence
  // tasks dataset.max_len when set (0 = the data decides: counted as 1, still a lower bound).
  double T = 1;
  if (task == "char_lm" || task == "word_lm") T = num("training", "bptt", 1);
  else if (num("dataset", "max_len", 0) > 0) T = num("dataset", "max_len", 0);
  MemoryEstimate m;
  // Every cell maps its input and its previous state to at least one hidden-sized vector per
  // layer: H x (E + H) weights in the first layer, H x 2H in each further one; float32, and a
  // gradient of the same size (tests/core/test_bad_input.cpp checks the bound against every cell).
  m.parameters = 4.0 * 2.0 * (H * (E + H) + (L - 1) * H * 2 * H);
  // Backpropagation through time keeps at least one hidden state per step, layer and sequence.
  m.states = 4.0 * B * T * H * L;
  return m;
}

json as_written(json cfg) {
  if (!cfg.is_object()) return cfg;
  const auto name_of = [&](const char* section, const char* key) -> std::string {
    const auto it = cfg.find(section);
    if (it == cfg.end() || !it->is_object()) return "";
    const auto k = it->find(key);
    return k != it->end() && k->is_string() ? k->get<std::string>() : "";
  };
  const std::string task = name_of("task", "name"), cell = name_of("model", "cell");
  auto ds = cfg.find("dataset");
  if (task.empty() || cell.empty() || ds == cfg.end() || !ds->is_object()) return cfg;
  // Options added after runs were written, whose absence means what those runs computed.
  struct Legacy {
    const char* section;
    const char* key;
    const char* value;
  };
  static const Legacy kLegacy[] = {
      {"dataset", "tokenizer", "legacy"},         // data/TOKENIZER_NOTES.md
      {"model", "gcn_degree", "signed_clamped"},  // cells/MZU_NOTES.md "GCN degree"
      {"model", "state_clamp", "off"},            // cells/MCRNN_NOTES.md "GRU and RNN bases"
      {"model", "bridge", "output"},              // tasks/SEQ2SEQ_NOTES.md "Initial decoder state"
  };
  for (const auto& l : kLegacy) {
    auto sec = cfg.find(l.section);
    if (sec == cfg.end() || !sec->is_object() || sec->contains(l.key)) continue;
    for (const auto& o : all_options())
      if (o.section == l.section && o.key == l.key && option_applies(o, cell, task)) (*sec)[l.key] = l.value;
  }
  return cfg;
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
  {
    const size_t bad =
        utf8_validate(reinterpret_cast<const unsigned char*>(assignment.data()), assignment.size(), nullptr);
    if (bad != std::string::npos) {
      static const char* hex = "0123456789ABCDEF";
      const unsigned char c = static_cast<unsigned char>(assignment[bad]);
      throw UserError("--set " + (bad > eq ? assignment.substr(0, eq) + "=..." : std::string("...")) +
                      ": not valid UTF-8 (byte 0x" + hex[c >> 4] + hex[c & 15] + " at byte " + std::to_string(bad) +
                      " of the assignment); options are UTF-8 text");
    }
  }
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
  if (section == "task" && cfg.contains("task") && cfg["task"].is_string()) cfg["task"] = json{{"name", cfg["task"]}};
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
