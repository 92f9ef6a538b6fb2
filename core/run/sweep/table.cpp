#include "sweep/table.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "util/error.h"

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

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string o;
  for (size_t i = 0; i < v.size(); ++i) o += (i ? sep : "") + v[i];
  return o;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string num(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

int auto_digits(const SweepTable& t) {
  double m = 0;
  for (auto& row : t.cells)
    for (auto& c : row)
      if (c.n) m = std::max(m, std::fabs(c.mean));
  return m < 10 ? 3 : m < 100 ? 2 : 1;
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
  }
  for (auto& row : t.cells)
    for (auto& c : row) finish_cell(c);
  // Best: the best mean within each group (ties all bold). Compared at full precision.
  auto better = [&](double a, double b) { return higher ? a > b : a < b; };
  auto mark = [&](std::vector<TableCell*> group) {
    TableCell* b = nullptr;
    for (auto* c : group)
      if (c->n && (!b || better(c->mean, b->mean))) b = c;
    if (!b) return;
    for (auto* c : group)
      if (c->n && c->mean == b->mean) c->best = true;
  };
  const size_t R = rows.size(), C = cols.size();
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
  return t;
}

SweepTable paired_table(const std::vector<TableInput>& in, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& ref) {
  if (std::find(cols.begin(), cols.end(), ref) == cols.end())
    throw UserError("paired: '" + ref + "' is not a column of the table (columns: " + join(cols, ", ") + ")");
  // value at (row, ref, seed)
  std::map<std::pair<std::string, int64_t>, double> refv;
  for (auto& x : in)
    if (x.col == ref && std::isfinite(x.value)) refv[{x.row, x.seed}] = x.value;
  std::vector<TableInput> diffs;
  for (auto& x : in) {
    auto it = refv.find({x.row, x.seed});
    if (it == refv.end() || !std::isfinite(x.value)) continue;  // unpaired: left out
    diffs.push_back({x.row, x.col, x.seed, x.value - it->second});
  }
  SweepTable t = aggregate_table(diffs, rows, cols, false, "none");
  t.paired = true;
  t.paired_reference = ref;
  const size_t rc = static_cast<size_t>(std::find(cols.begin(), cols.end(), ref) - cols.begin());
  for (auto& row : t.cells) row[rc].reference = true;
  return t;
}

namespace {

// Row / column label of a record: its labels on the given axes joined with " / ".
std::string label_on(const SweepResults& r, const SweepRunRecord& rec, const std::vector<std::string>& axes) {
  std::vector<std::string> parts;
  for (auto& a : axes)
    for (size_t i = 0; i < r.spec.axes.size(); ++i)
      if (r.spec.axes[i].name == a) parts.push_back(rec.point.labels[i]);
  return parts.empty() ? r.metric_label : join(parts, " / ");
}

// Every combination of the axes' labels, in grid order.
std::vector<std::string> labels_of(const SweepResults& r, const std::vector<std::string>& axes) {
  std::vector<std::string> out;
  for (auto& rec : r.records) {
    std::string l = label_on(r, rec, axes);
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  }
  return out;
}

}  // namespace

SweepTable sweep_table(const SweepResults& r, const std::string& paired_ref) {
  const auto& rows_axes = r.spec.table.rows;
  const auto& cols_axes = r.spec.table.cols;
  std::vector<TableInput> in;
  int missing = 0;
  for (auto& rec : r.records) {
    if (!rec.has_value) {
      ++missing;
      continue;
    }
    in.push_back({label_on(r, rec, rows_axes), label_on(r, rec, cols_axes), rec.point.seed, rec.value});
  }
  const auto rows = labels_of(r, rows_axes), cols = labels_of(r, cols_axes);
  SweepTable t = paired_ref.empty() ? aggregate_table(in, rows, cols, r.higher_is_better, r.spec.table.best)
                                    : paired_table(in, rows, cols, paired_ref);
  t.higher_is_better = r.higher_is_better;
  t.title = r.spec.name;
  t.metric = r.metric_label;
  t.row_header = rows_axes.empty() ? "" : join(rows_axes, " / ");
  t.col_header = cols_axes.empty() ? "" : join(cols_axes, " / ");
  t.seeds = r.spec.seeds;
  t.missing = missing;
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
    if (rec.has_value) in.push_back({others.empty() ? r.metric_label : label_on(r, rec, others), label_on(r, rec, {x_axis}), rec.point.seed, rec.value});
  const auto series = others.empty() ? std::vector<std::string>{r.metric_label} : labels_of(r, others);
  const auto xs = labels_of(r, {x_axis});
  SweepTable t = aggregate_table(in, series, xs, r.higher_is_better, "none");
  std::vector<SeriesPoint> out;
  for (size_t s = 0; s < series.size(); ++s)
    for (size_t x = 0; x < xs.size(); ++x) {
      const auto& c = t.cells[s][x];
      if (c.n) out.push_back({series[s], xs[x], c.mean, c.std, c.n});
    }
  return out;
}

std::string format_cell(const TableCell& c, int digits, bool with_n) {
  if (c.n == 0) return "-";
  if (digits < 0) digits = std::fabs(c.mean) < 10 ? 3 : std::fabs(c.mean) < 100 ? 2 : 1;
  std::string s = num(c.mean, digits);
  if (c.n > 1) s += " +- " + num(c.std, digits);
  if (with_n) s += " (n=" + std::to_string(c.n) + ")";
  return s;
}

std::string table_to_text(const SweepTable& t) {
  const int d = auto_digits(t);
  std::vector<std::vector<std::string>> grid;
  grid.push_back({t.row_header.empty() ? "" : t.row_header});
  for (auto& c : t.col_labels) grid[0].push_back(c);
  for (size_t r = 0; r < t.row_labels.size(); ++r) {
    std::vector<std::string> line{t.row_labels[r]};
    for (auto& c : t.cells[r]) {
      std::string s = c.reference ? "(ref)" : format_cell(c, d);
      if (c.best) s = "*" + s + "*";
      line.push_back(s);
    }
    grid.push_back(line);
  }
  std::vector<size_t> w(grid[0].size(), 0);
  for (auto& l : grid)
    for (size_t i = 0; i < l.size(); ++i) w[i] = std::max(w[i], l[i].size());
  std::ostringstream o;
  o << t.title << ": " << (t.paired ? "paired difference vs '" + t.paired_reference + "' of " : std::string()) << t.metric
    << " (" << (t.higher_is_better ? "higher" : "lower") << " is better), mean +- std over seeds";
  o << " {";
  for (size_t i = 0; i < t.seeds.size(); ++i) o << (i ? "," : "") << t.seeds[i];
  o << "}" << (t.col_header.empty() ? "" : "; columns: " + t.col_header) << (t.paired ? "" : "; *best*") << "\n";
  for (size_t li = 0; li < grid.size(); ++li) {
    for (size_t i = 0; i < grid[li].size(); ++i) o << std::left << std::setw(static_cast<int>(w[i]) + 2) << grid[li][i];
    o << "\n";
  }
  if (t.missing) o << "(" << t.missing << " run(s) without a value: pending, stopped or failed)\n";
  return o.str();
}

std::string table_to_csv(const SweepTable& t) {
  std::ostringstream o;
  o << csv_field(t.row_header.empty() ? "row" : t.row_header) << "," << csv_field(t.col_header.empty() ? "column" : t.col_header)
    << ",mean,std,n,best,seeds,values\n";
  o << std::setprecision(10);
  for (size_t r = 0; r < t.row_labels.size(); ++r)
    for (size_t c = 0; c < t.col_labels.size(); ++c) {
      const auto& x = t.cells[r][c];
      std::string seeds, vals;
      for (size_t i = 0; i < x.values.size(); ++i) {
        std::ostringstream v;
        v << std::setprecision(10) << x.values[i];
        seeds += (i ? " " : "") + std::to_string(x.seeds[i]);
        vals += (i ? " " : "") + v.str();
      }
      o << csv_field(t.row_labels[r]) << "," << csv_field(t.col_labels[c]) << ",";
      if (x.n) o << x.mean << "," << (x.n > 1 ? x.std : 0.0);
      else o << ",";
      o << "," << x.n << "," << (x.best ? 1 : 0) << "," << seeds << "," << vals << "\n";
    }
  return o.str();
}

std::string latex_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '_': case '%': case '&': case '#': case '$': case '{': case '}': o += '\\'; o += c; break;
      case '\\': o += "\\textbackslash{}"; break;
      case '~': o += "\\textasciitilde{}"; break;
      case '^': o += "\\textasciicircum{}"; break;
      default: o += c;
    }
  }
  return o;
}

std::string table_to_latex(const SweepTable& t) {
  const int d = auto_digits(t);
  std::ostringstream o;
  o << "% " << latex_escape(t.title) << ": " << (t.paired ? "paired difference vs " + latex_escape(t.paired_reference) + " of " : std::string())
    << latex_escape(t.metric) << ", mean $\\pm$ std over seeds {";
  for (size_t i = 0; i < t.seeds.size(); ++i) o << (i ? "," : "") << t.seeds[i];
  o << "}; " << (t.higher_is_better ? "higher" : "lower") << " is better" << (t.paired ? "" : "; best in bold") << "\n";
  o << "\\begin{tabular}{l" << std::string(t.col_labels.size(), 'c') << "}\n\\hline\n";
  o << latex_escape(t.row_header);
  for (auto& c : t.col_labels) o << " & " << latex_escape(c);
  o << " \\\\\n\\hline\n";
  for (size_t r = 0; r < t.row_labels.size(); ++r) {
    o << latex_escape(t.row_labels[r]);
    for (auto& c : t.cells[r]) {
      std::string s;
      if (c.reference) s = "(ref.)";
      else if (c.n == 0) s = "--";
      else {
        s = num(c.mean, d);
        if (c.n > 1) s += " \\pm " + num(c.std, d);
        s = c.best ? "$\\mathbf{" + s + "}$" : "$" + s + "$";
      }
      o << " & " << s;
    }
    o << " \\\\\n";
  }
  o << "\\hline\n\\end{tabular}\n";
  return o.str();
}

json table_to_json(const SweepTable& t) {
  json cells = json::array();
  for (size_t r = 0; r < t.row_labels.size(); ++r)
    for (size_t c = 0; c < t.col_labels.size(); ++c) {
      const auto& x = t.cells[r][c];
      cells.push_back({{"row", t.row_labels[r]}, {"col", t.col_labels[c]}, {"n", x.n}, {"mean", x.n ? json(x.mean) : json()},
                       {"std", x.n > 1 ? json(x.std) : json()}, {"best", x.best}, {"values", x.values}, {"seeds", x.seeds}});
    }
  return {{"title", t.title}, {"metric", t.metric}, {"higher_is_better", t.higher_is_better}, {"rows", t.row_labels},
          {"cols", t.col_labels}, {"row_header", t.row_header}, {"col_header", t.col_header}, {"seeds", t.seeds},
          {"paired", t.paired}, {"paired_reference", t.paired_reference}, {"missing", t.missing}, {"cells", cells}};
}

std::string series_to_csv(const std::vector<SeriesPoint>& s, const std::string& x_name) {
  std::ostringstream o;
  o << "series," << csv_field(x_name) << ",mean,std,n\n" << std::setprecision(10);
  for (auto& p : s) o << csv_field(p.series) << "," << csv_field(p.x) << "," << p.mean << "," << p.std << "," << p.n << "\n";
  return o.str();
}

}  // namespace cs
