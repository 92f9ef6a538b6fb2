// `cellscope-cli bench --dist`: data-parallel training throughput of a language-model
// task, one rank's side (the CLI launches 1, 2, ... local ranks). The steps are the
// task's own training steps (Task::train_step on this rank's shard of the real corpus),
// so the benchmark measures exactly what `train --nproc N` runs.
#pragma once
#include "config/schema.h"
#include "dist/dist.h"

namespace cs {

struct DistBenchOptions {
  std::string task = "char_lm";  // char_lm or word_lm
  json model;                    // "model" section (cell, embed, hidden, ...)
  json dataset;                  // "dataset" section; empty = the default corpus (Moby Dick), cut for word_lm
  int64_t batch = 32;            // GLOBAL batch (streams), split evenly over the ranks
  int64_t seq = 150;             // truncated-BPTT length
  int steps = 20;                // timed steps (the same on every rank: collectives must match), after 2 warm-up steps
};

// Runs `o.steps` data-parallel steps (forward + backward on the local B/W streams,
// bucketed gradient all-reduce, clipping, Adam) and returns, as seen by this rank:
// seconds_per_step (median), throughput (global units/s), allreduce_ms (median per
// step), compute_ms (median forward+backward), world, threads, parameters, task, unit.
json run_dist_bench_rank(const DistBenchOptions& o, DistContext& d);

}  // namespace cs
