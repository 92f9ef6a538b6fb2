// The Compare tab's x axis: step-matched (Step) or compute-matched (wall-clock time, training
// FLOPs). Fixture runs written by the test: a fast cell (0.1 s, 1e9 FLOPs per step, slow
// learner) and a slow cell (0.6 s, 6e9 FLOPs per step, fast learner) whose ordering at equal
// steps is the reverse of their ordering at equal time; a run whose metrics.jsonl has no
// training FLOPs (an old file: left out of the FLOPs axis and named, never drawn at 0); seed
// aggregation on the time axis (seeds differ in wall-clock time: averaged at equal steps).
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest/QtTest>

#include "compare_panel.h"
#include "curve_plot.h"
#include "figure_export.h"
#include "gui_types.h"
#include "harness.h"
#include "run_table.h"

namespace {

struct Fake {
  QString name;
  double secPerStep, flopsPerStep, slope;
  int seed = 1;
  bool withFlops = true;
  int hidden = 32;
  double timeJitter = 0;  // added to every elapsed (another seed's machine noise)
};

double validAt(const Fake& f, int step) { return 3.0 - f.slope * step; }

void writeFileChecked(const QString& path, const QByteArray& data) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(data);
}

QString writeRun(const QString& ws, const Fake& f) {
  const QString dir = QDir(ws).filePath(f.name);
  QDir().mkpath(dir);
  const QJsonObject cfg{{"task", QJsonObject{{"name", "char_lm"}}},
                        {"model", QJsonObject{{"cell", "gru"}, {"hidden", f.hidden}}},
                        {"training", QJsonObject{{"steps", 1000}, {"seed", f.seed}}}};
  writeFileChecked(dir + "/config.json", QJsonDocument(cfg).toJson());
  QByteArray lines;
  for (int s = 100; s <= 1000; s += 100) {
    QJsonObject e{{"step", s},    {"epoch", s / 100.0}, {"elapsed", f.secPerStep * s + f.timeJitter},
                  {"eval", true}, {"split", "valid"},   {"bpc", validAt(f, s)}};
    if (f.withFlops) e.insert("train_flops", f.flopsPerStep * s);
    lines += QJsonDocument(e).toJson(QJsonDocument::Compact) + "\n";
  }
  writeFileChecked(dir + "/metrics.jsonl", lines);
  const QJsonObject sum{
      {"status", "finished"},           {"task", "char_lm"},  {"cell", "gru"}, {"primary_metric", "bpc"},
      {"lower_is_better", true},        {"parameters", 1000}, {"step", 1000},  {"elapsed", f.secPerStep * 1000},
      {"best_valid", validAt(f, 1000)}, {"best_step", 1000}};
  writeFileChecked(dir + "/summary.json", QJsonDocument(sum).toJson());
  return QFileInfo(dir).absoluteFilePath();
}

// y of a series at the largest x <= limit (NaN when none).
double yAtOrBefore(csw::CurvePlot* p, const QString& id, double limit) {
  const auto xs = p->seriesX(id), ys = p->seriesY(id);
  double y = std::nan("");
  for (int i = 0; i < xs.size(); ++i)
    if (xs[i] <= limit) y = ys[i];
  return y;
}

}  // namespace

class TestGuiCompareX : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void computeMatchedAxes() {
    const QString ws = cstest::temp_dir() + "/ws-compare-x";
    QDir(ws).removeRecursively();
    QDir().mkpath(ws);
    const QString fast = writeRun(ws, {"fast", 0.1, 1e9, 0.8e-3});
    const QString slow = writeRun(ws, {"slow", 0.6, 6e9, 1.2e-3, 1, true, 64});
    const QString old = writeRun(ws, {"old", 0.2, 2e9, 1.0e-3, 1, false, 48});
    QWidget host;
    gui::FigureExporter exporter(&host);
    gui::ComparePanel c(&exporter);
    c.setWorkspace(ws);
    QTRY_COMPARE(c.runModel()->rowCount(), 3);
    c.runModel()->setChecked(fast, true);
    c.runModel()->setChecked(slow, true);
    QVERIFY(c.setCompareMetric("valid|bpc"));
    csw::CurvePlot* plot = c.comparePlot();

    // Step-matched: at step 1000 the slow cell is better.
    QCOMPARE(c.xAxis(), gui::XAxis::Step);
    QCOMPARE(plot->seriesX(fast).last(), 1000.0);
    QVERIFY(plot->seriesY(slow).last() < plot->seriesY(fast).last());

    // The tab's own x choice: wall-clock time. At 100 s fast is at step 1000, slow at 100.
    auto* combo = [&]() -> QComboBox* {
      for (auto* cb : c.findChildren<QComboBox*>())
        if (cb->findText("Training FLOPs") >= 0) return cb;
      return nullptr;
    }();
    QVERIFY(combo);
    QVERIFY(combo->findText("Wall-clock time") >= 0);
    combo->setCurrentIndex(combo->findText("Wall-clock time"));
    QCOMPARE(c.xAxis(), gui::XAxis::Time);
    QCOMPARE(plot->seriesX(slow).first(), 60.0);
    QCOMPARE(plot->seriesX(slow).last(), 600.0);
    const double fastAt100 = yAtOrBefore(plot, fast, 100), slowAt100 = yAtOrBefore(plot, slow, 100);
    QVERIFY2(fastAt100 < slowAt100, qPrintable(QString("%1 %2").arg(fastAt100).arg(slowAt100)));
    QCOMPARE(fastAt100, validAt({"fast", 0.1, 1e9, 0.8e-3}, 1000));
    QCOMPARE(slowAt100, validAt({"slow", 0.6, 6e9, 1.2e-3}, 100));

    // Training FLOPs: x = the recorded cumulative FLOPs; same ordering as time at 1e12.
    combo->setCurrentIndex(combo->findText("Training FLOPs"));
    QCOMPARE(c.xAxis(), gui::XAxis::Flops);
    QCOMPARE(plot->seriesX(slow).first(), 6e11);
    QVERIFY(yAtOrBefore(plot, fast, 1e12) < yAtOrBefore(plot, slow, 1e12));
    QVERIFY(c.xAxisNote().isEmpty());

    // An old metrics file without train_flops: not drawn on the FLOPs axis (never at x = 0),
    // and named under the plot.
    c.runModel()->setChecked(old, true);
    c.redraw();
    QCOMPARE(plot->pointCount(old), 0);
    QVERIFY2(c.xAxisNote().contains("old") && c.xAxisNote().contains("training FLOPs"), qPrintable(c.xAxisNote()));
    for (const QString& id : plot->seriesIds())
      for (double x : plot->seriesX(id)) QVERIFY(x > 0);
    // ... and drawn again on the time axis, the note gone.
    c.setXAxis(gui::XAxis::Time);
    QCOMPARE(combo->currentText(), QString("Wall-clock time"));
    QCOMPARE(plot->pointCount(old), 10);
    QVERIFY(c.xAxisNote().isEmpty());
  }

  void seedMeanOnTheTimeAxis() {
    // Two seeds of one setting whose wall-clock times differ: the mean is taken at equal steps
    // and drawn at the seeds' mean time (equal-x matching would find no common point).
    const QString ws = cstest::temp_dir() + "/ws-compare-x-seeds";
    QDir(ws).removeRecursively();
    QDir().mkpath(ws);
    Fake a{"a", 0.1, 1e9, 0.8e-3, 1};
    Fake b{"b", 0.1, 1e9, 1.0e-3, 2};
    b.timeJitter = 3.0;
    const QString da = writeRun(ws, a), db = writeRun(ws, b);
    QWidget host;
    gui::FigureExporter exporter(&host);
    gui::ComparePanel c(&exporter);
    c.setWorkspace(ws);
    QTRY_COMPARE(c.runModel()->rowCount(), 2);
    c.runModel()->setChecked(da, true);
    c.runModel()->setChecked(db, true);
    QVERIFY(c.setCompareMetric("valid|bpc"));
    c.setXAxis(gui::XAxis::Time);
    c.setSeedAggregation(true);
    csw::CurvePlot* plot = c.comparePlot();
    QCOMPARE(plot->seriesIds().size(), 1);
    const QString id = plot->seriesIds().first();
    QCOMPARE(plot->pointCount(id), 10);
    QCOMPARE(plot->seriesX(id).first(), 10.0 + 1.5);  // mean of 10 s and 13 s at step 100
    QCOMPARE(plot->seriesY(id).first(), 0.5 * (validAt(a, 100) + validAt(b, 100)));
    QVERIFY(plot->hasBand(id));
  }
};

CS_TEST(TestGuiCompareX, "gui_compare_x")
#include "test_gui_compare_x.moc"
