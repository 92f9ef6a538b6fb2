// `cellscope-cli bench --dist`: data-parallel training throughput of the char-LM
// model on synthetic data, one rank's side (the CLI launches 1, 2, ... local ranks).
#pragma once
#include "config/schema.h"
#include "dist/dist.h"

namespace cs {

struct DistBenchOptions {
  json model;            // "model" section (cell, embed, hidden, ...)
  int64_t batch = 32;    // GLOBAL batch (streams), split evenly over the ranks
  int64_t seq = 150;
  int64_t vocab = 96;
  int steps = 20;        // timed steps (the same on every rank: collectives must match), after 2 warm-up steps
};

// Runs `o.steps` data-parallel steps (forward + backward on the local B/W streams,
// bucketed gradient all-reduce, clipping, Adam) and returns, as seen by this rank:
// seconds_per_step (median), throughput (global chars/s), allreduce_ms (median per
// step), compute_ms (median forward+backward), world, threads, parameters.
json run_dist_bench_rank(const DistBenchOptions& o, DistContext& d);

}  // namespace cs
