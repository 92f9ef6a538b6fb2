// Sweeps and tables (core/sweep, issue #8): grid expansion (options x seeds),
// resume after an interruption runs only the remaining points, table aggregation
// (mean, sample std, best), paired differences, the LaTeX tabular's structure,
// and the CLI (`sweep run --dry-run`, `sweep table --out`).
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <regex>
#include <set>

#include "corpus_fixture.h"
#include "harness.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "util/error.h"
#include "util/paths.h"

using namespace cs;

namespace {

json toy_base(const QString& corpus, int steps) {
  return {{"task", {{"name", "char_lm"}}},
          {"dataset", {{"path", corpus.toStdString()}}},
          {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
          {"training", {{"batch", 8}, {"bptt", 16}, {"steps", steps}, {"eval_every", 10}, {"log_every", 5},
                        {"checkpoint_every", 5}, {"threads", 1}}}};
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

class TestSweep : public QObject {
  Q_OBJECT
  QString corpus_;

 private Q_SLOTS:
  void initTestCase() { corpus_ = cstest::write_text_fixture("sweep_corpus.txt", 6000); }

  void gridExpansion() {
    json spec = {{"name", "toy"},
                 {"base", toy_base(corpus_, 10)},
                 {"grid", json::array({json{{"option", "model.hidden"}, {"values", {16, 24}}},
                                       json{{"name", "variant"},
                                            {"values", json::array({json{{"label", "plain"}, {"set", json::object()}},
                                                                    json{{"label", "no-embed"}, {"set", {{"model.embed", nullptr}}}}})}}})},
                 {"seeds", {3, 1, 2}},
                 {"table", {{"cols", "variant"}}}};
    SweepSpec s = SweepSpec::from_json(spec);
    QCOMPARE(static_cast<int>(s.axes.size()), 2);
    QVERIFY(s.table.rows == std::vector<std::string>{"model.hidden"});  // unnamed axes join the rows
    auto pts = expand_sweep(s);
    QCOMPARE(static_cast<int>(pts.size()), 2 * 2 * 3);
    // First axis slowest, seeds innermost in the order given.
    QCOMPARE(QString::fromStdString(pts[0].id), QString("model.hidden=16,variant=plain,seed=3"));
    QCOMPARE(QString::fromStdString(pts[1].id), QString("model.hidden=16,variant=plain,seed=1"));
    QCOMPARE(QString::fromStdString(pts[3].id), QString("model.hidden=16,variant=no-embed,seed=3"));
    QCOMPARE(QString::fromStdString(pts[11].id), QString("model.hidden=24,variant=no-embed,seed=2"));
    std::set<std::string> ids;
    for (auto& p : pts) {
      ids.insert(p.id);
      QCOMPARE(p.config["training"]["seed"].get<int64_t>(), p.seed);
      QCOMPARE(p.config["model"]["hidden"].get<int>(), p.value_index[0] == 0 ? 16 : 24);
      QCOMPARE(p.config["training"]["steps"].get<int>(), 10);  // the base survives
    }
    QCOMPARE(ids.size(), pts.size());
    // null removes the option: the resolved config falls back to the default embedding size.
    json no_embed = toy_base(corpus_, 10);
    no_embed["model"].erase("embed");
    const int def_embed = resolve_config(no_embed)["model"]["embed"];
    QVERIFY(def_embed != 8);
    QCOMPARE(pts[3].config["model"]["embed"].get<int>(), def_embed);
    QCOMPARE(pts[0].config["model"]["embed"].get<int>(), 8);

    // An invalid point is reported with its id and the option path, before anything runs.
    json bad = spec;
    bad["grid"][1]["values"][1]["set"] = {{"model.zones", 4}};  // gru has no zones
    bool threw = false;
    try {
      expand_sweep(SweepSpec::from_json(bad));
    } catch (const UserError& e) {
      threw = true;
      const std::string m = e.what();
      QVERIFY2(m.find("variant=no-embed") != std::string::npos, m.c_str());
      QVERIFY2(m.find("model.zones") != std::string::npos, m.c_str());
      QVERIFY2(m.find("6 invalid point") != std::string::npos, m.c_str());
    }
    QVERIFY(threw);
    // Spec errors name the field.
    json bad2 = spec;
    bad2["table"]["cols"] = "nope";
    try {
      SweepSpec::from_json(bad2);
      QFAIL("accepted a table column that is no axis");
    } catch (const UserError& e) {
      QVERIFY(std::string(e.what()).find("nope") != std::string::npos);
    }
    json bad3 = spec;
    bad3["seeds"] = {1, 1};
    QVERIFY_THROWS_EXCEPTION(UserError, SweepSpec::from_json(bad3));
  }

  void resumeRunsOnlyTheRest() {
    const std::string ws = (cstest::temp_dir() + "/ws").toStdString();
    json spec = {{"name", "resume"},
                 {"base", toy_base(corpus_, 20)},
                 {"grid", {{"model.hidden", {8, 12}}}},
                 {"seeds", {1, 2}}};
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
        QCOMPARE(QString::fromStdString(sum.status), QString("finished"));
        if (p.index == 1) c.stop = true;
      };
      auto r = run_sweep(s, o);
      QVERIFY(r.stopped);
      QCOMPARE(r.done, 2);
      QCOMPARE(r.ran, 2);
    }
    QCOMPARE(static_cast<int>(started.size()), 2);
    // 2) run again, stopped in the middle of the third point (a checkpoint at step 10)
    started.clear();
    {
      TrainerControl c;
      auto o = opts(&c);
      o.on_progress = [&](const SweepPoint&, const Progress& p) {
        if (p.step >= 10) c.stop = true;
      };
      auto r = run_sweep(s, o);
      QVERIFY(r.stopped);
      QCOMPARE(r.skipped, 2);
      QCOMPARE(r.ran, 1);
    }
    QCOMPARE(static_cast<int>(started.size()), 1);
    const std::string third = started[0], third_dir = dirs[third];
    QCOMPARE(QString::fromStdString(read_sweep_state(sweep_dir(ws, "resume"))[third].status), QString("stopped"));
    // 3) resume: only the remaining runs; the stopped one continues in its own directory
    started.clear();
    resumed_flags.clear();
    {
      TrainerControl c;
      auto r = run_sweep(s, opts(&c));
      QVERIFY(!r.stopped);
      QCOMPARE(r.skipped, 2);
      QCOMPARE(r.ran, 2);
      QCOMPARE(r.done, 4);
    }
    QCOMPARE(static_cast<int>(started.size()), 2);
    QVERIFY(started[0] == third);
    QVERIFY(resumed_flags[0]);
    QVERIFY(!resumed_flags[1]);
    QVERIFY(dirs[third] == third_dir);
    // Each point is an ordinary run of the workspace, finished at 20 steps.
    auto st = read_sweep_state(sweep_dir(ws, "resume"));
    QCOMPARE(static_cast<int>(st.size()), 4);
    std::set<std::string> run_dirs;
    for (auto& [id, ps] : st) {
      QCOMPARE(QString::fromStdString(ps.status), QString("finished"));
      QVERIFY(file_exists(join_path(ps.run_dir, "config.json")));
      QCOMPARE(QFileInfo(QString::fromStdString(ps.run_dir)).absolutePath(), QFileInfo(QString::fromStdString(ws)).absoluteFilePath());
      RunSummary sum = RunStore(ps.run_dir).read_summary();
      QCOMPARE(sum.step, int64_t(20));
      run_dirs.insert(ps.run_dir);
    }
    QCOMPARE(run_dirs.size(), size_t(4));
    // 4) a fourth call runs nothing
    {
      TrainerControl c;
      started.clear();
      auto r = run_sweep(s, opts(&c));
      QCOMPARE(r.ran, 0);
      QCOMPARE(r.skipped, 4);
    }
    // A sweep being run by another process (its lock held) is refused.
    {
      const int fd = ::open(join_path(sweep_dir(ws, "resume"), "lock").c_str(), O_RDWR);
      QVERIFY(fd >= 0);
      QCOMPARE(::flock(fd, LOCK_EX | LOCK_NB), 0);
      TrainerControl c;
      QVERIFY_THROWS_EXCEPTION(UserError, run_sweep(s, opts(&c)));
      ::close(fd);
    }
    // A different spec under the same name is refused.
    json other = spec;
    other["seeds"] = {1, 2, 3};
    TrainerControl c;
    QVERIFY_THROWS_EXCEPTION(UserError, run_sweep(SweepSpec::from_json(other), opts(&c)));
    // The results read back: 2 rows x 1 column, 2 seeds each, lower (bpc) is better.
    auto res = read_sweep_results("resume", ws);
    QVERIFY(!res.higher_is_better);
    auto t = sweep_table(res);
    QCOMPARE(static_cast<int>(t.row_labels.size()), 2);
    QCOMPARE(t.cells[0][0].n, 2);
    QCOMPARE(t.cells[1][0].n, 2);
    QVERIFY(t.cells[0][0].best != t.cells[1][0].best);
  }

  void aggregation() {
    // Hand-made summaries: rows A, B, C; columns x, y; seeds 1..3 (C/y missing, B/x one seed failed).
    std::vector<TableInput> in = {
        {"A", "x", 1, 1.0}, {"A", "x", 2, 2.0}, {"A", "x", 3, 3.0},   // mean 2, std 1
        {"B", "x", 1, 1.5}, {"B", "x", 2, 1.7},                       // mean 1.6, std sqrt(0.02)
        {"C", "x", 1, 4.0}, {"C", "x", 2, 4.0}, {"C", "x", 3, 4.0},   // mean 4, std 0
        {"A", "y", 1, 0.25}, {"A", "y", 2, 0.5}, {"A", "y", 3, 0.75},  // mean 0.5 (exact in binary)
        {"B", "y", 1, 0.5}, {"B", "y", 2, 0.5}, {"B", "y", 3, 0.5},    // mean 0.5 (tie)
        {"Z", "x", 1, 9.0},                                          // not a row: ignored
    };
    auto t = aggregate_table(in, {"A", "B", "C"}, {"x", "y"}, false, "column");
    QCOMPARE(t.cells[0][0].n, 3);
    QCOMPARE(t.cells[0][0].mean, 2.0);
    QCOMPARE(t.cells[0][0].std, 1.0);
    QCOMPARE(t.cells[1][0].n, 2);
    QVERIFY(std::fabs(t.cells[1][0].mean - 1.6) < 1e-12);
    QVERIFY(std::fabs(t.cells[1][0].std - std::sqrt(0.02)) < 1e-12);
    QCOMPARE(t.cells[2][0].std, 0.0);
    QCOMPARE(t.cells[2][1].n, 0);
    // lower is better: B best in x; A and B tie in y (both bold); the empty cell is not
    QVERIFY(!t.cells[0][0].best && t.cells[1][0].best && !t.cells[2][0].best);
    QVERIFY(t.cells[0][1].best && t.cells[1][1].best && !t.cells[2][1].best);
    auto h = aggregate_table(in, {"A", "B", "C"}, {"x", "y"}, true, "column");
    QVERIFY(h.cells[2][0].best && !h.cells[1][0].best);
    auto r = aggregate_table(in, {"A", "B", "C"}, {"x", "y"}, false, "row");
    QVERIFY(r.cells[0][1].best && !r.cells[0][0].best && r.cells[2][0].best);
    auto all = aggregate_table(in, {"A", "B", "C"}, {"x", "y"}, true, "all");
    int bold = 0;
    for (auto& row : all.cells)
      for (auto& c : row) bold += c.best;
    QCOMPARE(bold, 1);
    QVERIFY(all.cells[2][0].best);
    QCOMPARE(QString::fromStdString(format_cell(t.cells[0][0], 3)), QString("2.000 +- 1.000"));
    QCOMPARE(QString::fromStdString(format_cell(t.cells[2][1], 3)), QString("-"));
    // text rendering marks the best
    t.title = "hand";
    t.metric = "test bpc";
    const std::string txt = table_to_text(t);
    QVERIFY2(txt.find("*1.600 +- 0.141*") != std::string::npos, txt.c_str());
    // CSV: one line per cell + header, values and seeds listed
    auto csv = lines_of(table_to_csv(t));
    QCOMPARE(static_cast<int>(csv.size()), 1 + 6);
    QVERIFY(csv[1].rfind("A,x,2,1,3,0,1 2 3,1 2 3", 0) == 0);

    // Paired: differences to column x for runs sharing row and seed.
    auto p = paired_table(in, {"A", "B", "C"}, {"x", "y"}, "x");
    QVERIFY(p.paired);
    QVERIFY(p.cells[0][0].reference);
    QCOMPARE(p.cells[0][1].n, 3);  // A: -0.75, -1.5, -2.25
    QVERIFY(std::fabs(p.cells[0][1].mean - (-1.5)) < 1e-12);
    QVERIFY(std::fabs(p.cells[0][1].std - 0.75) < 1e-12);
    QCOMPARE(p.cells[1][1].n, 2);  // B: seed 3 has no x value: unpaired, left out
    QVERIFY(std::fabs(p.cells[1][1].mean - (-1.1)) < 1e-12);
    QCOMPARE(p.cells[2][1].n, 0);
    for (auto& row : p.cells)
      for (auto& c : row) QVERIFY(!c.best);
    QVERIFY_THROWS_EXCEPTION(UserError, paired_table(in, {"A"}, {"x", "y"}, "w"));
  }

  void latexStructure() {
    std::vector<TableInput> in = {{"cru_deep", "spam_assassin", 1, 0.91}, {"cru_deep", "spam_assassin", 2, 0.93},
                                  {"gru & 50% #1", "spam_assassin", 1, 0.88}, {"gru & 50% #1", "sotu", 1, 0.6},
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
    QVERIFY2(begin >= 0 && end > begin, tex.c_str());
    QCOMPARE(QString::fromStdString(ls[begin]), QString("\\begin{tabular}{lcc}"));
    int rows = 0;
    for (int i = begin + 1; i < end; ++i) {
      const std::string& l = ls[i];
      if (l == "\\hline") continue;
      ++rows;
      QVERIFY2(l.size() > 3 && l.substr(l.size() - 3) == " \\\\", l.c_str());
      QCOMPARE(unescaped(l, '&'), 2);           // same number of cells per row: 1 + 2 columns
      QCOMPARE(unescaped(l, '_'), 0);           // underscores escaped
      QCOMPARE(unescaped(l, '%'), 0);
      QCOMPARE(unescaped(l, '#'), 0);
      QCOMPARE(unescaped(l, '$') % 2, 0);       // math mode balanced
      int depth = 0;
      for (size_t k = 0; k < l.size(); ++k) {   // braces balanced
        if (l[k] == '{' && (k == 0 || l[k - 1] != '\\')) ++depth;
        if (l[k] == '}' && (k == 0 || l[k - 1] != '\\')) --depth;
        QVERIFY(depth >= 0);
      }
      QCOMPARE(depth, 0);
    }
    QCOMPARE(rows, 3);  // header + 2 rows
    QVERIFY(tex.find("model.cell & spam\\_assassin & sotu \\\\") != std::string::npos);
    QVERIFY(tex.find("gru \\& 50\\% \\#1") != std::string::npos);
    QVERIFY2(tex.find("$\\mathbf{0.920 \\pm 0.014}$") != std::string::npos, tex.c_str());  // best of column 1
    QVERIFY(tex.find("$0.880$") != std::string::npos);                                     // one seed: no +-
    QVERIFY(tex.find("$\\mathbf{0.620}$") != std::string::npos);
    // Every line before the tabular is a comment (pastes into a document as is).
    for (int i = 0; i < begin; ++i) QVERIFY(ls[i].rfind("%", 0) == 0);
  }

  void cli() {
    const QString ws = cstest::temp_dir() + "/ws";
    const QString spec_path = cstest::temp_dir() + "/cli_spec.json";
    json spec = {{"name", "cli-toy"}, {"base", toy_base(corpus_, 10)}, {"grid", {{"model.hidden", {8, 12, 16}}}}, {"seeds", {1, 2}}};
    atomic_write(spec_path.toStdString(), spec.dump());
    QString out, err;
    QCOMPARE(cstest::run_cli({"sweep", "run", spec_path, "--workspace", ws, "--dry-run"}, &out, &err), 0);
    QVERIFY2(out.contains("6 points") && out.contains("model.hidden=16,seed=2"), qPrintable(out + err));
    QVERIFY(!QFileInfo::exists(ws + "/sweeps/cli-toy"));  // a dry run writes nothing
    // An invalid grid value: exit 2, the point and the path named, nothing written.
    spec["grid"]["model.hidden"] = {8, -3};
    atomic_write(spec_path.toStdString(), spec.dump());
    QCOMPARE(cstest::run_cli({"sweep", "run", spec_path, "--workspace", ws}, &out, &err), 2);
    QVERIFY2(err.contains("model.hidden=-3") && err.contains("model.hidden:"), qPrintable(err));
    QVERIFY(!QFileInfo::exists(ws + "/sweeps/cli-toy"));
    // Bundled sweeps list and validate (without running).
    QCOMPARE(cstest::run_cli({"sweep", "list"}, &out, &err), 0);
    QVERIFY(out.contains("reproduce-mzu-table3") && out.contains("reproduce-cru-fig3"));
    // The table of the sweep run in resumeRunsOnlyTheRest, exported.
    const QString tex = cstest::temp_dir() + "/resume.tex", csv = cstest::temp_dir() + "/resume.csv";
    QCOMPARE(cstest::run_cli({"sweep", "table", "resume", "--workspace", ws, "--out", tex}, &out, &err), 0);
    QVERIFY2(out.contains("model.hidden") && out.contains("bpc"), qPrintable(out + err));
    QCOMPARE(cstest::run_cli({"sweep", "table", "resume", "--workspace", ws, "--out", csv}, &out, &err), 0);
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList csv_lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(csv_lines.size(), 3);
    QVERIFY(csv_lines[1].startsWith("8,") && csv_lines[1].split(',')[4] == "2");
    QVERIFY(QFileInfo::exists(tex));
    QCOMPARE(cstest::run_cli({"sweep", "table", "resume", "--workspace", ws, "--series", "model.hidden"}, &out, &err), 0);
    QVERIFY2(out.contains("series,model.hidden,mean,std,n"), qPrintable(out));
    QCOMPARE(cstest::run_cli({"sweep", "status", "resume", "--workspace", ws}, &out, &err), 0);
    QVERIFY(out.contains("4/4 points done"));
    QCOMPARE(cstest::run_cli({"sweep", "table", "nosuch", "--workspace", ws}, &out, &err), 2);
  }
};

CS_TEST(TestSweep, "sweep")
#include "test_sweep.moc"
