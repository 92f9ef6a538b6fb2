// Wide figures in the window's Analyses tab and in their exports (issue #38, items 3, 4, 12):
// a title wider than the figure wraps instead of being cut at both ends (on screen at
// 1600x1000 and 1024x700, in the PNG and the SVG); the two runs' relevance panels label the
// same columns; metric by length with two runs shows every bucket and the caption without a
// scrollbar; a comparison's caption names its runs; the attention-over-attention view's word
// labels do not overlap. The window is driven as a user drives it (View > Analyses, the
// combos, the Compute button, window resizes) and what is drawn is checked (label geometry,
// the axes' drawn ticks, exported pixels and SVG text).
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QXmlStreamReader>

#include <algorithm>
#include <cmath>

#include "analysis_panel.h"
#include "bar_chart.h"
#include "corpus_fixture.h"
#include "figures.h"
#include "harness.h"
#include "heatmap_view.h"
#include "main_window.h"
#include "qcp.h"

namespace test_gui_figures_wide {

// Long directory names make a title far wider than the figure (the window titles a
// comparison "<kind> - <run A> at <step> vs <run B> at <step>").
const char* kRunA = "first-gru-run-of-the-wide-figures-test";
const char* kRunB = "second-gru-run-of-the-wide-figures-test";

bool isDark(QRgb c) { return qGray(c) < 128 && qAlpha(c) > 128; }

// Dark pixels in columns [x0, x1) of rows [y0, y1).
int darkIn(const QImage& img, int x0, int x1, int y0, int y1) {
  int n = 0;
  for (int y = std::max(0, y0); y < std::min(img.height(), y1); ++y)
    for (int x = std::max(0, x0); x < std::min(img.width(), x1); ++x) n += isDark(img.pixel(x, y)) ? 1 : 0;
  return n;
}

class TestGuiFiguresWide : public QObject {
  Q_OBJECT

  QString m_ws, m_runA, m_runB;

  static bool waitComputed(gui::AnalysisPanel& p, QSignalSpy& spy, int timeoutMs = 120000) {
    if (spy.isEmpty() && !spy.wait(timeoutMs)) return false;
    while (p.isBusy()) spy.wait(timeoutMs);
    return spy.last().value(0).toBool();
  }

  static void settle() {
    for (int i = 0; i < 4; ++i) {
      QApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
      QApplication::processEvents();
      QTest::qWait(20);
    }
  }

  // Resizes the window as a user would and lets the layouts and queued replots run.
  static void resizeTo(gui::MainWindow& w, const QSize& s) {
    w.resize(s);
    settle();
  }

  static QScrollArea* figureArea(gui::AnalysisPanel* p) {
    return p->findChild<QScrollArea*>(QStringLiteral("analysisFigureArea"));
  }

  // Opens the Analyses tab with View > Analyses (Ctrl+3), picks the runs and the kind in
  // the combos and clicks Compute.
  static bool computeIn(gui::MainWindow& w, const QString& kind, const QString& runA, const QString& runB,
                        const QString& text = QString(), int lastK = -1) {
    for (QAction* a : w.findChildren<QAction*>())
      if (a->shortcut() == QKeySequence(QStringLiteral("Ctrl+3"))) a->trigger();
    gui::AnalysisPanel* p = w.analysisPanel();
    if (w.currentPanel() != p) return false;
    if (!p->selectRun(runA) || !p->setKind(kind) || !p->selectSecondRun(runB)) return false;
    if (!text.isEmpty()) p->setText(text);
    if (lastK > 0) p->setLastK(lastK);
    QPushButton* compute = nullptr;
    for (QPushButton* b : p->findChildren<QPushButton*>())
      if (b->text().startsWith(QStringLiteral("Compute"))) compute = b;
    if (!compute) return false;
    QSignalSpy spy(p, &gui::AnalysisPanel::computed);
    QTest::mouseClick(compute, Qt::LeftButton);
    const bool ok = waitComputed(*p, spy);
    settle();
    return ok && p->figure();
  }

  // The figure's title on screen: inside the visible part of the figure area, and its text
  // laid out (wrapped) within the label, no pixel of it at the label's left or right edge.
  static QString titleOnScreenProblem(gui::AnalysisPanel* p) {
    QScrollArea* area = figureArea(p);
    csf::Figure* fig = p->figure();
    if (!area || !fig) return QStringLiteral("no figure area / figure");
    auto* title = fig->findChild<QLabel*>(QStringLiteral("figureTitle"));
    if (!title || !title->isVisible()) return QStringLiteral("no visible title");
    if (area->horizontalScrollBar()->maximum() > 0)
      return QStringLiteral("the figure scrolls sideways (%1 px wider than its area)")
          .arg(area->horizontalScrollBar()->maximum());
    const QRect inView(title->mapTo(area->viewport(), QPoint(0, 0)), title->size());
    if (inView.left() < 0 || inView.right() >= area->viewport()->width())
      return QStringLiteral("title at x %1..%2, viewport width %3")
          .arg(inView.left())
          .arg(inView.right())
          .arg(area->viewport()->width());
    const QFontMetrics fm(title->font());
    const QRect need = fm.boundingRect(title->contentsRect(), Qt::TextWordWrap | Qt::AlignCenter, title->text());
    if (need.width() > title->contentsRect().width() || need.height() > title->contentsRect().height())
      return QStringLiteral("title text needs %1x%2, label %3x%4")
          .arg(need.width())
          .arg(need.height())
          .arg(title->contentsRect().width())
          .arg(title->contentsRect().height());
    const QImage img = title->grab().toImage();
    if (darkIn(img, 0, img.width(), 0, img.height()) < 50) return QStringLiteral("no title drawn");
    if (darkIn(img, 0, 2, 0, img.height()) + darkIn(img, img.width() - 2, img.width(), 0, img.height()) > 0)
      return QStringLiteral("title text touches the label's edge (cut)");
    return QString();
  }

  // The exported PNG and SVG: the whole title (no dark pixel at the image's left or right
  // edge in the title's band, every word in the SVG's text).
  static QString titleExportProblem(gui::AnalysisPanel* p, const QString& stem) {
    const QString png = stem + ".png", svg = stem + ".svg", pdf = stem + ".pdf";
    QString err;
    if (!p->exportTo(png, &err) || !p->exportTo(svg, &err) || !p->exportTo(pdf, &err)) return err;
    const QImage img(png);
    if (img.isNull()) return QStringLiteral("unreadable PNG");
    const QSize natural = p->figure()->figureSize();
    // The title's band: from the top to the first row of the panels (its wrapped height).
    const int band = 4 + QFontMetrics(p->figure()->findChild<QLabel*>("figureTitle")->font()).height() * 3;
    const double sx = double(img.width()) / natural.width();
    const int y1 = int(band * sx);
    if (darkIn(img, 0, img.width(), 0, y1) < 100) return QStringLiteral("no title in the PNG");
    const int edge = std::max(2, int(3 * sx));
    const int atEdges = darkIn(img, 0, edge, 0, y1) + darkIn(img, img.width() - edge, img.width(), 0, y1);
    if (atEdges > 0) return QStringLiteral("PNG title cut at the edges (%1 dark pixels there)").arg(atEdges);
    const QString drawn = cstest::svgTextRun(svg);
    if (!drawn.contains(QString(p->figure()->title()).remove(QLatin1Char(' '))))
      return QStringLiteral("the SVG lacks the whole title: %1").arg(drawn.left(300));
    if (QFileInfo(pdf).size() < 1000) return QStringLiteral("PDF too small");
    return QString();
  }

  // The window on this file's workspace, with its own settings file (no remembered config).
  gui::WindowOptions windowOptions(const QString& settings) const {
    gui::WindowOptions o;
    o.workspace = m_ws;
    o.settingsFile = cstest::temp_dir() + "/" + settings + ".ini";
    o.restoreLastConfig = false;
    return o;
  }

 private Q_SLOTS:
  void initTestCase() {
    m_ws = cstest::temp_dir() + "/wide_ws";
    QDir().mkpath(m_ws);
    const QString text = cstest::write_text_fixture("figures_wide.txt", 8000);
    const QJsonObject cfg{{"task", QJsonObject{{"name", "char_lm"}}},
                          {"dataset", QJsonObject{{"path", text}, {"valid_fraction", 0.1}, {"test_fraction", 0.1}}},
                          {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                          {"training", QJsonObject{{"steps", 20},
                                                   {"batch", 4},
                                                   {"bptt", 16},
                                                   {"lr", 0.01},
                                                   {"eval_every", 10},
                                                   {"checkpoint_every", 10},
                                                   {"eval_batch", 4},
                                                   {"eval_test", false},
                                                   {"threads", 1},
                                                   {"log_every", 5}}}};
    const QString cfgPath = cstest::temp_dir() + "/wide_cfg.json";
    QFile f(cfgPath);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(cfg).toJson());
    f.close();
    m_runA = m_ws + "/" + kRunA;
    m_runB = m_ws + "/" + kRunB;
    QString out, err;
    QVERIFY2(cstest::run_cli({"train", cfgPath, "--run-dir", m_runA, "--quiet"}, &out, &err) == 0,
             qPrintable(out + err));
    QVERIFY2(cstest::run_cli({"train", cfgPath, "--run-dir", m_runB, "--set", "training.seed=2", "--quiet"}, &out,
                             &err) == 0,
             qPrintable(out + err));
    // The second run is labelled: a comparison's caption names it by its label.
    QVERIFY2(cstest::run_cli({"label", m_runB, "seed two"}, &out, &err) == 0, qPrintable(out + err));
  }

  // Items 3 and 4: the two runs' relevance, title wider than the figure, at both window sizes.
  void twoRunRelevanceWhole() {
    gui::MainWindow w(windowOptions("wide_settings"));
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // 160 characters: more than either panel can label one by one.
    QString text;
    while (text.size() < 160) text += QStringLiteral("call me ishmael, some years ago never mind how long. ");
    text.truncate(160);
    QVERIFY(computeIn(w, "relevance", m_runA, m_runB, text, 8));
    gui::AnalysisPanel* p = w.analysisPanel();
    QCOMPARE(p->figure()->panelCount(), 2);
    QVERIFY2(p->figure()->title().contains(kRunA) && p->figure()->title().contains(kRunB),
             qPrintable(p->figure()->title()));
    // The caption names the runs as their panels do (the label of the second).
    QVERIFY2(p->figure()->caption().contains("Runs compared (panels left to right)") &&
                 p->figure()->caption().contains("seed two"),
             qPrintable(p->figure()->caption()));
    auto* caption = p->figure()->findChild<QLabel*>(QStringLiteral("figureCaption"));
    QVERIFY(caption && caption->isVisible() && caption->text().contains("seed two"));

    for (const QSize s : {QSize(1600, 1000), QSize(1024, 700)}) {
      resizeTo(w, s);
      const QString where = QStringLiteral("%1x%2: ").arg(s.width()).arg(s.height());
      const QString problem = titleOnScreenProblem(p);
      QVERIFY2(problem.isEmpty(), qPrintable(where + problem));
      // One thinning decision for both panels: the same columns labelled, as drawn.
      auto* a = p->figure()->panelAs<csw::HeatmapView>(0);
      auto* b = p->figure()->panelAs<csw::HeatmapView>(1);
      a->plot()->replot(QCustomPlot::rpImmediateRefresh);
      b->plot()->replot(QCustomPlot::rpImmediateRefresh);
      settle();  // the queued replot of a panel whose step the other raised
      QVERIFY2(a->columnLabelStep() > 1, qPrintable(where + QString::number(a->columnLabelStep())));
      QCOMPARE(a->plot()->xAxis->tickVectorLabels(), b->plot()->xAxis->tickVectorLabels());
      QCOMPARE(a->plot()->xAxis->tickVector(), b->plot()->xAxis->tickVector());
      QCOMPARE(a->plot()->yAxis->tickVectorLabels(), b->plot()->yAxis->tickVectorLabels());
      // Drawn labels do not overlap: consecutive ticks at least the widest label apart.
      const QFontMetricsF fm(a->plot()->xAxis->tickLabelFont());
      double extent = 0;
      for (const QString& l : a->plot()->xAxis->tickVectorLabels()) extent = std::max(extent, fm.horizontalAdvance(l));
      const QVector<double> ticks = a->plot()->xAxis->tickVector();
      for (int i = 1; i < ticks.size(); ++i)
        QVERIFY2(a->plot()->xAxis->coordToPixel(ticks[i]) - a->plot()->xAxis->coordToPixel(ticks[i - 1]) >= extent,
                 qPrintable(where + QString::number(ticks[i])));
    }
    const QString dir = cstest::temp_dir() + "/wide_export";
    QDir().mkpath(dir);
    const QString problem = titleExportProblem(p, dir + "/relevance2");
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    // The export leaves the screen's labels as they were: still the same in both panels.
    QCOMPARE(p->figure()->panelAs<csw::HeatmapView>(0)->labelledColumns(),
             p->figure()->panelAs<csw::HeatmapView>(1)->labelledColumns());
  }

  // The single run's relevance at 1024x700: its title (the run's long name) wraps too.
  void singleRunTitleAt1024() {
    gui::MainWindow w(windowOptions("wide_settings1"));
    w.resize(1024, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(computeIn(w, "relevance", m_runA, QString(), QStringLiteral("the whale and the sea, the sea. "), 6));
    const QString problem = titleOnScreenProblem(w.analysisPanel());
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    QVERIFY2(!w.analysisPanel()->figure()->caption().contains("Runs compared"),
             qPrintable(w.analysisPanel()->figure()->caption()));
  }

  // Metric by length with two runs: every bucket and the caption on screen, no scrollbar.
  void twoRunLengthWithoutScrollbar() {
    gui::MainWindow w(windowOptions("wide_settings2"));
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(computeIn(w, "length", m_runA, m_runB));
    gui::AnalysisPanel* p = w.analysisPanel();
    QVERIFY2(p->figure()->caption().contains("Runs compared (bars left to right in each bucket)") &&
                 p->figure()->caption().contains("seed two"),
             qPrintable(p->figure()->caption()));
    for (const QSize s : {QSize(1600, 1000), QSize(1024, 700)}) {
      resizeTo(w, s);
      const QString where = QStringLiteral("%1x%2: ").arg(s.width()).arg(s.height());
      QScrollArea* area = figureArea(p);
      QVERIFY(area);
      QVERIFY2(
          area->horizontalScrollBar()->maximum() == 0,
          qPrintable(where + QStringLiteral("scrolls sideways by %1").arg(area->horizontalScrollBar()->maximum())));
      const bool full = s.width() >= 1600;
      if (full)
        QVERIFY2(area->verticalScrollBar()->maximum() == 0,
                 qPrintable(where + QStringLiteral("scrolls down by %1").arg(area->verticalScrollBar()->maximum())));
      auto* bc = p->figure()->panelAs<csw::BarChart>(0);
      QVERIFY(bc);
      bc->plot()->replot(QCustomPlot::rpImmediateRefresh);
      // Every bucket's tick is drawn inside the plot, and the plot inside the visible area.
      const QVector<double> ticks = bc->plot()->xAxis->tickVector();
      QVERIFY2(ticks.size() >= 10, qPrintable(where + QString::number(ticks.size())));
      const QRect axisRect = bc->plot()->axisRect()->rect();
      for (double t : ticks) {
        const double x = bc->plot()->xAxis->coordToPixel(t);
        QVERIFY2(x >= axisRect.left() && x <= axisRect.right(), qPrintable(where + QString::number(t)));
      }
      const QRect plotInView(bc->plot()->mapTo(area->viewport(), QPoint(0, 0)), bc->plot()->size());
      QVERIFY2(area->viewport()->rect().contains(QRect(plotInView.topLeft(), QSize(plotInView.width(), 1))),
               qPrintable(where + QStringLiteral("plot at %1,%2 %3x%4")
                                      .arg(plotInView.x())
                                      .arg(plotInView.y())
                                      .arg(plotInView.width())
                                      .arg(plotInView.height())));
      auto* caption = p->figure()->findChild<QLabel*>(QStringLiteral("figureCaption"));
      QVERIFY(caption && caption->isVisible());
      const QRect capInView(caption->mapTo(area->viewport(), QPoint(0, 0)), caption->size());
      if (full)
        QVERIFY2(area->viewport()->rect().contains(capInView),
                 qPrintable(where + QStringLiteral("caption at y %1..%2, viewport height %3")
                                        .arg(capInView.top())
                                        .arg(capInView.bottom())
                                        .arg(area->viewport()->height())));
      else QVERIFY2(capInView.right() < area->viewport()->width(), qPrintable(where + "caption wider than the area"));
    }
    const QString dir = cstest::temp_dir() + "/wide_export";
    QDir().mkpath(dir);
    const QString problem = titleExportProblem(p, dir + "/length2");
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
  }

  // The attention-over-attention view (a cloze document of 400 words, the answer and the
  // candidates marked "[w]" / "*w", some of them next to each other): the word labels drawn
  // along x never overlap, and the answer keeps its label.
  void aoaWordLabelsDoNotOverlap() {
    cs::LabeledMatrix m;
    m.row_labels = {"s = alpha^T beta", "mean_t alpha(t)"};
    const int n = 400;
    for (int c = 0; c < n; ++c) {
      std::string w = "word" + std::to_string(c);
      if (c == 200 || c == 350) w = "[whale]";
      else if (c == 199 || c == 201 || c == 202 || c == 351 || c == 10 || c == 11) w = "*ship";
      m.col_labels.push_back(w);
    }
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < n; ++c) m.values.push_back(0.001 * ((c * 7 + r) % 13));
    cs::HeatmapSet h;
    h.matrices = {m};
    h.titles = {"cloze run"};
    h.x_label = "document word ([answer], *candidate)";
    h.y_label = "attention";
    h.few_rows = true;
    cs::AnalysisResult r;
    r.kind = "aoa";
    r.caption = "AoA";
    r.data = h;
    QScrollArea area;  // as the Analyses tab holds it (declared first: the figure goes first)
    std::unique_ptr<csf::Figure> fig(csf::make_figure(r));
    area.setWidgetResizable(true);
    area.setWidget(fig.get());
    area.resize(1000, 420);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    settle();
    auto* hv = fig->panelAs<csw::HeatmapView>(0);
    hv->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(hv->columnLabelStep() > 1, qPrintable(QString::number(hv->columnLabelStep())));
    const QVector<double> ticks = hv->plot()->xAxis->tickVector();
    const QVector<QString> labels = hv->plot()->xAxis->tickVectorLabels();
    QVERIFY(labels.contains("[whale]"));
    QCOMPARE(hv->plot()->xAxis->tickLabelRotation(), 90.0);  // written vertically: a line height wide
    const double extent = QFontMetricsF(hv->plot()->xAxis->tickLabelFont()).height();
    for (int i = 1; i < ticks.size(); ++i) {
      const double gap = hv->plot()->xAxis->coordToPixel(ticks[i]) - hv->plot()->xAxis->coordToPixel(ticks[i - 1]);
      QVERIFY2(gap >= extent, qPrintable(QStringLiteral("'%1' and '%2' %3 px apart, labels %4 px wide")
                                             .arg(labels[i - 1], labels[i])
                                             .arg(gap)
                                             .arg(extent)));
    }
    // Both occurrences of the answer are labelled (a candidate next to one makes way).
    QVERIFY(hv->labelledColumns().contains(200) && hv->labelledColumns().contains(350));
  }
};

CS_TEST(TestGuiFiguresWide, "gui_figures_wide")

}  // namespace test_gui_figures_wide

#include "test_gui_figures_wide.moc"
