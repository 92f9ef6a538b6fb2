// export_torch (run/export/torch_export.h): the export for plain PyTorch, moved from the CLI so that the CLI and
// the window call one function. What each file holds: packaging/python/cellscope_torch/README.md; the choices:
// core/run/export/EXPORT_TORCH_NOTES.md.
#include "export/torch_export.h"

#include <torch/serialize.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>

#include "cells/script_cell.h"
#include "config/schema.h"
#include "data/vocab.h"
#include "export/torch_schema.h"
#include "tasks/task.h"
#include "train/checkpoint.h"
#include "train/run_store.h"
#include "train/run_task.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/own_paths.h"
#include "util/sha256.h"
#include "util/state_dict_file.h"

#ifndef CELLSCOPE_VERSION
#define CELLSCOPE_VERSION "unknown"
#endif

namespace cs {

namespace {

namespace fs = std::filesystem;

std::string export_existing_checkpoints(const std::string& run_dir) {
  const std::string dir = join_path(run_dir, "checkpoints");
  std::string out;
  if (dir_exists(dir))
    for (auto& n : list_dir(dir))
      if (n.size() > 3 && n.compare(n.size() - 3, 3, ".pt") == 0)
        out += (out.empty() ? "" : ", ") + n.substr(0, n.size() - 3);
  return out.empty() ? "none" : out;
}

std::string export_hex64(uint64_t v) {
  std::ostringstream s;
  s << std::hex << std::setw(16) << std::setfill('0') << v;
  return s.str();
}

// RFC 4648 base64 (the seq2seq vocabulary stores its SentencePiece models so); UserError on a bad character.
std::string export_base64_decode(const std::string& in, const std::string& what) {
  static const std::string abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    const auto v = abc.find(c);
    if (v == std::string::npos) throw UserError(what + ": not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// "" when `out` is absent, empty or an earlier export of this command: an export.json whose
// "format" is "cellscope-torch-export ..." and whose "files" list names every other entry (regular
// files only). Otherwise why not. --force replaces only such a folder (#52: any folder holding a
// file named export.json was deleted whole).
std::string not_an_earlier_export(const std::string& out) {
  std::error_code ec;
  if (!fs::exists(out, ec) || (fs::is_directory(out, ec) && fs::is_empty(out, ec))) return "";
  if (!fs::is_directory(out, ec)) return "not a directory";
  const std::string manifest = join_path(out, "export.json");
  std::set<std::string> listed;
  try {
    const json m = parse_json(read_file(manifest), manifest);
    if (!m.is_object() || !m.contains("format") || !m["format"].is_string() ||
        m["format"].get<std::string>().rfind("cellscope-torch-export", 0) != 0)
      return "its export.json is not one of cellscope-cli export's";
    if (!m.contains("files") || !m["files"].is_array()) return "its export.json lists no files";
    for (const auto& f : m["files"])
      if (f.is_string()) listed.insert(f.get<std::string>());
  } catch (const std::exception&) {
    return "no readable export.json";
  }
  for (const auto& e : fs::directory_iterator(out, ec)) {
    const std::string n = e.path().filename().string();
    if (n == "export.json") continue;
    if (!listed.count(n)) return "it holds '" + n + "', which its export.json does not list";
    if (!e.is_regular_file() || e.is_symlink()) return "'" + n + "' is not a regular file";
  }
  if (ec) return "it cannot be read (" + ec.message() + ")";
  return "";
}

// The run's task with the weights of checkpoint `ckpt`, taken from `ckpt_bytes`, the one read of that file that
// export.json's step and hash come from too (a training may replace the file between two reads: weights of one
// step, a step and hash of another). A script-cell run whose script is gone from model.script loads the run's own
// copy (RUN_DIR/script_cell.pt, the file the export writes anyway), which the config check and the cell compare
// with model.script_sha256 as they would the original: export has no --set to point model.script at the copy as
// a resume does. `resolved` gets the run's resolved configuration (model.script as the run recorded it); `step`
// the checkpoint's step (-1 for one without trainer state: bench and tests write such).
std::unique_ptr<Task> export_load_run_task(const std::string& run_dir, const std::string& ckpt,
                                           const std::string& ckpt_bytes, json* resolved, std::string* copy_used,
                                           int64_t* step) {
  RunStore store(run_dir);
  json raw = store.read_config();
  const std::string copy = store.path(script_copy_name());
  const json m = raw.value("model", json::object());
  std::unique_ptr<Task> task;
  if (!(m.is_object() && m.value("cell", "") == "script" && m.contains("script") && m["script"].is_string() &&
        !file_exists(m["script"].get<std::string>()) && file_exists(copy))) {
    task = make_run_task(run_dir, resolved);
  } else {
    raw["model"]["script"] = copy;
    *copy_used = copy;
    json r = load_and_resolve(raw);
    task = make_task(r, run_dir);
    r["model"]["script"] = m["script"];
    *resolved = r;
  }
  torch::serialize::InputArchive ar, s;
  read_checkpoint_bytes(ckpt_bytes, ckpt, ar);  // checksum verified
  load_checkpoint_weights(*task, ar, ckpt);
  try {
    ar.read("trainer", s);
    torch::Tensor t;
    s.read("step", t);
    *step = t.item<int64_t>();
  } catch (const std::exception&) {
    *step = -1;
  }
  return task;
}

// --out: absent, an empty directory, or (with --force) an earlier export. --force deletes --out: only
// ever an earlier export (export.json, no run files), never a run, a workspace or any other folder a
// mistyped path may name.
void check_export_destination(const std::string& out, const std::string& run_dir, bool force) {
  if (fs::exists(out) && !(fs::is_directory(out) && fs::is_empty(out)) && !force)
    throw UserError("--out '" + out + "' exists and is not empty (--force replaces an earlier export)");
  if (fs::exists(out) && !fs::is_directory(out)) throw UserError("--out '" + out + "' exists and is not a directory");
  if (fs::exists(out) && !fs::is_empty(out)) {
    std::error_code ec;
    const fs::path o = fs::weakly_canonical(out, ec), r = fs::weakly_canonical(run_dir, ec);
    const auto rel = r.lexically_relative(o);
    const bool holds_run = !rel.empty() && *rel.begin() != "..";  // --out is the run or a folder above it
    const std::string why = holds_run ? std::string("it holds the run being exported") : not_an_earlier_export(out);
    if (!why.empty())
      throw UserError("--out '" + out + "' is not an earlier export of cellscope-cli export (" + why +
                      "): --force replaces only an export; choose a new directory");
  }
}

// A TorchScript cell (model.cell = script): the run's copy of its script (RUN_DIR/script_cell.pt; the file at
// model.script for a run without one, which export_load_run_task has just checked), refused unless its SHA-256
// is the one the run recorded.
struct ScriptFile {
  std::string bytes, sha256, source;  // all empty for a run of another cell
};
ScriptFile checked_script(const json& cfg, const RunStore& store, const std::string& run_dir) {
  ScriptFile f;
  if (cfg.at("model").value("cell", "") == "script") {
    const json& m = cfg.at("model");
    const std::string recorded = m.value("script_sha256", "");
    const std::string copy = store.path(script_copy_name());
    f.source = file_exists(copy) ? copy : m.value("script", "");
    f.bytes = read_file(f.source);
    f.sha256 = sha256_hex(f.bytes);
    if (recorded.empty())
      throw UserError("run '" + run_dir + "': config.json records no model.script_sha256, so the script '" + f.source +
                      "' cannot be checked (a run records it when it starts)");
    if (f.sha256 != recorded)
      throw UserError("'" + f.source + "' is not the script run '" + run_dir + "' was trained with: its SHA-256 is " +
                      f.sha256 + ", the run recorded " + recorded +
                      " (model.script_sha256): the run's copy was changed; copy the original script (model.script, " +
                      m.value("script", "") + ") back over it");
  }
  return f;
}

// The run's vocabulary as it is (vocab.cellscope) and in the forms Python reads: vocab.json (a list, id =
// index) and, for classify / absa, labels.json; a seq2seq run's SentencePiece models (source.model,
// target.model) and any *.model file of the run. The names written are appended to `files`.
void write_vocabularies(const std::string& tmp, const RunStore& store, const std::string& run_dir, json& files) {
  const std::string vpath = store.path("vocab");
  if (file_exists(vpath)) {
    atomic_write(join_path(tmp, "vocab.cellscope"), read_file(vpath));
    files.push_back("vocab.cellscope");
    try {
      const Vocab v = Vocab::load(vpath);
      atomic_write(join_path(tmp, "vocab.json"),
                   json(v.symbols()).dump(0, ' ', false, json::error_handler_t::replace) + "\n");
      files.push_back("vocab.json");
    } catch (const UserError&) {
      // another task's vocabulary format: vocab.cellscope alone (documented in the README)
    }
  }
  if (file_exists(vpath)) {
    // seq2seq: {"format": "cellscope-seq2seq-subword", "source": base64, "target": base64} -> the
    // SentencePiece model files as they are (spm.SentencePieceProcessor(model_file=...))
    const json j = json::parse(read_file(vpath), nullptr, false);
    if (j.is_object() && j.value("format", "") == "cellscope-sentence-vocab" && j.contains("words")) {
      // classify / absa: words are ids 1.. (id 0 is <unk>); the class names in output order
      json words = json::array({"<unk>"});
      for (auto& w : j["words"]) words.push_back(w);
      atomic_write(join_path(tmp, "vocab.json"), words.dump(0, ' ', false, json::error_handler_t::replace) + "\n");
      atomic_write(join_path(tmp, "labels.json"), j.value("labels", json::array()).dump() + "\n");
      files.push_back("vocab.json");
      files.push_back("labels.json");
    }
    if (j.is_object() && j.value("format", "") == "cellscope-seq2seq-subword")
      for (const char* side : {"source", "target"})
        if (j.contains(side) && j[side].is_string()) {
          const std::string f = std::string(side) + ".model";
          atomic_write(join_path(tmp, f), export_base64_decode(j[side].get<std::string>(), vpath));
          files.push_back(f);
        }
  }
  for (auto& n : list_dir(run_dir))
    if (n.size() > 6 && n.compare(n.size() - 6, 6, ".model") == 0) {
      atomic_write(join_path(tmp, n), read_file(join_path(run_dir, n)));
      files.push_back(n);
    }
}

// The checkpoint's bytes, read once (weights, step and hash all come from them: a training may replace the
// file between two reads), with the run's task, its resolved configuration and the checks that need them.
struct LoadedRun {
  std::string ckpt, ckpt_bytes;
  json cfg;
  std::unique_ptr<Task> task;
  std::string script_copy_used;
  int64_t step = -1;
  ScriptFile script;
};

LoadedRun load_for_export(const TorchExportOptions& o, const RunStore& store) {
  LoadedRun r;
  if (!file_exists(store.path("config.json")))
    throw UserError("'" + o.run_dir + "' is not a run directory (no config.json)");
  const std::string which = export_checkpoint_name(o.checkpoint);
  try {
    r.ckpt = checkpoint_path(o.run_dir, which);
  } catch (const UserError&) {
    throw UserError("run '" + o.run_dir + "' has no checkpoint '" + o.checkpoint +
                    "' (checkpoints there: " + export_existing_checkpoints(o.run_dir) + ")");
  }
  check_export_destination(o.out, o.run_dir, o.force);
  r.ckpt_bytes = read_file(r.ckpt);
  r.task = export_load_run_task(o.run_dir, r.ckpt, r.ckpt_bytes, &r.cfg, &r.script_copy_used, &r.step);
  // A task with a vocabulary (every task today) whose run lost its vocab file: the task above built one from the
  // dataset again, which need not be the one the weights were trained with, and the export would have no
  // vocabulary to map ids to symbols (#52: it exported so, exit 0). Refused before anything is written.
  if (!r.task->vocab_text().empty() && !file_exists(store.path("vocab")))
    throw UserError("run '" + o.run_dir + "' has no vocab file (" + store.path("vocab") +
                    "): the ids of its weights cannot be mapped to symbols, so it is not exported; restore the "
                    "file from a backup or a fork of the run (a fork's vocab is its parent's, byte for byte)");
  r.script = checked_script(r.cfg, store, o.run_dir);
  return r;
}

// Every file of the export into `tmp`; export.json last, as the manifest of what is there.
json write_export(const std::string& tmp, const TorchExportOptions& o, const RunStore& store, const LoadedRun& r,
                  const NamedTensors& state, const NamedTensors& ref) {
  namespace fs = std::filesystem;
  json shapes = json::object();
  for (auto& [k, v] : state) shapes[k] = v.sizes().vec();
  // torch.save's format with a weights-only pickle (torch >= 2.6 loads with weights_only=True by default), and
  // the same tensors as safetensors (EXPORT_TORCH_NOTES.md)
  write_torch_state_dict(join_path(tmp, "model.pt"), state);
  write_safetensors(join_path(tmp, "model.safetensors"), state);
  atomic_write(join_path(tmp, "config.json"), r.cfg.dump(2) + "\n");
  json files = {"model.pt", "model.safetensors", "config.json"};
  write_vocabularies(tmp, store, o.run_dir, files);
  if (!r.script.sha256.empty()) {
    atomic_write(join_path(tmp, script_copy_name()), r.script.bytes);
    files.push_back(script_copy_name());
  }
  if (!ref.empty()) {
    write_torch_state_dict(join_path(tmp, "reference.pt"), ref);
    files.push_back("reference.pt");
  }
  json man = {{"format", torch_export_format()},
              {"format_version", kTorchExportFormat},
              {"cellscope_version", CELLSCOPE_VERSION},
              {"run", fs::absolute(o.run_dir).lexically_normal().string()},
              {"checkpoint",
               {{"name", o.checkpoint},
                {"file", fs::path(r.ckpt).filename().string()},
                {"step", r.step},
                {"bytes", r.ckpt_bytes.size()},
                {"fnv1a64", export_hex64(fnv1a64(r.ckpt_bytes.data(), r.ckpt_bytes.size()))}}},
              {"task", r.cfg.at("task").value("name", "")},
              {"cell", r.cfg.at("model").value("cell", "")},
              {"parameters", shapes},
              {"reference", !ref.empty()},
              {"files", files},
              {"schema", torch_export_schema(r.cfg)}};
  if (!r.script.sha256.empty())
    man["script"] = {{"file", script_copy_name()},
                     {"sha256", r.script.sha256},
                     {"source", fs::absolute(r.script.source).lexically_normal().string()}};
  atomic_write(join_path(tmp, "export.json"), man.dump(2) + "\n");
  return man;
}

}  // namespace

std::string export_checkpoint_name(const std::string& s) {
  if (s == "best" || s == "last") return s;
  std::string n = s.rfind("step_", 0) == 0 ? s.substr(5) : s;
  if (n.empty() || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw UserError("the checkpoint must be best, last or step_N (got '" + s + "')");
  return n;
}

TorchExport export_torch(const TorchExportOptions& opts) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  TorchExportOptions o = opts;
  while (o.out.size() > 1 && o.out.back() == '/') o.out.pop_back();
  if (o.out.empty()) throw UserError("the export folder's name is empty");
  const RunStore store(o.run_dir);
  // Everything that can fail on bad input before anything is written.
  const LoadedRun r = load_for_export(o, store);
  NamedTensors state;
  auto& model = *r.task->model();
  for (auto& p : model.named_parameters(true)) state.emplace_back(p.key(), p.value());
  for (auto& b : model.named_buffers(true)) state.emplace_back(b.key(), b.value());
  const NamedTensors ref = r.task->export_reference();

  // Written into a folder of this call's own beside `out` (a unique name: a user's "X.tmp", or another export to
  // the same `out`, is never touched), then renamed onto `out`.
  const std::string tmp = make_temp_dir_beside(o.out);
  TorchExport done;
  try {
    done.manifest = write_export(tmp, o, store, r, state, ref);
    // `out` is absent, empty or an earlier export: checked above, and again now (files may have come into it while
    // the export was made).
    if (const std::string why = not_an_earlier_export(o.out); !why.empty())
      throw UserError("--out '" + o.out + "' is no longer an earlier export (" + why + "); it is left as it is");
    replace_dir_with(tmp, o.out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  done.out = fs::absolute(o.out).lexically_normal().string();
  done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done.checkpoint_file = fs::path(r.ckpt).filename().string();
  done.step = r.step;
  done.config = r.cfg;
  done.tensors = static_cast<int64_t>(state.size());
  done.script_copy_used = r.script_copy_used;
  return done;
}

}  // namespace cs
