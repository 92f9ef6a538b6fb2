#include "train/trainer.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdio>
#include <limits>
#include <variant>
#include <thread>

#include "cells/script_cell.h"
#include "config/common_options.h"
#include "dist/dist.h"
#include "train/checkpoint.h"
#include "train/run_task.h"
#include "train/step_sync.h"
#include "train/tb_events.h"
#include "util/cpu_cache.h"
#include "util/fsync.h"
#include "util/torch_compat.h"
#include "util/error.h"

namespace cs {

using Clock = std::chrono::steady_clock;

void seed_everything(uint64_t seed) { torch::manual_seed(seed); }

void set_threads(int n) {
  std::string note;
  n = effective_threads(n, &note);  // config/common_options.h: 0 = all, clamped to the hardware threads
  if (!note.empty()) std::fprintf(stderr, "warning: %s\n", note.c_str());
  at::set_num_threads(n);
}

namespace {
// One scalar of the trainer's state in a checkpoint's "trainer" archive. An `optional` field is
// absent from checkpoints written before it existed and reads as `missing`.
struct StateField {
  const char* key;
  std::variant<int64_t*, double*, bool*> value;
  bool optional = false;
  double missing = 0;
};
}  // namespace

struct Trainer::Impl {
  // The table that save_checkpoint writes and load_checkpoint reads (so the two cannot drift):
  // `step` is the trainer's step, `elapsed` the seconds of earlier processes (written from the
  // summary, read into elapsed_before).
  std::vector<StateField> state_fields(int64_t* step, double* elapsed) {
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
  double lr = 1e-3, clip = 0;
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
  TrainingOptions opts;
  int64_t vocab_hash = 0;     // FNV-1a of the task's vocabulary text, stored in every checkpoint
  int64_t last_pt_step = -1;  // step of this run directory's checkpoints/last.pt (-1: none known)
  // RUN_DIR/tensorboard/ (training.tensorboard; train/TENSORBOARD_NOTES.md): never fails the run
  std::unique_ptr<tb::RunTensorBoard> tb;
};

namespace {
const char* kForkHint =
    "A run's architecture (model, task, dataset, training.optimizer, training.batch) cannot change on resume; "
    "to train on from a checkpoint with other training options make a new run with "
    "`cellscope-cli train --fork RUN_DIR[@STEP] --set training.KEY=VALUE`, for another architecture start a new run";

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

// Set the optimizer's hyper-parameters from the configuration (a loaded optimizer state carries
// the values it was saved with; a resume or fork at another lr must use the new one), with the
// learning rate decayed `decays` times.
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
}  // namespace

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
  // The resolved training section (every default filled in; config/common_options.h holds them).
  const TrainingOptions tr = read_training_options(cfg_.at("training"));
  const std::string dev = tr.device;
  try {
    impl_->device = torch::Device(dev);
  } catch (const std::exception&) {
    throw UserError("training.device: '" + dev + "' is not a device (expected cpu, cuda or cuda:N)");
  }
  if (impl_->device.is_cuda() && !torch::cuda::is_available())
    throw UserError("training.device: '" + dev + "' requested but this LibTorch has no CUDA device available");
  // Data parallel on GPUs: "cuda" without an index means one GPU per local rank.
  if (parallel() && impl_->device.is_cuda() && !impl_->device.has_index())
    impl_->device = torch::Device(
        torch::kCUDA, static_cast<c10::DeviceIndex>(dist_->rank % std::max<int64_t>(1, torch::cuda::device_count())));
  if (parallel()) task_->set_shard(dist_->rank, dist_->world);  // before to(): the shard is built on the CPU
  task_->to(impl_->device);
  impl_->params = task_->model()->parameters();
  impl_->opts = tr;
  {
    const std::string vt = task_->vocab_text();
    impl_->vocab_hash = static_cast<int64_t>(fnv1a64(vt.data(), vt.size()));
  }
  impl_->lr = tr.lr;
  impl_->clip = tr.clip;
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

void Trainer::save_checkpoint(const std::string& path) {
  torch::serialize::OutputArchive ar;
  torch::serialize::OutputArchive m, o, t, s;
  task_->model()->save(m);
  impl_->opt->save(o);
  task_->save_state(t);
  auto I = [](int64_t v) { return torch::tensor(v, torch::kInt64); };
  auto D = [](double v) { return torch::tensor(v, torch::kFloat64); };
  for (const StateField& f : impl_->state_fields(&step_, &summary_.elapsed)) {
    if (auto* i = std::get_if<int64_t*>(&f.value)) s.write(f.key, I(**i));
    else if (auto* d = std::get_if<double*>(&f.value)) s.write(f.key, D(**d));
    else s.write(f.key, I(*std::get<bool*>(f.value) ? 1 : 0));
  }
  // Checked against the run's vocabulary on load, not restored.
  s.write("vocab_hash", I(impl_->vocab_hash));
  json am = impl_->acc_metrics;
  std::string ams = am.dump();
  s.write("acc_metrics", torch::from_blob(ams.data(), {static_cast<int64_t>(ams.size())}, torch::kUInt8).clone());
  s.write("rng", at::detail::getDefaultCPUGenerator().get_state());
  ar.write("model", m);
  ar.write("optimizer", o);
  ar.write("task", t);
  ar.write("trainer", s);
  write_checkpoint_file(ar, path);  // checksum header, temp file, fsync, rename, fsync of the directory
}

namespace {
// The optimizer state of a checkpoint, mapped onto this process's parameters. LibTorch's Optimizer::save
// writes "state/<key>" (one archive per parameter with a state) and "param_groups/param_groups/<i>" holding
// "params/<j>" = the key of group i's j-th parameter, where a key is that parameter's TensorImpl address in
// the writing process. Optimizer::load maps the keys back, but the text of a key differs by version: 1.13
// writes "0x55d0..." (c10::guts::to_string) and 2.x writes and parses decimal (std::stoull), so a 2.x build
// read every key of a 1.13 checkpoint as 0 and put one parameter's moments on another (seen: a shape error at
// the next step; docs/PLATFORMS.md). This mapping goes through the saved key texts themselves, which is the
// same on every version, and checks each moment's shape against its parameter (a UserError naming it, never a
// training on misplaced moments).
std::string shape_text(c10::IntArrayRef s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}
std::vector<torch::Tensor> moments_of(const torch::optim::AdamParamState& a) {
  return {a.exp_avg(), a.exp_avg_sq(), a.max_exp_avg_sq()};
}
std::vector<torch::Tensor> moments_of(const torch::optim::SGDParamState& m) { return {m.momentum_buffer()}; }

template <class ParamState>
void restore_param_state(torch::optim::Optimizer& opt, torch::serialize::InputArchive& archive,
                         const std::string& path) {
  auto refuse = [&](const std::string& why) {
    throw UserError("checkpoint '" + path + "': its optimizer state does not fit the model (" + why +
                    "). Its weights are intact: eval, analyze, generate and export read them");
  };
  torch::serialize::InputArchive states, groups;
  archive.read("state", states);
  archive.read("param_groups", groups);
  auto& state = opt.state();
  state.clear();
  int64_t index = 0;
  for (size_t i = 0; i < opt.param_groups().size(); ++i) {
    torch::serialize::InputArchive group;
    groups.read("param_groups/" + std::to_string(i), group);
    torch::Tensor size;
    group.read("params/size", size);
    const auto& params = opt.param_groups()[i].params();
    if (size.item<int64_t>() != static_cast<int64_t>(params.size()))
      refuse("parameter group " + std::to_string(i) + " has " + std::to_string(params.size()) +
             " parameters, the saved one " + std::to_string(size.item<int64_t>()));
    for (size_t j = 0; j < params.size(); ++j, ++index) {
      c10::IValue key;
      group.read("params/" + std::to_string(j), key);
      torch::serialize::InputArchive saved;
      if (!states.try_read(key.toStringRef(), saved)) continue;  // no step had touched it: Adam starts it afresh
      auto restored = std::make_unique<ParamState>();
      restored->serialize(saved);
      for (const auto& t : moments_of(*restored))
        if (t.defined() && t.sizes() != params[j].sizes())
          refuse("parameter " + std::to_string(index) + " is " + shape_text(params[j].sizes()) + ", its saved moment " +
                 shape_text(t.sizes()));
      state[torch_compat::optimizer_state_key(state, params[j])] = std::move(restored);
    }
  }
}

void restore_optimizer_state(torch::optim::Optimizer& opt, torch::serialize::InputArchive& archive,
                             const std::string& path) {
  if (dynamic_cast<torch::optim::Adam*>(&opt)) restore_param_state<torch::optim::AdamParamState>(opt, archive, path);
  else if (dynamic_cast<torch::optim::SGD*>(&opt)) restore_param_state<torch::optim::SGDParamState>(opt, archive, path);
}
}  // namespace

void Trainer::load_checkpoint(const std::string& path) {
  torch::serialize::InputArchive ar;
  read_checkpoint_file(path, ar, impl_->device);              // checksum verified
  check_model_matches(*task_->model(), ar, path, kForkHint);  // before Module::load replaces any tensor
  {
    torch::serialize::InputArchive st;
    torch::Tensor vh;
    if (ar.try_read("trainer", st) && st.try_read("vocab_hash", vh) && vh.item<int64_t>() != impl_->vocab_hash)
      throw UserError("checkpoint '" + path +
                      "' was saved with another vocabulary than the one this run loads (its vocab file or dataset "
                      "changed); it cannot be resumed with it");
  }
  try {
    torch::serialize::InputArchive m, o, t, s;
    ar.read("model", m);
    ar.read("optimizer", o);
    ar.read("task", t);
    ar.read("trainer", s);
    task_->model()->load(m);
    impl_->opt->load(o);                            // the groups' options (lr, betas, decay)
    restore_optimizer_state(*impl_->opt, o, path);  // the per-parameter state, keyed portably (above)
    // InputArchive::read into an already-defined tensor tries to resize it: use a fresh one per key.
    auto T = [&](const char* k) {
      torch::Tensor v;
      s.read(k, v);
      return v;
    };
    for (const StateField& f : impl_->state_fields(&step_, &impl_->elapsed_before)) {
      torch::Tensor v;
      const bool present = f.optional ? s.try_read(f.key, v) : (v = T(f.key), true);
      if (auto* i = std::get_if<int64_t*>(&f.value))
        **i = present ? v.item<int64_t>() : static_cast<int64_t>(f.missing);
      else if (auto* d = std::get_if<double*>(&f.value)) **d = present ? v.item<double>() : f.missing;
      else *std::get<bool*>(f.value) = present ? v.item<int64_t>() != 0 : f.missing != 0;
    }
    impl_->lr = decayed_lr(impl_->opts, impl_->lr_decays);
    apply_hyper_parameters(*impl_->opt, impl_->opts, impl_->lr_decays);
    task_->load_state(t);
    auto c = T("acc_metrics").contiguous();
    std::string ams(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
    impl_->acc_metrics = parse_json(ams, "checkpoint trainer state").get<std::map<std::string, double>>();
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(T("rng"));
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    auto nl = what.find('\n');
    if (nl != std::string::npos) what = what.substr(0, nl);
    throw UserError("checkpoint '" + path + "' is unreadable or corrupted: " + what);
  }
}

namespace {
// The step of the first checkpoint a run with these training options writes: every
// checkpoint_every steps, else at each evaluation (eval_every), else at the end; an early stop
// comes only at an evaluation, so never before it.
int64_t first_checkpoint_step(const TrainingOptions& tr) {
  const int64_t every = tr.checkpoint_every > 0 ? tr.checkpoint_every : tr.eval_every > 0 ? tr.eval_every : tr.steps;
  return std::max<int64_t>(0, std::min(every, tr.steps));
}

}  // namespace

// A run killed before its first checkpoint holds metrics lines up to the step of that checkpoint
// at most; lines after it, a summary saying "stopped" or "finished" (both end with a checkpoint),
// or metrics after step 0 in a run whose checkpoints/ directory is gone (a run is always created
// with it) show that checkpoints existed and were lost.
std::string history_without_checkpoint(const RunStore& store) {
  int64_t last_step = 0;
  for (auto& j : store.read_metrics()) last_step = std::max(last_step, j.value("step", int64_t(0)));
  if (!dir_exists(store.checkpoint_dir()) && last_step > 0)
    return "its checkpoints/ directory is gone while metrics.jsonl holds steps up to " + std::to_string(last_step);
  const TrainingOptions tr =
      read_training_options(load_and_resolve(store.read_config(), store.path("config.json")).at("training"));
  const int64_t first = first_checkpoint_step(tr);
  if (last_step > first)
    return "it has no checkpoint while metrics.jsonl holds steps up to " + std::to_string(last_step) +
           " (its first checkpoint was due at step " + std::to_string(first) + ")";
  if (file_exists(store.path("summary.json"))) {
    const RunSummary s = store.read_summary();
    if (s.step > 0 && (s.status == "stopped" || s.status == "finished"))
      return "it has no checkpoint while its summary says " + s.status + " at step " + std::to_string(s.step);
  }
  return "";
}

void Trainer::resume() {
  if (!store_) throw UserError("resume needs a run directory");
  // Every rank reads the same (rank-independent) checkpoint; only rank 0 touches the directory,
  // and only once the checkpoint has loaded and matched the model.
  const std::string dir = store_->checkpoint_dir();
  const std::string last = join_path(dir, "last.pt");
  const std::string refusal = "cannot resume '" + store_->dir() + "': ";
  const std::string nothing_changed = "; nothing in the run directory was changed";
  std::string resumed_from = "last.pt", resume_note;
  if (!file_exists(last)) {
    // last.pt lost (deleted, an interrupted copy) while step_<N>.pt remain: resume from the
    // newest of them that loads and verifies, never from step 0 (that would discard the history).
    const auto steps = store_->checkpoint_steps();
    std::string first_error, skipped;  // skipped: logged once a checkpoint loaded (a refusal writes nothing)
    bool loaded = false;
    for (auto it = steps.rbegin(); it != steps.rend() && !loaded; ++it) {
      const std::string name = "step_" + std::to_string(*it) + ".pt";
      try {
        load_checkpoint(join_path(dir, name));
        loaded = true;
        resumed_from = name;
        resume_note = skipped;
      } catch (const UserError& e) {
        if (first_error.empty()) first_error = e.what();
        skipped += "; " + name + " skipped: " + e.what();
      }
    }
    if (!loaded && !steps.empty())
      throw UserError(refusal + "checkpoints/last.pt is missing and no step_<N>.pt loads (the newest: " + first_error +
                      ")" + nothing_changed + ". " +
                      (file_exists(join_path(dir, "best.pt"))
                           ? "Fork its best checkpoint into a new run with `cellscope-cli train --fork " +
                                 store_->dir() + "@best`, or start"
                           : std::string("Start")) +
                      " a new run from its config.json");
    if (!loaded) {
      // No checkpoint at all. A run killed (or failed) before its first checkpoint starts again
      // from step 0 in its directory, exactly as a new run would (the caller seeded and built the
      // task afresh); a run whose checkpoints were lost is refused: its history is kept.
      const std::string lost = history_without_checkpoint(*store_);
      if (!lost.empty())
        throw UserError(refusal + lost + ", so it cannot go on from where it stopped" + nothing_changed +
                        ". Start a new run from its config.json (`cellscope-cli train " + store_->path("config.json") +
                        "`), or put a copy of its checkpoints back (or fork one with `cellscope-cli train --fork "
                        "COPY_DIR@STEP`)");
      if (writer()) {
        make_dirs(dir);  // a run created without it, or that lost it with no history to lose
        store_->remove_stale_temp_files();
        store_->truncate_metrics(-1);
        store_->log("no checkpoint yet: starting again from step 0");
      }
      return;
    }
  } else {
    load_checkpoint(last);
  }
  impl_->last_pt_step = step_;
  const RunSummary before = store_->read_summary();
  const bool early = before.reason.rfind("early stop", 0) == 0;
  const int64_t target = read_training_options(cfg_.at("training")).steps;
  already_finished_ = before.status == "finished" && (early || step_ >= target);
  if (already_finished_) {
    finished_summary_ = before;
    return;  // nothing to train: the run directory stays as it is
  }
  // A target below the step reached would record a run of `target` steps that trained further
  // (config.json and the log saying "from step N to target"): refused before anything is written.
  if (target < step_)
    throw UserError(refusal + "training.steps (" + std::to_string(target) + ") is below the step it has reached (" +
                    std::to_string(step_) + ")" + nothing_changed + ". Give --steps " + std::to_string(step_) +
                    " to end it there (it is then evaluated on the test split), or more to train on");
  if (writer()) store_->remove_stale_temp_files();
  if (writer()) store_->truncate_metrics(step_);
  if (writer() && resumed_from != "last.pt") {
    const std::string note = "checkpoints/last.pt is missing: resuming from checkpoints/" + resumed_from + " (step " +
                             std::to_string(step_) + "); metrics.jsonl trimmed to that step" + resume_note;
    store_->log(note);
    std::fprintf(stderr, "warning: %s\n", note.c_str());  // the CLI prints no log line before training starts
  }
  summary_.step = step_;
  summary_.has_best = impl_->has_best;
  summary_.best_valid = impl_->best;
  summary_.best_step = impl_->best_step;
  summary_.elapsed = impl_->elapsed_before;
  summary_.started = before.started;
  summary_.valid_units = before.valid_units;
  summary_.test_units = before.test_units;
}

void Trainer::fork_from(const std::string& checkpoint) {
  load_checkpoint(checkpoint);
  // The child selects its own best checkpoint: the parent's best.pt is not in its directory.
  impl_->has_best = false;
  impl_->best = 0;
  impl_->best_step = 0;
  impl_->bad_evals = 0;
  // ... and starts at its own training.lr (a fork is how a user trains on at another lr).
  impl_->lr_decays = 0;
  impl_->lr_bad_evals = 0;
  impl_->lr_has_best = false;
  impl_->lr_best = 0;
  impl_->lr = decayed_lr(impl_->opts, 0);
  apply_hyper_parameters(*impl_->opt, impl_->opts, 0);
  summary_.step = step_;
  summary_.elapsed = impl_->elapsed_before;
}

// ------------------------------------------------------------------ run() in named steps

struct Trainer::RunContext {
  TrainerControl* control = nullptr;
  const TrainerCallbacks* cb = nullptr;
  int64_t total = 0, log_every = 10, eval_every = 200, ckpt_every = 0, keep = 3, patience = 0;
  bool track_test = false, eval_test = true, lower = true;
  std::string metric;
  std::string lr_metric;  // training.lr_decay_metric resolved (the valid key the decay watches)
  bool lr_lower = true;   // lower is better for lr_metric
  Clock::time_point t_start;
  double paused = 0;  // seconds spent paused (not counted as elapsed)
  bool early_stopped = false;
  int64_t last_checkpoint = -1;  // step of the last last.pt written by this run()
  std::string reason;            // why train_step failed
  bool diverged = false;         // log_interval found the divergence rule met (rc.reason says why)
};

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
  const TrainingOptions tr = read_training_options(cfg_.at("training"));
  rc.total = tr.steps;
  rc.log_every = tr.log_every;
  rc.eval_every = tr.eval_every;
  rc.ckpt_every = tr.checkpoint_every;
  rc.keep = tr.keep_checkpoints;
  rc.patience = tr.patience;
  rc.track_test = tr.track_test;
  rc.eval_test = tr.eval_test;
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
              std::to_string(rc.total) + " (" + std::to_string(summary_.parameters) + " parameters)");
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

// What to try after a NaN/Inf or a divergence at step > 0. Under Adam, training.clip does not bound
// the update: clip_grad_norm_ rescales the whole gradient, and Adam's step lr * m / sqrt(v) does not
// depend on the gradient's scale (every weight moves by about lr per step), so naming clipping as
// the remedy of a run that already clips is wrong (#51: MC-RNN over a GRU, lr 3e-3, clip 5).
static std::string lr_clip_hint(Optimizer opt, double clip) {
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
static std::string script_cell_hint(const json& cfg) {
  const json* m = cfg.contains("model") && cfg["model"].is_object() ? &cfg["model"] : nullptr;
  if (!m || !m->contains("cell") || (*m)["cell"] != "script") return "";
  const std::string path = m->contains("script") && (*m)["script"].is_string() ? (*m)["script"].get<std::string>() : "";
  return " The cell is a script of your own (model.script '" + path +
         "'): its forward can produce the NaN or Inf itself (a log or division of 0, an exp or power that "
         "overflows, a sqrt of a negative number); check it on the inputs of this step.";
}

bool Trainer::train_step(RunContext& rc) {
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
  const double gnorm = torch::nn::utils::clip_grad_norm_(I.params, I.clip > 0 ? I.clip : inf);
  // After a non-finite loss at step_ + 1: when last.pt holds step_'s weights (never proven by a
  // finite loss), put the newest earlier step_<M>.pt back as last.pt (or remove it). Returns the
  // step of the last.pt kept, -1 for none.
  auto discard_unproven_checkpoint = [&]() -> int64_t {
    if (!store_) return -1;
    auto& I = *impl_;
    const std::string dir = store_->checkpoint_dir();
    const std::string last = join_path(dir, "last.pt");
    if (I.last_pt_step != step_) return file_exists(last) ? I.last_pt_step : -1;
    // last.pt holds the weights that just gave a non-finite loss: go back to the newest earlier
    // step_<M>.pt (a hard link, renamed over last.pt) or, without one, remove it.
    int64_t good = -1;
    if (writer()) {
      for (auto m : store_->checkpoint_steps())
        if (m < step_) good = m;
      const std::string bad = join_path(dir, "step_" + std::to_string(step_) + ".pt");
      if (good >= 0) {
        const std::string tmp = last + ".tmp." + std::to_string(::getpid());
        ::unlink(tmp.c_str());
        if (::link(join_path(dir, "step_" + std::to_string(good) + ".pt").c_str(), tmp.c_str()) != 0 ||
            ::rename(tmp.c_str(), last.c_str()) != 0) {
          ::unlink(tmp.c_str());
          good = -1;
        }
      }
      if (good < 0) ::unlink(last.c_str());
      ::unlink(bad.c_str());
      fsync_dir(dir);
    }
    I.last_pt_step = good;
    return good;
  };
  if (st.nonfinite || !std::isfinite(gnorm)) {
    // The weights of step_ gave a non-finite loss: a checkpoint of them is not a good one.
    const int64_t good = discard_unproven_checkpoint();
    rc.reason = std::string("the loss became ") + (std::isnan(st.loss) || std::isnan(gnorm) ? "NaN" : "Inf") +
                " at step " + std::to_string(step_ + 1) + "; the last good checkpoint is kept" +
                (good >= 0 ? " (checkpoints/last.pt, step " + std::to_string(good) + ")"
                           : std::string(" (none was written yet)")) +
                (step_ == 0 ? std::string(". No update had been made yet, so neither training.lr nor training.clip "
                                          "is the cause: the untrained model itself overflows (its configuration or "
                                          "initialisation; e.g. a smaller model, fewer zones or another option of "
                                          "the cell).")
                            : lr_clip_hint(I.opts.optimizer, I.clip)) +
                script_cell_hint(cfg_);
    return false;
  }
  if (std::isnan(I.ref_loss) && step_ == 0) I.ref_loss = st.loss;  // the untrained model's loss
  I.opt->step();
  // Never keep (and so never checkpoint) non-finite weights: a finite loss and gradient can
  // still give an update that overflows (e.g. a huge lr with weight decay).
  {
    torch::NoGradGuard ng;
    bool nan = false, bad = false;
    for (auto& p : I.params) {
      if (!torch::isfinite(p).all().item<bool>()) {
        bad = true;
        nan = torch::isnan(p).any().item<bool>();
        break;
      }
    }
    if (bad) {
      const std::string last = store_ ? join_path(store_->checkpoint_dir(), "last.pt") : "";
      rc.reason =
          std::string("the weights became ") + (nan ? "NaN" : "Inf") + " in the update of step " +
          std::to_string(step_ + 1) + "; the last good checkpoint is kept" +
          (store_ && file_exists(last)
               ? " (checkpoints/last.pt" +
                     (rc.last_checkpoint >= 0 ? ", step " + std::to_string(rc.last_checkpoint) : std::string()) + ")"
               : " (none was written yet)") +
          lr_clip_hint(I.opts.optimizer, I.clip);
      return false;
    }
  }
  ++step_;
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  I.acc_loss += st.loss;
  I.acc_gnorm += gnorm;
  I.acc_n += 1;
  I.acc_units += st.units;
  I.acc_time += dt;
  I.units_total += st.units;
  I.train_time_total += dt;
  I.flops_total += sr.flops > 0 ? sr.flops * static_cast<double>(parallel() ? dist_->world : 1)
                                : std::numeric_limits<double>::quiet_NaN();
  for (auto& [k, v] : st.metrics) I.acc_metrics[k] += v;
  if (rc.cb->on_progress) {
    Progress p;
    p.step = step_;
    p.total_steps = rc.total;
    p.elapsed = elapsed(rc);
    p.throughput = dt > 0 ? st.units / dt : 0;
    p.eta = I.train_time_total / std::max<int64_t>(1, step_) * static_cast<double>(rc.total - step_);
    p.unit = task_->unit_name();
    p.last_loss = st.loss;
    rc.cb->on_progress(p);
  }
  return true;
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
    rc.reason = buf + lr_clip_hint(I.opts.optimizer, I.clip);
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
      I.lr = decayed_lr(I.opts, I.lr_decays);
      apply_hyper_parameters(*I.opt, I.opts, I.lr_decays);
      char buf[160];
      std::snprintf(buf, sizeof buf, "lr decayed to %.6g at step %lld (valid %s not improved in %lld evaluation%s)",
                    I.lr, static_cast<long long>(step_), rc.lr_metric.c_str(),
                    static_cast<long long>(I.opts.lr_decay_patience), I.opts.lr_decay_patience == 1 ? "" : "s");
      log(rc, buf);
    }
  }
  // best.pt written after last.pt would see the same weights: save it directly
  if (store_ && better) save_global(join_path(store_->checkpoint_dir(), "best.pt"));
  if (rc.patience > 0 && I.bad_evals >= rc.patience) rc.early_stopped = true;
  // test over training time (CRU Fig. 4): logged only, never used for selection
  if (rc.track_test && task_->has_split("test")) evaluate(rc, "test");
}

// Every rank takes part in gathering the task's sharded state, rank 0 saves it (global
// terms: the checkpoint does not depend on the number of ranks).
void Trainer::save_global(const std::string& path) {
  sync_->gather_task_state(*task_);
  if (writer()) save_checkpoint(path);
  sync_->release_task_state(*task_);
}

void Trainer::checkpoint(RunContext& rc) {
  if (!store_) return;
  const std::string dir = store_->checkpoint_dir();
  const std::string last = join_path(dir, "last.pt");
  save_global(last);
  impl_->last_pt_step = step_;
  rc.last_checkpoint = step_;
  if (!writer()) return;
  // step_<N>.pt: a hard link to this last.pt (the next save replaces last.pt by rename).
  const std::string named = join_path(dir, "step_" + std::to_string(step_) + ".pt");
  ::unlink(named.c_str());
  if (::link(last.c_str(), named.c_str()) != 0) save_checkpoint(named);
  auto steps = store_->checkpoint_steps();
  for (size_t i = 0; i + static_cast<size_t>(rc.keep) < steps.size(); ++i)
    ::unlink(join_path(dir, "step_" + std::to_string(steps[i]) + ".pt").c_str());
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
    if (rc.eval_test && task_->has_split("test")) {
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
    }
    summary_.status = "finished";
    summary_.reason = rc.early_stopped ? "early stop (patience)" : "";
  }
  write_summary(rc);
  log(rc, how == Ending::finished ? "finished at step " + std::to_string(step_) : summary_.reason);
  return {summary_, store_ ? store_->dir() : ""};
}

TrainOutcome Trainer::run(TrainerControl* control, const TrainerCallbacks& cb) {
  RunContext rc;
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
    while (step_ < rc.total) {
      if (sync_->should_stop(control, &rc.paused)) {
        how = Ending::stopped;
        break;
      }
      if (!train_step(rc)) {
        how = Ending::failed;
        break;
      }
      if (step_ % rc.log_every == 0 || step_ == rc.total) log_interval(rc);
      if (rc.diverged) {
        how = Ending::failed;
        break;
      }
      const bool do_eval = (rc.eval_every > 0 && step_ % rc.eval_every == 0) || step_ == rc.total;
      if (do_eval && task_->has_split("valid")) evaluate_valid(rc);
      if ((rc.ckpt_every > 0 ? step_ % rc.ckpt_every == 0 : do_eval) || step_ == rc.total || rc.early_stopped)
        checkpoint(rc);
      if (do_eval || step_ % rc.log_every == 0) write_summary(rc);
      if (rc.early_stopped) {
        log(rc, "early stop at step " + std::to_string(step_) + ": no improvement of valid " + rc.metric + " in " +
                    std::to_string(rc.patience) + " evaluations (best " + std::to_string(impl_->best) + " at step " +
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

std::string checkpoint_path(const std::string& run_dir, const std::string& which) {
  const std::string dir = join_path(run_dir, "checkpoints");
  std::string p;
  if (which == "best" || which == "last") p = join_path(dir, which + ".pt");
  else p = join_path(dir, "step_" + which + ".pt");
  if (which == "best" && !file_exists(p)) p = join_path(dir, "last.pt");
  if (!file_exists(p)) throw UserError("run '" + run_dir + "' has no checkpoint '" + which + "' (" + p + ")");
  return p;
}

void load_run_checkpoint(Task& task, const std::string& run_dir, const std::string& which) {
  const std::string p = checkpoint_path(run_dir, which);
  torch::serialize::InputArchive ar;
  read_checkpoint_file(p, ar);
  load_checkpoint_weights(task, ar, p);
}

void load_checkpoint_weights(Task& task, torch::serialize::InputArchive& ar, const std::string& p) {
  check_model_matches(*task.model(), ar, p,
                      "The run's config.json does not describe the model this checkpoint was saved from");
  try {
    torch::serialize::InputArchive m;
    ar.read("model", m);
    task.model()->load(m);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    auto nl = what.find('\n');
    throw UserError("checkpoint '" + p + "' is unreadable or corrupted: " + what.substr(0, nl));
  }
}

std::unique_ptr<Task> load_run_task(const std::string& run_dir, const std::string& which, const json* dataset) {
  RunStore store(run_dir);
  if (!file_exists(store.path("config.json")))
    throw UserError("'" + run_dir + "' is not a run directory (no config.json)");
  json raw = store.read_config();
  use_run_script_copy(raw, run_dir);  // a script moved or edited since: the run's own copy
  if (dataset) {
    json ds = *dataset;
    // the run's tokenizer goes with its vocabulary
    if (ds.is_object() && !ds.contains("tokenizer") && raw["dataset"].contains("tokenizer"))
      ds["tokenizer"] = raw["dataset"]["tokenizer"];
    raw["dataset"] = ds;
  }
  json cfg = load_and_resolve(raw);
  auto task = make_task(cfg, run_dir);
  load_run_checkpoint(*task, run_dir, which);
  return task;
}

std::unique_ptr<Task> make_run_task(const std::string& run_dir, json* resolved) {
  RunStore store(run_dir);
  if (!file_exists(store.path("config.json")))
    throw UserError("'" + run_dir + "' is not a run directory (no config.json)");
  json raw = store.read_config();
  use_run_script_copy(raw, run_dir);  // a script moved or edited since: the run's own copy
  json cfg = load_and_resolve(raw);
  auto task = make_task(cfg, run_dir);
  if (resolved) *resolved = std::move(cfg);
  return task;
}

}  // namespace cs
