// `cellscope-cli bench`: training throughput of a cell in the char-LM model
// (forward + backward + optimizer step), achieved GFLOP/s from the analytic
// FLOP count, a large GEMM timed in the same run, and a baseline at the same shape.
#pragma once
#include <memory>
#include <string>

#include "cells/cell.h"
#include "config/schema.h"

namespace cs {

struct BenchOptions {
  json model;  // "model" section (cell, embed, hidden, cell options); resolved here
  int64_t batch = 32;
  int64_t seq = 150;
  int64_t vocab = 96;    // synthetic character vocabulary
  std::string baseline;  // "torch_gru", "torch_lstm", a cell name, "none"; "" = automatic
  int iters = 0;         // 0 = automatic (about min_seconds of timing)
  double min_seconds = 3.0;
  int threads = 0;
};

// ---- The fast paths, as the benchmarks see them.
// Whether the cell of the resolved `model` has a training path other than the step-wise
// autograd one, i.e. whether `bench --peer` measures it twice (default path, then forced off):
// the cell registry's answer (cs::fast_path_refusal, cells/registry.h), which each cell family
// gives with the function its fast path decides by.
bool cell_has_fast_path(const json& model);
// The model section of `cell` compared at the shape of `model` (a model section of another cell):
// `model`'s values of the options that apply to `cell` under `task` (the cell's own, the common
// ones it honours, the task's), nothing else; resolving fills the rest with `cell`'s defaults.
json model_for_cell(const json& model, const std::string& cell, const std::string& task);
// Forces the step-wise autograd path for one training step: sets ctx.stepwise (which the
// fused GRU/LSTM/RNN and the CRU-shallow paths honour) and whatever else the fast paths read.
void force_autograd_path(StepContext& ctx);

// The char-LM training step every char-LM benchmark times: the model of `model` (resolved
// here, seed 0), Adam (lr 1e-3), one random batch [seq, batch] of `vocab` ids, a zero state;
// step() = forward + cross-entropy (+ the cells' extra loss) + backward + clip 5 + Adam step.
// On a CUDA `device` the step reads nothing back (clipping and metrics as device work) and, with
// `graph`, is captured as one CUDA graph after three eager steps and replayed (run/train/graph_step.h);
// a step that cannot be captured runs eagerly and graph_note() says why.
class CharLMStepBench {
 public:
  CharLMStepBench(const json& model, int64_t batch, int64_t seq, int64_t vocab, bool autograd = false,
                  const std::string& device = "cpu", bool graph = false);
  ~CharLMStepBench();
  void step();
  // With a graph: "captured", or why the steps run eagerly; "" without one.
  std::string graph_note() const;
  // Analytic: 3x the forward's FLOPs (backward ~2x forward), less 3x what the last step's folded
  // embedding did not run (StepContext::folded_flops, cells/token_fold.h): the products executed.
  double flops_per_step() const;
  double model_flops_per_step() const;  // the model's own count, with nothing folded

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

// Median seconds per training step of the char-LM model with `model`; `autograd` forces
// the step-wise autograd path (force_autograd_path) on every step.
double time_char_lm_step(const json& model, int64_t batch, int64_t seq, int64_t vocab, int iters, double min_seconds,
                         double* flops_per_iter, bool autograd = false);
// GFLOP/s of a large float32 matrix product (n x n x n), median of a few runs.
double gemm_gflops(int64_t n = 1024);
json run_bench(const BenchOptions& o);
// The sentence-classification model (bench/bench_classify.cpp): batch = sentences, seq = tokens.
json run_bench_classify(const BenchOptions& o);

}  // namespace cs
