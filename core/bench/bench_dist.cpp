#include "bench/bench_dist.h"

#include <ATen/Parallel.h>
#include <torch/nn/functional.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>

#include "tasks/char_lm.h"
#include "util/error.h"

namespace cs {

using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

json run_dist_bench_rank(const DistBenchOptions& o, DistContext& d) {
  json cfg = {{"task", {{"name", "char_lm"}}}, {"model", o.model}};
  auto errs = validate_config(cfg);
  if (!errs.empty()) throw UserError("invalid bench model: " + errs.front().str());
  const json model = resolve_config(cfg)["model"];
  if (o.batch % d.world != 0)
    throw UserError("--batch " + std::to_string(o.batch) + " is not divisible by " + std::to_string(d.world) + " processes");
  const int64_t B = o.batch / d.world, T = o.seq, V = o.vocab;
  torch::manual_seed(0);
  CharLMModel net(model, V);
  net->to(d.device);
  net->train();
  auto params = net->parameters();
  {
    std::vector<torch::Tensor> ps;
    for (auto& p : params) ps.push_back(p.data());
    broadcast_parameters(d, ps);
  }
  torch::optim::Adam opt(params, torch::optim::AdamOptions(1e-3));
  torch::manual_seed(1 + d.rank);  // each rank its own synthetic shard
  auto x = torch::randint(0, V, {T, B}, torch::kInt64).to(d.device);
  auto y = torch::randint(0, V, {T, B}, torch::kInt64).to(d.device);
  auto states = net->stack->initial_state(B, torch::TensorOptions().device(d.device));
  std::vector<double> step_s, ar_s, comp_s;
  for (int i = 0; i < o.steps + 2; ++i) {
    const auto t0 = Clock::now();
    StepContext ctx;
    auto st = detach_states(states);
    auto logits = net->forward(x, st, ctx);
    auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
    if (ctx.extra_loss.defined()) loss = loss + ctx.extra_loss;
    opt.zero_grad();
    loss.backward();
    const auto t1 = Clock::now();
    const double ar0 = d.allreduce_seconds;
    allreduce_gradients(d, params);
    const double ar = d.allreduce_seconds - ar0;
    torch::nn::utils::clip_grad_norm_(params, 5.0);
    opt.step();
    if (i >= 2) {  // warm-up excluded
      step_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      comp_s.push_back(std::chrono::duration<double>(t1 - t0).count());
      ar_s.push_back(ar);
    }
  }
  const double t = median(step_s);
  int64_t nparams = 0;
  for (auto& p : params) nparams += p.numel();
  return {{"world", d.world},
          {"rank", d.rank},
          {"threads", at::get_num_threads()},
          {"batch", o.batch},
          {"seq", o.seq},
          {"cell", model["cell"]},
          {"embed", model["embed"]},
          {"hidden", model["hidden"]},
          {"parameters", nparams},
          {"steps", o.steps},
          {"seconds_per_step", t},
          {"throughput", static_cast<double>(o.batch * o.seq) / t},
          {"compute_ms", 1e3 * median(comp_s)},
          {"allreduce_ms", 1e3 * median(ar_s)},
          {"backend", d.world > 1 ? d.backend : "none"}};
}

}  // namespace cs
