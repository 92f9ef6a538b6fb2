// The Training tab's curves of the issue-18 tasks: a seq2seq run logs bleu, rouge1, rouge2 and
// rougeL beside its primary metric, a cloze run accuracy with the frequency baseline. Every such
// evaluation key is offered by the "Validation metrics" picker (BLEU first) and drawn live; the
// baselines the records carry (lead_<metric>, freq_baseline_<metric>) are labelled dashed
// reference lines on the plot of their metric, and the auto-fitted y range holds every point and
// every reference line.
#include <QComboBox>
#include <QtTest/QtTest>

#include "curve_plot.h"
#include "figure_export.h"
#include "gui_types.h"
#include "harness.h"
#include "qcp.h"
#include "training_panel.h"

namespace {
gui::MetricPoint evalPoint(qint64 step, const QString& split, const QVector<QPair<QString, double>>& values) {
  gui::MetricPoint p;
  p.step = step;
  p.epoch = step / 100.0;
  p.elapsed = step / 10.0;
  p.eval = true;
  p.split = split;
  p.values = values;
  return p;
}
gui::MetricPoint trainPoint(qint64 step, double loss) {
  gui::MetricPoint p;
  p.step = step;
  p.epoch = step / 100.0;
  p.elapsed = step / 10.0;
  p.values = {{"loss", loss}, {"ppl", std::exp(loss)}, {"lr", 0.001}};
  return p;
}
// The y range the plot shows holds v.
bool yRangeHolds(csw::CurvePlot* plot, double v) {
  const QCPRange r = plot->plot()->yAxis->range();
  return r.lower <= v && v <= r.upper;
}
}  // namespace

class GuiEvalMetricsTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void seq2seqMetricsAreOfferedAndDrawnLive() {
    QWidget parent;
    gui::FigureExporter exporter(&parent);
    gui::TrainingPanel panel(&exporter, &parent);
    panel.setRunInfo("/tmp/run-seq2seq", "ppl", "tokens", 12345);
    csw::CurvePlot* eval = panel.plot("eval");
    QVERIFY(eval);
    QVERIFY(panel.evalMetrics().isEmpty());
    // The first drain: training points and one validation record (the values in file order).
    panel.append({trainPoint(10, 5.0), trainPoint(20, 4.5),
                  evalPoint(20, "valid",
                            {{"bleu", 3.5},
                             {"lead_bleu", 9.25},
                             {"lead_rouge1", 21.0},
                             {"loss", 4.4},
                             {"ppl", 81.0},
                             {"rouge1", 18.0},
                             {"rouge2", 4.0},
                             {"rougeL", 16.5},
                             {"lead_rougeL", 19.0}})},
                 {});
    // The picker: the papers' metrics first; no baseline key, not the primary metric (nor the loss,
    // which is the primary perplexity in other units).
    QCOMPARE(panel.evalMetrics(), (QStringList{"bleu", "rouge1", "rouge2", "rougeL"}));
    QCOMPARE(panel.evalMetricPicker()->itemText(0), QString("BLEU"));
    QCOMPARE(panel.evalMetric(), QString("bleu"));
    QVERIFY(eval->isVisibleTo(&panel));
    QCOMPARE(eval->pointCount("valid"), 1);
    QCOMPARE(eval->seriesY("valid"), QVector<double>{3.5});
    // The primary metric stays on the main plot.
    QCOMPARE(panel.plot("metric")->seriesY("valid"), QVector<double>{81.0});
    // The lead baseline: a labelled reference line, not a curve, and inside the fitted range.
    QCOMPARE(eval->referenceLineIds(), QStringList{"valid|lead_bleu"});
    QCOMPARE(eval->referenceLineValue("valid|lead_bleu"), 9.25);
    QCOMPARE(eval->referenceLineLabel("valid|lead_bleu"), QString("valid lead baseline"));
    QVERIFY(!eval->hasSeries("lead_bleu"));
    eval->replotIfDirty();
    QVERIFY(yRangeHolds(eval, 3.5));
    QVERIFY(yRangeHolds(eval, 9.25));

    // Live: more records; a value far above the range so far, and a test record.
    panel.append({evalPoint(40, "valid",
                            {{"bleu", 12.0},
                             {"lead_bleu", 9.25},
                             {"rouge1", 30.0},
                             {"rougeL", 27.0},
                             {"lead_rougeL", 19.0},
                             {"ppl", 40.0}}),
                  evalPoint(60, "valid",
                            {{"bleu", 41.0},
                             {"lead_bleu", 9.25},
                             {"rouge1", 52.0},
                             {"rougeL", 50.0},
                             {"lead_rougeL", 19.0},
                             {"ppl", 20.0}}),
                  evalPoint(60, "test", {{"bleu", 38.0}, {"lead_bleu", 8.0}, {"rougeL", 47.0}})},
                 {});
    QCOMPARE(eval->seriesY("valid"), (QVector<double>{3.5, 12.0, 41.0}));
    QCOMPARE(eval->seriesX("valid"), (QVector<double>{20, 40, 60}));
    QCOMPARE(eval->seriesY("test"), QVector<double>{38.0});
    QCOMPARE(eval->referenceLineValue("test|lead_bleu"), 8.0);
    for (double v : {3.5, 12.0, 41.0, 38.0, 9.25, 8.0}) QVERIFY2(yRangeHolds(eval, v), qPrintable(QString::number(v)));

    // Another metric: its points and its own baseline.
    QVERIFY(panel.setEvalMetric("rougeL"));
    QCOMPARE(eval->seriesY("valid"), (QVector<double>{16.5, 27.0, 50.0}));
    QCOMPARE(eval->referenceLineValue("valid|lead_rougeL"), 19.0);
    QVERIFY(!eval->referenceLineIds().contains("valid|lead_bleu"));
    QCOMPARE(eval->yLabel(), QString("ROUGE-L F1"));
    // A metric without a baseline: no reference line.
    QVERIFY(panel.setEvalMetric("rouge2"));
    QCOMPARE(eval->seriesY("valid"), QVector<double>{4.0});
    QVERIFY(eval->referenceLineIds().isEmpty());
    // The user's pick stays when new keys arrive.
    panel.append({evalPoint(80, "valid", {{"accuracy", 0.5}, {"rouge2", 9.0}})}, {});
    QCOMPARE(panel.evalMetric(), QString("rouge2"));
    QCOMPARE(eval->seriesY("valid"), (QVector<double>{4.0, 9.0}));
    QVERIFY(panel.evalMetrics().contains("accuracy"));

    // A new run: the picker and the plot start empty again, and the plot steps aside.
    panel.beginRun();
    panel.setRunInfo("/tmp/run-char", "bpc", "chars", 10);
    QVERIFY(panel.evalMetrics().isEmpty());
    QVERIFY(!eval->isVisibleTo(&panel));
    // A char-LM's valid loss is its bpc in nats: nothing new to offer, the plot stays aside.
    panel.append({evalPoint(10, "valid", {{"bpc", 2.0}, {"loss", 1.4}})}, {});
    QVERIFY(panel.evalMetrics().isEmpty());
    QVERIFY(!eval->isVisibleTo(&panel));
  }

  void clozeAccuracyHasItsFrequencyBaseline() {
    QWidget parent;
    gui::FigureExporter exporter(&parent);
    gui::TrainingPanel panel(&exporter, &parent);
    panel.setRunInfo("/tmp/run-cloze", "accuracy", "questions", 999);
    csw::CurvePlot* metric = panel.plot("metric");
    panel.append({trainPoint(10, 2.0),
                  evalPoint(10, "valid", {{"accuracy", 0.18}, {"freq_baseline_accuracy", 0.31}, {"loss", 2.1}}),
                  evalPoint(20, "valid", {{"accuracy", 0.42}, {"freq_baseline_accuracy", 0.31}, {"loss", 1.7}})},
                 {});
    QCOMPARE(metric->seriesY("valid"), (QVector<double>{0.18, 0.42}));
    QCOMPARE(metric->referenceLineValue("valid|freq_baseline_accuracy"), 0.31);
    QCOMPARE(metric->referenceLineLabel("valid|freq_baseline_accuracy"), QString("valid frequency baseline"));
    // the baseline is not offered as a metric of its own
    QCOMPARE(panel.evalMetrics(), QStringList{"loss"});
    metric->replotIfDirty();
    for (double v : {0.18, 0.42, 0.31}) QVERIFY(yRangeHolds(metric, v));
    // The caption of an exported figure names the reference line.
    QVERIFY2(metric->exportCaption().contains("valid frequency baseline = 0.31"), qPrintable(metric->exportCaption()));
  }

  void referenceLineOutsideTheDataWidensTheRange() {
    csw::CurvePlot plot;
    plot.appendPoints("valid", {1, 2, 3}, {20, 25, 30});
    plot.setReferenceLine("lead", 2.0, "lead baseline");
    plot.replotIfDirty();
    QVERIFY(yRangeHolds(&plot, 2.0));
    QVERIFY(yRangeHolds(&plot, 30.0));
    // A flat series and a line above it.
    plot.clear();
    QVERIFY(plot.referenceLineIds().isEmpty());
    plot.appendPoints("valid", {1, 2}, {5, 5});
    plot.setReferenceLine("b", 50.0, "baseline");
    plot.resetView();
    QVERIFY(yRangeHolds(&plot, 5.0));
    QVERIFY(yRangeHolds(&plot, 50.0));
    plot.removeReferenceLine("b");
    QVERIFY(std::isnan(plot.referenceLineValue("b")));
  }

  // A baseline above every point (a seq2seq run's lead BLEU early in training) is the top of
  // the fitted range: its label still lies inside the plot, and two close baselines (valid and
  // test) keep both labels readable.
  void referenceLabelsStayInsideAndApart() {
    csw::CurvePlot plot;
    plot.resize(520, 260);
    plot.show();
    plot.appendPoints("valid", {20, 40, 60}, {0.0, 0.02, 0.05});
    plot.setReferenceLine("valid|lead_bleu", 4.35, "valid lead baseline");
    plot.setReferenceLine("test|lead_bleu", 4.30, "test lead baseline");
    plot.resetView();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    plot.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QRect area = plot.plotAreaRect();
    QVERIFY(area.height() > 50);
    const QRect a = plot.referenceLabelRect("valid|lead_bleu"), b = plot.referenceLabelRect("test|lead_bleu");
    QVERIFY(!a.isEmpty() && !b.isEmpty());
    for (const QRect& r : {a, b})
      QVERIFY2(area.contains(r), qPrintable(QString("label %1,%2 %3x%4 outside the plot %5,%6 %7x%8")
                                                .arg(r.x())
                                                .arg(r.y())
                                                .arg(r.width())
                                                .arg(r.height())
                                                .arg(area.x())
                                                .arg(area.y())
                                                .arg(area.width())
                                                .arg(area.height())));
    QVERIFY2(!a.intersects(b), "the two labels overlap");
    // A baseline low in the range: its label above the line, inside too.
    plot.clear();
    plot.appendPoints("valid", {1, 2}, {0.40, 0.52});
    plot.setReferenceLine("valid|freq_baseline_accuracy", 0.31, "valid frequency baseline");
    plot.resetView();
    plot.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QRect c = plot.referenceLabelRect("valid|freq_baseline_accuracy");
    QVERIFY(plot.plotAreaRect().contains(c));
    QVERIFY(c.bottom() <= plot.plot()->yAxis->coordToPixel(0.31) + 1);  // above its line
  }
};

CS_TEST(GuiEvalMetricsTest, "gui_eval_metrics")
#include "test_gui_eval_metrics.moc"
