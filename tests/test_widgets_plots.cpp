// Widgets: CurvePlot, HeatmapView, AttentionGrid, BarChart and figure/CSV export.
#include <QFile>
#include <QFontMetricsF>
#include <QImage>
#include <QRegularExpression>
#include <QXmlStreamReader>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention_grid.h"
#include "bar_chart.h"
#include "curve_plot.h"
#include "export.h"
#include "harness.h"
#include "heatmap_view.h"
#include "qcp.h"
#include "widgets_info.h"

// In a namespace of its own, so that the using-directive stays in this file (tests/check_unity.py).
namespace widgets_plots_test {
using namespace csw;

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

// PNG signature, pixel size and DPI metadata.
void checkPng(const QString& path, QSize expected, int dpi) {
  const QByteArray bytes = readAll(path);
  QVERIFY2(bytes.size() > 100, qPrintable(path));
  QCOMPARE(bytes.left(8), QByteArray("\x89PNG\r\n\x1a\n", 8));
  QVERIFY(bytes.contains("pHYs"));
  QImage img(path);
  QVERIFY(!img.isNull());
  QCOMPARE(img.size(), expected);
  QVERIFY(std::abs(img.dotsPerMeterX() * 0.0254 - dpi) < 1.0);
}

// PDF header and a page (MediaBox) of the figure size in points.
void checkPdf(const QString& path, QSize points) {
  const QByteArray bytes = readAll(path);
  QVERIFY2(bytes.startsWith("%PDF"), qPrintable(path));
  QVERIFY(bytes.contains("%%EOF"));
  const QRegularExpression re(QStringLiteral("/MediaBox\\s*\\[\\s*0\\s+0\\s+([0-9.]+)\\s+([0-9.]+)\\s*\\]"));
  const auto m = re.match(QString::fromLatin1(bytes));
  QVERIFY2(m.hasMatch(), "no MediaBox");
  QVERIFY2(std::abs(m.captured(1).toDouble() - points.width()) <= 1.0, qPrintable(m.captured(0)));
  QVERIFY2(std::abs(m.captured(2).toDouble() - points.height()) <= 1.0, qPrintable(m.captured(0)));
}

// SVG is well-formed XML whose text contains every string of mustContain.
void checkSvg(const QString& path, const QStringList& mustContain) {
  const QByteArray bytes = readAll(path);
  QVERIFY(!bytes.isEmpty());
  QXmlStreamReader xml(bytes);
  QString text;
  bool sawSvg = false;
  while (!xml.atEnd()) {
    xml.readNext();
    if (xml.isStartElement() && xml.name() == QLatin1String("svg")) sawSvg = true;
    if (xml.isCharacters()) text += xml.text();
  }
  QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
  QVERIFY(sawSvg);
  for (const QString& s : mustContain)
    QVERIFY2(text.contains(s), qPrintable(QStringLiteral("SVG lacks text '%1'").arg(s)));
}

QStringList csvLines(const QString& path) {
  QString s = QString::fromUtf8(readAll(path));
  QStringList lines = s.split(QLatin1Char('\n'));
  if (!lines.isEmpty() && lines.last().isEmpty()) lines.removeLast();
  return lines;
}

void exportAll(QWidget* view, const QString& stem, const QStringList& svgText) {
  const QString dir = cstest::temp_dir();
  ExportOptions o;
  o.size = QSize(400, 300);
  o.scale = 2.0;
  o.dpi = 300;
  o.fontFamily = QStringLiteral("DejaVu Sans");
  o.fontPointSize = 9;
  QString err;
  QVERIFY2(exportFigure(view, dir + "/" + stem + ".png", o, &err), qPrintable(err));
  checkPng(dir + "/" + stem + ".png", QSize(800, 600), 300);
  if (QTest::currentTestFailed()) return;
  QVERIFY2(exportFigure(view, dir + "/" + stem + ".pdf", o, &err), qPrintable(err));
  checkPdf(dir + "/" + stem + ".pdf", QSize(400, 300));
  if (QTest::currentTestFailed()) return;
  QVERIFY2(exportFigure(view, dir + "/" + stem + ".svg", o, &err), qPrintable(err));
  checkSvg(dir + "/" + stem + ".svg", svgText);
  if (QTest::currentTestFailed()) return;
  QVERIFY2(exportFigure(view, dir + "/" + stem + ".csv", o, &err), qPrintable(err));
  QVERIFY(!exportFigure(view, dir + "/" + stem + ".bmpx", o, &err));
  QVERIFY(err.contains(QLatin1String("unsupported")));
}

}  // namespace

class TestWidgetsPlots : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void version() { QCOMPARE(qcustomplot_version(), QStringLiteral(QCUSTOMPLOT_VERSION_STR)); }

  void emaOfConstantIsConstant() {
    const QVector<double> ys(50, 3.25);
    for (double f : {0.0, 0.3, 0.6, 0.9, 0.99}) {
      const QVector<double> s = CurvePlot::smoothEma(ys, f);
      QCOMPARE(s.size(), ys.size());
      for (double v : s) QVERIFY2(std::abs(v - 3.25) < 1e-12, qPrintable(QString::number(v, 'g', 17)));
    }
  }

  void emaOfStepHasNoStartBias() {
    QVector<double> ys;
    for (int i = 0; i < 10; ++i) ys << 5.0;
    for (int i = 0; i < 10; ++i) ys << 10.0;
    const double f = 0.6;
    const QVector<double> s = CurvePlot::smoothEma(ys, f);
    // A plain EMA starting at 0 would give 2.0 for the first point; debiased gives 5.
    for (int i = 0; i < 10; ++i) QVERIFY(std::abs(s[i] - 5.0) < 1e-12);
    // After the step: exact debiased values e_t / (1 - f^t).
    double e = 0;
    for (int t = 1; t <= 20; ++t) {
      e = f * e + (1 - f) * ys[t - 1];
      QVERIFY(std::abs(s[t - 1] - e / (1 - std::pow(f, t))) < 1e-12);
    }
    // s[10] = (f^10*(1-f^10)*5*... ) check the known value numerically and monotone rise.
    QVERIFY(s[10] > 5.0 && s[10] < 10.0);
    for (int i = 11; i < 20; ++i) QVERIFY(s[i] > s[i - 1] && s[i] < 10.0);
    // NaN passes through without poisoning the average.
    const QVector<double> withNan = CurvePlot::smoothEma({1.0, std::nan(""), 1.0}, 0.5);
    QCOMPARE(withNan[0], 1.0);
    QVERIFY(std::isnan(withNan[1]));
    QCOMPARE(withNan[2], 1.0);
  }

  void curvePlotAppendIsDeferredAndIncremental() {
    CurvePlot p;
    p.addSeries(QStringLiteral("train"), QStringLiteral("train loss"), Qt::blue);
    QVERIFY(p.replotIfDirty());
    QVERIFY(!p.replotIfDirty());
    QVector<double> xs, ys;
    for (int i = 0; i < 100; ++i) {
      xs << i;
      ys << std::exp(-i / 30.0) + (i % 7) * 0.01;
    }
    p.setSmoothing(0.8);
    QCOMPARE(p.smoothing(), 0.8);
    p.appendPoints(QStringLiteral("train"), xs.mid(0, 60), ys.mid(0, 60));
    QVERIFY(p.isDirty());
    QVERIFY(p.replotIfDirty());
    QVERIFY(!p.isDirty());
    p.appendPoints(QStringLiteral("train"), xs.mid(60), ys.mid(60));
    QVERIFY(p.isDirty());
    QCOMPARE(p.pointCount(QStringLiteral("train")), 100);
    QVERIFY(p.replotIfDirty());
    // Incremental smoothing == smoothing the whole series at once.
    const QVector<double> inc = p.smoothedY(QStringLiteral("train"));
    const QVector<double> ref = CurvePlot::smoothEma(ys, 0.8);
    QCOMPARE(inc.size(), ref.size());
    for (int i = 0; i < ref.size(); ++i) QVERIFY(std::abs(inc[i] - ref[i]) < 1e-12);
    // Out-of-order points are inserted sorted and the smoothing is recomputed.
    p.appendPoints(QStringLiteral("train"), {-2.0, -1.0}, {7.0, 7.0});
    p.replotIfDirty();
    const QVector<double> x2 = p.seriesX(QStringLiteral("train"));
    QCOMPARE(x2.first(), -2.0);
    QVERIFY(std::is_sorted(x2.begin(), x2.end()));
    QCOMPARE(p.smoothedY(QStringLiteral("train")).first(), 7.0);
    // setSeries replaces.
    p.setSeries(QStringLiteral("train"), {1, 2, 3}, {4, 5, 6});
    QCOMPARE(p.pointCount(QStringLiteral("train")), 3);
    QCOMPARE(p.seriesY(QStringLiteral("train")), (QVector<double>{4, 5, 6}));
  }

  void curvePlotAxesMarkerBandLegend() {
    CurvePlot p;
    p.setYLog(true);
    QCOMPARE(p.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(!p.plot()->yAxis->ticker().dynamicCast<QCPAxisTickerLog>().isNull());
    p.setXLog(true);
    QCOMPARE(p.plot()->xAxis->scaleType(), QCPAxis::stLogarithmic);
    p.setYLog(false);
    QCOMPARE(p.plot()->yAxis->scaleType(), QCPAxis::stLinear);
    QVERIFY(p.plot()->yAxis->ticker().dynamicCast<QCPAxisTickerLog>().isNull());
    p.setXLog(false);

    p.setSeries(QStringLiteral("mean"), {0, 1, 2, 3}, {1, 2, 3, 4});
    const int graphsBefore = p.plot()->graphCount();
    p.setBand(QStringLiteral("mean"), {0, 1, 2, 3}, {0.5, 1.5, 2.5, 3.5}, {1.5, 2.5, 3.5, 4.5});
    QVERIFY(p.hasBand(QStringLiteral("mean")));
    QCOMPARE(p.plot()->graphCount(), graphsBefore + 2);
    int filled = 0;
    for (int i = 0; i < p.plot()->graphCount(); ++i)
      if (p.plot()->graph(i)->channelFillGraph()) ++filled;
    QCOMPARE(filled, 1);
    p.removeBand(QStringLiteral("mean"));
    QCOMPARE(p.plot()->graphCount(), graphsBefore);

    QVERIFY(!p.hasMarker());
    p.setMarker(2.5);
    QVERIFY(p.hasMarker());
    QCOMPARE(p.markerX(), 2.5);
    p.clearMarker();
    QVERIFY(!p.hasMarker());

    p.setLegendVisible(false);
    QVERIFY(!p.plot()->legend->visible());
    p.setLegendVisible(true);
    QVERIFY(p.plot()->legend->visible());
    QCOMPARE(p.plot()->legend->itemCount(), 1);  // one entry per series

    // Smoothing slider drives the factor.
    auto* slider = p.findChild<QSlider*>(QStringLiteral("smoothingSlider"));
    QVERIFY(slider);
    QSignalSpy spy(&p, &CurvePlot::smoothingChanged);
    slider->setValue(60);
    QCOMPARE(p.smoothing(), 0.6);
    QCOMPARE(spy.count(), 1);
  }

  // X extent: the auto-fit covers it besides the data (one point at 100 and an extent of
  // -6..151: the axis spans -6..151, not the lone point's own range); resetView keeps it, a wider data range
  // still wins, clear() drops it, an empty plot shows it.
  // The fitted x range: [lo, hi] widened by at most 2% of its width on each side (CurvePlot::padXRange).
  static bool padded(const QCPRange& r, double lo, double hi) {
    const double w = 0.02 * (hi - lo);
    const bool ok = r.lower <= lo && r.lower >= lo - w && r.upper > hi && r.upper <= hi + w;
    if (!ok) qWarning("x range [%g, %g] is not [%g, %g] padded", r.lower, r.upper, lo, hi);
    return ok;
  }

  void curvePlotXExtent() {
    csw::CurvePlot p;
    p.resize(500, 300);
    p.appendPoint(QStringLiteral("valid"), 100, 3.1);
    p.replotIfDirty();
    // a lone point's own range: around it, never below 0 (no negative steps)
    QVERIFY(p.plot()->xAxis->range().contains(100) && p.plot()->xAxis->range().lower >= 0);
    QVERIFY(p.plot()->xAxis->range().lower > -6 || p.plot()->xAxis->range().upper < 151);
    p.setXExtent(-6, 151);
    p.replotIfDirty();
    QVERIFY(padded(p.plot()->xAxis->range(), -6, 151));
    p.plot()->xAxis->setRange(90, 110);  // the user zooms
    p.resetView();
    QVERIFY(padded(p.plot()->xAxis->range(), -6, 151));
    p.appendPoint(QStringLiteral("valid"), 400, 2.9);
    p.replotIfDirty();
    QVERIFY(padded(p.plot()->xAxis->range(), -6, 400));
    p.clear();
    QVERIFY(!p.hasXExtent());
    // An empty plot without an extent: its own 0..1 view; with one: the extent.
    p.resetView();
    QCOMPARE(p.plot()->xAxis->range().upper, 1.0);
    p.setXExtent(10, 20);
    p.resetView();
    QCOMPARE(p.plot()->xAxis->range().lower, 10.0);
    QCOMPARE(p.plot()->xAxis->range().upper, 20.0);
  }

  void curvePlotHoverAndViewReset() {
    CurvePlot p;
    p.setAttribute(Qt::WA_DontShowOnScreen);
    p.resize(640, 480);
    p.show();
    p.setSeries(QStringLiteral("val"), {0, 10, 20, 30}, {1.0, 0.5, 0.25, 0.125});
    p.addSeries(QStringLiteral("val"), QStringLiteral("validation"));
    p.replotIfDirty();
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(p.autoFit());
    const QPointF px(p.plot()->xAxis->coordToPixel(20), p.plot()->yAxis->coordToPixel(0.25));
    QString id;
    double x = 0, y = 0;
    QVERIFY(p.nearestPoint(px + QPointF(3, -2), 20, &id, &x, &y));
    QCOMPARE(id, QStringLiteral("val"));
    QCOMPARE(x, 20.0);
    QCOMPARE(y, 0.25);
    const QString tip = p.tooltipTextAt(px);
    QVERIFY2(tip.contains(QLatin1String("validation")) && tip.contains(QLatin1String("x = 20")) &&
                 tip.contains(QLatin1String("y = 0.25")),
             qPrintable(tip));
    // Zooming by the user stops auto-fit; reset view restores it and fits the data.
    p.plot()->xAxis->setRange(100, 200);
    QVERIFY(!p.autoFit());
    p.resetView();
    QVERIFY(p.autoFit());
    QVERIFY(p.plot()->xAxis->range().contains(0) && p.plot()->xAxis->range().contains(30));
  }

  // An empty plot draws no legend box (QCustomPlot draws the frame of a legend without
  // entries); the box comes with the first point, and the toggle still hides it.
  void curvePlotEmptyPlotHasNoLegendBox() {
    CurvePlot p;
    p.setAttribute(Qt::WA_DontShowOnScreen);
    p.resize(640, 480);
    p.show();
    p.addSeries(QStringLiteral("train"), QStringLiteral("train loss"), Qt::blue);
    p.addSeries(QStringLiteral("val"), QStringLiteral("validation"), Qt::red);
    p.replotIfDirty();
    // Dark pixels near the axis rect's top-right corner, where the legend sits (the grid
    // is light grey, the right and top axes are hidden).
    auto darkInLegendCorner = [&p] {
      p.plot()->replot(QCustomPlot::rpImmediateRefresh);
      const QImage img = p.plot()->grab().toImage();
      const QRect ar = p.plot()->axisRect()->rect();
      const QRect corner(ar.right() - 60, ar.top(), 60, 40);
      int dark = 0;
      for (int y = corner.top(); y <= corner.bottom(); ++y)
        for (int x = corner.left(); x <= corner.right(); ++x) {
          const QColor c = img.pixelColor(x, y);
          if (c.red() < 110 && c.green() < 110 && c.blue() < 110) ++dark;
        }
      return dark;
    };
    QCOMPARE(darkInLegendCorner(), 0);
    QVERIFY(!p.plot()->legend->visible());
    QVERIFY(p.legendVisible());                                                    // what the user asked for is kept
    p.appendPoints(QStringLiteral("val"), {0, 10}, {std::nan(""), std::nan("")});  // nothing finite yet
    p.replotIfDirty();
    QCOMPARE(darkInLegendCorner(), 0);
    p.appendPoints(QStringLiteral("train"), {0, 10, 20}, {3.0, 2.0, 1.5});
    p.replotIfDirty();
    QVERIFY(darkInLegendCorner() > 20);  // the box and "train loss"
    QVERIFY(p.plot()->legend->visible());
    p.setLegendVisible(false);
    QCOMPARE(darkInLegendCorner(), 0);
    p.setLegendVisible(true);
    QVERIFY(darkInLegendCorner() > 20);
    p.removeSeries(QStringLiteral("train"));
    p.replotIfDirty();
    QCOMPARE(darkInLegendCorner(), 0);  // back to no point: no box
  }

  // A plot of one point (one step, or one x for all its series) shows no negative steps:
  // the drawn x ticks stay >= 0 and the point is inside the view.
  void curvePlotOnePointHasNoNegativeSteps() {
    CurvePlot p;
    p.setAttribute(Qt::WA_DontShowOnScreen);
    p.resize(640, 480);
    p.show();
    for (double x : {0.0, 1.0, 3.0, 250.0}) {
      p.setSeries(QStringLiteral("val"), {x}, {2.5});
      p.replotIfDirty();
      p.plot()->replot(QCustomPlot::rpImmediateRefresh);
      const QCPRange r = p.plot()->xAxis->range();
      QVERIFY2(r.lower >= 0 && r.contains(x) && r.size() > 0,
               qPrintable(QStringLiteral("x %1: range [%2, %3]").arg(x).arg(r.lower).arg(r.upper)));
      QVERIFY(r.lower < x || x == 0);  // not at the edge, except step 0 at the axis origin
      for (double t : p.plot()->xAxis->tickVector())
        QVERIFY2(t >= 0, qPrintable(QStringLiteral("x %1: tick %2").arg(x).arg(t)));
      const double px = p.plot()->xAxis->coordToPixel(x);
      QVERIFY(px >= p.plot()->axisRect()->left() && px <= p.plot()->axisRect()->right());
    }
    // Several series at one step: the same.
    p.setSeries(QStringLiteral("train"), {2.0}, {3.0});
    p.setSeries(QStringLiteral("val"), {2.0}, {2.0});
    p.replotIfDirty();
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(p.plot()->xAxis->range().lower >= 0);
    // A negative x stays visible (no clamping at 0 then).
    p.setSeries(QStringLiteral("train"), {-4.0}, {3.0});
    p.setSeries(QStringLiteral("val"), {-4.0}, {2.0});
    p.replotIfDirty();
    QVERIFY(p.plot()->xAxis->range().contains(-4.0) && p.plot()->xAxis->range().size() > 0);
    // Two x values: the data's own range, as before.
    p.setSeries(QStringLiteral("val"), {5.0, 15.0}, {1.0, 2.0});
    p.removeSeries(QStringLiteral("train"));
    p.replotIfDirty();
    QVERIFY(padded(p.plot()->xAxis->range(), 5, 15));
  }

  // The newest point at the right end of the view is drawn whole (its marker was cut in half by the axis rect's
  // edge): the fitted range leaves room of kXPadFraction, a few pixels, at the right; at the left too, but never
  // so that data from step 0 shows negative steps.
  void newestPointIsNotClippedAtTheRightEdge() {
    CurvePlot p;
    p.setAttribute(Qt::WA_DontShowOnScreen);
    p.resize(640, 480);
    p.show();
    p.setSeries(QStringLiteral("valid"), {0, 100, 200, 300}, {3.0, 2.5, 2.2, 2.0});
    p.replotIfDirty();
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QCPRange r = p.plot()->xAxis->range();
    QCOMPARE(r.lower, 0.0);
    QVERIFY2(r.upper > 300, qPrintable(QString::number(r.upper)));
    const double room = p.plot()->axisRect()->right() - p.plot()->xAxis->coordToPixel(300);
    QVERIFY2(room >= 4, qPrintable(QStringLiteral("%1 px right of the newest point").arg(room)));
    for (double t : p.plot()->xAxis->tickVector()) QVERIFY(t >= 0);
  }

  // The legend goes to the corner where it hides the fewest points: top right for a falling loss curve (as
  // before), elsewhere for a rising accuracy or throughput curve, whose newest points are at the top right.
  void legendAvoidsTheCurves() {
    CurvePlot p;
    p.setAttribute(Qt::WA_DontShowOnScreen);
    p.resize(640, 480);
    p.show();
    QVector<double> x, down, up;
    for (int i = 0; i <= 60; ++i) {
      x << i;
      down << 3.0 - 2.0 * i / 60.0;
      up << 1.0 + 2.0 * i / 60.0;
    }
    p.setSeries(QStringLiteral("loss"), x, down);
    p.replotIfDirty();
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(p.legendCorner(), Qt::AlignTop | Qt::AlignRight);
    p.setSeries(QStringLiteral("loss"), x, up);
    p.replotIfDirty();
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(p.legendCorner() != (Qt::AlignTop | Qt::AlignRight));
    // and no point of the curve lies under the legend where it now is
    const QRect legend = p.plot()->legend->outerRect();
    for (int i = 0; i <= 60; ++i) {
      const QPoint px(int(p.plot()->xAxis->coordToPixel(x[i])), int(p.plot()->yAxis->coordToPixel(up[i])));
      QVERIFY2(!legend.contains(px), qPrintable(QStringLiteral("point %1 under the legend").arg(i)));
    }
  }

  void curvePlotExport() {
    CurvePlot p;
    p.resize(500, 350);
    p.setTitle(QStringLiteral("Training loss"));
    p.setXLabel(QStringLiteral("step"));
    p.setYLabel(QStringLiteral("bits per char"));
    QVector<double> xs, a, b;
    for (int i = 0; i < 200; ++i) {
      xs << i;
      a << 2.0 * std::exp(-i / 50.0) + 1.0;
      b << 2.2 * std::exp(-i / 60.0) + 1.1;
    }
    p.appendPoints(QStringLiteral("run1"), xs, a);
    p.appendPoints(QStringLiteral("run2"), xs.mid(0, 150), b.mid(0, 150));
    p.setSmoothing(0.5);
    p.setMarker(100);
    p.replotIfDirty();
    const QFont before = p.plot()->xAxis->labelFont();
    exportAll(&p, QStringLiteral("curve"),
              {QStringLiteral("Training loss"), QStringLiteral("step"), QStringLiteral("bits per char"),
               QStringLiteral("run1")});
    if (QTest::currentTestFailed()) return;
    QCOMPARE(p.plot()->xAxis->labelFont(), before);  // export font restored
    const QStringList lines = csvLines(cstest::temp_dir() + "/curve.csv");
    QCOMPARE(lines.first(), QStringLiteral("series,x,y"));
    QCOMPARE(lines.size(), 1 + 200 + 150);
    QCOMPARE(lines[1], QStringLiteral("run1,0,3"));
    // Title override for one export only.
    ExportOptions o;
    o.size = QSize(300, 200);
    o.title = QStringLiteral("Override title");
    QVERIFY(exportFigure(&p, cstest::temp_dir() + "/curve2.svg", o));
    checkSvg(cstest::temp_dir() + "/curve2.svg", {QStringLiteral("Override title")});
    QCOMPARE(p.title(), QStringLiteral("Training loss"));
  }

  void heatmap() {
    HeatmapView h;
    h.resize(500, 300);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    h.setMatrix({{0.1, 0.2, 0.3, 0.4}, {0.5, nan, 0.7, 0.8}, {0.9, 1.0, 1.1, 1.2}});
    QCOMPARE(h.rows(), 3);
    QCOMPARE(h.columns(), 4);
    h.setRowLabels({QStringLiteral("h0"), QStringLiteral("h1"), QStringLiteral("h2")});
    h.setColumnLabels({QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("_"), QStringLiteral("c")});
    h.setTitle(QStringLiteral("Hidden activations"));
    h.setXLabel(QStringLiteral("input character"));
    h.setYLabel(QStringLiteral("unit"));
    QVERIFY(h.autoDataRange());
    QCOMPARE(h.dataLower(), 0.1);
    QCOMPARE(h.dataUpper(), 1.2);
    h.setDataRange(-1, 2);  // shared scale
    QVERIFY(!h.autoDataRange());
    QCOMPARE(h.dataLower(), -1.0);
    QCOMPARE(h.dataUpper(), 2.0);
    h.setGradientPreset(QCPColorGradient::gpThermal);
    h.setGreyscale(true);
    h.setShowValues(true);
    QCOMPARE(h.valueTextCount(), 11);  // 12 cells, one NaN
    h.setMaxValueCells(10);
    QCOMPARE(h.valueTextCount(), 0);  // too many cells for text
    h.setMaxValueCells(625);
    QVERIFY(std::isnan(h.value(1, 1)));

    h.setAttribute(Qt::WA_DontShowOnScreen);
    h.show();
    h.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QPointF px(h.plot()->xAxis->coordToPixel(2), h.plot()->yAxis->coordToPixel(1));
    int r = -1, c = -1;
    QVERIFY(h.cellAt(px, &r, &c));
    QCOMPARE(r, 1);
    QCOMPARE(c, 2);
    const QString tip = h.tooltipTextAt(px);
    QVERIFY2(
        tip.contains(QLatin1String("h1")) && tip.contains(QLatin1String("'_'")) && tip.contains(QLatin1String("0.7")),
        qPrintable(tip));

    exportAll(&h, QStringLiteral("heatmap"),
              {QStringLiteral("Hidden activations"), QStringLiteral("input character"), QStringLiteral("h2")});
    if (QTest::currentTestFailed()) return;
    const QStringList lines = csvLines(cstest::temp_dir() + "/heatmap.csv");
    QCOMPARE(lines.size(), 4);
    QCOMPARE(lines[0], QStringLiteral("row,a,b,_,c"));
    QCOMPARE(lines[1], QStringLiteral("h0,0.1,0.2,0.3,0.4"));
    QCOMPARE(lines[2], QStringLiteral("h1,0.5,,0.7,0.8"));
  }

  // A long text thinned to every n-th label: the key columns (a cloze answer's occurrences,
  // the candidates) keep theirs, and regular labels closer than a step make way; two keys
  // closer than a step would overlap, so the one of higher rank (`first`: the answer) keeps
  // its label, else the later one.
  void heatmapKeyColumnsKeepTheirLabels() {
    HeatmapView h;
    const int cols = 400;
    QVector<double> v(2 * cols, 0.5);
    h.setMatrix(2, cols, v);
    QStringList labels;
    for (int c = 0; c < cols; ++c) labels << QStringLiteral("word%1").arg(c);
    h.setColumnLabels(labels);
    h.setTickLabelThinning(true);
    h.updateTickThinning(500, 220);
    const int step = h.columnLabelStep();
    QVERIFY2(step > 3, qPrintable(QString::number(step)));
    const QVector<int> keys = {5, 201, 202, 398};
    QVERIFY(!h.labelledColumns().contains(201) || !h.labelledColumns().contains(202));  // thinned as usual
    auto spaced = [&](const QVector<int>& shown) {
      for (int i = 1; i < shown.size(); ++i)
        if (shown[i] - shown[i - 1] < step) return false;
      return true;
    };
    h.setKeyColumns(keys);
    QVector<int> shown = h.labelledColumns();
    for (int k : {5, 202, 398}) QVERIFY2(shown.contains(k), qPrintable(QString::number(k)));
    QVERIFY(!shown.contains(201));  // next to 202: it would overlap
    QVERIFY(spaced(shown));
    for (int c : shown) {
      if (keys.contains(c)) continue;
      QVERIFY2((cols - 1 - c) % step == 0, qPrintable(QString::number(c)));  // the regular grid
      for (int k : keys) QVERIFY2(std::abs(c - k) >= step, qPrintable(QString("%1 near key %2").arg(c).arg(k)));
    }
    QVERIFY(shown.size() > keys.size());  // regular labels remain elsewhere
    h.setKeyColumns(keys, {201});         // 201 first (the answer): 202 makes way
    shown = h.labelledColumns();
    QVERIFY(shown.contains(201) && !shown.contains(202) && shown.contains(5) && shown.contains(398));
    QVERIFY(spaced(shown));
    h.setKeyColumns({});
    QVERIFY(!h.labelledColumns().contains(5) || (cols - 1 - 5) % step == 0);
  }

  // A panel title wider than its plot (a long run label) is drawn on several lines that each
  // fit, never cut at both ends; the title itself is unchanged, and a wide plot draws it on one.
  void longPanelTitleWraps() {
    HeatmapView h;
    h.setMatrix(2, 3, QVector<double>(6, 0.5));
    const QString title = "a-run-label-that-is-much-longer-than-the-panel and then some more words";
    h.setTitle(title);
    h.resize(300, 260);
    h.show();
    QVERIFY(QTest::qWaitForWindowExposed(&h));
    h.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(h.title(), title);
    const QStringList lines = h.drawnTitle().split('\n');
    QVERIFY2(lines.size() >= 2, qPrintable(h.drawnTitle()));
    QCOMPARE(QString(lines.join("")).remove(' '), QString(title).remove(' '));
    QFont f = h.font();
    f.setPointSize(f.pointSize() + 2);
    f.setBold(true);
    for (const QString& l : lines) QVERIFY2(QFontMetrics(f).horizontalAdvance(l) <= h.plot()->width(), qPrintable(l));
    h.resize(1400, 260);
    QApplication::processEvents();
    h.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(h.drawnTitle(), title);
  }

  // Two views linked (the two runs' panels of one figure): both use the larger step, so
  // they label the same columns though one is narrower.
  void heatmapLinkedThinning() {
    HeatmapView a, b;
    const int cols = 160;
    QStringList labels;
    for (int c = 0; c < cols; ++c) labels << QString(QChar('a' + c % 26));
    for (HeatmapView* h : {&a, &b}) {
      h->setMatrix(4, cols, QVector<double>(4 * cols, 0.25));
      h->setColumnLabels(labels);
      h->setTickLabelThinning(true);
    }
    a.updateTickThinning(900, 300);
    b.updateTickThinning(450, 300);
    QVERIFY2(a.columnLabelStep() < b.columnLabelStep(),
             qPrintable(QString("%1 %2").arg(a.columnLabelStep()).arg(b.columnLabelStep())));
    HeatmapView::linkTickThinning({&a, &b});
    QCOMPARE(a.columnLabelStep(), b.columnLabelStep());
    QCOMPARE(a.labelledColumns(), b.labelledColumns());
    // Wider again: the narrow one still decides.
    a.updateTickThinning(1800, 300);
    QCOMPARE(a.labelledColumns(), b.labelledColumns());
    b.updateTickThinning(1800, 300);  // both wide: a smaller step for both
    QCOMPARE(a.columnLabelStep(), b.columnLabelStep());
    QVERIFY(a.labelledColumns().size() > 0);
  }

  void attentionBoundaries() {
    QCOMPARE(AttentionGrid::blockBoundaries({1, 2, 3, 1, 2, 1, 1, 2}), (QVector<int>{3, 5, 6}));
    QCOMPARE(AttentionGrid::blockBoundaries({1, 2, 3, 4}), QVector<int>());
    QCOMPARE(AttentionGrid::blockBoundaries({}), QVector<int>());
    QCOMPARE(AttentionGrid::blockBoundaries({1, 1, 1}), (QVector<int>{1, 2}));
    AttentionGrid g;
    g.setTokens({QStringLiteral("t"), QStringLiteral("h"), QStringLiteral("e"), QStringLiteral("_")});
    g.setWeights({{0.1, 0.9, 0.5, 1.0}, {0.0, 0.25, 0.75, 0.3}});
    g.setInDegrees({{1, 2, 1, 2}, {1, 2, 3, 1}});
    QCOMPARE(g.channelBoundaries(0), (QVector<int>{2}));
    QCOMPARE(g.channelBoundaries(1), (QVector<int>{3}));
    QCOMPARE(g.channelBoundaries(5), QVector<int>());
    QCOMPARE(g.tokenCount(), 4);
    QCOMPARE(g.inDegree(1, 2), 3);
  }

  void attentionGridRenderAndExport() {
    AttentionGrid g;
    g.resize(480, 200);
    g.setTitle(QStringLiteral("Channel attention"));
    g.setTokens(
        {QStringLiteral("t"), QStringLiteral("h"), QStringLiteral("e"), QStringLiteral("_"), QStringLiteral("c")});
    g.setChannelLabels({QStringLiteral("k=1"), QStringLiteral("k=2"), QStringLiteral("k=3")});
    g.setWeights({{0.1, 0.9, 0.5, 1.0, 0.2}, {0.0, 0.25, 0.75, 0.3, 0.6}, {1, 1, 1, 1, 1}});
    g.setInDegrees({{1, 2, 1, 2, 3}, {1, 2, 3, 1, 2}, {1, 1, 1, 1, 1}});
    // Pixels: a weight-1 cell is the dark base colour, a weight-0 cell white,
    // and a boundary segment is red.
    QImage img(480, 200, QImage::Format_ARGB32);
    img.fill(Qt::gray);
    {
      QPainter p(&img);
      g.renderFigure(&p, img.rect());
    }
    g.setAttribute(Qt::WA_DontShowOnScreen);
    g.show();
    int ch = -1, tok = -1;
    // Find the centre of cell (channel 1, token 0) by scanning with cellAt.
    QPoint c10, c03;
    for (int y = 0; y < 200; ++y)
      for (int x = 0; x < 480; ++x) {
        if (g.cellAt(QPoint(x, y), &ch, &tok)) {
          if (ch == 1 && tok == 0 && c10.isNull()) c10 = QPoint(x + 8, y + 8);
          if (ch == 0 && tok == 3 && c03.isNull()) c03 = QPoint(x + 8, y + 8);
        }
      }
    QVERIFY(!c10.isNull() && !c03.isNull());
    QCOMPARE(QColor(img.pixel(c10)), QColor(Qt::white));  // weight 0
    QVERIFY(qGray(img.pixel(c03)) < 100);                 // weight 1: dark
    QVERIFY(g.tooltipTextAt(c03).contains(QLatin1String("weight = 1")));
    QVERIFY(g.tooltipTextAt(c03).contains(QLatin1String("in-degree m = 2")));

    exportAll(&g, QStringLiteral("attention"), {QStringLiteral("Channel attention"), QStringLiteral("k=2")});
    if (QTest::currentTestFailed()) return;
    const QStringList lines = csvLines(cstest::temp_dir() + "/attention.csv");
    QCOMPARE(lines.first(), QStringLiteral("token_index,token,channel,weight,in_degree"));
    QCOMPARE(lines.size(), 1 + 3 * 5);
    QCOMPARE(lines[2], QStringLiteral("1,h,k=1,0.9,2"));
  }

  void barChart() {
    BarChart b;
    b.resize(500, 350);
    b.setBuckets({QStringLiteral("1-10"), QStringLiteral("11-100"), QStringLiteral("101+")});
    b.setSeries(QStringLiteral("lstm"), QStringLiteral("LSTM"), {1.4, 1.6, 1.9});
    b.setSeries(QStringLiteral("mcrnn"), QStringLiteral("MC-RNN"), {1.3, 1.5, 1.7}, {0.05, 0.1, 0.2});
    b.setCounts({120, 45, 7});
    b.setTitle(QStringLiteral("BPC by length"));
    b.setXLabel(QStringLiteral("sequence length"));
    b.setYLabel(QStringLiteral("BPC"));
    QVERIFY(!b.hasErrorBars(QStringLiteral("lstm")));
    QVERIFY(b.hasErrorBars(QStringLiteral("mcrnn")));
    int bars = 0, errorBars = 0;
    for (int i = 0; i < b.plot()->plottableCount(); ++i) {
      if (qobject_cast<QCPBars*>(b.plot()->plottable(i))) ++bars;
      if (qobject_cast<QCPErrorBars*>(b.plot()->plottable(i))) ++errorBars;
    }
    QCOMPARE(bars, 2);
    QCOMPARE(errorBars, 1);
    // Counts as text: one label per bucket; y range leaves room above the error bars.
    QCOMPARE(b.plot()->itemCount(), 3);
    QVERIFY(b.plot()->yAxis->range().upper > 1.9);
    b.setCountsMode(BarChart::CountsMode::SecondAxis);
    QVERIFY(b.plot()->yAxis2->visible());
    QCOMPARE(b.plot()->itemCount(), 0);
    QCOMPARE(b.plot()->yAxis2->range().lower, 0.0);
    QVERIFY(b.plot()->yAxis2->range().upper >= 120);

    exportAll(&b, QStringLiteral("bars"),
              {QStringLiteral("BPC by length"), QStringLiteral("sequence length"), QStringLiteral("11-100")});
    if (QTest::currentTestFailed()) return;
    const QStringList lines = csvLines(cstest::temp_dir() + "/bars.csv");
    QCOMPARE(lines.first(), QStringLiteral("bucket,series,value,count,error"));
    QCOMPARE(lines.size(), 1 + 2 * 3);
    QCOMPARE(lines[1], QStringLiteral("1-10,lstm,1.4,120,"));
    QCOMPARE(lines[6], QStringLiteral("101+,mcrnn,1.7,7,0.2"));
  }

  // A histogram's many bins (a gate histogram: 40 of them) at 400 px: the labels thinned so that the ones
  // shown do not run together (they all used to be drawn, one over the other); at 2400 px every label shows.
  void barChartThinsLabelsThatWouldRunTogether() {
    BarChart b;
    b.setAttribute(Qt::WA_DontShowOnScreen);
    QStringList bins;
    QVector<double> counts;
    for (int i = 0; i < 40; ++i) {
      bins << QString::number(0.0125 + 0.025 * i, 'g', 3);
      counts << double(i % 7);
    }
    b.setBuckets(bins);
    b.setSeries(QStringLiteral("z"), QStringLiteral("update gate z"), counts);
    for (const int width : {400, 2400}) {
      b.resize(width, 300);
      b.show();
      b.plot()->replot(QCustomPlot::rpImmediateRefresh);
      b.plot()->replot(QCustomPlot::rpImmediateRefresh);
      auto* t = dynamic_cast<QCPAxisTickerText*>(b.plot()->xAxis->ticker().data());
      QVERIFY(t);
      const QMap<double, QString> shown = t->ticks();
      const QFontMetricsF fm(b.plot()->xAxis->tickLabelFont());
      double widest = 0;
      for (const QString& l : shown) widest = std::max(widest, fm.horizontalAdvance(l));
      // neighbouring labels' centres at least a label's width apart, in pixels
      QList<double> keys = shown.keys();
      for (int i = 1; i < keys.size(); ++i) {
        const double gap = b.plot()->xAxis->coordToPixel(keys[i]) - b.plot()->xAxis->coordToPixel(keys[i - 1]);
        QVERIFY2(gap >= widest,
                 qPrintable(QStringLiteral("%1 px: labels %2 px apart, %3 px wide").arg(width).arg(gap).arg(widest)));
      }
      if (width == 400) {
        QVERIFY2(b.labelStep() > 1, qPrintable(QString::number(b.labelStep())));
        QVERIFY(shown.size() >= 4);  // thinned, not emptied
        QCOMPARE(shown.first(), bins.first());
      } else {
        QCOMPARE(b.labelStep(), 1);
        QCOMPARE(shown.size(), 40);
      }
    }
  }

  void csvQuoting() {
    QCOMPARE(csvField(QStringLiteral("a,b")), QStringLiteral("\"a,b\""));
    QCOMPARE(csvField(QStringLiteral("say \"hi\"")), QStringLiteral("\"say \"\"hi\"\"\""));
    QCOMPARE(csvField(QStringLiteral("plain")), QStringLiteral("plain"));
    QCOMPARE(csvNumber(0.1), QStringLiteral("0.1"));
    QCOMPARE(csvNumber(std::nan("")), QString());
    QCOMPARE(csvNumber(1.0 / 3.0).toDouble(), 1.0 / 3.0);
  }

  void replotBenchmarkMillionPoints() {
    const double ms = CurvePlot::benchReplotMs(1000000);
    qInfo("CurvePlot::benchReplotMs(1000000) = %.2f ms", ms);
    QVERIFY(ms > 0.0);
    QVERIFY2(ms < 1000.0, qPrintable(QString::number(ms)));
  }
};

CS_TEST(TestWidgetsPlots, "widgets_plots")
}  // namespace widgets_plots_test
#include "test_widgets_plots.moc"
