// Run directory layout (every file written atomically: temp file, then rename):
//   config.json       resolved configuration
//   vocab             the vocabulary (task-specific text format)
//   metrics.jsonl     one JSON object per logged step; evaluation lines have "eval": true (train/metrics.h)
//   summary.json      parameter count, best valid metric + step, test metric, mean
//                     throughput, status (running/finished/stopped/failed) and reason
//   checkpoints/      last.pt, best.pt, step_<N>.pt (model, optimizer, task and trainer state, RNG)
//   test_examples.json  the final test evaluation per example, for paired bootstraps (train/test_examples.h)
//   log.txt           human-readable log
//   tensorboard/      TensorBoard event files, written live (training.tensorboard; train/TENSORBOARD_NOTES.md)
//   label.txt         optional short name the user gave the run (legends, run table); one line, UTF-8
//   lock              flock(2)ed by the process writing the run (train, resume, fork, a sweep's point);
//                     holds that process's PID as text (docs/RELIABILITY.md)
#pragma once
#include <memory>
#include <string>
#include <limits>
#include <utility>
#include <vector>

#include "config/schema.h"

namespace cs {

struct RunSummary {
  std::string status = "running";  // running | finished | stopped | failed
  std::string reason;
  std::string task, cell, primary_metric;
  bool lower_is_better = true;
  int64_t parameters = 0;
  int64_t step = 0;
  double epoch = 0;
  double best_valid = 0;
  bool has_best = false;
  int64_t best_step = 0;
  double test_metric = 0;
  bool has_test = false;
  double mean_throughput = 0;  // units per second
  std::string unit;
  double elapsed = 0;
  double train_flops = std::numeric_limits<double>::quiet_NaN();  // cumulative; NaN: unknown (older runs)
  int64_t processes = 1;  // data-parallel processes of the last (or current) launch (`train --nproc N`)
  // Size of the valid / test split in the task's units (questions, sentences, tokens: the
  // EvalResult::units of its evaluations); 0 = not evaluated yet, or a run written before the
  // field existed. A table refuses a cell whose split is smaller than kMinTableSplitSize (sweep/table.h).
  int64_t valid_units = 0, test_units = 0;
  std::string started, updated;  // ISO times
  json to_json() const;
  static RunSummary from_json(const json& j);
};

class RunStore {
 public:
  explicit RunStore(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const;
  std::string checkpoint_dir() const { return path("checkpoints"); }
  // Create a new run directory (fails if it exists and is not empty).
  void create();
  // Create a new run directory atomically: it is built as <parent>/.<name>.creating.<pid>
  // (checkpoints/, lock taken, config.json and `vocab_text` when not empty, all fsync'ed),
  // then renamed to dir(); a kill at any instant leaves either no run directory or a complete
  // one. An existing dir() is reused when it is empty or holds only what an interrupted
  // creation of an older version left (an empty checkpoints/ and *.tmp.* files, no config.json);
  // otherwise UserError "already exists". The store keeps the directory locked (lock_for_writing).
  // `copies`: (name in the run directory, source file) pairs copied in with the rest (a script
  // cell's module, cells/SCRIPT_CELL_NOTES.md).
  void create_atomically(const json& cfg, const std::string& vocab_text,
                         const std::vector<std::pair<std::string, std::string>>& copies = {});
  // Take the run directory's writer lock (flock on dir/lock, released when the process ends or
  // the last copy of this store is destroyed). A second writer gets UserError naming the PID
  // that holds it. Idempotent.
  void lock_for_writing();
  void write_config(const json& cfg) const;
  // config.json as the run meant it when written (config/schema.h as_written: e.g. a run written
  // before dataset.tokenizer existed reads as tokenizer = legacy).
  json read_config() const;
  void write_summary(const RunSummary& s) const;
  RunSummary read_summary() const;
  void append_metrics(const json& line) const;  // appends one line, flushed
  std::vector<json> read_metrics() const;       // skips a torn last line
  // Keep only metrics lines with step <= `step` (used by --resume).
  void truncate_metrics(int64_t step) const;
  void log(const std::string& line) const;        // appends to log.txt
  std::vector<int64_t> checkpoint_steps() const;  // step_<N>.pt present, sorted
  // Remove "*.tmp.<pid>" files left by a process killed mid-write (on resume).
  void remove_stale_temp_files() const;
  // Removes the run directory when it holds nothing but what a run writes (the layout above, files
  // of interrupted writes, TensorBoard event files) and no checkpoint; the caller holds the lock.
  // Otherwise changes nothing and returns the first other entry (a user's file), so that a
  // removal never takes what it did not make (#52). "" when removed.
  std::string remove_if_only_run_files() const;
  // The user's label for the run ("" when none). write_label("") removes it. A label is one line of
  // at most 80 bytes of valid UTF-8 without control characters or bidirectional-text controls
  // (data/utf8.h, find_unprintable_name_char; UserError otherwise, and read_label ignores a
  // label.txt that breaks these rules); surrounding white space is trimmed.
  std::string read_label() const;
  void write_label(const std::string& label) const;
  // The PID of the process writing the run now ("" when none): a shared, non-blocking flock
  // probe of `lock`, opened read-only and never created, so it changes nothing in the run.
  std::string writer_pid() const;

 private:
  std::string dir_;
  std::shared_ptr<int> lock_fd_;  // open descriptor holding the flock, closed with the last copy
};

// What a scheduler needs to know of a run (`cellscope-cli status`, docs/DISTRIBUTED.md): its
// summary, whether a process writes it now, and whether it has a checkpoint to continue from.
struct RunState {
  RunSummary summary;
  std::string writer_pid;       // "" when no process writes it
  bool has_checkpoint = false;  // checkpoints/last.pt
  // running (a writer holds the lock) | finished | failed | stopped | interrupted (status
  // "running" in summary.json but no writer: the process was killed) | not started (no summary)
  std::string state;
  // The exit status `status` gives: 0 finished; 75 stopped (a stop was asked and its checkpoint
  // written: requeue, the same command continues it); 1 failed or interrupted (its process ended
  // without a stop: a crash or a kill, which a requeue loop must not repeat blindly); 3 running.
  int exit_status = 0;
};
// UserError (exit 2) when `dir` is not a run directory or its summary cannot be read.
RunState probe_run_state(const std::string& dir);

// Default workspace: $CELLSCOPE_WORKSPACE, else $XDG_DATA_HOME/cellscope/runs, else ~/.local/share/cellscope/runs.
std::string default_workspace();
// A fresh run directory name: <workspace>/<YYYYmmdd-HHMMSS>-<task>-<cell>[-N].
std::string new_run_dir(const std::string& workspace, const json& cfg);
std::string now_iso();

}  // namespace cs
