#include "train/launch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

#include "cells/script_cell.h"
#include "dist/dist.h"
#include "tasks/task.h"
#include "train/dataset_hash.h"
#include "util/error.h"

namespace cs {

int gui_training_threads() {
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, hw - 1);
}

namespace {
// Merge `over` into `base` section by section (objects merged key by key).
void merge_into(json& base, const json& over) {
  if (!over.is_object()) return;
  for (auto& [k, v] : over.items()) {
    if (v.is_object() && base.contains(k) && base[k].is_object()) merge_into(base[k], v);
    else base[k] = v;
  }
}

std::string short_value(const json& v) {
  if (v.is_null()) return "(unset)";
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string absolute_path(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf)) return buf;
  return p;
}
}  // namespace

std::vector<std::string> architecture_changes(const json& before, const json& after) {
  std::vector<std::string> out;
  auto diff = [&](const std::string& section, const std::string& key) {
    const json a = before.contains(section) && before[section].contains(key) ? before[section][key] : json();
    const json b = after.contains(section) && after[section].contains(key) ? after[section][key] : json();
    if (a != b) out.push_back(section + "." + key + ": " + short_value(a) + " -> " + short_value(b));
  };
  for (const std::string section : {"task", "dataset"}) {
    std::vector<std::string> keys;
    for (const json* c : {&before, &after})
      if (c->contains(section) && (*c)[section].is_object())
        for (auto& [k, v] : (*c)[section].items())
          if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    for (auto& k : keys)
      if (!(section == "dataset" && k == "path")) diff(section, k);
  }
  diff("model", "cell");
  diff("training", "optimizer");
  diff("training", "batch");
  return out;
}

bool run_dir_holds_this_run(const json& raw_cfg, const std::string& run_dir) {
  if (run_dir.empty()) return false;
  RunStore store(run_dir);
  if (!file_exists(store.path("config.json"))) return false;  // absent, empty or stranded: a new run
  json want = load_and_resolve(raw_cfg);
  json have = load_and_resolve(store.read_config(), store.path("config.json"));
  // A script cell is recorded by its absolute path and SHA-256 (pin_script), as the new run would be.
  if (want.contains("model") && want["model"].is_object() && want["model"].contains("script"))
    pin_script(want["model"]);
  // Where a run executes is not what it is: threads and device (a launcher's cuda:LOCAL_RANK) aside.
  for (json* c : {&want, &have})
    if (c->contains("training") && (*c)["training"].is_object())
      for (const char* k : {"threads", "device"}) (*c)["training"].erase(k);
  if (want == have) return true;
  const json a = have.flatten(), b = want.flatten();
  std::vector<std::string> diffs;
  auto name = [](std::string k) {
    std::replace(k.begin(), k.end(), '/', '.');
    return k.empty() ? k : k.substr(1);
  };
  for (auto& [k, v] : a.items())
    if (!b.contains(k) || b.at(k) != v)
      diffs.push_back(name(k) + ": " + short_value(v) + " there, " + short_value(b.contains(k) ? b.at(k) : json()) +
                      " here");
  for (auto& [k, v] : b.items())
    if (!a.contains(k)) diffs.push_back(name(k) + ": (unset) there, " + short_value(v) + " here");
  std::string list;
  for (size_t i = 0; i < diffs.size() && i < 5; ++i) list += "\n  " + diffs[i];
  if (diffs.size() > 5) list += "\n  (and " + std::to_string(diffs.size() - 5) + " more)";
  throw UserError("run directory '" + run_dir + "' already holds a run of another configuration:" + list +
                  "\nThe same command with the same configuration resumes it (a restarted job); --resume " + run_dir +
                  " continues that run as it is; choose another --run-dir for this configuration.");
}

std::pair<std::string, std::string> parse_fork_source(const std::string& spec) {
  const auto at = spec.find_last_of('@');
  if (at != std::string::npos && at > 0) {
    const std::string tail = spec.substr(at + 1);
    const bool digits =
        !tail.empty() && std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits || tail == "best" || tail == "last") return {spec.substr(0, at), tail};
    if (!dir_exists(spec))
      throw UserError("--fork '" + spec + "': expected RUN_DIR[@STEP] with STEP a step number, best or last");
  }
  return {spec, "last"};
}

namespace {

// The resolved configuration of a resumed or forked run: `src`'s config.json with the overrides
// raw_cfg, refused when they change the architecture. *model_changes: the model options they change
// ("model.dropout: 0.1 -> 0.3", named when a checkpoint's shape check fails); notes for the user
// (the run's own copy of its script read) go to *notes.
json overridden_source_config(const RunStore& src, const std::string& source, const json& raw_cfg, bool resuming,
                              bool forking, std::vector<std::string>* notes, std::string* model_changes) {
  json raw = src.read_config();
  // A script moved or edited since: the run's own copy, when it is still the recorded file.
  if (const std::string note = use_run_script_copy(raw, source); !note.empty()) notes->push_back(note);
  // A script cell's file may be re-pointed (at the run's copy, or a moved file): the recorded
  // SHA-256 decides whether it is the same cell, so the path override applies to `before` too.
  json before_raw = raw;
  if (raw_cfg.is_object() && raw_cfg.contains("model") && raw_cfg["model"].is_object() &&
      raw_cfg["model"].contains("script") && before_raw.contains("model") && before_raw["model"].is_object())
    before_raw["model"]["script"] = raw_cfg["model"]["script"];
  const json before = load_and_resolve(before_raw);
  merge_into(raw, raw_cfg);
  if (forking) raw.erase("parent");  // the child's own parent is recorded below
  json cfg = load_and_resolve(raw);
  for (auto& [k, v] : cfg.at("model").items())
    if (!before.at("model").contains(k) || before.at("model").at(k) != v)
      *model_changes += (model_changes->empty() ? "" : ", ") + std::string("model.") + k + ": " +
                        short_value(before.at("model").contains(k) ? before.at("model").at(k) : json()) + " -> " +
                        short_value(v);
  const auto changes = architecture_changes(before, cfg);
  if (!changes.empty()) {
    std::string list;
    for (auto& c : changes) list += "\n  " + c;
    throw UserError(std::string(resuming ? "cannot resume '" : "cannot fork '") + source +
                    "' with a different architecture:" + list +
                    "\nA resume or fork may change training options (training.steps, lr, clip, weight_decay, "
                    "patience, ...) and model options that keep every parameter's shape (dropout, lambda). To "
                    "train on from a checkpoint with other training options, fork it into a new run: "
                    "cellscope-cli train --fork RUN_DIR[@STEP] --set training.KEY=VALUE; for another "
                    "architecture start a new run from a configuration.");
  }
  return cfg;
}

// dataset.json's text (dataset_record) in a temporary file of this call's own, for create_atomically
// to copy in; "" when the temporary folder cannot be written (the run goes on without the record).
std::string dataset_record_file(const json& dataset) {
  std::error_code ec;
  const auto tmp_root = std::filesystem::temp_directory_path(ec);
  // A name of this call's own (mkstemp): two runs started at once in one process (the window's
  // training and sweep workers) shared the pid-named file and could record each other's (#52).
  std::string tmpl = ((ec ? std::filesystem::path("/tmp") : tmp_root) / "cellscope-dataset-XXXXXX").string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd >= 0) {
    ::close(fd);
    try {
      atomic_write(tmpl, dataset_record(dataset).dump(2) + "\n");
      return tmpl;
    } catch (const std::exception&) {
      std::remove(tmpl.c_str());  // a temp directory that cannot be written: the run goes on without it
    }
  }
  return "";
}

}  // namespace

LaunchedRun start_run(const json& raw_cfg, const LaunchOptions& o) {
  LaunchedRun out;
  const bool resuming = !o.resume_dir.empty();
  const bool forking = !o.fork_dir.empty();
  if (resuming && forking) throw UserError("a run is either resumed or forked, not both");
  const bool root = !o.dist || o.dist->rank == 0;
  const std::string source = resuming ? o.resume_dir : o.fork_dir;  // the run read from
  std::string parent_checkpoint;
  std::string model_changes;  // model options changed by the overrides, named when a shape check fails
  if (resuming || forking) {
    RunStore src(source);
    if (!file_exists(src.path("config.json")))
      throw UserError("'" + source + "' is not a run directory (no config.json)");
    if (resuming) {
      out.store = std::make_shared<RunStore>(source);
      // A second writer (another resume, a sweep training this point) is refused here,
      // before anything is read or written.
      if (root) out.store->lock_for_writing();
    }
    out.cfg = overridden_source_config(src, source, raw_cfg, resuming, forking, &out.notes, &model_changes);
    if (forking) parent_checkpoint = checkpoint_path(source, o.fork_which);
  } else {
    out.cfg = load_and_resolve(raw_cfg);  // every problem, with its JSON path; nothing created yet
  }
  // A script cell's file: its absolute path and SHA-256 recorded in the new run's config (a resume
  // keeps its own; cells/SCRIPT_CELL_NOTES.md), its bytes copied into the run directory below.
  const std::string script = resuming ? std::string() : pin_script(out.cfg["model"]);
  const int threads = out.cfg.at("training").at("threads").get<int>();
  set_threads(o.threads > 0 ? o.threads : threads > 0 ? threads : o.default_threads);
  seed_everything(out.cfg.at("training").at("seed").get<uint64_t>());
  // Build the task (loads and checks the data) before any directory is created.
  auto task = make_task(out.cfg, !resuming && !forking && !o.vocab_dir.empty() ? o.vocab_dir : source);
  const std::string vocab = forking && file_exists(RunStore(source).path("vocab"))
                                ? read_file(RunStore(source).path("vocab"))  // the parent's, byte for byte
                                : task->vocab_text();
  if (!resuming) {
    const std::string ws = o.workspace.empty() ? default_workspace() : o.workspace;
    // Other ranks never write the run directory (a store object all the same: the ranks
    // must agree on whether checkpoints are taken).
    const std::string dir = !root || !o.run_dir.empty() ? o.run_dir : new_run_dir(ws, out.cfg);
    out.store = std::make_shared<RunStore>(dir);
  }
  out.trainer = std::make_unique<Trainer>(out.cfg, std::move(task), out.store, o.dist);
  // A shape mismatch at load names the parameter; say which changed options caused it.
  auto load = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const UserError& e) {
      if (model_changes.empty()) throw;
      throw UserError(std::string(e.what()) + "\n(the options changed: " + model_changes + ")");
    }
  };
  if (resuming) {
    // load + check last.pt (or the newest intact step_<N>.pt), then trim metrics.jsonl; config.json only after that
    load([&] { out.trainer->resume(); });
    out.resumed = true;
    if (root && !out.trainer->already_finished()) out.store->write_config(out.cfg);
    return out;
  }
  if (forking) {
    load([&] { out.trainer->fork_from(parent_checkpoint); });  // reads the parent, writes nothing
    const int64_t n = out.trainer->step();
    if (out.cfg.at("training").at("steps").get<int64_t>() <= n)
      throw UserError("training.steps (" + std::to_string(out.cfg.at("training").at("steps").get<int64_t>()) +
                      ") must exceed the step of the checkpoint forked from (" + std::to_string(n) +
                      "): set it with --set training.steps=N or --steps N");
    out.cfg["parent"] =
        json{{"run_dir", absolute_path(source)}, {"step", n}, {"checkpoint", basename_of(parent_checkpoint)}};
    out.forked = true;
  }
  if (o.before_create) o.before_create(*out.trainer, out.cfg);  // import_run.cpp: the weights, before any directory
  // config.json + vocab, then one rename: a kill leaves no run directory or a whole one
  std::vector<std::pair<std::string, std::string>> copies;
  if (!script.empty()) copies.emplace_back(script_copy_name(), script);
  // dataset.json: the dataset's files by SHA-256 as this run found them (what a report compares
  // with later, inspect/report/REPORT_NOTES.md), created with the rest of the directory.
  std::string dataset_tmp;
  if (root && out.cfg.contains("dataset")) {
    dataset_tmp = dataset_record_file(out.cfg["dataset"]);
    if (!dataset_tmp.empty()) copies.emplace_back("dataset.json", dataset_tmp);
  }
  try {
    if (root) out.store->create_atomically(out.cfg, vocab, copies);
  } catch (...) {
    if (!dataset_tmp.empty()) std::remove(dataset_tmp.c_str());
    throw;
  }
  if (!dataset_tmp.empty()) std::remove(dataset_tmp.c_str());
  return out;
}

}  // namespace cs
