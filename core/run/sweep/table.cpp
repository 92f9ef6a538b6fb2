// Tables from a sweep: aggregation over seeds, best marking, refusal of cells on too small a
// split, the paired view with each comparison's tests, a sweep's table and series, and the labels
// every export prints (table.h). Budgets and runs: table_runs.cpp; exports: table_format.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "sweep/table.h"
#include "sweep/significance.h"
#include "sweep/table_internal.h"
#include "train/test_examples.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace {

void finish_cell(TableCell& c) {
  c.n = static_cast<int>(c.values.size());
  if (c.n == 0) return;
  double s = 0;
  for (double v : c.values) s += v;
  c.mean = s / c.n;
  double ss = 0;
  for (double v : c.values) ss += (v - c.mean) * (v - c.mean);
  c.std = c.n > 1 ? std::sqrt(ss / (c.n - 1)) : 0.0;
}

}  // namespace

SweepTable aggregate_table(const std::vector<TableInput>& in, const std::vector<std::string>& rows,
                           const std::vector<std::string>& cols, bool higher, const std::string& best) {
  SweepTable t;
  t.row_labels = rows;
  t.col_labels = cols;
  t.higher_is_better = higher;
  t.cells.assign(rows.size(), std::vector<TableCell>(cols.size()));
  std::map<std::string, size_t> ri, ci;
  for (size_t i = 0; i < rows.size(); ++i) ri[rows[i]] = i;
  for (size_t i = 0; i < cols.size(); ++i) ci[cols[i]] = i;
  for (auto& x : in) {
    auto r = ri.find(x.row), c = ci.find(x.col);
    if (r == ri.end() || c == ci.end()) continue;
    if (!std::isfinite(x.value)) continue;
    auto& cell = t.cells[r->second][c->second];
    cell.values.push_back(x.value);
    cell.seeds.push_back(x.seed);
    cell.short_of_budget += x.short_of_budget ? 1 : 0;
  }
  for (auto& row : t.cells)
    for (auto& c : row) finish_cell(c);
  mark_best(t, higher, best);
  return t;
}

void mark_best(SweepTable& t, bool higher, const std::string& best) {
  for (auto& row : t.cells)
    for (auto& c : row) c.best = false;
  // Best: the best mean within each group (ties all bold). Compared at full precision.
  auto better = [&](double a, double b) { return higher ? a > b : a < b; };
  auto mark = [&](std::vector<TableCell*> group) {
    TableCell* b = nullptr;
    for (auto* c : group)
      if (c->n && !c->refused && (!b || better(c->mean, b->mean))) b = c;
    if (!b) return;
    for (auto* c : group)
      if (c->n && !c->refused && c->mean == b->mean) c->best = true;
  };
  const size_t R = t.row_labels.size(), C = t.col_labels.size();
  if (best == "column") {
    for (size_t c = 0; c < C; ++c) {
      std::vector<TableCell*> g;
      for (size_t r = 0; r < R; ++r) g.push_back(&t.cells[r][c]);
      mark(g);
    }
  } else if (best == "row") {
    for (size_t r = 0; r < R; ++r) {
      std::vector<TableCell*> g;
      for (size_t c = 0; c < C; ++c) g.push_back(&t.cells[r][c]);
      mark(g);
    }
  } else if (best == "all") {
    std::vector<TableCell*> g;
    for (auto& row : t.cells)
      for (auto& c : row) g.push_back(&c);
    mark(g);
  }
}

void refuse_small_cells(SweepTable& t, const std::vector<std::vector<int64_t>>& sizes, const std::string& split,
                        const std::string& best, int64_t min_size) {
  auto small = [&](size_t r, size_t c) {
    const int64_t n = r < sizes.size() && c < sizes[r].size() ? sizes[r][c] : 0;
    return n > 0 && n < min_size;
  };
  size_t ref_r = t.row_labels.size(), ref_c = t.col_labels.size();
  if (t.paired) {
    auto& labels = t.paired_axis == "row" ? t.row_labels : t.col_labels;
    const size_t i = static_cast<size_t>(std::find(labels.begin(), labels.end(), t.paired_reference) - labels.begin());
    (t.paired_axis == "row" ? ref_r : ref_c) = i;
  }
  for (size_t r = 0; r < t.cells.size(); ++r)
    for (size_t c = 0; c < t.cells[r].size(); ++c) {
      TableCell& x = t.cells[r][c];
      x.split = split;
      x.split_size = r < sizes.size() && c < sizes[r].size() ? sizes[r][c] : 0;
      // a paired difference needs both its cell and its reference cell
      const size_t rr = ref_r < t.row_labels.size() ? ref_r : r, rc = ref_c < t.col_labels.size() ? ref_c : c;
      if (!small(r, c) && !(t.paired && small(rr, rc))) continue;
      if (small(rr, rc) && !small(r, c)) x.split_size = sizes[rr][rc];
      x.refused = true;
      x.values.clear();
      x.seeds.clear();
      x.n = 0;
      x.mean = x.std = 0;
      x.best = false;
      x.has_sig = false;
      x.sig = Significance{};
    }
  mark_best(t, t.higher_is_better, t.paired ? "none" : best);
}

namespace {

// The per-example test of a paired cell: its pairs of runs (one per seed), each with test examples
// of `metric` ("test bpc" -> "bpc"), the same count in every run; NaN p when any is missing.
struct ExampleTest {
  double p = std::numeric_limits<double>::quiet_NaN();
  std::string how;
};
ExampleTest example_test(const std::vector<std::pair<std::string, std::string>>& runs, const std::string& metric) {
  ExampleTest out;
  if (runs.empty() || metric.rfind("test ", 0) != 0) return out;
  std::string name = metric.substr(5);
  name = name.substr(0, name.find(' '));  // "test bleu (beam 5, lp 1.0)": the metric's name, not its decode
  // the mean-type metrics' per-example scores, or (BLEU) the pairs' statistics
  std::vector<std::vector<double>> a, b;
  std::vector<std::vector<std::vector<int64_t>>> ba, bb;
  const bool bleu = name == "bleu";
  std::string unit;
  size_t count = 0;
  for (const auto& [x, ref] : runs) {
    if (x.empty() || ref.empty()) return out;
    const auto ex = read_test_examples(x), er = read_test_examples(ref);
    if (!ex || !er || ex->count() != er->count() || (count != 0 && ex->count() != count)) return out;
    count = ex->count();
    unit = ex->unit;
    if (bleu) {
      if (ex->metric != "bleu" || er->metric != "bleu") return out;
      ba.push_back(ex->bleu);
      bb.push_back(er->bleu);
      continue;
    }
    auto sa = ex->mean_scores(name), sb = er->mean_scores(name);
    if (!sa || !sb) return out;
    a.push_back(std::move(*sa));
    b.push_back(std::move(*sb));
  }
  BootstrapTest bt;
  if (bleu) {
    // corpus BLEU of each resample from its pairs' summed statistics (Koehn 2004)
    bt = paired_bootstrap_corpus(
        static_cast<int>(count), static_cast<int>(ba.size()), [&](int s, bool sys_a, const std::vector<int>* w) {
          return bleu_of_rows(sys_a ? ba[static_cast<size_t>(s)] : bb[static_cast<size_t>(s)], w);
        });
  } else {
    bt = paired_bootstrap(a, b);
  }
  out.p = bt.p;
  out.how = "a paired bootstrap over " + std::to_string(count) + " test " + unit + "s (" +
            std::to_string(kBootstrapResamples) + " resamples" + (bleu ? ", corpus BLEU of each" : "") + ")";
  return out;
}

}  // namespace

SweepTable paired_table(const std::vector<TableInput>& in, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& ref_in, const std::string& metric) {
  // "row:L" / "col:L" name the axis; a bare label is whichever of the two it is (a label that
  // is both must say which).
  std::string ref = ref_in;
  std::string axis;
  if (ref.rfind("row:", 0) == 0) axis = "row", ref = ref.substr(4);
  else if (ref.rfind("col:", 0) == 0) axis = "column", ref = ref.substr(4);
  const bool is_col = std::find(cols.begin(), cols.end(), ref) != cols.end();
  const bool is_row = std::find(rows.begin(), rows.end(), ref) != rows.end();
  if (axis.empty()) {
    if (is_col && is_row)
      throw UserError("paired: '" + ref + "' is both a row and a column label; say which: row:" + ref +
                      " or col:" + ref);
    axis = is_row ? "row" : "column";
  }
  if (axis == "column" && !is_col)
    throw UserError("paired: '" + ref + "' is not a column of the table (columns: " + join(cols, ", ") +
                    "; rows: " + join(rows, ", ") + ")");
  if (axis == "row" && !is_row)
    throw UserError("paired: '" + ref + "' is not a row of the table (rows: " + join(rows, ", ") + ")");
  const bool by_row = axis == "row";
  // the reference record of x: same seed, same other label, `ref` on the paired axis
  auto other = [&](const TableInput& x) -> const std::string& { return by_row ? x.col : x.row; };
  auto on_ref = [&](const TableInput& x) { return (by_row ? x.row : x.col) == ref; };
  std::map<std::pair<std::string, int64_t>, const TableInput*> refv;
  for (auto& x : in)
    if (on_ref(x) && std::isfinite(x.value)) refv[{other(x), x.seed}] = &x;
  std::vector<TableInput> diffs;
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::string, std::string>>> runs;
  for (auto& x : in) {
    auto it = refv.find({other(x), x.seed});
    if (it == refv.end() || !std::isfinite(x.value)) continue;  // unpaired: left out
    // a difference is short of the budget when either of its runs is
    diffs.push_back(
        {x.row, x.col, x.seed, x.value - it->second->value, x.short_of_budget || it->second->short_of_budget, ""});
    runs[{x.row, x.col}].push_back({x.run_dir, it->second->run_dir});
  }
  SweepTable t = aggregate_table(diffs, rows, cols, false, "none");
  t.paired = true;
  t.paired_reference = ref;
  t.paired_axis = axis;
  if (by_row) {
    const size_t rr = static_cast<size_t>(std::find(rows.begin(), rows.end(), ref) - rows.begin());
    for (auto& c : t.cells[rr]) c.reference = true;
  } else {
    const size_t rc = static_cast<size_t>(std::find(cols.begin(), cols.end(), ref) - cols.begin());
    for (auto& row : t.cells) row[rc].reference = true;
  }
  // each comparison's tests over its paired seeds, and over the test examples where every pair of
  // runs stored them (significance.h)
  for (size_t r = 0; r < t.cells.size(); ++r)
    for (size_t c = 0; c < t.cells[r].size(); ++c) {
      TableCell& x = t.cells[r][c];
      if (x.reference || x.n == 0) continue;
      const auto pr = runs.find({rows[r], cols[c]});
      const ExampleTest e = pr == runs.end() || metric.empty() ? ExampleTest{} : example_test(pr->second, metric);
      x.has_sig = true;
      x.sig = assess_paired(x.values, e.p, e.how);
    }
  return t;
}

namespace table_internal {

std::string label_on(const SweepResults& r, const SweepRunRecord& rec, const std::vector<std::string>& axes,
                     const std::string& metric) {
  std::vector<std::string> parts;
  for (auto& a : axes)
    for (size_t i = 0; i < r.spec.axes.size(); ++i)
      if (r.spec.axes[i].name == a) parts.push_back(rec.point.labels[i]);
  return parts.empty() ? metric : join(parts, " / ");
}

std::vector<std::string> labels_of(const SweepResults& r, const std::vector<std::string>& axes,
                                   const std::string& metric) {
  std::vector<std::string> out;
  for (auto& rec : r.records) {
    std::string l = table_internal::label_on(r, rec, axes, metric);
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  }
  return out;
}

}  // namespace table_internal

namespace {

// Each cell's runs (size, steps, budget: read_run_facts) and the size of the split the metric
// reads, the smallest over the cell's runs that recorded it; cells under the minimum are refused.
void attach_runs(const SweepResults& r, SweepTable& t, const std::vector<std::string>& rows,
                 const std::vector<std::string>& cols) {
  std::map<std::string, size_t> ri, ci;
  for (size_t i = 0; i < rows.size(); ++i) ri[rows[i]] = i;
  for (size_t i = 0; i < cols.size(); ++i) ci[cols[i]] = i;
  for (auto& rec : r.records) {
    auto a = ri.find(table_internal::label_on(r, rec, r.spec.table.rows, t.metric));
    auto b = ci.find(table_internal::label_on(r, rec, r.spec.table.cols, t.metric));
    if (a == ri.end() || b == ci.end()) continue;
    t.cells[a->second][b->second].runs.push_back(read_run_facts(rec.state.run_dir, rec.point.seed, rec.state.status));
  }
  const std::string split = t.metric.rfind("valid", 0) == 0 ? "valid" : "test";
  std::vector<std::vector<int64_t>> sizes(rows.size(), std::vector<int64_t>(cols.size(), 0));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < cols.size(); ++j)
      for (auto& f : t.cells[i][j].runs) {
        const int64_t n = split == "valid" ? f.valid_units : f.test_units;
        if (n > 0) sizes[i][j] = sizes[i][j] > 0 ? std::min(sizes[i][j], n) : n;
      }
  refuse_small_cells(t, sizes, split, r.spec.table.best);
}

}  // namespace

SweepTable sweep_table(const SweepResults& r, const std::string& paired_ref, const Budget& budget_in) {
  const auto& rows_axes = r.spec.table.rows;
  const auto& cols_axes = r.spec.table.cols;
  std::vector<TableInput> in;
  int missing = 0;
  Budget budget = budget_in;
  std::string note, metric_label = r.metric_label;
  std::vector<std::string> problems;
  if (!budget.active()) {
    for (auto& rec : r.records) {
      if (!rec.has_value) {
        ++missing;
        continue;
      }
      // a test metric: the final test evaluation's (summary.json's, or the last test line's key, which
      // is the final evaluation's), whose stored examples can test a difference where they hold that
      // metric (example_test matches it by name: seq2seq's files hold bleu and rouge*, the LMs' their
      // primary metric)
      const bool final_test = metric_label.rfind("test ", 0) == 0;
      in.push_back({table_internal::label_on(r, rec, rows_axes, metric_label),
                    table_internal::label_on(r, rec, cols_axes, metric_label), rec.point.seed, rec.value, false,
                    final_test ? rec.state.run_dir : ""});
    }
  } else {
    in = table_internal::budget_inputs(r, budget, metric_label, note, problems, missing);
  }
  const auto rows = table_internal::labels_of(r, rows_axes, metric_label),
             cols = table_internal::labels_of(r, cols_axes, metric_label);
  SweepTable t = paired_ref.empty() ? aggregate_table(in, rows, cols, r.higher_is_better, r.spec.table.best)
                                    : paired_table(in, rows, cols, paired_ref, metric_label);
  t.higher_is_better = r.higher_is_better;
  t.title = r.spec.name;
  t.metric = metric_label;
  t.row_header = rows_axes.empty() ? "" : join(rows_axes, " / ");
  t.col_header = cols_axes.empty() ? "" : join(cols_axes, " / ");
  t.seeds = r.spec.seeds;
  t.missing = missing;
  t.budget = budget;
  t.budget_note = note;
  t.budget_problems = problems;
  t.labels = sweep_labels(r);
  attach_runs(r, t, rows, cols);
  if (t.paired) {
    int64_t smallest = 0;
    for (auto& row : t.cells)
      for (auto& c : row)
        if (c.split_size > 0) smallest = smallest > 0 ? std::min(smallest, c.split_size) : c.split_size;
    int with = 0, without = 0;
    for (auto& row : t.cells)
      for (auto& c : row)
        if (c.has_sig) ++(std::isnan(c.sig.p_examples) ? without : with);
    t.sampling_note = with > 0 && without == 0 ? examples_note(t.metric)
                                               : sampling_error_note(t.metric, smallest) +
                                                     (with > 0 ? "; " + std::to_string(with) +
                                                                     " of the comparisons are tested over their test "
                                                                     "examples too (their test column says so)"
                                                               : "");
  }
  return t;
}

std::vector<SeriesPoint> sweep_series(const SweepResults& r, const std::string& x_axis) {
  bool found = false;
  std::vector<std::string> others;
  for (auto& a : r.spec.axes) {
    if (a.name == x_axis) found = true;
    else others.push_back(a.name);
  }
  if (!found) throw UserError("series: '" + x_axis + "' is not an axis of the sweep");
  std::vector<TableInput> in;
  for (auto& rec : r.records)
    if (rec.has_value)
      in.push_back({table_internal::label_on(r, rec, others, r.metric_label),
                    table_internal::label_on(r, rec, {x_axis}, r.metric_label), rec.point.seed, rec.value});
  const auto series =
      others.empty() ? std::vector<std::string>{r.metric_label} : table_internal::labels_of(r, others, r.metric_label);
  const auto xs = table_internal::labels_of(r, {x_axis}, r.metric_label);
  SweepTable t = aggregate_table(in, series, xs, r.higher_is_better, "none");
  std::vector<SeriesPoint> out;
  for (size_t s = 0; s < series.size(); ++s)
    for (size_t x = 0; x < xs.size(); ++x) {
      const auto& c = t.cells[s][x];
      if (c.n) out.push_back({series[s], xs[x], c.mean, c.std, c.n});
    }
  return out;
}

// ------------------------------------------------------------------ labels

SweepLabels sweep_labels(const SweepResults& r) {
  SweepLabels l;
  l.datasets = sweep_datasets(r.spec);
  l.paper = r.spec.paper;
  for (auto& x : r.spec.exclude) l.excluded.push_back(x.text());
  return l;
}

std::string SweepLabels::data_line() const {
  if (empty()) return "";
  std::string s = "data: " + (datasets.empty() ? std::string("(not named by the spec)") : join(datasets, ", "));
  if (paper.present())
    s += " (" + paper.dataset_used + "), standing in for the paper's " + paper.dataset + " (" + paper.source + ")";
  return s;
}

std::vector<std::string> SweepLabels::departure_lines() const {
  std::vector<std::string> out;
  for (auto& d : paper.departures)
    out.push_back(d.setting + ": paper " + d.paper + "; ours " + d.ours + " (" + d.reason + ")");
  return out;
}

std::string SweepLabels::departure_names() const {
  std::vector<std::string> names;
  for (auto& d : paper.departures) names.push_back(d.setting);
  return join(names, "; ");
}

std::string examples_note(const std::string& metric) {
  return "p is the larger of the seeds' paired t-test p and a paired bootstrap over the test examples (every run's "
         "test_examples.json): a difference holds only when it exceeds both the seed-to-seed spread and the test "
         "set's own sampling error" +
         std::string(metric.find("bpc") != std::string::npos || metric.find("ppl") != std::string::npos
                         ? " (LMs: each example's loss per unit, normalised by the split's mean units per example)"
                     : metric.find("bleu") != std::string::npos
                         ? " (BLEU, a corpus statistic: Koehn's paired bootstrap resampling, each resample's BLEU from "
                           "its sentence pairs' summed n-gram statistics)"
                         : "");
}

std::string sampling_error_note(const std::string& metric, int64_t n) {
  std::string s =
      "p covers the seeds' spread only: runs store no per-example test results, so the test set's own sampling "
      "error is not in it";
  if (metric.find("acc") != std::string::npos && n > 0) {
    const double se = 100.0 * std::sqrt(0.25 / static_cast<double>(n));
    s += " (the binomial standard error of one model's accuracy on " + std::to_string(n) +
         " test examples is up to sqrt(0.25 / " + std::to_string(n) + ") = " + table_internal::fixed_num(se, 1) +
         " points)";
  }
  if (metric.find("bleu") != std::string::npos || metric.find("rouge") != std::string::npos)
    s += "; `cellscope-cli decode RUN --test-examples` stores them for a finished seq2seq run";
  return s;
}

}  // namespace cs
