// Going on with a run: resume() (from last.pt, or the newest step_<N>.pt that loads, or step 0
// when no history would be lost) and fork_from() (a new run from another run's checkpoint).
// docs/RELIABILITY.md says what is refused and why.
#include <algorithm>
#include <cstdio>
#include <string>

#include "train/trainer_impl.h"
#include "util/error.h"

namespace cs {

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
  const int64_t target = impl_->opts.steps;
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
  impl_->apply_lr_decays();
  summary_.step = step_;
  summary_.elapsed = impl_->elapsed_before;
}

}  // namespace cs
