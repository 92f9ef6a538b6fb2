// The plain, Qt-free and torch-free results of the analyses (core/inspect/analysis/kinds.h):
// one type per shape of result, AnalysisResult = a std::variant of them. Core computes
// them; app/figures draws them (std::visit over AnalysisResult::data); the CLI exports
// them (to_json / to_csv). Definitions of the analyses: core/inspect/analysis/ANALYSIS_NOTES.md.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "config/schema.h"

namespace cs {

// A dense row-major matrix with row/column labels (NaN = no value).
struct LabeledMatrix {
  std::vector<std::string> row_labels, col_labels;
  std::vector<double> values;  // rows x cols
  int64_t rows() const { return static_cast<int64_t>(row_labels.size()); }
  int64_t cols() const { return static_cast<int64_t>(col_labels.size()); }
  double at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols() + c)]; }
  std::string caption;
  json to_json() const;
  std::string to_csv() const;  // first column: row label; header: "row" + column labels
};

// How a symbol is shown as a tick label: space -> "_", newline -> "⏎", tab -> "⇥".
std::string display_symbol(const std::string& sym);

// Heatmaps, one per run, side by side on one colour scale (relevance, zone relevance).
struct HeatmapSet {
  std::vector<LabeledMatrix> matrices;
  std::vector<std::string> titles;        // one per matrix (run name)
  double shared_min = 0, shared_max = 1;  // the colour scale shared by the runs
  // How the figure labels them (not exported).
  std::string x_label, y_label, value_label;
  bool few_rows = false;       // flatter panels; several runs stacked
  json to_json() const;        // {"matrices": [...], "scale": [min, max]}
  std::string to_csv() const;  // one matrix: its CSV; several: a leading "run" column
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
  std::vector<std::string> tokens;              // display symbols / words, x axis
  LabeledMatrix attention;                      // rows "channel k" (k = 1..K), cols = tokens; a_t^k
  std::vector<std::vector<int64_t>> in_degree;  // [K][T]: m_t^k of eq. 1
  // Block structure per channel: token spans [begin, end) of each block (a block starts
  // where m_t^k = 1; the first may be cut by the start of the text).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> blocks;
  int64_t block_size = 0;  // n (K = n - 1 channels)
  std::string caption;
  json to_json() const;
  std::string to_csv() const;  // channel,token_index,token,attention,in_degree,block
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
  std::string run;          // run directory (or name) this belongs to
  std::string name;         // its name in legends (run_names.h); "" = run
  std::string metric;       // "bpc" | "ppl" | "accuracy"
  std::string length_unit;  // "characters" | "tokens"
  std::string split;
  std::vector<MetricBucket> buckets;
  json to_json() const;
  std::string to_csv() const;  // run,bucket,lo,hi,sequences,units,<metric>
};
// Empty buckets from edges e0 < e1 < ...: bucket i covers (e_i, e_{i+1}], labelled e_i / 10
// (the MZU paper's convention) when e_i is a multiple of 10. UserError for bad edges.
LengthBuckets make_length_buckets(const std::vector<int64_t>& edges);
// Adds one scored sequence to the bucket its length falls in (none: ignored).
void add_sequence(LengthBuckets& b, int64_t length, int64_t units, double sum);
// Finalise value from sum/units for `metric` (bpc = sum/units/ln2, ppl = exp(sum/units),
// accuracy = sum/sequences).
void finish_buckets(LengthBuckets& b);
// Default edges: char_lm {0,10,...,90,120} (the MZU paper's "9 means (90,120]");
// word-level {0,10,20,30,40,50,60,80} (tokens).
std::vector<int64_t> default_edges_for(const std::string& task);
// Length buckets of several runs, drawn as bar series side by side.
struct BucketSet {
  std::vector<LengthBuckets> runs;
  json to_json() const;        // an array, one object per run
  std::string to_csv() const;  // the runs' rows under one header
};

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

// Any analysis' result: its kind's name, a caption (the definition, for figures) and
// one of the result types (std::monostate = nothing computed).
using AnalysisData = std::variant<std::monostate, HeatmapSet, MatrixSet, ChannelGrid, BucketSet, SeriesSet, TextTable>;
struct AnalysisResult {
  std::string kind;
  std::string caption;
  // What a reader must not miss (runs on different data or at different steps, symbols a
  // run does not know). Also at the start of the caption; the CLI prints them on stderr.
  std::vector<std::string> warnings;
  AnalysisData data;
  // {"kind", "caption", and by type: "matrices" + "scale" | "composition" | "grid" |
  // "buckets" | "series" | "table"}
  json to_json() const;
  std::string to_csv() const;
};

// Visitor from several lambdas, for std::visit over AnalysisData:
// std::visit(overloaded{[](const SeriesSet&) {...}, [](const auto&) {...}}, result.data).
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

// A result holding `data` (a type of AnalysisData with its own caption), captioned with it.
template <class T>
AnalysisResult result_of(T data) {
  AnalysisResult r;
  r.caption = data.caption;
  r.data = std::move(data);
  return r;
}

// Puts `part` (the same analysis of another run) beside `all`: heatmaps and buckets of
// both runs, curves overlaid; the heatmaps' shared scale covers both.
void append_runs(AnalysisResult& all, const AnalysisResult& part);

}  // namespace cs
