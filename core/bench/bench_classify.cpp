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

#include "bench/bench.h"
#include "tasks/classify.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cs {

namespace {

using Clock = std::chrono::steady_clock;

json resolved_classify_model(const json& model) {
  json cfg = {{"task", {{"name", "classify"}}}, {"dataset", {{"name", "spam-assassin"}}}, {"model", model}};
  auto errs = validate_config(cfg);
  if (!errs.empty()) {
    std::string msg = "invalid bench model:";
    for (auto& e : errs) msg += "\n  " + e.str();
    throw UserError(msg);
  }
  return resolve_config(cfg)["model"];
}

struct Timing {
  double seconds = 0, flops = 0;
};

Timing time_classify_step(const json& model_in, int64_t B, int64_t T, int64_t V, int iters, double min_seconds) {
  json model = resolved_classify_model(model_in);
  torch::manual_seed(0);
  SentenceModel net(model, V, 2, false, SentenceTask::kPad);
  net->train();
  auto params = net->parameters();
  torch::optim::Adam opt(params, torch::optim::AdamOptions(1e-3));
  SentenceBatch b;
  b.tokens = torch::randint(2, V, {T, B}, torch::kInt64);
  b.lengths = torch::full({B}, T, torch::kInt64);
  b.labels = torch::randint(0, 2, {B}, torch::kInt64);
  Timing tm;
  // forward FLOPs per sentence: T steps of both directions + FC + output unit; x3 for backward
  const double H2 = static_cast<double>(net->encoder->output_size());
  const double fcn = model.value("fc", 1024);
  const double fwd = net->encoder->flops_per_step() * T + (fcn > 0 ? 2.0 * H2 * fcn + 2.0 * fcn : 2.0 * H2);
  tm.flops = 3.0 * fwd * B;
  auto fn = [&] {
    StepContext ctx;
    auto logits = net->forward(b, ctx).squeeze(1);
    auto loss = torch::binary_cross_entropy_with_logits(logits, b.labels.to(logits.dtype()));
    loss = loss + 1e-4 * net->embed->weight.pow(2).sum();
    opt.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, 5.0);
    opt.step();
  };
  fn();
  fn();
  std::vector<double> ts;
  auto start = Clock::now();
  for (int i = 0;; ++i) {
    auto t0 = Clock::now();
    fn();
    ts.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    if (iters > 0 ? i + 1 >= iters : (total >= min_seconds && i + 1 >= 5)) break;
    if (iters <= 0 && i + 1 >= 300) break;
  }
  std::sort(ts.begin(), ts.end());
  tm.seconds = ts[ts.size() / 2];
  return tm;
}

}  // namespace

json run_bench_classify(const BenchOptions& o) {
  if (o.threads > 0) set_threads(o.threads);
  json model = resolved_classify_model(o.model);
  const std::string cell = model["cell"];
  const int64_t V = std::max<int64_t>(o.vocab, 3);
  auto t = time_classify_step(model, o.batch, o.seq, V, o.iters, o.min_seconds);
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
  const std::string base = o.baseline.empty() ? "gru" : o.baseline;
  if (base != "none") {
    json bm = model;
    bm["cell"] = base;
    for (auto k : {"filter_length", "conv_channels", "conv_activation", "reset_after"}) bm.erase(k);
    auto bt = time_classify_step(bm, o.batch, o.seq, V, o.iters, o.min_seconds);
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
