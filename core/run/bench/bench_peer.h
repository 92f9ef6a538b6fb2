// `cellscope-cli bench --peer`: every cell of the papers against its plain-PyTorch Python
// peer (core/run/bench/peers/peers.py). Each measurement runs in a fresh child
// process (the CLI itself, `bench --peer-child`, or the Python peer) that reports its median
// seconds per char-LM training step and the peak memory of a step (see bench/peers/README.md;
// the GEMM floor of each step: bench/gemm_floor.h).
#pragma once
#include <string>
#include <vector>

#include "cells/cell.h"
#include "config/json.h"

namespace cs {

// The cells `bench --peer` compares, in table order, and each one's papers' configuration
// (model section without embed/hidden): GRU+DT L=1; sat/gcn/cap MZU+DT (L=1 shared, layer
// norm, lambda = 1, filter 1000, 4 zones; cap: 2 capsules, 3 routing iterations); the three
// CRUs (k = 3); MC-RNN-3 (block 4) over an LSTM. Dropout off (the check needs equal masks).
const std::vector<std::string>& peer_cells();
json paper_model(const std::string& cell, int64_t embed, int64_t hidden);

// The hook of the fast paths (cell_has_fast_path, force_autograd_path) is in bench/bench.h.

// The Python peer script and interpreter: $CELLSCOPE_PEERS_SCRIPT, else the source tree's
// core/run/bench/peers/peers.py, else <datadir>/peers/peers.py; $CELLSCOPE_PEER_PYTHON,
// else /usr/bin/python3 (Debian's python3-torch).
std::string peers_script_path();
std::string peer_python();

// Writes the char-LM model of `model` (resolved here) in double precision: its parameters
// (params.f64, raw little-endian float64 in named_parameters() order), one batch (x.i64,
// y.i64, [T, B] int64), the gradients of one training step's loss (grads.f64) and the index
// (model.json: model, batch, seq, vocab, params [{name, shape, offset}], loss) to `dir`: into a
// folder of its own beside it, then put in place. A `dir` that exists must be empty or an earlier
// peer export (only those five files): anything else is refused (UserError), never overwritten.
json export_peer_check(const json& model, int64_t batch, int64_t seq, int64_t vocab, const std::string& dir);

// One child measurement (`bench --peer-child`): median seconds per training step after
// warm-up, FLOPs per step, and the peak memory of a step (VmHWM reset after the set-up,
// minus the RSS then). `autograd` forces the step-wise autograd path.
json measure_step_child(const json& model, int64_t batch, int64_t seq, int64_t vocab, int iters, double min_seconds,
                        bool autograd);

struct PeerBenchOptions {
  std::vector<std::string> cells;  // empty = peer_cells()
  std::vector<int64_t> batches = {32};
  int64_t seq = 150, embed = 256, hidden = 512, vocab = 96;
  int iters = 0;  // 0 = about min_seconds per measurement
  double min_seconds = 3.0;
  int threads = 0;
  std::vector<std::string> sets;  // extra model.KEY=VALUE for every cell
  std::string self_exe;           // the CLI that runs `bench --peer-child`
  bool python = true;             // also time the Python peers
  int rounds = 1;                 // interleaved repetitions of every measurement; the median is reported
  // A GPU (run_peer_bench_device): "cuda" or "cuda:N"; the Python peer's modes there (eager, compile =
  // torch.compile(mode="reduce-overhead") of the whole forward, compile_step = of one time step), and
  // the seconds a compiling peer may take before it is given up.
  std::string device = "cpu";
  std::vector<std::string> python_modes = {"eager", "compile"};
  double compile_timeout = 300;
  std::string partial_path;  // GPU: the results so far, rewritten after every row ("" = none)
};
// The same on a CUDA device (bench_peer_gpu.cpp): per row the step captured as a CUDA graph, the same
// step eagerly, the Python peer in each of python_modes on the same GPU; first per batch the cuDNN GRU
// (LibTorch's at::gru, PyTorch's nn.GRU). Peers that fail are reported in the row, not fatal.
json run_peer_bench_device(const PeerBenchOptions& o, std::ostream* log);
std::string peer_table_markdown_device(const json& r);
// One GPU child measurement (`bench --peer-child --device cuda [--eager]`): median seconds per step,
// each step synchronised; the caching allocator's peak over the first steps; the GPU's float32 GEMM
// rate; "graph": "captured" or why the steps ran eagerly ("off" with graph false).
json measure_step_child_device(const json& model, int64_t batch, int64_t seq, int64_t vocab, int iters,
                               double min_seconds, const std::string& device, bool graph);

// Runs the whole comparison; progress lines go to `log` (may be null). Returns
// {rows: [...], gemm_gflops, threads, load_before, load_after, ...}.
json run_peer_bench(const PeerBenchOptions& o, std::ostream* log);
// The markdown table of run_peer_bench's result.
std::string peer_table_markdown(const json& r);

// The pieces run_peer_bench shares with the GPU comparison (bench_peer_gpu.cpp): the 1-minute load
// average; the last line of a child's stdout that parses as a JSON object; the last `n` characters
// of a text; the median round of several measurements (by s/step), every round's s/step in "samples".
double peer_loadavg1();
json peer_last_json(const std::string& out);
std::string peer_tail(const std::string& s, size_t n = 600);
json peer_median_sample(const std::vector<json>& v);

// Runs `argv` (argv[0] a path), stdout captured; extra environment `env` (NAME=VALUE).
// Returns the exit code (-1 if it could not start, 128+sig if a signal ended it).
int run_capture(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out,
                std::string* err);

}  // namespace cs
