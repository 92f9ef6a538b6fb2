#include "sweep/table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "config/json.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "util/csv.h"
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
    }
  mark_best(t, t.higher_is_better, t.paired ? "none" : best);
}

SweepTable paired_table(const std::vector<TableInput>& in, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& ref_in) {
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
  for (auto& x : in) {
    auto it = refv.find({other(x), x.seed});
    if (it == refv.end() || !std::isfinite(x.value)) continue;  // unpaired: left out
    // a difference is short of the budget when either of its runs is
    diffs.push_back(
        {x.row, x.col, x.seed, x.value - it->second->value, x.short_of_budget || it->second->short_of_budget});
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
  return t;
}

namespace {

// Row / column label of a record: its labels on the given axes joined with " / "; with no axes,
// the one column (or row) is named after the metric the table shows (`metric`, which a budget
// view may have changed from test to valid).
std::string label_on(const SweepResults& r, const SweepRunRecord& rec, const std::vector<std::string>& axes,
                     const std::string& metric) {
  std::vector<std::string> parts;
  for (auto& a : axes)
    for (size_t i = 0; i < r.spec.axes.size(); ++i)
      if (r.spec.axes[i].name == a) parts.push_back(rec.point.labels[i]);
  return parts.empty() ? metric : join(parts, " / ");
}

// Every combination of the axes' labels, in grid order.
std::vector<std::string> labels_of(const SweepResults& r, const std::vector<std::string>& axes,
                                   const std::string& metric) {
  std::vector<std::string> out;
  for (auto& rec : r.records) {
    std::string l = label_on(r, rec, axes, metric);
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  }
  return out;
}

}  // namespace

// ------------------------------------------------------------------ budgets
namespace {

std::string lower_case(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string short_num(double v) {
  if (!std::isfinite(v)) return "-";
  std::ostringstream o;
  o << std::setprecision(3) << v;
  return o.str();
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(s < 10 ? 1 : 0) << s << " s";
  return o.str();
}

}  // namespace

std::string Budget::describe() const {
  if (!active()) return "";
  const std::string amt = kind == "time"    ? seconds_text(amount)
                          : kind == "flops" ? short_num(amount)
                                            : std::to_string(static_cast<int64_t>(amount));
  const std::string what = kind == "time"    ? "equal wall-clock time: " + amt + " of training"
                           : kind == "flops" ? "equal training FLOPs: " + amt
                                             : "equal steps: " + amt;
  return what + (common ? " (the largest budget every run reached)" : "");
}

Budget parse_budget(const std::string& text) {
  const auto eq = text.find('=');
  const std::string usage =
      "--budget: expected time=SECONDS, flops=X (e.g. 2e12, 500G, 3T) or step=N, or KIND=common, got '" + text + "'";
  if (eq == std::string::npos) throw UserError(usage);
  Budget b;
  b.kind = lower_case(text.substr(0, eq));
  if (b.kind == "steps") b.kind = "step";
  if (b.kind == "seconds" || b.kind == "wall" || b.kind == "wall-clock") b.kind = "time";
  if (b.kind != "time" && b.kind != "flops" && b.kind != "step") throw UserError(usage);
  std::string v = text.substr(eq + 1);
  if (lower_case(v) == "common") {
    b.common = true;
    return b;
  }
  double mult = 1;
  if (!v.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(v.back())));
    const std::string suffixes = b.kind == "time" ? "SMH" : "KMGTP";
    if (std::isalpha(static_cast<unsigned char>(last))) {
      if (suffixes.find(last) == std::string::npos) throw UserError(usage);
      if (b.kind == "time") mult = last == 'S' ? 1 : last == 'M' ? 60 : 3600;
      else mult = std::pow(10.0, 3.0 * static_cast<double>(1 + std::string("KMGTP").find(last)));
      v.pop_back();
    }
  }
  size_t used = 0;
  try {
    b.amount = std::stod(v, &used);
  } catch (const std::exception&) {
    throw UserError(usage);
  }
  if (used != v.size() || !std::isfinite(b.amount) || b.amount <= 0) throw UserError(usage);
  b.amount *= mult;
  return b;
}

BudgetValue value_at_budget(const std::vector<EvalAt>& evals, double end_x, const Budget& b, bool lower) {
  BudgetValue out;
  auto x_of = [&](const EvalAt& e) {
    return b.kind == "time" ? e.seconds : b.kind == "flops" ? e.flops : static_cast<double>(e.step);
  };
  const double tol = 1e-9 * std::max(1.0, std::fabs(b.amount));
  out.reached = end_x >= b.amount - tol;
  const EvalAt* best = nullptr;
  for (auto& e : evals) {
    if (!(x_of(e) <= b.amount + tol)) continue;  // beyond the budget (or unknown x)
    if (!std::isfinite(e.valid)) continue;
    if (!best || (lower ? e.valid < best->valid : e.valid > best->valid)) best = &e;
  }
  if (!best) {
    out.problem = evals.empty()
                      ? "no evaluation in its metrics"
                      : "no evaluation within the budget (the first at " +
                            (b.kind == "time" ? seconds_text(x_of(evals.front())) : short_num(x_of(evals.front()))) +
                            ")";
    return out;
  }
  out.step = best->step;
  if (!std::isfinite(best->value)) {
    out.problem = "no value of the metric at step " + std::to_string(best->step);
    return out;
  }
  out.has_value = true;
  out.value = best->value;
  return out;
}

RunFacts read_run_facts(const std::string& run_dir, int64_t seed, const std::string& status) {
  RunFacts f;
  f.seed = seed;
  f.end = status.empty() ? "pending" : status;
  if (run_dir.empty() || !file_exists(join_path(run_dir, "summary.json"))) return f;
  try {
    RunStore store(run_dir);
    const RunSummary s = store.read_summary();
    f.known = true;
    f.parameters = s.parameters;
    f.step = s.step;
    f.seconds = s.elapsed;
    f.flops = s.train_flops;
    f.valid_units = s.valid_units;
    f.test_units = s.test_units;
    if (file_exists(join_path(run_dir, "config.json"))) {
      const json cfg = parse_json(read_file(join_path(run_dir, "config.json")), "config.json");
      if (cfg.contains("training") && cfg["training"].contains("steps") && cfg["training"]["steps"].is_number())
        f.cap = cfg["training"]["steps"].get<int64_t>();
    }
    if (s.status == "finished")
      f.end = s.reason.rfind("early stop", 0) == 0 ? "early stop" : f.cap > 0 && s.step >= f.cap ? "cap" : "finished";
    else f.end = s.status;
  } catch (const std::exception&) {
    f.known = false;
  }
  return f;
}

std::vector<EvalAt> read_evals(const std::string& run_dir, const std::string& split, const std::string& key,
                               double* end_seconds, double* end_flops, int64_t* end_step, bool* has_flops) {
  std::vector<EvalAt> out;
  RunStore store(run_dir);
  const RunSummary s = store.read_summary();
  const std::string primary = s.primary_metric;
  const std::string k = key.empty() ? primary : key;
  const auto recs = read_metrics(join_path(run_dir, "metrics.jsonl"));
  bool flops_ok = true;
  double es = 0, ef = std::numeric_limits<double>::quiet_NaN();
  int64_t st = 0;
  // the test line that belongs to a valid evaluation: the first test line of the same step after
  // it (track_test); the final best-checkpoint test line comes later and is not taken
  std::vector<bool> has_test(0);
  for (auto& r : recs) {
    es = std::max(es, r.elapsed);
    st = std::max(st, r.step);
    if (r.has_train_flops()) ef = std::isfinite(ef) ? std::max(ef, r.train_flops) : r.train_flops;
    else flops_ok = false;
    if (!r.eval) continue;
    if (r.split == "valid") {
      EvalAt e;
      e.step = r.step;
      e.seconds = r.elapsed;
      e.flops = r.train_flops;
      auto v = r.values.find(primary);
      if (v != r.values.end()) e.valid = v->second;
      if (split == "valid") {
        auto w = r.values.find(k);
        if (w != r.values.end()) e.value = w->second;
      }
      out.push_back(e);
      has_test.push_back(false);
    } else if (r.split == "test" && split == "test" && !out.empty() && out.back().step == r.step && !has_test.back()) {
      auto w = r.values.find(k);
      if (w != r.values.end()) out.back().value = w->second;
      has_test.back() = true;
    }
  }
  if (end_seconds) *end_seconds = es;
  if (end_flops) *end_flops = flops_ok ? ef : std::numeric_limits<double>::quiet_NaN();
  if (end_step) *end_step = st;
  if (has_flops) *has_flops = flops_ok && !recs.empty();
  return out;
}

namespace {

// The run's training.track_test (test evaluated at every evaluation).
bool tracks_test(const std::string& run_dir) {
  const std::string p = join_path(run_dir, "config.json");
  if (!file_exists(p)) return false;
  try {
    const json c = parse_json(read_file(p), p);
    return c.contains("training") && c["training"].value("track_test", false);
  } catch (const std::exception&) {
    return false;
  }
}

bool has_metrics(const SweepRunRecord& rec) {
  return !rec.state.run_dir.empty() && file_exists(join_path(rec.state.run_dir, "summary.json")) &&
         file_exists(join_path(rec.state.run_dir, "metrics.jsonl"));
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
      in.push_back({label_on(r, rec, rows_axes, metric_label), label_on(r, rec, cols_axes, metric_label),
                    rec.point.seed, rec.value});
    }
  } else {
    const std::string m = r.spec.table.metric;
    const auto dot = m.find('.');
    std::string split = m.substr(0, dot);
    const std::string key = dot == std::string::npos ? "" : m.substr(dot + 1);
    // test at a budget needs the test split evaluated during training (training.track_test)
    if (split == "test") {
      int untracked = 0, with = 0;
      for (auto& rec : r.records)
        if (has_metrics(rec)) ++with, untracked += tracks_test(rec.state.run_dir) ? 0 : 1;
      if (untracked > 0) {
        split = "valid";
        note =
            std::to_string(untracked) + " of " + std::to_string(with) +
            " run(s) did not evaluate the test split during training (training.track_test off): the budget view reads "
            "the validation metric of every run";
        const auto sp = metric_label.find(' ');
        metric_label = "valid" + (sp == std::string::npos ? std::string(" metric") : metric_label.substr(sp));
        const auto paren = metric_label.find(" (");  // the test split's decode (valid decodes greedily)
        if (paren != std::string::npos) metric_label = metric_label.substr(0, paren) + " (greedy)";
      }
    }
    struct Read {
      const SweepRunRecord* rec;
      std::vector<EvalAt> evals;
      double end_x = 0;
      bool lower = true;
    };
    std::vector<Read> reads;
    std::vector<std::string> no_flops;
    for (auto& rec : r.records) {
      if (!has_metrics(rec)) {
        ++missing;
        continue;
      }
      Read rd{&rec, {}, 0, true};
      double es = 0, ef = 0;
      int64_t est = 0;
      bool hf = false;
      try {
        rd.evals = read_evals(rec.state.run_dir, split, key, &es, &ef, &est, &hf);
        rd.lower = RunStore(rec.state.run_dir).read_summary().lower_is_better;
      } catch (const UserError& e) {
        problems.push_back(rec.point.id + ": " + e.what());
        ++missing;
        continue;
      }
      if (budget.kind == "flops" && !hf) {
        no_flops.push_back(rec.state.run_dir);
        continue;
      }
      rd.end_x = budget.kind == "time" ? es : budget.kind == "flops" ? ef : static_cast<double>(est);
      reads.push_back(std::move(rd));
    }
    if (!no_flops.empty()) {
      std::string list;
      for (size_t i = 0; i < no_flops.size() && i < 5; ++i) list += "\n  " + no_flops[i];
      if (no_flops.size() > 5) list += "\n  ... and " + std::to_string(no_flops.size() - 5) + " more";
      throw UserError("--budget flops: the metrics.jsonl of " + std::to_string(no_flops.size()) +
                      " run(s) carry no training FLOPs (\"train_flops\"; written before Cellscope recorded them, or "
                      "resumed from a checkpoint without the count), so they cannot be put at equal FLOPs; use "
                      "--budget time=SECONDS or --budget step=N, or train them again:" +
                      list);
    }
    if (budget.common) {
      double amt = std::numeric_limits<double>::infinity();
      for (auto& rd : reads) amt = std::min(amt, rd.end_x);
      if (!std::isfinite(amt) || amt <= 0)
        throw UserError("--budget " + budget.kind + "=common: no run has trained yet");
      budget.amount = amt;
    }
    for (auto& rd : reads) {
      const auto v = value_at_budget(rd.evals, rd.end_x, budget, rd.lower);
      if (!v.has_value) {
        problems.push_back(rd.rec->point.id + ": " + v.problem);
        ++missing;
        continue;
      }
      in.push_back({label_on(r, *rd.rec, rows_axes, metric_label), label_on(r, *rd.rec, cols_axes, metric_label),
                    rd.rec->point.seed, v.value, !v.reached});
    }
  }
  const auto rows = labels_of(r, rows_axes, metric_label), cols = labels_of(r, cols_axes, metric_label);
  SweepTable t = paired_ref.empty() ? aggregate_table(in, rows, cols, r.higher_is_better, r.spec.table.best)
                                    : paired_table(in, rows, cols, paired_ref);
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
  // size, steps and budget of every run, in its cell
  std::map<std::string, size_t> ri, ci;
  for (size_t i = 0; i < rows.size(); ++i) ri[rows[i]] = i;
  for (size_t i = 0; i < cols.size(); ++i) ci[cols[i]] = i;
  for (auto& rec : r.records) {
    auto a = ri.find(label_on(r, rec, rows_axes, metric_label)), b = ci.find(label_on(r, rec, cols_axes, metric_label));
    if (a == ri.end() || b == ci.end()) continue;
    t.cells[a->second][b->second].runs.push_back(read_run_facts(rec.state.run_dir, rec.point.seed, rec.state.status));
  }
  // the size of the split the metric reads, the smallest over each cell's runs that recorded it
  const std::string split = t.metric.rfind("valid", 0) == 0 ? "valid" : "test";
  std::vector<std::vector<int64_t>> sizes(rows.size(), std::vector<int64_t>(cols.size(), 0));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < cols.size(); ++j)
      for (auto& f : t.cells[i][j].runs) {
        const int64_t n = split == "valid" ? f.valid_units : f.test_units;
        if (n > 0) sizes[i][j] = sizes[i][j] > 0 ? std::min(sizes[i][j], n) : n;
      }
  refuse_small_cells(t, sizes, split, r.spec.table.best);
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
      in.push_back({label_on(r, rec, others, r.metric_label), label_on(r, rec, {x_axis}, r.metric_label),
                    rec.point.seed, rec.value});
  const auto series = others.empty() ? std::vector<std::string>{r.metric_label} : labels_of(r, others, r.metric_label);
  const auto xs = labels_of(r, {x_axis}, r.metric_label);
  SweepTable t = aggregate_table(in, series, xs, r.higher_is_better, "none");
  std::vector<SeriesPoint> out;
  for (size_t s = 0; s < series.size(); ++s)
    for (size_t x = 0; x < xs.size(); ++x) {
      const auto& c = t.cells[s][x];
      if (c.n) out.push_back({series[s], xs[x], c.mean, c.std, c.n});
    }
  return out;
}

namespace {

// One cell's runs in words: parameters, steps per seed (E early stop, C step cap, R running,
// S stopped, F failed, P pending), mean wall-clock seconds and training FLOPs.
struct RunsText {
  std::string params, steps, seconds, flops;
};

RunsText runs_text(const TableCell& c) {
  RunsText o;
  int64_t pmin = 0, pmax = 0;
  double ss = 0, fs = 0;
  int ns = 0, nf = 0, unknown_f = 0;
  for (auto& f : c.runs) {
    if (!o.steps.empty()) o.steps += " ";
    o.steps += "s" + std::to_string(f.seed) + ":";
    if (!f.known) {
      o.steps += f.end;
      continue;
    }
    const std::string mark = f.end == "early stop" ? "E"
                             : f.end == "cap"      ? "C"
                             : f.end == "finished" ? ""
                             : f.end == "running"  ? "R"
                             : f.end == "stopped"  ? "S"
                             : f.end == "failed"   ? "F"
                                                   : "?";
    o.steps += std::to_string(f.step) + mark;
    pmin = pmin == 0 ? f.parameters : std::min(pmin, f.parameters);
    pmax = std::max(pmax, f.parameters);
    ss += f.seconds, ++ns;
    if (std::isfinite(f.flops)) fs += f.flops, ++nf;
    else ++unknown_f;
  }
  o.params = pmax == 0 ? "-" : pmin == pmax ? std::to_string(pmax) : std::to_string(pmin) + ".." + std::to_string(pmax);
  o.seconds = ns ? seconds_text(ss / ns) : "-";
  o.flops = nf          ? short_num(fs / nf) + (unknown_f ? " (" + std::to_string(unknown_f) + " not recorded)" : "")
            : unknown_f ? "not recorded"
                        : "-";
  return o;
}

}  // namespace

namespace {

std::string refused_text(const TableCell& c) {
  return "n/a (" + (c.split.empty() ? std::string("test") : c.split) + " set " + std::to_string(c.split_size) + " < " +
         std::to_string(kMinTableSplitSize) + ")";
}

}  // namespace

std::string format_cell(const TableCell& c, int digits, bool with_n) {
  if (c.refused) return refused_text(c);
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
      if (c.short_of_budget && !c.reference) s += " ^" + std::to_string(c.short_of_budget);
      line.push_back(s);
    }
    grid.push_back(line);
  }
  std::vector<size_t> w(grid[0].size(), 0);
  for (auto& l : grid)
    for (size_t i = 0; i < l.size(); ++i) w[i] = std::max(w[i], l[i].size());
  std::ostringstream o;
  o << t.title << ": "
    << (t.paired ? "paired difference vs " + t.paired_axis + " '" + t.paired_reference + "' of " : std::string())
    << t.metric << " (" << (t.higher_is_better ? "higher" : "lower") << " is better), mean +- std over seeds";
  o << " {";
  for (size_t i = 0; i < t.seeds.size(); ++i) o << (i ? "," : "") << t.seeds[i];
  o << "}" << (t.col_header.empty() ? "" : "; columns: " + t.col_header) << (t.paired ? "" : "; *best*") << "\n";
  if (t.budget.active()) {
    o << "compute-matched: " << t.budget.describe()
      << "; each run read at its best validation evaluation within the budget (its early-stopping choice there)\n";
    if (!t.budget_note.empty()) o << "note: " << t.budget_note << "\n";
  } else {
    o << "step-matched: each run read at its end (early stop or step cap; see steps below)\n";
  }
  for (size_t li = 0; li < grid.size(); ++li) {
    for (size_t i = 0; i < grid[li].size(); ++i) o << std::left << std::setw(static_cast<int>(w[i]) + 2) << grid[li][i];
    o << "\n";
  }
  bool any_short = false;
  for (auto& row : t.cells)
    for (auto& c : row) any_short = any_short || c.short_of_budget;
  if (any_short)
    o << "^k: k run(s) of the cell ended before the budget: read at their end, with less compute than the budget "
         "(not extrapolated)\n";
  bool any_refused = false;
  for (auto& row : t.cells)
    for (auto& c : row) any_refused = any_refused || c.refused;
  if (any_refused)
    o << "n/a: the cell's runs were evaluated on fewer than " << kMinTableSplitSize
      << " examples (a split that small cannot separate the rows; sweep/table.h kMinTableSplitSize)\n";
  if (t.missing)
    o << "(" << t.missing << " run(s) without a value"
      << (t.budget.active() ? " at the budget" : ": pending, stopped or failed") << ")\n";
  for (auto& p : t.budget_problems) o << "  " << p << "\n";
  // size, steps and budget of every cell's runs
  bool any_runs = false;
  for (auto& row : t.cells)
    for (auto& c : row) any_runs = any_runs || !c.runs.empty();
  if (any_runs) {
    o << "\nsize, steps and budget (steps per seed: E early stop, C step cap, R running, S stopped, F failed; "
         "time: wall-clock training time, mean over seeds; FLOPs: training FLOPs = 3 x forward, mean):\n";
    std::vector<std::vector<std::string>> g{{"cell", "parameters", "steps", "time", "train FLOPs"}};
    for (size_t r = 0; r < t.row_labels.size(); ++r)
      for (size_t c = 0; c < t.col_labels.size(); ++c) {
        const auto& x = t.cells[r][c];
        if (x.runs.empty()) continue;
        const auto rt = runs_text(x);
        const std::string name = t.col_labels.size() > 1 ? t.row_labels[r] + " / " + t.col_labels[c] : t.row_labels[r];
        g.push_back({name, rt.params, rt.steps, rt.seconds, rt.flops});
      }
    std::vector<size_t> w2(5, 0);
    for (auto& l : g)
      for (size_t i = 0; i < l.size(); ++i) w2[i] = std::max(w2[i], l[i].size());
    for (auto& l : g) {
      for (size_t i = 0; i < l.size(); ++i) o << std::left << std::setw(static_cast<int>(w2[i]) + 2) << l[i];
      o << "\n";
    }
  }
  return o.str();
}

std::string table_to_csv(const SweepTable& t) {
  std::ostringstream o;
  o << csv_field(t.row_header.empty() ? "row" : t.row_header) << ","
    << csv_field(t.col_header.empty() ? "column" : t.col_header)
    << ",mean,std,n,best,seeds,values,parameters,steps,ends,seconds,train_flops,short_of_budget,split_size,refused\n";
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
      o << "," << x.n << "," << (x.best ? 1 : 0) << "," << seeds << "," << vals;
      // the runs: parameters (of the first known), steps and ends per seed, mean seconds and FLOPs
      std::string steps, ends;
      int64_t params = 0;
      double sec = 0, fl = 0;
      int ns = 0, nf = 0;
      bool fl_unknown = false;
      for (auto& f : x.runs) {
        steps += (steps.empty() ? "" : " ") + (f.known ? std::to_string(f.step) : std::string());
        std::string e = f.end;
        for (auto& ch : e)
          if (ch == ' ') ch = '_';
        ends += (ends.empty() ? "" : " ") + e;
        if (!f.known) continue;
        if (!params) params = f.parameters;
        sec += f.seconds, ++ns;
        if (std::isfinite(f.flops)) fl += f.flops, ++nf;
        else fl_unknown = true;
      }
      o << "," << (params ? std::to_string(params) : "") << "," << steps << "," << ends << ",";
      if (ns) o << sec / ns;
      o << ",";
      if (nf && !fl_unknown) o << fl / nf;
      o << "," << x.short_of_budget << "," << x.split_size << "," << (x.refused ? 1 : 0) << "\n";
    }
  return o.str();
}

std::string latex_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '_':
      case '%':
      case '&':
      case '#':
      case '$':
      case '{':
      case '}':
        o += '\\';
        o += c;
        break;
      case '\\':
        o += "\\textbackslash{}";
        break;
      case '~':
        o += "\\textasciitilde{}";
        break;
      case '^':
        o += "\\textasciicircum{}";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string table_to_latex(const SweepTable& t) {
  const int d = auto_digits(t);
  std::ostringstream o;
  o << "% " << latex_escape(t.title) << ": "
    << (t.paired ? "paired difference vs " + t.paired_axis + " " + latex_escape(t.paired_reference) + " of "
                 : std::string())
    << latex_escape(t.metric) << ", mean $\\pm$ std over seeds {";
  for (size_t i = 0; i < t.seeds.size(); ++i) o << (i ? "," : "") << t.seeds[i];
  o << "}; " << (t.higher_is_better ? "higher" : "lower") << " is better" << (t.paired ? "" : "; best in bold") << "\n";
  if (t.budget.active())
    o << "% compute-matched: " << latex_escape(t.budget.describe()) << "; $^{\\dagger}$ ended before the budget\n";
  o << "\\begin{tabular}{l" << std::string(t.col_labels.size(), 'c') << "}\n\\hline\n";
  o << latex_escape(t.row_header);
  for (auto& c : t.col_labels) o << " & " << latex_escape(c);
  o << " \\\\\n\\hline\n";
  for (size_t r = 0; r < t.row_labels.size(); ++r) {
    o << latex_escape(t.row_labels[r]);
    for (auto& c : t.cells[r]) {
      std::string s;
      if (c.reference) s = "(ref.)";
      else if (c.refused)
        s = "n/a (" + c.split + " set " + std::to_string(c.split_size) + " $<$ " + std::to_string(kMinTableSplitSize) +
            ")";
      else if (c.n == 0) s = "--";
      else {
        s = num(c.mean, d);
        if (c.n > 1) s += " \\pm " + num(c.std, d);
        if (c.short_of_budget) s += "^{\\dagger}";
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
      json runs = json::array();
      for (auto& f : x.runs)
        runs.push_back({{"seed", f.seed},
                        {"known", f.known},
                        {"parameters", f.parameters},
                        {"step", f.step},
                        {"cap", f.cap},
                        {"end", f.end},
                        {"seconds", f.seconds},
                        {"train_flops", std::isfinite(f.flops) ? json(f.flops) : json()}});
      cells.push_back({{"row", t.row_labels[r]},
                       {"col", t.col_labels[c]},
                       {"n", x.n},
                       {"mean", x.n ? json(x.mean) : json()},
                       {"std", x.n > 1 ? json(x.std) : json()},
                       {"best", x.best},
                       {"values", x.values},
                       {"seeds", x.seeds},
                       {"short_of_budget", x.short_of_budget},
                       {"split", x.split},
                       {"split_size", x.split_size},
                       {"refused", x.refused},
                       {"text", x.refused ? json(refused_text(x)) : json()},
                       {"runs", runs}});
    }
  return {{"title", t.title},
          {"metric", t.metric},
          {"higher_is_better", t.higher_is_better},
          {"rows", t.row_labels},
          {"cols", t.col_labels},
          {"row_header", t.row_header},
          {"col_header", t.col_header},
          {"seeds", t.seeds},
          {"paired", t.paired},
          {"paired_reference", t.paired_reference},
          {"paired_axis", t.paired_axis},
          {"missing", t.missing},
          {"cells", cells},
          {"budget", t.budget.active() ? json{{"kind", t.budget.kind},
                                              {"amount", t.budget.amount},
                                              {"common", t.budget.common},
                                              {"note", t.budget_note},
                                              {"problems", t.budget_problems}}
                                       : json()}};
}

std::string series_to_csv(const std::vector<SeriesPoint>& s, const std::string& x_name) {
  std::ostringstream o;
  o << "series," << csv_field(x_name) << ",mean,std,n\n" << std::setprecision(10);
  for (auto& p : s)
    o << csv_field(p.series) << "," << csv_field(p.x) << "," << p.mean << "," << p.std << "," << p.n << "\n";
  return o.str();
}

}  // namespace cs
