// A table's exports: text, CSV, LaTeX `tabular`, JSON and a series' CSV (table.h), each with the
// labels (data used, the paper's data, departures) and, in the paired view, each comparison's tests.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "config/json.h"
#include "sweep/table.h"
#include "sweep/table_internal.h"
#include "util/csv.h"
#include "util/text.h"

namespace cs {

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
  o.seconds = ns ? table_internal::seconds_text(ss / ns) : "-";
  o.flops =
      nf ? table_internal::short_num(fs / nf) + (unknown_f ? " (" + std::to_string(unknown_f) + " not recorded)" : "")
      : unknown_f ? "not recorded"
                  : "-";
  return o;
}

}  // namespace

namespace table_internal {

std::string refused_text(const TableCell& c) {
  return "n/a (" + (c.split.empty() ? std::string("test") : c.split) + " set " + std::to_string(c.split_size) + " < " +
         std::to_string(kMinTableSplitSize) + ")";
}

}  // namespace table_internal

namespace {

int auto_digits(const SweepTable& t) {
  double m = 0;
  for (auto& row : t.cells)
    for (auto& c : row)
      if (c.n) m = std::max(m, std::fabs(c.mean));
  return m < 10 ? 3 : m < 100 ? 2 : 1;
}

template <class F>
bool any_cell(const SweepTable& t, F f) {
  for (auto& row : t.cells)
    for (auto& c : row)
      if (f(c)) return true;
  return false;
}

std::string cell_name(const SweepTable& t, size_t r, size_t c) {
  return t.col_labels.size() > 1 ? t.row_labels[r] + " / " + t.col_labels[c] : t.row_labels[r];
}

void print_aligned(std::ostringstream& o, const std::vector<std::vector<std::string>>& grid) {
  std::vector<size_t> w;
  for (auto& l : grid) {
    if (w.size() < l.size()) w.resize(l.size(), 0);
    for (size_t i = 0; i < l.size(); ++i) w[i] = std::max(w[i], l[i].size());
  }
  for (auto& l : grid) {
    for (size_t i = 0; i < l.size(); ++i) o << std::left << std::setw(static_cast<int>(w[i]) + 2) << l[i];
    o << "\n";
  }
}

std::string seeds_text(const SweepTable& t) {
  std::string s = "{";
  for (size_t i = 0; i < t.seeds.size(); ++i) s += (i ? "," : "") + std::to_string(t.seeds[i]);
  return s + "}";
}

// The title line, the labels (data, departures from the paper) and how the runs were read.
void text_header(std::ostringstream& o, const SweepTable& t) {
  o << t.title << ": "
    << (t.paired ? "paired difference vs " + t.paired_axis + " '" + t.paired_reference + "' of " : std::string())
    << t.metric << " (" << (t.higher_is_better ? "higher" : "lower") << " is better), mean +- std over seeds "
    << seeds_text(t) << (t.col_header.empty() ? "" : "; columns: " + t.col_header) << (t.paired ? "" : "; *best*")
    << "\n";
  if (!t.labels.empty()) o << t.labels.data_line() << "\n";
  const auto deps = t.labels.departure_lines();
  if (!deps.empty()) {
    o << "departs from the paper in " << deps.size() << " setting" << (deps.size() == 1 ? "" : "s") << ":\n";
    for (auto& d : deps) o << "  " << d << "\n";
  }
  for (auto& x : t.labels.excluded) o << "left out by the spec: " << x << "\n";
  if (t.budget.active()) {
    o << "compute-matched: " << t.budget.describe()
      << "; each run read at its best validation evaluation within the budget (its early-stopping choice there)\n";
    if (!t.budget_note.empty()) o << "note: " << t.budget_note << "\n";
  } else {
    o << "step-matched: each run read at its end (early stop or step cap; see steps below)\n";
  }
}

// The paired view's tests and verdicts, one line per comparison (SWEEP_NOTES.md "Significance").
void text_significance(std::ostringstream& o, const SweepTable& t, int digits) {
  if (!t.paired || !any_cell(t, [](const TableCell& c) { return c.has_sig; })) return;
  o << "\nsignificance of each difference (two-sided; \"holds\" only at p < " << kVerdictAlpha << " on at least "
    << kMinSeedsForHolds << " seeds, else \"consistent in sign on N seeds\" when every seed agrees, else \"not "
    << "established\"):\n";
  // the per-example test's column, where some cell has one (RUN_DIR/test_examples.json of every run)
  const bool examples = any_cell(t, [](const TableCell& c) { return c.has_sig && !std::isnan(c.sig.p_examples); });
  std::vector<std::vector<std::string>> g{{"cell", "difference", "paired t-test over seeds", "sign test", "verdict"}};
  if (examples) g[0].insert(g[0].begin() + 4, "bootstrap over test examples");
  for (size_t r = 0; r < t.row_labels.size(); ++r)
    for (size_t c = 0; c < t.col_labels.size(); ++c) {
      const TableCell& x = t.cells[r][c];
      if (!x.has_sig) continue;
      const Significance& s = x.sig;
      const std::string tt = s.seeds < 2 ? "n = 1: no test"
                                         : "n = " + std::to_string(s.seeds) +
                                               ", t = " + table_internal::fixed_num(s.t.t, 2) + ", " + p_text(s.t.p);
      const std::string st = std::to_string(s.sign.positive) + "+ " + std::to_string(s.sign.negative) + "-" +
                             (s.sign.ties ? " " + std::to_string(s.sign.ties) + "=" : "") + ", " + p_text(s.sign.p);
      g.push_back({cell_name(t, r, c), format_cell(x, digits), tt, st, s.text()});
      if (examples) g.back().insert(g.back().begin() + 4, std::isnan(s.p_examples) ? "none" : p_text(s.p_examples));
    }
  print_aligned(o, g);
  if (!t.sampling_note.empty()) o << "note: " << t.sampling_note << "\n";
}

// Marks under the table: budget, refusals, missing runs.
void text_notes(std::ostringstream& o, const SweepTable& t) {
  if (any_cell(t, [](const TableCell& c) { return c.short_of_budget > 0; }))
    o << "^k: k run(s) of the cell ended before the budget: read at their end, with less compute than the budget "
         "(not extrapolated)\n";
  if (any_cell(t, [](const TableCell& c) { return c.refused; }))
    o << "n/a: the cell's runs were evaluated on fewer than " << kMinTableSplitSize
      << " examples (a split that small cannot separate the rows; sweep/table.h kMinTableSplitSize)\n";
  if (t.missing)
    o << "(" << t.missing << " run(s) without a value"
      << (t.budget.active() ? " at the budget" : ": pending, stopped or failed") << ")\n";
  for (auto& p : t.budget_problems) o << "  " << p << "\n";
}

// Size, steps and budget of every cell's runs.
void text_runs(std::ostringstream& o, const SweepTable& t) {
  if (!any_cell(t, [](const TableCell& c) { return !c.runs.empty(); })) return;
  o << "\nsize, steps and budget (steps per seed: E early stop, C step cap, R running, S stopped, F failed; "
       "time: wall-clock training time, mean over seeds; FLOPs: training FLOPs = 3 x forward, mean):\n";
  std::vector<std::vector<std::string>> g{{"cell", "parameters", "steps", "time", "train FLOPs"}};
  for (size_t r = 0; r < t.row_labels.size(); ++r)
    for (size_t c = 0; c < t.col_labels.size(); ++c) {
      const auto& x = t.cells[r][c];
      if (x.runs.empty()) continue;
      const auto rt = runs_text(x);
      g.push_back({cell_name(t, r, c), rt.params, rt.steps, rt.seconds, rt.flops});
    }
  print_aligned(o, g);
}

}  // namespace

std::string format_cell(const TableCell& c, int digits, bool with_n) {
  if (c.refused) return table_internal::refused_text(c);
  if (c.n == 0) return "-";
  if (digits < 0) digits = std::fabs(c.mean) < 10 ? 3 : std::fabs(c.mean) < 100 ? 2 : 1;
  std::string s = table_internal::fixed_num(c.mean, digits);
  if (c.n > 1) s += " +- " + table_internal::fixed_num(c.std, digits);
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
  std::ostringstream o;
  text_header(o, t);
  print_aligned(o, grid);
  text_notes(o, t);
  text_significance(o, t, d);
  text_runs(o, t);
  return o.str();
}

namespace {

// The runs columns of a CSV line: parameters (of the first known run), steps and ends per seed,
// mean seconds and FLOPs (empty when a run did not record them).
std::string csv_runs(const TableCell& x) {
  std::ostringstream o;
  o << std::setprecision(10);
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
  o << (params ? std::to_string(params) : "") << "," << steps << "," << ends << ",";
  if (ns) o << sec / ns;
  o << ",";
  if (nf && !fl_unknown) o << fl / nf;
  return o.str();
}

// The paired test columns: test, t, p, sign_test_p, verdict, examples_p (empty outside the paired
// view; examples_p empty without a per-example test).
std::string csv_significance(const TableCell& x) {
  if (!x.has_sig) return ",,,,,";
  std::ostringstream o;
  o << std::setprecision(6);
  const Significance& s = x.sig;
  o << csv_field(s.test()) << ",";
  if (std::isfinite(s.t.t)) o << s.t.t;
  o << ",";
  if (!std::isnan(s.p)) o << s.p;
  o << ",";
  if (!std::isnan(s.sign.p)) o << s.sign.p;
  o << "," << csv_field(s.text()) << ",";
  if (!std::isnan(s.p_examples)) o << s.p_examples;
  return o.str();
}

}  // namespace

std::string table_to_csv(const SweepTable& t) {
  std::ostringstream o;
  o << csv_field(t.row_header.empty() ? "row" : t.row_header) << ","
    << csv_field(t.col_header.empty() ? "column" : t.col_header)
    << ",mean,std,n,best,seeds,values,parameters,steps,ends,seconds,train_flops,short_of_budget,split_size,refused,"
       "test,t,p,sign_test_p,verdict,examples_p,dataset,stands_in_for,departures,left_out\n";
  o << std::setprecision(10);
  const std::string labels = csv_field(join(t.labels.datasets, "; ")) + "," +
                             csv_field(t.labels.paper.present() ? t.labels.paper.dataset : "") + "," +
                             csv_field(join(t.labels.departure_lines(), "; ")) + "," +
                             csv_field(join(t.labels.excluded, "; "));
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
      o << "," << x.n << "," << (x.best ? 1 : 0) << "," << seeds << "," << vals << "," << csv_runs(x);
      o << "," << x.short_of_budget << "," << x.split_size << "," << (x.refused ? 1 : 0) << "," << csv_significance(x)
        << "," << labels << "\n";
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
      case '|':  // OT1 prints | < > as other glyphs (an em dash, inverted marks)
        o += "\\textbar{}";
        break;
      case '<':
        o += "\\textless{}";
        break;
      case '>':
        o += "\\textgreater{}";
        break;
      default:
        o += c;
    }
  }
  return o;
}

namespace {

std::string latex_cell(const TableCell& c, int d) {
  if (c.reference) return "(ref.)";
  if (c.refused)
    return "n/a (" + c.split + " set " + std::to_string(c.split_size) + " $<$ " + std::to_string(kMinTableSplitSize) +
           ")";
  if (c.n == 0) return "--";
  std::string s = table_internal::fixed_num(c.mean, d);
  if (c.n > 1) s += " \\pm " + table_internal::fixed_num(c.std, d);
  if (c.short_of_budget) s += "^{\\dagger}";
  s = c.best ? "$\\mathbf{" + s + "}$" : "$" + s + "$";
  if (c.has_sig && c.sig.seeds >= 2) {
    const std::string p = format_p(c.sig.p);
    s += " {\\footnotesize ($p" + (p[0] == '<' ? p : "=" + p) + "$)}";  // math mode: "< 0.0001" as it is
  }
  return s;
}

// The comment lines above the tabular: title, metric, seeds, labels in full.
void latex_comments(std::ostringstream& o, const SweepTable& t) {
  o << "% " << latex_escape(t.title) << ": "
    << (t.paired ? "paired difference vs " + t.paired_axis + " " + latex_escape(t.paired_reference) + " of "
                 : std::string())
    << latex_escape(t.metric) << ", mean $\\pm$ std over seeds " << latex_escape(seeds_text(t)) << "; "
    << (t.higher_is_better ? "higher" : "lower") << " is better" << (t.paired ? "" : "; best in bold") << "\n";
  if (!t.labels.empty()) o << "% " << latex_escape(t.labels.data_line()) << "\n";
  for (auto& d : t.labels.departure_lines()) o << "% departs from the paper: " << latex_escape(d) << "\n";
  for (auto& x : t.labels.excluded) o << "% left out by the spec: " << latex_escape(x) << "\n";
  if (t.budget.active())
    o << "% compute-matched: " << latex_escape(t.budget.describe()) << "; $^{\\dagger}$ ended before the budget\n";
}

// Rows under the last rule that print with the table: the data used and the paper's, and the
// departures by name (the comments above and the CSV say paper, ours and why), and for the paired
// view what p is.
void latex_footer(std::ostringstream& o, const SweepTable& t) {
  const std::string span = "\\multicolumn{" + std::to_string(t.col_labels.size() + 1) + "}{l}{\\footnotesize ";
  // one row per ~70 characters of text: an `l` cell does not wrap, and a long one would widen the table
  auto rows = [&](const std::string& first, const std::vector<std::string>& words, const std::string& sep) {
    std::string line = first;
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string w = words[i] + (i + 1 < words.size() ? sep : "");
      if (line.size() + w.size() > 70 && line.size() > first.size()) {
        o << span << latex_escape(line) << "} \\\\\n";
        line = "  ";
      }
      line += w;
    }
    o << span << latex_escape(line) << "} \\\\\n";
  };
  if (!t.labels.empty()) {
    std::string data = "data: " + join(t.labels.datasets, ", ");
    if (t.labels.paper.present()) data += ", standing in for the paper's " + t.labels.paper.dataset;
    rows("", split_ascii_words(data), " ");
  }
  std::vector<std::string> names;
  for (auto& d : t.labels.paper.departures) names.push_back(d.setting);
  if (!names.empty()) rows("departs from the paper in: ", names, "; ");
  for (auto& x : t.labels.excluded) rows("left out: ", split_ascii_words(x), " ");
  if (t.paired && any_cell(t, [](const TableCell& c) { return c.has_sig; }))
    o << span << "$p$: two-sided paired t-test over seeds; a difference holds only at $p<" << kVerdictAlpha
      << "$ on at least " << kMinSeedsForHolds << " seeds} \\\\\n";
}

}  // namespace

std::string table_to_latex(const SweepTable& t) {
  const int d = auto_digits(t);
  std::ostringstream o;
  latex_comments(o, t);
  o << "\\begin{tabular}{l" << std::string(t.col_labels.size(), 'c') << "}\n\\hline\n";
  o << latex_escape(t.row_header);
  for (auto& c : t.col_labels) o << " & " << latex_escape(c);
  o << " \\\\\n\\hline\n";
  for (size_t r = 0; r < t.row_labels.size(); ++r) {
    o << latex_escape(t.row_labels[r]);
    for (auto& c : t.cells[r]) o << " & " << latex_cell(c, d);
    o << " \\\\\n";
  }
  o << "\\hline\n";
  latex_footer(o, t);
  o << "\\end{tabular}\n";
  return o.str();
}

namespace {

json significance_json(const TableCell& x) {
  if (!x.has_sig) return json();
  const Significance& s = x.sig;
  auto num_or_null = [](double v) { return std::isfinite(v) ? json(v) : json(); };
  return {{"test", s.test()},
          {"seeds", s.seeds},
          {"t", num_or_null(s.t.t)},
          {"t_test_p", num_or_null(s.t.p)},
          {"sign_test", {{"positive", s.sign.positive}, {"negative", s.sign.negative}, {"ties", s.sign.ties}}},
          {"sign_test_p", num_or_null(s.sign.p)},
          {"examples_test", s.example_test},
          {"examples_p", num_or_null(s.p_examples)},
          {"p", num_or_null(s.p)},
          {"verdict", s.verdict},
          {"text", s.text()}};
}

json labels_json(const SweepLabels& l) {
  json deps = json::array();
  for (auto& d : l.paper.departures)
    deps.push_back({{"setting", d.setting}, {"paper", d.paper}, {"ours", d.ours}, {"reason", d.reason}});
  return {{"datasets", l.datasets},
          {"paper",
           l.paper.present()
               ? json{{"source", l.paper.source}, {"dataset", l.paper.dataset}, {"dataset_used", l.paper.dataset_used}}
               : json()},
          {"departures", deps},
          {"excluded", l.excluded},
          {"text", l.data_line()}};
}

json cell_json(const TableCell& x, const std::string& row, const std::string& col) {
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
  return {{"row", row},
          {"col", col},
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
          {"text", x.refused ? json(table_internal::refused_text(x)) : json()},
          {"significance", significance_json(x)},
          {"runs", runs}};
}

}  // namespace

json table_to_json(const SweepTable& t) {
  json cells = json::array();
  for (size_t r = 0; r < t.row_labels.size(); ++r)
    for (size_t c = 0; c < t.col_labels.size(); ++c)
      cells.push_back(cell_json(t.cells[r][c], t.row_labels[r], t.col_labels[c]));
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
          {"labels", labels_json(t.labels)},
          {"sampling_note", t.sampling_note},
          {"cells", cells},
          {"budget", t.budget.active() ? json{{"kind", t.budget.kind},
                                              {"amount", t.budget.amount},
                                              {"common", t.budget.common},
                                              {"note", t.budget_note},
                                              {"problems", t.budget_problems}}
                                       : json()}};
}

std::string series_to_csv(const std::vector<SeriesPoint>& s, const std::string& x_name, const SweepLabels& labels) {
  std::ostringstream o;
  const bool with_labels = !labels.empty();
  o << "series," << csv_field(x_name) << ",mean,std,n" << (with_labels ? ",dataset,stands_in_for,departures" : "")
    << "\n"
    << std::setprecision(10);
  const std::string tail = with_labels ? "," + csv_field(join(labels.datasets, "; ")) + "," +
                                             csv_field(labels.paper.present() ? labels.paper.dataset : "") + "," +
                                             csv_field(join(labels.departure_lines(), "; "))
                                       : "";
  for (auto& p : s)
    o << csv_field(p.series) << "," << csv_field(p.x) << "," << p.mean << "," << p.std << "," << p.n << tail << "\n";
  return o.str();
}

}  // namespace cs
