// Tables that mean something at a small scale (core/run/sweep/table.*): each cell's size,
// steps reached (early stop / step cap) and budget (wall-clock, training FLOPs), and the
// compute-matched view (`sweep table --budget time=S|flops=X|step=N`). The fixtures are run
// directories written by the test (summary.json, config.json, metrics.jsonl), so the numbers
// are known exactly: a fast cell and a slow cell whose step-matched ordering is the reverse of
// their time-matched one, a run that ends before the budget, an old metrics file without
// training FLOPs. Plus the trainer's own FLOP count (train_flops in metrics.jsonl and
// summary.json, continued across a resume).

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <cstdlib>

#include "corpus_fixture.h"
#include "harness.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "train/test_examples.h"
#include "config/json.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_sweep_table {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

struct FakeRun {
  double sec_per_step = 0.1;
  double flops_per_step = 1e9;
  double start = 3.0, slope = 1e-3;  // valid(step) = start - slope * step (test = valid + 0.05)
  int64_t end = 1000, cap = 1000;
  bool early = false;      // ended by early stopping (else: the step cap)
  bool with_flops = true;  // false: an old metrics file (no train_flops)
  bool track_test = true;
  int64_t parameters = 1000;
  int64_t eval_every = 100;
  double worse_after = -1;                  // > 0: valid gets worse after this step (early stopping's patience)
  int64_t test_units = 0, valid_units = 0;  // the splits' sizes in summary.json (0: not recorded, an older run)
  // >= 0: a seq2seq-like run whose final test line has this "bleu" (beam decodes) and whose
  // test_examples.json holds 40 pairs, `matched` n-grams of 4 right per order in each
  double bleu = -1;
  int64_t matched = 0;
};

double valid_at(const FakeRun& f, int64_t s) {
  const double v = f.start - f.slope * static_cast<double>(s);
  if (f.worse_after > 0 && s > f.worse_after)
    return f.start - f.slope * f.worse_after + 1e-3 * static_cast<double>(s - f.worse_after);
  return v;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream o(path);
  o << text;
}

// A run directory as the trainer leaves it.
void write_run(const std::string& dir, const FakeRun& f) {
  std::filesystem::create_directories(dir);
  json cfg = {{"task", {{"name", "char_lm"}}},
              {"model", {{"cell", "gru"}}},
              {"training", {{"steps", f.cap}, {"eval_every", f.eval_every}, {"track_test", f.track_test}}}};
  write(dir + "/config.json", cfg.dump(2));
  std::string lines;
  double best = 1e9;
  int64_t best_step = 0;
  for (int64_t s = 10; s <= f.end; s += 10) {
    MetricsRecord r;
    r.step = s;
    r.elapsed = f.sec_per_step * static_cast<double>(s);
    if (f.with_flops) r.train_flops = f.flops_per_step * static_cast<double>(s);
    r.values["loss"] = valid_at(f, s);
    lines += r.to_json().dump() + "\n";
    if (s % f.eval_every == 0) {
      MetricsRecord e = r;
      e.values.clear();
      e.eval = true;
      e.split = "valid";
      e.elapsed += 0.01;  // the evaluation's own time
      e.values["bpc"] = valid_at(f, s);
      lines += e.to_json().dump() + "\n";
      if (valid_at(f, s) < best) best = valid_at(f, s), best_step = s;
      if (f.track_test) {
        e.split = "test";
        e.values["bpc"] = valid_at(f, s) + 0.05;
        lines += e.to_json().dump() + "\n";
      }
    }
  }
  // the final test evaluation of best.pt, at the last step (not a tracked one)
  MetricsRecord t;
  t.step = f.end;
  t.eval = true;
  t.split = "test";
  t.elapsed = f.sec_per_step * static_cast<double>(f.end) + 0.5;
  if (f.with_flops) t.train_flops = f.flops_per_step * static_cast<double>(f.end);
  t.values["bpc"] = 99.0;  // would be an obvious mistake if a budget read it as the value at the last step
  if (f.bleu >= 0) {
    t.values["bleu"] = f.bleu;
    t.labels["decode"] = "beam 5, lp 1.0";
    TestExamples e;
    e.metric = "bleu";
    e.unit = "sentence pair";
    for (int i = 0; i < 40; ++i) {
      const int64_t m = f.matched;
      e.bleu.push_back(
          {4, 4, m, std::max<int64_t>(m - 1, 0), std::max<int64_t>(m - 2, 0), std::max<int64_t>(m - 3, 0), 4, 3, 2, 1});
    }
    write_test_examples(dir, e);
  }
  lines += t.to_json().dump() + "\n";
  write(dir + "/metrics.jsonl", lines);
  RunSummary s;
  s.status = "finished";
  s.reason = f.early ? "early stop (patience)" : "";
  s.task = "char_lm";
  s.cell = "gru";
  s.primary_metric = "bpc";
  s.lower_is_better = true;
  s.parameters = f.parameters;
  s.step = f.end;
  s.elapsed = t.elapsed;
  s.train_flops = f.with_flops ? f.flops_per_step * static_cast<double>(f.end) : std::nan("");
  s.has_best = true;
  s.best_valid = best;
  s.best_step = best_step;
  s.has_test = true;
  s.test_metric = best + 0.05;
  s.test_units = f.test_units;
  s.valid_units = f.valid_units;
  write(dir + "/summary.json", s.to_json().dump(2));
}

// A sweep directory: grid "cell" in {fast, slow}, seeds {1, 2}; runs from `runs(label, seed)`.
std::string make_sweep(const std::string& name, const std::function<FakeRun(const std::string&, int64_t)>& runs,
                       const std::string& metric = "test", const json& paper = json()) {
  const std::string dir = cstest::temp_dir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string corpus = cstest::write_text_fixture("sweep_table_corpus.txt", 4000);
  json spec = {
      {"name", name},
      {"base",
       {{"task", {{"name", "char_lm"}}},
        {"dataset", {{"path", corpus}}},
        {"model", {{"cell", "gru"}}},
        {"training", {{"steps", 1000}}}}},
      {"grid", json::array({{{"name", "cell"},
                             {"values", json::array({{{"label", "fast"}, {"set", json::object()}},
                                                     {{"label", "slow"}, {"set", {{"model.hidden", 64}}}}})}}})},
      {"seeds", {1, 2}},
      {"table", {{"rows", "cell"}, {"metric", metric}, {"best", "column"}}}};
  if (!paper.is_null()) spec["paper"] = paper;
  write(dir + "/sweep.json", spec.dump(2));
  // the point ids as the sweep names them
  auto pending = read_sweep_results(dir);
  json pts = json::object();
  for (auto& rec : pending.records) {
    const std::string rd = dir + "/runs/" + rec.point.labels[0] + "-" + std::to_string(rec.point.seed);
    write_run(rd, runs(rec.point.labels[0], rec.point.seed));
    pts[rec.point.id] = {{"run_dir", rd}, {"status", "finished"}};
  }
  write(dir + "/state.json", json{{"points", pts}}.dump(2));
  return dir;
}

// fast: 0.1 s and 1e9 FLOPs per step, slow learner per step; slow: 6x the cost per step, a
// faster learner per step. Both run 1000 steps (the cap). Seed 2 is a little worse.
FakeRun fast_or_slow(const std::string& label, int64_t seed) {
  FakeRun f;
  const double off = seed == 2 ? 0.02 : 0.0;
  if (label == "fast") {
    f.sec_per_step = 0.1, f.flops_per_step = 1e9, f.start = 3.0 + off, f.slope = 0.8e-3, f.parameters = 1000;
  } else {
    f.sec_per_step = 0.6, f.flops_per_step = 6e9, f.start = 3.0 + off, f.slope = 1.2e-3, f.parameters = 6000;
  }
  return f;
}

// The row's label as a C string: a std::string parameter made from a literal is a temporary, and
// binding the returned reference would then look dangling to GCC 14 (-Wdangling-reference).
const TableCell& cell_of(const SweepTable& t, const char* row) {
  for (size_t r = 0; r < t.row_labels.size(); ++r)
    if (t.row_labels[r] == row) return t.cells[r][0];
  throw std::runtime_error(std::string("no row ") + row);
}

}  // namespace

TEST(SweepTable, parseBudget) {
  auto b = parse_budget("time=90");
  EXPECT_EQ(b.kind, "time");
  EXPECT_DOUBLE_EQ(b.amount, 90);
  EXPECT_DOUBLE_EQ(parse_budget("time=2m").amount, 120);
  EXPECT_DOUBLE_EQ(parse_budget("flops=2T").amount, 2e12);
  EXPECT_DOUBLE_EQ(parse_budget("flops=500G").amount, 5e11);
  EXPECT_DOUBLE_EQ(parse_budget("flops=3.5e12").amount, 3.5e12);
  EXPECT_EQ(parse_budget("step=300").kind, "step");
  EXPECT_TRUE(parse_budget("time=common").common);
  for (const char* bad :
       {"time", "time=", "flops=-1", "flops=0", "foo=1", "time=abc", "flops=3X", "time=5G", "step=1e999"})
    EXPECT_THROW(parse_budget(bad), UserError) << bad;
}

TEST(SweepTable, valueAtBudgetSelectsWithinTheBudgetOnly) {
  // valid improves to step 300, then gets worse; the table's value is test at the selected eval
  std::vector<EvalAt> ev = {
      {100, 10, 1e9, 2.0, 2.1}, {200, 20, 2e9, 1.8, 1.9}, {300, 30, 3e9, 1.7, 1.75}, {400, 40, 4e9, 1.9, 1.6}};
  Budget b{"time", 35};
  auto v = value_at_budget(ev, 45, b, true);
  ASSERT_TRUE(v.has_value);
  EXPECT_EQ(v.step, 300);
  EXPECT_DOUBLE_EQ(v.value, 1.75);
  EXPECT_TRUE(v.reached);
  // the evaluation after the budget is never used, even when better
  b.amount = 25;
  v = value_at_budget(ev, 45, b, true);
  EXPECT_EQ(v.step, 200);
  // selection by the valid metric, not the table's value (test 1.6 at step 400 is not picked)
  b.amount = 1000;
  v = value_at_budget(ev, 45, b, true);
  EXPECT_EQ(v.step, 300);
  EXPECT_FALSE(v.reached);  // the run ended at 45 s: short of the budget
  // nothing within the budget: no value, and the reason
  b.amount = 5;
  v = value_at_budget(ev, 45, b, true);
  EXPECT_FALSE(v.has_value);
  EXPECT_NE(v.problem.find("no evaluation within the budget"), std::string::npos) << v.problem;
  // FLOPs and steps
  v = value_at_budget(ev, 4e9, Budget{"flops", 2.5e9}, true);
  EXPECT_EQ(v.step, 200);
  v = value_at_budget(ev, 400, Budget{"step", 100}, true);
  EXPECT_EQ(v.step, 100);
  // higher is better
  v = value_at_budget(ev, 45, Budget{"time", 1000}, false);
  EXPECT_EQ(v.step, 100);
}

TEST(SweepTable, fastAndSlowCellsSwapOrderAtEqualTime) {
  const std::string dir = make_sweep("fast-slow", fast_or_slow);
  auto res = read_sweep_results(dir);
  // Step-matched (each run at its end, 1000 steps): slow is better (test 1.85 vs 2.25).
  auto t = sweep_table(res);
  ASSERT_EQ(cell_of(t, "slow").n, 2);
  EXPECT_TRUE(cell_of(t, "slow").best);
  EXPECT_FALSE(cell_of(t, "fast").best);
  EXPECT_NEAR(cell_of(t, "slow").mean, 3.0 + 0.01 - 1.2 + 0.05, 1e-9);
  // the runs block: size, steps with the cap marked, budget
  ASSERT_EQ(cell_of(t, "slow").runs.size(), 2u);
  EXPECT_EQ(cell_of(t, "slow").runs[0].parameters, 6000);
  EXPECT_EQ(cell_of(t, "slow").runs[0].step, 1000);
  EXPECT_EQ(cell_of(t, "slow").runs[0].end, "cap");
  EXPECT_NEAR(cell_of(t, "slow").runs[0].flops, 6e12, 1);
  EXPECT_NEAR(cell_of(t, "fast").runs[0].seconds, 100.5, 1e-9);
  const std::string txt = table_to_text(t);
  EXPECT_NE(txt.find("s1:1000C s2:1000C"), std::string::npos) << txt;
  EXPECT_NE(txt.find("6e+12"), std::string::npos) << txt;
  EXPECT_NE(txt.find("6000"), std::string::npos) << txt;

  // Equal wall-clock time, 100 s: fast has run all 1000 steps (test at its best eval, step 1000,
  // 2.25), slow only 166 (its last evaluation within 100 s: step 100, 60 s; 2.93): fast wins.
  auto tt = sweep_table(res, "", parse_budget("time=100.5"));
  ASSERT_EQ(cell_of(tt, "fast").n, 2);
  ASSERT_EQ(cell_of(tt, "slow").n, 2);
  EXPECT_NEAR(cell_of(tt, "fast").mean, 3.01 - 0.8 + 0.05, 1e-9);
  EXPECT_NEAR(cell_of(tt, "slow").mean, 3.01 - 0.12 + 0.05, 1e-9);
  EXPECT_TRUE(cell_of(tt, "fast").best);
  EXPECT_FALSE(cell_of(tt, "slow").best);
  EXPECT_EQ(cell_of(tt, "fast").short_of_budget, 0);
  EXPECT_EQ(tt.metric, "test bpc");  // track_test: test read at the selected evaluation
  const std::string ttxt = table_to_text(tt);
  EXPECT_NE(ttxt.find("equal wall-clock time: 100 s"), std::string::npos) << ttxt;

  // Equal training FLOPs, 1e12: the same ordering as equal time (fast: 1000 steps, slow: 166).
  auto tf = sweep_table(res, "", parse_budget("flops=1T"));
  EXPECT_TRUE(cell_of(tf, "fast").best);
  EXPECT_NEAR(cell_of(tf, "slow").mean, 3.01 - 0.12 + 0.05, 1e-9);
  // Equal steps reproduces the step-matched ordering.
  auto ts = sweep_table(res, "", parse_budget("step=1000"));
  EXPECT_TRUE(cell_of(ts, "slow").best);
  // JSON carries the budget and the runs
  const json j = table_to_json(tf);
  EXPECT_EQ(j["budget"]["kind"], "flops");
  EXPECT_EQ(j["cells"][0]["runs"].size(), 2u);
}

TEST(SweepTable, runThatNeverReachesTheBudgetIsMarkedNotExtrapolated) {
  const std::string dir = make_sweep("short-run", fast_or_slow);
  auto res = read_sweep_results(dir);
  // 300.5 s: fast ended at 100.5 s (read at its end, marked), slow reaches it (step 500 at 300.01 s).
  auto t = sweep_table(res, "", parse_budget("time=300.5"));
  EXPECT_EQ(cell_of(t, "fast").short_of_budget, 2);
  EXPECT_EQ(cell_of(t, "slow").short_of_budget, 0);
  EXPECT_NEAR(cell_of(t, "fast").mean, 3.01 - 0.8 + 0.05, 1e-9);  // its end, not more
  EXPECT_NEAR(cell_of(t, "slow").mean, 3.01 - 0.6 + 0.05, 1e-9);
  const std::string txt = table_to_text(t);
  EXPECT_NE(txt.find("^2"), std::string::npos) << txt;
  EXPECT_NE(txt.find("ended before the budget"), std::string::npos) << txt;
  EXPECT_NE(table_to_latex(t).find("\\dagger"), std::string::npos);
  // CSV: short_of_budget counts them (then split_size, unknown here, and refused; then the paired test's
  // five columns, empty outside the paired view, and the labels)
  EXPECT_NE(table_to_csv(t).find(",2,0,0,,,,,,"), std::string::npos) << table_to_csv(t);
  // A budget before any evaluation of slow (its first at 60 s): no value, and why.
  auto e = sweep_table(res, "", parse_budget("time=30"));
  EXPECT_EQ(cell_of(e, "slow").n, 0);
  EXPECT_EQ(cell_of(e, "fast").n, 2);
  EXPECT_EQ(e.missing, 2);
  ASSERT_EQ(e.budget_problems.size(), 2u);
  EXPECT_NE(e.budget_problems[0].find("no evaluation within the budget"), std::string::npos) << e.budget_problems[0];
  // common: the largest budget every run reached (fast's end, 100.5 s)
  auto c = sweep_table(res, "", parse_budget("time=common"));
  EXPECT_NEAR(c.budget.amount, 100.5, 1e-9);
  EXPECT_EQ(cell_of(c, "fast").short_of_budget, 0);
  EXPECT_TRUE(cell_of(c, "fast").best);
}

TEST(SweepTable, earlyStoppedRunsAndTheirSteps) {
  const std::string dir = make_sweep("early", [](const std::string& label, int64_t seed) {
    FakeRun f = fast_or_slow(label, seed);
    if (label == "fast") {
      f.end = 600, f.early = true, f.worse_after = 300;  // best at 300, three worse evaluations
    }
    return f;
  });
  auto t = sweep_table(read_sweep_results(dir));
  EXPECT_EQ(cell_of(t, "fast").runs[0].end, "early stop");
  EXPECT_EQ(cell_of(t, "fast").runs[1].step, 600);
  const std::string txt = table_to_text(t);
  EXPECT_NE(txt.find("s1:600E s2:600E"), std::string::npos) << txt;
  // At a budget beyond its end, an early-stopped run is read at its best evaluation (as its
  // best.pt), not its last: the step-matched and the budget table agree for it.
  auto b = sweep_table(read_sweep_results(dir), "", parse_budget("time=1000"));
  EXPECT_NEAR(cell_of(b, "fast").mean, cell_of(t, "fast").mean, 1e-9);
}

TEST(SweepTable, cellOnATestSetUnderTheMinimumIsRefused) {
  // "slow" has the better test value but was tested on 99 examples (under kMinTableSplitSize =
  // 100) in one seed: no number, never bold, "n/a (test set 99 < 100)" everywhere; "fast" (100
  // test examples, the minimum) is printed and is the best of the column.
  ASSERT_EQ(kMinTableSplitSize, 100);
  const std::string dir = make_sweep("small-test", [](const std::string& label, int64_t seed) {
    FakeRun f = fast_or_slow(label, seed);
    f.test_units = label == "slow" ? (seed == 1 ? 99 : 413) : 100;
    f.valid_units = 500;
    return f;
  });
  auto t = sweep_table(read_sweep_results(dir));
  const TableCell& slow = cell_of(t, "slow");
  const TableCell& fast = cell_of(t, "fast");
  EXPECT_TRUE(slow.refused);
  EXPECT_EQ(slow.split_size, 99);
  EXPECT_EQ(slow.n, 0);
  EXPECT_FALSE(slow.best);
  EXPECT_FALSE(fast.refused);
  EXPECT_EQ(fast.split_size, 100);
  EXPECT_EQ(fast.n, 2);
  EXPECT_TRUE(fast.best);  // slow's lower mean would be best; refused, it does not compete
  EXPECT_EQ(format_cell(slow), "n/a (test set 99 < 100)");
  const std::string txt = table_to_text(t);
  EXPECT_NE(txt.find("n/a (test set 99 < 100)"), std::string::npos) << txt;
  EXPECT_NE(txt.find("*" + format_cell(fast, 3) + "*"), std::string::npos) << txt;
  EXPECT_NE(txt.find("fewer than 100 examples"), std::string::npos) << txt;
  EXPECT_NE(table_to_latex(t).find("n/a (test set 99 $<$ 100)"), std::string::npos) << table_to_latex(t);
  const std::string csv = table_to_csv(t);
  bool csv_seen = false;
  for (auto& line : cstest::split(csv, '\n', true)) {
    if (line.rfind("slow,", 0) != 0) continue;
    csv_seen = true;
    const auto f = cstest::split(line, ',');
    ASSERT_EQ(f.size(), 26u) << line;  // 16 + the paired test's 6 + the labels' 3 + left_out
    // no mean, no std, n 0, not best, no seeds or values; split_size 99, refused
    EXPECT_EQ(f[2] + "|" + f[3] + "|" + f[4] + "|" + f[5] + "|" + f[6] + "|" + f[7], "||0|0||") << line;
    EXPECT_EQ(f[14] + "|" + f[15], "99|1") << line;
  }
  EXPECT_TRUE(csv_seen) << csv;
  const json j = table_to_json(t);
  bool seen = false;
  for (auto& c : j.at("cells"))
    if (c.at("row") == "slow") {
      seen = true;
      EXPECT_TRUE(c.at("mean").is_null()) << c.dump();
      EXPECT_TRUE(c.at("refused").get<bool>()) << c.dump();
      EXPECT_EQ(c.at("split_size"), 99) << c.dump();
      EXPECT_TRUE(c.at("values").empty()) << c.dump();
    }
  EXPECT_TRUE(seen);
  // the paired view refuses the difference too
  auto p = sweep_table(read_sweep_results(dir), "fast");
  EXPECT_TRUE(cell_of(p, "slow").refused);
  EXPECT_NE(table_to_text(p).find("n/a (test set 99 < 100)"), std::string::npos) << table_to_text(p);
  // a valid-metric table reads the valid split's size (500: printed)
  auto v = sweep_table(read_sweep_results(dir, "", "valid"));
  EXPECT_FALSE(cell_of(v, "slow").refused);
  EXPECT_EQ(cell_of(v, "slow").split_size, 500);
  EXPECT_EQ(cell_of(v, "slow").n, 2);
}

TEST(SweepTable, oldMetricsWithoutFlopsGiveAClearMessageNotZeros) {
  const std::string dir = make_sweep("old-metrics", [](const std::string& label, int64_t seed) {
    FakeRun f = fast_or_slow(label, seed);
    if (label == "slow" && seed == 2) f.with_flops = false;
    return f;
  });
  auto res = read_sweep_results(dir);
  try {
    sweep_table(res, "", parse_budget("flops=1T"));
    FAIL() << "a FLOPs budget over a run without train_flops must be refused";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("carry no training FLOPs"), std::string::npos) << m;
    EXPECT_NE(m.find("slow-2"), std::string::npos) << m;
    EXPECT_NE(m.find("--budget time="), std::string::npos) << m;
  }
  // the time budget still works for every run; the runs block says "not recorded"
  auto t = sweep_table(res, "", parse_budget("time=100.5"));
  EXPECT_EQ(cell_of(t, "slow").n, 2);
  EXPECT_TRUE(std::isnan(cell_of(t, "slow").runs[1].flops));
  EXPECT_NE(table_to_text(t).find("not recorded"), std::string::npos) << table_to_text(t);
  // the old file itself still reads: no train_flops, everything else intact
  auto recs = read_metrics(dir + "/runs/slow-2/metrics.jsonl");
  ASSERT_FALSE(recs.empty());
  EXPECT_FALSE(recs[0].has_train_flops());
  EXPECT_DOUBLE_EQ(recs[0].elapsed, 6.0);
  EXPECT_EQ(recs[0].to_json().count("train_flops"), 0u);
}

TEST(SweepTable, testNotTrackedFallsBackToValidAndSaysSo) {
  const std::string dir = make_sweep("untracked", [](const std::string& label, int64_t seed) {
    FakeRun f = fast_or_slow(label, seed);
    f.track_test = false;
    return f;
  });
  auto t = sweep_table(read_sweep_results(dir), "", parse_budget("time=100.5"));
  EXPECT_EQ(t.metric, "valid bpc");
  EXPECT_NE(t.budget_note.find("track_test"), std::string::npos) << t.budget_note;
  EXPECT_NEAR(cell_of(t, "fast").mean, 3.01 - 0.8, 1e-9);  // valid, never the final 99.0 test line
  // the one column (no column axis) is named after what it shows, in the text as in the table
  EXPECT_EQ(t.col_labels, std::vector<std::string>{"valid bpc"});
  EXPECT_EQ(table_to_text(t).find("test bpc"), std::string::npos) << table_to_text(t);
}

TEST(SweepTable, cliBudgetFlag) {
  const std::string dir = make_sweep("cli-budget", fast_or_slow);
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "table", dir, "--budget", "time=100.5"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("compute-matched: equal wall-clock time"), std::string::npos) << out;
  EXPECT_NE(out.find("size, steps and budget"), std::string::npos) << out;
  ASSERT_EQ(cstest::run_cli({"sweep", "table", dir, "--at", "flops=1T", "--out", dir + "/t.json"}, &out, &err), 0)
      << err;
  EXPECT_EQ(cs::parse_json(cs::read_file(dir + "/t.json"), "t.json")["budget"]["kind"], "flops");
  EXPECT_EQ(cstest::run_cli({"sweep", "table", dir, "--budget", "watts=3"}, &out, &err), 2);
  EXPECT_NE(err.find("--budget"), std::string::npos) << err;
}

// The trainer counts training FLOPs: 3 x (cells + output layer) per character, cumulative in
// every metrics line and the summary, continued across a resume.
TEST(SweepTable, trainerRecordsTrainingFlops) {
  const std::string corpus = cstest::write_text_fixture("sweep_table_train.txt", 6000);
  const std::string run = cstest::temp_dir() + "/flops-run";
  std::filesystem::remove_all(run);
  json cfg = {
      {"task", {{"name", "char_lm"}}},
      {"dataset", {{"path", corpus}}},
      {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
      {"training", {{"batch", 4}, {"bptt", 16}, {"steps", 10}, {"eval_every", 5}, {"log_every", 5}, {"threads", 1}}}};
  write(cstest::temp_dir() + "/flops-cfg.json", cfg.dump());
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cstest::temp_dir() + "/flops-cfg.json", "--run-dir", run, "--quiet"}, &out, &err),
            0)
      << err;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", run, "--steps", "20", "--quiet"}, &out, &err), 0) << err;
  auto recs = read_metrics(run + "/metrics.jsonl");
  double at5 = 0, at20 = 0;
  for (auto& r : recs) {
    if (r.eval) continue;
    ASSERT_TRUE(r.has_train_flops()) << r.to_json().dump();
    if (r.step == 5) at5 = r.train_flops;
    if (r.step == 20) at20 = r.train_flops;
  }
  // GRU (E=8, H=16): per character 2*3*16*(8+16) + 6*3*16 forward FLOPs in the cell (GateCellBase),
  // plus the output layer; the ratio of 20 steps to 5 is exact (full bptt windows of 4 x 16).
  ASSERT_GT(at5, 0);
  EXPECT_NEAR(at20 / at5, 4.0, 1e-9);
  const RunSummary s = RunStore(run).read_summary();
  EXPECT_NEAR(s.train_flops, at20, 1e-6 * at20);
  // 3 x forward x characters: at least the cell's matrix products alone
  EXPECT_GE(at5, 3.0 * 2 * 3 * 16 * (8 + 16) * 5 * 4 * 16);
}

// Every bundled "reproduce" sweep trains to convergence at its stated size: early stopping on
// the validation metric (patience, evaluations during training), a step cap, 3 seeds.
TEST(SweepTable, reproduceSweepsStopEarlyWithThreeOrFiveSeeds) {
  const auto sweeps = bundled_sweeps();
  int n = 0;
  for (auto& s : sweeps) {
    const std::string name = s["name"].get<std::string>();
    if (name.rfind("reproduce-", 0) != 0) continue;
    ++n;
    const SweepSpec spec = load_sweep_spec(name);
    const json& tr = spec.base.at("training");
    EXPECT_GT(tr.value("patience", 0), 0) << name;
    EXPECT_GT(tr.value("eval_every", 0), 0) << name;
    EXPECT_GE(tr.value("steps", 0) / std::max<int64_t>(1, tr.value("eval_every", int64_t(1))), 10) << name;
    EXPECT_EQ(tr.value("threads", 0), 1) << name;
    // 5 seeds where a verdict was re-run under issue #51's rule ("holds" needs 5), else 3
    const bool five = name == "reproduce-mzu-table3" || name == "reproduce-cru-table3";
    const std::vector<int64_t> want = five ? std::vector<int64_t>{1, 2, 3, 4, 5} : std::vector<int64_t>{1, 2, 3};
    EXPECT_EQ(spec.seeds, want) << name;
  }
  EXPECT_EQ(n, 9);  // MZU Tables 3-4, CRU Tables 2-3 and Fig. 3, MC-RNN Tables 2-5
}

// A bundled sweep that does not load is listed with its reason, never dropped without a word;
// `sweep list` names it on stderr and exits 1.
TEST(SweepTable, brokenBundledSweepIsListedWithItsError) {
  const std::string res = cstest::temp_dir() + "/broken_resources";
  std::filesystem::create_directories(res + "/sweeps");
  const std::string good = read_file(join_path(join_path(resources_dir(), "sweeps"), "reproduce-cru-table3.json"));
  atomic_write(res + "/sweeps/good.json", good);
  atomic_write(res + "/sweeps/broken.json", "{\"name\": \"broken\", \"grid\": [");
  atomic_write(res + "/sweeps/wrong.json", "{\"name\": \"wrong\", \"seeds\": \"three\"}");
  ::setenv("CELLSCOPE_RESOURCES", res.c_str(), 1);
  const auto sweeps = bundled_sweeps();
  std::string out, err;
  const int rc = cstest::run_cli({"sweep", "list"}, &out, &err);
  ::unsetenv("CELLSCOPE_RESOURCES");
  ASSERT_EQ(sweeps.size(), 3u);
  std::map<std::string, json> by_name;
  for (auto& s : sweeps) by_name[s.at("name").get<std::string>()] = s;
  ASSERT_FALSE(by_name.at("good").contains("error")) << by_name.at("good").dump();
  ASSERT_FALSE(by_name.at("good").at("notes").get<std::string>().empty());
  ASSERT_TRUE(by_name.at("broken").contains("error"));
  ASSERT_TRUE(cstest::contains(by_name.at("broken").at("error").get<std::string>(), "broken.json"))
      << by_name.at("broken").dump();
  ASSERT_TRUE(by_name.at("wrong").contains("error"));
  ASSERT_TRUE(cstest::contains(by_name.at("wrong").at("error").get<std::string>(), "wrong.json: base: missing"))
      << by_name.at("wrong").dump();
  ASSERT_EQ(rc, 1) << out << err;
  ASSERT_TRUE(cstest::contains(out, "good")) << out;
  ASSERT_TRUE(cstest::contains(err, "bundled sweep 'broken' does not load")) << err;
  ASSERT_TRUE(cstest::contains(err, "bundled sweep 'wrong' does not load")) << err;
}

// Issue #51 item 1: the paired view states, for every comparison, the test, its p and the verdict,
// in text, CSV, LaTeX and JSON; with 2 seeds nothing "holds" however small p is.
// A seq2seq table's metric is a key of the final test line with its decode ("test bleu (beam 5, lp
// 1.0)"); the runs' stored test pairs test its differences (issue #51 item 1, MC-RNN Tables 2-3).
TEST(SweepTable, seq2seqBleuIsTestedOverTheStoredTestPairs) {
  const std::string dir = make_sweep(
      "paired-bleu",
      [](const std::string& label, int64_t seed) {
        FakeRun f = fast_or_slow(label, seed);
        f.matched = label == "fast" ? 2 : 4;
        f.bleu = label == "fast" ? 20.0 + static_cast<double>(seed) : 60.0 + static_cast<double>(seed);
        return f;
      },
      "test.bleu");
  const auto res = read_sweep_results(dir);
  ASSERT_EQ(res.metric_label, "test bleu (beam 5, lp 1.0)");
  const auto t = sweep_table(res, "row:fast");
  const TableCell& slow = cell_of(t, "slow");
  ASSERT_TRUE(slow.has_sig);
  ASSERT_FALSE(std::isnan(slow.sig.p_examples)) << slow.sig.test();
  EXPECT_LT(slow.sig.p_examples, 0.001);
  EXPECT_NE(slow.sig.test().find("over 40 test sentence pairs (10000 resamples, corpus BLEU of each)"),
            std::string::npos)
      << slow.sig.test();
  EXPECT_NE(t.sampling_note.find("Koehn"), std::string::npos) << t.sampling_note;
}

TEST(SweepTable, pairedViewStatesTestPAndVerdictInEveryExport) {
  const std::string dir = make_sweep("paired-sig", fast_or_slow);
  const auto res = read_sweep_results(dir);
  // slow - fast = (1.85 + off) - (2.25 + off) = -0.4 on both seeds: sd 0, p 0
  const auto t = sweep_table(res, "row:fast");
  const TableCell& slow = cell_of(t, "slow");
  ASSERT_TRUE(slow.has_sig);
  EXPECT_FALSE(cell_of(t, "fast").has_sig);  // the reference
  EXPECT_EQ(slow.sig.seeds, 2);
  EXPECT_LT(slow.sig.p, 1e-12);
  EXPECT_EQ(slow.sig.text(), "consistent in sign on 2 seeds (p < 0.0001)");
  const std::string txt = table_to_text(t);
  EXPECT_NE(txt.find("significance of each difference"), std::string::npos) << txt;
  EXPECT_NE(txt.find("consistent in sign on 2 seeds (p < 0.0001)"), std::string::npos) << txt;
  EXPECT_NE(txt.find("runs store no per-example test results"), std::string::npos) << txt;
  const std::string csv = table_to_csv(t);
  EXPECT_NE(csv.find(",test,t,p,sign_test_p,verdict,examples_p,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("paired t-test over 2 seeds,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",consistent in sign on 2 seeds (p < 0.0001),"), std::string::npos) << csv;
  const std::string tex = table_to_latex(t);
  EXPECT_NE(tex.find("($p< 0.0001$)"), std::string::npos) << tex;
  EXPECT_NE(tex.find("paired t-test over seeds; a difference holds only at $p<0.05$ on at least 5 seeds"),
            std::string::npos)
      << tex;
  const json j = table_to_json(t);
  bool seen = false;
  for (auto& c : j["cells"])
    if (c["row"] == "slow") {
      seen = true;
      EXPECT_EQ(c["significance"]["verdict"], "consistent in sign");
      EXPECT_EQ(c["significance"]["test"], "paired t-test over 2 seeds");
    }
  EXPECT_TRUE(seen);
  // the plain view has no verdicts
  const auto plain = sweep_table(res);
  EXPECT_FALSE(cell_of(plain, "slow").has_sig);
  EXPECT_EQ(table_to_text(plain).find("significance of each difference"), std::string::npos);
  // an accuracy's note bounds the test set's sampling error
  EXPECT_NE(sampling_error_note("test accuracy", 413).find("413 test examples is up to sqrt(0.25 / 413) = 2.5 points"),
            std::string::npos)
      << sampling_error_note("test accuracy", 413);
}

// Issue #51 item 2: every export names the data the runs used, the paper's data they stand in for and
// every setting that departs from the paper.
TEST(SweepTable, everyExportNamesTheDataAndTheDepartures) {
  const json paper = {
      {"source", "Test paper, Table 9"},
      {"dataset", "PaperBank"},
      {"dataset_used", "a 4,000-character test corpus"},
      {"settings", {{"training.steps", 5000}}},
      {"departures",
       json::array(
           {{{"setting", "training.steps"}, {"paper", "5000"}, {"ours", "1000"}, {"reason", "a short test"}}})}};
  const std::string dir = make_sweep("labelled", fast_or_slow, "test", paper);
  const auto res = read_sweep_results(dir);
  const auto t = sweep_table(res);
  const std::string data =
      "(a 4,000-character test corpus), standing in for the paper's PaperBank (Test paper, Table 9)";
  const std::string txt = table_to_text(t);
  EXPECT_NE(txt.find("\ndata: "), std::string::npos) << txt;
  EXPECT_NE(txt.find("sweep_table_corpus.txt " + data), std::string::npos) << txt;
  EXPECT_NE(txt.find("departs from the paper in 1 setting:\n  training.steps: paper 5000; ours 1000 (a short test)"),
            std::string::npos)
      << txt;
  const std::string tex = table_to_latex(t);
  EXPECT_NE(tex.find("\\multicolumn{2}{l}{\\footnotesize data: "), std::string::npos) << tex;
  EXPECT_NE(tex.find("departs from the paper in: training.steps} \\\\"), std::string::npos) << tex;
  EXPECT_NE(tex.find("% departs from the paper: training.steps: paper 5000; ours 1000 (a short test)"),
            std::string::npos)
      << tex;
  const std::string csv = table_to_csv(t);
  EXPECT_NE(csv.find(",dataset,stands_in_for,departures,left_out\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",PaperBank,training.steps: paper 5000; ours 1000 (a short test),\n"), std::string::npos) << csv;
  const json j = table_to_json(t);
  EXPECT_EQ(j["labels"]["paper"]["dataset"], "PaperBank");
  EXPECT_EQ(j["labels"]["departures"][0]["ours"], "1000");
  const auto series = series_to_csv(sweep_series(res, "cell"), "cell", sweep_labels(res));
  EXPECT_NE(series.find(",PaperBank,training.steps: paper 5000; ours 1000 (a short test)\n"), std::string::npos)
      << series;
  // the CLI's series output says it too
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "table", dir, "--series", "cell"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("# data: "), std::string::npos) << out;
  EXPECT_NE(out.find("# departs from the paper: training.steps"), std::string::npos) << out;
}

// A sweep run before its bundled spec had the "paper" block takes the bundled spec's label when it is
// the same sweep, and only then.
TEST(SweepTable, sweepRunBeforeTheLabelTakesTheBundledOnes) {
  const std::string dir = cstest::temp_dir() + "/old-labels";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  json spec = load_sweep_spec("reproduce-cru-fig3").source;
  ASSERT_TRUE(spec.contains("paper"));
  spec.erase("paper");
  write(dir + "/sweep.json", spec.dump(2));
  EXPECT_TRUE(read_sweep_results(dir).spec.paper.present());
  EXPECT_NE(sweep_table(read_sweep_results(dir)).labels.data_line().find("standing in for the paper's MR"),
            std::string::npos);
  spec["seeds"] = {1, 2};  // another sweep under the same name: no label borrowed
  write(dir + "/sweep.json", spec.dump(2));
  EXPECT_FALSE(read_sweep_results(dir).spec.paper.present());
}

}  // namespace test_sweep_table
