// The trainer's inside, shared by its three files and by nothing else: trainer.cpp (construction
// and run() in named steps), trainer_checkpoint.cpp (checkpoint files: save, load, the periodic
// checkpoint, a run's task from one) and trainer_resume.cpp (resume, fork).
#pragma once
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "config/common_options.h"
#include "train/graph_step.h"
#include "train/tb_events.h"
#include "train/trainer.h"

namespace cs {

using Clock = std::chrono::steady_clock;

// One scalar of the trainer's state in a checkpoint's "trainer" archive. An `optional` field is
// absent from checkpoints written before it existed and reads as `missing`.
struct TrainerStateField {
  const char* key;
  std::variant<int64_t*, double*, bool*> value;
  bool optional = false;
  double missing = 0;
};

// The CUDA-graph step's state (trainer_graph.cpp, GRAPH_NOTES.md).
struct GraphRun {
  explicit GraphRun(torch::Device d) : graph(d) {}
  StepGraph graph;
  std::unique_ptr<DeviceAdam> adam;
  int64_t updates = 0;             // Adam's step count (AdamParamState::step)
  int64_t warm = 0;                // eager steps on the fixed buffers so far (capture after kGraphWarmup)
  bool last_host_schedule = true;  // the last eager step's StepContext::host_schedule
  bool gave_up = false;            // capture failed or refused: eager steps on the side stream from now on
  // What the captured step writes and stands for: its packed results [task loss, grad norm,
  // weights non-finite, metrics...] (in the graph's memory, rewritten by every replay), the metrics'
  // names and counts, its units and FLOPs, the loss-derived metrics.
  struct Step {
    torch::Tensor stats;
    std::vector<std::pair<std::string, int64_t>> metric_names;
    int64_t units = 0;
    double flops = 0;
    bool host_schedule = false;
    std::vector<std::pair<std::string, double>> loss_metrics;
  } captured;
  int64_t replays = 0, eager = 0;
};

struct Trainer::Impl {
  // The table that save_checkpoint writes and load_checkpoint reads (so the two cannot drift):
  // `step` is the trainer's step, `elapsed` the seconds of earlier processes (written from the
  // summary, read into elapsed_before).
  std::vector<TrainerStateField> state_fields(int64_t* step, double* elapsed) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {{"step", step},
            {"acc_loss", &acc_loss},
            {"acc_gnorm", &acc_gnorm},
            {"acc_n", &acc_n},
            {"acc_units", &acc_units},
            {"acc_time", &acc_time},
            {"has_best", &has_best},
            {"best", &best},
            {"best_step", &best_step},
            {"bad_evals", &bad_evals},
            {"lr_decays", &lr_decays, true, 0},  // before training.lr_decay: none happened
            // before training.lr_decay_patience / lr_decay_metric: patience 1 on the selection metric
            {"lr_bad_evals", &lr_bad_evals, true, 0},
            {"lr_has_best", &lr_has_best, true, 0},
            {"lr_best", &lr_best, true, 0},
            {"elapsed", elapsed},
            {"units_total", &units_total},
            {"train_time_total", &train_time_total},
            {"train_flops", &flops_total, true, nan},  // before the FLOP count: unknown from here on
            {"ref_loss", &ref_loss, true, nan},        // before divergence detection: it stays off
            {"diverge_count", &diverge_count, true, 0}};
  }

  std::unique_ptr<torch::optim::Optimizer> opt;
  std::vector<torch::Tensor> params;
  torch::Device device{torch::kCPU};
  double lr = 1e-3;  // the learning rate now: opts.lr decayed lr_decays times (apply_lr_decays)
  // logging interval accumulators (saved in checkpoints so a resumed run logs identically)
  double acc_loss = 0, acc_gnorm = 0;
  int64_t acc_n = 0, acc_units = 0;
  std::map<std::string, double> acc_metrics;
  double acc_time = 0;
  // best / early stop
  bool has_best = false;
  double best = 0;
  int64_t best_step = 0, bad_evals = 0;
  // learning-rate decays so far (training.lr_decay): the current lr is training.lr x lr_decay^lr_decays
  int64_t lr_decays = 0;
  // evaluations in a row without improvement of training.lr_decay_metric since the last decay, and
  // that metric's best value (used only when it is not the selection metric: then best/has_best)
  int64_t lr_bad_evals = 0;
  bool lr_has_best = false;
  double lr_best = 0;
  // totals
  double elapsed_before = 0;  // from earlier processes (resume)
  int64_t units_total = 0;
  double train_time_total = 0;
  // cumulative training FLOPs (StepResult::flops summed over steps and ranks); NaN once unknown
  // (a task that does not count, or a resume from a checkpoint written before the count existed)
  double flops_total = 0;
  // divergence detection: the first step's loss (NaN: unknown, e.g. an older checkpoint) and
  // the number of consecutive logged intervals above kDivergeFactor times it
  double ref_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t diverge_count = 0;
  TrainingOptions opts;       // the resolved training section, read once (the constructor)
  int64_t vocab_hash = 0;     // FNV-1a of the task's vocabulary text, stored in every checkpoint
  int64_t last_pt_step = -1;  // step of this run directory's checkpoints/last.pt (-1: none known)
  // RUN_DIR/tensorboard/ (training.tensorboard; train/TENSORBOARD_NOTES.md): never fails the run
  std::unique_ptr<tb::RunTensorBoard> tb;
  // The CUDA-graph step (training.cuda_graph on a CUDA device), set up by prepare(); null: plain steps.
  std::unique_ptr<GraphRun> graph;

  // lr = opts.lr x opts.lr_decay^lr_decays, set on the optimizer with the configuration's other
  // hyper-parameters (a loaded optimizer state carries the values it was saved with; a resume or
  // fork at another lr must use the new one).
  void apply_lr_decays();
};

struct Trainer::RunContext {
  explicit RunContext(const TrainingOptions& options) : tr(options) {}
  const TrainingOptions& tr;  // the run's training section (Impl::opts: steps, log_every, eval_every, ...)
  TrainerControl* control = nullptr;
  const TrainerCallbacks* cb = nullptr;
  bool lower = true;      // lower is better for the task's primary metric
  std::string metric;     // the task's primary metric (the valid key that selects best.pt)
  std::string lr_metric;  // training.lr_decay_metric resolved (the valid key the decay watches)
  bool lr_lower = true;   // lower is better for lr_metric
  Clock::time_point t_start;
  double paused = 0;  // seconds spent paused (not counted as elapsed)
  bool early_stopped = false;
  int64_t last_checkpoint = -1;  // step of the last last.pt written by this run()
  std::string reason;            // why train_step failed
  bool diverged = false;         // log_interval found the divergence rule met (rc.reason says why)
};

}  // namespace cs
