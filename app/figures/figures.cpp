#include "figures.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QPainter>
#include <QPicture>
#include <QSet>
#include <QTextDocument>
#include <QTextLayout>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "attention_grid.h"
#include "bar_chart.h"
#include "curve_plot.h"
#include "heatmap_view.h"
#include "qcp.h"
#include "util/error.h"

namespace csf {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QStringList qs(const std::vector<std::string>& v) {
  QStringList out;
  out.reserve(int(v.size()));
  for (const auto& s : v) out << QString::fromStdString(s);
  return out;
}

// ---- colour maps ------------------------------------------------------------

QStringList color_map_names() {
  return {QStringLiteral("grey_inverted"), QStringLiteral("grey"),  QStringLiteral("viridis"), QStringLiteral("magma"),
          QStringLiteral("thermal"),       QStringLiteral("polar"), QStringLiteral("jet")};
}

namespace {
QCPColorGradient stops(std::initializer_list<std::pair<double, QColor>> s) {
  QCPColorGradient g;
  g.clearColorStops();
  for (const auto& p : s) g.setColorStopAt(p.first, p.second);
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(256);
  return g;
}
}  // namespace

bool apply_color_map(csw::HeatmapView* view, const QString& name) {
  if (!view) return false;
  if (name == QLatin1String("grey")) {
    view->setGreyscale(false);
  } else if (name == QLatin1String("grey_inverted")) {
    view->setGreyscale(true);
  } else if (name == QLatin1String("viridis")) {
    // Matplotlib's viridis, sampled at five points.
    view->setGradient(stops({{0.0, QColor(0x44, 0x01, 0x54)},
                             {0.25, QColor(0x3b, 0x52, 0x8b)},
                             {0.5, QColor(0x21, 0x91, 0x8c)},
                             {0.75, QColor(0x5e, 0xc9, 0x62)},
                             {1.0, QColor(0xfd, 0xe7, 0x25)}}));
  } else if (name == QLatin1String("magma")) {
    view->setGradient(stops({{0.0, QColor(0x00, 0x00, 0x04)},
                             {0.25, QColor(0x51, 0x12, 0x7c)},
                             {0.5, QColor(0xb7, 0x37, 0x79)},
                             {0.75, QColor(0xfc, 0x89, 0x61)},
                             {1.0, QColor(0xfc, 0xfd, 0xbf)}}));
  } else if (name == QLatin1String("thermal")) {
    view->setGradientPreset(QCPColorGradient::gpThermal);
  } else if (name == QLatin1String("polar")) {
    view->setGradientPreset(QCPColorGradient::gpPolar);
  } else if (name == QLatin1String("jet")) {
    view->setGradientPreset(QCPColorGradient::gpJet);
  } else {
    view->setGreyscale(false);
    return false;
  }
  return true;
}

// ---- Figure -----------------------------------------------------------------

namespace {
// Text wrapped at word boundaries (anywhere inside a word wider than the width), as the
// figure's title and caption are drawn: the layout's height, its widest line, and (with a
// painter) the drawing itself, centred or left-aligned.
struct WrappedText {
  double height = 0, widest = 0;
};
WrappedText wrapText(const QString& text, const QFont& font, double width, QPaintDevice* device,
                     Qt::Alignment align = Qt::AlignLeft, QPainter* painter = nullptr, QPointF at = QPointF()) {
  WrappedText out;
  if (text.isEmpty()) return out;
  QString t = text;
  t.replace(QLatin1Char('\n'), QChar::LineSeparator);
  QTextLayout layout(t, font, device);
  QTextOption opt(align);
  opt.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  layout.setTextOption(opt);
  layout.beginLayout();
  double y = 0;
  for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) {
    line.setLineWidth(std::max(20.0, width));
    line.setPosition(QPointF(0, y));
    y += line.height();
    out.widest = std::max(out.widest, line.naturalTextWidth());
  }
  layout.endLayout();
  out.height = y;
  if (painter) layout.draw(painter, at);
  return out;
}

QFont titleFont(const QFont& base) {
  QFont tf = base;
  tf.setBold(true);
  tf.setPointSizeF(base.pointSizeF() * 1.2);
  return tf;
}
}  // namespace

Figure::Figure(QWidget* parent) : QWidget(parent) {
  setAutoFillBackground(true);
  QPalette pal = palette();
  pal.setColor(QPalette::Window, Qt::white);
  pal.setColor(QPalette::WindowText, Qt::black);
  setPalette(pal);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(4, 4, 4, 4);
  lay->setSpacing(4);
  m_titleLabel = new QLabel(this);
  m_titleLabel->setFont(titleFont(font()));
  m_titleLabel->setAlignment(Qt::AlignCenter);
  // A title wider than the figure wraps (a long run name breaks anywhere) instead of being
  // cut at both ends; the export wraps it the same way (titleHeight, renderFigure).
  m_titleLabel->setWordWrap(true);
  m_titleLabel->setContentsMargins(6, 0, 6, 0);  // never a glyph at the figure's edge
  m_titleLabel->setObjectName(QStringLiteral("figureTitle"));
  m_titleLabel->hide();
  lay->addWidget(m_titleLabel);
  m_grid = new QGridLayout;
  m_grid->setSpacing(6);
  lay->addLayout(m_grid, 1);
  m_captionLabel = new QLabel(this);
  m_captionLabel->setWordWrap(true);
  m_captionLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_captionLabel->setObjectName(QStringLiteral("figureCaption"));
  m_captionLabel->hide();
  lay->addWidget(m_captionLabel);
}

void Figure::addPanel(QWidget* view, const QString& name) {
  Q_ASSERT(dynamic_cast<csw::ExportableView*>(view));
  view->setParent(this);
  m_panels.push_back({view, name});
  relayout();
}

QWidget* Figure::panel(int i) const { return i >= 0 && i < panelCount() ? m_panels[size_t(i)].view : nullptr; }
QString Figure::panelName(int i) const { return i >= 0 && i < panelCount() ? m_panels[size_t(i)].name : QString(); }

void Figure::setTitle(const QString& title) {
  m_title = title;
  m_titleLabel->setText(title);
  m_titleLabel->setVisible(!title.isEmpty());
}

void Figure::setCaption(const QString& caption) {
  m_caption = caption;
  m_captionLabel->setText(caption);
  m_captionLabel->setVisible(!caption.isEmpty());
}

void Figure::setColumns(int n) {
  m_columns = std::max(0, n);
  relayout();
}

int Figure::columns() const {
  const int n = std::max(1, panelCount());
  if (m_columns > 0) return std::min(m_columns, n);
  if (n <= 3) return n;
  return n == 4 ? 2 : 3;
}

void Figure::setPanelSize(const QSize& s) {
  m_panelSize = s;
  for (const Panel& p : m_panels) p.view->setMinimumSize(minimumPanelSize());
  updateGeometry();
}

void Figure::relayout() {
  while (m_grid->count() > 0) delete m_grid->takeAt(0);
  const int cols = columns();
  for (int i = 0; i < panelCount(); ++i) {
    // A readable minimum per panel: in a small window the figure scrolls (the
    // Analyses tab holds it in a scroll area) instead of squeezing its panels.
    m_panels[size_t(i)].view->setMinimumSize(minimumPanelSize());
    m_grid->addWidget(m_panels[size_t(i)].view, i / cols, i % cols);
  }
  updateGeometry();
}

QSize Figure::minimumPanelSize() const {
  // Panels side by side may be a little narrower, so two of them (two runs' relevance) fit
  // the figure area of a 1024x700 window without scrolling sideways.
  const int w = columns() > 1 ? 280 : 340;
  return QSize(std::min(m_panelSize.width(), w), std::min(m_panelSize.height(), 240));
}

double Figure::replotNow() {
  QElapsedTimer t;
  t.start();
  for (const Panel& p : m_panels) {
    auto* ev = dynamic_cast<csw::ExportableView*>(p.view);
    if (ev && ev->figurePlot()) ev->figurePlot()->replot(QCustomPlot::rpImmediateRefresh);
    else p.view->repaint();
  }
  return double(t.nsecsElapsed()) / 1e6;
}

double Figure::captionHeight(double width, const QFont& f, QPaintDevice* device) const {
  if (m_caption.isEmpty()) return 0.0;
  return wrapText(m_caption, f, width, device).height + 8;
}

double Figure::titleHeight(double width, const QFont& f, QPaintDevice* device) const {
  if (m_title.isEmpty()) return 0.0;
  return wrapText(m_title, titleFont(f), width, device, Qt::AlignHCenter).height + 4;
}

QSize Figure::sizeHint() const {
  const int cols = columns();
  const int rows = (std::max(1, panelCount()) + cols - 1) / cols;
  const int w = cols * m_panelSize.width() + (cols - 1) * 6 + 8;
  const int h = int(std::ceil(rows * m_panelSize.height() + (rows - 1) * 6 + 8 + titleHeight(w - 8, font()) +
                              captionHeight(w - 8, font())));
  return QSize(w, h);
}

QSize Figure::figureSize() const { return sizeHint(); }

void Figure::renderFigure(QPainter* p, const QRect& target) const {
  p->save();
  p->fillRect(target, Qt::white);
  const QFont base = font();
  const double margin = 4, spacing = 6;
  double top = target.top() + margin;
  const double innerW = target.width() - 2 * margin;
  if (!m_title.isEmpty()) {
    // Wrapped to the figure's width (never cut at both ends), centred.
    p->setPen(Qt::black);
    const WrappedText t = wrapText(m_title, titleFont(base), innerW, p->device(), Qt::AlignHCenter, p,
                                   QPointF(target.left() + margin, top));
    top += t.height + 4;
  }
  const double capH = captionHeight(innerW, base, p->device());
  const double bottom = target.bottom() + 1 - margin - capH;
  const int cols = columns();
  const int rows = (std::max(1, panelCount()) + cols - 1) / cols;
  const double cellW = (innerW - (cols - 1) * spacing) / cols;
  const double cellH = std::max(20.0, (bottom - top - (rows - 1) * spacing) / rows);
  const int cw = int(std::round(cellW)), ch = int(std::round(cellH));
  // Every heatmap's tick thinning at the export size first, so linked panels (one decision
  // for the figure) label the same columns in the file too; the screen's after.
  auto heatmapAt = [&](int i) { return qobject_cast<csw::HeatmapView*>(m_panels[size_t(i)].view); };
  for (int i = 0; i < panelCount(); ++i)
    if (csw::HeatmapView* hv = heatmapAt(i)) hv->updateTickThinning(cw, ch);
  // A bar chart's bucket labels thinned for the export's width too (a histogram's bins), the screen's after.
  auto barsAt = [&](int i) { return qobject_cast<csw::BarChart*>(m_panels[size_t(i)].view); };
  for (int i = 0; i < panelCount(); ++i)
    if (csw::BarChart* bc = barsAt(i)) bc->updateLabelThinning(cw);
  for (int i = 0; i < panelCount(); ++i) {
    const QRectF cell(target.left() + margin + (i % cols) * (cellW + spacing), top + (i / cols) * (cellH + spacing),
                      cellW, cellH);
    QWidget* v = m_panels[size_t(i)].view;
    auto* ev = dynamic_cast<csw::ExportableView*>(v);
    if (!ev) continue;
    if (QCustomPlot* plot = ev->figurePlot()) {
      const int w = cw, h = ch;
      auto* pv = qobject_cast<csw::PlotView*>(v);
      if (pv) pv->wrapTitleTo(w);  // the panel's title wrapped to the export's width
      // Record the plot's vector drawing and replay it here (keeps PDF/SVG vector).
      QPicture pic;
      {
        QCPPainter qp(&pic);
        qp.setMode(QCPPainter::pmVectorized);
        qp.setMode(QCPPainter::pmNoCaching);
        qp.setMode(QCPPainter::pmNonCosmetic);
        plot->toPainter(&qp, w, h);
        qp.end();
      }
      p->drawPicture(cell.topLeft(), pic);
      if (pv) pv->wrapTitleTo(plot->width());
    } else {
      ev->renderFigure(p, cell.toAlignedRect());
    }
  }
  for (int i = 0; i < panelCount(); ++i)
    if (csw::HeatmapView* hv = heatmapAt(i)) hv->updateTickThinning(hv->plot()->width(), hv->plot()->height());
  for (int i = 0; i < panelCount(); ++i)
    if (csw::BarChart* bc = barsAt(i)) bc->updateLabelThinning(bc->plot()->width());
  if (capH > 0) {
    p->setPen(QColor(40, 40, 40));
    wrapText(m_caption, base, innerW, p->device(), Qt::AlignLeft, p, QPointF(target.left() + margin, bottom + 4));
  }
  p->restore();
}

QString Figure::toCsv() const {
  if (panelCount() == 1) return dynamic_cast<csw::ExportableView*>(m_panels[0].view)->toCsv();
  std::vector<QList<QStringList>> recs;  // per panel: its records, each its fields
  QSet<QStringList> headers;
  for (const Panel& p : m_panels) {
    recs.push_back(csw::csvRecords(dynamic_cast<csw::ExportableView*>(p.view)->toCsv()));
    headers.insert(recs.back().value(0));
  }
  auto line = [](const QStringList& fields) {
    QStringList q;
    for (const QString& f : fields) q << csw::csvField(f);
    return q.join(QLatin1Char(',')) + QLatin1Char('\n');
  };
  QString out;
  if (headers.size() <= 1) {
    out = line(QStringList{QStringLiteral("panel")} + recs[0].value(0));
    for (size_t i = 0; i < recs.size(); ++i)
      for (int r = 1; r < recs[i].size(); ++r) out += line(QStringList{m_panels[i].name} + recs[i][r]);
    return out;
  }
  // Long format: first column = row label, header = column names.
  out = QStringLiteral("panel,row,column,value\n");
  for (size_t i = 0; i < recs.size(); ++i) {
    const QStringList header = recs[i].value(0);
    for (int r = 1; r < recs[i].size(); ++r) {
      const QStringList& f = recs[i][r];
      for (int c = 1; c < f.size(); ++c) out += line({m_panels[i].name, f.value(0), header.value(c), f[c]});
    }
  }
  return out;
}

// ---- heatmap figures --------------------------------------------------------

namespace {

void finiteRange(const cs::LabeledMatrix& m, double* lo, double* hi) {
  for (double v : m.values)
    if (std::isfinite(v)) {
      *lo = std::min(*lo, v);
      *hi = std::max(*hi, v);
    }
}

csw::HeatmapView* heatmapOf(const cs::LabeledMatrix& m, const FigureStyle& style) {
  auto* hv = new csw::HeatmapView;
  hv->setTickLabelThinning(true);
  QVector<double> vals(m.values.begin(), m.values.end());
  hv->setMatrix(int(m.rows()), int(m.cols()), vals);
  hv->setRowLabels(qs(m.row_labels));
  hv->setColumnLabels(qs(m.col_labels));
  apply_color_map(hv, style.color_map);
  hv->setShowValues(style.show_values);
  // Blank (NaN) cells, e.g. j >= t in a relevance map, show a pale blue-grey, which no colour
  // map uses, so they never read as a low value. (A solid brush: a hatch pattern's cached
  // pixmap outlives a headless QApplication and crashed the CLI at exit.)
  hv->plot()->axisRect()->setBackground(QBrush(QColor(0xe4, 0xea, 0xf4)));
  return hv;
}

}  // namespace

Figure* make_matrix_figure(const std::vector<cs::LabeledMatrix>& matrices, const QStringList& names,
                           const QString& xLabel, const QString& yLabel, const FigureStyle& style) {
  auto* fig = new Figure;
  fig->setTitle(style.title);
  fig->setColumns(style.columns);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  int maxCols = 1;
  for (const auto& m : matrices) {
    finiteRange(m, &lo, &hi);
    maxCols = std::max(maxCols, int(m.cols()));
  }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;  // a constant matrix: a readable scale around its value
  if (std::isfinite(style.range_lo)) lo = style.range_lo;
  if (std::isfinite(style.range_hi)) hi = style.range_hi;
  const bool fixed = std::isfinite(style.range_lo) || std::isfinite(style.range_hi);
  const int n = int(matrices.size());
  const int cols =
      style.columns > 0 ? std::min(style.columns, std::max(1, n)) : (n <= 3 ? std::max(1, n) : (n == 4 ? 2 : 3));
  QVector<csw::HeatmapView*> views;
  for (int i = 0; i < n; ++i) {
    const auto& m = matrices[size_t(i)];
    csw::HeatmapView* hv = heatmapOf(m, style);
    // Marked columns keep their labels however long the text: the attention-over-attention
    // view marks the answer's occurrences "[w]" and the other candidates' "*w" (kind_aoa.cpp).
    // Where two are closer than a label's width, the answer's occurrences go first.
    QVector<int> keys, answers;
    for (size_t c = 0; c < m.col_labels.size(); ++c) {
      const std::string& l = m.col_labels[c];
      const bool answer = l.size() > 2 && l.front() == '[' && l.back() == ']';
      if (answer || (l.size() > 1 && l.front() == '*')) keys << int(c);
      if (answer) answers << int(c);
    }
    if (!keys.isEmpty()) hv->setKeyColumns(keys, answers);
    hv->setTitle(names.value(i));
    hv->setXLabel(xLabel);
    hv->setYLabel(yLabel);
    if ((style.shared_scale && n > 1) || fixed || n == 1) hv->setDataRange(lo, hi);
    // One colour scale for panels sharing the range: on the last panel of each row.
    if (style.shared_scale && n > 1 && (i % cols) != cols - 1 && i != n - 1) hv->setColorScaleVisible(false);
    fig->addPanel(hv, names.value(i, QStringLiteral("panel %1").arg(i + 1)));
    views << hv;
  }
  // Panels of the same text (two runs' relevance): one thinning decision for the figure, so
  // both label the same columns (the panel with the colour scale is narrower).
  for (int i = 0; i < n; ++i) {
    QVector<csw::HeatmapView*> group;
    for (int j = 0; j < n; ++j)
      if (matrices[size_t(j)].cols() == matrices[size_t(i)].cols() &&
          matrices[size_t(j)].rows() == matrices[size_t(i)].rows())
        group << views[j];
    if (group.size() > 1 && group.front() == views[i]) csw::HeatmapView::linkTickThinning(group);
  }
  // Wide matrices (long texts) get wide panels so the character ticks stay readable.
  QSize ps = style.panel_size;
  ps.setWidth(std::clamp(120 + 9 * maxCols, ps.width(), 2400));
  fig->setPanelSize(ps);
  if (style.show_caption && !matrices.empty()) fig->setCaption(qs(matrices.front().caption));
  return fig;
}

Figure* make_heatmaps_figure(const cs::HeatmapSet& set, const FigureStyle& style) {
  FigureStyle s = style;
  if (set.few_rows) {
    // Few rows: a flatter panel; stack the runs vertically when the text is long.
    s.panel_size.setHeight(std::min(style.panel_size.height(), 300));
    if (s.columns == 0 && set.matrices.size() > 1) s.columns = 1;
  }
  Figure* fig = make_matrix_figure(set.matrices, qs(set.titles), qs(set.x_label), qs(set.y_label), s);
  if (!set.value_label.empty())
    for (int i = 0; i < fig->panelCount(); ++i)
      fig->panelAs<csw::HeatmapView>(i)->setColorScaleLabel(qs(set.value_label));
  return fig;
}

namespace {
cs::HeatmapSet heatmaps(const std::vector<cs::LabeledMatrix>& runs, const QStringList& names, const char* yLabel) {
  cs::HeatmapSet h;
  h.matrices = runs;
  for (const QString& n : names) h.titles.push_back(n.toStdString());
  h.x_label = "earlier character j";
  h.y_label = yLabel;
  h.value_label = "cosine";
  return h;
}
}  // namespace

Figure* make_relevance_figure(const std::vector<cs::LabeledMatrix>& runs, const QStringList& names,
                              const FigureStyle& style) {
  return make_heatmaps_figure(heatmaps(runs, names, "character t (last K)"), style);
}

Figure* make_zone_relevance_figure(const std::vector<cs::LabeledMatrix>& runs, const QStringList& names,
                                   const FigureStyle& style) {
  cs::HeatmapSet h = heatmaps(runs, names, "zone");
  h.few_rows = true;
  return make_heatmaps_figure(h, style);
}

Figure* make_composition_figure(const std::vector<cs::LabeledMatrix>& matrices, const QStringList& names,
                                const FigureStyle& style) {
  FigureStyle s = style;
  s.show_values = true;  // small matrices: print the weights
  s.panel_size = QSize(std::min(style.panel_size.width(), 360), std::min(style.panel_size.height(), 320));
  if (s.columns == 0) s.columns = std::min<int>(4, std::max<int>(1, int(matrices.size())));
  // Each matrix keeps its own range unless shared_scale (weights of one kind are comparable).
  Figure* fig = make_matrix_figure(matrices, names, QStringLiteral("to"), QStringLiteral("from"), s);
  return fig;
}

// ---- channel attention --------------------------------------------------------

Figure* make_channel_attention_figure(const QStringList& tokens, const QVector<QVector<double>>& weights,
                                      const QVector<QVector<int>>& inDegree, const QString& caption,
                                      const FigureStyle& style) {
  auto* fig = new Figure;
  fig->setTitle(style.title);
  auto* g = new csw::AttentionGrid;
  g->setTokens(tokens);
  g->setWeights(weights);
  g->setInDegrees(inDegree);
  g->setShowValues(true);
  g->setXLabel(QStringLiteral("token t"));
  g->setYLabel(QStringLiteral("channel k"));
  QStringList ch;
  for (int k = 0; k < weights.size(); ++k) ch << QStringLiteral("k=%1").arg(k + 1);
  g->setChannelLabels(ch);
  fig->addPanel(g, QStringLiteral("channel attention"));
  const int nt = std::max(1, int(tokens.size()));
  fig->setPanelSize(QSize(std::clamp(100 + 46 * nt, 420, 2400), std::clamp(90 + 34 * int(weights.size()), 160, 900)));
  if (style.show_caption) fig->setCaption(caption);
  return fig;
}

// ---- buckets ------------------------------------------------------------------

Figure* make_buckets_figure(const std::vector<BucketSeries>& runs, const QString& yLabel, const QString& caption,
                            const FigureStyle& style) {
  auto* fig = new Figure;
  fig->setTitle(style.title);
  auto* bc = new csw::BarChart;
  bc->setBuckets(runs.empty() ? QStringList() : runs.front().buckets);
  for (size_t i = 0; i < runs.size(); ++i) {
    const QString id = runs[i].name.isEmpty() ? QStringLiteral("run %1").arg(i + 1) : runs[i].name;
    bc->setSeries(id, id, runs[i].values);
  }
  if (!runs.empty()) bc->setCounts(runs.front().counts);
  bc->setCountsMode(csw::BarChart::CountsMode::Text);
  bc->setCountsLabel(QStringLiteral("n"));
  bc->setXLabel(QStringLiteral("sequence length bucket"));
  bc->setYLabel(yLabel);
  fig->addPanel(bc, QStringLiteral("buckets"));
  fig->setPanelSize(style.panel_size);
  if (style.show_caption) fig->setCaption(caption);
  return fig;
}

// ---- series -------------------------------------------------------------------

Figure* make_series_figure(const std::vector<Series>& series, const QString& title, const QString& xLabel,
                           const QString& yLabel, const QString& caption, const FigureStyle& style) {
  auto* fig = new Figure;
  fig->setTitle(style.title);
  auto* cp = new csw::CurvePlot;
  cp->setToolbarVisible(false);
  cp->setTitle(title == style.title ? QString() : title);  // not twice when the figure's heading says it
  cp->setXLabel(xLabel);
  cp->setYLabel(yLabel);
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const QString id = s.name.isEmpty() ? QStringLiteral("series %1").arg(i + 1) : s.name;
    cp->addSeries(id, id);
    cp->setSeries(id, s.x, s.y);
    if (!s.yerr.isEmpty()) {
      QVector<double> lo(s.y.size()), hi(s.y.size());
      for (int k = 0; k < s.y.size(); ++k) {
        const double e = k < s.yerr.size() && std::isfinite(s.yerr[k]) ? s.yerr[k] : 0.0;
        lo[k] = s.y[k] - e;
        hi[k] = s.y[k] + e;
      }
      cp->setBand(id, s.x, lo, hi);
    }
  }
  cp->setLegendVisible(series.size() > 1);
  cp->replotIfDirty();
  fig->addPanel(cp, title.isEmpty() ? QStringLiteral("series") : title);
  fig->setPanelSize(style.panel_size);
  if (style.show_caption) fig->setCaption(caption);
  return fig;
}

// ---- export -------------------------------------------------------------------

namespace {
csw::ExportOptions& defaultExportOptions() {
  static csw::ExportOptions o;
  return o;
}
}  // namespace

void set_default_export_options(const csw::ExportOptions& options) { defaultExportOptions() = options; }
csw::ExportOptions default_export_options() { return defaultExportOptions(); }

bool export_figure(QWidget* figure, const QString& path, QString* error) {
  return export_figure(figure, path, error, defaultExportOptions());
}

bool export_figure(QWidget* figure, const QString& path, QString* error, const csw::ExportOptions& options) {
  return csw::exportFigure(figure, path, options, error);
}

}  // namespace csf
