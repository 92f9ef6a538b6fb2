#include "bench/bench_dist.h"

#include <ATen/Parallel.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>

#include "tasks/task.h"
#include "util/error.h"

namespace cs {

using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

json run_dist_bench_rank(const DistBenchOptions& o, DistContext& d) {
  if (o.task != "char_lm" && o.task != "word_lm")
    throw UserError("--task must be char_lm or word_lm (got '" + o.task + "')");
  if (o.batch % d.world != 0)
    throw UserError("--batch " + std::to_string(o.batch) + " is not divisible by " + std::to_string(d.world) +
                    " processes");
  json dataset = o.dataset;
  if (dataset.is_null() || dataset.empty()) {
    dataset = {{"name", "moby-dick"}};
    if (o.task == "word_lm") dataset.update({{"max_chars", 400000}, {"vocab_size", 5000}, {"lowercase", true}});
  }
  json raw = {{"task", o.task},
              {"dataset", dataset},
              {"model", o.model},
              {"training", {{"batch", o.batch}, {"bptt", o.seq}, {"steps", o.steps}}}};
  const json cfg = load_and_resolve(raw);  // UserError naming the bad option
  torch::manual_seed(0);
  auto task = make_task(cfg);
  if (d.world > 1) task->set_shard(d.rank, d.world);
  task->to(d.device);
  auto params = task->model()->parameters();
  {
    std::vector<torch::Tensor> ps;
    for (auto& p : params) ps.push_back(p.data());
    broadcast_parameters(d, ps);
  }
  torch::optim::Adam opt(params, torch::optim::AdamOptions(1e-3));
  std::vector<double> step_s, ar_s, comp_s;
  int64_t units = 0;
  for (int i = 0; i < o.steps + 2; ++i) {
    const auto t0 = Clock::now();
    StepResult sr = task->train_step();
    opt.zero_grad();
    sr.loss.backward();
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
      units = std::max(units, sr.units);
    }
  }
  const double t = median(step_s);
  int64_t nparams = 0;
  for (auto& p : params) nparams += p.numel();
  return {{"task", o.task},
          {"unit", task->unit_name()},
          {"world", d.world},
          {"rank", d.rank},
          {"threads", at::get_num_threads()},
          {"batch", o.batch},
          {"seq", o.seq},
          {"cell", cfg["model"]["cell"]},
          {"embed", cfg["model"]["embed"]},
          {"hidden", cfg["model"]["hidden"]},
          {"parameters", nparams},
          {"steps", o.steps},
          {"seconds_per_step", t},
          // full-length segments: this rank's units times the ranks (equal shards)
          {"throughput", static_cast<double>(units * d.world) / t},
          {"compute_ms", 1e3 * median(comp_s)},
          {"allreduce_ms", 1e3 * median(ar_s)},
          {"backend", d.world > 1 ? d.backend : "none"}};
}

}  // namespace cs
