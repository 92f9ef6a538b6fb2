// The window's "Sweeps" tab (app/gui/sweep_panel), offscreen: an invalid grid is
// refused with the point and path named; a small 2x2 sweep (x 2 seeds) built on the
// window's configuration runs to the end on the worker thread; its table has the
// best value of each column in bold, the paired view marks the reference column,
// the plot has one curve with error bars per series, and CSV/LaTeX export work.
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QApplication>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QTableWidget>
#include <QtTest/QtTest>

#include "configure_panel.h"
#include "corpus_fixture.h"
#include "gui_fit.h"
#include "harness.h"
#include "main_window.h"
#include "qcp.h"
#include "sweep_panel.h"
#include "training_controller.h"
#include "training_panel.h"

class GuiSweepTest : public QObject {
  Q_OBJECT

  // runsAndExportsASmallSweep's finished 2x2 sweep (x 2 seeds): its table, its CSV and LaTeX
  // exports, the paired view and the plot.
  static void checkTable(gui::SweepPanel* panel) {
    // Table: rows = hidden, columns = lr; mean ± std of 2 seeds; one bold cell per column (lower bpc).
    QTableWidget* t = panel->resultTable();
    QCOMPARE(t->rowCount(), 2);
    QCOMPARE(t->columnCount(), 2);
    QCOMPARE(t->verticalHeaderItem(0)->text(), QString("8"));
    QCOMPARE(t->horizontalHeaderItem(1)->text(), QString("0.02"));
    for (int c = 0; c < 2; ++c) {
      int bold = 0;
      double best = 1e9, other = -1;
      for (int r = 0; r < 2; ++r) {
        QVERIFY2(t->item(r, c)->text().contains(QString::fromUtf8("±")), qPrintable(t->item(r, c)->text()));
        const double mean = t->item(r, c)->text().section(' ', 0, 0).toDouble();
        if (t->item(r, c)->font().bold()) {
          ++bold;
          best = mean;
        } else {
          other = mean;
        }
      }
      QCOMPARE(bold, 1);
      QVERIFY(best <= other);
    }
  }
  static void checkExports(gui::SweepPanel* panel, const QString& root) {
    // Exports of the plain table.
    const QString csv = root + "/table.csv", tex = root + "/table.tex";
    QString err;
    QVERIFY2(panel->exportTable(csv, &err), qPrintable(err));
    QVERIFY2(panel->exportTable(tex, &err), qPrintable(err));
    QFile fc(csv);
    QVERIFY(fc.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(fc.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + 4);
    QVERIFY(lines[0].startsWith("model.hidden,training.lr,mean,std,n,best"));
    for (int i = 1; i < 5; ++i) QCOMPARE(lines[i].split(',')[4], QString("2"));
    QFile ft(tex);
    QVERIFY(ft.open(QIODevice::ReadOnly));
    const QString texText = QString::fromUtf8(ft.readAll());
    QVERIFY(texText.contains("\\begin{tabular}{lcc}") && texText.contains("\\end{tabular}"));
    QCOMPARE(texText.count("\\mathbf{"), 2);
    QVERIFY(texText.contains("model.hidden & 0.003 & 0.02"));
  }
  static void checkPairedView(gui::SweepPanel* panel, const QString& root) {
    // Paired view: differences to the column lr = 0.003.
    QTableWidget* t = panel->resultTable();
    QString err;
    panel->pairedReference()->setCurrentText("column 0.003");
    QCOMPARE(panel->pairedReference()->currentData().toString(), QString("col:0.003"));
    panel->pairedCheck()->setChecked(true);
    QCOMPARE(t->item(0, 0)->text(), QString("(ref.)"));
    QCOMPARE(t->item(1, 0)->text(), QString("(ref.)"));
    QVERIFY(t->item(0, 1)->text().contains(QString::fromUtf8("±")));
    QVERIFY(!t->item(0, 1)->font().bold());
    // each difference says its verdict and, in the tooltip, the tests behind it; the caption what p covers
    QVERIFY2(t->item(0, 1)->text().contains(QRegularExpression("\\n(holds|consistent in sign|not established)")),
             qPrintable(t->item(0, 1)->text()));
    QVERIFY2(t->item(0, 1)->toolTip().contains("paired t-test over"), qPrintable(t->item(0, 1)->toolTip()));
    QVERIFY2(panel->captionText().contains("Note: p "), qPrintable(panel->captionText()));
    QVERIFY(panel->exportTable(root + "/paired.csv", &err));
    QFile fp(root + "/paired.csv");
    QVERIFY(fp.open(QIODevice::ReadOnly));
    QVERIFY(QString::fromUtf8(fp.readAll()).contains("\n8,0.003,0,0,2,"));  // the reference minus itself
    // ... and to a row (the first hidden size): the whole row is the reference.
    panel->pairedReference()->setCurrentIndex(panel->pairedReference()->findData(QString("row:8")));
    QCOMPARE(t->item(0, 0)->text(), QString("(ref.)"));
    QCOMPARE(t->item(0, 1)->text(), QString("(ref.)"));
    QVERIFY(t->item(1, 0)->text().contains(QString::fromUtf8("±")));
    panel->pairedCheck()->setChecked(false);
  }
  static void checkPlot(gui::SweepPanel* panel) {
    // Plot: x = hidden (numeric first axis), one curve per lr with error bars.
    QCustomPlot* plot = panel->seriesPlot();
    QCOMPARE(plot->graphCount(), 2);
    QVERIFY(plot->legend->visible());  // two series: their legend is shown
    QCOMPARE(plot->graph(0)->data()->size(), 2);
    int bars = 0;
    for (int i = 0; i < plot->plottableCount(); ++i) bars += qobject_cast<QCPErrorBars*>(plot->plottable(i)) != nullptr;
    QCOMPARE(bars, 2);
    QCOMPARE(plot->xAxis->label(), QString("model.hidden"));
  }

  // A window with its own workspace and settings under the tests' temp dir (ws-TAG, settings-TAG.ini).
  static gui::WindowOptions windowIn(const QString& tag) {
    const QString root = cstest::temp_dir() + "/guisweep";
    gui::WindowOptions o;
    o.workspace = root + "/ws-" + tag;
    o.settingsFile = root + "/settings-" + tag + ".ini";
    o.restoreLastConfig = false;
    return o;
  }
  // A sweep with one named axis, variant: small (model.hidden 8) and big (24), of 6-step char_lm
  // runs; the caller adds its seeds (and what it leaves out).
  static QJsonObject variantSweep(const QString& name) {
    const QString corpus = cstest::write_text_fixture("gui_sweep_corpus.txt", 6000);
    return QJsonObject{
        {"name", name},
        {"base",
         QJsonObject{
             {"task", QJsonObject{{"name", "char_lm"}}},
             {"dataset", QJsonObject{{"path", corpus}}},
             {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
             {"training",
              QJsonObject{
                  {"steps", 6}, {"batch", 8}, {"bptt", 16}, {"eval_every", 6}, {"log_every", 3}, {"threads", 1}}}}},
        {"grid",
         QJsonArray{QJsonObject{
             {"name", "variant"},
             {"values", QJsonArray{QJsonObject{{"label", "small"}, {"set", QJsonObject{{"model.hidden", 8}}}},
                                   QJsonObject{{"label", "big"}, {"set", QJsonObject{{"model.hidden", 24}}}}}}}}}};
  }
  static void writeSpec(const QString& dir, const QJsonObject& spec) {
    QDir().mkpath(dir);
    QFile f(dir + "/sweep.json");
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(spec).toJson());
  }
  // Runs the panel's opened sweep to its end, which finishes `points` points.
  static void runToEnd(gui::SweepPanel* panel, int points) {
    QSignalSpy finished(panel, &gui::SweepPanel::sweepFinished);
    QSignalSpy failed(panel, &gui::SweepPanel::sweepFailed);
    QVERIFY2(panel->startSweep(), qPrintable(panel->lastError()));
    QVERIFY(finished.wait(120000) || !failed.isEmpty());
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    QCOMPARE(finished.at(0).at(1).toInt(), points);
    QCOMPARE(finished.at(0).at(2).toInt(), points);
  }

 private Q_SLOTS:
  void initTestCase() {
    qunsetenv("CELLSCOPE_WORKSPACE");
    QCoreApplication::setOrganizationName("CellscopeTests");
    const QString root = cstest::temp_dir() + "/guisweep";
    QDir().mkpath(root);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, root + "/qsettings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, root + "/qsettings");
  }

  // At 1024x700 the tab needs no horizontal scroll bar: both export buttons are inside it.
  void fitsA1024x700Window() {
    const QString root = cstest::temp_dir() + "/guisweep";
    gui::WindowOptions o;
    o.workspace = root + "/ws-small";
    o.settingsFile = root + "/settings-small.ini";
    o.restoreLastConfig = false;
    gui::MainWindow w(o);
    QList<QWidget*> exports;
    for (QPushButton* b : w.sweepPanel()->findChildren<QPushButton*>())
      if (b->text().startsWith("Export")) exports << b;
    QCOMPARE(exports.size(), 2);
    const QString why = cstest::tabFitsWindow(w, "sweeps", "Sweeps", exports);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    // no sweep yet: the plot has no series and shows no (empty) legend box
    auto* plot = w.sweepPanel()->findChild<QCustomPlot*>();
    QVERIFY(plot);
    QCOMPARE(plot->graphCount(), 0);
    QVERIFY(!plot->legend->visible());
  }

  void runsAndExportsASmallSweep() {
    const QString root = cstest::temp_dir() + "/guisweep";
    const QString corpus = cstest::write_text_fixture("gui_sweep_corpus.txt", 6000);
    gui::WindowOptions o;
    o.workspace = root + "/ws";
    o.settingsFile = root + "/settings.ini";
    o.restoreLastConfig = false;
    gui::MainWindow w(o);
    w.resize(1400, 900);
    w.configurePanel()->applyConfig(QJsonObject{{"task", QJsonObject{{"name", "char_lm"}}},
                                                {"dataset", QJsonObject{{"path", corpus}}},
                                                {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                                                {"training", QJsonObject{{"steps", 12},
                                                                         {"batch", 8},
                                                                         {"bptt", 16},
                                                                         {"eval_every", 6},
                                                                         {"log_every", 3},
                                                                         {"lr", 0.003},
                                                                         {"threads", 1}}}});
    auto* panel = w.sweepPanel();
    QVERIFY(panel);
    // View > Sweeps (Ctrl+4) shows the tab.
    QAction* act = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
      if (a->shortcut() == QKeySequence(QStringLiteral("Ctrl+4"))) act = a;
    QVERIFY(act);
    w.showPanel(w.trainingPanel());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    act->trigger();
    QCOMPARE(w.currentPanel(), static_cast<QWidget*>(panel));
    // The Run / Stop / Open buttons stay where they are whatever the status below them says
    // (before: ~28 px up and down as a sweep started and ended, its status one line or three).
    auto runButtonAt = [&] {
      QApplication::processEvents();
      for (QPushButton* b : panel->findChildren<QPushButton*>())
        if (b->text() == QStringLiteral("Run / Resume")) return b->mapTo(panel, QPoint(0, 0));
      return QPoint(-1, -1);
    };
    const QPoint buttonsAt = runButtonAt();
    QVERIFY(buttonsAt.y() > 0);

    // An invalid value: refused before anything runs, the point and the option named.
    panel->setSweepName("gui-2x2");
    panel->setGrid({{"model.hidden", "16, -4"}, {"training.lr", "0.003, 0.02"}});
    panel->setSeeds("1, 2");
    QVERIFY(!panel->startSweep());
    QVERIFY2(panel->lastError().contains("model.hidden=-4") && panel->lastError().contains("model.hidden:"),
             qPrintable(panel->lastError()));
    QVERIFY(!QFileInfo::exists(o.workspace + "/sweeps/gui-2x2"));
    QCOMPARE(runButtonAt(), buttonsAt);  // a message of two lines in red

    // The 2x2 sweep x 2 seeds, run to the end.
    panel->setGrid({{"model.hidden", "8, 16"}, {"training.lr", "0.003, 0.02"}});
    QSignalSpy finished(panel, &gui::SweepPanel::sweepFinished);
    QSignalSpy failed(panel, &gui::SweepPanel::sweepFailed);
    QVERIFY(panel->startSweep());
    QCOMPARE(runButtonAt(), buttonsAt);
    // while the sweep runs the Training tab does not start a second training
    QVERIFY(panel->isRunning());
    QVERIFY(!w.startTraining());
    QVERIFY(!w.controller()->isTraining());
    QVERIFY(finished.wait(240000) || !failed.isEmpty());
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    QCOMPARE(finished.at(0).at(0).toBool(), false);  // not stopped
    QCOMPARE(finished.at(0).at(1).toInt(), 8);
    QCOMPARE(finished.at(0).at(2).toInt(), 8);
    QVERIFY(!panel->isRunning());
    QCOMPARE(runButtonAt(), buttonsAt);
    QVERIFY(QFileInfo::exists(panel->sweepDir() + "/state.json"));
    // Opening a sweep shows its own grid and seeds in the editor, not what was there before.
    panel->setGrid({{"model.embed", "4"}});
    panel->setSeeds("9");
    QVERIFY(panel->openSweep(panel->sweepDir()));
    QCOMPARE(panel->gridEditor()->rowCount(), 2);
    QCOMPARE(panel->gridEditor()->item(0, 0)->text(), QString("model.hidden"));
    QCOMPARE(panel->gridEditor()->item(0, 1)->text(), QString("8, 16"));
    QCOMPARE(panel->gridEditor()->item(1, 1)->text(), QString("0.003, 0.02"));

    checkTable(panel);
    if (QTest::currentTestFailed()) return;
    checkExports(panel, root);
    if (QTest::currentTestFailed()) return;
    checkPairedView(panel, root);
    if (QTest::currentTestFailed()) return;
    checkPlot(panel);
    if (QTest::currentTestFailed()) return;
    if (qEnvironmentVariableIsSet("CS_SCREENSHOT")) {
      w.show();
      QTest::qWait(200);
      w.grab().save(qEnvironmentVariable("CS_SCREENSHOT"));
    }
    // Running it again resumes nothing: every point is finished.
    QSignalSpy again(panel, &gui::SweepPanel::sweepFinished);
    QVERIFY(panel->startSweep());
    QVERIFY(again.wait(60000));
    QCOMPARE(again.at(0).at(1).toInt(), 8);
    QVERIFY(panel->statusText().contains("8/8"));
  }

  // A sweep opened from its directory resumes as its sweep.json specifies: named axes (the editor shows their
  // labels, not option paths) and the points it leaves out. Before, Run built a spec from the editor's labels
  // and refused ("variant" is no option path). An edited grid is a new spec, built from the editor as ever.
  void resumesAnOpenedSweepAsItsSpecSays() {
    const gui::WindowOptions o = windowIn("open");
    gui::MainWindow w(o);
    const QString dir = o.workspace + "/sweeps/named";
    QJsonObject spec = variantSweep("named");
    spec["seeds"] = QJsonArray{1, 2};
    spec["exclude"] = QJsonArray{
        QJsonObject{{"where", QJsonObject{{"variant", "big"}, {"seed", 2}}}, {"reason", "one seed of the big one"}}};
    writeSpec(dir, spec);
    if (QTest::currentTestFailed()) return;
    auto* panel = w.sweepPanel();
    QVERIFY(panel->openSweep(dir));
    QCOMPARE(panel->gridEditor()->item(0, 1)->text(), QString("small, big"));
    runToEnd(panel, 3);  // 2 x 2 less the one left out
    if (QTest::currentTestFailed()) return;
    QVERIFY(panel->statusText().contains("3/3"));
    QVERIFY2(panel->captionText().contains("left out: variant=big, seed=2: not run (one seed of the big one)"),
             qPrintable(panel->captionText()));
    // an edited grid is the editor's spec: its labels are no option paths, so it is refused, naming the path
    panel->setGrid({{"variant", "small"}});
    QVERIFY(!panel->startSweep());
    QVERIFY2(panel->lastError().contains("variant"), qPrintable(panel->lastError()));
  }

  // The paired view's reference defaults to the first row or column that has values: a sweep's first
  // row may be one not run yet (MC-RNN Table 3's HM-RNN), and a reference without values compares
  // nothing. Before, it was the first row whatever it held.
  void pairedReferenceDefaultsToOneWithValues() {
    const gui::WindowOptions o = windowIn("ref");
    gui::MainWindow w(o);
    const QString dir = o.workspace + "/sweeps/ref";
    QJsonObject spec = variantSweep("ref");
    spec["seeds"] = QJsonArray{1};
    writeSpec(dir, spec);
    if (QTest::currentTestFailed()) return;
    auto* panel = w.sweepPanel();
    QVERIFY(panel->openSweep(dir));
    runToEnd(panel, 2);
    if (QTest::currentTestFailed()) return;
    // The small row's run loses its results (as a point not run yet has none).
    QFile sf(dir + "/state.json");
    QVERIFY(sf.open(QIODevice::ReadOnly));
    const QJsonObject points = QJsonDocument::fromJson(sf.readAll()).object().value("points").toObject();
    int emptied = 0;
    for (auto it = points.begin(); it != points.end(); ++it) {
      const QString rd = it.value().toObject().value("run_dir").toString();
      QFile cf(rd + "/config.json");
      QVERIFY2(cf.open(QIODevice::ReadOnly), qPrintable(rd));
      const QJsonObject cfg = QJsonDocument::fromJson(cf.readAll()).object();
      if (cfg.value("model").toObject().value("hidden").toInt() != 8) continue;
      QVERIFY(QFile::rename(rd + "/summary.json", rd + "/summary.json.gone"));
      ++emptied;
    }
    QCOMPARE(emptied, 1);
    panel->pairedReference()->setCurrentIndex(-1);  // no earlier choice to keep
    QVERIFY(panel->openSweep(dir));
    QTableWidget* t = panel->resultTable();
    QCOMPARE(t->rowCount(), 2);
    QCOMPARE(t->verticalHeaderItem(0)->text(), QString("small"));
    QCOMPARE(t->item(0, 0)->text(), QString("-"));
    QCOMPARE(panel->pairedReference()->count(), 2);
    QCOMPARE(panel->pairedReference()->currentData().toString(), QString("row:big"));
    // A default without values moves on once one has values; a choice the user made is kept, values or not.
    panel->pairedReference()->setCurrentIndex(0);
    QVERIFY(panel->openSweep(dir));
    QCOMPARE(panel->pairedReference()->currentData().toString(), QString("row:big"));
    panel->pairedReference()->setCurrentIndex(0);
    Q_EMIT panel->pairedReference()->activated(0);  // as a pick in the list does
    QVERIFY(panel->openSweep(dir));
    QCOMPARE(panel->pairedReference()->currentData().toString(), QString("row:small"));
  }
};

CS_TEST(GuiSweepTest, "gui_sweep")
#include "test_gui_sweep.moc"
