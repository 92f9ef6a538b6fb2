// A researcher's own cell, written in Python and saved with torch.jit.save: model.cell = "script",
// model.script = PATH. The module implements one recurrent step,
//   forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]
// with attributes input_size: int, hidden_size: int, state_sizes: List[int] (state_sizes[0] ==
// hidden_size: the output is state[0]). Cellscope runs it step by step like any other cell:
// the interface, the checks at load, the parameters, the hash a run records and what the probe
// sees are in cells/SCRIPT_CELL_NOTES.md; worked examples in resources/cells/.
#pragma once
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <vector>

#include "cells/cell.h"
#include "config/option_spec.h"

namespace cs {

struct ScriptOptions {
  std::string script;         // model.script: the TorchScript file (torch.jit.save)
  std::string script_sha256;  // model.script_sha256: recorded when a run starts ("" = not yet)
};

const OptionTable<ScriptOptions>& script_option_table();

// What a checked script declares.
struct ScriptDeclaration {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  std::vector<int64_t> state_sizes;
  std::vector<std::string> probe_names;  // the keys of forward's dict in the trial call
  std::string sha256;
};

// Load `path` and check everything Cellscope relies on: a TorchScript file, the attributes,
// forward's signature, one trial call on a zero batch (the new state's count and shapes, the
// dict's tensors), and, when `expected_sha256` is not empty, that the file's SHA-256 is that one.
// Throws UserError naming the file and the problem.
ScriptDeclaration check_script_file(const std::string& path, const std::string& expected_sha256 = "");

// The file a run's directory keeps a copy of its script under.
inline const char* script_copy_name() { return "script_cell.pt"; }

// A run's configuration (config.json as read) whose model.script is gone, or changed since the run
// recorded model.script_sha256, while the run's own copy RUN_DIR/script_cell.pt is still that file:
// model.script is pointed at the copy, and the note to tell the user is returned ("" when nothing
// changed; other cells: nothing). Resume, fork, eval, analyze and generate go through it, so that a
// run keeps working when its script is moved or edited (the copy's SHA-256 is checked again at load).
// With set_script_override(PATH) in effect, model.script is pointed at PATH instead (a run whose
// original and copy are both gone): the cell still loads it only if its SHA-256 is the run's.
std::string use_run_script_copy(json& cfg, const std::string& run_dir);

// The script a trained run's cell is loaded from in this process, in place of model.script and
// the run's copy: `--script PATH` of eval, analyze, generate, decode, cloze scores and export ("":
// none, the default). Checked like the original: its SHA-256 must be model.script_sha256.
void set_script_override(const std::string& path);

// For a new run (or a fork) of a script cell: make model.script absolute and record
// model.script_sha256 (checking it against the file when it is already recorded). The resolved
// model section; a no-op for other cells. Returns the script's path ("" for other cells).
std::string pin_script(json& model);

class ScriptCellImpl : public CellImpl {
 public:
  // Loads its own copy of the module (independent parameters), checks the input size the
  // layer reads (`layer` names it in the message) and re-initialises the parameters from the
  // global generator (seeded by the run): the module's reset_parameters() when it has one, else
  // U(-1/sqrt(H), 1/sqrt(H)) for every parameter, in the module's order.
  ScriptCellImpl(const ScriptOptions& o, int64_t input_size, int64_t hidden, int layer);
  ~ScriptCellImpl() override;
  std::string type_name() const override { return "script"; }
  int64_t input_size() const override { return decl_.input_size; }
  int64_t hidden_size() const override { return decl_.hidden_size; }
  State initial_state(int64_t batch, const torch::TensorOptions& opts) const override;
  State step(const torch::Tensor& x, const State& s, StepContext& ctx) override;
  // No analytic count for an arbitrary script: NaN, the core's "unknown" (a run's train_flops is
  // then left out of its summary, a sweep's FLOP budget says so, `bench` prints "unknown").
  double flops_per_step() const override;
  void train(bool on = true) override;
  const ScriptDeclaration& declaration() const { return decl_; }

 private:
  struct Jit;
  std::unique_ptr<Jit> jit_;
  ScriptDeclaration decl_;
  std::string path_;
};

}  // namespace cs
