// The recurrent-cell interface every Cellscope cell implements.
//
// A cell maps an input sequence x [T, B, I] and a state to outputs [T, B, H].
// Two paths:
//  * the step-wise path: input_projection() hoists the input half of the cell's
//    affine maps out of the time loop for the whole sequence, then step() runs
//    once per time step and may record its internals into a Probe (candidate
//    activation, gates, zones, composition weights, channel attention...);
//  * forward_sequence(): the fast path. The default runs the step-wise loop
//    (with unbind(0), never x[t], so backward stays O(T)); cells with a fused
//    kernel (GRU, LSTM) override it and fall back to the loop when probed.
// Wrappers (MC-RNN, deep transition, bidirectional) compose cells through step().
#pragma once
#include <torch/nn/module.h>
#include <torch/types.h>

#include <map>
#include <string>
#include <vector>

#include "cells/token_fold.h"

namespace cs {

// A cell's recurrent state: {h} for RNN/GRU/MZU, {h, c} for LSTM, anything for wrappers.
using State = std::vector<torch::Tensor>;

// Per-step internals recorded for the analyses. Keys are "<prefix><name>", e.g.
// "l0/candidate", "l0/gate", "l0/zones_h", "l0/attn_h". Each record() appends one
// tensor (detached, on CPU) for the current step; series[key][t] is step t.
struct Probe {
  std::map<std::string, std::vector<torch::Tensor>> series;
  std::string prefix;  // set by the stack per layer ("l0/", "l1/", ...)
  void record(const std::string& name, const torch::Tensor& value);
  // Stack series[key] over time -> [T, ...]; throws if absent.
  torch::Tensor stacked(const std::string& key) const;
  bool has(const std::string& key) const { return series.count(key) > 0; }
};

// Context threaded through a forward pass: the probe (or null), and loss terms
// and metrics a cell contributes (e.g. MZU zone disagreement, eq. 18-19).
struct StepContext {
  Probe* probe = nullptr;
  bool stepwise = false;  // force the step-wise path even when a fused one exists
  // Terms added to the task loss (already weighted/signed by the cell), summed.
  torch::Tensor extra_loss;
  // Logged metrics: name -> (sum, count); the task logs sum/count.
  std::map<std::string, std::pair<double, int64_t>> metrics;
  // Set by the task for a training forward (left at their defaults elsewhere):
  // step: the trainer's step index (0 = the first update), for schedules such as the MZU's
  // warm-up of eq. 19's lambda; -1 = not a trainer step (bench, tests, evaluation).
  int64_t step = -1;
  // loss_units: how many units the task's loss is averaged over (char/word LM: every
  // position, T x B; sentence tasks: the B sentences), so that a cell's per-token term keeps
  // the same ratio to the task loss in every task (MZU eq. 19); 0 = T x B of the forward.
  double loss_units = 0;
  // token_mask: [T, B], 1 for real tokens and 0 for padding (sentence tasks); undefined = all real.
  torch::Tensor token_mask;
  // Forward FLOPs that a layer which folded its embedding lookup did not run (cells/token_fold.h),
  // net of the table's own products; the bench subtracts 3x this from the model's analytic count.
  double folded_flops = 0;
  // How many sequence forwards of a cell (forward_sequence / forward_tokens) ran a fast path
  // (LibTorch's fused kernel or a hand-written sequence function, cells/FUSED_NOTES.md) rather
  // than the step-wise loop: what actually ran, for the tests to hold against
  // CellInfo::fast_path_refusal (cells/registry.h).
  int64_t fast_path_calls = 0;

  // A static-shape step (run/train/graph_step.h: what a CUDA graph replays) reads no value back
  // to the host while it runs: with tensor_metrics set, a cell's logged metrics go to
  // metric_tensors as 0-dim tensors (name -> (sum, count)) instead of `metrics`, read once
  // after the step. host_schedule: set by a cell whose forward used a host value that changes
  // from step to step (the MZU's eq. 19 lambda during its warm-up), so a graph captured now
  // would replay a stale value.
  bool tensor_metrics = false;
  std::map<std::string, std::pair<torch::Tensor, int64_t>> metric_tensors;
  bool host_schedule = false;

  void add_loss(const torch::Tensor& term);
  void add_metric(const std::string& name, double value, int64_t count = 1);
  void add_metric(const std::string& name, const torch::Tensor& value, int64_t count);
  void record(const std::string& name, const torch::Tensor& v) {
    if (probe) probe->record(name, v);
  }
};

struct SeqOutput {
  torch::Tensor output;  // [T, B, H]
  State state;           // state after the last step
};

class CellImpl : public torch::nn::Module {
 public:
  virtual ~CellImpl() = default;
  virtual std::string type_name() const = 0;
  virtual int64_t input_size() const = 0;
  virtual int64_t hidden_size() const = 0;  // size of output(state)

  // Zero state for a batch.
  virtual State initial_state(int64_t batch, const torch::TensorOptions& opts) const;

  // Input half of the cell's maps for the whole sequence: [T,B,I] -> [T,B,G].
  // Default: identity (cells that hoist nothing).
  virtual torch::Tensor input_projection(const torch::Tensor& x);

  // One step given this step's slice of input_projection() ([B, G]).
  virtual State step(const torch::Tensor& xproj_t, const State& s, StepContext& ctx) = 0;

  // The per-step output carried to the next layer (default: s[0]).
  virtual torch::Tensor output_of(const State& s) const { return s[0]; }

  // State s with h0 [B, hidden] as the output before the first step, where the recurrence reads it: an
  // encoder-decoder's initial decoder state (seq2seq's bridge, tasks/SEQ2SEQ_NOTES.md). Default: s[0] = h0.
  virtual State with_previous_output(State s, const torch::Tensor& h0) const {
    s[0] = h0;
    return s;
  }

  // Whole sequence. Default: the step-wise loop over input_projection(x).unbind(0).
  virtual SeqOutput forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx);
  // forward_sequence() of an x that is an embedding lookup, x = in->table[in->tokens] with nothing
  // in between (null: not one). Cells whose fast path starts with a product linear in x override
  // it to fold that product into the table (cells/token_fold.h); the default ignores `in`.
  virtual SeqOutput forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx) {
    (void)in;
    return forward_sequence(x, s0, ctx);
  }

  // Analytic FLOPs of forward for one time step and one batch element (multiply-add
  // = 2 FLOPs), used by `bench` for achieved GFLOP/s. Backward is counted as 2x forward.
  virtual double flops_per_step() const = 0;

 protected:
  SeqOutput run_stepwise(const torch::Tensor& x, const State& s0, StepContext& ctx);
};

// Helper modules shared by cells.
// Layer normalization without torch::nn::LayerNorm's module overhead (gain, bias).
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& gain, const torch::Tensor& bias);

}  // namespace cs
