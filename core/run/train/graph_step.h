// The training step as a CUDA graph (run/train/GRAPH_NOTES.md): a step whose tensors keep their
// shapes (a stream LM's BPTT window, the bench's step) is captured once with at::cuda::CUDAGraph and
// replayed, so the thousands of small kernels of a recurrent cell's step-wise path cost one launch.
// What a captured step needs besides the graph: an optimizer, clipping and a finiteness check that
// read no value back to the host (DeviceAdam, clip_grad_norm_device, nonfinite_any), usable on any
// device (the CPU tests run them without a graph). A CPU LibTorch builds everything but StepGraph's
// capture, which then reports that it is not built.
#pragma once
#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/json.h"

namespace torch::optim {
class Adam;
}

namespace cs {

// Whether this build can capture CUDA graphs (a LibTorch built with CUDA).
bool cuda_graphs_built();
// For `cellscope-cli info`: {"built_with_cuda", "graphs" (a sentence), "devices": [{"index",
// "name", "capability", "memory_bytes"}]}.
json cuda_info();

// CUDA's float32 as exact float32: TF32 off for cuBLAS and cuDNN (LibTorch leaves it on for cuDNN's
// convolutions, the CRUs'), so a CUDA run computes what the CPU run does up to rounding and compares
// with PyTorch peers run the same way. Nothing on a CPU build.
void cuda_float32_exact();
// The CUDA caching allocator's bytes on `device` (0 elsewhere): reset the peak; now, or the peak.
void cuda_reset_peak_memory(const torch::Device& device);
int64_t cuda_allocated_bytes(const torch::Device& device, bool peak);

// Why a model's training step cannot be captured as one graph, or "" when it can: a cell whose
// forward reads a value back to the host on every step (MC-RNN's time step, eq. 1's staggered
// blocks) would stop a capture.
std::string graph_refusal(const json& model);

// Adam as device work only: torch::optim::Adam's own update (its AdamParamState tensors, updated
// in place; the same formulas, with the bias corrections computed on the device from a step tensor
// and the learning rate a device tensor, as PyTorch's Adam(capturable=True) does), so one optimizer
// serves the plain steps and the captured ones, and checkpoints see it unchanged. The first group's
// options (one group: the trainer's and the bench's); amsgrad is refused.
class DeviceAdam {
 public:
  DeviceAdam(torch::optim::Adam& opt, std::vector<torch::Tensor> params);
  ~DeviceAdam();
  // The learning rate and step count from the optimizer (outside a capture: host -> device).
  void load_from_optimizer();
  // One update from the parameters' gradients (capturable: no host read, no allocation that
  // outlives it).
  void step();
  // The host step count of every AdamParamState set to the number of updates made (before a
  // checkpoint or a plain step), `updates` counted by the caller.
  void store_step_count(int64_t updates);
  int64_t step_count() const;  // the host step count of the first parameter's state

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

// clip_grad_norm_ without reading the norm back: the total 2-norm of the gradients as a 0-dim
// tensor, the gradients scaled by min(1, max_norm / (norm + 1e-6)) (max_norm <= 0 or infinite:
// not scaled). The same result as torch::nn::utils::clip_grad_norm_.
torch::Tensor clip_grad_norm_device(const std::vector<torch::Tensor>& params, double max_norm);
// A 0-dim float: 0 when every element of `params` is finite, 1 when one is Inf (and none NaN), 2 or 3
// when one is NaN.
torch::Tensor nonfinite_any(const std::vector<torch::Tensor>& params);
// Every defined gradient set to zero in place (a captured backward accumulates into them).
void zero_grads_in_place(const std::vector<torch::Tensor>& params);

// One captured step on `device`'s side stream. Every step of a graph-driven loop runs through
// run() (eagerly, on the side stream) or replay(); the side stream waits for the default stream's
// earlier work first, and a read of a result (`.item()`, `.cpu()`) inside the body or after
// replay() orders the host after it.
class StepGraph {
 public:
  explicit StepGraph(torch::Device device);
  ~StepGraph();
  // Runs `body` eagerly on the side stream (the warm-up steps, and the steps whose shapes differ).
  void run(const std::function<void()>& body);
  // Captures `body` (nothing runs; the caller replays it once for the step it stands for). False,
  // with the reason in *why, when the capture is impossible (a CPU build, a CPU device) or failed
  // (then nothing of it remains and the caller goes on eagerly).
  bool capture(const std::function<void()>& body, std::string* why);
  void replay();
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

}  // namespace cs
