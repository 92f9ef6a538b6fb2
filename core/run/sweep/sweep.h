// Sweeps: a base configuration plus a grid over options and seeds,
// expanded into points that run one after another as ordinary runs in the
// workspace, resumable when interrupted. Notes and choices: core/run/sweep/SWEEP_NOTES.md.
//
// Spec (JSON; resources/sweeps/*.json are the bundled "reproduce" sweeps):
//   {"name": "zones", "notes": "...",
//    "base": {config} | "preset-name",
//    "set": {"training.steps": 300},                         optional overrides on the base
//    "grid": {"model.zones": [2, 4]}                         map form: one axis per option, or
//    "grid": [{"option": "model.zones", "values": [2, 4]},   list form (axis order = list order),
//             {"name": "variant", "values": [                named axes whose values set several
//                {"label": "Full", "set": {}},               options at once (null removes an option)
//                {"label": "Regular-Gate", "set": {"model.regular_gate": true}}]}],
//    "seeds": [1, 2, 3],
//    "exclude": [{"where": {"variant": "Regular-Gate",      optional: points not run, by design
//                           "model.depth": [2], "seed": [3]}, (every key must match: an axis by its
//                 "reason": "..."}],                          labels, or "seed"); tables print why
//    "table": {"rows": "variant", "cols": "model.depth",     axis names (a string or a list);
//              "metric": "test",                             axes in neither go to the rows
//              "best": "column"},                            column | row | all | none
//    "paper": {"source": "MZU, Table 4", "dataset": "PTB",  optional: what a reproduce sweep stands
//              "dataset_used": "...", "settings": {...},     in for (SweepPaperLabel; every export
//              "departures": [{"setting", "paper", "ours", "reason"}]}}   of its tables prints it)
// Points are ordered by the axes (the first axis varies slowest), seeds innermost.
#pragma once
#include <functional>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "config/schema.h"
#include "train/run_store.h"
#include "train/trainer.h"

namespace cs {

struct SweepAxis {
  std::string name;                 // the option path, or the axis's own name
  std::vector<std::string> labels;  // one per value (a scalar's JSON text, or the value's "label")
  std::vector<json> sets;           // one per value: {"section.key": value-or-null, ...}
};

struct SweepTableSpec {
  std::vector<std::string> rows, cols;  // axis names
  std::string metric = "test";          // test | valid | test.<key> | valid.<key>
  std::string best = "column";          // column | row | all | none
  int higher_is_better = -1;            // -1: from the metric (summary / key name)
};

// What a reproduce sweep stands in for, and where it departs from the paper (the spec's "paper"
// object; SWEEP_NOTES.md "Labels"). Every export of its tables and figures prints it.
struct SweepDeparture {
  std::string setting;  // an option path ("training.lr") or a named protocol setting ("evaluation split")
  std::string paper;    // the paper's value, as the paper states it
  std::string ours;     // this sweep's value (for an option path: its value in the points' configs)
  std::string reason;
};
struct SweepPaperLabel {
  std::string source;              // "CRU (Cui et al.), Table 2"
  std::string dataset;             // the paper's dataset(s): "MR, IMDB, SUBJ"
  std::string dataset_used;        // what the sweep runs on instead, in words
  json settings = json::object();  // option path -> the paper's value (a list: the paper's values, per dataset)
  std::vector<SweepDeparture> departures;
  bool present() const { return !source.empty(); }
};

// Points a spec leaves out of its grid on purpose (the spec's "exclude"): a point is left out when it
// matches every key of `where` (an axis name -> some of its value labels, "seed" -> some seeds). The
// reason goes with every export of the sweep's tables, so an empty cell is never unexplained.
struct SweepExclusion {
  std::vector<std::pair<std::string, std::vector<std::string>>> where;  // axis -> labels, in the grid's order
  std::vector<size_t> axis_index;                                       // where[i]'s axis in SweepSpec::axes
  std::vector<int64_t> seeds;                                           // empty: every seed
  std::string reason;
  // "composition=gcnMZU (eq. 9), model.zones=16: not run (reason)"
  std::string text() const;
};

struct SweepSpec {
  std::string name;
  std::string notes;
  SweepPaperLabel paper;  // empty source: not a reproduction of a paper's table
  json base;              // the raw base config (a preset name already loaded), "set" applied
  std::vector<SweepAxis> axes;
  std::vector<int64_t> seeds;
  std::vector<SweepExclusion> exclude;
  SweepTableSpec table;
  json source;  // the spec document as given (with "base" replaced by the loaded object)

  // Parse and check a spec. `base` may name a preset (resources/presets). Throws
  // UserError naming the offending field ("grid[1].values[0]: ...").
  static SweepSpec from_json(const json& j);
};

// A spec from a file, a bundled sweep (resources/sweeps/<name>.json) or an
// existing sweep directory's sweep.json.
SweepSpec load_sweep_spec(const std::string& file_or_name);
// Bundled sweep specs: {name, notes, path} for resources/sweeps/*.json; a file that does not
// load as a sweep spec is listed with {"error": the reason} and empty notes.
std::vector<json> bundled_sweeps();

struct SweepPoint {
  int index = 0;                    // position in the run order
  std::string id;                   // e.g. "model.zones=2,seed=1" (stable: the state file's key)
  std::vector<int> value_index;     // per axis
  std::vector<std::string> labels;  // per axis
  int64_t seed = 1;
  json config;  // validated + resolved
};

// The datasets the sweep's points train on (dataset.name, else dataset.path), in grid order, each once.
std::vector<std::string> sweep_datasets(const SweepSpec& spec);

// Expand the grid (axes x seeds) into validated points. Every invalid point is
// reported (point id + option path) in one UserError before anything runs.
std::vector<SweepPoint> expand_sweep(const SweepSpec& spec);

// Set "section.key" in a raw config (null removes it). Throws UserError naming the path.
void set_option_path(json& cfg, const std::string& path, const json& value);

// ------------------------------------------------------------------ state / running
struct SweepPointState {
  std::string run_dir;
  std::string status;  // pending | running | stopped | finished | failed
};

// <workspace>/sweeps/<name>
std::string sweep_dir(const std::string& workspace, const std::string& name);
// Reads <dir>/state.json (point id -> state); empty when absent.
std::map<std::string, SweepPointState> read_sweep_state(const std::string& dir);

struct SweepRunOptions {
  std::string workspace;  // empty: default_workspace()
  // A share of the points (several processes or machines on one sweep): the points whose
  // index % workers == worker (0-based, like SLURM_PROCID / SLURM_ARRAY_TASK_ID), fixed by
  // the index alone, so a point's share never depends on what is finished. `points`, when not
  // empty, keeps only those indices (`sweep run --point I`, one Slurm array task). A run of
  // the whole sweep (workers == 1, no points) holds the sweep's lock exclusively; a share
  // holds it shared, plus the lock of each point it runs (a point being run elsewhere is
  // skipped and counted in SweepRunResult::busy).
  int worker = 0, workers = 1;
  std::vector<int> points;
  int threads = 0;                    // > 0: intra-op threads for every point (overrides training.threads)
  int default_threads = 0;            // threads when training.threads is 0 (0: all cores)
  TrainerControl* control = nullptr;  // stop: the current run stops with a checkpoint; the sweep stops
  // Called before each point (resumed: continues a stopped run), after it, and during training.
  std::function<void(const SweepPoint&, int n, bool resumed, const std::string& run_dir)> on_point_start;
  std::function<void(const SweepPoint&, int n, const RunSummary&)> on_point_done;
  std::function<void(const SweepPoint&, const Progress&)> on_progress;
  std::function<void(const SweepPoint&, const MetricsRecord&)> on_metrics;
  std::function<void(const std::string&)> on_log;  // skipped points, messages
};

struct SweepRunResult {
  std::string dir;
  int total = 0, done = 0, ran = 0, skipped = 0, failed = 0;
  int share = 0;         // points of this share (total when the whole sweep runs)
  int busy = 0;          // points of the share another process was running (not touched here)
  bool stopped = false;  // interrupted: run again to continue
};

// Run every point not finished yet, in order, each an ordinary run in the workspace
// (train/launch.h start_run). A point whose run was stopped is resumed from its last
// checkpoint; one whose run has no checkpoint starts over in a new run directory.
// Creating the sweep writes <dir>/sweep.json; running again with the same name and a
// different spec is refused (UserError).
SweepRunResult run_sweep(const SweepSpec& spec, const SweepRunOptions& options);

// "I/N" (0 <= I < N) -> {I, N}; UserError naming the problem otherwise.
std::pair<int, int> parse_worker_share(const std::string& text);
// True when point `index` belongs to share worker/workers (and to `points` when not empty).
bool point_in_share(int index, int worker, int workers, const std::vector<int>& points = {});

// Create <workspace>/sweeps/<name> with its sweep.json (every point checked first), or check
// that the one there is this spec (UserError otherwise). Returns the directory.
std::string prepare_sweep_dir(const SweepSpec& spec, const std::string& workspace);

// ------------------------------------------------------------------ several processes
// `sweep run --jobs K`: the share's unfinished points, K at a time, each in its own process
// `exe sweep run <sweep dir> --workspace WS --point I --threads T --quiet` (own process group,
// stdout + stderr appended to <sweep dir>/logs/point-<I>.log, SIGINT'ed if this process dies).
// T = threads > 0 ? threads : max(1, cores / K). control->stop: every child gets SIGINT once
// (its run stops with a checkpoint) and no new point starts.
struct SweepJobsOptions {
  std::string exe;  // cellscope-cli
  int jobs = 2;
  int threads = 0;
  // start: a child began (pid, log file); done: it ended, with the point's status
  // (finished | failed | stopped | running when it died | busy) and run directory.
  std::function<void(const SweepPoint&, int pid, int threads, const std::string& log)> on_start;
  std::function<void(const SweepPoint&, const std::string& status, const std::string& run_dir, double seconds,
                     int exit_code)>
      on_done;
};
SweepRunResult run_sweep_jobs(const SweepSpec& spec, const SweepRunOptions& options, const SweepJobsOptions& jobs);

// ------------------------------------------------------------------ Slurm
struct SlurmOptions {
  std::string workspace;  // made absolute; shared by every node
  std::string exe;        // cellscope-cli as the nodes see it (absolute)
  std::string partition, time, mem, account, job_name;
  int cpus_per_task = 0;  // 0: not set (Slurm's default, 1)
  int max_running = 0;    // > 0: "%M" on --array (at most M tasks at once)
};
// An sbatch job-array script: one array task per point (--array=0-(P-1)), each running
// `exe sweep run <sweep dir> --workspace WS --point $SLURM_ARRAY_TASK_ID --threads
// ${SLURM_CPUS_PER_TASK:-1}`; output in <sweep dir>/slurm/. `points` = the sweep's size.
// UserError for an option value that cannot go into an #SBATCH line.
std::string slurm_array_script(const SweepSpec& spec, int points, const std::string& dir, const SlurmOptions& o);

// ------------------------------------------------------------------ results
struct SweepRunRecord {
  SweepPoint point;  // config not filled
  SweepPointState state;
  bool has_value = false;
  double value = 0;
  std::string decode;  // the "decode" label of the evaluation line read (seq2seq BLEU/ROUGE); "" = none
};

struct SweepResults {
  SweepSpec spec;
  std::string dir;
  std::vector<SweepRunRecord> records;  // in point order
  bool higher_is_better = false;
  std::string metric_label;  // e.g. "test bpc", "test bleu (beam 5, lp 1.0)"
};

// Read a sweep directory (or a sweep name under the workspace): its spec, state and
// each point's metric (summary.json test/best valid, or the last eval line's key).
SweepResults read_sweep_results(const std::string& dir_or_name, const std::string& workspace = "",
                                const std::string& metric = "");

}  // namespace cs
