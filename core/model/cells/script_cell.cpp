// The TorchScript cell (cells/script_cell.h, cells/SCRIPT_CELL_NOTES.md). LibTorch's JIT is
// included here only: the header keeps torch::jit::Module behind a pointer.
#include "cells/script_cell.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cells/registry.h"
#include "util/abandoned.h"
#include "util/error.h"
#include "util/text.h"
#include "util/sha256.h"

namespace cs {

namespace {

// The first line of a LibTorch error, without its C++ backtrace.
std::string first_line(const std::exception& e) {
  std::string w;
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) w = ce->what_without_backtrace();
  else w = e.what();
  const auto nl = w.find('\n');
  return nl == std::string::npos ? w : w.substr(0, nl);
}

// What the script itself said, for an error raised while it ran: the TorchScript interpreter's
// text begins "The following operation failed in the TorchScript interpreter." and a traceback of
// the serialized and then the original code; the script's own message (e.g. "builtins.ValueError:
// ..." or "RuntimeError: mat1 and mat2 shapes cannot be multiplied ...") follows the last
// traceback, and its innermost frame names the script's source file and line. Returned as
// "MESSAGE (at FILE line N, in FUNCTION)"; other errors: their first line.
std::string script_error(const std::exception& e) {
  std::string w;
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) w = ce->what_without_backtrace();
  else w = e.what();
  std::vector<std::string> lines;
  {
    std::istringstream in(w);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  size_t tb = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("Traceback of TorchScript", 0) == 0) tb = i;
  if (tb == lines.size()) return first_line(e);
  std::string where, message;
  for (size_t i = tb + 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (message.empty() && (l.empty() || l[0] == ' ')) {
      const auto f = l.find("File \"");
      const auto ln = l.find("\", line ");
      if (f != std::string::npos && ln != std::string::npos && ln > f) {
        const auto in = l.find(", in ", ln);
        where = l.substr(f + 6, ln - f - 6) + " line " +
                l.substr(ln + 8, (in == std::string::npos ? l.size() : in) - ln - 8) +
                (in == std::string::npos ? std::string() : ", in " + l.substr(in + 5));
      }
      continue;
    }
    if (l.empty()) continue;
    message += (message.empty() ? "" : " ") + l;
  }
  if (message.rfind("builtins.", 0) == 0) message = message.substr(9);
  if (message.empty()) message = first_line(e);
  return message + (where.empty() ? std::string() : " (at " + where + ")");
}

// The most values per example a script cell may declare (input_size + the state sizes): 16 Mi
// floats, 64 MB per example and step, far beyond any recurrent cell of the papers (a few thousand).
constexpr int64_t kMaxScriptSize = int64_t(1) << 24;

// How long the trial call may take: CELLSCOPE_SCRIPT_TRIAL_SECONDS (default 60). One step of a zero
// batch of 2 takes milliseconds; a forward that never returns hung validate and train (#52).
double trial_seconds() {
  if (const char* v = std::getenv("CELLSCOPE_SCRIPT_TRIAL_SECONDS")) {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end != v && *end == 0 && std::isfinite(s) && s > 0) return s;
  }
  return 60;
}

const char* kSignature = "forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]";

// Plain interpretation of the script's graph: no profiling-driven rewrites (fusion, symbolic
// differentiation) whose numerics could differ from one call to the next; autograd records the
// ops as they run, as for any LibTorch code (SCRIPT_CELL_NOTES.md, "Execution").
struct PlainJit {
  torch::jit::GraphOptimizerEnabledGuard guard{false};
};

torch::jit::Module load_module(const std::string& path) {
  if (path.empty())
    throw UserError(
        "cell 'script' needs model.script = PATH of a TorchScript cell saved with torch.jit.save "
        "(resources/cells/README.md)");
  if (!file_exists(path))
    throw UserError("model.script '" + path +
                    "' does not exist or is not a regular file (for a trained run whose "
                    "script and its copy " +
                    script_copy_name() +
                    " are both gone, eval, analyze, generate, decode, "
                    "cloze scores and export take --script PATH to the same script elsewhere)");
  try {
    return torch::jit::load(path, torch::kCPU);
  } catch (const std::exception& e) {
    throw UserError("model.script '" + path +
                    "' is not a TorchScript file (save the cell with torch.jit.save, or "
                    "cellscope_torch.script_cell.save_cell): " +
                    first_line(e));
  }
}

int64_t int_attr(const torch::jit::Module& m, const std::string& path, const char* name) {
  if (!m.hasattr(name) || !m.attr(name).isInt())
    throw UserError("model.script '" + path + "': the module has no int attribute '" + name +
                    "' (a script cell declares input_size: int, hidden_size: int and state_sizes: List[int])");
  return m.attr(name).toInt();
}

// Checks the module; `decl` gets what it declares. Runs the trial call.
// The batch of the trial call of inspect_module.
constexpr int64_t kTrialBatch = 2;

// forward's signature: forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]].
void check_forward_signature(torch::jit::Module& m, const std::string& path) {
  auto method = m.find_method("forward");
  if (!method) throw UserError("model.script '" + path + "': the module has no forward method; expected " + kSignature);
  const c10::FunctionSchema& schema = method->function().getSchema();
  std::ostringstream found;
  found << schema;
  const auto& args = schema.arguments();
  const auto& rets = schema.returns();
  bool ok = args.size() == 3 && args[1].type()->isSubtypeOf(*c10::TensorType::get()) &&
            args[2].type()->isSubtypeOf(*c10::ListType::ofTensors()) && rets.size() == 1;
  if (ok) {
    auto tup = rets[0].type()->cast<c10::TupleType>();
    ok = tup && tup->elements().size() == 2 && tup->elements()[0]->isSubtypeOf(*c10::ListType::ofTensors());
    if (ok) {
      auto dict = tup->elements()[1]->cast<c10::DictType>();
      ok = dict && dict->getKeyType()->kind() == c10::TypeKind::StringType &&
           dict->getValueType()->isSubtypeOf(*c10::TensorType::get());
    }
  }
  if (!ok)
    throw UserError("model.script '" + path + "': wrong signature of forward: expected " + kSignature + ", found " +
                    found.str());
}

// forward's result on a zero batch of kTrialBatch rows (x and every state zero), on a thread of its own with
// a time limit; UserError naming the script when it fails or does not return.
c10::IValue trial_forward(torch::jit::Module& m, const ScriptDeclaration& d, const std::string& path) {
  // One trial call on a zero batch of 2, in the parameters' dtype, without gradients.
  torch::ScalarType dtype = torch::kFloat;
  for (const auto& p : m.parameters()) {
    dtype = p.scalar_type();
    break;
  }
  const int64_t B = kTrialBatch;
  auto opts = torch::TensorOptions().dtype(dtype);
  c10::List<torch::Tensor> st;
  for (int64_t s : d.state_sizes) st.push_back(torch::zeros({B, s}, opts));
  const bool was_training = m.is_training();
  c10::IValue out;
  {
    m.eval();
    // On a thread of its own, with a time limit: a forward that never returns is left running
    // (nothing can stop it) and reported; the process then ends without exit()'s destructors
    // (util/abandoned.h). The module is a shared handle, kept alive by the thread.
    struct Trial {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      c10::IValue out;
      std::exception_ptr error;
    };
    auto trial = std::make_shared<Trial>();
    torch::jit::Module held = m;
    std::thread([trial, held, input = d.input_size, opts, st]() mutable {
      c10::IValue r;
      std::exception_ptr err;
      try {
        torch::NoGradGuard ng;
        PlainJit plain;
        r = held.forward({torch::zeros({B, input}, opts), st});
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(trial->mu);
      trial->out = std::move(r);
      trial->error = err;
      trial->done = true;
      trial->cv.notify_all();
    }).detach();
    const double limit = trial_seconds();
    std::unique_lock<std::mutex> lock(trial->mu);
    if (!trial->cv.wait_for(lock, std::chrono::duration<double>(limit), [&] { return trial->done; })) {
      note_abandoned_thread();
      throw UserError("model.script '" + path + "': the trial call forward(x [" + std::to_string(B) + ", " +
                      std::to_string(d.input_size) + "], state " + shape_text(d.state_sizes) +
                      ") did not return within " + std::to_string(static_cast<int64_t>(std::ceil(limit))) +
                      " s (CELLSCOPE_SCRIPT_TRIAL_SECONDS): an endless loop in forward?");
    }
    out = std::move(trial->out);
    try {
      if (trial->error) std::rethrow_exception(trial->error);
    } catch (const std::exception& e) {
      m.train(was_training);
      // The hint only where the script's error is about sizes: a script's own refusal is its message.
      const std::string why = script_error(e);
      const bool sizes = why.find("shape") != std::string::npos || why.find("size") != std::string::npos ||
                         why.find("dimension") != std::string::npos;
      throw UserError("model.script '" + path + "': the trial call forward(x [" + std::to_string(B) + ", " +
                      std::to_string(d.input_size) + "], state " + shape_text(d.state_sizes) + ") failed" +
                      (sizes ? " (a shape mismatch with input_size / state_sizes?)" : "") + ": " + why);
    }
    m.train(was_training);
  }
  return out;
}

ScriptDeclaration inspect_module(torch::jit::Module& m, const std::string& path) {
  ScriptDeclaration d;
  d.input_size = int_attr(m, path, "input_size");
  d.hidden_size = int_attr(m, path, "hidden_size");
  if (!m.hasattr("state_sizes") || !m.attr("state_sizes").isIntList())
    throw UserError("model.script '" + path +
                    "': the module has no List[int] attribute 'state_sizes' (the size of each state tensor; "
                    "state[0] is the output, of hidden_size)");
  d.state_sizes = m.attr("state_sizes").toIntVector();
  if (d.input_size <= 0 || d.hidden_size <= 0)
    throw UserError("model.script '" + path + "': input_size and hidden_size must be positive, got " +
                    std::to_string(d.input_size) + " and " + std::to_string(d.hidden_size));
  if (d.state_sizes.empty() || d.state_sizes[0] != d.hidden_size)
    throw UserError("model.script '" + path + "': state_sizes " + shape_text(d.state_sizes) +
                    " must start with hidden_size (" + std::to_string(d.hidden_size) +
                    "): state[0] is the cell's output");
  for (int64_t s : d.state_sizes)
    if (s <= 0)
      throw UserError("model.script '" + path + "': state_sizes " + shape_text(d.state_sizes) + " must be positive");
  // Checked before anything is allocated: a state of 2^32 floats asked 32 GB of the trial call and
  // failed without naming the script (#52).
  int64_t total = std::min<int64_t>(d.input_size, kMaxScriptSize + 1);
  for (int64_t s : d.state_sizes) total += std::min<int64_t>(s, kMaxScriptSize + 1);
  if (d.input_size > kMaxScriptSize || d.hidden_size > kMaxScriptSize || total > kMaxScriptSize)
    throw UserError("model.script '" + path + "': input_size " + std::to_string(d.input_size) + " and state_sizes " +
                    shape_text(d.state_sizes) + " declare more than " + std::to_string(kMaxScriptSize) +
                    " values per example (" + std::to_string(kMaxScriptSize / (1 << 20)) +
                    " Mi), the most a script cell may: each state is a [batch, size] tensor kept at every step");
  check_forward_signature(m, path);
  const int64_t B = kTrialBatch;
  const c10::IValue out = trial_forward(m, d, path);
  const auto elems = out.toTupleRef().elements();
  const auto ns = elems[0].toTensorVector();
  if (ns.size() != d.state_sizes.size())
    throw UserError("model.script '" + path + "': forward returned " + std::to_string(ns.size()) +
                    " state tensors, state_sizes declares " + std::to_string(d.state_sizes.size()));
  for (size_t i = 0; i < ns.size(); ++i) {
    const std::vector<int64_t> want = {B, d.state_sizes[i]};
    if (ns[i].sizes().vec() != want)
      throw UserError("model.script '" + path + "': shape mismatch: forward's new state[" + std::to_string(i) +
                      "] is " + shape_text(ns[i].sizes()) + " for a batch of " + std::to_string(B) +
                      ", state_sizes declares " + shape_text(want));
  }
  for (const auto& kv : elems[1].toGenericDict()) {
    const std::string name = kv.key().toStringRef();
    const torch::Tensor v = kv.value().toTensor();
    if (name.empty() || name.find('/') != std::string::npos)
      throw UserError("model.script '" + path + "': the name '" + name +
                      "' in forward's dict is empty or contains '/'");
    if (v.dim() < 1 || v.size(0) != B)
      throw UserError("model.script '" + path + "': shape mismatch: forward's dict entry '" + name + "' is " +
                      shape_text(v.sizes()) + ", expected [batch, ...] with batch " + std::to_string(B));
    d.probe_names.push_back(name);
  }
  return d;
}

std::string changed_message(const std::string& path, const std::string& now, const std::string& recorded) {
  return "model.script '" + path + "' is not the script this run was trained with: its SHA-256 is " + now +
         ", the run recorded " + recorded +
         " (model.script_sha256). A run is resumed, forked and analysed only with its own script: its directory's "
         "copy " +
         script_copy_name() +
         " is used in place of a moved or changed original, but it is missing or "
         "changed too; put the run's script back at model.script (or --set model.script=PATH); a changed cell is a "
         "new run.";
}

std::string absolute(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf)) return buf;
  return p;
}

}  // namespace

ScriptDeclaration check_script_file(const std::string& path, const std::string& expected_sha256) {
  torch::jit::Module m = load_module(path);
  // a recorded run's script: first whether it is the same file, then what it declares
  const std::string sha = file_sha256(path);
  if (!expected_sha256.empty() && sha != expected_sha256) throw UserError(changed_message(path, sha, expected_sha256));
  ScriptDeclaration d = inspect_module(m, path);
  d.sha256 = sha;
  return d;
}

std::string pin_script(json& model) {
  if (!model.contains("cell") || model.at("cell") != "script") return "";
  ScriptOptions o = script_option_table().read(model, "script");
  if (o.script.empty() || !file_exists(o.script)) {
    load_module(o.script);  // the message for a missing path
  }
  const std::string abs = absolute(o.script);
  const std::string sha = file_sha256(abs);
  if (!o.script_sha256.empty() && o.script_sha256 != sha) throw UserError(changed_message(abs, sha, o.script_sha256));
  model["script"] = abs;
  model["script_sha256"] = sha;
  return abs;
}

namespace {
std::string g_script_override;  // set_script_override: one CLI command's --script PATH
}  // namespace

void set_script_override(const std::string& path) { g_script_override = path; }

std::string use_run_script_copy(json& cfg, const std::string& run_dir) {
  if (!cfg.is_object() || !cfg.contains("model") || !cfg["model"].is_object()) return "";
  json& m = cfg["model"];
  auto text = [&](const char* k) {
    return m.contains(k) && m[k].is_string() ? m[k].get<std::string>() : std::string();
  };
  const std::string path = text("script"), want = text("script_sha256");
  if (text("cell") == "script" && !g_script_override.empty()) {
    if (!file_exists(g_script_override))
      throw UserError("--script '" + g_script_override + "' does not exist or is not a regular file");
    m["script"] = absolute(g_script_override);  // its SHA-256 is checked against the run's at load
    return "model.script: using --script " + m["script"].get<std::string>() + " (checked against the run's SHA-256)";
  }
  const std::string copy = join_path(run_dir, script_copy_name());
  if (text("cell") != "script" || want.empty() || !file_exists(copy)) return "";
  const bool there = !path.empty() && file_exists(path);
  if (there && file_sha256(path) == want) return "";  // the original, unchanged
  if (file_sha256(copy) != want) return "";           // the copy is not the run's cell either: the check says so
  m["script"] = absolute(copy);
  return "model.script '" + path + "' is " + (there ? "not the file this run recorded (changed since)" : "gone") +
         "; using the run's own copy " + m["script"].get<std::string>() + " (the same SHA-256)";
}

// ---------------------------------------------------------------- the cell
struct ScriptCellImpl::Jit {
  torch::jit::Module m;
};

ScriptCellImpl::ScriptCellImpl(const ScriptOptions& o, int64_t input_size, int64_t hidden, int layer)
    : jit_(std::make_unique<Jit>()), path_(o.script) {
  jit_->m = load_module(o.script);  // once per instance: its own parameters
  const std::string sha = file_sha256(o.script);
  if (!o.script_sha256.empty() && sha != o.script_sha256)
    throw UserError(changed_message(o.script, sha, o.script_sha256));
  decl_ = inspect_module(jit_->m, o.script);
  decl_.sha256 = sha;
  if (decl_.hidden_size != hidden)
    throw UserError("model.script '" + o.script + "': the module's hidden_size is " +
                    std::to_string(decl_.hidden_size) + " but model.hidden is " + std::to_string(hidden) +
                    ": set model.hidden=" + std::to_string(decl_.hidden_size) +
                    " or save the cell with hidden_size=" + std::to_string(hidden));
  if (decl_.input_size != input_size)
    throw UserError(
        "model.script '" + o.script + "': shape mismatch: the module's input_size is " +
        std::to_string(decl_.input_size) + " but layer " + std::to_string(layer) + " reads " +
        std::to_string(input_size) + " inputs (" +
        (layer == 0 ? std::string("the task's embedding, model.embed")
                    : std::string("the output of the layer below: model.hidden, 2 x model.hidden in a bidirectional "
                                  "encoder")) +
        "); save the cell with input_size=" + std::to_string(input_size) +
        (layer == 0 ? ", or set model.embed=" + std::to_string(decl_.input_size)
                    : std::string(" (every layer loads the same file: a stack of script cells needs model.embed equal "
                                  "to that input size)")));
  // Parameters and buffers: the module's own tensors (same TensorImpl), so the optimizer, the
  // checkpoints, .to(dtype) (set_data) and the parameter count see exactly what the script computes with.
  auto flat = [](std::string n) {
    std::string out;
    for (char c : n) out += c == '.' ? std::string("__") : std::string(1, c);
    return out;
  };
  for (const auto& p : jit_->m.named_parameters(/*recurse=*/true))
    register_parameter(flat(p.name), p.value, p.value.requires_grad());
  for (const auto& b : jit_->m.named_buffers(/*recurse=*/true)) register_buffer(flat(b.name), b.value);
  // Initialisation from the run's generator (seeded by the trainer before the model is built).
  torch::NoGradGuard ng;
  PlainJit plain;
  if (auto reset = jit_->m.find_method("reset_parameters")) {
    try {
      (*reset)(std::vector<c10::IValue>{});
    } catch (const std::exception& e) {
      throw UserError("model.script '" + o.script + "': reset_parameters() failed: " + script_error(e));
    }
  } else {
    const double k = 1.0 / std::sqrt(static_cast<double>(decl_.hidden_size));
    for (const auto& p : jit_->m.parameters()) p.uniform_(-k, k);
  }
  jit_->m.train(is_training());
}

ScriptCellImpl::~ScriptCellImpl() = default;

double ScriptCellImpl::flops_per_step() const { return std::numeric_limits<double>::quiet_NaN(); }

void ScriptCellImpl::train(bool on) {
  CellImpl::train(on);
  jit_->m.train(on);
}

State ScriptCellImpl::initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  State s;
  for (int64_t n : decl_.state_sizes) s.push_back(torch::zeros({batch, n}, opts));
  return s;
}

State ScriptCellImpl::step(const torch::Tensor& x, const State& s, StepContext& ctx) {
  c10::List<torch::Tensor> st;
  for (const auto& t : s) st.push_back(t);
  c10::IValue out;
  {
    PlainJit plain;
    try {
      out = jit_->m.forward({x, st});
    } catch (const std::exception& e) {
      throw UserError("model.script '" + path_ + "': forward failed: " + script_error(e));
    }
  }
  const auto elems = out.toTupleRef().elements();
  State ns = elems[0].toTensorVector();
  if (ns.size() != decl_.state_sizes.size() || ns[0].dim() != 2 || ns[0].size(0) != x.size(0) ||
      ns[0].size(1) != decl_.hidden_size)
    throw UserError("model.script '" + path_ + "': forward returned a state that does not match state_sizes " +
                    shape_text(decl_.state_sizes));
  if (ctx.probe) {
    bool has_h = false;
    for (const auto& kv : elems[1].toGenericDict()) {
      const std::string name = kv.key().toStringRef();
      has_h = has_h || name == "h";
      ctx.record(name, kv.value().toTensor());
    }
    if (!has_h) ctx.record("h", ns[0]);  // the output, as every cell records it
  }
  return ns;
}

// ---------------------------------------------------------------- registry entry
const OptionTable<ScriptOptions>& script_option_table() {
  static const auto t = [] {
    OptionTable<ScriptOptions> t("model");
    t.field("script", &ScriptOptions::script,
            "The TorchScript cell (a .pt written by torch.jit.save or cellscope_torch.script_cell.save_cell): "
            "forward(x, state) -> (new state, named tensors); see resources/cells/README.md.")
        .cells({"script"});
    t.field("script_sha256", &ScriptOptions::script_sha256,
            "Recorded by Cellscope when a run starts: the SHA-256 of model.script. A resume, fork or analysis "
            "refuses a script whose hash differs. Leave it empty in a new configuration.")
        .cells({"script"})
        .advanced();
    return t;
  }();
  return t;
}

void register_script_cells(std::vector<CellInfo>& out) {
  CellInfo c;
  c.name = "script";
  c.family = "script";
  c.description = "Your own cell: a TorchScript module (model.script) run step by step (resources/cells/README.md)";
  c.options = script_option_table().specs_for_cell("script");
  c.check = [](const json& cfg, std::vector<ConfigError>& errs) {
    const json& m = cfg.at("model");
    const ScriptOptions o = script_option_table().read(m, "script");
    try {
      const ScriptDeclaration d = check_script_file(o.script, o.script_sha256);
      const int64_t hidden = resolved<int64_t>(m, "model", "hidden");
      if (d.hidden_size != hidden)
        errs.push_back({"model.hidden", "the script '" + o.script + "' declares hidden_size " +
                                            std::to_string(d.hidden_size) +
                                            ": set model.hidden=" + std::to_string(d.hidden_size)});
    } catch (const UserError& e) {
      errs.push_back({"model.script", e.what()});
    }
  };
  c.make = [](const json& m, int64_t in, int layer) -> std::shared_ptr<CellImpl> {
    return std::make_shared<ScriptCellImpl>(script_option_table().read(m, "script"), in,
                                            resolved<int64_t>(m, "model", "hidden"), layer);
  };
  c.fast_path_refusal = [](const json&) {
    return std::string(
        "a TorchScript cell (model.cell = script) runs step by step: Cellscope has no fused sequence function for "
        "an arbitrary script");
  };
  c.mcrnn_base_refusal =
      "a TorchScript cell cannot be an MC-RNN's base (its model.script belongs to model.cell = script; "
      "cells/SCRIPT_CELL_NOTES.md)";
  out.push_back(std::move(c));
}

}  // namespace cs
