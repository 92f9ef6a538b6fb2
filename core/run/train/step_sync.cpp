#include "train/step_sync.h"

#include <chrono>
#include <csignal>
#include <limits>
#include <thread>

#include "dist/dist.h"
#include "tasks/task.h"
#include "train/trainer.h"

namespace cs {

using Clock = std::chrono::steady_clock;

bool StepSync::should_stop(TrainerControl* control, double* paused) {
  if (!control) return false;
  while (control->pause.load() && !control->stop.load()) {
    auto p0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    *paused += std::chrono::duration<double>(Clock::now() - p0).count();
  }
  return control->stop.load();
}

DataParallelSync::DataParallelSync(DistContext& d) : d_(d) {}

bool DataParallelSync::should_stop(TrainerControl* control, double*) {
  if (agreed_stop_ && agreed_sigterm_ && control && control->stop_signal.load() != SIGTERM) {
    control->stop_signal = SIGTERM;  // before `stop`, as a signal handler sets them
    control->stop = true;
  }
  return agreed_stop_;
}
int DataParallelSync::rank() const { return d_.rank; }
int DataParallelSync::world() const { return d_.world; }

void DataParallelSync::begin(const std::vector<torch::Tensor>& params, uint64_t seed, int64_t step) {
  // Identical starting point on every rank (fresh or resumed), and a different random
  // stream per rank (dropout masks), deterministic in (seed, rank, step).
  std::vector<torch::Tensor> ps;
  for (auto& p : params) ps.push_back(p.data());
  broadcast_parameters(d_, ps);
  torch::manual_seed(seed + 1000003ull * static_cast<uint64_t>(d_.rank) + 7919ull * static_cast<uint64_t>(step));
  rank_time_.assign(static_cast<size_t>(d_.world), 0.0);
  rank_units_.assign(static_cast<size_t>(d_.world), 0.0);
  allreduce_s_ = 0;
  agreed_stop_ = false;
  agreed_sigterm_ = false;
}

void DataParallelSync::reduce_gradients(const std::vector<torch::Tensor>& params) {
  const double ar0 = d_.allreduce_seconds;
  allreduce_gradients(d_, params);  // mean gradient of the global batch
  allreduce_s_ += d_.allreduce_seconds - ar0;
}

void DataParallelSync::reduce_step(StepStats& s) {
  // One small all-reduce: [loss*units, non-finite flag, stop flag, SIGTERM-stop flag, compute
  // seconds per rank (W), units per rank (W), metric*units ...]. Loss and metrics are weighted
  // by units, so unequal shards (the last batch of a sentence epoch) give the global mean.
  constexpr int64_t H = 4;  // the head before the per-rank values
  const int W = d_.world;
  const int64_t n = H + 2 * W + static_cast<int64_t>(s.metrics.size());
  auto st = torch::zeros({n}, torch::kFloat64);
  auto a = st.accessor<double, 1>();
  const double u = static_cast<double>(s.units);
  a[0] = s.nonfinite ? 0.0 : s.loss * u;
  a[1] = s.nonfinite ? 1.0 : 0.0;
  a[2] = s.stop ? 1.0 : 0.0;
  a[3] = s.stop && s.stop_signal == SIGTERM ? 1.0 : 0.0;
  a[H + d_.rank] = s.compute_s;
  a[H + W + d_.rank] = u;
  int64_t k = H + 2 * W;
  for (auto& kv : s.metrics) a[k++] = kv.second * u;
  st = allreduce_sum(d_, st).to(torch::kCPU);
  auto b = st.accessor<double, 1>();
  s.nonfinite = b[1] > 0;  // a NaN/Inf on any rank stops every rank at the same step
  s.stop = b[2] > 0;
  if (b[3] > 0) s.stop_signal = SIGTERM;
  agreed_stop_ = s.stop;
  agreed_sigterm_ = b[3] > 0;
  double units = 0;
  for (int r = 0; r < W; ++r) {
    rank_time_[static_cast<size_t>(r)] += b[H + r];
    rank_units_[static_cast<size_t>(r)] += b[H + W + r];
    units += b[H + W + r];
  }
  s.units = static_cast<int64_t>(units);
  const double inv = units > 0 ? 1.0 / units : 0.0;
  s.loss = s.nonfinite ? std::numeric_limits<double>::quiet_NaN() : b[0] * inv;
  k = H + 2 * W;
  for (auto& kv : s.metrics) kv.second = b[k++] * inv;
}

void DataParallelSync::agree_eval(std::map<std::string, double>& metrics, const std::vector<torch::Tensor>& params) {
  // Every rank evaluates the whole split with identical parameters (no collective can
  // time out during a long evaluation); rank 0's numbers are broadcast so that best /
  // early-stop decisions are identical everywhere.
  auto v = torch::zeros({static_cast<int64_t>(metrics.size())}, torch::kFloat64);
  int64_t i = 0;
  for (auto& kv : metrics) v[i++] = d_.rank == 0 ? kv.second : 0.0;
  v = allreduce_sum(d_, v).to(torch::kCPU);
  i = 0;
  for (auto& kv : metrics) kv.second = v[i++].item<double>();
  // Consistency check: the largest difference between any rank's per-tensor parameter
  // sums and rank 0's (0 when the replicas are identical, as they must be).
  std::vector<torch::Tensor> sums;
  {
    torch::NoGradGuard ng;
    for (auto& p : params) sums.push_back(p.detach().to(torch::kFloat64).sum().reshape({1}));
  }
  auto all = allgather_rows(d_, {torch::cat(sums)})[0].to(torch::kCPU).view({d_.world, -1});
  metrics["param_divergence"] = (all - all[0]).abs().max().item<double>();
}

void DataParallelSync::interval_values(std::map<std::string, double>& values, int64_t steps) {
  // Per rank: its units over its own forward+backward time (communication excluded),
  // so a slow rank stands out; the GUI reads these with rank_throughputs().
  for (int q = 0; q < d_.world; ++q) {
    const double t = rank_time_[static_cast<size_t>(q)];
    values["throughput_rank" + std::to_string(q)] = t > 0 ? rank_units_[static_cast<size_t>(q)] / t : 0;
  }
  values["allreduce_ms"] = 1e3 * allreduce_s_ / static_cast<double>(std::max<int64_t>(steps, 1));  // per step
  values["world_size"] = d_.world;
  std::fill(rank_time_.begin(), rank_time_.end(), 0.0);
  std::fill(rank_units_.begin(), rank_units_.end(), 0.0);
  allreduce_s_ = 0;
}

void DataParallelSync::gather_task_state(Task& task) {
  task.set_gathered_state(allgather_rows(d_, task.sharded_state()));
}
void DataParallelSync::release_task_state(Task& task) { task.set_gathered_state({}); }

void DataParallelSync::share_parameters(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> ps;
  for (auto& p : params) ps.push_back(p.data());
  broadcast_parameters(d_, ps);
}

std::unique_ptr<StepSync> make_step_sync(DistContext* dist) {
  if (dist && dist->world > 1) return std::make_unique<DataParallelSync>(*dist);
  return std::make_unique<StepSync>();
}

}  // namespace cs
