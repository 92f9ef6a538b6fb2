// The workbench in daily use, driven as a user drives it: a resumed run's Training plots go
// on from its earlier points and the form shows the run's own configuration; a queued run
// that starts leaves the user in the tab they are in; a new run's empty plots do not keep
// the axes of the run before; seeds group whatever their bookkeeping options (threads,
// log_every...); the Compare tab fits a 1024x700 window with its essential columns
// readable; the window fits the screen it opens on and remembers its geometry, never
// larger than the screen.
#include <QCheckBox>
#include <QComboBox>
#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QtTest/QtTest>

#include "analysis_panel.h"
#include "compare_panel.h"
#include "configure_panel.h"
#include "corpus_fixture.h"
#include "curve_plot.h"
#include "decode_panel.h"
#include "harness.h"
#include "main_window.h"
#include "qcp.h"
#include "run_actions.h"
#include "run_table.h"
#include "scripted_start.h"
#include "training_controller.h"
#include "training_panel.h"

using gui::MainWindow;

class GuiDailyTest : public QObject {
  Q_OBJECT

  QString m_root, m_corpus;

  gui::WindowOptions opts(const QString& ws, const QString& settings = QString()) const {
    gui::WindowOptions o;
    o.workspace = ws;
    o.settingsFile = settings.isEmpty() ? m_root + "/settings.ini" : settings;
    o.restoreLastConfig = false;
    return o;
  }
  // A tiny char LM (one thread): fast on a loaded machine.
  QJsonObject tinyConfig(int steps, int logEvery, int evalEvery, int hidden = 16) const {
    return QJsonObject{{"task", QJsonObject{{"name", "char_lm"}}},
                       {"dataset", QJsonObject{{"path", m_corpus}}},
                       {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", hidden}}},
                       {"training", QJsonObject{{"steps", steps},
                                                {"batch", 8},
                                                {"bptt", 16},
                                                {"log_every", logEvery},
                                                {"eval_every", evalEvery},
                                                {"eval_batch", 4},
                                                {"lr", 0.003},
                                                {"seed", 1},
                                                {"eval_test", false},
                                                {"threads", 1}}}};
  }
  static QJsonObject readJson(const QString& path) { return cstest::readJsonObject(path); }
  static QVector<double> xs(MainWindow& w, const QString& series) {
    csw::CurvePlot* p = w.trainingPanel()->plot("metric");
    return p->hasSeries(series) ? p->seriesX(series) : QVector<double>();
  }
  // Start (as the button does) and wait for the end of the run; its directory.
  static QString trainToTheEnd(MainWindow& w, const QJsonObject& cfg) {
    w.configurePanel()->applyConfig(cfg);
    if (!w.startTraining()) return QString();
    if (!QTest::qWaitFor([&] { return !w.controller()->currentRunDir().isEmpty(); }, 60000)) return QString();
    const QString dir = w.controller()->currentRunDir();
    if (!QTest::qWaitFor([&] { return !w.controller()->isTraining(); }, 120000)) return QString();
    return dir;
  }

  // compareTabFitsA1024x700Window's run i of three in dir, as a finished run leaves it: config.json
  // (seed and threads i + 1; the third a gcnMZU), the metrics a gcnMZU run logs, summary.json.
  void writeCompareRun(const QString& dir, int i) const {
    QDir().mkpath(dir);
    QJsonObject cfg = tinyConfig(150, 10, 50);
    QJsonObject t = cfg["training"].toObject();
    t["seed"] = i + 1;
    t["threads"] = i + 1;
    cfg["training"] = t;
    if (i == 2) cfg["model"] = QJsonObject{{"cell", "gcn_mzu"}, {"embed", 8}, {"hidden", 16}};
    QFile c(dir + "/config.json");
    QVERIFY(c.open(QIODevice::WriteOnly));
    c.write(QJsonDocument(cfg).toJson());
    c.close();
    // Training points with the keys a gcnMZU run logs: long metric names in the Metric list.
    QByteArray lines;
    for (int s = 10; s <= 150; s += 10)
      lines +=
          QString(
              R"({"step": %1, "loss": 2.5, "bpc": 3.6, "grad_norm": 1.1, "throughput": 500, "zone_cosine": -0.1, "zone_disagreement": -0.2})"
              "\n")
              .arg(s)
              .toUtf8();
    for (int s = 50; s <= 150; s += 50)
      lines += QString(R"({"step": %1, "eval": true, "split": "valid", "bpc": %2})"
                       "\n")
                   .arg(s)
                   .arg(4.0 - s / 100.0 - i * 0.05)
                   .toUtf8();
    QFile m(dir + "/metrics.jsonl");
    QVERIFY(m.open(QIODevice::WriteOnly));
    m.write(lines);
    m.close();
    const QJsonObject sum{
        {"status", "finished"},         {"task", "char_lm"},    {"cell", cfg["model"].toObject()["cell"]},
        {"primary_metric", "bpc"},      {"parameters", 274260}, {"step", 150},
        {"best_valid", 2.5 - i * 0.05}, {"best_step", 150},     {"test_metric", 2.4567 - i * 0.05},
        {"mean_throughput", 12345.0},   {"unit", "chars"}};
    QFile f(dir + "/summary.json");
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(sum).toJson());
  }
  // compareTabFitsA1024x700Window: every control of the tab inside its visible part, and both
  // value columns of the config diff in its view.
  static void checkCompareControlsVisible(MainWindow& w, QTableView* view) {
    // What the tab shows of itself: its scroll area's viewport, inside the window.
    auto* page = w.findChild<QScrollArea*>("tabScroll_Compare");
    QVERIFY(page);
    const QRect visible =
        QRect(page->viewport()->mapTo(&w, QPoint(0, 0)), page->viewport()->size()).intersected(w.rect());
    auto where = [&](QWidget* c) { return QRect(c->mapTo(&w, QPoint(0, 0)), c->size()); };
    auto rectText = [](const QRect& r) {
      return QString("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
    };
    QList<QPair<QString, QWidget*>> controls;
    for (QToolButton* b : w.comparePanel()->findChildren<QToolButton*>())
      if (b->text() == "Export CSV...") controls << qMakePair(QString("Export CSV"), static_cast<QWidget*>(b));
    for (QLineEdit* e : w.comparePanel()->findChildren<QLineEdit*>())
      if (e->placeholderText().startsWith("Filter runs"))
        controls << qMakePair(QString("filter"), static_cast<QWidget*>(e));
    for (QComboBox* c : w.comparePanel()->findChildren<QComboBox*>()) {
      if (c->findText("Training FLOPs") >= 0) controls << qMakePair(QString("x axis"), static_cast<QWidget*>(c));
      else if (c->findText("min-max band") >= 0) controls << qMakePair(QString("band"), static_cast<QWidget*>(c));
      else if (c->findText("valid bpc") >= 0) controls << qMakePair(QString("metric"), static_cast<QWidget*>(c));
    }
    for (QCheckBox* b : w.comparePanel()->findChildren<QCheckBox*>())
      if (b->text() == "Aggregate seeds") controls << qMakePair(QString("aggregate seeds"), static_cast<QWidget*>(b));
    csw::CurvePlot* plot = w.comparePanel()->comparePlot();
    controls << qMakePair(QString("plot"), static_cast<QWidget*>(plot->plot()));
    controls << qMakePair(QString("plot view controls"),
                          plot->toolbarCompact() ? static_cast<QWidget*>(plot->viewMenuButton()) : plot->toolbar());
    controls << qMakePair(QString("run table"), static_cast<QWidget*>(view));
    QTableWidget* diff = w.comparePanel()->findChild<QTableWidget*>();
    QVERIFY(diff);
    controls << qMakePair(QString("config diff"), static_cast<QWidget*>(diff));
    for (QLabel* l : w.comparePanel()->findChildren<QLabel*>())
      if (l->text().contains("differing option"))
        controls << qMakePair(QString("diff heading"), static_cast<QWidget*>(l));
    QCOMPARE(controls.size(), 11);
    for (const auto& [name, c] : controls) {
      QVERIFY2(c->isVisible(), qPrintable(name + " is hidden"));
      QVERIFY2(visible.contains(where(c)),
               qPrintable(QString("%1 at %2, the tab shows %3").arg(name, rectText(where(c)), rectText(visible))));
      QVERIFY2(c->width() >= 20 && c->height() >= 10, qPrintable(name + " " + rectText(where(c))));
    }
    // Both value columns of the diff in its view.
    auto* dh = diff->horizontalHeader();
    for (int col = 1; col <= 2; ++col)
      QVERIFY2(dh->sectionViewportPosition(col) + dh->sectionSize(col) <= diff->viewport()->width() + 1,
               qPrintable(QString("diff column %1").arg(col)));
  }
  // compareTabFitsA1024x700Window, the run table's essential columns:
  static void checkRunColumnsReadable(QTableView* view, QSortFilterProxyModel* proxy) {
    // The run name, cell and test metric: in the table's view, the cell and test text whole, the
    // run name at least 120 px (longer names elide in the middle, the full name in the tooltip).
    QHeaderView* h = view->horizontalHeader();
    const QFontMetrics fm = view->fontMetrics();
    for (int col : {int(gui::RunTableModel::Name), int(gui::RunTableModel::Cell), int(gui::RunTableModel::Test)}) {
      const int x = h->sectionViewportPosition(col), wd = h->sectionSize(col);
      const QString head = proxy->headerData(col, Qt::Horizontal).toString();
      QVERIFY2(x >= 0 && x + wd <= view->viewport()->width(),
               qPrintable(QString("column %1 at %2+%3 of %4").arg(head).arg(x).arg(wd).arg(view->viewport()->width())));
      for (int r = 0; r < 3; ++r) {
        const QString text = proxy->index(r, col).data().toString();
        QVERIFY(!text.isEmpty());
        if (col == gui::RunTableModel::Name) {
          QVERIFY2(wd >= 120, qPrintable(QString("run column %1 px").arg(wd)));
          const QString tip = proxy->index(r, col).data(Qt::ToolTipRole).toString();
          QVERIFY2(view->sizeHintForIndex(proxy->index(r, col)).width() <= wd ||
                       (view->textElideMode() == Qt::ElideMiddle && tip.contains(text)),
                   qPrintable(QString("%1 in %2 px, tooltip %3").arg(text).arg(wd).arg(tip)));
        } else {
          // Whole: as wide as its delegate asks, and the text's own width with room to spare.
          QVERIFY2(view->sizeHintForIndex(proxy->index(r, col)).width() <= wd && fm.horizontalAdvance(text) + 6 <= wd,
                   qPrintable(QString("%1: '%2' in %3 px").arg(head, text).arg(wd)));
        }
      }
    }
  }

 private Q_SLOTS:
  void initTestCase() {
    m_root = cstest::temp_dir() + "/guidaily";
    QDir().mkpath(m_root);
    qunsetenv("CELLSCOPE_WORKSPACE");
    qputenv("CELLSCOPE_CLI", cstest::cli_path().toUtf8());
    QCoreApplication::setOrganizationName("CellscopeTests");
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_root + "/qsettings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_root + "/qsettings");
    m_corpus = cstest::write_text_fixture("gui_daily_corpus.txt", 20000);
  }

  // Train, Stop, another configuration loaded, Resume from the run table: the plots show the
  // earlier training and validation points before the new ones, and the form the run's config.
  void resumeKeepsHistoryAndShowsTheRunsConfig() {
    MainWindow w(opts(m_root + "/ws-resume"));
    w.show();
    w.configurePanel()->applyConfig(tinyConfig(1000000, 2, 6));
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->currentRunDir().isEmpty(), 60000);
    const QString dir = w.controller()->currentRunDir();
    QTRY_VERIFY_WITH_TIMEOUT(xs(w, "valid").size() >= 2, 120000);
    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
    const qint64 stoppedAt = qint64(readJson(dir + "/summary.json").value("step").toDouble());
    const QVector<double> trainBefore = xs(w, "train"), validBefore = xs(w, "valid");
    QVERIFY(trainBefore.size() >= 3);
    QCOMPARE(trainBefore.first(), 2.0);

    // The user loads something else into the form (a preset, another run), then resumes.
    w.configurePanel()->applyConfig(tinyConfig(500, 5, 0, 24));
    w.showPanel(w.comparePanel());
    gui::RunActions* acts = w.runActions();
    QVERIFY(acts);
    QString err;
    QVERIFY2(acts->resume(dir, &err), qPrintable(err));
    QTRY_VERIFY_WITH_TIMEOUT(!xs(w, "train").isEmpty() && xs(w, "train").last() > stoppedAt, 120000);
    const QVector<double> train = xs(w, "train"), valid = xs(w, "valid");
    // Everything drawn before the stop is drawn again, then the new points.
    for (double x : trainBefore) QVERIFY2(train.contains(x), qPrintable(QString("train step %1 missing").arg(x)));
    for (double x : validBefore) QVERIFY2(valid.contains(x), qPrintable(QString("valid step %1 missing").arg(x)));
    QCOMPARE(train.first(), 2.0);
    QCOMPARE(std::count(train.begin(), train.end(), trainBefore.last()), qsizetype(1));
    // The form: the resumed run's own configuration, not the one loaded last.
    const QJsonObject model = w.configurePanel()->currentConfig().value("model").toObject();
    QCOMPARE(model.value("hidden").toInt(), 16);
    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
  }

  // #38: Pause takes effect after the step in flight; the status line then says the step
  // the progress bar shows ("Paused at step 71" beside a bar at 72 was the bug), and the two
  // agree for as long as the run stays paused.
  void pausedStepIsTheBarsStep() {
    MainWindow w(opts(m_root + "/ws-pause"));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.configurePanel()->applyConfig(tinyConfig(1000000, 1, 0, 64));
    w.configurePanel()->revalidateNow();
    QPushButton* pause = nullptr;
    for (QPushButton* b : w.configurePanel()->findChildren<QPushButton*>())
      if (b->text() == "Pause") pause = b;
    QVERIFY(pause);
    QProgressBar* bar = w.statusBar()->findChild<QProgressBar*>();
    QVERIFY(bar);
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(bar->isVisible() && bar->value() >= 3, 120000);
    QTRY_VERIFY(pause->isEnabled());
    QTest::mouseClick(pause, Qt::LeftButton);
    QVERIFY(w.controller()->isPaused());
    auto pausedStep = [&w] {
      const QString t = w.progressText();
      return t.startsWith("Paused at step ") ? t.mid(15).toInt() : -1;
    };
    for (int i = 0; i < 15; ++i) {
      QTest::qWait(100);
      QVERIFY2(pausedStep() >= 0, qPrintable(w.progressText()));
      if (i >= 5) {  // the step that was in flight has been drawn
        QCOMPARE(pausedStep(), bar->value());
        QVERIFY2(bar->text().startsWith(QString::number(bar->value()) + " / "), qPrintable(bar->text()));
      }
    }
    const int at = bar->value();
    QTest::qWait(300);
    QCOMPARE(bar->value(), at);  // paused: no step after it
    QCOMPARE(pausedStep(), at);
    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 60000);
  }

  // A queued run starting while the user is in Compare: the tab stays, the status bar says so.
  void queuedRunStartLeavesTheTab() {
    MainWindow w(opts(m_root + "/ws-queue"));
    w.show();
    // Long enough to be still training when the second run is queued (30 steps raced it on a fast core).
    w.configurePanel()->applyConfig(tinyConfig(3000, 50, 0));
    QVERIFY(w.startTraining());
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(w.trainingPanel()));  // Start shows the run
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->currentRunDir().isEmpty(), 60000);
    const QString first = w.controller()->currentRunDir();
    w.configurePanel()->applyConfig(tinyConfig(1000000, 5, 0));
    w.enqueueCurrent();
    QCOMPARE(w.controller()->queueSize(), 1);
    w.showPanel(w.comparePanel());
    QTRY_VERIFY_WITH_TIMEOUT(w.controller()->queueSize() == 0 && w.controller()->isTraining(), 120000);
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(w.comparePanel()));
    QVERIFY2(w.statusBar()->currentMessage().contains("queued run started"),
             qPrintable(w.statusBar()->currentMessage()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->currentRunDir().isEmpty() && w.controller()->currentRunDir() != first,
                             60000);
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(w.comparePanel()));
    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
  }

  // A run stopped before its first log point: its empty plots do not show the previous run's axes.
  void newRunsEmptyPlotsResetTheirAxes() {
    MainWindow w(opts(m_root + "/ws-axes"));
    w.show();
    QVERIFY(!trainToTheEnd(w, tinyConfig(40, 2, 10)).isEmpty());
    csw::CurvePlot* metric = w.trainingPanel()->plot("metric");
    QVERIFY(metric->pointCount("train") > 0);
    QTRY_VERIFY(metric->plot()->xAxis->range().upper >= 30);

    w.configurePanel()->applyConfig(tinyConfig(1000000, 1000000, 0));
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->currentRunDir().isEmpty(), 60000);
    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
    QApplication::processEvents();
    for (csw::CurvePlot* p : w.trainingPanel()->plots()) {
      bool any = false;
      for (const QString& s : p->seriesIds()) any = any || p->pointCount(s) > 0;
      if (any) continue;  // a point the stop logged: fitted to it
      const QCPRange x = p->plot()->xAxis->range(), y = p->plot()->yAxis->range();
      QVERIFY2(x.upper <= 10 && x.lower >= 0,
               qPrintable(QString("%1: x %2..%3").arg(p->title()).arg(x.lower).arg(x.upper)));
      QVERIFY2(y.upper <= 10 && y.lower >= 0,
               qPrintable(QString("%1: y %2..%3").arg(p->title()).arg(y.lower).arg(y.upper)));
      QCOMPARE(p->plot()->legend->itemCount(), 0);  // no entry of the previous run's series
    }
    QCOMPARE(metric->pointCount("train"), 0);
  }

  // Seed 1 trained from the CLI with --threads 1, seed 2 from the window, seed 3 from the CLI with
  // other bookkeeping (threads 2, log_every 4): one seed group, "mean of 3 seeds"; the config
  // diff lists the seed as the difference and the bookkeeping apart (before: two curves, the
  // CLI's --threads unrecorded and threads counted as a difference).
  void seedGroupsIgnoreBookkeeping() {
    const QString ws = m_root + "/ws-seedgroups";
    QDir().mkpath(ws);
    QJsonObject cfg = tinyConfig(8, 2, 4);
    QJsonObject t = cfg["training"].toObject();
    t["threads"] = 0;  // the preset's default: the CLI's --threads decides
    cfg["training"] = t;
    const QString cfgPath = m_root + "/seedgroups.json";
    {
      QFile f(cfgPath);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QJsonDocument(cfg).toJson());
    }
    QCOMPARE(cstest::run_cli({"train", cfgPath, "--run-dir", ws + "/s1", "--threads", "1", "--quiet"}), 0);
    // The CLI records its --threads in the run's config, as the window does.
    QCOMPARE(readJson(ws + "/s1/config.json")["training"].toObject()["threads"].toInt(), 1);
    QCOMPARE(cstest::run_cli({"train", cfgPath, "--run-dir", ws + "/s3", "--threads", "2", "--set", "training.seed=3",
                              "--set", "training.log_every=4", "--quiet"}),
             0);
    MainWindow w(opts(ws));
    w.show();
    QJsonObject c2 = cfg;
    t["threads"] = 1;
    t["seed"] = 2;
    c2["training"] = t;
    const QString s2 = trainToTheEnd(w, c2);
    QVERIFY(!s2.isEmpty());
    gui::RunTableModel* runs = w.comparePanel()->runModel();
    QTRY_COMPARE_WITH_TIMEOUT(runs->rowCount(), 3, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(runs->run(runs->rowOf(s2))->status() == "finished", 10000);
    for (const auto& r : runs->runs()) runs->setChecked(r.dir, true);
    // What tells them apart is the seed only.
    QCOMPARE(runs->differing(), QStringList{"training.seed"});
    w.comparePanel()->setSeedAggregation(true);
    csw::CurvePlot* plot = w.comparePanel()->comparePlot();
    QCOMPARE(plot->seriesIds().size(), 1);
    // The group's name, not its first run's directory (before: "GRU (s1) (mean of 3 seeds)").
    QCOMPARE(plot->seriesLabel(plot->seriesIds()[0]), QString("GRU (mean of 3 seeds)"));
    // An exported figure's caption names the runs behind the curve (before: no run named).
    const QString caption = plot->exportCaption();
    QVERIFY2(caption.contains("Runs: GRU (mean of 3 seeds): ") && caption.contains("s1") && caption.contains("s3") &&
                 caption.contains(QFileInfo(s2).fileName()),
             qPrintable(caption));
    // The diff of seed 1 and seed 3: one differing option, the bookkeeping shown apart.
    QSortFilterProxyModel* proxy = w.comparePanel()->runProxy();
    auto proxyRow = [&](const QString& dir) {
      return proxy->mapFromSource(runs->index(runs->rowOf(QFileInfo(dir).absoluteFilePath()), 0)).row();
    };
    w.comparePanel()->selectRows({proxyRow(ws + "/s1"), proxyRow(ws + "/s3")});
    const QString diff = w.comparePanel()->configDiffText();
    const QStringList lines = diff.split('\n');
    QVERIFY2(lines.size() == 4, qPrintable(diff));
    QVERIFY2(lines[0].startsWith("training.seed: "), qPrintable(diff));
    QVERIFY2(lines[1].startsWith("bookkeeping"), qPrintable(diff));
    QVERIFY2(diff.contains("training.log_every: 2 -> 4") || diff.contains("training.log_every: 4 -> 2"),
             qPrintable(diff));
    QVERIFY2(diff.contains("training.threads: 1 -> 2") || diff.contains("training.threads: 2 -> 1"), qPrintable(diff));
    QLabel* label = nullptr;
    for (QLabel* l : w.comparePanel()->findChildren<QLabel*>())
      if (l->text().contains("differing option")) label = l;
    QVERIFY(label);
    QVERIFY2(label->text().contains("1 differing option(s), 2 bookkeeping"), qPrintable(label->text()));
  }

  // Seeds aggregated while one seed has no validation point yet (as while it trains towards its
  // first evaluation): the plot is empty, and the note under it says why and names the seed
  // (before: an empty plot, without a word).
  void seedMeanWithoutAValidationPointSaysWhy() {
    const QString ws = m_root + "/ws-seed-note";
    QDir().mkpath(ws);
    const QString cfgPath = m_root + "/seed-note.json";
    {
      QFile f(cfgPath);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QJsonDocument(tinyConfig(8, 2, 4)).toJson());
    }
    QCOMPARE(cstest::run_cli({"train", cfgPath, "--run-dir", ws + "/a", "--quiet"}), 0);
    QCOMPARE(cstest::run_cli({"train", cfgPath, "--run-dir", ws + "/b", "--set", "training.seed=2", "--quiet"}), 0);
    {  // b before its first evaluation: its metrics without the evaluation lines
      QFile f(ws + "/b/metrics.jsonl");
      QVERIFY(f.open(QIODevice::ReadOnly));
      QByteArray kept;
      for (const QByteArray& line : f.readAll().split('\n'))
        if (!line.isEmpty() && !QJsonDocument::fromJson(line).object().value("eval").toBool()) kept += line + '\n';
      f.close();
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(kept);
    }
    MainWindow w(opts(ws));
    w.show();
    gui::RunTableModel* runs = w.comparePanel()->runModel();
    QTRY_COMPARE_WITH_TIMEOUT(runs->rowCount(), 2, 10000);
    for (const auto& r : runs->runs()) runs->setChecked(r.dir, true);
    QVERIFY2(w.comparePanel()->compareMetric().startsWith("valid"), qPrintable(w.comparePanel()->compareMetric()));
    w.comparePanel()->setSeedAggregation(true);
    csw::CurvePlot* plot = w.comparePanel()->comparePlot();
    QCOMPARE(plot->seriesIds().size(), 1);
    QVERIFY(plot->seriesX(plot->seriesIds()[0]).isEmpty());
    const QString note = w.comparePanel()->xAxisNote();
    QVERIFY2(note.contains("(2 seeds): no mean drawn yet: b has no valid"), qPrintable(note));
    // Each run on its own: a's points are drawn, and no note.
    w.comparePanel()->setSeedAggregation(false);
    QCOMPARE(plot->seriesIds().size(), 2);
    QVERIFY(w.comparePanel()->xAxisNote().isEmpty());
  }

  // The Compare tab in a 1024x700 window, runs appearing while it is open (as from the CLI),
  // ticked with the space bar and two selected with the mouse: every control (filter, Export
  // CSV, run table, metric, x axis, seed aggregation and band, the plot and its View button,
  // the config diff) lies inside the visible part of the tab, and the run name, cell and test
  // metric columns are in view and readable (before: the columns sized for an empty table,
  // "2..." for the run names, Test off to the right, Export CSV and the diff off-screen).
  void compareTabFitsA1024x700Window() {
    const QString ws = m_root + "/ws-compare-small";
    QDir().mkpath(ws);
    MainWindow w(opts(ws));
    w.resize(1024, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resize(1024, 700);
    w.showPanel(w.comparePanel());
    QApplication::processEvents();
    QCOMPARE(w.size(), QSize(1024, 700));
    const QStringList names = {"20261127-224337-char_lm-gru", "20261127-225012-char_lm-gru",
                               "20261127-231540-char_lm-gcn_mzu"};
    for (int i = 0; i < names.size(); ++i) {
      writeCompareRun(ws + "/" + names[i], i);
      if (QTest::currentTestFailed()) return;
    }
    QSortFilterProxyModel* proxy = w.comparePanel()->runProxy();
    QTRY_COMPARE_WITH_TIMEOUT(proxy->rowCount(), 3, 10000);
    QTableView* view = nullptr;
    for (QTableView* v : w.comparePanel()->findChildren<QTableView*>())
      if (v->model() == proxy) view = v;
    QVERIFY(view);
    QTest::qWait(100);  // the rows' columns settle
    // Tick each run (a click on its row, then Space), then select two for the config diff.
    for (int r = 0; r < 3; ++r) {
      const QModelIndex idx = proxy->index(r, gui::RunTableModel::Name);
      QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(idx).center());
      QTest::keyClick(view, Qt::Key_Space);
    }
    QCOMPARE(w.comparePanel()->runModel()->checkedDirs().size(), 3);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {},
                      view->visualRect(proxy->index(0, gui::RunTableModel::Status)).center());
    QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::ControlModifier,
                      view->visualRect(proxy->index(1, gui::RunTableModel::Status)).center());
    QTRY_VERIFY(!w.comparePanel()->configDiffText().isEmpty());
    QTest::qWait(100);

    checkCompareControlsVisible(w, view);
    if (QTest::currentTestFailed()) return;
    checkRunColumnsReadable(view, proxy);
    if (QTest::currentTestFailed()) return;
    // A run deleted outside the window (the table is rebuilt): the columns keep their order and
    // fit what is left (the run names whole).
    QHeaderView* h = view->horizontalHeader();
    const int testAt = h->visualIndex(gui::RunTableModel::Test);
    QVERIFY(QDir(ws + "/" + names[2]).removeRecursively());
    QTRY_COMPARE_WITH_TIMEOUT(proxy->rowCount(), 2, 10000);
    QTest::qWait(100);
    QCOMPARE(h->visualIndex(gui::RunTableModel::Test), testAt);
    for (int r = 0; r < 2; ++r) {
      const QString text = proxy->index(r, gui::RunTableModel::Name).data().toString();
      QVERIFY2(view->sizeHintForIndex(proxy->index(r, gui::RunTableModel::Name)).width() <=
                   h->sectionSize(gui::RunTableModel::Name),
               qPrintable(QString("%1 in %2 px").arg(text).arg(h->sectionSize(gui::RunTableModel::Name))));
    }
    QVERIFY(h->sectionViewportPosition(gui::RunTableModel::Test) + h->sectionSize(gui::RunTableModel::Test) <=
            view->viewport()->width());
  }

  // "Stop and quit" asked while a run trains, and the run finishes before the answer: the
  // window still quits (it waited for a "stopped" report that a finished run never sends).
  void quitsWhenTheRunFinishedWhileAsking() {
    MainWindow w(opts(m_root + "/ws-quit"));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.configurePanel()->applyConfig(tinyConfig(1500, 50, 0));
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->currentRunDir().isEmpty(), 60000);
    QVERIFY(w.controller()->isTraining());
    bool asked = false, answered = false;
    QTimer poll;
    poll.setInterval(20);
    connect(&poll, &QTimer::timeout, this, [&] {
      auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
      if (!box) return;
      asked = true;
      if (w.controller()->isTraining()) return;  // the question stays open until the run has finished
      for (QAbstractButton* b : box->buttons())
        if (b->text() == QStringLiteral("Stop and quit")) {
          poll.stop();
          answered = true;
          b->click();
        }
    });
    poll.start();
    const bool closed = w.close();
    poll.stop();
    QVERIFY(asked);
    QVERIFY(answered);
    QVERIFY(closed);
    QVERIFY(!w.isVisible());
  }

  // `cellscope --measure-latency S --start` trains a run only to sample the event loop while it
  // trains; once the measurement has stopped it, that run is removed (it used to stay behind as
  // an empty stopped run in the workspace's tables); --keep-run keeps it.
  void measureLatencyWithStartLeavesNoRunBehind() {
    for (const bool keep : {false, true}) {
      MainWindow w(opts(m_root + (keep ? "/ws-latency-keep" : "/ws-latency")));
      w.configurePanel()->applyConfig(tinyConfig(1000000, 5, 0));
      QCommandLineParser parser;
      gui::ScriptedStart script(parser);
      QStringList args{"cellscope", "--measure-latency", "0.2", "--start"};
      if (keep) args << "--keep-run";
      QVERIFY2(parser.parse(args), qPrintable(parser.errorText()));
      QString started;
      connect(w.controller(), &gui::TrainingController::runStarted, this, [&](const QString& d) { started = d; });
      QCOMPARE(script.apply(w), -1);
      QTRY_VERIFY_WITH_TIMEOUT(!started.isEmpty(), 60000);
      QVERIFY(QFileInfo(started).isDir());
      QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 60000);
      if (keep) {
        QTest::qWait(300);  // past the poll that would remove it
        QVERIFY2(QFileInfo(started + "/config.json").isFile(), qPrintable(started));
      } else {
        QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(started), 10000);
      }
      w.controller()->disconnect(this);
    }
  }

  // Ctrl+3 and Ctrl+6 (and a click on a tab) take the keyboard focus into the panel shown, so its
  // own shortcuts (Ctrl+Return, Alt+Left/Right, Ctrl+Shift+E: active while the focus is inside
  // the panel) work at once; a configuration field being edited beside the tab keeps the focus.
  void tabShortcutsTakeTheFocusIntoThePanel() {
    MainWindow w(opts(m_root + "/ws-focus"));
    w.show();
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    auto focusIn = [](QWidget* panel) {
      QWidget* f = QApplication::focusWidget();
      return f && (f == panel || panel->isAncestorOf(f));
    };
    QTest::keyClick(&w, Qt::Key_3, Qt::ControlModifier);
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(w.analysisPanel()));
    QTRY_VERIFY(focusIn(w.analysisPanel()));
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_6, Qt::ControlModifier);
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(w.decodePanel()));
    QTRY_VERIFY(focusIn(w.decodePanel()));
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_2, Qt::ControlModifier);
    QTRY_VERIFY(focusIn(w.comparePanel()));
    // Editing the configuration (shown beside Training and Compare): Ctrl+1 leaves the focus there.
    QLineEdit* field = nullptr;
    for (QLineEdit* e : w.configurePanel()->findChildren<QLineEdit*>())
      if (!field && e->isVisible() && e->isEnabled()) field = e;
    QVERIFY(field);
    field->setFocus();
    QTRY_VERIFY(field->hasFocus());
    QTest::keyClick(field, Qt::Key_1, Qt::ControlModifier);
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(w.trainingPanel()));
    QVERIFY(field->hasFocus());
  }

  // The window opens within the screen's available geometry; a remembered geometry is
  // restored, but never one larger than the screen.
  void windowFitsTheScreen() {
    const QString settings = m_root + "/geometry.ini";
    QFile::remove(settings);
    const QRect avail = QGuiApplication::primaryScreen()->availableGeometry();
    auto sizes = [&](const QWidget& w) {
      return QString("window %1x%2 on a %3x%4 screen")
          .arg(w.width())
          .arg(w.height())
          .arg(avail.width())
          .arg(avail.height());
    };
    {
      MainWindow w(opts(m_root + "/ws-geom", settings));
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QVERIFY2(avail.contains(w.frameGeometry()), qPrintable(sizes(w)));
      // The user makes it smaller: remembered.
      w.resize(avail.width() - 100, avail.height() - 80);
      QApplication::processEvents();
      QVERIFY(w.close());
    }
    {
      MainWindow w(opts(m_root + "/ws-geom", settings));
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QCOMPARE(w.size(), QSize(avail.width() - 100, avail.height() - 80));
      // Saved on a larger screen: larger than this one.
      w.resize(avail.width() + 600, avail.height() + 400);
      QApplication::processEvents();
      QVERIFY(w.close());
    }
    {
      MainWindow w(opts(m_root + "/ws-geom", settings));
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QVERIFY2(avail.contains(w.frameGeometry()), qPrintable(sizes(w)));
    }
  }
};

CS_TEST(GuiDailyTest, "gui_daily")
#include "test_gui_daily.moc"
