// What the ranks of a run must agree on, step by step: the one place where
// single-process and data-parallel training differ (docs/DISTRIBUTED.md).
//
//   StepSync            one process: every operation is the identity (pause/stop
//                       read from TrainerControl before each step).
//   DataParallelSync    several processes (core/run/dist): gradients averaged, step
//                       statistics and the stop / NaN flags all-reduced, rank 0's
//                       evaluation broadcast, the task's sharded state gathered for
//                       checkpoints, parameters shared from rank 0.
//
// The trainer calls these in the same order on every rank, so every collective is
// matched; the decisions it takes from their results (stop, NaN, best, early stop,
// end of run) are therefore identical on all ranks.
#pragma once
#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cs {

class Task;
struct DistContext;
struct TrainerControl;

// One training step as seen by this process; reduce_step turns it into the step of
// the whole (global) batch.
struct StepStats {
  double loss = 0;  // task loss of this process's batch (mean per unit)
  bool nonfinite = false;
  bool stop = false;  // this process was asked to stop
  // The signal that asked for it here (TrainerControl::stop_signal; 0: the user). After the
  // reduction: SIGTERM when any rank stopped for one (a scheduler's stop reaches every rank's
  // summary and exit status, not only the rank that received it).
  int stop_signal = 0;
  int64_t units = 0;
  double compute_s = 0;  // forward + backward seconds of this process
  std::map<std::string, double> metrics;
};

class StepSync {
 public:
  virtual ~StepSync() = default;
  virtual int rank() const { return 0; }
  virtual int world() const { return 1; }
  bool root() const { return rank() == 0; }
  // Before the first step of run(): the same parameters everywhere, a random stream per rank.
  virtual void begin(const std::vector<torch::Tensor>& params, uint64_t seed, int64_t step) {}
  // Checked before each step: whether to stop now (the caller checkpoints). One process:
  // waits while control->pause is set (adding the time to *paused), then control->stop.
  virtual bool should_stop(TrainerControl* control, double* paused);
  // After backward: the gradient of the global batch.
  virtual void reduce_gradients(const std::vector<torch::Tensor>& params) {}
  // The statistics of the global batch (loss and metrics weighted by units, units summed,
  // any rank's NaN/stop for all).
  virtual void reduce_step(StepStats& s) {}
  // Evaluation metrics every rank uses (rank 0's), plus consistency values for the record.
  virtual void agree_eval(std::map<std::string, double>& metrics, const std::vector<torch::Tensor>& params) {}
  // Extra values of a training metrics line (per-rank throughput, all-reduce time), then reset.
  virtual void interval_values(std::map<std::string, double>& values, int64_t steps) {}
  // Around saving a checkpoint: the task's state in global (rank-independent) terms.
  virtual void gather_task_state(Task& task) {}
  virtual void release_task_state(Task& task) {}
  // Rank 0's parameters on every rank (after rank 0 alone loaded best.pt).
  virtual void share_parameters(const std::vector<torch::Tensor>& params) {}
};

class DataParallelSync : public StepSync {
 public:
  explicit DataParallelSync(DistContext& d);
  int rank() const override;
  int world() const override;
  void begin(const std::vector<torch::Tensor>& params, uint64_t seed, int64_t step) override;
  // The stop agreed in the last reduce_step; a SIGTERM on any rank is recorded in `control`.
  bool should_stop(TrainerControl* control, double* paused) override;
  void reduce_gradients(const std::vector<torch::Tensor>& params) override;
  void reduce_step(StepStats& s) override;
  void agree_eval(std::map<std::string, double>& metrics, const std::vector<torch::Tensor>& params) override;
  void interval_values(std::map<std::string, double>& values, int64_t steps) override;
  void gather_task_state(Task& task) override;
  void release_task_state(Task& task) override;
  void share_parameters(const std::vector<torch::Tensor>& params) override;

 private:
  DistContext& d_;
  bool agreed_stop_ = false;
  bool agreed_sigterm_ = false;
  // interval accumulators per rank (throughput only; not checkpointed)
  std::vector<double> rank_time_, rank_units_;
  double allreduce_s_ = 0;
};

// StepSync for `dist` (null or one rank: the identity).
std::unique_ptr<StepSync> make_step_sync(DistContext* dist);

}  // namespace cs
