// The analyses of trained runs as a registry of kinds, shared by the workbench
// (Analyses tab, app/figures) and the CLI (`cellscope-cli analyze KIND`). Each kind lives
// in its own core/inspect/analysis/kind_<name>.cpp: a descriptor (name, texts, tasks, named
// capability flags) and a run function; kinds.cpp lists them, one line each.
//
// Entry point for a front end: analysis_kinds() and run_analysis(AnalysisRequest) ->
// AnalysisResult (results.h: to_json / to_csv, drawn by app/figures). The computations
// behind the kinds, callable on a loaded task: computations.h. Definitions and choices:
// core/inspect/analysis/ANALYSIS_NOTES.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/checkpoints.h"
#include "analysis/results.h"

namespace cs {

class Task;

struct AnalysisRequest {
  std::string kind;
  std::vector<std::string> runs;    // run directories (>= 1)
  std::string checkpoint = "best";  // "best" | "last" | "step_N" | "N"
  // One checkpoint per run (same order as runs); empty = `checkpoint` for every run. A
  // comparison at different steps says so in the caption (both steps).
  std::vector<std::string> checkpoints;
  std::string text;            // "" = a default (start of the first run's valid split / a sample sentence)
  int64_t last_k = 10;         // relevance: rows
  int64_t position = -1;       // zone_relevance / composition: character index (-1 = last)
  int layer = -1;              // -1 = top layer
  std::string split = "test";  // length buckets, accuracy vs time
  std::vector<int64_t> edges;  // length buckets; empty = default_edges_for(task)
  int bins = 20;               // gate histograms
  std::string metric;          // metric_time: "" = primary
};

// Which fields of an AnalysisRequest a kind reads besides runs and checkpoint (a front
// end shows those inputs).
struct AnalysisInputs {
  bool text = false;      // text
  bool last_k = false;    // last_k
  bool position = false;  // position (a character index)
  bool layer = false;     // layer
  bool split = false;     // split
  bool edges = false;     // edges
  bool bins = false;      // bins
  bool metric = false;    // metric
};

struct AnalysisKind;
// Computes the kind for a request already checked by run_analysis (runs not empty, one
// run unless multi_run). Sets data and caption; run_analysis sets kind.
using AnalysisRunFn = AnalysisResult (*)(const AnalysisKind& kind, const AnalysisRequest& req);

struct AnalysisKind {
  std::string name;                // CLI KIND, e.g. "relevance"
  std::string title;               // "Per-character relevance"
  std::string help;                // one line
  std::string caption;             // definition, for the view's help and exported figure captions
  std::vector<std::string> tasks;  // tasks it applies to
  // Cells it applies to (model.cell, or an MC-RNN's model.base); empty: any cell. What a cell
  // records decides in the end (run_analysis refuses a run whose cell records nothing for the
  // kind); this list lets front ends offer only what can work (no channel attention for a satMZU).
  std::vector<std::string> cells;
  AnalysisInputs inputs;
  bool multi_run = false;              // accepts several runs (side by side / overlaid)
  bool over_training = false;          // uses every checkpoint (no --checkpoint)
  bool colour_map = false;             // drawn as heatmaps whose colour map the user picks
  std::string default_split = "test";  // front ends' default for `split`
  AnalysisRunFn run = nullptr;
};
const std::vector<AnalysisKind>& analysis_kinds();
// Whether `kind` applies to a run's resolved model section by its cells list (model.cell, or
// model.base for an MC-RNN).
bool analysis_applies_to_cell(const AnalysisKind& kind, const std::string& cell, const std::string& base = "");
const AnalysisKind& analysis_kind(const std::string& name);  // UserError listing the kinds

// Run one analysis (loads the checkpoint(s) it needs). Throws UserError with a clear
// message (unknown kind, wrong task/cell, missing checkpoint, bad text). Several runs
// (a comparison): they are named by comparison_names (run_names.h) and the caption
// ends with the checkpoint each was analysed at, with a warning when the steps differ.
AnalysisResult run_analysis(const AnalysisRequest& req);

// The text used when a request leaves it empty (Task::default_analysis_text: char_lm the
// first 120 characters of the valid split; word_lm its first 30 tokens; classify/absa the
// first valid sentence).
std::string default_text(Task& task);

// ---- for the kinds' run functions
// The run's checkpoint as a task; UserError when its task is not one of kind.tasks.
std::unique_ptr<Task> load_for(const AnalysisKind& kind, const std::string& run_dir, const std::string& checkpoint);
// The request's text, or the task's default text when it is empty.
std::string text_or_default(const AnalysisRequest& req, Task& task);
// The last component of a run directory ("runs/gru/" -> "gru").
std::string run_name(const std::string& run_dir);
// The checkpoint of run i of the request (checkpoints[i], else checkpoint).
std::string checkpoint_of(const AnalysisRequest& req, size_t i);
// The names of the request's runs in figures and outputs (comparison_names_of_dirs).
std::vector<std::string> run_titles(const AnalysisRequest& req);

// One text for every run of a comparison: the request's text, or the first run's default
// text (`first` = that run's task), with where it came from for the caption.
struct SharedText {
  std::string text;
  std::string source;  // "the given text" | "the start of the valid split of <name>"
};
SharedText shared_text(const AnalysisRequest& req, Task& first, const std::string& first_name);
// A caption sentence quoting the text (its first characters) and its source.
std::string text_note(const SharedText& t);

}  // namespace cs
