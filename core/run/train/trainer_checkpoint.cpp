// The trainer's checkpoint files (train/checkpoint.h holds the file format): save_checkpoint and
// load_checkpoint (the trainer's whole state), the periodic checkpoint of run() with its step_<N>.pt
// links, what a non-finite step does to last.pt, and a run's task rebuilt from a checkpoint
// (load_run_task, run_task.h).
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "train/run_task.h"
#include "train/step_sync.h"
#include "train/trainer_impl.h"
#include "util/error.h"
#include "util/text.h"
#include "util/fsync.h"
#include "util/torch_compat.h"

namespace cs {

void Trainer::save_checkpoint(const std::string& path) {
  torch::serialize::OutputArchive ar;
  torch::serialize::OutputArchive m, o, t, s;
  task_->model()->save(m);
  impl_->opt->save(o);
  task_->save_state(t);
  auto I = [](int64_t v) { return torch::tensor(v, torch::kInt64); };
  auto D = [](double v) { return torch::tensor(v, torch::kFloat64); };
  for (const TrainerStateField& f : impl_->state_fields(&step_, &summary_.elapsed)) {
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
const char* kForkHint =
    "A run's architecture (model, task, dataset, training.optimizer, training.batch) cannot change on resume; "
    "to train on from a checkpoint with other training options make a new run with "
    "`cellscope-cli train --fork RUN_DIR[@STEP] --set training.KEY=VALUE`, for another architecture start a new run";

// The optimizer state of a checkpoint, mapped onto this process's parameters. LibTorch's Optimizer::save
// writes "state/<key>" (one archive per parameter with a state) and "param_groups/param_groups/<i>" holding
// "params/<j>" = the key of group i's j-th parameter, where a key is that parameter's TensorImpl address in
// the writing process. Optimizer::load maps the keys back, but the text of a key differs by version: 1.13
// writes "0x55d0..." (c10::guts::to_string) and 2.x writes and parses decimal (std::stoull), so a 2.x build
// read every key of a 1.13 checkpoint as 0 and put one parameter's moments on another (seen: a shape error at
// the next step; docs/PLATFORMS.md). This mapping goes through the saved key texts themselves, which is the
// same on every version, and checks each moment's shape against its parameter (a UserError naming it, never a
// training on misplaced moments).
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
    for (const TrainerStateField& f : impl_->state_fields(&step_, &impl_->elapsed_before)) {
      torch::Tensor v;
      const bool present = f.optional ? s.try_read(f.key, v) : (v = T(f.key), true);
      if (auto* i = std::get_if<int64_t*>(&f.value))
        **i = present ? v.item<int64_t>() : static_cast<int64_t>(f.missing);
      else if (auto* d = std::get_if<double*>(&f.value)) **d = present ? v.item<double>() : f.missing;
      else *std::get<bool*>(f.value) = present ? v.item<int64_t>() != 0 : f.missing != 0;
    }
    impl_->apply_lr_decays();
    task_->load_state(t);
    // The archive was read onto the run's device (a CPU checkpoint resumed on CUDA: every tensor on the
    // GPU): the bytes of the metrics text and the CPU generator's state are read on the host.
    auto c = T("acc_metrics").to(torch::kCPU).contiguous();
    std::string ams(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
    impl_->acc_metrics = parse_json(ams, "checkpoint trainer state").get<std::map<std::string, double>>();
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(T("rng").to(torch::kCPU));
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw UserError("checkpoint '" + path + "' is unreadable or corrupted: " + first_line(e.what()));
  }
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
  for (size_t i = 0; i + static_cast<size_t>(rc.tr.keep_checkpoints) < steps.size(); ++i)
    ::unlink(join_path(dir, "step_" + std::to_string(steps[i]) + ".pt").c_str());
}

// After a non-finite loss at step_ + 1: when last.pt holds step_'s weights (never proven by a
// finite loss), put the newest earlier step_<M>.pt back as last.pt (or remove it). Returns the
// step of the last.pt kept, -1 for none.
int64_t Trainer::discard_unproven_checkpoint() {
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
    throw UserError("checkpoint '" + p + "' is unreadable or corrupted: " + first_line(e.what()));
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
