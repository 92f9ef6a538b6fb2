#include "train/graph_step.h"

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <limits>
#include <optional>

#if defined(CELLSCOPE_WITH_CUDA)
// A CUDA LibTorch (core/CMakeLists.txt defines CELLSCOPE_WITH_CUDA when find_package(Torch) reports
// CUDA): the graph and stream types, which include CUDA's runtime headers.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

#include "util/error.h"
#include "util/torch_compat.h"

namespace cs {

bool cuda_graphs_built() {
#if defined(CELLSCOPE_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

json cuda_info() {
  json j;
  j["built_with_cuda"] = cuda_graphs_built();
  json devs = json::array();
#if defined(CELLSCOPE_WITH_CUDA)
  const int64_t n = torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  for (int64_t i = 0; i < n; ++i) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    devs.push_back({{"index", i},
                    {"name", std::string(p->name)},
                    {"capability", std::to_string(p->major) + "." + std::to_string(p->minor)},
                    {"memory_bytes", static_cast<int64_t>(p->totalGlobalMem)}});
  }
  j["graphs"] = n > 0 ? "on: a char-LM training step on CUDA is captured as one CUDA graph (training.cuda_graph auto)"
                      : "built, but no CUDA device is visible";
#else
  j["graphs"] = "not in this build (a CPU LibTorch; CUDA graphs need a CUDA LibTorch)";
#endif
  j["devices"] = devs;
  return j;
}

void cuda_float32_exact() {
#if defined(CELLSCOPE_WITH_CUDA)
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
#endif
}

void cuda_reset_peak_memory(const torch::Device& device) {
#if defined(CELLSCOPE_WITH_CUDA)
  if (device.is_cuda())
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : c10::cuda::current_device());
#else
  (void)device;
#endif
}

int64_t cuda_allocated_bytes(const torch::Device& device, bool peak) {
#if defined(CELLSCOPE_WITH_CUDA)
  if (!device.is_cuda()) return 0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index()
                                                                                        : c10::cuda::current_device());
  const auto& s = stats.allocated_bytes[0];  // StatType::AGGREGATE
  return peak ? s.peak : s.current;
#else
  (void)device;
  (void)peak;
  return 0;
#endif
}

std::string graph_refusal(const json& model) {
  const std::string cell = model.value("cell", std::string());
  if (cell == "mcrnn")
    return "mcrnn reads its time step back from its state on every forward (eq. 1's staggered blocks), which a "
           "CUDA graph cannot capture";
  return "";
}

// ------------------------------------------------------------------ device-only Adam

struct DeviceAdam::Impl {
  torch::optim::Adam* opt = nullptr;
  std::vector<torch::Tensor> params;
  std::vector<torch::optim::AdamParamState*> states;
  torch::Tensor step;  // updates made (float, on the device)
  torch::Tensor lr;    // the learning rate (float, on the device)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0;
};

DeviceAdam::DeviceAdam(torch::optim::Adam& opt, std::vector<torch::Tensor> params) : d_(std::make_unique<Impl>()) {
  d_->opt = &opt;
  d_->params = std::move(params);
  TORCH_CHECK(!d_->params.empty(), "DeviceAdam: expected parameters, got none");
  auto& o = static_cast<torch::optim::AdamOptions&>(opt.param_groups().at(0).options());
  TORCH_CHECK(!o.amsgrad(), "DeviceAdam: expected Adam without amsgrad, got amsgrad");
  auto& st = opt.state();
  torch::NoGradGuard ng;
  for (const auto& p : d_->params) {
    const auto key = torch_compat::optimizer_state_key(st, p);
    if (st.find(key) == st.end()) {  // as Adam::step() makes it on a parameter's first update
      auto s = std::make_unique<torch::optim::AdamParamState>();
      s->step(0);
      s->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      s->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      st[key] = std::move(s);
    }
    d_->states.push_back(static_cast<torch::optim::AdamParamState*>(st[key].get()));
  }
  const auto fopt = torch::TensorOptions().dtype(torch::kFloat32).device(d_->params.front().device());
  d_->step = torch::zeros({}, fopt);
  d_->lr = torch::zeros({}, fopt);
  load_from_optimizer();
}

DeviceAdam::~DeviceAdam() = default;

void DeviceAdam::load_from_optimizer() {
  auto& o = static_cast<torch::optim::AdamOptions&>(d_->opt->param_groups().at(0).options());
  d_->beta1 = std::get<0>(o.betas());
  d_->beta2 = std::get<1>(o.betas());
  d_->eps = o.eps();
  d_->wd = o.weight_decay();
  torch::NoGradGuard ng;
  d_->lr.fill_(o.lr());
  d_->step.fill_(static_cast<double>(d_->states.front()->step()));
}

void DeviceAdam::step() {
  torch::NoGradGuard ng;
  const double b1 = d_->beta1, b2 = d_->beta2;
  // Adam's step with bias corrections (Kingma & Ba, Algorithm 1), in PyTorch's capturable form:
  //   bc1 = 1 - b1^t, bc2 = 1 - b2^t, p -= lr/bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
  d_->step.add_(1);
  const auto bc1 = 1 - torch::pow(b1, d_->step);
  const auto bc2_sqrt = (1 - torch::pow(b2, d_->step)).sqrt();
  const auto neg_step_size = -(d_->lr / bc1);
  for (size_t i = 0; i < d_->params.size(); ++i) {
    auto& p = d_->params[i];
    if (!p.grad().defined()) continue;
    auto g = d_->wd != 0 ? p.grad().add(p, d_->wd) : p.grad();
    auto& m = d_->states[i]->exp_avg();
    auto& v = d_->states[i]->exp_avg_sq();
    m.mul_(b1).add_(g, 1 - b1);
    v.mul_(b2).addcmul_(g, g, 1 - b2);
    const auto denom = (v.sqrt() / bc2_sqrt).add_(d_->eps);
    p.addcmul_(m / denom, neg_step_size);
  }
}

int64_t DeviceAdam::step_count() const { return d_->states.front()->step(); }

void DeviceAdam::store_step_count(int64_t updates) {
  for (auto* s : d_->states) s->step(updates);
}

torch::Tensor clip_grad_norm_device(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard ng;
  std::vector<torch::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(p.grad().norm(2));
  TORCH_CHECK(!norms.empty(), "clip_grad_norm_device: expected gradients, got none");
  auto total = torch::stack(norms).norm(2);
  if (max_norm > 0 && std::isfinite(max_norm)) {
    // clip_grad_norm_'s coefficient max_norm / (norm + 1e-6), applied only below 1: min(1, coef)
    // multiplies by exactly 1 otherwise, the same gradients.
    const auto coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
    for (const auto& p : params)
      if (p.grad().defined()) p.grad().mul_(coef);
  }
  return total;
}

torch::Tensor nonfinite_any(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard ng;
  std::vector<torch::Tensor> code;
  for (const auto& p : params)
    code.push_back(torch::isnan(p).any().to(torch::kFloat32) * 2 + torch::isinf(p).any().to(torch::kFloat32));
  return torch::stack(code).amax();
}

void zero_grads_in_place(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard ng;
  for (const auto& p : params)
    if (p.grad().defined()) p.grad().zero_();
}

// ------------------------------------------------------------------ the graph
struct StepGraph::Impl {
  torch::Device device{torch::kCPU};
#if defined(CELLSCOPE_WITH_CUDA)
  std::optional<c10::cuda::CUDAStream> stream;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  // The side stream waits for the default stream's earlier work (data copies, an evaluation).
  void follow_default() {
    at::cuda::CUDAEvent ev;
    ev.record(c10::cuda::getDefaultCUDAStream(device.index()));
    ev.block(*stream);
  }
#endif
  bool captured = false;
};

StepGraph::StepGraph(torch::Device device) : d_(std::make_unique<Impl>()) {
  d_->device = device;
#if defined(CELLSCOPE_WITH_CUDA)
  if (device.is_cuda()) {
    if (!device.has_index())
      d_->device = torch::Device(torch::kCUDA, c10::cuda::current_device());  // "cuda": the current one
    d_->stream = c10::cuda::getStreamFromPool(false, d_->device.index());
  }
#endif
}

StepGraph::~StepGraph() = default;

void StepGraph::run(const std::function<void()>& body) {
#if defined(CELLSCOPE_WITH_CUDA)
  if (d_->stream) {
    d_->follow_default();
    c10::cuda::CUDAStreamGuard g(*d_->stream);
    body();
    return;
  }
#endif
  body();
}

bool StepGraph::capture(const std::function<void()>& body, std::string* why) {
  d_->captured = false;
#if defined(CELLSCOPE_WITH_CUDA)
  if (!d_->stream) {
    if (why) *why = "the device is not a CUDA device";
    return false;
  }
  try {
    d_->follow_default();
    c10::cuda::CUDAStreamGuard g(*d_->stream);
    d_->graph = std::make_unique<at::cuda::CUDAGraph>();
    d_->graph->capture_begin();
    try {
      body();
    } catch (...) {
      try {
        d_->graph->capture_end();  // ends the (invalidated) capture; throws
      } catch (...) {
      }
      throw;
    }
    d_->graph->capture_end();
    d_->captured = true;
    return true;
  } catch (const std::exception& e) {
    // Not destroyed: a capture_end that throws leaves the caching allocator holding a pointer to the
    // graph (LibTorch up to 2.11 ends the pool's capture after the throw point), so the failed graph is
    // leaked, never destroyed: at most one per StepGraph (nothing captures again after a failure).
    (void)d_->graph.release();
    (void)cudaGetLastError();  // a failed capture's error is not sticky: clear it
    if (why) {
      const std::string w = e.what();
      *why = w.substr(0, w.find('\n'));
    }
    return false;
  }
#else
  (void)body;
  if (why) *why = "this LibTorch has no CUDA (CUDA graphs need a CUDA LibTorch)";
  return false;
#endif
}

void StepGraph::replay() {
  TORCH_CHECK(d_->captured, "StepGraph::replay: expected a captured graph, got none");
#if defined(CELLSCOPE_WITH_CUDA)
  d_->follow_default();
  c10::cuda::CUDAStreamGuard g(*d_->stream);
  d_->graph->replay();
#endif
}

bool StepGraph::captured() const { return d_->captured; }

}  // namespace cs
