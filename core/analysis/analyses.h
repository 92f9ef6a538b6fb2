// Issue #7: every analysis of a trained run, shared by the workbench (Analyses tab,
// app/figures) and the CLI (`cellscope-cli analyze`). Core computes plain, Qt-free
// results (matrices, grids, buckets, series, tables); widgets draw them; the CLI
// exports them. Definitions and choices: core/analysis/ANALYSIS_NOTES.md.
//
// Entry point for a front end: analysis_kinds() (name, help, caption, what it needs)
// and run_analysis(AnalysisRequest) -> AnalysisResult (to_json / to_csv for export).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "config/schema.h"

namespace cs {

class Task;
class SentenceTask;

// ------------------------------------------------------------------ result types

// Curves over a shared kind of x (steps, seconds, histogram bin centres).
struct Series {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> yerr;  // empty = none
};
struct SeriesSet {
  std::string title, x_label, y_label, caption;
  std::string style = "line";  // "line" (curves), "bars" (histogram: x = bin centres), "points"
  double bin_width = 0;        // bars: width of a bin in x units
  int64_t marker_step = -1;    // over-training curves: the checkpoint being viewed (-1 none)
  std::vector<Series> series;
  json to_json() const;
  std::string to_csv() const;  // long format: series,x,y[,yerr]
};

// A table of strings (CRU Table 5: prefix -> prediction).
struct TextTable {
  std::string title, caption;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  json to_json() const;
  std::string to_csv() const;
};

// One small heatmap of a set (composition weights: one per M-function, depth and,
// for cap, routing iteration).
struct MatrixPanel {
  std::string title;       // e.g. "M_h (candidate), depth 0, routing iteration 2"
  std::string m_function;  // "h" or "g"
  int depth = 0;           // 0 = the first transition, d = deep transition d (dt<d>)
  int iteration = -1;      // cap: routing iteration (0-based); -1 otherwise
  LabeledMatrix matrix;
};
struct MatrixSet {
  std::string title, caption;
  std::string composition;  // "sat" | "gcn" | "cap"
  std::string character;    // display_symbol of the chosen character
  int64_t position = 0;     // its index in the text
  int iterations = 0;       // cap: routing iterations (panels per M-function and depth)
  std::vector<MatrixPanel> panels;
  json to_json() const;
  std::string to_csv() const;  // long format: panel,row,col,value
};

// MC-RNN channel-attention grid (MC-RNN paper Fig. 3): tokens along x, channels along y.
struct ChannelGrid {
  std::vector<std::string> tokens;   // display symbols / words, x axis
  LabeledMatrix attention;           // rows "channel k" (k = 1..K), cols = tokens; a_t^k
  std::vector<std::vector<int64_t>> in_degree;  // [K][T]: m_t^k of eq. 1
  // Block structure per channel: token spans [begin, end) of each block (a block starts
  // where m_t^k = 1; the first may be cut by the start of the text).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> blocks;
  int64_t block_size = 0;            // n (K = n - 1 channels)
  std::string caption;
  json to_json() const;
  std::string to_csv() const;        // channel,token_index,token,attention,in_degree,block
};

// A metric per sequence-length bucket: bpc (char_lm), ppl (word_lm), accuracy (classify/absa).
struct MetricBucket {
  std::string label;
  int64_t lo = 0, hi = 0;  // lengths in (lo, hi]
  int64_t sequences = 0;   // sentences/lines in the bucket
  int64_t units = 0;       // characters / tokens scored (LMs) or sentences (classify)
  double sum = 0;          // nats (LMs) or correct predictions (classify)
  double value = 0;        // the metric (NaN when empty)
};
struct LengthBuckets {
  std::string run;         // run directory (or name) this belongs to
  std::string metric;      // "bpc" | "ppl" | "accuracy"
  std::string length_unit; // "characters" | "tokens"
  std::string split;
  std::vector<MetricBucket> buckets;
  json to_json() const;
  std::string to_csv() const;  // bucket,lo,hi,sequences,units,<metric>
};
// Finalise value from sum/units for `metric` (bpc = sum/units/ln2, ppl = exp(sum/units),
// accuracy = sum/sequences).
void finish_buckets(LengthBuckets& b);
// Default edges: char_lm {0,10,...,90,120} (the MZU paper's "9 means (90,120]");
// word-level {0,10,20,30,40,50,60,80} (tokens).
std::vector<int64_t> default_edges_for(const std::string& task);

// ------------------------------------------------------------------ checkpoints

struct CheckpointInfo {
  std::string id;     // "step_100", "best" or "last": pass to load_checkpoint_task
  int64_t step = -1;  // training step (-1 unknown)
  std::string label;  // "step 100", "step 300 (best)", "last (step 400)"
  bool is_best = false, is_last = false;
};
// step_<N> checkpoints in step order, then last and best (steps read from the files'
// trainer state where named checkpoints are absent). Empty if the run has none.
std::vector<CheckpointInfo> list_checkpoints(const std::string& run_dir);
// `id`: "best", "last", "step_N" or "N". Throws UserError when absent.
std::unique_ptr<Task> load_checkpoint_task(const std::string& run_dir, const std::string& id);

// ------------------------------------------------------------------ analyses on a loaded task

// Composition weights for character `position` (-1 = last) of `text` (MZU char-LM runs):
// sat attention matrices (zones x zones), gcn normalised adjacency D^-1/2 (W+I) D^-1/2,
// cap coupling coefficients c_ij (input zones x output capsules) for every routing iteration.
MatrixSet composition_weights(CharLMTask& task, const std::string& text, int64_t position = -1, int layer = -1);

// MC-RNN channel-attention grid of `text` (char_lm: characters; word_lm: words
// separated by spaces, unknown words -> <unk>). The layer must be an MC-RNN cell.
ChannelGrid channel_attention(Task& task, const std::string& text, int layer = -1);

// Metric per length bucket of a split (char_lm: lines; word_lm: sentences = <eos>-ended
// lines; classify/absa: examples by token count).
LengthBuckets metric_by_length(Task& task, const std::string& split, const std::vector<int64_t>& edges);

// Gate statistics on `text` (LMs) or the first sentences of a split (classify/absa,
// text = split name): one histogram over [0,1] per gate series the cells record
// (GRU/CRU "gate" = 1 - z, "reset"; LSTM "gate" = input, "forget", "output_gate";
// MZU "gate"). y = fraction of values per bin. Caption lists the saturation fractions.
SeriesSet gate_histograms(Task& task, const std::string& text, int bins = 20);
struct GateSaturation {
  std::string key;             // probe key, e.g. "l0/gate"
  double below = 0, above = 0; // fraction of values < 0.1 and > 0.9
  int64_t count = 0;
};
std::vector<GateSaturation> gate_saturation(Task& task, const std::string& text);

// Mean zone disagreement D_zone (MZU eq. 18) per M-function on `text`: key -> mean.
std::map<std::string, double> mean_dzone(Task& task, const std::string& text);

// CRU Table 5: for every prefix w_1..w_i of `sentence`, the predicted label and its probability.
TextTable prefix_predictions(SentenceTask& task, const std::string& sentence);

// ------------------------------------------------------------------ analyses over a run's history

// Mean D_zone per M-function at every checkpoint of the run (x = step), on `text`.
SeriesSet dzone_over_training(const std::string& run_dir, const std::string& text);
// Gate saturation (fraction < 0.1 and > 0.9 per gate key) at every checkpoint (x = step).
SeriesSet gate_saturation_over_training(const std::string& run_dir, const std::string& text);
// CRU Fig. 4: eval accuracy (metric) vs elapsed training seconds, one series per run
// (named after the run's cell and directory), from metrics.jsonl.
SeriesSet metric_vs_time(const std::vector<std::string>& run_dirs, const std::string& split = "test",
                         const std::string& metric = "");  // "" = the run's primary metric
// The training curve (primary metric on valid vs step) with marker_step = `step`.
SeriesSet training_curve(const std::string& run_dir, int64_t step = -1);

// ------------------------------------------------------------------ the registry

struct AnalysisKind {
  std::string name;     // CLI KIND, e.g. "relevance"
  std::string title;    // "Per-character relevance"
  std::string help;     // one line
  std::string caption;  // definition, for the view's help and exported figure captions
  std::string result;   // "matrix" | "matrix_pair" | "matrices" | "grid" | "buckets" | "series" | "table"
  std::vector<std::string> tasks;  // tasks it applies to
  bool needs_text = false;         // uses AnalysisRequest::text
  bool multi_run = false;          // accepts several runs (side by side / overlaid)
  bool over_training = false;      // uses every checkpoint (no --checkpoint)
};
const std::vector<AnalysisKind>& analysis_kinds();
const AnalysisKind& analysis_kind(const std::string& name);  // UserError listing the kinds

struct AnalysisRequest {
  std::string kind;
  std::vector<std::string> runs;       // run directories (>= 1)
  std::string checkpoint = "best";     // "best" | "last" | "step_N" | "N"
  std::string text;                    // "" = a default (start of the valid split / a sample sentence)
  int64_t last_k = 10;                 // relevance: rows
  int64_t position = -1;               // zone_relevance / composition: character index (-1 = last)
  int layer = -1;                      // -1 = top layer
  std::string split = "test";          // length buckets, accuracy vs time
  std::vector<int64_t> edges;          // length buckets; empty = default_edges_for(task)
  int bins = 20;                       // gate histograms
  std::string metric;                  // metric_vs_time: "" = primary
};

struct AnalysisResult {
  std::string kind;
  std::string caption;
  std::vector<LabeledMatrix> matrices;          // relevance (one per run, shared scale), zone_relevance
  std::vector<std::string> matrix_titles;       // one per matrix (run name)
  double shared_min = 0, shared_max = 1;        // relevance: colour scale shared by the runs
  MatrixSet matrix_set;                         // composition
  ChannelGrid grid;                             // channel_attention
  std::vector<LengthBuckets> buckets;           // length (one per run)
  SeriesSet series;                             // over-training, gates, metric vs time
  TextTable table;                              // prefix table
  json to_json() const;
  std::string to_csv() const;
};

// The text used when a request leaves it empty (char_lm: the first 120 characters of the
// valid split; word_lm: the first 30 tokens; classify/absa: the first valid sentence).
std::string default_text(Task& task);
// Run one analysis (loads the checkpoint(s) it needs). Throws UserError with a clear
// message (wrong task/cell, missing checkpoint, bad text).
AnalysisResult run_analysis(const AnalysisRequest& req);

}  // namespace cs
