// `cellscope-cli bench --task classify`: training throughput of the sentence
// classification model (embedding -> bidirectional encoder -> FC 1024 -> sigmoid)
// with a cell, against the same model with the GRU: sentences/s, time ratio and
// analytic FLOP ratio. Every sentence has the full length (no padding), as in the
// CRU paper's batches of 32.
#include <ATen/Parallel.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "bench/bench.h"
#include "tasks/classify.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cs {

namespace {

using Clock = std::chrono::steady_clock;

json resolved_classify_model(const json& model) {
  return load_and_resolve(
      json{{"task", {{"name", "classify"}}}, {"dataset", {{"name", "spam-assassin"}}}, {"model", model}},
      "bench model")["model"];
}

struct Timing {
  double seconds = 0, flops = 0;
};

// One training step (forward, backward, clip, Adam) of the classification model.
struct ClassifyStep {
  SentenceModel net{nullptr};
  std::unique_ptr<torch::optim::Adam> opt;
  std::vector<torch::Tensor> params;
  SentenceBatch b;
  double flops = 0;
  ClassifyStep(const json& model_in, int64_t B, int64_t T, int64_t V) {
    json model = resolved_classify_model(model_in);
    torch::manual_seed(0);
    net = SentenceModel(model, V, 2, false, SentenceTask::kPad);
    net->train();
    params = net->parameters();
    opt = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(1e-3));
    b.tokens = torch::randint(2, V, {T, B}, torch::kInt64);
    b.lengths = torch::full({B}, T, torch::kInt64);
    b.labels = torch::randint(0, 2, {B}, torch::kInt64);
    // forward FLOPs per sentence: T steps of both directions + FC + output unit; x3 for backward
    const double H2 = static_cast<double>(net->encoder->output_size());
    const double fcn = static_cast<double>(resolved<int64_t>(model, "model", "fc"));
    const double fwd =
        net->encoder->flops_per_step() * static_cast<double>(T) + (fcn > 0 ? 2.0 * H2 * fcn + 2.0 * fcn : 2.0 * H2);
    flops = 3.0 * fwd * static_cast<double>(B);
  }
  void operator()() {
    StepContext ctx;
    auto logits = net->forward(b, ctx).squeeze(1);
    auto loss = torch::binary_cross_entropy_with_logits(logits, b.labels.to(logits.dtype()));
    loss = loss + 1e-4 * net->embed->weight.pow(2).sum();
    opt->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, 5.0);
    opt->step();
  }
};

// Median seconds per step of each model. With a baseline the two models alternate step by
// step, so both see the same machine load (the ratio stays meaningful on a busy machine).
std::vector<Timing> time_classify_steps(std::vector<std::unique_ptr<ClassifyStep>>& ms, int iters, double min_seconds) {
  for (auto& m : ms) {
    (*m)();
    (*m)();
  }
  std::vector<std::vector<double>> ts(ms.size());
  auto start = Clock::now();
  for (int i = 0;; ++i) {
    for (size_t j = 0; j < ms.size(); ++j) {
      auto t0 = Clock::now();
      (*ms[j])();
      ts[j].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    if (iters > 0 ? i + 1 >= iters : (total >= min_seconds && i + 1 >= 5)) break;
    if (iters <= 0 && i + 1 >= 300) break;
  }
  std::vector<Timing> out;
  for (size_t j = 0; j < ms.size(); ++j) {
    std::sort(ts[j].begin(), ts[j].end());
    out.push_back({ts[j][ts[j].size() / 2], ms[j]->flops});
  }
  return out;
}

}  // namespace

json run_bench_classify(const BenchOptions& o) {
  if (o.threads > 0) set_threads(o.threads);
  json model = resolved_classify_model(o.model);
  const std::string cell = model["cell"];
  const int64_t V = std::max<int64_t>(o.vocab, 3);
  std::vector<std::unique_ptr<ClassifyStep>> ms;
  ms.push_back(std::make_unique<ClassifyStep>(model, o.batch, o.seq, V));
  const std::string base = o.baseline.empty() ? "gru" : o.baseline;
  if (base != "none")  // the same model with the baseline's cell: only the options that cell has
    ms.push_back(std::make_unique<ClassifyStep>(model_for_cell(model, base, "classify"), o.batch, o.seq, V));
  auto times = time_classify_steps(ms, o.iters, o.min_seconds);
  const Timing t = times[0];
  json r;
  r["task"] = "classify";
  r["cell"] = cell;
  r["model"] = model;
  r["batch"] = o.batch;
  r["seq"] = o.seq;
  r["embed"] = model["embed"];
  r["hidden"] = model["hidden"];
  r["vocab"] = V;
  r["threads"] = at::get_num_threads();
  r["seconds_per_step"] = t.seconds;
  r["throughput"] = static_cast<double>(o.batch) / t.seconds;
  r["unit"] = "sentences/s";
  r["flops_per_step"] = t.flops;
  r["gflops"] = t.flops / t.seconds / 1e9;
  r["gemm_gflops"] = gemm_gflops();
  r["efficiency"] = r["gflops"].get<double>() / r["gemm_gflops"].get<double>();
  if (base != "none") {
    const Timing bt = times[1];
    r["baseline"] = base;
    r["baseline_seconds_per_step"] = bt.seconds;
    r["baseline_throughput"] = static_cast<double>(o.batch) / bt.seconds;
    r["baseline_gflops"] = bt.flops / bt.seconds / 1e9;
    r["time_ratio"] = t.seconds / bt.seconds;
    r["flop_ratio"] = t.flops / bt.flops;
  }
  return r;
}

}  // namespace cs
