// Plots that never mislead, offscreen: a lone point is drawn (markers)
// and has a legend entry only once it exists, log-y tick labels are distinct and
// true, smoothing touches dense training series only and an exported figure says
// so in its caption, nothing is clipped at 1024x700 (compact plot toolbars, the
// training plots scroll), the Analyses figures honour File > Export options with
// an honest PNG dpi, the export dialog's default path carries the run, and the
// status line and the progress bar show the same step, the loss in the plot's unit.
#include <QApplication>
#include <QFile>
#include <QImage>
#include <QMenu>
#include <QProgressBar>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolButton>
#include <QtTest/QtTest>

#include <cmath>
#include <memory>

#include "configure_panel.h"
#include "curve_plot.h"
#include "figure_export.h"
#include "figures.h"
#include "harness.h"
#include "main_window.h"
#include "qcp.h"
#include "training_controller.h"
#include "training_panel.h"
#include "training_status.h"

namespace {

// Pixels of plot within radius r of (x, y) whose colour is close to c.
int pixelsNear(const QImage& img, QPointF at, int r, const QColor& c) {
  int n = 0;
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx) {
      const int x = qRound(at.x()) + dx, y = qRound(at.y()) + dy;
      if (x < 0 || y < 0 || x >= img.width() || y >= img.height()) continue;
      const QColor p = img.pixelColor(x, y);
      if (std::abs(p.red() - c.red()) + std::abs(p.green() - c.green()) + std::abs(p.blue() - c.blue()) < 60) ++n;
    }
  return n;
}

// Every control of a plot toolbar is either shown whole inside the view or
// reachable from the compact "View" menu; returns what is wrong (empty = fine).
QString toolbarProblem(csw::CurvePlot* p) {
  QWidget* tb = p->toolbar();
  const int right = p->width();
  QStringList reachable;
  QString problems;
  for (QWidget* w : tb->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly)) {
    if (!w->isVisible()) continue;
    const QPoint topRight = w->mapTo(p, QPoint(w->width(), 0));
    if (topRight.x() > right + 1)
      problems += QStringLiteral("%1 clipped (right edge %2 > %3); ")
                      .arg(w->metaObject()->className())
                      .arg(topRight.x())
                      .arg(right);
    if (auto* cb = qobject_cast<QAbstractButton*>(w)) reachable << cb->text();
    if (qobject_cast<QSlider*>(w)) reachable << QStringLiteral("Smoothing");
  }
  if (p->viewMenuButton()->isVisible() && p->viewMenuButton()->menu())
    for (QAction* a : p->viewMenuButton()->menu()->actions()) reachable << a->text();
  for (const char* need : {"Smoothing", "log x", "log y", "legend", "Reset view"})
    if (!reachable.contains(QLatin1String(need)))
      problems += QStringLiteral("'%1' not reachable; ").arg(QLatin1String(need));
  return problems;
}

gui::MetricPoint bpcTrainPoint(qint64 step, double bpc) {
  gui::MetricPoint p;
  p.step = step;
  p.values = {{QStringLiteral("bpc"), bpc}, {QStringLiteral("loss"), bpc * std::log(2.0)}};
  return p;
}

gui::MetricPoint bpcEvalPoint(qint64 step, double bpc, const QString& split) {
  gui::MetricPoint p = bpcTrainPoint(step, bpc);
  p.eval = true;
  p.split = split;
  return p;
}

}  // namespace

class GuiTrustPlotsTest : public QObject {
  Q_OBJECT
  QString m_root;

 private Q_SLOTS:
  void initTestCase() {
    m_root = cstest::temp_dir() + "/trust-plots";
    QDir().mkpath(m_root);
    QCoreApplication::setOrganizationName("CellscopeTests");
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_root + "/qsettings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_root + "/qsettings");
  }

  void sparseSeriesAreDrawnAndOnlyThenInTheLegend() {
    csw::CurvePlot p;
    p.resize(700, 450);
    p.show();
    QVERIFY(QTest::qWaitForWindowExposed(&p));
    p.addSeries("valid", "valid bpc");
    p.replotIfDirty();
    QVERIFY2(!p.seriesInLegend("valid"), "a series without a point has no legend entry");
    QCOMPARE(p.plot()->legend->itemCount(), 0);
    p.appendPoint("valid", 100, 3.0);
    // A dense training series too, so the axes are not fitted to the lone point.
    QVector<double> xs, ys;
    for (int i = 0; i < 200; ++i) {
      xs << i;
      ys << 4.0 - i * 0.005;
    }
    p.setSeries("train", xs, ys);
    p.replotIfDirty();
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(p.seriesInLegend("valid"));
    QVERIFY(p.seriesHasMarkers("valid"));
    QVERIFY2(!p.seriesHasMarkers("train"), "a dense series is a plain line");
    // The lone point is visible: its colour around its pixel.
    const QImage img = p.plot()->toPixmap(p.plot()->width(), p.plot()->height(), 1.0).toImage();
    const QPointF at(p.plot()->xAxis->coordToPixel(100), p.plot()->yAxis->coordToPixel(3.0));
    QVERIFY2(pixelsNear(img, at, 4, p.seriesColor("valid")) >= 6,
             qPrintable(QString("the single valid point at (%1, %2) is not drawn").arg(at.x()).arg(at.y())));
  }

  void logTickLabelsAreDistinctAndTrue() {
    csw::CurvePlot p;
    p.resize(700, 450);
    p.show();
    QVERIFY(QTest::qWaitForWindowExposed(&p));
    QVector<double> xs, ys;
    for (int i = 0; i < 300; ++i) {
      xs << i + 1;
      ys << 2.7 + 3.5 * std::exp(-i / 40.0);  // 6.2 down to 2.7: under one decade
    }
    p.setSeries("train", xs, ys);
    p.setYLog(true);
    p.replotIfDirty();
    p.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QVector<double> ticks = p.plot()->yAxis->tickVector();
    const QVector<QString> labels = p.plot()->yAxis->tickVectorLabels();
    const QCPRange r = p.plot()->yAxis->range();
    QStringList shown;
    for (int i = 0; i < ticks.size(); ++i) {
      if (ticks[i] < r.lower || ticks[i] > r.upper) continue;
      shown << labels[i];
      bool ok = false;
      const double v = QString(labels[i]).remove(QChar(0x00b7)).toDouble(&ok);
      QVERIFY2(ok && std::abs(v - ticks[i]) <= 1e-6 * std::abs(ticks[i]),
               qPrintable(QString("tick %1 labelled '%2'").arg(ticks[i]).arg(labels[i])));
    }
    QVERIFY2(shown.size() >= 3, qPrintable("too few labelled ticks on a log axis: " + shown.join(", ")));
    QCOMPARE(QSet<QString>(shown.begin(), shown.end()).size(), shown.size());
  }

  void smoothingSkipsEvaluationSeriesAndTheCaptionSaysSo() {
    gui::FigureExporter exporter(nullptr);
    gui::TrainingPanel panel(&exporter);
    panel.resize(1000, 700);
    panel.show();
    panel.beginRun();
    const QString runDir = m_root + "/20261123-000000-char_lm-gru";
    QDir().mkpath(runDir);
    panel.setRunInfo(runDir, "bpc", "chars", 1000);
    QVector<gui::MetricPoint> pts;
    for (int s = 1; s <= 200; ++s) pts << bpcTrainPoint(s, 4.0 - s * 0.005 + ((s % 7) - 3) * 0.05);
    pts << bpcEvalPoint(100, 3.6, "valid") << bpcEvalPoint(200, 3.2, "valid") << bpcEvalPoint(200, 3.25, "test");
    panel.append(pts, {});
    csw::CurvePlot* metric = panel.plot("metric");
    metric->setSmoothing(0.9);
    metric->replotIfDirty();
    QVERIFY(!metric->smoothedY("train").isEmpty());
    QVERIFY2(metric->smoothedY("valid").isEmpty(), "the valid series was smoothed");
    QVERIFY2(metric->smoothedY("test").isEmpty(), "the test series was smoothed");
    QVERIFY(metric->seriesHasMarkers("test"));  // a lone test point is drawn
    QVERIFY(metric->seriesInLegend("test"));
    // The exported figure states the smoothing, the run and the x axis.
    const QString svg = m_root + "/metric.svg";
    QString err;
    QVERIFY2(exporter.exportPlot(metric, svg, &err), qPrintable(err));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    for (const char* must :
         {"Smoothing", "0.90", "20261123-000000-char_lm-gru", "x axis: step", "Not smoothed", "valid bpc"})
      QVERIFY2(text.contains(QLatin1String(must)), must);
    // The caption is for the export only: the view is as before.
    QCOMPARE(metric->plot()->plotLayout()->rowCount(), 2);
  }

  void narrowPlotToolbarCollapses() {
    csw::CurvePlot p;
    p.resize(330, 260);
    p.show();
    QVERIFY(QTest::qWaitForWindowExposed(&p));
    QApplication::processEvents();
    const QString problem = toolbarProblem(&p);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    // The menu works: log y through it.
    QVERIFY(p.toolbarCompact());
    QAction* logY = nullptr;
    for (QAction* a : p.viewMenuButton()->menu()->actions())
      if (a->text() == QLatin1String("log y")) logY = a;
    QVERIFY(logY);
    logY->trigger();
    QVERIFY(p.yLog());
    // Wide again: the full row.
    p.resize(1000, 400);
    QApplication::processEvents();
    QVERIFY(!p.toolbarCompact());
    QVERIFY(toolbarProblem(&p).isEmpty());
  }

  void nothingClippedAt1024x700() {
    gui::WindowOptions o;
    o.workspace = m_root + "/ws-small";
    o.settingsFile = m_root + "/settings.ini";
    gui::MainWindow w(o);
    w.resize(1024, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resize(1024, 700);
    QApplication::processEvents();
    if (w.size() != QSize(1024, 700)) {
      // Say which part does not fit.
      QString why = QString("window %1x%2; minimum sizes:").arg(w.width()).arg(w.height());
      auto* tabs = w.findChild<QTabWidget*>();
      for (QWidget* c : {static_cast<QWidget*>(w.configurePanel()), static_cast<QWidget*>(w.statusBar())})
        why += QString(" %1 %2x%3")
                   .arg(c->metaObject()->className())
                   .arg(c->minimumSizeHint().width())
                   .arg(c->minimumSizeHint().height());
      for (int i = 0; tabs && i < tabs->count(); ++i)
        why += QString(" [%1] %2x%3")
                   .arg(tabs->tabText(i))
                   .arg(tabs->widget(i)->minimumSizeHint().width())
                   .arg(tabs->widget(i)->minimumSizeHint().height());
      QFAIL(qPrintable(why));
    }
    auto* scroll = w.trainingPanel()->findChild<QScrollArea*>("trainingPlotScroll");
    QVERIFY2(scroll, "the training plots are not in a scroll area");
    for (csw::CurvePlot* p : w.trainingPanel()->plots()) {
      if (p->isHidden()) continue;
      QVERIFY2(p->height() >= p->minimumHeight() && p->width() >= p->minimumWidth(), qPrintable(p->title()));
      const QString problem = toolbarProblem(p);
      QVERIFY2(problem.isEmpty(), qPrintable(p->title() + ": " + problem));
    }
  }

  void analysesFiguresHonourExportOptions() {
    gui::FigureExporter exporter(nullptr);
    csw::ExportOptions o;
    o.size = QSize(900, 600);
    o.scale = 2.0;
    o.fontPointSize = 12;
    exporter.setOptions(o);
    cs::TextTable t;
    t.title = "Prefix predictions";
    t.columns = {"prefix", "prediction"};
    t.rows = {{"the whal", "e"}, {"call m", "e"}};
    std::unique_ptr<csf::Figure> fig(csf::make_table_figure(t));
    const QString png = m_root + "/table.png";
    QString err;
    QVERIFY2(csf::export_figure(fig.get(), png, &err), qPrintable(err));  // as the Analyses tab calls it
    QImage img(png);
    QCOMPARE(img.size(), QSize(1800, 1200));
    // 96 dpi x scale: the PNG prints at the figure's size, the text at 12 pt.
    QVERIFY2(std::abs(img.dotsPerMeterX() * 0.0254 - 192.0) < 1.0,
             qPrintable(QString::number(img.dotsPerMeterX() * 0.0254)));
  }

  void zoneHeatmapVectorExportKeepsEveryLabel() {
    // Four zones over 60 characters: every row label fits the exported figure, so
    // the SVG (and the PDF, drawn by the same Figure::renderFigure) has all four.
    // (A guard: this offscreen path keeps them on main too; the PDF/SVG
    // with only "zone 1" and "zone 4" was not reproduced here.)
    cs::LabeledMatrix m;
    m.row_labels = {"zone 1", "zone 2", "zone 3", "zone 4"};
    for (int c = 0; c < 60; ++c) m.col_labels.push_back(std::string(1, char('a' + c % 26)));
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 60; ++c) m.values.push_back(std::sin(r + c * 0.1));
    m.caption = "zone definition";
    std::unique_ptr<csf::Figure> fig(csf::make_zone_relevance_figure({m}, {"capMZU"}));
    // Shown first in a low window (as in the Analyses tab), where the labels are thinned on screen.
    fig->resize(700, 260);
    fig->show();
    QVERIFY(QTest::qWaitForWindowExposed(fig.get()));
    fig->replotNow();
    QApplication::processEvents();
    const QString svg = m_root + "/zone.svg";
    QString err;
    QVERIFY2(csf::export_figure(fig.get(), svg, &err, csw::ExportOptions()), qPrintable(err));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    for (const char* z : {"zone 1", "zone 2", "zone 3", "zone 4"}) QVERIFY2(text.contains(QLatin1String(z)), z);
    // A small export (File > Export options at 600x190, a long caption): the rows are few, so the
    // export writes every one of them (thinning them left "zone 1" and "zone 4" only).
    for (const char* ext : {"svg", "pdf"}) {
      csw::ExportOptions small;
      small.size = QSize(600, 190);
      const QString out = m_root + "/zone-small." + ext;
      QVERIFY2(csf::export_figure(fig.get(), out, &err, small), qPrintable(err));
      if (QString(ext) == "svg") {
        QFile g(out);
        QVERIFY(g.open(QIODevice::ReadOnly));
        const QString t = QString::fromUtf8(g.readAll());
        for (const char* z : {"zone 1", "zone 2", "zone 3", "zone 4"}) QVERIFY2(t.contains(QLatin1String(z)), z);
      }
    }
  }

  void analysesFigureScrollsInsteadOfSqueezing() {
    cs::LabeledMatrix m;
    m.row_labels = {"a", "b", "c"};
    m.col_labels = {"x", "y", "z"};
    m.values = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
    QScrollArea area;  // as the Analyses tab holds its figure
    area.setWidgetResizable(true);
    area.setWidget(csf::make_relevance_figure({m, m}, {"run A", "run B"}));
    area.resize(520, 380);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QApplication::processEvents();
    auto* fig = qobject_cast<csf::Figure*>(area.widget());
    QVERIFY(fig);
    for (int i = 0; i < fig->panelCount(); ++i)
      QVERIFY2(
          fig->panel(i)->width() >= 280 && fig->panel(i)->height() >= 200,  // side-by-side panels' minimum
          qPrintable(
              QString("panel %1 squeezed to %2x%3").arg(i).arg(fig->panel(i)->width()).arg(fig->panel(i)->height())));
    QVERIFY(area.horizontalScrollBar()->maximum() > 0);  // it scrolls instead
  }

  void exportDefaultsToTheRunFolderAndName() {
    gui::FigureExporter exporter(nullptr);
    exporter.setWorkspace(m_root);
    gui::TrainingPanel panel(&exporter);
    const QString runDir = m_root + "/20261123-010203-char_lm-gru";
    QDir().mkpath(runDir);
    panel.beginRun();
    panel.setRunInfo(runDir, "bpc", "chars", 10);
    const QString path = exporter.defaultExportPath(panel.plot("metric"), "png");
    QCOMPARE(QFileInfo(path).absolutePath(), QFileInfo(runDir).absoluteFilePath());
    QCOMPARE(QFileInfo(path).fileName(), QString("20261123-010203-char_lm-gru-training_and_validation.png"));
  }

  void statusLineAndProgressBarAgree() {
    gui::TrainingController c;
    QStatusBar bar;
    gui::TrainingStatus status(&c, &bar);
    gui::TrainProgress pr;
    pr.step = 331;
    pr.total = 1000;
    pr.lastLoss = 1.93;
    pr.throughput = 17900;
    pr.unit = "chars";
    Q_EMIT c.progressChanged(pr);
    auto* pb = bar.findChild<QProgressBar*>();
    QVERIFY(pb);
    QCOMPARE(pb->value(), 331);
    QCOMPARE(pb->maximum(), 1000);
    QVERIFY2(status.text().startsWith("Step 331 / 1000"), qPrintable(status.text()));
    // No metric known: the loss says its unit.
    QVERIFY2(status.text().contains("loss 1.930 nats"), qPrintable(status.text()));
    // In the plot's unit: bits per character, perplexity.
    QCOMPARE(gui::lossInPlotUnit(1.93, "bpc"), QString("train bpc %1").arg(1.93 / std::log(2.0), 0, 'f', 3));
    QCOMPARE(gui::lossInPlotUnit(std::log(120.0), "ppl"), QString("train ppl 120.00"));
  }
};

CS_TEST(GuiTrustPlotsTest, "gui_trust_plots")
#include "test_gui_trust_plots.moc"
