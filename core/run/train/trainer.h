// The generic trainer: optimizer, gradient clipping, logging, periodic evaluation,
// checkpoints, early stopping, NaN/Inf detection, resume. Works for every Task.
// Thread-agnostic: the GUI runs it on a worker thread and talks to it through
// TrainerControl (atomics) and the callbacks (plain structs, never tensors).
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "config/schema.h"
#include "tasks/task.h"
#include "train/metrics.h"
#include "train/run_store.h"

namespace cs {

struct DistContext;  // dist/dist.h
class StepSync;      // train/step_sync.h
struct StepStats;    // train/step_sync.h

struct Progress {
  int64_t step = 0, total_steps = 0;
  double elapsed = 0, eta = 0;  // seconds
  double throughput = 0;        // units/s over the last interval
  std::string unit;
  double last_loss = 0;
};

struct TrainerControl {
  std::atomic<bool> stop{false};  // stop cleanly (checkpoint, status "stopped")
  // The signal that asked for the stop, set before `stop` by a signal handler (0: the user, from
  // the window or Ctrl-C). SIGTERM (a scheduler's preemption or time limit) is named in the summary.
  std::atomic<int> stop_signal{0};
  std::atomic<bool> pause{false};  // the loop waits while set
};

struct TrainerCallbacks {
  std::function<void(const MetricsRecord&)> on_metrics;
  std::function<void(const Progress&)> on_progress;
  std::function<void(const std::string&)> on_log;
};

struct TrainOutcome {
  RunSummary summary;
  std::string run_dir;
};

// Why starting `store`'s run again from step 0 would lose history (empty when there is none to
// lose): its checkpoints/ directory is gone while metrics.jsonl holds steps, metrics.jsonl holds
// steps past the first checkpoint the run was due to write, or its summary says it stopped or
// finished. Trainer::resume refuses such a run; a sweep keeps its directory (docs/RELIABILITY.md).
std::string history_without_checkpoint(const RunStore& store);

class Trainer {
 public:
  // `cfg` resolved. `store` may be null for in-memory training (tests, sweeps of
  // tiny models): nothing is written.
  // `dist` (optional, owned by the caller): data-parallel training (docs/DISTRIBUTED.md).
  // Every rank builds the same task and config and passes a store to the same run
  // directory (or all pass null); the task trains on its shard, gradients are
  // averaged over the ranks after backward, only rank 0 writes the run directory,
  // and every decision (NaN, stop, early stop) is agreed by all ranks.
  Trainer(json cfg, std::unique_ptr<Task> task, std::shared_ptr<RunStore> store, DistContext* dist = nullptr);
  ~Trainer();
  // Load checkpoints/last.pt (model, optimizer, task, trainer state, RNG) and
  // trim metrics.jsonl to the checkpoint's step. The checkpoint is checked against the
  // model (every parameter's name and shape) before anything is written. Without last.pt
  // the newest step_<N>.pt that loads is used; a run without a usable checkpoint starts
  // again from step 0 only when it has no history to lose, otherwise UserError and nothing
  // is written (docs/RELIABILITY.md, "A run's history is never lost on resume"). Resuming a run
  // that finished (summary status "finished", training.steps not raised, or an early
  // stop) makes run() a no-op that writes nothing (no second test evaluation).
  void resume();
  // Start a forked run (LaunchOptions::fork_dir): load `checkpoint` of the parent run
  // (weights, optimizer, task state, RNG, step counter) as resume() would, but forget the
  // parent's best-checkpoint tracking (the child keeps its own best.pt) and write nothing
  // into the parent. The store is the child's new run directory.
  void fork_from(const std::string& checkpoint);
  // Train until training.steps, early stop, stop request, or failure. Never throws
  // for NaN/Inf or divergence (status failed, reason "diverged: ..."; rule in
  // docs/RELIABILITY.md); rethrows other errors after marking the run failed.
  TrainOutcome run(TrainerControl* control = nullptr, const TrainerCallbacks& cb = {});
  Task& task() { return *task_; }
  int64_t step() const { return step_; }
  const RunSummary& summary() const { return summary_; }
  // The learning rate the optimizer's first parameter group uses now (training.lr, decayed by
  // training.lr_decay); for tests and the GUI.
  double optimizer_lr() const;
  bool already_finished() const { return already_finished_; }  // resume() of a finished run
  std::vector<MetricsRecord> history;                          // every record produced by this process

  // Save/load a checkpoint file (atomic, with a checksum: train/checkpoint.h). load_checkpoint
  // checks the model's parameter names and shapes first (UserError naming the parameter).
  // Public for tests and analyses.
  void save_checkpoint(const std::string& path);
  void load_checkpoint(const std::string& path);

 private:
  // run() as named steps (trainer.cpp; trainer_impl.h holds Impl and RunContext, trainer_checkpoint.cpp
  // and trainer_resume.cpp the rest); RunContext holds one run()'s training options and clocks.
  struct Impl;
  struct RunContext;
  enum class Ending { finished, stopped, failed };
  void prepare(RunContext& rc);
  bool train_step(RunContext& rc);  // one optimizer step; false on a NaN/Inf (rc.reason says why)
  // The step as a CUDA graph (trainer_graph.cpp, GRAPH_NOTES.md): set up by prepare() where it applies.
  void setup_graph(RunContext& rc);
  bool train_step_graphed(RunContext& rc);
  // train_step's shared ends: the reason of a non-finite loss or update, and a finished step's
  // accounting (step count, interval sums, progress callback).
  void fail_nonfinite_loss(RunContext& rc, double loss, double gnorm);
  void fail_nonfinite_weights(RunContext& rc, bool nan);
  void account_step(RunContext& rc, const StepStats& st, double gnorm, double dt, double flops);
  void log_interval(RunContext& rc);
  void evaluate_valid(RunContext& rc);
  EvalResult evaluate(RunContext& rc, const std::string& split);
  void checkpoint(RunContext& rc);
  void save_global(const std::string& path);
  // The one end of every run, walked by every rank in the same order: stop -> checkpoint,
  // finish -> test evaluation of best.pt; then summary and log.
  TrainOutcome finish(RunContext& rc, Ending how);
  double elapsed(const RunContext& rc) const;
  void write_summary(RunContext& rc);
  // RUN_DIR/test_examples.json (train/test_examples.h); `test`: the test evaluation, whose metrics check the
  // file and whose own per-example scores (EvalResult::sequences), where it has them, are the file's
  void write_test_examples_of_best(RunContext& rc, const EvalResult& test);
  void log(RunContext& rc, const std::string& s);
  void emit(RunContext& rc, const MetricsRecord& r);
  void report_tensorboard(RunContext& rc);  // the TensorBoard writer's first error, once
  int64_t discard_unproven_checkpoint();    // after a non-finite loss (trainer_checkpoint.cpp)

  std::unique_ptr<Impl> impl_;
  json cfg_;
  std::unique_ptr<Task> task_;
  std::shared_ptr<RunStore> store_;
  DistContext* dist_ = nullptr;
  std::unique_ptr<StepSync> sync_;
  bool parallel() const;  // dist_ with more than one rank
  bool writer() const;    // this process writes the run directory (store_ set, rank 0)
  RunSummary summary_;
  int64_t step_ = 0;
  bool already_finished_ = false;  // resume() of a finished run: run() writes nothing
  RunSummary finished_summary_;
};

// Divergence rule (docs/RELIABILITY.md): a run fails with reason "diverged: ..." when the
// mean training loss of kDivergeIntervals consecutive logged intervals is above
// kDivergeFactor times the loss of the untrained model (its first step's loss, about the
// uniform level log V, which is above the unigram level).
constexpr double kDivergeFactor = 2.0;
constexpr int kDivergeIntervals = 3;

// Seed torch's CPU generator (and CUDA where available) and set intra-op threads.
void seed_everything(uint64_t seed);
void set_threads(int n);  // 0 = hardware concurrency

// Load just the model weights of a run's checkpoint into a freshly built task
// (for eval/analyses). `which`: "best", "last" or a step number.
// The checkpoint is checked against the model built from the run's config.json first: a
// checkpoint of another architecture, a corrupted or truncated one gives a UserError naming
// the checkpoint (and the mismatching parameter), never raw LibTorch text.
// `dataset`, when given, replaces the config's dataset section (the task still reads the run's
// saved vocabulary and encodes that other data with it: comparisons on one run's data).
std::unique_ptr<Task> load_run_task(const std::string& run_dir, const std::string& which = "best",
                                    const json* dataset = nullptr);
std::string checkpoint_path(const std::string& run_dir, const std::string& which);
// The checkpoint half of load_run_task: checks checkpoint `which` of `run_dir` against `task`'s
// model and loads its weights (UserError naming the checkpoint when it does not fit or is corrupted).
void load_run_checkpoint(Task& task, const std::string& run_dir, const std::string& which);

}  // namespace cs
