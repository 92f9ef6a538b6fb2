// Tables from a sweep: the papers' result tables rebuilt from runs —
// MZU Table 3 (zones x composition), MZU Table 4 (ablation x depth), CRU Table 2
// (variants x datasets), MC-RNN Table 2/4 (MC-RNN-2/3/4) — as mean +- sample std
// over seeds with the best cell(s) marked, a paired-difference view, and CSV /
// LaTeX `tabular` / text / JSON export; plus the long-form series of CRU Fig. 3
// (metric against filter length with error bars over seeds).
#pragma once
#include <string>
#include <vector>

#include "sweep/sweep.h"

namespace cs {

struct TableCell {
  std::vector<double> values;  // one per seed that has a value
  std::vector<int64_t> seeds;
  int n = 0;
  double mean = 0, std = 0;  // std: sample (n - 1); 0 when n < 2
  bool best = false;
  bool reference = false;    // paired view: the reference column itself
};

struct SweepTable {
  std::string title, metric;
  bool higher_is_better = false;
  std::string row_header, col_header;  // axis names joined with " / "
  std::vector<std::string> row_labels, col_labels;
  std::vector<std::vector<TableCell>> cells;  // [row][col]
  std::vector<int64_t> seeds;                 // the sweep's seeds
  bool paired = false;
  std::string paired_reference;  // the column every other column is compared with
  int missing = 0;               // points without a value (pending, failed, stopped)
};

// One record in the shape the aggregation needs (tests build these by hand).
struct TableInput {
  std::string row, col;  // labels
  int64_t seed = 0;
  double value = 0;
};

// Mean, sample std, best marking. `best`: column | row | all | none. Rows and
// columns appear in the order given (labels absent from the inputs stay empty).
SweepTable aggregate_table(const std::vector<TableInput>& in, const std::vector<std::string>& rows,
                           const std::vector<std::string>& cols, bool higher_is_better, const std::string& best);

// Paired view: each cell (r, c) holds the differences value(r, c, s) - value(r, ref, s)
// over the seeds s present in both (pairs share seed and data order, and every other
// option). No cell is bold; the reference column is marked. Throws UserError when `ref`
// is not a column label.
SweepTable paired_table(const std::vector<TableInput>& in, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& ref);

// The table of a sweep's results (rows/cols from its spec); `paired_ref` non-empty: paired view.
SweepTable sweep_table(const SweepResults& r, const std::string& paired_ref = "");

// Long form for a figure (CRU Fig. 3): one line per (series, x) with mean, std, n;
// `x_axis` must be an axis of the grid; the series are the other axes' labels.
struct SeriesPoint {
  std::string series, x;
  double mean = 0, std = 0;
  int n = 0;
};
std::vector<SeriesPoint> sweep_series(const SweepResults& r, const std::string& x_axis);

// Formatting: numbers with `digits` decimals (-1: 3 below 10, 2 below 100, 1 otherwise).
std::string format_cell(const TableCell& c, int digits = -1, bool with_n = false);
std::string table_to_text(const SweepTable& t);
std::string table_to_csv(const SweepTable& t);  // row, col, mean, std, n, best, values (one line per cell)
std::string table_to_latex(const SweepTable& t);  // \begin{tabular}...\end{tabular}
json table_to_json(const SweepTable& t);
std::string series_to_csv(const std::vector<SeriesPoint>& s, const std::string& x_name);
std::string latex_escape(const std::string& s);

}  // namespace cs
