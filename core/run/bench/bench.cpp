#include "bench/bench.h"

#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "cells/cru.h"
#include "cells/registry.h"
#include "tasks/char_lm.h"
#include "train/graph_step.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cs {

using Clock = std::chrono::steady_clock;

namespace {

// Run `fn` (one iteration) after 2 warm-up calls; median seconds per call.
template <typename Fn>
double median_time(Fn&& fn, int iters, double min_seconds) {
  fn();
  fn();
  std::vector<double> ts;
  auto start = Clock::now();
  for (int i = 0;; ++i) {
    auto t0 = Clock::now();
    fn();
    ts.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    if (iters > 0 ? i + 1 >= iters : (total >= min_seconds && i + 1 >= 3)) break;
    if (iters <= 0 && i + 1 >= 200) break;
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

json resolved_model(const json& model) {
  json m = model;
  // The benchmark's task is a language model: a convolution window (the CRUs') is causal unless
  // the model says otherwise (a centred one would see the token to predict, which char_lm refuses).
  if (!m.contains("conv_window"))
    for (const auto& o : options_for(m.value("cell", std::string("gru")), "char_lm"))
      if (o.section == "model" && o.key == "conv_window") m["conv_window"] = enum_name(ConvWindow::Causal);
  return load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", m}}, "bench model")["model"];
}

}  // namespace

// How long the large-GEMM rate is measured: 1 s, or CELLSCOPE_BENCH_GEMM_SECONDS (a positive
// number; the tests set 0.1: every bench child measures it, and their figures are not the point).
double gemm_seconds() {
  const char* v = std::getenv("CELLSCOPE_BENCH_GEMM_SECONDS");
  char* end = nullptr;
  const double s = v ? std::strtod(v, &end) : 0.0;
  return v && end != v && *end == '\0' && s > 0.0 && s < 3600.0 ? s : 1.0;
}

double gemm_gflops(int64_t n) {
  torch::NoGradGuard ng;
  auto a = torch::randn({n, n}), b = torch::randn({n, n});
  auto c = torch::empty({n, n});
  double t = median_time([&] { torch::mm_out(c, a, b); }, 0, gemm_seconds());
  return 2.0 * n * n * n / t / 1e9;
}

bool cell_has_fast_path(const json& model) { return fast_path_refusal(model).empty(); }

json model_for_cell(const json& model, const std::string& cell, const std::string& task) {
  json out = {{"cell", cell}};
  for (const auto& o : options_for(cell, task))
    if (o.section == "model" && o.key != "cell" && model.contains(o.key)) out[o.key] = model.at(o.key);
  return out;
}

void force_autograd_path(StepContext& ctx) {
  // Every fused path of today checks ctx.stepwise; a fast path that reads another switch
  // (an environment variable such as CELLSCOPE_FAST=0, a model option) is set here too.
  // `bench --peer` also runs its autograd children with CELLSCOPE_FAST=0 in the environment.
  ctx.stepwise = true;
}

struct CharLMStepBench::Impl {
  json model;
  int64_t B, T, V;
  bool autograd;
  torch::Device device{torch::kCPU};
  CharLMModel net{nullptr};
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::Adam> opt;
  torch::Tensor x, y;
  std::vector<State> states;
  double folded = 0;  // the last step's StepContext::folded_flops
  // the CUDA graph (graph = true): eager warm-up steps, then one capture, then replays
  bool use_graph = false;
  std::unique_ptr<StepGraph> graph;
  std::unique_ptr<DeviceAdam> dadam;
  int warm = 0;
  std::string graph_note;
  void body();
};

CharLMStepBench::CharLMStepBench(const json& model_in, int64_t B, int64_t T, int64_t V, bool autograd,
                                 const std::string& device, bool graph)
    : d_(std::make_unique<Impl>()) {
  d_->model = resolved_model(model_in);
  d_->B = B;
  d_->T = T;
  d_->V = V;
  d_->autograd = autograd;
  try {
    d_->device = torch::Device(device);
  } catch (const std::exception&) {
    throw UserError("--device: '" + device + "' is not a device (expected cpu, cuda or cuda:N)");
  }
  torch::manual_seed(0);
  d_->net = CharLMModel(d_->model, V);
  d_->net->train();
  d_->net->to(d_->device);
  d_->params = d_->net->parameters();
  d_->opt = std::make_unique<torch::optim::Adam>(d_->params, torch::optim::AdamOptions(1e-3));
  d_->x = torch::randint(0, V, {T, B}, torch::kInt64).to(d_->device);
  d_->y = torch::randint(0, V, {T, B}, torch::kInt64).to(d_->device);
  d_->states = d_->net->stack->initial_state(B, torch::TensorOptions().device(d_->device));
  if (graph) {
    d_->use_graph = true;
    d_->graph = std::make_unique<StepGraph>(d_->device);
    d_->dadam = std::make_unique<DeviceAdam>(*d_->opt, d_->params);
    const std::string refusal = graph_refusal(d_->model);
    if (!refusal.empty()) d_->graph_note = "eager: " + refusal;
  }
}

CharLMStepBench::~CharLMStepBench() = default;

double CharLMStepBench::model_flops_per_step() const {
  const double fwd = (d_->net->stack->flops_per_step() + 2.0 * d_->net->stack->output_size() * d_->V) * d_->B * d_->T;
  return 3.0 * fwd;  // forward + backward (~2x forward)
}

double CharLMStepBench::flops_per_step() const { return model_flops_per_step() - 3.0 * d_->folded; }

std::string CharLMStepBench::graph_note() const { return d_->graph_note; }

// One step whose tensors keep their shapes and which reads nothing back (a CUDA graph's body).
void CharLMStepBench::Impl::body() {
  StepContext ctx;
  ctx.tensor_metrics = true;
  if (autograd) force_autograd_path(ctx);
  auto st = states;  // the forward rebinds its entries; the zero state stays
  auto logits = net->forward(x, st, ctx);
  folded = ctx.folded_flops;
  auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
  if (ctx.extra_loss.defined()) loss = loss + ctx.extra_loss;
  zero_grads_in_place(params);
  loss.backward();
  clip_grad_norm_device(params, 5.0);
  dadam->step();
}

void CharLMStepBench::step() {
  if (d_->use_graph) {
    // three eager warm-up steps on the graph's stream, then the capture (which runs nothing) and
    // its first replay; a step that cannot be captured stays eager (graph_note says why)
    if (d_->graph->captured()) {
      d_->graph->replay();
    } else if (d_->warm < 3 || !d_->graph_note.empty()) {
      d_->graph->run([&] { d_->body(); });
      ++d_->warm;
    } else {
      std::string why;
      if (d_->graph->capture([&] { d_->body(); }, &why)) {
        d_->graph_note = "captured";
        d_->graph->replay();
      } else {
        d_->graph_note = "eager: the capture failed: " + why;
        d_->graph->run([&] { d_->body(); });
      }
    }
    return;
  }
  StepContext ctx;
  if (d_->autograd) force_autograd_path(ctx);
  ctx.tensor_metrics = d_->device.is_cuda();  // no read-back on a GPU
  auto st = detach_states(d_->states);
  auto logits = d_->net->forward(d_->x, st, ctx);
  d_->folded = ctx.folded_flops;
  auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, d_->V}), d_->y.reshape({-1}));
  if (ctx.extra_loss.defined()) loss = loss + ctx.extra_loss;
  d_->opt->zero_grad();
  loss.backward();
  if (d_->device.is_cuda())
    clip_grad_norm_device(d_->params, 5.0);  // clip_grad_norm_ reads the norm back: a sync per step
  else torch::nn::utils::clip_grad_norm_(d_->params, 5.0);
  d_->opt->step();
}

double time_char_lm_step(const json& model_in, int64_t B, int64_t T, int64_t V, int iters, double min_seconds,
                         double* flops_per_iter, bool autograd) {
  CharLMStepBench b(model_in, B, T, V, autograd);
  const double t = median_time([&] { b.step(); }, iters, min_seconds);
  if (flops_per_iter) *flops_per_iter = b.flops_per_step();  // after the steps: what they executed
  return t;
}

// Median seconds of forward + backward of a torch::nn::GRU or LSTM module on x [T, B, E].
template <class RNN>
static double time_rnn_module(RNN rnn, torch::Tensor& x, int iters, double min_seconds) {
  return median_time(
      [&] {
        rnn->zero_grad();
        x.mutable_grad() = torch::Tensor();
        auto out = std::get<0>(rnn->forward(x));
        out.sum().backward();
      },
      iters, min_seconds);
}

// Raw torch::nn::GRU / LSTM forward + backward at the same shape (no embedding, no head, no optimizer).
static double time_torch_rnn(bool lstm, int64_t E, int64_t H, int64_t B, int64_t T, int iters, double min_seconds,
                             double* flops_per_iter) {
  torch::manual_seed(0);
  // The input requires grad: inside a model (after an embedding or a lower layer) the
  // RNN must also compute dL/dx, so the fair baseline does that work too.
  auto x = torch::randn({T, B, E}).requires_grad_(true);
  const double G = lstm ? 4 : 3;
  if (flops_per_iter) *flops_per_iter = 3.0 * (2.0 * G * H * (E + H) + 6.0 * G * H) * B * T;
  if (lstm) return time_rnn_module(torch::nn::LSTM(torch::nn::LSTMOptions(E, H)), x, iters, min_seconds);
  return time_rnn_module(torch::nn::GRU(torch::nn::GRUOptions(E, H)), x, iters, min_seconds);
}

json run_bench(const BenchOptions& o) {
  if (o.threads > 0) set_threads(o.threads);
  json model = resolved_model(o.model);
  const std::string cell = model["cell"];
  const int64_t E = model["embed"], H = model["hidden"];
  double flops = 0;
  const double t = time_char_lm_step(model, o.batch, o.seq, o.vocab, o.iters, o.min_seconds, &flops);
  const double gemm = gemm_gflops();
  json r;
  r["cell"] = cell;
  r["model"] = model;
  r["task"] = "char_lm";
  r["batch"] = o.batch;
  r["seq"] = o.seq;
  r["embed"] = E;
  r["hidden"] = H;
  r["vocab"] = o.vocab;
  r["threads"] = at::get_num_threads();
  r["seconds_per_step"] = t;
  r["throughput"] = static_cast<double>(o.batch * o.seq) / t;
  r["unit"] = "chars/s";
  r["flops_per_step"] = flops;
  r["gflops"] = flops / t / 1e9;
  r["gemm_gflops"] = gemm;
  r["efficiency"] = r["gflops"].get<double>() / gemm;
  std::string base = o.baseline;
  if (base.empty()) base = cell == "lstm" ? "torch_lstm" : cell == "gru" ? "torch_gru" : "gru";
  if (o.baseline.empty() && cell == "mcrnn")
    base = resolved<std::string>(model, "model", "base");  // MC-RNN vs its base cell
  if (base != "none") {
    double bflops = 0, bt = 0;
    if (base == "torch_gru" || base == "torch_lstm") {
      bt = time_torch_rnn(base == "torch_lstm", E, H, o.batch, o.seq, o.iters, o.min_seconds, &bflops);
    } else {
      json bm = {{"cell", base}, {"embed", E}, {"hidden", H}, {"layers", resolved<int64_t>(model, "model", "layers")}};
      bt = time_char_lm_step(bm, o.batch, o.seq, o.vocab, o.iters, o.min_seconds, &bflops);
    }
    r["baseline"] = base;
    r["baseline_seconds_per_step"] = bt;
    r["baseline_throughput"] = static_cast<double>(o.batch * o.seq) / bt;
    r["baseline_gflops"] = bflops / bt / 1e9;
    r["time_ratio"] = t / bt;
    r["flop_ratio"] = flops / bflops;
  }
  return r;
}

}  // namespace cs
