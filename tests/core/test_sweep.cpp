// Sweeps and tables (core/run/sweep): grid expansion (options x seeds),
// resume after an interruption runs only the remaining points, table aggregation
// (mean, sample std, best), paired differences, the LaTeX tabular's structure,
// and the CLI (`sweep run --dry-run`, `sweep table --out`).

#include <gtest/gtest.h>

#include <map>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "corpus_fixture.h"
#include "harness.h"
#include "data/text_metrics.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "tasks/inspect.h"
#include "train/test_examples.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_sweep {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

json toy_base(const std::string& corpus, int steps) {
  return {{"task", {{"name", "char_lm"}}},
          {"dataset", {{"path", corpus}}},
          {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
          {"training",
           {{"batch", 8},
            {"bptt", 16},
            {"steps", steps},
            {"eval_every", 10},
            {"log_every", 5},
            {"checkpoint_every", 5},
            {"threads", 1}}}};
}

// Unescaped occurrences of `c` in a LaTeX line.
int unescaped(const std::string& s, char c) {
  int n = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == c && (i == 0 || s[i - 1] != '\\')) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\n') out.push_back(cur), cur.clear();
    else cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

// Qt Test's initTestCase: the corpus is written once, before the first test of this file.
class Sweep : public ::testing::Test {
 protected:
  static std::string corpus_;
  static void SetUpTestSuite() { corpus_ = cstest::write_text_fixture("sweep_corpus.txt", 6000); }
};
std::string Sweep::corpus_;

// The grid of two tests: model.hidden {16, 24} x variant {plain, no-embed (model.embed removed)}.
json hidden_by_variant() {
  return json::array(
      {json{{"option", "model.hidden"}, {"values", {16, 24}}},
       json{{"name", "variant"},
            {"values", json::array({json{{"label", "plain"}, {"set", json::object()}},
                                    json{{"label", "no-embed"}, {"set", {{"model.embed", nullptr}}}}})}}});
}

TEST_F(Sweep, gridExpansion) {
  json spec = {{"name", "toy"},
               {"base", toy_base(corpus_, 10)},
               {"grid", hidden_by_variant()},
               {"seeds", {3, 1, 2}},
               {"table", {{"cols", "variant"}}}};
  SweepSpec s = SweepSpec::from_json(spec);
  ASSERT_EQ(static_cast<int>(s.axes.size()), 2);
  ASSERT_TRUE(s.table.rows == std::vector<std::string>{"model.hidden"});  // unnamed axes join the rows
  auto pts = expand_sweep(s);
  ASSERT_EQ(static_cast<int>(pts.size()), 2 * 2 * 3);
  // First axis slowest, seeds innermost in the order given.
  ASSERT_EQ(pts[0].id, std::string("model.hidden=16,variant=plain,seed=3"));
  ASSERT_EQ(pts[1].id, std::string("model.hidden=16,variant=plain,seed=1"));
  ASSERT_EQ(pts[3].id, std::string("model.hidden=16,variant=no-embed,seed=3"));
  ASSERT_EQ(pts[11].id, std::string("model.hidden=24,variant=no-embed,seed=2"));
  std::set<std::string> ids;
  for (auto& p : pts) {
    ids.insert(p.id);
    ASSERT_EQ(p.config["training"]["seed"].get<int64_t>(), p.seed);
    ASSERT_EQ(p.config["model"]["hidden"].get<int>(), p.value_index[0] == 0 ? 16 : 24);
    ASSERT_EQ(p.config["training"]["steps"].get<int>(), 10);  // the base survives
  }
  ASSERT_EQ(ids.size(), pts.size());
  // null removes the option: the resolved config falls back to the default embedding size.
  json no_embed = toy_base(corpus_, 10);
  no_embed["model"].erase("embed");
  const int def_embed = resolve_config(no_embed)["model"]["embed"];
  ASSERT_TRUE(def_embed != 8);
  ASSERT_EQ(pts[3].config["model"]["embed"].get<int>(), def_embed);
  ASSERT_EQ(pts[0].config["model"]["embed"].get<int>(), 8);

  // An invalid point is reported with its id and the option path, before anything runs.
  json bad = spec;
  bad["grid"][1]["values"][1]["set"] = {{"model.zones", 4}};  // gru has no zones
  bool threw = false;
  try {
    expand_sweep(SweepSpec::from_json(bad));
  } catch (const UserError& e) {
    threw = true;
    const std::string m = e.what();
    ASSERT_TRUE(m.find("variant=no-embed") != std::string::npos) << m.c_str();
    ASSERT_TRUE(m.find("model.zones") != std::string::npos) << m.c_str();
    ASSERT_TRUE(m.find("6 invalid point") != std::string::npos) << m.c_str();
  }
  ASSERT_TRUE(threw);
  // Spec errors name the field.
  json bad2 = spec;
  bad2["table"]["cols"] = "nope";
  try {
    SweepSpec::from_json(bad2);
    FAIL() << "accepted a table column that is no axis";
  } catch (const UserError& e) {
    ASSERT_TRUE(std::string(e.what()).find("nope") != std::string::npos);
  }
  json bad3 = spec;
  bad3["seeds"] = {1, 1};
  ASSERT_THROW(SweepSpec::from_json(bad3), UserError);
}

// Issue #51 item 2: a spec may leave points out of its grid on purpose (MZU Table 3's eq. 9 column:
// not at 16 zones, 3 seeds); the points are not run and every export of the table says why.
TEST_F(Sweep, excludeLeavesOutPointsAndTheTableSaysWhy) {
  json spec = {{"name", "toy-exclude"},
               {"base", toy_base(corpus_, 10)},
               {"grid", hidden_by_variant()},
               {"seeds", {1, 2, 3}},
               {"exclude",
                json::array({{{"where", {{"variant", "no-embed"}, {"model.hidden", 24}}}, {"reason", "too big"}},
                             {{"where", {{"variant", "plain"}, {"seed", {2, 3}}}}, {"reason", "one seed is enough"}}})},
               {"table", {{"cols", "variant"}}}};
  const SweepSpec s = SweepSpec::from_json(spec);
  ASSERT_EQ(s.exclude.size(), 2u);
  const auto pts = expand_sweep(s);
  std::vector<std::string> ids;
  for (auto& p : pts) ids.push_back(p.id);
  // 12 points less 3 (no-embed at 24) less 4 (plain, seeds 2 and 3, at both sizes); indices stay dense
  const std::vector<std::string> want = {
      "model.hidden=16,variant=plain,seed=1", "model.hidden=16,variant=no-embed,seed=1",
      "model.hidden=16,variant=no-embed,seed=2", "model.hidden=16,variant=no-embed,seed=3",
      "model.hidden=24,variant=plain,seed=1"};
  EXPECT_EQ(ids, want);
  for (size_t i = 0; i < pts.size(); ++i) EXPECT_EQ(pts[i].index, static_cast<int>(i));
  EXPECT_EQ(s.exclude[0].text(), "model.hidden=24, variant=no-embed: not run (too big)");
  EXPECT_EQ(s.exclude[1].text(), "variant=plain, seed=2 | 3: not run (one seed is enough)");

  // the table of the sweep says what is left out, in every export
  const std::string dir = cstest::temp_dir() + "/sweep-exclude";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/sweep.json");
    f << spec.dump(2);
  }
  const auto res = read_sweep_results(dir);
  EXPECT_EQ(res.records.size(), pts.size());
  const auto t = sweep_table(res);
  EXPECT_NE(table_to_text(t).find("left out by the spec: model.hidden=24, variant=no-embed: not run (too big)\n"),
            std::string::npos)
      << table_to_text(t);
  EXPECT_NE(table_to_latex(t).find(
                "% left out by the spec: variant=plain, seed=2 \\textbar{} 3: not run (one seed is enough)"),
            std::string::npos)
      << table_to_latex(t);
  EXPECT_NE(table_to_csv(t).find(",\"model.hidden=24, variant=no-embed: not run (too big); variant=plain"),
            std::string::npos)
      << table_to_csv(t);
  EXPECT_EQ(table_to_json(t)["labels"]["excluded"].size(), 2u);
  // the CLI's dry run and status name them too
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "run", dir, "--dry-run"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("5 points (2 axes x 3 seeds, less what the spec leaves out)"), std::string::npos) << out;
  EXPECT_NE(out.find("  left out by the spec: variant=plain, seed=2 | 3: not run (one seed is enough)\n"),
            std::string::npos)
      << out;
  ASSERT_EQ(cstest::run_cli({"sweep", "status", dir}, &out, &err), 0) << err;
  EXPECT_NE(out.find("  left out by the spec: model.hidden=24, variant=no-embed: not run (too big)\n"),
            std::string::npos)
      << out;

  // every key and value must name something of the grid, and a reason is required
  auto refused = [&](const json& ex, const std::string& says) {
    json bad = spec;
    bad["exclude"] = ex;
    try {
      SweepSpec::from_json(bad);
      ADD_FAILURE() << "accepted " << ex.dump();
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(json::array({{{"where", {{"model.zones", 4}}}, {"reason", "r"}}}), "'model.zones' is not an axis");
  refused(json::array({{{"where", {{"model.hidden", 32}}}, {"reason", "r"}}}), "'32' is not one of the axis's values");
  refused(json::array({{{"where", {{"seed", 7}}}, {"reason", "r"}}}), "7 is not one of the spec's seeds");
  refused(json::array({{{"where", {{"variant", "plain"}}}}}), "exclude[0].reason");
  refused(json::array({{{"where", json::object()}, {"reason", "r"}}}), "exclude[0]: expected");
  refused(json::array({{{"where", {{"seed", {1, 2, 3}}}}, {"reason", "r"}}}), "leaves no point");
  refused(json::object(), "exclude: expected a list");
}

TEST_F(Sweep, resumeRunsOnlyTheRest) {
  const std::string ws = cstest::temp_dir() + "/ws";
  json spec = {
      {"name", "resume"}, {"base", toy_base(corpus_, 20)}, {"grid", {{"model.hidden", {8, 12}}}}, {"seeds", {1, 2}}};
  SweepSpec s = SweepSpec::from_json(spec);
  std::vector<std::string> started;
  std::vector<bool> resumed_flags;
  std::map<std::string, std::string> dirs;
  auto opts = [&](TrainerControl* control) {
    SweepRunOptions o;
    o.workspace = ws;
    o.control = control;
    o.on_point_start = [&](const SweepPoint& p, int, bool resumed, const std::string& dir) {
      started.push_back(p.id);
      resumed_flags.push_back(resumed);
      dirs[p.id] = dir;
    };
    return o;
  };
  // 1) interrupted after k = 2 finished points (stop between points)
  {
    TrainerControl c;
    auto o = opts(&c);
    o.on_point_done = [&](const SweepPoint& p, int, const RunSummary& sum) {
      ASSERT_EQ(sum.status, std::string("finished"));
      if (p.index == 1) c.stop = true;
    };
    auto r = run_sweep(s, o);
    ASSERT_TRUE(r.stopped);
    ASSERT_EQ(r.done, 2);
    ASSERT_EQ(r.ran, 2);
  }
  ASSERT_EQ(static_cast<int>(started.size()), 2);
  // 2) run again, stopped in the middle of the third point (a checkpoint at step 10)
  started.clear();
  {
    TrainerControl c;
    auto o = opts(&c);
    o.on_progress = [&](const SweepPoint&, const Progress& p) {
      if (p.step >= 10) c.stop = true;
    };
    auto r = run_sweep(s, o);
    ASSERT_TRUE(r.stopped);
    ASSERT_EQ(r.skipped, 2);
    ASSERT_EQ(r.ran, 1);
  }
  ASSERT_EQ(static_cast<int>(started.size()), 1);
  const std::string third = started[0], third_dir = dirs[third];
  ASSERT_EQ(read_sweep_state(sweep_dir(ws, "resume"))[third].status, std::string("stopped"));
  // 3) resume: only the remaining runs; the stopped one continues in its own directory
  started.clear();
  resumed_flags.clear();
  {
    TrainerControl c;
    auto r = run_sweep(s, opts(&c));
    ASSERT_TRUE(!r.stopped);
    ASSERT_EQ(r.skipped, 2);
    ASSERT_EQ(r.ran, 2);
    ASSERT_EQ(r.done, 4);
  }
  ASSERT_EQ(static_cast<int>(started.size()), 2);
  ASSERT_TRUE(started[0] == third);
  ASSERT_TRUE(resumed_flags[0]);
  ASSERT_TRUE(!resumed_flags[1]);
  ASSERT_TRUE(dirs[third] == third_dir);
  // Each point is an ordinary run of the workspace, finished at 20 steps.
  auto st = read_sweep_state(sweep_dir(ws, "resume"));
  ASSERT_EQ(static_cast<int>(st.size()), 4);
  std::set<std::string> run_dirs;
  for (auto& [id, ps] : st) {
    ASSERT_EQ(ps.status, std::string("finished"));
    ASSERT_TRUE(file_exists(join_path(ps.run_dir, "config.json")));
    ASSERT_EQ(std::filesystem::absolute(ps.run_dir).lexically_normal().parent_path(),
              std::filesystem::absolute(ws).lexically_normal());
    RunSummary sum = RunStore(ps.run_dir).read_summary();
    ASSERT_EQ(sum.step, int64_t(20));
    run_dirs.insert(ps.run_dir);
  }
  ASSERT_EQ(run_dirs.size(), size_t(4));
  // 4) a fourth call runs nothing
  {
    TrainerControl c;
    started.clear();
    auto r = run_sweep(s, opts(&c));
    ASSERT_EQ(r.ran, 0);
    ASSERT_EQ(r.skipped, 4);
  }
  // A sweep being run by another process (its lock held) is refused.
  {
    const int fd = ::open(join_path(sweep_dir(ws, "resume"), "lock").c_str(), O_RDWR);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    TrainerControl c;
    ASSERT_THROW(run_sweep(s, opts(&c)), UserError);
    ::close(fd);
  }
  // A different spec under the same name is refused.
  json other = spec;
  other["seeds"] = {1, 2, 3};
  TrainerControl c;
  ASSERT_THROW(run_sweep(SweepSpec::from_json(other), opts(&c)), UserError);
  // The results read back: 2 rows x 1 column, 2 seeds each, lower (bpc) is better.
  auto res = read_sweep_results("resume", ws);
  ASSERT_TRUE(!res.higher_is_better);
  auto t = sweep_table(res);
  ASSERT_EQ(static_cast<int>(t.row_labels.size()), 2);
  ASSERT_EQ(t.cells[0][0].n, 2);
  ASSERT_EQ(t.cells[1][0].n, 2);
  ASSERT_TRUE(t.cells[0][0].best != t.cells[1][0].best);
}

TEST_F(Sweep, aggregation) {
  // Hand-made summaries: rows A, B, C; columns x, y; seeds 1..3 (C/y missing, B/x one seed failed).
  std::vector<TableInput> in = {
      {"A", "x", 1, 1.0},  {"A", "x", 2, 2.0}, {"A", "x", 3, 3.0},   // mean 2, std 1
      {"B", "x", 1, 1.5},  {"B", "x", 2, 1.7},                       // mean 1.6, std sqrt(0.02)
      {"C", "x", 1, 4.0},  {"C", "x", 2, 4.0}, {"C", "x", 3, 4.0},   // mean 4, std 0
      {"A", "y", 1, 0.25}, {"A", "y", 2, 0.5}, {"A", "y", 3, 0.75},  // mean 0.5 (exact in binary)
      {"B", "y", 1, 0.5},  {"B", "y", 2, 0.5}, {"B", "y", 3, 0.5},   // mean 0.5 (tie)
      {"Z", "x", 1, 9.0},                                            // not a row: ignored
  };
  auto t = aggregate_table(in, {"A", "B", "C"}, {"x", "y"}, false, "column");
  ASSERT_EQ(t.cells[0][0].n, 3);
  ASSERT_DOUBLE_EQ(t.cells[0][0].mean, 2.0);
  ASSERT_DOUBLE_EQ(t.cells[0][0].std, 1.0);
  ASSERT_EQ(t.cells[1][0].n, 2);
  ASSERT_TRUE(std::fabs(t.cells[1][0].mean - 1.6) < 1e-12);
  ASSERT_TRUE(std::fabs(t.cells[1][0].std - std::sqrt(0.02)) < 1e-12);
  ASSERT_DOUBLE_EQ(t.cells[2][0].std, 0.0);
  ASSERT_EQ(t.cells[2][1].n, 0);
  // lower is better: B best in x; A and B tie in y (both bold); the empty cell is not
  ASSERT_TRUE(!t.cells[0][0].best && t.cells[1][0].best && !t.cells[2][0].best);
  ASSERT_TRUE(t.cells[0][1].best && t.cells[1][1].best && !t.cells[2][1].best);
  auto h = aggregate_table(in, {"A", "B", "C"}, {"x", "y"}, true, "column");
  ASSERT_TRUE(h.cells[2][0].best && !h.cells[1][0].best);
  auto r = aggregate_table(in, {"A", "B", "C"}, {"x", "y"}, false, "row");
  ASSERT_TRUE(r.cells[0][1].best && !r.cells[0][0].best && r.cells[2][0].best);
  auto all = aggregate_table(in, {"A", "B", "C"}, {"x", "y"}, true, "all");
  int bold = 0;
  for (auto& row : all.cells)
    for (auto& c : row) bold += c.best;
  ASSERT_EQ(bold, 1);
  ASSERT_TRUE(all.cells[2][0].best);
  ASSERT_EQ(format_cell(t.cells[0][0], 3), std::string("2.000 +- 1.000"));
  ASSERT_EQ(format_cell(t.cells[2][1], 3), std::string("-"));
  // text rendering marks the best
  t.title = "hand";
  t.metric = "test bpc";
  const std::string txt = table_to_text(t);
  ASSERT_TRUE(txt.find("*1.600 +- 0.141*") != std::string::npos) << txt.c_str();
  // CSV: one line per cell + header, values and seeds listed
  auto csv = lines_of(table_to_csv(t));
  ASSERT_EQ(static_cast<int>(csv.size()), 1 + 6);
  ASSERT_TRUE(csv[1].rfind("A,x,2,1,3,0,1 2 3,1 2 3", 0) == 0);

  // Paired: differences to column x for runs sharing row and seed.
  auto p = paired_table(in, {"A", "B", "C"}, {"x", "y"}, "x");
  ASSERT_TRUE(p.paired);
  ASSERT_TRUE(p.cells[0][0].reference);
  ASSERT_EQ(p.cells[0][1].n, 3);  // A: -0.75, -1.5, -2.25
  ASSERT_TRUE(std::fabs(p.cells[0][1].mean - (-1.5)) < 1e-12);
  ASSERT_TRUE(std::fabs(p.cells[0][1].std - 0.75) < 1e-12);
  ASSERT_EQ(p.cells[1][1].n, 2);  // B: seed 3 has no x value: unpaired, left out
  ASSERT_TRUE(std::fabs(p.cells[1][1].mean - (-1.1)) < 1e-12);
  ASSERT_EQ(p.cells[2][1].n, 0);
  for (auto& row : p.cells)
    for (auto& c : row) ASSERT_TRUE(!c.best);
  ASSERT_THROW(paired_table(in, {"A"}, {"x", "y"}, "w"), UserError);

  // Paired against a row: differences to row A of runs sharing column and seed (MZU Table 4:
  // every model against satMZU at each depth).
  auto pr = paired_table(in, {"A", "B", "C"}, {"x", "y"}, "A");
  ASSERT_EQ(pr.paired_axis, std::string("row"));
  for (auto& c : pr.cells[0]) ASSERT_TRUE(c.reference);
  ASSERT_FALSE(pr.cells[1][0].reference);
  std::map<std::pair<std::string, int64_t>, double> v;
  for (auto& x : in) v[{x.row + "|" + x.col, x.seed}] = x.value;
  for (size_t r = 1; r < 3; ++r)
    for (size_t c = 0; c < 2; ++c) {
      const std::string R = r == 1 ? "B" : "C", C = c == 0 ? "x" : "y";
      std::vector<double> d;
      for (int64_t s = 1; s <= 3; ++s)
        if (v.count({R + "|" + C, s}) && v.count({"A|" + C, s})) d.push_back(v[{R + "|" + C, s}] - v[{"A|" + C, s}]);
      ASSERT_EQ(pr.cells[r][c].n, static_cast<int>(d.size())) << R << C;
      double m = 0;
      for (double e : d) m += e;
      if (!d.empty()) {
        ASSERT_NEAR(pr.cells[r][c].mean, m / d.size(), 1e-12) << R << C;
      }
    }
  ASSERT_EQ(paired_table(in, {"A", "B", "C"}, {"x", "y"}, "row:A").paired_axis, std::string("row"));
  ASSERT_THROW(paired_table(in, {"A", "B", "C"}, {"x", "y"}, "col:A"), UserError);
  ASSERT_THROW(paired_table(in, {"x", "B"}, {"x", "y"}, "x"), UserError);  // both a row and a column
  ASSERT_EQ(paired_table(in, {"x", "B"}, {"x", "y"}, "col:x").paired_axis, std::string("column"));
}

TEST_F(Sweep, latexStructure) {
  std::vector<TableInput> in = {{"cru_deep", "spam_assassin", 1, 0.91},
                                {"cru_deep", "spam_assassin", 2, 0.93},
                                {"gru & 50% #1", "spam_assassin", 1, 0.88},
                                {"gru & 50% #1", "sotu", 1, 0.6},
                                {"cru_deep", "sotu", 1, 0.62}};
  auto t = aggregate_table(in, {"cru_deep", "gru & 50% #1"}, {"spam_assassin", "sotu"}, true, "column");
  t.title = "my_sweep";
  t.metric = "test accuracy";
  t.row_header = "model.cell";
  t.col_header = "dataset.name";
  t.seeds = {1, 2};
  const std::string tex = table_to_latex(t);
  auto ls = lines_of(tex);
  int begin = -1, end = -1;
  for (int i = 0; i < static_cast<int>(ls.size()); ++i) {
    if (ls[i].rfind("\\begin{tabular}{", 0) == 0) begin = i;
    if (ls[i] == "\\end{tabular}") end = i;
  }
  ASSERT_TRUE(begin >= 0 && end > begin) << tex.c_str();
  ASSERT_EQ(ls[begin], std::string("\\begin{tabular}{lcc}"));
  int rows = 0;
  for (int i = begin + 1; i < end; ++i) {
    const std::string& l = ls[i];
    if (l == "\\hline") continue;
    ++rows;
    ASSERT_TRUE(l.size() > 3 && l.substr(l.size() - 3) == " \\\\") << l.c_str();
    ASSERT_EQ(unescaped(l, '&'), 2);  // same number of cells per row: 1 + 2 columns
    ASSERT_EQ(unescaped(l, '_'), 0);  // underscores escaped
    ASSERT_EQ(unescaped(l, '%'), 0);
    ASSERT_EQ(unescaped(l, '#'), 0);
    ASSERT_EQ(unescaped(l, '$') % 2, 0);  // math mode balanced
    int depth = 0;
    for (size_t k = 0; k < l.size(); ++k) {  // braces balanced
      if (l[k] == '{' && (k == 0 || l[k - 1] != '\\')) ++depth;
      if (l[k] == '}' && (k == 0 || l[k - 1] != '\\')) --depth;
      ASSERT_TRUE(depth >= 0);
    }
    ASSERT_EQ(depth, 0);
  }
  ASSERT_EQ(rows, 3);  // header + 2 rows
  ASSERT_TRUE(tex.find("model.cell & spam\\_assassin & sotu \\\\") != std::string::npos);
  ASSERT_TRUE(tex.find("gru \\& 50\\% \\#1") != std::string::npos);
  ASSERT_TRUE(tex.find("$\\mathbf{0.920 \\pm 0.014}$") != std::string::npos) << tex.c_str();  // best of column 1
  ASSERT_TRUE(tex.find("$0.880$") != std::string::npos);                                      // one seed: no +-
  ASSERT_TRUE(tex.find("$\\mathbf{0.620}$") != std::string::npos);
  // Every line before the tabular is a comment (pastes into a document as is).
  for (int i = 0; i < begin; ++i) ASSERT_TRUE(ls[i].rfind("%", 0) == 0);
}

TEST_F(Sweep, cli) {
  const std::string ws = cstest::temp_dir() + "/ws";
  const std::string spec_path = cstest::temp_dir() + "/cli_spec.json";
  json spec = {{"name", "cli-toy"},
               {"base", toy_base(corpus_, 10)},
               {"grid", {{"model.hidden", {8, 12, 16}}}},
               {"seeds", {1, 2}}};
  atomic_write(spec_path, spec.dump());
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "run", spec_path, "--workspace", ws, "--dry-run"}, &out, &err), 0);
  ASSERT_TRUE(cstest::contains(out, "6 points") && cstest::contains(out, "model.hidden=16,seed=2")) << out + err;
  ASSERT_TRUE(!std::filesystem::exists(ws + "/sweeps/cli-toy"));  // a dry run writes nothing
  // An invalid grid value: exit 2, the point and the path named, nothing written.
  spec["grid"]["model.hidden"] = {8, -3};
  atomic_write(spec_path, spec.dump());
  ASSERT_EQ(cstest::run_cli({"sweep", "run", spec_path, "--workspace", ws}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "model.hidden=-3") && cstest::contains(err, "model.hidden:")) << err;
  ASSERT_TRUE(!std::filesystem::exists(ws + "/sweeps/cli-toy"));
  // Bundled sweeps list and validate (without running).
  ASSERT_EQ(cstest::run_cli({"sweep", "list"}, &out, &err), 0);
  ASSERT_TRUE(cstest::contains(out, "reproduce-mzu-table3") && cstest::contains(out, "reproduce-cru-fig3"));
  // The table of the sweep run in resumeRunsOnlyTheRest, exported.
  const std::string tex = cstest::temp_dir() + "/resume.tex", csv = cstest::temp_dir() + "/resume.csv";
  ASSERT_EQ(cstest::run_cli({"sweep", "table", "resume", "--workspace", ws, "--out", tex}, &out, &err), 0);
  ASSERT_TRUE(cstest::contains(out, "model.hidden") && cstest::contains(out, "bpc")) << out + err;
  ASSERT_EQ(cstest::run_cli({"sweep", "table", "resume", "--workspace", ws, "--out", csv}, &out, &err), 0);
  ASSERT_TRUE(std::filesystem::exists(csv));
  const std::vector<std::string> csv_lines = cstest::split(cstest::read_text(csv), '\n', true);
  ASSERT_EQ(int(csv_lines.size()), 3);
  const auto csv_fields = cstest::split(csv_lines[1], ',');
  ASSERT_TRUE(cstest::starts_with(csv_lines[1], "8,") && csv_fields.size() > 4 && csv_fields[4] == "2");
  ASSERT_TRUE(std::filesystem::exists(tex));
  ASSERT_EQ(cstest::run_cli({"sweep", "table", "resume", "--workspace", ws, "--series", "model.hidden"}, &out, &err),
            0);
  ASSERT_TRUE(cstest::contains(out, "series,model.hidden,mean,std,n")) << out;
  ASSERT_EQ(cstest::run_cli({"sweep", "status", "resume", "--workspace", ws}, &out, &err), 0);
  ASSERT_TRUE(cstest::contains(out, "4/4 points done"));
  ASSERT_EQ(cstest::run_cli({"sweep", "table", "nosuch", "--workspace", ws}, &out, &err), 2);
}

}  // namespace test_sweep

namespace test_sweep {

// Per-example test results (issue #51 item 1): where both runs of every seed stored their test
// examples (RUN_DIR/test_examples.json), a paired comparison is tested over them too (a paired
// bootstrap) and the verdict reads the larger p; where one is missing, the seeds' t-test alone.
TEST_F(Sweep, pairedTableTestsOverStoredTestExamples) {
  const std::string root = cstest::temp_dir() + "/examples";
  // Accuracy on 60 test examples: B is right on 30 of them and A on those and `extra` more, for
  // every seed, so every seed gives the same difference (the t-test's p is 0) and the examples decide.
  auto run = [&](const std::string& name, int64_t seed, int right) {
    const std::string dir = root + "/" + name + "-" + std::to_string(seed);
    std::filesystem::create_directories(dir);
    TestExamples e;
    e.metric = "accuracy";
    e.unit = "example";
    for (int i = 0; i < 60; ++i) {
      e.sums.push_back(i < right ? 1.0 : 0.0);
      e.units.push_back(1);
    }
    write_test_examples(dir, e);
    return dir;
  };
  auto table = [&](int extra, bool drop_one) {
    std::vector<TableInput> in;
    for (int64_t s = 1; s <= 5; ++s) {
      const std::string b = run("B" + std::to_string(extra), s, 30),
                        a = run("A" + std::to_string(extra), s, 30 + extra);
      const auto eb = read_test_examples(b), ea = read_test_examples(a);
      in.push_back({"r", "B", s, eb->metric_value(), false, b});
      in.push_back({"r", "A", s, ea->metric_value(), false, drop_one && s == 3 ? std::string() : a});
    }
    return paired_table(in, {"r"}, {"B", "A"}, "B", "test accuracy");
  };
  // 2 more right of 60: the seeds agree, the test set cannot tell (McNemar-like: 2 of 2).
  auto small = table(2, false);
  const Significance& s = small.cells[0][1].sig;
  ASSERT_EQ(s.seeds, 5);
  ASSERT_FALSE(std::isnan(s.p_examples)) << s.test();
  ASSERT_TRUE(cstest::contains(s.test(), "a paired bootstrap over 60 test examples (10000 resamples)")) << s.test();
  ASSERT_GT(s.p_examples, 0.05) << s.p_examples;
  ASSERT_LT(s.t.p, 0.05) << s.t.p;  // the seeds alone would call it
  ASSERT_EQ(s.p, std::max(s.t.p, s.p_examples));
  ASSERT_NE(s.verdict, "holds") << s.text();
  // Each output shows the per-example p beside the seeds' (text column, CSV examples_p, JSON).
  const std::string txt = table_to_text(small);
  ASSERT_TRUE(cstest::contains(txt, "bootstrap over test examples")) << txt;
  ASSERT_TRUE(cstest::contains(txt, p_text(s.p_examples))) << txt;
  ASSERT_TRUE(cstest::contains(table_to_csv(small), ",examples_p,")) << table_to_csv(small);
  // 25 more right of 60 on every seed: both tests reject, the difference holds.
  auto large = table(25, false);
  ASSERT_LT(large.cells[0][1].sig.p_examples, 0.001);
  ASSERT_EQ(large.cells[0][1].sig.verdict, "holds") << large.cells[0][1].sig.text();
  // One run without its examples: the seeds' test alone, and the note says what p leaves out.
  auto partial = table(25, true);
  ASSERT_TRUE(std::isnan(partial.cells[0][1].sig.p_examples));
  // No metric given (hand-made tables): no per-example test.
  std::vector<TableInput> plain = {{"r", "B", 1, 0.5, false, root + "/B2-1"},
                                   {"r", "A", 1, 0.6, false, root + "/A2-1"}};
  ASSERT_TRUE(std::isnan(paired_table(plain, {"r"}, {"B", "A"}, "B").cells[0][1].sig.p_examples));
  // A file that cannot be read is named.
  atomic_write(root + "/A2-1/test_examples.json", "{\"metric\": \"accuracy\"}");
  try {
    read_test_examples(root + "/A2-1");
    FAIL() << "read a broken test_examples.json";
  } catch (const UserError& e) {
    ASSERT_TRUE(cstest::contains(e.what(), "test_examples.json' is not a valid test-examples file")) << e.what();
  }
}

// The file's metric recomputed from its examples, and the scores whose mean is the per-unit loss.
TEST_F(Sweep, testExamplesOfSequenceScores) {
  SequenceScores lm;
  lm.metric = "bpc";
  for (auto [units, sum] : std::vector<std::pair<int64_t, double>>{{10, 7.0}, {30, 14.0}, {0, 0.0}}) {
    ScoredSequence q;
    q.units = q.length = units;
    q.sum = sum;
    lm.sequences.push_back(q);
  }
  const auto e = test_examples_of(lm);
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->sums.size(), 2u);  // the empty line scores nothing
  ASSERT_NEAR(e->metric_value(), 21.0 / 40.0 / std::log(2.0), 1e-12);
  const auto sc = e->scores();
  ASSERT_NEAR((sc[0] + sc[1]) / 2, 21.0 / 40.0, 1e-12);  // the mean is the loss per character
  SequenceScores bleu;
  bleu.metric = "bleu";
  ASSERT_FALSE(test_examples_of(bleu).has_value());  // no pairs, no file
}

// seq2seq (issue #51 item 1, for MC-RNN Tables 2-3): the file holds each test pair's BLEU statistics
// and ROUGE F1, gives the corpus BLEU and ROUGE exactly, and a paired table tests BLEU by the
// bootstrap of corpus BLEU over the pairs and ROUGE by the bootstrap of the pairs' mean F1.
TEST_F(Sweep, seq2seqTestExamplesBootstrapCorpusBleu) {
  auto mean_of = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  const std::vector<std::string> refs = {
      "the cat sat on the mat",  "a dog ran in the park",   "free money now click here", "meeting moved to friday",
      "your account was locked", "new version released",    "lunch at noon today",       "the report is attached",
      "call me when you can",    "tickets for the concert", "invoice for march is due",  "please review the draft"};
  // B gets the first three words of each reference right; A is B, better on `better` pairs
  auto hyps_of = [&](int better) {
    std::vector<std::string> h;
    for (size_t i = 0; i < refs.size(); ++i) {
      if (static_cast<int>(i) < better) {
        h.push_back(refs[i]);
        continue;
      }
      const auto w = whitespace_words(refs[i]);
      h.push_back(w[0] + " " + w[1] + " " + w[2] + " something else");
    }
    return h;
  };
  auto scores_of = [&](const std::vector<std::string>& h) {
    SequenceScores s;
    s.metric = "bleu";
    for (size_t i = 0; i < refs.size(); ++i) {
      ScoredSequence q;
      q.units = 1;
      q.hypothesis = h[i];
      q.reference = refs[i];
      s.sequences.push_back(q);
    }
    return s;
  };
  const auto hb = hyps_of(0);
  const auto e = test_examples_of(scores_of(hb));
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->metric, "bleu");
  ASSERT_EQ(e->count(), refs.size());
  ASSERT_NEAR(e->metric_value(), corpus_bleu(hb, refs).bleu, 1e-9);
  const auto rouge = corpus_rouge(hb, refs);
  ASSERT_NEAR(mean_of(*e->mean_scores("rouge1")), rouge.rouge1, 1e-9);
  ASSERT_NEAR(mean_of(*e->mean_scores("rougeL")), rouge.rougeL, 1e-9);
  ASSERT_FALSE(e->mean_scores("bleu").has_value());  // a corpus statistic, not a mean
  // written and read back unchanged
  const std::string root = cstest::temp_dir() + "/s2s-examples";
  std::filesystem::create_directories(root + "/probe");
  write_test_examples(root + "/probe", *e);
  const auto back = read_test_examples(root + "/probe");
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->bleu, e->bleu);
  ASSERT_EQ(back->means, e->means);
  ASSERT_EQ(back->bleu_signature, bleu_signature(BleuOptions{}, 1));
  ASSERT_NEAR(back->metric_value(), e->metric_value(), 1e-12);
  // a ragged row is named
  atomic_write(root + "/probe/test_examples.json",
               "{\"metric\": \"bleu\", \"unit\": \"sentence pair\", \"sums\": [], \"units\": [], "
               "\"bleu\": [[1, 1, 1, 1], [1, 1, 1]]}");
  try {
    read_test_examples(root + "/probe");
    FAIL() << "read a ragged test_examples.json";
  } catch (const UserError& x) {
    ASSERT_TRUE(cstest::contains(x.what(), "BLEU statistics have 3 numbers")) << x.what();
  }
  // 5 seeds of A against B; A better on `better` of the 12 pairs on every seed (the seeds' t-test p
  // is 0), so the test pairs decide
  auto table = [&](int better, const std::string& metric) {
    std::vector<TableInput> in;
    for (int64_t s = 1; s <= 5; ++s) {
      const std::string b = root + "/B" + std::to_string(better) + "-" + std::to_string(s),
                        a = root + "/A" + std::to_string(better) + "-" + std::to_string(s);
      std::filesystem::create_directories(b);
      std::filesystem::create_directories(a);
      const auto eb = test_examples_of(scores_of(hb)), ea = test_examples_of(scores_of(hyps_of(better)));
      write_test_examples(b, *eb);
      write_test_examples(a, *ea);
      const bool bleu = metric.rfind("test bleu", 0) == 0;
      in.push_back({"r", "B", s, bleu ? eb->metric_value() : mean_of(*eb->mean_scores("rouge1")), false, b});
      in.push_back({"r", "A", s, bleu ? ea->metric_value() : mean_of(*ea->mean_scores("rouge1")), false, a});
    }
    return paired_table(in, {"r"}, {"B", "A"}, "B", metric);
  };
  // one pair of 12 better: the seeds agree, the 12 pairs cannot tell
  const auto one = table(1, "test bleu (beam 5, lp 1.0)");  // the label sweep table gives it
  const Significance& s1 = one.cells[0][1].sig;
  ASSERT_FALSE(std::isnan(s1.p_examples)) << s1.test();
  ASSERT_TRUE(
      cstest::contains(s1.test(), "a paired bootstrap over 12 test sentence pairs (10000 resamples, corpus BLEU"))
      << s1.test();
  ASSERT_GT(s1.p_examples, 0.05);
  ASSERT_NE(s1.verdict, "holds") << s1.text();
  ASSERT_TRUE(cstest::contains(examples_note("test bleu (beam 5, lp 1.0)"), "Koehn's paired bootstrap"));
  // every pair better: the difference holds
  const auto all = table(12, "test bleu");
  ASSERT_LT(all.cells[0][1].sig.p_examples, 0.001);
  ASSERT_EQ(all.cells[0][1].sig.verdict, "holds") << all.cells[0][1].sig.text();
  // ROUGE: the mean of the pairs' F1, bootstrapped as a mean
  const auto r1 = table(12, "test rouge1");
  ASSERT_LT(r1.cells[0][1].sig.p_examples, 0.001);
  ASSERT_TRUE(cstest::contains(r1.cells[0][1].sig.test(), "over 12 test sentence pairs (10000 resamples)"))
      << r1.cells[0][1].sig.test();
}

}  // namespace test_sweep
