// The trainer: construction and run() in named steps (prepare, train_step, log_interval, evaluate_valid,
// finish). Checkpoint files are trainer_checkpoint.cpp's, resume and fork trainer_resume.cpp's; trainer_impl.h
// holds what the three share.
#include "train/trainer.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <thread>

#include "cells/script_cell.h"
#include "config/common_options.h"
#include "dist/dist.h"
#include "train/checkpoint.h"
#include "train/step_sync.h"
#include "train/trainer_impl.h"
#include "train/tb_events.h"
#include "train/test_examples.h"
#include "util/cpu_cache.h"
#include "util/error.h"

namespace cs {

void seed_everything(uint64_t seed) { torch::manual_seed(seed); }

void set_threads(int n) {
  std::string note;
  n = effective_threads(n, &note);  // config/common_options.h: 0 = all, clamped to the hardware threads
  if (!note.empty()) std::fprintf(stderr, "warning: %s\n", note.c_str());
  at::set_num_threads(n);
}

namespace {
// Whether a larger value of the valid metric `key` is better (training.lr_decay_metric other than the
// task's primary metric): accuracies, BLEU, ROUGE and F1 are; losses, perplexities and BPC are not.
bool metric_higher_is_better(const std::string& key) {
  for (const char* h : {"acc", "bleu", "rouge", "f1"})
    if (key.find(h) != std::string::npos) return true;
  return false;
}

// The learning rate after `decays` evaluations without improvement (training.lr_decay).
double decayed_lr(const TrainingOptions& tr, int64_t decays) {
  return tr.lr * std::pow(tr.lr_decay, static_cast<double>(decays));
}

// Set the optimizer's hyper-parameters from the configuration, with the learning rate decayed
// `decays` times (Impl::apply_lr_decays).
void apply_hyper_parameters(torch::optim::Optimizer& opt, const TrainingOptions& tr, int64_t decays) {
  const double lr = decayed_lr(tr, decays);
  for (auto& g : opt.param_groups()) {
    if (auto* o = dynamic_cast<torch::optim::SGDOptions*>(&g.options())) {
      o->lr(lr);
      o->weight_decay(tr.weight_decay);
      o->momentum(tr.momentum);
    } else if (auto* a = dynamic_cast<torch::optim::AdamOptions*>(&g.options())) {
      a->lr(lr);
      a->weight_decay(tr.weight_decay);
    }
  }
}

// What to try after a NaN/Inf or a divergence at step > 0. Under Adam, training.clip does not bound
// the update: clip_grad_norm_ rescales the whole gradient, and Adam's step lr * m / sqrt(v) does not
// depend on the gradient's scale (every weight moves by about lr per step), so naming clipping as
// the remedy of a run that already clips is wrong (#51: MC-RNN over a GRU, lr 3e-3, clip 5).
std::string lr_clip_hint(Optimizer opt, double clip) {
  if (opt == Optimizer::Adam)
    return std::string(". Try a lower training.lr") +
           (clip > 0 ? " (training.clip is set, but clipping rescales the gradient, and Adam's step does not "
                       "depend on the gradient's scale: it bounds neither Adam's update nor the activations)"
                     : "") +
           ".";
  return clip > 0 ? ". Try a lower training.lr or a lower training.clip."
                  : ". Try a lower training.lr or gradient clipping (training.clip).";
}

// For a run of a TorchScript cell, what its NaN or Inf may also come from: the researcher's own
// forward (the learning rate was the only suspect named, #52). "" for the built-in cells.
std::string script_cell_hint(const json& cfg) {
  const json* m = cfg.contains("model") && cfg["model"].is_object() ? &cfg["model"] : nullptr;
  if (!m || !m->contains("cell") || (*m)["cell"] != "script") return "";
  const std::string path = m->contains("script") && (*m)["script"].is_string() ? (*m)["script"].get<std::string>() : "";
  return " The cell is a script of your own (model.script '" + path +
         "'): its forward can produce the NaN or Inf itself (a log or division of 0, an exp or power that "
         "overflows, a sqrt of a negative number); check it on the inputs of this step.";
}
}  // namespace

void Trainer::Impl::apply_lr_decays() {
  lr = decayed_lr(opts, lr_decays);
  apply_hyper_parameters(*opt, opts, lr_decays);
}

// A rank other than 0 whose collective failed (DistError) records the end of the run when
// rank 0 could not: rank 0 holds the run directory's lock as long as it lives, so a free
// lock while summary.json still says "running" means rank 0 ended without writing it
// (kill -9, a crash, the machine lost). Rank 0 alive and failing on its own writes "failed"
// itself and then exits, freeing the lock, so the survivor retries for a few seconds and
// then finds a status other than "running" and leaves it. The flock works across machines
// where the shared filesystem supports it (NFSv4: yes).
static void dist_survivor_records_failure(const RunStore& shared, int rank, int world, const std::string& what) {
  try {
    RunStore store(shared.dir());
    if (!file_exists(store.path("summary.json"))) return;  // rank 0 died before it created the run
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      try {
        store.lock_for_writing();
        break;
      } catch (const UserError&) {
        if (std::chrono::steady_clock::now() > deadline) return;  // rank 0 is alive: it writes the summary
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    RunSummary s = store.read_summary();
    if (s.status != "running") return;
    s.status = "failed";
    s.reason = "rank 0 ended without recording the end of the run (killed or crashed); rank " + std::to_string(rank) +
               " of " + std::to_string(world) + " reported: " + what;
    s.updated = now_iso();
    store.write_summary(s);
    store.log("failed: " + s.reason);
  } catch (const std::exception&) {
    // best effort: the run directory may be gone or read-only
  }
}

bool Trainer::parallel() const { return dist_ && dist_->world > 1; }
bool Trainer::writer() const { return store_ && (!dist_ || dist_->rank == 0); }

Trainer::Trainer(json cfg, std::unique_ptr<Task> task, std::shared_ptr<RunStore> store, DistContext* dist)
    : impl_(std::make_unique<Impl>()),
      cfg_(std::move(cfg)),
      task_(std::move(task)),
      store_(std::move(store)),
      dist_(dist),
      sync_(make_step_sync(dist)) {
  // The resolved training section (every default filled in; config/common_options.h holds them),
  // read here once: resume() and run() take it from impl_->opts.
  impl_->opts = read_training_options(cfg_.at("training"));
  const TrainingOptions& tr = impl_->opts;
  const std::string dev = tr.device;
  try {
    impl_->device = torch::Device(dev);
  } catch (const std::exception&) {
    throw UserError("training.device: '" + dev + "' is not a device (expected cpu, cuda or cuda:N)");
  }
  if (impl_->device.is_cuda() && !torch::cuda::is_available())
    throw UserError("training.device: '" + dev + "' requested but this LibTorch has no CUDA device available");
  if (impl_->device.is_cuda()) cuda_float32_exact();  // float32 as on the CPU: no TF32 (graph_step.h)
  // Data parallel on GPUs: "cuda" without an index means one GPU per local rank.
  if (parallel() && impl_->device.is_cuda() && !impl_->device.has_index())
    impl_->device = torch::Device(
        torch::kCUDA, static_cast<c10::DeviceIndex>(dist_->rank % std::max<int64_t>(1, torch::cuda::device_count())));
  if (parallel()) task_->set_shard(dist_->rank, dist_->world);  // before to(): the shard is built on the CPU
  task_->to(impl_->device);
  impl_->params = task_->model()->parameters();
  {
    const std::string vt = task_->vocab_text();
    impl_->vocab_hash = static_cast<int64_t>(fnv1a64(vt.data(), vt.size()));
  }
  impl_->lr = tr.lr;
  const double wd = tr.weight_decay;
  switch (tr.optimizer) {
    case Optimizer::Sgd:
    case Optimizer::Asgd:  // asgd: the averaging is the task's (word_lm)
      impl_->opt = std::make_unique<torch::optim::SGD>(
          impl_->params, torch::optim::SGDOptions(impl_->lr).momentum(tr.momentum).weight_decay(wd));
      break;
    case Optimizer::Adam:
      impl_->opt =
          std::make_unique<torch::optim::Adam>(impl_->params, torch::optim::AdamOptions(impl_->lr).weight_decay(wd));
      break;
  }
  summary_.task = task_->name();
  summary_.cell = cfg_.at("model").at("cell").get<std::string>();
  summary_.primary_metric = task_->primary_metric();
  summary_.lower_is_better = task_->lower_is_better();
  summary_.parameters = task_->parameter_count();
  summary_.unit = task_->unit_name();
  summary_.started = now_iso();
  summary_.processes = parallel() ? dist_->world : 1;
}

Trainer::~Trainer() = default;

double Trainer::optimizer_lr() const {
  auto& groups = impl_->opt->param_groups();
  return groups.empty() ? 0.0 : groups.front().options().get_lr();
}

// ------------------------------------------------------------------ run() in named steps

double Trainer::elapsed(const RunContext& rc) const {
  return impl_->elapsed_before + std::chrono::duration<double>(Clock::now() - rc.t_start).count() - rc.paused;
}

void Trainer::log(RunContext& rc, const std::string& s) {
  if (writer()) store_->log(s);
  if (rc.cb->on_log && sync_->root()) rc.cb->on_log(s);
}

void Trainer::emit(RunContext& rc, const MetricsRecord& record) {
  MetricsRecord r = record;
  r.wall_time = tb::unix_now();  // the same instant in metrics.jsonl and the TensorBoard point
  history.push_back(r);
  if (writer()) store_->append_metrics(r.to_json());
  if (impl_->tb) {
    impl_->tb->add(r);
    report_tensorboard(rc);
  }
  if (rc.cb->on_metrics && sync_->root()) rc.cb->on_metrics(r);
}

void Trainer::write_summary(RunContext& rc) {
  auto& I = *impl_;
  summary_.step = step_;
  summary_.epoch = task_->epoch();
  summary_.elapsed = elapsed(rc);
  summary_.has_best = I.has_best;
  summary_.best_valid = I.best;
  summary_.best_step = I.best_step;
  summary_.train_flops = I.flops_total;
  summary_.mean_throughput = I.train_time_total > 0 ? static_cast<double>(I.units_total) / I.train_time_total : 0;
  summary_.updated = now_iso();
  if (writer()) store_->write_summary(summary_);
}

void Trainer::prepare(RunContext& rc) {
  const TrainingOptions& tr = rc.tr;
  rc.lower = task_->lower_is_better();
  rc.metric = task_->primary_metric();
  rc.lr_metric = tr.lr_decay_metric.rfind("valid.", 0) == 0 ? tr.lr_decay_metric.substr(6) : tr.lr_decay_metric;
  if (rc.lr_metric.empty()) rc.lr_metric = rc.metric;
  rc.lr_lower = rc.lr_metric == rc.metric ? rc.lower : !metric_higher_is_better(rc.lr_metric);
  rc.t_start = Clock::now();
  summary_.status = "running";
  summary_.reason.clear();
  write_summary(rc);
  log(rc, "training " + summary_.cell + " on " + task_->name() + " from step " + std::to_string(step_) + " to " +
              std::to_string(rc.tr.steps) + " (" + std::to_string(summary_.parameters) + " parameters)");
  sync_->begin(impl_->params, static_cast<uint64_t>(tr.seed), step_);
  impl_->tb.reset();
  if (writer() && tr.tensorboard) {
    // Trims the events files to the step training goes on from (as resume() trimmed
    // metrics.jsonl) and writes what they lack; an error is reported once and only stops it.
    impl_->tb = std::make_unique<tb::RunTensorBoard>();
    try {
      std::string problem;
      impl_->tb->start(store_->dir(), cfg_, step_, read_metrics(store_->path("metrics.jsonl"), &problem));
    } catch (const std::exception& e) {
      impl_->tb.reset();
      log(rc, std::string("tensorboard: ") + e.what() + "; no TensorBoard events are written for this run");
    }
    report_tensorboard(rc);
  }
  setup_graph(rc);
}

void Trainer::report_tensorboard(RunContext& rc) {
  if (!impl_->tb) return;
  for (const std::string& n : impl_->tb->take_notes()) {
    std::fprintf(stderr, "warning: tensorboard: %s\n", n.c_str());
    log(rc, "tensorboard: " + n);
  }
  const std::string e = impl_->tb->take_error();
  if (e.empty()) return;
  const std::string msg =
      "tensorboard: " + e + "; no more TensorBoard events are written for this run (training goes on)";
  std::fprintf(stderr, "warning: %s\n", msg.c_str());
  log(rc, msg);
}

bool Trainer::train_step(RunContext& rc) {
  if (impl_->graph) return train_step_graphed(rc);  // trainer_graph.cpp
  auto& I = *impl_;
  const auto t0 = Clock::now();
  task_->set_train_step(step_);  // StepContext::step of this update (e.g. the MZU's lambda warm-up)
  StepResult sr = task_->train_step();
  I.opt->zero_grad();
  sr.loss.backward();
  StepStats st;
  st.loss = sr.task_loss;
  st.nonfinite = !std::isfinite(sr.task_loss);
  st.stop = rc.control && rc.control->stop.load();
  st.stop_signal = st.stop ? rc.control->stop_signal.load() : 0;
  st.units = sr.units;
  st.compute_s = std::chrono::duration<double>(Clock::now() - t0).count();
  st.metrics = std::move(sr.metrics);
  sync_->reduce_gradients(I.params);
  sync_->reduce_step(st);
  const double inf = std::numeric_limits<double>::infinity();
  const double gnorm = torch::nn::utils::clip_grad_norm_(I.params, I.opts.clip > 0 ? I.opts.clip : inf);
  if (st.nonfinite || !std::isfinite(gnorm)) {
    fail_nonfinite_loss(rc, st.loss, gnorm);
    return false;
  }
  if (std::isnan(I.ref_loss) && step_ == 0) I.ref_loss = st.loss;  // the untrained model's loss
  I.opt->step();
  // Never keep (and so never checkpoint) non-finite weights: a finite loss and gradient can
  // still give an update that overflows (e.g. a huge lr with weight decay).
  {
    torch::NoGradGuard ng;
    for (auto& p : I.params) {
      if (!torch::isfinite(p).all().item<bool>()) {
        fail_nonfinite_weights(rc, torch::isnan(p).any().item<bool>());
        return false;
      }
    }
  }
  account_step(rc, st, gnorm, std::chrono::duration<double>(Clock::now() - t0).count(), sr.flops);
  return true;
}

void Trainer::fail_nonfinite_loss(RunContext& rc, double loss, double gnorm) {
  auto& I = *impl_;
  // The weights of step_ gave a non-finite loss: a checkpoint of them is not a good one.
  const int64_t good = discard_unproven_checkpoint();
  rc.reason = std::string("the loss became ") + (std::isnan(loss) || std::isnan(gnorm) ? "NaN" : "Inf") + " at step " +
              std::to_string(step_ + 1) + "; the last good checkpoint is kept" +
              (good >= 0 ? " (checkpoints/last.pt, step " + std::to_string(good) + ")"
                         : std::string(" (none was written yet)")) +
              (step_ == 0 ? std::string(". No update had been made yet, so neither training.lr nor training.clip "
                                        "is the cause: the untrained model itself overflows (its configuration or "
                                        "initialisation; e.g. a smaller model, fewer zones or another option of "
                                        "the cell).")
                          : lr_clip_hint(I.opts.optimizer, I.opts.clip)) +
              script_cell_hint(cfg_);
}

void Trainer::fail_nonfinite_weights(RunContext& rc, bool nan) {
  auto& I = *impl_;
  const std::string last = store_ ? join_path(store_->checkpoint_dir(), "last.pt") : "";
  rc.reason =
      std::string("the weights became ") + (nan ? "NaN" : "Inf") + " in the update of step " +
      std::to_string(step_ + 1) + "; the last good checkpoint is kept" +
      (store_ && file_exists(last)
           ? " (checkpoints/last.pt" +
                 (rc.last_checkpoint >= 0 ? ", step " + std::to_string(rc.last_checkpoint) : std::string()) + ")"
           : " (none was written yet)") +
      lr_clip_hint(I.opts.optimizer, I.opts.clip);
}

void Trainer::account_step(RunContext& rc, const StepStats& st, double gnorm, double dt, double flops) {
  auto& I = *impl_;
  ++step_;
  I.acc_loss += st.loss;
  I.acc_gnorm += gnorm;
  I.acc_n += 1;
  I.acc_units += st.units;
  I.acc_time += dt;
  I.units_total += st.units;
  I.train_time_total += dt;
  I.flops_total +=
      flops > 0 ? flops * static_cast<double>(parallel() ? dist_->world : 1) : std::numeric_limits<double>::quiet_NaN();
  for (auto& [k, v] : st.metrics) I.acc_metrics[k] += v;
  if (rc.cb->on_progress) {
    Progress p;
    p.step = step_;
    p.total_steps = rc.tr.steps;
    p.elapsed = elapsed(rc);
    p.throughput = dt > 0 ? st.units / dt : 0;
    p.eta = I.train_time_total / std::max<int64_t>(1, step_) * static_cast<double>(rc.tr.steps - step_);
    p.unit = task_->unit_name();
    p.last_loss = st.loss;
    rc.cb->on_progress(p);
  }
}

void Trainer::log_interval(RunContext& rc) {
  auto& I = *impl_;
  MetricsRecord r;
  r.step = step_;
  r.epoch = task_->epoch();
  r.elapsed = elapsed(rc);
  r.train_flops = I.flops_total;
  const double n = static_cast<double>(I.acc_n);
  r.values["loss"] = I.acc_loss / n;
  for (auto& [k, v] : I.acc_metrics) r.values[k] = v / n;
  r.values["grad_norm"] = I.acc_gnorm / n;
  r.values["lr"] = I.lr;
  r.values["throughput"] = I.acc_time > 0 ? static_cast<double>(I.acc_units) / I.acc_time : 0;
  sync_->interval_values(r.values, I.acc_n);
  emit(rc, r);
  // Divergence (docs/RELIABILITY.md): the interval's mean loss far above the untrained model's.
  const double L = r.values["loss"];
  if (I.ref_loss > 0 && std::isfinite(I.ref_loss) && L > kDivergeFactor * I.ref_loss) ++I.diverge_count;
  else I.diverge_count = 0;
  if (I.diverge_count >= kDivergeIntervals) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "diverged: the training loss stayed above %.0fx the untrained model's (%.3g nats) for %d logged "
                  "intervals (%.4g nats at step %lld); the checkpoints are kept as they are",
                  kDivergeFactor, I.ref_loss, kDivergeIntervals, L, static_cast<long long>(step_));
    rc.reason = buf + lr_clip_hint(I.opts.optimizer, I.opts.clip);
    rc.diverged = true;
  }
  I.acc_loss = I.acc_gnorm = I.acc_time = 0;
  I.acc_n = I.acc_units = 0;
  I.acc_metrics.clear();
}

EvalResult Trainer::evaluate(RunContext& rc, const std::string& split) {
  auto er = task_->evaluate(split);
  sync_->agree_eval(er.metrics, impl_->params);
  MetricsRecord r;
  r.step = step_;
  r.epoch = task_->epoch();
  r.eval = true;
  r.split = split;
  r.elapsed = elapsed(rc);
  r.train_flops = impl_->flops_total;
  r.values = er.metrics;
  r.labels = er.labels;
  emit(rc, r);
  // the split's size, so that a table can refuse a cell evaluated on too few examples
  if (split == "valid") summary_.valid_units = er.units;
  if (split == "test") summary_.test_units = er.units;
  return er;
}

void Trainer::evaluate_valid(RunContext& rc) {
  auto& I = *impl_;
  auto er = evaluate(rc, "valid");
  const double v = er.metrics.at(rc.metric);
  const bool better = !I.has_best || (rc.lower ? v < I.best : v > I.best);
  // training.patience_from: an evaluation before it is never one "without improvement" (for
  // patience nor for lr_decay); the best value and best.pt still follow it.
  const bool counts = step_ >= I.opts.patience_from;
  if (better) {
    I.has_best = true;
    I.best = v;
    I.best_step = step_;
    I.bad_evals = 0;
  } else if (counts) {
    ++I.bad_evals;
  }
  // training.lr_decay: a smaller step after lr_decay_patience evaluations in a row without a better
  // lr_decay_metric, so that a run that has stopped improving at its lr settles into its minimum
  // before patience ends it (RNNSearch's schedule; train/LR_DECAY_NOTES.md).
  if (I.opts.lr_decay < 1.0) {
    bool improved = better;
    if (rc.lr_metric != rc.metric) {
      auto it = er.metrics.find(rc.lr_metric);
      if (it == er.metrics.end()) {
        std::string keys;
        for (auto& [k, val] : er.metrics) keys += (keys.empty() ? "" : ", ") + k;
        throw UserError("training.lr_decay_metric: the valid evaluation of task " + task_->name() + " has no metric '" +
                        rc.lr_metric + "' (it has: " + keys + ")");
      }
      const double lv = it->second;
      improved = !I.lr_has_best || (rc.lr_lower ? lv < I.lr_best : lv > I.lr_best);
      if (improved) {
        I.lr_has_best = true;
        I.lr_best = lv;
      }
    }
    if (improved) {
      I.lr_bad_evals = 0;
    } else if (counts && ++I.lr_bad_evals >= I.opts.lr_decay_patience) {
      I.lr_bad_evals = 0;
      ++I.lr_decays;
      I.apply_lr_decays();
      char buf[160];
      std::snprintf(buf, sizeof buf, "lr decayed to %.6g at step %lld (valid %s not improved in %lld evaluation%s)",
                    I.lr, static_cast<long long>(step_), rc.lr_metric.c_str(),
                    static_cast<long long>(I.opts.lr_decay_patience), I.opts.lr_decay_patience == 1 ? "" : "s");
      log(rc, buf);
    }
  }
  // best.pt written after last.pt would see the same weights: save it directly
  if (store_ && better) save_global(join_path(store_->checkpoint_dir(), "best.pt"));
  if (rc.tr.patience > 0 && I.bad_evals >= rc.tr.patience) rc.early_stopped = true;
  // test over training time (CRU Fig. 4): logged only, never used for selection
  if (rc.tr.track_test && task_->has_split("test")) evaluate(rc, "test");
}

TrainOutcome Trainer::finish(RunContext& rc, Ending how) {
  if (how == Ending::stopped) {
    if (rc.last_checkpoint != step_) checkpoint(rc);  // once, even when the stop follows a checkpoint
    summary_.status = "stopped";
    const int sig = rc.control ? rc.control->stop_signal.load() : 0;
    summary_.reason = sig == SIGTERM ? "stopped by SIGTERM (preemption or a time limit) at step " +
                                           std::to_string(step_) + "; resuming continues from its checkpoint"
                                     : "stopped by the user at step " + std::to_string(step_);
  } else if (how == Ending::failed) {
    summary_.status = "failed";
    summary_.reason = rc.reason;
  } else {
    // Test metric of the best checkpoint: rank 0 reads best.pt, every rank evaluates
    // those weights (the evaluation's collectives are matched on every rank).
    if (rc.tr.eval_test && task_->has_split("test")) {
      const std::string best = store_ ? join_path(store_->checkpoint_dir(), "best.pt") : "";
      if (writer() && file_exists(best)) {
        torch::serialize::InputArchive ar, m;  // only the model weights of best.pt
        read_checkpoint_file(best, ar, impl_->device);
        check_model_matches(*task_->model(), ar, best);
        ar.read("model", m);
        task_->model()->load(m);
      }
      sync_->share_parameters(impl_->params);
      auto er = evaluate(rc, "test");
      summary_.has_test = true;
      summary_.test_metric = er.metrics.at(rc.metric);
      write_test_examples_of_best(rc, er);
    }
    summary_.status = "finished";
    summary_.reason = rc.early_stopped ? "early stop (patience)" : "";
  }
  write_summary(rc);
  log(rc, how == Ending::finished ? "finished at step " + std::to_string(step_) : summary_.reason);
  return {summary_, store_ ? store_->dir() : ""};
}

// RUN_DIR/test_examples.json (train/test_examples.h): the best checkpoint's test split scored per
// example, for the paired bootstrap of sweep tables. One process writes it (a data-parallel run's
// rank 0 scores the whole split alone). A failure costs the file, not the run: it is logged.
void Trainer::write_test_examples_of_best(RunContext& rc, const EvalResult& test) {
  if (!writer() || !task_->scores_test_examples()) return;
  const auto& test_metrics = test.metrics;
  try {
    // seq2seq's test evaluation scored every pair (EvalResult::sequences): its decodes, not a second
    // decode of the split. One that decoded only some (training.eval_decode) cannot give the file.
    if (!test.sequences && !test.partial.empty()) {
      log(rc, std::string("note: ") + kTestExamplesFile + " not written: the test evaluation gives " + test.partial +
                  ", not every example's");
      return;
    }
    const auto e = test_examples_of(test.sequences ? *test.sequences : task_->sequence_scores("test"));
    if (!e) return;
    // the per-example sums re-add to about the test metric (char_lm's lines leave out the newline
    // predictions, as MZU Fig. 2 scores them): a larger gap is worth a line in the log. seq2seq's file
    // holds BLEU (not its primary metric, perplexity) and must give the evaluation's BLEU exactly, or
    // the file, which would test other pairs or decodes than the table's figure, is not written.
    const double again = e->metric_value();
    const auto it = test_metrics.find(e->metric);
    const double evaluated = it != test_metrics.end() ? it->second : summary_.test_metric;
    if (e->metric == "bleu" && !same_metric(again, evaluated)) {
      log(rc, std::string("note: ") + kTestExamplesFile + " not written: the decodes of all " +
                  std::to_string(e->count()) + " test pairs give BLEU " + std::to_string(again) + ", the evaluation " +
                  std::to_string(evaluated));
      return;
    }
    write_test_examples(store_->dir(), *e);
    if (std::abs(again - evaluated) > 0.05 * std::abs(evaluated))
      log(rc, "note: " + std::string(kTestExamplesFile) + "'s examples give test " + e->metric + " " +
                  std::to_string(again) + ", the evaluation " + std::to_string(evaluated));
  } catch (const std::exception& ex) {
    log(rc, std::string("warning: ") + kTestExamplesFile + " not written: " + ex.what());
  }
}

TrainOutcome Trainer::run(TrainerControl* control, const TrainerCallbacks& cb) {
  RunContext rc(impl_->opts);
  rc.control = control;
  rc.cb = &cb;
  if (already_finished_) {  // a finished run resumed: nothing to do, nothing written
    summary_ = finished_summary_;
    if (cb.on_log && sync_->root()) cb.on_log("already finished at step " + std::to_string(step_) + ": nothing to do");
    return {summary_, store_ ? store_->dir() : ""};
  }
  // The CPU block cache's free blocks (util/cpu_cache.h) go back to the system when the run ends
  // however it ends, so a workbench that trained a large model does not keep its memory.
  struct ReleaseCache {
    ~ReleaseCache() { cpu_cache_release(); }
  } release_cache;
  try {
    prepare(rc);
    Ending how = Ending::finished;
    while (step_ < rc.tr.steps) {
      if (sync_->should_stop(control, &rc.paused)) {
        how = Ending::stopped;
        break;
      }
      if (!train_step(rc)) {
        how = Ending::failed;
        break;
      }
      if (step_ % rc.tr.log_every == 0 || step_ == rc.tr.steps) log_interval(rc);
      if (rc.diverged) {
        how = Ending::failed;
        break;
      }
      const bool do_eval = (rc.tr.eval_every > 0 && step_ % rc.tr.eval_every == 0) || step_ == rc.tr.steps;
      if (do_eval && task_->has_split("valid")) evaluate_valid(rc);
      if ((rc.tr.checkpoint_every > 0 ? step_ % rc.tr.checkpoint_every == 0 : do_eval) || step_ == rc.tr.steps ||
          rc.early_stopped)
        checkpoint(rc);
      if (do_eval || step_ % rc.tr.log_every == 0) write_summary(rc);
      if (rc.early_stopped) {
        log(rc, "early stop at step " + std::to_string(step_) + ": no improvement of valid " + rc.metric + " in " +
                    std::to_string(rc.tr.patience) + " evaluations (best " + std::to_string(impl_->best) + " at step " +
                    std::to_string(impl_->best_step) + ")");
        break;
      }
    }
    return finish(rc, how);
  } catch (const std::exception& e) {
    summary_.status = "failed";
    summary_.reason = e.what();
    try {
      write_summary(rc);
    } catch (...) {
    }
    if (store_ && !writer() && parallel() && dynamic_cast<const DistError*>(&e))
      dist_survivor_records_failure(*store_, dist_->rank, dist_->world, e.what());
    log(rc, std::string("failed: ") + e.what());
    throw;
  }
}

}  // namespace cs
