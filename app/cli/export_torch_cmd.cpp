// cellscope-cli export RUN_DIR --out DIR: a trained run for plain PyTorch (packaging/python/cellscope_torch,
// its README.md lists the files). Everything is written into a folder of this invocation's own beside DIR
// (.DIR.tmp-XXXXXX, a unique name) and renamed to DIR at the end, so a failure leaves no half-written DIR
// and no other path is touched.
#include <torch/nn/functional.h>
#include <torch/serialize.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "cells/script_cell.h"
#include "cli.h"
#include "config/schema.h"
#include "data/vocab.h"
#include "export/torch_schema.h"
#include "tasks/char_lm.h"
#include "tasks/classify.h"
#include "tasks/cloze.h"
#include "tasks/eval_scope.h"
#include "tasks/seq2seq.h"
#include "tasks/task.h"
#include "tasks/word_lm.h"
#include "train/checkpoint.h"
#include "train/run_task.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/own_paths.h"
#include "util/sha256.h"
#include "util/state_dict_file.h"

namespace cli {

namespace {

namespace fs = std::filesystem;

// "best", "last", "step_N" or "N" -> the form checkpoint_path() takes ("best", "last", "N").
std::string export_checkpoint_name(const std::string& s) {
  if (s == "best" || s == "last") return s;
  std::string n = s.rfind("step_", 0) == 0 ? s.substr(5) : s;
  if (n.empty() || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw UsageError("--checkpoint must be best, last or step_N (got '" + s + "')");
  return n;
}

std::string export_existing_checkpoints(const std::string& run_dir) {
  const std::string dir = cs::join_path(run_dir, "checkpoints");
  std::string out;
  if (cs::dir_exists(dir))
    for (auto& n : cs::list_dir(dir))
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
    if (v == std::string::npos) throw cs::UserError(what + ": not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The run's first validation batch of a stream LM, as StreamLMTask::stream_nll scores it first: B streams
// (min(eval_batch, (N-1)/bptt)), the first segment of min(bptt, n) inputs, zero state, eval mode.
std::vector<std::pair<std::string, torch::Tensor>> export_stream_reference(torch::nn::Module& module,
                                                                           cs::StreamModel& model,
                                                                           const std::vector<int32_t>& ids,
                                                                           int64_t bptt, int64_t eval_batch) {
  const int64_t N = static_cast<int64_t>(ids.size());
  if (N < 2) throw cs::UserError("the valid split is empty: no reference batch");
  const int64_t B = std::max<int64_t>(1, std::min<int64_t>(eval_batch, (N - 1) / std::max<int64_t>(bptt, 1)));
  const int64_t n = (N - 1) / B;
  const int64_t l = std::min(bptt, n);
  auto all = torch::from_blob(const_cast<int32_t*>(ids.data()), {N}, torch::kInt32).to(torch::kInt64);
  auto x = all.narrow(0, 0, B * n).view({B, n}).narrow(1, 0, l).t().contiguous();
  auto y = all.narrow(0, 1, B * n).view({B, n}).narrow(1, 0, l).t().contiguous();
  torch::NoGradGuard ng;
  cs::EvalScope es(module);
  auto st = model.initial_state(B, torch::TensorOptions().dtype(torch::kFloat32));
  cs::StepContext ctx;
  auto logits = model.forward(x, st, ctx);
  auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
  return {{"x", x},
          {"y", y},
          {"mask", torch::ones_like(x, torch::kFloat32)},
          {"logits", logits},
          {"loss", loss.to(torch::kFloat64)}};
}

// The examples of a reference batch of the sentence, cloze and seq2seq tasks: min(eval_batch, N) of the valid
// split's N, spread evenly over it (its first and its last among them), in the split's order. The split is
// ordered by length, so its first examples alone had one length and no padding, and check() never exercised
// a padded batch; spread, they span the split's lengths.
std::vector<int64_t> reference_indices(int64_t eval_batch, int64_t N) {
  const int64_t n = std::min<int64_t>(eval_batch, N);
  if (n < 1) throw cs::UserError("the valid split is empty: no reference batch");
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = n == 1 ? 0 : (i * (N - 1) + (n - 1) / 2) / (n - 1);
  return idx;  // strictly increasing: (N - 1) / (n - 1) >= 1
}

// A validation batch of a sentence task (classify, absa): reference_indices' examples as one padded batch,
// as SentenceTask::evaluate batches them; the loss is the batch mean.
std::vector<std::pair<std::string, torch::Tensor>> export_sentence_reference(cs::SentenceTask& task,
                                                                             int64_t eval_batch) {
  const auto& s = task.split("valid");
  const std::vector<int64_t> idx = reference_indices(eval_batch, static_cast<int64_t>(s.labels.size()));
  const cs::SentenceBatch b = task.make_batch(s, idx);
  auto& net = *task.net();
  cs::EvalScope es(net);
  cs::StepContext ctx;
  auto logits = net.forward(b, ctx);
  torch::Tensor loss;
  if (net.binary) loss = torch::binary_cross_entropy_with_logits(logits.squeeze(1), b.labels.to(logits.dtype()));
  else loss = torch::nll_loss(torch::log_softmax(logits, 1), b.labels);
  const int64_t T = b.tokens.size(0);
  auto mask = (torch::arange(T, b.lengths.options()).unsqueeze(1) < b.lengths.unsqueeze(0)).to(torch::kFloat32);
  std::vector<std::pair<std::string, torch::Tensor>> r = {{"x", b.tokens},    {"lengths", b.lengths},
                                                          {"y", b.labels},    {"mask", mask},
                                                          {"logits", logits}, {"loss", loss.to(torch::kFloat64)}};
  if (b.aspect.defined()) {
    r.emplace_back("aspect", b.aspect);
    r.emplace_back("aspect_len", b.aspect_len);
  }
  return r;
}

// A validation batch of a cloze run: reference_indices' questions as one batch (make_cloze_batch); the scores
// are P(candidate | D, Q) [B, C], the loss the mean -log P(answer) (clamped at 1e-12, as ClozeTask does).
std::vector<std::pair<std::string, torch::Tensor>> export_cloze_reference(cs::ClozeTask& task, int64_t eval_batch) {
  const auto& items = task.items("valid");
  std::vector<const cs::ClozeItem*> its;
  for (int64_t i : reference_indices(eval_batch, static_cast<int64_t>(items.size())))
    its.push_back(&items[static_cast<size_t>(i)]);
  const cs::ClozeBatch b = cs::make_cloze_batch(its, cs::ClozeTask::kPad, torch::kCPU);
  auto& net = *task.net();
  cs::EvalScope es(net);
  cs::StepContext ctx;
  auto prob = net.forward(b, ctx).prob;
  auto loss = -torch::log(prob.gather(1, b.answer.unsqueeze(1)).squeeze(1).clamp_min(1e-12)).mean();
  return {{"doc", b.doc},
          {"doc_len", b.doc_len},
          {"query", b.query},
          {"query_len", b.query_len},
          {"features", b.features},
          {"cand_mask", b.cand_mask},
          {"cand_valid", b.cand_valid.to(torch::kFloat32)},
          {"y", b.answer},
          {"logits", prob},
          {"loss", loss.to(torch::kFloat64)}};
}

// A validation batch of a seq2seq run: reference_indices' pairs of the valid split
// (make_batch: src [S, B], src_len, y_in = <s> y, y_out = y </s>, y_mask), teacher-forced; the logits are the
// decoder's output ([T, B, V]; log P of the mixture with model.copy) and the loss the mean NLL of the real target
// tokens, as batch_nll sums it.
std::vector<std::pair<std::string, torch::Tensor>> export_seq2seq_reference(cs::Seq2SeqTask& task, int64_t eval_batch) {
  const auto& ex = task.examples("valid");
  std::vector<const cs::Seq2SeqTask::Example*> ptrs;
  for (int64_t i : reference_indices(eval_batch, static_cast<int64_t>(ex.size())))
    ptrs.push_back(&ex[static_cast<size_t>(i)]);
  const auto b = task.make_batch(ptrs);
  auto& net = *task.net();
  cs::EvalScope es(net);
  cs::StepContext ctx;
  auto enc = net.encode(b.src, b.src_len, ctx);
  auto st = net.decoder_initial_state(enc);
  auto logits = net.decode(b.y_in, enc, st, ctx);
  auto nll =
      torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), b.y_out.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  auto loss = (nll * b.y_mask.reshape({-1})).sum() / b.y_mask.sum();
  return {{"src", b.src},
          {"src_len", b.src_len},
          {"x", b.y_in},
          {"y", b.y_out},
          {"mask", b.y_mask},
          {"logits", logits},
          {"loss", loss.to(torch::kFloat64)}};
}

// "" when `out` is absent, empty or an earlier export of this command: an export.json whose
// "format" is "cellscope-torch-export ..." and whose "files" list names every other entry (regular
// files only). Otherwise why not. --force replaces only such a folder (#52: any folder holding a
// file named export.json was deleted whole).
std::string not_an_earlier_export(const std::string& out) {
  std::error_code ec;
  if (!fs::exists(out, ec) || (fs::is_directory(out, ec) && fs::is_empty(out, ec))) return "";
  if (!fs::is_directory(out, ec)) return "not a directory";
  const std::string manifest = cs::join_path(out, "export.json");
  std::set<std::string> listed;
  try {
    const cs::json m = cs::parse_json(cs::read_file(manifest), manifest);
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
std::unique_ptr<cs::Task> export_load_run_task(const std::string& run_dir, const std::string& ckpt,
                                               const std::string& ckpt_bytes, cs::json* resolved,
                                               std::string* copy_used, int64_t* step) {
  cs::RunStore store(run_dir);
  cs::json raw = store.read_config();
  const std::string copy = store.path(cs::script_copy_name());
  const cs::json m = raw.value("model", cs::json::object());
  std::unique_ptr<cs::Task> task;
  if (!(m.is_object() && m.value("cell", "") == "script" && m.contains("script") && m["script"].is_string() &&
        !cs::file_exists(m["script"].get<std::string>()) && cs::file_exists(copy))) {
    task = cs::make_run_task(run_dir, resolved);
  } else {
    raw["model"]["script"] = copy;
    *copy_used = copy;
    cs::json r = cs::load_and_resolve(raw);
    task = cs::make_task(r, run_dir);
    r["model"]["script"] = m["script"];
    *resolved = r;
  }
  torch::serialize::InputArchive ar, s;
  cs::read_checkpoint_bytes(ckpt_bytes, ckpt, ar);  // checksum verified
  cs::load_checkpoint_weights(*task, ar, ckpt);
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
    throw cs::UserError("--out '" + out + "' exists and is not empty (--force replaces an earlier export)");
  if (fs::exists(out) && !fs::is_directory(out))
    throw cs::UserError("--out '" + out + "' exists and is not a directory");
  if (fs::exists(out) && !fs::is_empty(out)) {
    std::error_code ec;
    const fs::path o = fs::weakly_canonical(out, ec), r = fs::weakly_canonical(run_dir, ec);
    const auto rel = r.lexically_relative(o);
    const bool holds_run = !rel.empty() && *rel.begin() != "..";  // --out is the run or a folder above it
    const std::string why = holds_run ? std::string("it holds the run being exported") : not_an_earlier_export(out);
    if (!why.empty())
      throw cs::UserError("--out '" + out + "' is not an earlier export of cellscope-cli export (" + why +
                          "): --force replaces only an export; choose a new directory");
  }
}

// A TorchScript cell (model.cell = script): the run's copy of its script (RUN_DIR/script_cell.pt; the file at
// model.script for a run without one, which export_load_run_task has just checked), refused unless its SHA-256
// is the one the run recorded.
struct ScriptFile {
  std::string bytes, sha256, source;  // all empty for a run of another cell
};
ScriptFile checked_script(const cs::json& cfg, const cs::RunStore& store, const std::string& run_dir) {
  ScriptFile f;
  if (cfg.at("model").value("cell", "") == "script") {
    const cs::json& m = cfg.at("model");
    const std::string recorded = m.value("script_sha256", "");
    const std::string copy = store.path(cs::script_copy_name());
    f.source = cs::file_exists(copy) ? copy : m.value("script", "");
    f.bytes = cs::read_file(f.source);
    f.sha256 = cs::sha256_hex(f.bytes);
    if (recorded.empty())
      throw cs::UserError("run '" + run_dir + "': config.json records no model.script_sha256, so the script '" +
                          f.source + "' cannot be checked (a run records it when it starts)");
    if (f.sha256 != recorded)
      throw cs::UserError(
          "'" + f.source + "' is not the script run '" + run_dir + "' was trained with: its SHA-256 is " + f.sha256 +
          ", the run recorded " + recorded +
          " (model.script_sha256): the run's copy was changed; copy the original script (model.script, " +
          m.value("script", "") + ") back over it");
  }
  return f;
}

// The task's reference batch (reference.pt: inputs, Cellscope's logits and loss), empty for a task without one.
std::vector<std::pair<std::string, torch::Tensor>> reference_batch(cs::Task& task, const cs::json& cfg) {
  std::vector<std::pair<std::string, torch::Tensor>> ref;
  if (auto* c = dynamic_cast<cs::CharLMTask*>(&task))
    ref = export_stream_reference(*c->net(), *c->net(), c->corpus().valid,
                                  cs::resolved_cfg<int64_t>(cfg, "training", "bptt"),
                                  cs::resolved_cfg<int64_t>(cfg, "training", "eval_batch"));
  else if (auto* w = dynamic_cast<cs::WordLMTask*>(&task))
    ref = export_stream_reference(*w->net(), *w->net(), w->corpus().valid,
                                  cs::resolved_cfg<int64_t>(cfg, "training", "bptt"),
                                  cs::resolved_cfg<int64_t>(cfg, "training", "eval_batch"));
  else if (auto* st = dynamic_cast<cs::SentenceTask*>(&task))
    ref = export_sentence_reference(*st, cs::resolved_cfg<int64_t>(cfg, "training", "eval_batch"));
  else if (auto* sq = dynamic_cast<cs::Seq2SeqTask*>(&task))
    ref = export_seq2seq_reference(*sq, cs::resolved_cfg<int64_t>(cfg, "training", "eval_batch"));
  else if (auto* cl = dynamic_cast<cs::ClozeTask*>(&task))
    ref = export_cloze_reference(*cl, cs::resolved_cfg<int64_t>(cfg, "training", "eval_batch"));
  return ref;
}

// The run's vocabulary as it is (vocab.cellscope) and in the forms Python reads: vocab.json (a list, id =
// index) and, for classify / absa, labels.json; a seq2seq run's SentencePiece models (source.model,
// target.model) and any *.model file of the run. The names written are appended to `files`.
void write_vocabularies(const std::string& tmp, const cs::RunStore& store, const std::string& run_dir,
                        cs::json& files) {
  const std::string vpath = store.path("vocab");
  if (cs::file_exists(vpath)) {
    cs::atomic_write(cs::join_path(tmp, "vocab.cellscope"), cs::read_file(vpath));
    files.push_back("vocab.cellscope");
    try {
      const cs::Vocab v = cs::Vocab::load(vpath);
      cs::atomic_write(cs::join_path(tmp, "vocab.json"),
                       cs::json(v.symbols()).dump(0, ' ', false, cs::json::error_handler_t::replace) + "\n");
      files.push_back("vocab.json");
    } catch (const cs::UserError&) {
      // another task's vocabulary format: vocab.cellscope alone (documented in the README)
    }
  }
  if (cs::file_exists(vpath)) {
    // seq2seq: {"format": "cellscope-seq2seq-subword", "source": base64, "target": base64} -> the
    // SentencePiece model files as they are (spm.SentencePieceProcessor(model_file=...))
    const cs::json j = cs::json::parse(cs::read_file(vpath), nullptr, false);
    if (j.is_object() && j.value("format", "") == "cellscope-sentence-vocab" && j.contains("words")) {
      // classify / absa: words are ids 1.. (id 0 is <unk>); the class names in output order
      cs::json words = cs::json::array({"<unk>"});
      for (auto& w : j["words"]) words.push_back(w);
      cs::atomic_write(cs::join_path(tmp, "vocab.json"),
                       words.dump(0, ' ', false, cs::json::error_handler_t::replace) + "\n");
      cs::atomic_write(cs::join_path(tmp, "labels.json"), j.value("labels", cs::json::array()).dump() + "\n");
      files.push_back("vocab.json");
      files.push_back("labels.json");
    }
    if (j.is_object() && j.value("format", "") == "cellscope-seq2seq-subword")
      for (const char* side : {"source", "target"})
        if (j.contains(side) && j[side].is_string()) {
          const std::string f = std::string(side) + ".model";
          cs::atomic_write(cs::join_path(tmp, f), export_base64_decode(j[side].get<std::string>(), vpath));
          files.push_back(f);
        }
  }
  for (auto& n : cs::list_dir(run_dir))
    if (n.size() > 6 && n.compare(n.size() - 6, 6, ".model") == 0) {
      cs::atomic_write(cs::join_path(tmp, n), cs::read_file(cs::join_path(run_dir, n)));
      files.push_back(n);
    }
}

}  // namespace

int cmd_export_torch(const std::vector<std::string>& a) {
  auto args = parse(a, "export");
  if (args.positional.size() != 1) throw UsageError("expected one RUN_DIR");
  apply_script_option(args);
  if (!args.has("out")) throw UsageError("--out DIR is required");
  const std::string run_dir = args.positional[0];
  std::string out = args.get("out");
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (out.empty()) throw UsageError("--out needs a directory name (it was empty)");
  const auto t0 = std::chrono::steady_clock::now();

  cs::RunStore store(run_dir);
  if (!cs::file_exists(store.path("config.json")))
    throw cs::UserError("'" + run_dir + "' is not a run directory (no config.json)");
  const std::string which = export_checkpoint_name(args.get("checkpoint", "best"));
  std::string ckpt;
  try {
    ckpt = cs::checkpoint_path(run_dir, which);
  } catch (const cs::UserError&) {
    throw cs::UserError("run '" + run_dir + "' has no checkpoint '" + args.get("checkpoint", "best") +
                        "' (checkpoints there: " + export_existing_checkpoints(run_dir) + ")");
  }
  check_export_destination(out, run_dir, args.has("force"));

  // Everything that can fail on bad input before anything is written.
  std::string script_copy_used;  // the run's copy of a script cell, loaded because model.script is gone
  cs::json resolved;
  const std::string ckpt_bytes = cs::read_file(ckpt);  // the one read: weights, step and hash all come from it
  int64_t step = -1;
  auto task = export_load_run_task(run_dir, ckpt, ckpt_bytes, &resolved, &script_copy_used, &step);
  const cs::json cfg = resolved;
  // A task with a vocabulary (every task today) whose run lost its vocab file: the task above built one from the
  // dataset again, which need not be the one the weights were trained with, and the export would have no
  // vocabulary to map ids to symbols (#52: it exported so, exit 0). Refused before anything is written.
  if (!task->vocab_text().empty() && !cs::file_exists(store.path("vocab")))
    throw cs::UserError("run '" + run_dir + "' has no vocab file (" + store.path("vocab") +
                        "): the ids of its weights cannot be mapped to symbols, so it is not exported; restore the "
                        "file from a backup or a fork of the run (a fork's vocab is its parent's, byte for byte)");
  const ScriptFile script = checked_script(cfg, store, run_dir);
  const std::string &script_bytes = script.bytes, &script_sha = script.sha256, &script_source = script.source;

  auto& model = *task->model();
  std::vector<std::pair<std::string, torch::Tensor>> state;
  cs::json shapes = cs::json::object();
  for (auto& p : model.named_parameters(true)) state.emplace_back(p.key(), p.value());
  for (auto& b : model.named_buffers(true)) state.emplace_back(b.key(), b.value());
  for (auto& [k, v] : state) shapes[k] = v.sizes().vec();

  const std::vector<std::pair<std::string, torch::Tensor>> ref = reference_batch(*task, cfg);

  // Written into a folder of this invocation's own beside --out (a unique name: a user's "X.tmp", or
  // another export to the same --out, is never touched), then renamed onto --out.
  const std::string tmp = cs::make_temp_dir_beside(out);
  cs::json written;  // export.json as written, for --json
  std::error_code ec;
  try {
    // torch.save's format with a weights-only pickle (torch >= 2.6 loads with weights_only=True by default), and
    // the same tensors as safetensors (EXPORT_TORCH_NOTES.md)
    cs::write_torch_state_dict(cs::join_path(tmp, "model.pt"), state);
    cs::write_safetensors(cs::join_path(tmp, "model.safetensors"), state);
    cs::atomic_write(cs::join_path(tmp, "config.json"), cfg.dump(2) + "\n");
    cs::json files = {"model.pt", "model.safetensors", "config.json"};
    write_vocabularies(tmp, store, run_dir, files);
    if (!script_sha.empty()) {
      cs::atomic_write(cs::join_path(tmp, cs::script_copy_name()), script_bytes);
      files.push_back(cs::script_copy_name());
    }
    if (!ref.empty()) {
      cs::write_torch_state_dict(cs::join_path(tmp, "reference.pt"), ref);
      files.push_back("reference.pt");
    }
    cs::json man = {{"format", cs::torch_export_format()},
                    {"format_version", cs::kTorchExportFormat},
                    {"cellscope_version", CELLSCOPE_VERSION},
                    {"run", fs::absolute(run_dir).lexically_normal().string()},
                    {"checkpoint",
                     {{"name", args.get("checkpoint", "best")},
                      {"file", fs::path(ckpt).filename().string()},
                      {"step", step},
                      {"bytes", ckpt_bytes.size()},
                      {"fnv1a64", export_hex64(cs::fnv1a64(ckpt_bytes.data(), ckpt_bytes.size()))}}},
                    {"task", cfg.at("task").value("name", "")},
                    {"cell", cfg.at("model").value("cell", "")},
                    {"parameters", shapes},
                    {"reference", !ref.empty()},
                    {"files", files},
                    {"schema", cs::torch_export_schema(cfg)}};
    if (!script_sha.empty())
      man["script"] = {{"file", cs::script_copy_name()},
                       {"sha256", script_sha},
                       {"source", fs::absolute(script_source).lexically_normal().string()}};
    cs::atomic_write(cs::join_path(tmp, "export.json"), man.dump(2) + "\n");
    written = man;
    // --out is absent, empty or an earlier export: checked above, and again now (files may have
    // come into it while the export was made).
    if (const std::string why = not_an_earlier_export(out); !why.empty())
      throw cs::UserError("--out '" + out + "' is no longer an earlier export (" + why + "); it is left as it is");
    cs::replace_dir_with(tmp, out);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (args.has("json")) {  // one object: where, how long, and the manifest (export.json) as written
    cs::json j = {{"out", fs::absolute(out).lexically_normal().string()}, {"seconds", secs}, {"export", written}};
    if (!script_copy_used.empty()) j["script_copy_used"] = script_copy_used;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "exported " << run_dir << " (" << fs::path(ckpt).filename().string() << ", step " << step << ", "
            << state.size() << " tensors) to " << out << " in " << std::fixed << std::setprecision(2) << secs << " s\n";
  if (!script_copy_used.empty())
    std::cout << "model.script '" << cfg.at("model").value("script", "") << "' is gone: exported the run's copy "
              << script_copy_used << " (SHA-256 checked)\n";
  return 0;
}

}  // namespace cli
