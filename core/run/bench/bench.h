// `cellscope-cli bench`: training throughput of a cell in the char-LM model
// (forward + backward + optimizer step), achieved GFLOP/s from the analytic
// FLOP count, a large GEMM timed in the same run, and a baseline at the same shape.
#pragma once
#include <string>

#include "config/schema.h"

namespace cs {

struct BenchOptions {
  json model;              // "model" section (cell, embed, hidden, cell options); resolved here
  int64_t batch = 32;
  int64_t seq = 150;
  int64_t vocab = 96;      // synthetic character vocabulary
  std::string baseline;    // "torch_gru", "torch_lstm", a cell name, "none"; "" = automatic
  int iters = 0;           // 0 = automatic (about min_seconds of timing)
  double min_seconds = 3.0;
  int threads = 0;
};

// Median seconds per training step of the char-LM model with `model`.
double time_char_lm_step(const json& model, int64_t batch, int64_t seq, int64_t vocab, int iters, double min_seconds,
                         double* flops_per_iter);
// GFLOP/s of a large float32 matrix product (n x n x n), median of a few runs.
double gemm_gflops(int64_t n = 1024);
json run_bench(const BenchOptions& o);
// The sentence-classification model (bench/bench_classify.cpp): batch = sentences, seq = tokens.
json run_bench_classify(const BenchOptions& o);

}  // namespace cs
