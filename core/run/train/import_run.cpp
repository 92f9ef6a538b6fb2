// A run from an export folder whose weights came back from PyTorch (import_run.h, IMPORT_NOTES.md).
#include "train/import_run.h"

#include <stdlib.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "config/json.h"
#include "tasks/task.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "util/error.h"
#include "util/text.h"
#include "util/sha256.h"
#include "util/state_dict_file.h"

namespace cs {

namespace {

namespace fs = std::filesystem;

// The export's vocabulary as a `vocab` file in a private folder of this call (mkdtemp), which the task
// reads as a resumed run's; removed with this object (its one file, then the folder).
struct VocabFolder {
  std::string dir;
  explicit VocabFolder(const std::string& bytes) {
    std::error_code ec;
    const fs::path root = fs::temp_directory_path(ec);
    std::string t = ((ec ? fs::path("/tmp") : root) / "cellscope-import-XXXXXX").string();
    if (!::mkdtemp(t.data())) throw UserError("cannot create a temporary folder '" + t + "'");
    dir = t;
    atomic_write(join_path(dir, "vocab"), bytes);
  }
  ~VocabFolder() {
    ::unlink(join_path(dir, "vocab").c_str());
    ::rmdir(dir.c_str());
  }
  VocabFolder(const VocabFolder&) = delete;
  VocabFolder& operator=(const VocabFolder&) = delete;
};

json read_json(const std::string& path) {
  try {
    return parse_json(read_file(path), path);
  } catch (const json::exception& e) {
    throw UserError("'" + path + "' is not valid JSON: " + json_error_text(e));
  }
}

std::string first_of(const std::vector<std::string>& v, size_t n = 6) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < n; ++i) s += "\n  " + v[i];
  if (v.size() > n) s += "\n  ... and " + std::to_string(v.size() - n) + " more";
  return s;
}

// An export folder's files, checked to be there (IMPORT_NOTES.md, "What it reads").
struct ExportFolder {
  std::string dir;  // absolute
  std::string man_path, cfg_path, vocab_path, weights;
  json man;  // export.json
  json raw;  // config.json without the exported run's "parent" and "imported"; a script cell reads the export's script
};

ExportFolder read_export_folder(const std::string& given) {
  if (given.empty()) throw UserError("import: no folder given (an export folder: cellscope-cli export RUN --out DIR)");
  if (!dir_exists(given)) throw UserError("'" + given + "' does not exist or is not a folder");
  ExportFolder f;
  f.dir = fs::absolute(given).lexically_normal().string();
  f.man_path = join_path(f.dir, "export.json");
  if (!file_exists(f.man_path))
    throw UserError(
        "'" + given +
        "' is not a Cellscope export (no export.json): make one with cellscope-cli export RUN_DIR --out DIR, "
        "change its weights in PyTorch and write them back with cellscope_torch.save_export(model, DIR)");
  f.man = read_json(f.man_path);
  if (!f.man.is_object() || !f.man.contains("format") || !f.man["format"].is_string() ||
      f.man["format"].get<std::string>().rfind("cellscope-torch-export", 0) != 0)
    throw UserError("'" + f.man_path +
                    "' is not an export manifest (its \"format\" is not \"cellscope-torch-export ...\")");
  f.cfg_path = join_path(f.dir, "config.json");
  if (!file_exists(f.cfg_path)) throw UserError("'" + given + "' has no config.json (the configuration of the model)");
  f.raw = read_json(f.cfg_path);
  if (!f.raw.is_object()) throw UserError("'" + f.cfg_path + "' is not a configuration (not a JSON object)");
  f.raw.erase("parent");  // the exported run's own history; this run records where it came from below
  f.raw.erase("imported");
  // A TorchScript cell: the script the export carries (its SHA-256 is checked against the configuration's).
  if (f.raw.contains("model") && f.raw["model"].is_object() && f.raw["model"].value("cell", "") == "script") {
    if (!f.man.contains("script") || !f.man["script"].is_object() || !f.man["script"].contains("file") ||
        !f.man["script"]["file"].is_string())
      throw UserError("'" + f.man_path + "' names no script file for this script-cell model");
    f.raw["model"]["script"] = join_path(f.dir, f.man["script"]["file"].get<std::string>());
  }
  f.vocab_path = join_path(f.dir, "vocab.cellscope");
  if (!file_exists(f.vocab_path))
    throw UserError("'" + given + "' has no vocab.cellscope (the vocabulary the weights' rows belong to)");
  f.weights = join_path(f.dir, "model.safetensors");
  if (!file_exists(f.weights))
    throw UserError("'" + given +
                    "' has no model.safetensors: write the weights with cellscope_torch.save_export(model, DIR)");
  return f;
}

// The tensors of the file (by_name) copied into `model`'s parameters and buffers of their names,
// each checked first: its shape, its kind (floating or not), finite values; the file must hold every
// tensor of the model and nothing else. Returns how many were copied; UserError listing what does
// not fit (the first six of each kind), before the run directory is made.
int64_t put_weights(torch::nn::Module& model, const std::map<std::string, at::Tensor>& by_name,
                    const std::string& weights, const std::string& cfg_path, const json& cfg) {
  int64_t copied = 0;
  std::vector<std::string> missing, wrong, bad_values;
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  auto put = [&](const std::string& name, at::Tensor dst) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      missing.push_back(name + " " + shape_text(dst.sizes()));
      return;
    }
    used.insert(name);
    const at::Tensor& src = it->second;
    if (src.sizes() != dst.sizes()) {
      wrong.push_back(name + ": " + shape_text(src.sizes()) + " in the file, " + shape_text(dst.sizes()) +
                      " in the model");
      return;
    }
    if (src.is_floating_point() != dst.is_floating_point()) {
      wrong.push_back(name + ": " + std::string(c10::toString(src.scalar_type())) + " in the file, " +
                      std::string(c10::toString(dst.scalar_type())) + " in the model");
      return;
    }
    if (src.is_floating_point() && !torch::isfinite(src.to(torch::kFloat64)).all().item<bool>()) {
      bad_values.push_back(name);
      return;
    }
    dst.copy_(src.to(dst.dtype()));
    ++copied;
  };
  for (auto& p : model.named_parameters(true)) put(p.key(), p.value());
  for (auto& b : model.named_buffers(true)) put(b.key(), b.value());
  std::vector<std::string> extra;
  for (auto& [name, t] : by_name)
    if (!used.count(name)) extra.push_back(name + " " + shape_text(t.sizes()));
  if (!missing.empty() || !wrong.empty() || !extra.empty() || !bad_values.empty()) {
    std::string msg = "'" + weights + "' does not fit the model of '" + cfg_path + "' (" +
                      cfg.at("model").value("cell", "") + ", hidden " +
                      std::to_string(cfg.at("model").value("hidden", 0)) + "); nothing was written:";
    if (!wrong.empty()) msg += "\nshape or type differs:" + first_of(wrong);
    if (!missing.empty()) msg += "\nin the model, not in the file:" + first_of(missing);
    if (!extra.empty()) msg += "\nin the file, not in the model:" + first_of(extra);
    if (!bad_values.empty()) msg += "\nNaN or Inf values:" + first_of(bad_values);
    if (!missing.empty() || !extra.empty())
      msg +=
          "\n(tensor names are Cellscope's: write the model with cellscope_torch.save_export, which also renames a "
          "torch.nn module from cellscope_torch.to_torch_nn back through from_torch_nn)";
    throw UserError(msg);
  }
  return copied;
}

// The run's life after its creation: both checkpoints (the weights, step 0), the valid and test
// evaluations at step 0 (metrics.jsonl) and the summary, "finished" (IMPORT_NOTES.md, "What the run holds").
void finish_imported_run(LaunchedRun& run, const ExportFolder& f, const std::string& sha, const std::string& label,
                         ImportedRun& out) {
  Trainer& trainer = *run.trainer;
  Task& task = trainer.task();
  const std::string ck = run.store->checkpoint_dir();
  trainer.save_checkpoint(join_path(ck, "last.pt"));
  trainer.save_checkpoint(join_path(ck, "best.pt"));
  out.primary_metric = task.primary_metric();
  RunSummary s;
  s.task = task.name();
  s.cell = run.cfg.at("model").at("cell").get<std::string>();
  s.primary_metric = out.primary_metric;
  s.lower_is_better = task.lower_is_better();
  s.parameters = task.parameter_count();
  s.unit = task.unit_name();
  s.started = now_iso();
  auto evaluate = [&](const std::string& split) {
    const EvalResult er = task.evaluate(split);
    MetricsRecord r;
    r.step = 0;
    r.eval = true;
    r.split = split;
    r.values = er.metrics;
    r.labels = er.labels;
    r.wall_time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    run.store->append_metrics(r.to_json());
    const auto m = er.metrics.find(out.primary_metric);
    if (m == er.metrics.end()) throw UserError("the " + split + " evaluation gave no " + out.primary_metric);
    return std::make_pair(m->second, er.units);
  };
  const auto v = evaluate("valid");
  out.valid = v.first;
  s.has_best = true;
  s.best_valid = v.first;
  s.best_step = 0;
  s.valid_units = v.second;
  const auto t = evaluate("test");
  out.test = t.first;
  out.has_test = true;
  s.has_test = true;
  s.test_metric = t.first;
  s.test_units = t.second;
  s.status = "finished";
  s.reason = "imported from " + f.dir + " (model.safetensors, SHA-256 " + sha.substr(0, 16) + "...)";
  s.updated = now_iso();
  run.store->write_summary(s);
  run.store->log("imported from " + f.dir + " (model.safetensors, SHA-256 " + sha +
                 "): " + std::to_string(out.tensors) + " tensors; valid " + out.primary_metric + " " +
                 std::to_string(out.valid) + ", test " + std::to_string(out.test));
  if (!label.empty()) run.store->write_label(label);
  out.weights_sha256 = sha;
}

}  // namespace

ImportedRun import_run(const ImportOptions& o) {
  if (!o.launch.resume_dir.empty() || !o.launch.fork_dir.empty() || o.launch.before_create)
    throw std::logic_error("import_run: a new run's launch options only");
  const ExportFolder f = read_export_folder(o.dir);
  // Read once: the tensors and their hash come from the same bytes.
  const std::string bytes = read_file(f.weights);
  const std::string sha = sha256_hex(bytes);
  std::map<std::string, at::Tensor> by_name;
  for (auto& [name, t] : parse_safetensors(bytes, f.weights)) by_name[name] = t;

  VocabFolder vocab(read_file(f.vocab_path));
  LaunchOptions lo = o.launch;
  lo.vocab_dir = vocab.dir;
  ImportedRun out;
  lo.before_create = [&](Trainer& trainer, json& cfg) {
    out.tensors = put_weights(*trainer.task().model(), by_name, f.weights, f.cfg_path, cfg);
    json rec = {{"dir", f.dir}, {"weights", "model.safetensors"}, {"weights_sha256", sha}, {"time", now_iso()}};
    const json& man = f.man;
    if (man.contains("run") && man["run"].is_string()) rec["source_run"] = man["run"];
    if (man.contains("checkpoint") && man["checkpoint"].is_object() && man["checkpoint"].contains("step") &&
        man["checkpoint"]["step"].is_number_integer() && man["checkpoint"]["step"].get<int64_t>() >= 0)
      rec["source_step"] = man["checkpoint"]["step"];
    cfg["imported"] = rec;
  };
  LaunchedRun run = start_run(f.raw, lo);
  out.run_dir = run.store->dir();
  // The directory exists from here: a failure removes it, made by this call (#52's rule).
  try {
    finish_imported_run(run, f, sha, o.label, out);
  } catch (...) {
    run.trainer.reset();
    std::error_code ec;
    fs::remove_all(out.run_dir, ec);
    throw;
  }
  return out;
}

}  // namespace cs
