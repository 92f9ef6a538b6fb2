// Tables from a sweep: the papers' result tables rebuilt from runs —
// MZU Table 3 (zones x composition), MZU Table 4 (ablation x depth), CRU Table 2
// (variants x datasets), MC-RNN Table 2/4 (MC-RNN-2/3/4) — as mean +- sample std
// over seeds with the best cell(s) marked, a paired-difference view with each comparison's
// tests and verdict (significance.h), and CSV / LaTeX `tabular` / text / JSON export, each
// labelled with the data the runs used, the paper's data they stand in for and the settings that
// depart from the paper (SweepPaperLabel); plus the long-form series of CRU Fig. 3 (metric
// against filter length with error bars over seeds). The code: table.cpp (aggregation, paired
// view, a sweep's table), table_runs.cpp (budgets and what each run reached), table_format.cpp
// (the exports).
#pragma once
#include <limits>
#include <string>
#include <vector>

#include "sweep/significance.h"
#include "sweep/sweep.h"

namespace cs {

// The smallest evaluation split a table prints a cell for (in the task's units: questions,
// sentences, tokens). A cell whose runs were evaluated on fewer examples prints
// "n/a (test set N < 100)" instead of a number, is never bold and has no value in the CSV,
// LaTeX or JSON: with N < 100 an accuracy moves by at least 1 point per example, and its
// binomial standard error at 50 % is 5 points or more (sqrt(0.25 / N)), larger than every
// difference the papers' tables report (CRU Table 3: 1-2 points). The CBT-style NE set built
// from Moby-Dick (1 test question) is the case that prompted it. Runs written before their
// summary recorded the split size ("test_units" / "valid_units") are printed as before.
inline constexpr int64_t kMinTableSplitSize = 100;

// What one run of a cell reached: its size, steps and budget (the "runs" block of a table).
struct RunFacts {
  int64_t seed = 0;
  bool known = false;  // its summary.json was read
  int64_t parameters = 0;
  int64_t step = 0, cap = 0;  // steps reached; training.steps of its config (0: unknown)
  std::string end;            // "early stop" | "cap" | running | stopped | failed | pending
  double seconds = 0;         // wall-clock training time (summary elapsed)
  double flops = std::numeric_limits<double>::quiet_NaN();  // cumulative training FLOPs; NaN: not recorded
  int64_t valid_units = 0, test_units = 0;  // the evaluated splits' sizes (summary.json); 0: not recorded
};

// A compute budget at which every run is read instead of its end (`sweep table --budget`).
struct Budget {
  std::string kind;     // "" (none: the step-matched table at each run's end) | time | flops | step
  double amount = 0;    // seconds, FLOPs or steps
  bool common = false;  // "KIND=common": the largest budget every run reached (min over runs of its end)
  bool active() const { return !kind.empty(); }
  std::string describe() const;  // "equal wall-clock time: 120 s of training"
};
// "time=SECONDS" | "flops=X" | "step=N" | "KIND=common" (X may be 1e12, 3.5G, 2T). Throws
// UserError on anything else.
Budget parse_budget(const std::string& text);

// A run's valid (and, when tracked, test) evaluations with the x of each budget kind.
struct EvalAt {
  int64_t step = 0;
  double seconds = 0, flops = std::numeric_limits<double>::quiet_NaN();
  double valid = std::numeric_limits<double>::quiet_NaN();  // the selection metric (primary, valid split)
  double value = std::numeric_limits<double>::quiet_NaN();  // the table's metric at this evaluation (NaN: absent)
};
// The outcome of reading one run at a budget.
struct BudgetValue {
  bool has_value = false;
  double value = 0;
  int64_t step = 0;      // the evaluation chosen
  bool reached = false;  // the run's training went at least as far as the budget
  std::string problem;   // why there is no value ("no evaluation within the budget", ...)
};
// Model selection within the budget, as early stopping + best.pt does it: among the
// evaluations at x <= budget, the one with the best `valid`; its `value`. `evals` in step order;
// `end_x`: how far the run's training went (its last logged x). Never extrapolates: a run that
// ended before the budget is read at its end and marked not reached.
BudgetValue value_at_budget(const std::vector<EvalAt>& evals, double end_x, const Budget& b, bool lower_is_better);

struct TableCell {
  std::vector<double> values;  // one per seed that has a value
  std::vector<int64_t> seeds;
  int n = 0;
  double mean = 0, std = 0;  // std: sample (n - 1); 0 when n < 2
  bool best = false;
  bool reference = false;      // paired view: the reference column itself
  int short_of_budget = 0;     // budget view: runs among `values` that ended before the budget
  std::vector<RunFacts> runs;  // every run of the cell (size, steps, budget), seed order
  // The size of the split the table's metric reads ("test" or "valid"), the smallest over the
  // cell's runs that recorded it (0: none did). `refused`: under kMinTableSplitSize, so the
  // cell has no value (values, n, mean cleared) and prints "n/a (test set N < 100)".
  std::string split;
  int64_t split_size = 0;
  bool refused = false;
  // Paired view: the cell's comparison with its reference over the seeds both have (significance.h);
  // has_sig false for the reference itself, a refused cell and a cell without values.
  bool has_sig = false;
  Significance sig;
};

// What every export of a sweep's table or figure says about its data and the paper (SWEEP_NOTES.md
// "Labels"): the datasets the runs trained on, and for a reproduce sweep the paper's data they stand
// in for and each setting that departs from the paper.
struct SweepLabels {
  std::vector<std::string> datasets;  // dataset.name (or path) of the points, each once
  SweepPaperLabel paper;              // empty source: not a reproduction
  std::vector<std::string> excluded;  // the spec's exclude, one SweepExclusion::text() each
  bool empty() const { return datasets.empty() && !paper.present(); }
  // "data: spam-assassin, sotu (SpamAssassin ...), standing in for the paper's MR, IMDB, SUBJ (CRU, Table 2)"
  std::string data_line() const;
  // "training.lr: paper 0.0005 (MR, SUBJ), 0.001 (IMDB); ours 0.003 (reason)", one per departure
  std::vector<std::string> departure_lines() const;
  // The departed settings' names, "; "-joined ("" when none)
  std::string departure_names() const;
};
SweepLabels sweep_labels(const SweepResults& r);

struct SweepTable {
  std::string title, metric;
  bool higher_is_better = false;
  std::string row_header, col_header;  // axis names joined with " / "
  std::vector<std::string> row_labels, col_labels;
  std::vector<std::vector<TableCell>> cells;  // [row][col]
  std::vector<int64_t> seeds;                 // the sweep's seeds
  bool paired = false;
  std::string paired_reference;              // the row or column every other one is compared with
  std::string paired_axis;                   // "column" | "row"
  int missing = 0;                           // points without a value (pending, failed, stopped)
  Budget budget;                             // active: the compute-matched view
  std::string budget_note;                   // how the budget view read the runs (split used, fallbacks)
  std::vector<std::string> budget_problems;  // runs without a value at the budget, and why
  SweepLabels labels;                        // data and departures (sweep_table; empty for hand-made tables)
  // Paired view: what the p-values cover: the seeds' spread and, where both runs of every seed
  // stored their test examples (RUN_DIR/test_examples.json), the test set's own sampling error (a
  // paired bootstrap over the examples); else what they leave out, with the binomial bound for an
  // accuracy on the smallest split.
  std::string sampling_note;
};

// One record in the shape the aggregation needs (tests build these by hand).
struct TableInput {
  std::string row, col;  // labels
  int64_t seed = 0;
  double value = 0;
  bool short_of_budget = false;  // budget view: the run ended before the budget
  std::string run_dir = "";      // the run, when `value` is its final test metric (its test_examples.json
                                 // can then test a paired difference over the test set); "" otherwise
};

// Mean, sample std, best marking. `best`: column | row | all | none. Rows and
// columns appear in the order given (labels absent from the inputs stay empty).
SweepTable aggregate_table(const std::vector<TableInput>& in, const std::vector<std::string>& rows,
                           const std::vector<std::string>& cols, bool higher_is_better, const std::string& best);

// Marks the best cell(s) of each group (`best`: column | row | all | none), clearing earlier
// marks; refused cells and cells without values never compete.
void mark_best(SweepTable& t, bool higher_is_better, const std::string& best);

// Refuses every cell whose split is under `min_size` examples (TableCell::refused; in a paired
// view also every cell whose reference cell is refused), then marks the best again (`best`
// as in mark_best; the paired view marks none). `sizes[r][c]`: the split size of cell (r, c),
// 0 = unknown (never refused); `split`: "test" | "valid", for the message.
void refuse_small_cells(SweepTable& t, const std::vector<std::vector<int64_t>>& sizes, const std::string& split,
                        const std::string& best, int64_t min_size = kMinTableSplitSize);

// Paired view: each cell (r, c) holds the differences value(r, c, s) - value(r, ref, s)
// over the seeds s present in both (pairs share seed and data order, and every other
// option), or value(r, c, s) - value(ref, c, s) when `ref` is a row label. `ref` may say
// its axis ("row:L", "col:L"); a bare label that is both a row and a column is refused.
// No cell is bold; the reference column (row) is marked. Each other cell with values carries its
// paired t-test over seeds, sign test and verdict (assess_paired); with `metric` ("test bpc"), a
// cell whose every pair of runs stored test examples of that metric (TableInput::run_dir,
// RUN_DIR/test_examples.json, the same examples) is tested over them too: a paired bootstrap, the
// verdict reading the larger p. Throws UserError when `ref` is neither.
SweepTable paired_table(const std::vector<TableInput>& in, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& ref, const std::string& metric = "");

// The table of a sweep's results (rows/cols from its spec); `paired_ref` non-empty: paired view.
// Each cell's `runs` are read from the runs' summary.json / config.json (size, steps reached and
// how the run ended, wall-clock seconds, training FLOPs). `budget` active: every run is read at
// that budget from its metrics.jsonl (value_at_budget) instead of at its end. Throws UserError
// for a FLOPs budget over runs whose metrics carry no training FLOPs (written before the count
// existed), naming them: never zeros.
SweepTable sweep_table(const SweepResults& r, const std::string& paired_ref = "", const Budget& budget = {});

// The facts of one run directory (empty dir: unknown).
RunFacts read_run_facts(const std::string& run_dir, int64_t seed, const std::string& status);
// The valid/test evaluations of a run's metrics.jsonl for `split` ("valid" | "test") and `key`
// (empty: the run's primary metric). `end_seconds` / `end_flops` / `end_step` receive how far
// its training went. `has_flops`: false when some line lacks train_flops (an older file).
std::vector<EvalAt> read_evals(const std::string& run_dir, const std::string& split, const std::string& key,
                               double* end_seconds, double* end_flops, int64_t* end_step, bool* has_flops);

// Long form for a figure (CRU Fig. 3): one line per (series, x) with mean, std, n;
// `x_axis` must be an axis of the grid; the series are the other axes' labels.
struct SeriesPoint {
  std::string series, x;
  double mean = 0, std = 0;
  int n = 0;
};
std::vector<SeriesPoint> sweep_series(const SweepResults& r, const std::string& x_axis);

// The paired view's note on what its p-values leave out, for metric `metric` and the smallest
// known split size `n` (0: unknown): the test set's sampling error, with the binomial bound
// sqrt(0.25 / n) for an accuracy.
std::string sampling_error_note(const std::string& metric, int64_t n);
// The paired view's note when every comparison was tested over its test examples too.
std::string examples_note(const std::string& metric);

// Formatting: numbers with `digits` decimals (-1: 3 below 10, 2 below 100, 1 otherwise).
std::string format_cell(const TableCell& c, int digits = -1, bool with_n = false);
std::string table_to_text(const SweepTable& t);
// row, col, mean, std, n, best, values, ..., the paired test and verdict, the labels (one line per cell)
std::string table_to_csv(const SweepTable& t);
std::string table_to_latex(const SweepTable& t);  // \begin{tabular}...\end{tabular}
json table_to_json(const SweepTable& t);
// `labels` non-empty: columns dataset, stands_in_for, departures on every line.
std::string series_to_csv(const std::vector<SeriesPoint>& s, const std::string& x_name, const SweepLabels& labels = {});
std::string latex_escape(const std::string& s);

}  // namespace cs
