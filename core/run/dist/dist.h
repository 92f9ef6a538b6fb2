// Data-parallel training on LibTorch's own distributed engine (c10d): a process
// group per run (Gloo on CPU; NCCL when this LibTorch is built with CUDA and the
// device is CUDA), gradients averaged with bucketed all-reduce, parameters
// broadcast from rank 0. See docs/DISTRIBUTED.md for the design and the launch modes.
//
// The rendezvous is a store that binds only where it is told (dist/bound_store.h:
// --master HOST:PORT, rank 0 serves on --listen, default the master's address) or a
// c10d::FileStore (a file every rank can see); the collectives are
// c10d::ProcessGroupGloo / ProcessGroupNCCL.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/types.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/torch_compat.h"

namespace cs {

struct DistOptions {
  int rank = 0;
  int world = 1;
  std::string master;                    // "HOST:PORT" or "[IPV6]:PORT": the rendezvous store, rank 0 is the server
  std::string master_from = "--master";  // what gave `master`, for messages ("MASTER_ADDR:MASTER_PORT")
  std::string listen;                    // the address rank 0's store binds (--listen); "" = the master's host
  std::string store_file;                // or a FileStore path (local launcher; a shared filesystem)
  // torchrun's static rendezvous: its agent already serves a c10d::TCPStore on `master`,
  // so every rank is a client of it, under `store_prefix` (docs/DISTRIBUTED.md).
  bool agent_store = false;
  std::string store_prefix;
  double timeout_s = 60;         // collective + rendezvous timeout (--dist-timeout)
  std::string backend = "auto";  // "gloo", "nccl", "auto" (nccl when `device` is CUDA and NCCL is compiled in)
  torch::Device device{torch::kCPU};
  int64_t bucket_bytes = 25ll << 20;  // gradient bucket size for the all-reduce (~25 MB)
};

// A failed collective: a peer died, hung past the timeout, or the rendezvous failed.
struct DistError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DistContext {
  int rank = 0, world = 1;
  std::string backend;  // "gloo" or "nccl"
  double timeout_s = 60;
  int64_t bucket_bytes = 25ll << 20;
  torch::Device device{torch::kCPU};
  c10::intrusive_ptr<c10d::Store> store;
  // The Gloo or NCCL process group (a c10d::Backend from LibTorch 2.0 on: torch_compat.h).
  c10::intrusive_ptr<torch_compat::DistBackend> pg;
  // Accumulated wall time spent in allreduce_gradients (for the benchmark and the metrics).
  double allreduce_seconds = 0;
  int64_t allreduce_calls = 0;
  bool is_root() const { return rank == 0; }
};

// The largest --dist-timeout: 7 days (a collective or rendezvous that waits longer is a hang).
constexpr double kMaxDistTimeoutSeconds = 7 * 24 * 3600;
// The smallest: 1 s. Workers take about a second to start (LibTorch's load) before they can meet
// in the rendezvous; a shorter timeout passed the check and then failed every start, after the
// launcher had pointed at a run directory no worker had made.
constexpr double kMinDistTimeoutSeconds = 1;
// UserError naming --dist-timeout and `given` (default: the number as text) unless
// `seconds` is finite and in [kMinDistTimeoutSeconds, kMaxDistTimeoutSeconds].
void check_dist_timeout(double seconds, const std::string& given = "");
// Seconds as text for messages ("60", "0.5", "inf": safe for any double).
std::string seconds_text(double seconds);

// Rendezvous and create the process group. Throws cs::UserError for bad options,
// DistError when the rendezvous fails (e.g. a worker never showed up within the timeout).
std::unique_ptr<DistContext> init_dist(const DistOptions& o);
// Whether this build can create an NCCL process group (CUDA LibTorch with USE_C10D_NCCL).
bool nccl_available();

// Average the gradients of `params` over the ranks: the gradients are flattened
// into buckets of at most d.bucket_bytes (one bucket per dtype/device run),
// each bucket is summed with one asynchronous all-reduce, then divided by the
// world size and copied back. Parameters without a gradient count as zero.
void allreduce_gradients(DistContext& d, const std::vector<torch::Tensor>& params);
// Copy rank 0's values of `tensors` to every rank (in place, bucketed like the gradients).
void broadcast_parameters(DistContext& d, const std::vector<torch::Tensor>& tensors);
// Sum (in place) a small tensor over the ranks and return it.
torch::Tensor allreduce_sum(DistContext& d, torch::Tensor t);
// Concatenate each rank's tensor along dim 0 in rank order (every rank's tensors
// must have the same shapes). Returns the full tensors on every rank.
std::vector<torch::Tensor> allgather_rows(DistContext& d, const std::vector<torch::Tensor>& local);
void barrier(DistContext& d);

// Per-rank throughput of a metrics line (keys "throughput_rank<R>"), rank -> units/s.
// Rank 0 writes these into every training metrics line of a data-parallel run.
std::map<int, double> rank_throughputs(const std::map<std::string, double>& values);

}  // namespace cs
