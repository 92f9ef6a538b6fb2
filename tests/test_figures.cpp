// cellscope_figures: every figure function renders offscreen and exports
// PNG/PDF/SVG/CSV, checked file by file (magic bytes, SVG root, CSV rows).
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QXmlStreamReader>

#include <cmath>
#include <limits>

#include "attention_grid.h"
#include "bar_chart.h"
#include "curve_plot.h"
#include "figures.h"
#include "harness.h"
#include "heatmap_view.h"

namespace {

const double NaN = std::numeric_limits<double>::quiet_NaN();

cs::LabeledMatrix relevanceLike(double scale, const std::string& caption = "relevance caption") {
  // rows: last 2 characters of "a b" -> t = 1 (' '), 2 ('b'); NaN for j >= t.
  cs::LabeledMatrix m;
  m.row_labels = {cs::display_symbol(" "), "b"};
  m.col_labels = {"a", cs::display_symbol(" "), "b"};
  m.values = {0.5 * scale, NaN, NaN, -0.25 * scale, 1.0 * scale, NaN};
  m.caption = caption;
  return m;
}

QByteArray head(const QString& path, int n) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return QByteArray();
  return f.read(n);
}

QString readText(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return QString();
  return QString::fromUtf8(f.readAll());
}

// Data rows of a CSV file (records after the header; quoted newlines kept).
int csvRows(const QString& path) {
  const QString text = readText(path);
  int records = 0;
  bool q = false, any = false;
  for (QChar c : text) {
    if (c == QLatin1Char('"')) q = !q;
    if (c == QLatin1Char('\n') && !q) {
      ++records;
      any = false;
    } else {
      any = true;
    }
  }
  if (any) ++records;
  return records - 1;
}

}  // namespace

class TestFigures : public QObject {
  Q_OBJECT

  QString m_dir;

  // Exports fig in the four formats and checks every file; returns "" or what is wrong.
  QString exportAll(QWidget* fig, const QString& stem, int expectedCsvRows) {
    for (const QString& ext :
         {QStringLiteral("png"), QStringLiteral("pdf"), QStringLiteral("svg"), QStringLiteral("csv")}) {
      const QString path = m_dir + "/" + stem + "." + ext;
      QString err;
      if (!csf::export_figure(fig, path, &err)) return QStringLiteral("%1: %2").arg(path, err);
      if (ext == "png") {
        if (head(path, 8) != QByteArray("\x89PNG\r\n\x1a\n", 8)) return path + ": no PNG magic";
        QImage img(path);
        if (img.isNull() || img.width() < 100 || img.height() < 100) return path + ": bad PNG size";
        // Not a blank page: some dark pixels (text, axes, cells).
        int dark = 0;
        for (int y = 0; y < img.height(); y += 2)
          for (int x = 0; x < img.width(); x += 2)
            if (qGray(img.pixel(x, y)) < 100) ++dark;
        if (dark < 50) return path + ": looks empty";
      } else if (ext == "pdf") {
        if (!head(path, 5).startsWith("%PDF")) return path + ": no %PDF header";
      } else if (ext == "svg") {
        if (!readText(path).contains("<svg")) return path + ": no <svg root";
      } else {
        const int rows = csvRows(path);
        if (rows != expectedCsvRows)
          return QStringLiteral("%1: %2 CSV rows, expected %3").arg(path).arg(rows).arg(expectedCsvRows);
      }
    }
    return QString();
  }
  QString csvOf(const QString& stem) const { return m_dir + "/" + stem + ".csv"; }

 private Q_SLOTS:
  void initTestCase() {
    m_dir = cstest::temp_dir() + "/figures";
    QDir().mkpath(m_dir);
  }

  void relevanceSideBySideSharesOneScale() {
    std::unique_ptr<csf::Figure> fig(
        csf::make_relevance_figure({relevanceLike(1.0), relevanceLike(0.5)}, {"GRU+DT", "capMZU+DT"}));
    QCOMPARE(fig->panelCount(), 2);
    auto* a = fig->panelAs<csw::HeatmapView>(0);
    auto* b = fig->panelAs<csw::HeatmapView>(1);
    QVERIFY(a && b);
    // Shared colour range = min..max over both runs.
    QCOMPARE(a->dataLower(), -0.25);
    QCOMPARE(a->dataUpper(), 1.0);
    QCOMPARE(b->dataLower(), a->dataLower());
    QCOMPARE(b->dataUpper(), a->dataUpper());
    // Characters as tick labels, spaces as '_'.
    QCOMPARE(a->columnLabel(1), QString("_"));
    QCOMPARE(a->rowLabel(0), QString("_"));
    QCOMPARE(a->title(), QString("GRU+DT"));
    QCOMPARE(fig->caption(), QString("relevance caption"));
    QVERIFY(std::isnan(a->value(0, 1)));
    QCOMPARE(b->value(1, 1), 0.5);
    fig->resize(fig->sizeHint());
    // CSV: "panel" + the heatmap columns, 2 rows per run.
    {
      const QString e = exportAll(fig.get(), "relevance", 4);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    const QString csv = csvOf("relevance");
    const QString text = readText(csv);
    QVERIFY2(text.startsWith("panel,row,a,_,b\n"), qPrintable(text));
    QVERIFY(text.contains("capMZU+DT,b,-0.125,0.5,\n"));
    // Vector formats keep text as text: the caption is in the SVG.
    QVERIFY(readText(m_dir + "/relevance.svg").contains("relevance"));
  }

  // A title wider than the figure wraps in PNG, PDF and SVG, at the natural size and at a
  // fixed export size: no text pixel at the image's edges in the title's band, every word in
  // the SVG, and the figure's natural height grows by the extra lines.
  void longTitleWrapsInEveryExport() {
    const QString title =
        "Per-character relevance \u2014 first-gru-run-with-a-long-name at step 20 vs second-gru-run-with-a-long-name "
        "at step 10, and a few more words so that it needs three lines at a small size";
    std::unique_ptr<csf::Figure> fig(csf::make_relevance_figure({relevanceLike(1.0), relevanceLike(0.5)}, {"a", "b"}));
    const QSize before = fig->figureSize();
    fig->setTitle(title);
    QVERIFY2(fig->figureSize().height() > before.height() + 2 * QFontMetrics(fig->font()).height(),
             qPrintable(QString("%1 -> %2").arg(before.height()).arg(fig->figureSize().height())));
    QCOMPARE(fig->figureSize().width(), before.width());  // wraps, does not widen
    fig->resize(fig->sizeHint());
    for (const QSize size : {QSize(), QSize(700, 500)}) {
      csw::ExportOptions o;
      o.size = size;
      const QString stem = m_dir + QString("/title%1").arg(size.width());
      QString err;
      for (const char* ext : {".png", ".svg", ".pdf"})
        QVERIFY2(csf::export_figure(fig.get(), stem + ext, &err, o), qPrintable(err));
      const QImage img(stem + ".png");
      QVERIFY(!img.isNull());
      const int band = 4 + 4 * QFontMetrics(fig->font()).height() * 6 / 5;  // three title lines and some
      int inside = 0, edges = 0;
      for (int y = 0; y < band; ++y)
        for (int x = 0; x < img.width(); ++x) {
          const bool dark = qGray(img.pixel(x, y)) < 128;
          inside += dark;
          if (x < 3 || x >= img.width() - 3) edges += dark;
        }
      QVERIFY2(inside > 200, qPrintable(QString::number(inside)));
      QVERIFY2(edges == 0, qPrintable(QString("%1 px at the edges, export %2 wide").arg(edges).arg(img.width())));
      const QString drawn = cstest::svgTextRun(stem + ".svg");
      QVERIFY2(drawn.contains(QString(title).remove(' ')), qPrintable(drawn.left(400)));
      QVERIFY(QFileInfo(stem + ".pdf").size() > 1000);
    }
  }

  void colourMapsAndFixedRange() {
    csf::FigureStyle st;
    st.color_map = "viridis";
    st.range_lo = -1;
    st.range_hi = 1;
    std::unique_ptr<csf::Figure> fig(csf::make_relevance_figure({relevanceLike(1.0)}, {"one"}, st));
    auto* h = fig->panelAs<csw::HeatmapView>(0);
    QCOMPARE(h->dataLower(), -1.0);
    QCOMPARE(h->dataUpper(), 1.0);
    for (const QString& name : csf::color_map_names()) QVERIFY2(csf::apply_color_map(h, name), qPrintable(name));
    QVERIFY(!csf::apply_color_map(h, "no-such-map"));
  }

  void longTextThinsTickLabels() {
    cs::LabeledMatrix m;
    for (int j = 0; j < 300; ++j) m.col_labels.push_back(std::string(1, char('a' + j % 26)));
    for (int r = 0; r < 300; ++r) m.row_labels.push_back(m.col_labels[size_t(r)]);
    m.values.assign(300 * 300, 0.1);
    std::unique_ptr<csf::Figure> fig(csf::make_relevance_figure({m}, {"long"}));
    auto* h = fig->panelAs<csw::HeatmapView>(0);
    h->updateTickThinning(800, 600);
    QVERIFY(h->columnLabelStep() > 1);
    QVERIFY(h->rowLabelStep() > 1);
    h->updateTickThinning(20000, 20000);
    QCOMPARE(h->columnLabelStep(), 1);
    fig->resize(1200, 900);
    const double ms = fig->replotNow();
    QVERIFY(ms >= 0);
    {
      const QString e = exportAll(fig.get(), "relevance300", 300);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
  }

  void zoneRelevance() {
    cs::LabeledMatrix m;
    m.row_labels = {"zone 1", "zone 2", "zone 3"};
    m.col_labels = {"t", "h", "e"};
    m.values = {0.1, 0.2, NaN, 0.3, 0.4, NaN, -0.1, 0.9, NaN};
    m.caption = "zone definition";
    std::unique_ptr<csf::Figure> fig(csf::make_zone_relevance_figure({m}, {"capMZU"}));
    QCOMPARE(fig->panelAs<csw::HeatmapView>(0)->rows(), 3);
    QCOMPARE(fig->caption(), QString("zone definition"));
    {
      const QString e = exportAll(fig.get(), "zone", 3);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
  }

  void compositionPerRoutingIteration() {
    cs::MatrixSet set;
    set.title = "cap coupling";
    set.caption = "coupling coefficients";
    set.composition = "cap";
    set.iterations = 2;
    for (int it = 0; it < 2; ++it) {
      cs::MatrixPanel p;
      p.title = "M_h, routing iteration " + std::to_string(it + 1);
      p.iteration = it;
      p.matrix.row_labels = {"z1", "z2", "z3"};
      p.matrix.col_labels = {"c1", "c2"};
      p.matrix.values = {0.5, 0.5, 0.2, 0.8, 0.9, 0.1};
      set.panels.push_back(p);
    }
    std::unique_ptr<csf::Figure> fig(csf::make_composition_figure(set));
    QCOMPARE(fig->panelCount(), 2);
    QCOMPARE(fig->columns(), 2);  // one column per routing iteration
    auto* h = fig->panelAs<csw::HeatmapView>(0);
    QVERIFY(h->showValues());
    QCOMPARE(h->valueTextCount(), 6);  // every weight printed
    QCOMPARE(fig->panelName(1), QString("M_h, routing iteration 2"));
    QCOMPARE(fig->panelAs<csw::HeatmapView>(1)->title(), QString("M_h\nrouting iteration 2"));
    // Same headers -> a panel column; 3 rows per panel.
    {
      const QString e = exportAll(fig.get(), "composition", 6);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }

    // Different shapes (sat zones x zones next to cap) -> long format, one row per cell.
    std::vector<cs::LabeledMatrix> ms = {set.panels[0].matrix, cs::LabeledMatrix()};
    ms[1].row_labels = {"z1", "z2"};
    ms[1].col_labels = {"z1", "z2"};
    ms[1].values = {1, 0, 0, 1};
    std::unique_ptr<csf::Figure> mixed(csf::make_composition_figure(ms, {"cap", "sat"}));
    {
      const QString e = exportAll(mixed.get(), "composition_mixed", 6 + 4);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    const QString csv = csvOf("composition_mixed");
    QVERIFY(readText(csv).startsWith("panel,row,column,value\n"));
  }

  void channelAttentionGridWithBlocks() {
    cs::ChannelGrid g;
    g.tokens = {"the", "old", "man", "and", "the"};
    g.attention.row_labels = {"channel 1", "channel 2"};
    g.attention.col_labels = g.tokens;
    g.attention.values = {0.1, 0.2, 0.3, 0.4, 0.5, 0.9, 0.8, 0.7, 0.6, 0.5};
    g.in_degree = {{1, 2, 1, 2, 1}, {1, 2, 3, 1, 2}};
    g.caption = "channel attention caption";
    std::unique_ptr<csf::Figure> fig(csf::make_channel_attention_figure(g));
    auto* grid = fig->panelAs<csw::AttentionGrid>(0);
    QVERIFY(grid);
    QCOMPARE(grid->channelCount(), 2);
    QCOMPARE(grid->tokenCount(), 5);
    QCOMPARE(grid->weight(1, 2), 0.7);
    QCOMPARE(grid->channelBoundaries(0), QVector<int>({2, 4}));
    QCOMPARE(grid->channelBoundaries(1), QVector<int>({3}));
    QCOMPARE(fig->caption(), QString("channel attention caption"));
    {
      const QString e = exportAll(fig.get(), "channels", 10);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    const QString csv = csvOf("channels");
    QVERIFY(readText(csv).contains("2,man,k=2,0.7,3"));
  }

  void bucketsOverlayRuns() {
    auto lb = [](const std::string& run, double base) {
      cs::LengthBuckets b;
      b.run = run;
      b.metric = "bpc";
      b.length_unit = "characters";
      b.split = "test";
      for (int i = 0; i < 3; ++i) {
        cs::MetricBucket k;
        k.label = std::to_string(i);
        k.lo = 10 * i;
        k.hi = 10 * (i + 1);
        k.sequences = 5 + i;
        k.value = base + 0.1 * i;
        b.buckets.push_back(k);
      }
      return b;
    };
    std::unique_ptr<csf::Figure> fig(csf::make_buckets_figure({lb("/x/gru", 2.0), lb("/x/mzu", 1.5)}, {}));
    auto* bc = fig->panelAs<csw::BarChart>(0);
    QVERIFY(bc);
    QCOMPARE(bc->seriesIds(), QStringList({"gru", "mzu"}));
    QCOMPARE(bc->counts(), QVector<int>({5, 6, 7}));
    QVERIFY(bc->buckets().value(0).startsWith("0\n(0,10]"));
    {
      const QString e = exportAll(fig.get(), "buckets", 6);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    const QString csv = csvOf("buckets");
    QVERIFY(readText(csv).contains(",mzu,1.7,7,"));

    // The result type the length kind returns (several runs), through make_figure.
    cs::AnalysisResult r;
    r.kind = "length";
    r.caption = "by length";
    r.data = cs::BucketSet{{lb("/x/gru", 2.0), lb("/x/mzu", 1.5)}};
    std::unique_ptr<csf::Figure> f2(csf::make_figure(r));
    QCOMPARE(f2->panelAs<csw::BarChart>(0)->seriesIds(), QStringList({"gru", "mzu"}));
    // A comparison's caption names the runs, in the order of the bars.
    QCOMPARE(f2->caption(), QString("by length Runs compared (bars left to right in each bucket): gru; mzu."));
  }

  void seriesWithMarkerAndHistogram() {
    cs::SeriesSet s;
    s.title = "D_zone over training";
    s.x_label = "step";
    s.y_label = "mean D_zone";
    s.caption = "dzone caption";
    s.marker_step = 200;
    s.series.push_back({"M_h", {100, 200, 300}, {-0.1, -0.3, -0.4}, {}});
    s.series.push_back({"M_g", {100, 200, 300}, {-0.2, -0.2, -0.5}, {0.01, 0.02, 0.03}});
    std::unique_ptr<csf::Figure> fig(csf::make_series_figure(s));
    auto* cp = fig->panelAs<csw::CurvePlot>(0);
    QVERIFY(cp);
    QVERIFY(cp->hasMarker());
    QCOMPARE(cp->markerX(), 200.0);
    QCOMPARE(cp->pointCount("M_g"), 3);
    QVERIFY(cp->hasBand("M_g"));
    QVERIFY(!cp->hasBand("M_h"));
    {
      const QString e = exportAll(fig.get(), "series", 6);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }

    cs::SeriesSet h;
    h.style = "bars";
    h.title = "gates";
    h.series.push_back({"l0/gate", {0.25, 0.75}, {0.4, 0.6}, {}});
    std::unique_ptr<csf::Figure> hist(csf::make_series_figure(h));
    auto* bc = hist->panelAs<csw::BarChart>(0);
    QVERIFY(bc);
    QCOMPARE(bc->buckets(), QStringList({"0.25", "0.75"}));
    {
      const QString e = exportAll(hist.get(), "histogram", 2);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
  }

  void prefixTable() {
    cs::TextTable t;
    t.title = "Prefix predictions";
    t.caption = "CRU Table 5";
    t.columns = {"prefix", "label", "probability"};
    t.rows = {{"the", "pos", "0.51"}, {"the movie, sadly", "neg", "0.80"}};
    std::unique_ptr<csf::Figure> fig(csf::make_table_figure(t));
    auto* tv = fig->panelAs<csf::TableView>(0);
    QVERIFY(tv);
    QCOMPARE(tv->rows().size(), 2);
    {
      const QString e = exportAll(fig.get(), "table", 2);
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    const QString csv = csvOf("table");
    QVERIFY(readText(csv).contains("\"the movie, sadly\",neg,0.80"));
  }

  void makeFigureDispatchesOnTheResultType() {
    cs::AnalysisResult r;
    r.kind = "relevance";
    r.caption = "from the registry";
    cs::HeatmapSet h;
    h.matrices = {relevanceLike(1.0), relevanceLike(2.0)};
    h.titles = {"a", "b"};
    h.y_label = "character t (last K)";
    h.value_label = "cosine";
    r.data = h;
    std::unique_ptr<csf::Figure> f(csf::make_figure(r));
    QCOMPARE(f->panelCount(), 2);
    QCOMPARE(f->caption(), QString("from the registry Runs compared (panels left to right): a; b."));
    {
      cs::AnalysisResult one = r;  // one run: nothing to tell apart
      std::get<cs::HeatmapSet>(one.data).matrices.resize(1);
      std::unique_ptr<csf::Figure> f1(csf::make_figure(one));
      QCOMPARE(f1->caption(), QString("from the registry"));
      one.data = cs::HeatmapSet{h.matrices, h.titles, 0, 1, "", "", "", true};  // few rows: stacked
      std::unique_ptr<csf::Figure> f3(csf::make_figure(one));
      QCOMPARE(f3->caption(), QString("from the registry Runs compared (panels top to bottom): a; b."));
    }
    QCOMPARE(f->panelName(1), QString("b"));
    QVERIFY(f->panelAs<csw::HeatmapView>(1));

    cs::AnalysisResult t;
    t.kind = "prefix_table";
    cs::TextTable table;
    table.columns = {"prefix", "label"};
    table.rows = {{"a", "b"}};
    t.data = table;
    std::unique_ptr<csf::Figure> ft(csf::make_figure(t));
    QVERIFY(ft->panelAs<csf::TableView>(0));

    cs::AnalysisResult empty;  // holds no result: a clear error, not a crash
    empty.kind = "relevance";
    bool threw = false;
    try {
      std::unique_ptr<csf::Figure> x(csf::make_figure(empty));
    } catch (const std::exception&) {
      threw = true;
    }
    QVERIFY(threw);
  }

  void exportErrorsAreMessages() {
    std::unique_ptr<csf::Figure> fig(csf::make_relevance_figure({relevanceLike(1.0)}, {"x"}));
    QString err;
    QVERIFY(!csf::export_figure(fig.get(), m_dir + "/x.bmp", &err));
    QVERIFY2(err.contains("unsupported"), qPrintable(err));
    QVERIFY(!csf::export_figure(fig.get(), m_dir + "/no/such/dir/x.png", &err));
    QVERIFY(!err.isEmpty());
  }
};

CS_TEST(TestFigures, "figures")
#include "test_figures.moc"
