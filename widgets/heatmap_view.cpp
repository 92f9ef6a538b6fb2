#include "heatmap_view.h"

#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include "qcp.h"

namespace csw {

HeatmapView::HeatmapView(QWidget* parent) : PlotView(Kind::CustomPlot, parent) {
  m_plot->setMinimumSize(150, 100);
  m_plot->setMouseTracking(true);  // hover tooltips without a pressed button
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->addWidget(m_plot);

  m_plot->axisRect()->setupFullAxesBox(false);
  m_plot->xAxis2->setVisible(false);
  m_plot->yAxis2->setVisible(false);
  for (QCPAxis* ax : {m_plot->xAxis, m_plot->yAxis}) {
    ax->grid()->setVisible(false);
    ax->setSubTicks(false);
    ax->setTickLength(0, 3);
  }
  m_plot->yAxis->setRangeReversed(true);  // row 0 at the top

  m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
  m_map->setInterpolate(false);
  m_map->setTightBoundary(false);
  m_scale = new QCPColorScale(m_plot);
  m_plot->plotLayout()->addElement(1, 1, m_scale);  // beside the axis rect, below the title row
  m_scale->setType(QCPAxis::atRight);
  m_map->setColorScale(m_scale);
  auto* group = new QCPMarginGroup(m_plot);
  m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);

  setGreyscale(false);
  connect(m_plot, &QCustomPlot::mouseMove, this, &HeatmapView::onMouseMove);
  connect(m_plot, &QCustomPlot::beforeReplot, this, [this] {
    if (m_thin) updateTickThinning(m_plot->width(), m_plot->height());
  });
}

void HeatmapView::setTickLabelThinning(bool on) {
  m_thin = on;
  if (!on && (m_colStep != 1 || m_rowStep != 1)) {
    m_colStep = m_rowStep = 1;
    rebuildTicks();
  }
  requestReplot();
}

void HeatmapView::updateTickThinning(int plotWidth, int plotHeight) {
  if (!m_thin) return;
  // The axis rect of a layout at w x h itself. (Before: the plot size minus the margins of the
  // last layout, which after an export was the export's layout against the screen's viewport:
  // a large window's margins came out as hundreds of pixels, and the next SVG of a 15 x 21
  // relevance heatmap kept 2 column and 8 row labels of 21 and 15.)
  const QRect ar = axisRectAt(plotWidth, plotHeight);
  const double axW = std::max(20, ar.width()), axH = std::max(20, ar.height());
  const QFontMetricsF fm(m_plot->xAxis->tickLabelFont());
  double colPx = 0;
  for (int c = 0; c < m_cols; ++c) colPx = std::max(colPx, fm.horizontalAdvance(columnLabel(c)));
  if (m_plot->xAxis->tickLabelRotation() != 0) colPx = fm.height();
  colPx += 3;
  const double rowPx = fm.height() + 1;
  m_needColStep = m_cols > 0 ? std::max(1, int(std::ceil(m_cols * colPx / axW))) : 1;
  m_needRowStep = m_rows > 0 ? std::max(1, int(std::ceil(m_rows * rowPx / axH))) : 1;
  if (applyLinkedSteps()) rebuildTicks();
  // The group's decision may have changed with this view's need: the others follow.
  for (const QPointer<HeatmapView>& v : m_linked)
    if (v && v->applyLinkedSteps()) {
      v->rebuildTicks();
      v->requestReplot();
    }
}

QRect HeatmapView::axisRectAt(int plotWidth, int plotHeight) const {
  auto layoutAt = [this](const QRect& viewport) {
    m_plot->setViewport(viewport);
    // QCustomPlot::updateLayout's phases (it is protected; replot and toPainter run the same).
    for (auto phase : {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
      m_plot->plotLayout()->update(phase);
  };
  const QRect old = m_plot->viewport();
  layoutAt(QRect(0, 0, std::max(1, plotWidth), std::max(1, plotHeight)));
  const QRect ar = m_plot->axisRect()->rect();
  layoutAt(old);  // hit tests and hover texts keep the screen's layout
  return ar;
}

bool HeatmapView::applyLinkedSteps() {
  int cs = m_needColStep, rs = m_needRowStep;
  for (const QPointer<HeatmapView>& v : m_linked)
    if (v && v->m_thin) {
      cs = std::max(cs, v->m_needColStep);
      rs = std::max(rs, v->m_needRowStep);
    }
  if (cs == m_colStep && rs == m_rowStep) return false;
  m_colStep = cs;
  m_rowStep = rs;
  return true;
}

void HeatmapView::linkTickThinning(const QVector<HeatmapView*>& views) {
  for (HeatmapView* v : views) {
    if (!v) continue;
    v->m_linked.clear();
    for (HeatmapView* o : views)
      if (o && o != v) v->m_linked << QPointer<HeatmapView>(o);
  }
  for (HeatmapView* v : views)
    if (v && v->applyLinkedSteps()) {
      v->rebuildTicks();
      v->requestReplot();
    }
}

HeatmapView::~HeatmapView() = default;

void HeatmapView::setMatrix(int rows, int cols, const QVector<double>& rowMajor) {
  m_rows = std::max(0, rows);
  m_cols = std::max(0, cols);
  m_values = rowMajor;
  m_values.resize(m_rows * m_cols);
  for (int i = rowMajor.size(); i < m_values.size(); ++i) m_values[i] = std::numeric_limits<double>::quiet_NaN();
  rebuild();
}

void HeatmapView::setMatrix(const QVector<QVector<double>>& m) {
  int cols = 0;
  for (const auto& r : m) cols = std::max(cols, int(r.size()));
  QVector<double> flat(m.size() * cols, std::numeric_limits<double>::quiet_NaN());
  for (int r = 0; r < m.size(); ++r)
    for (int c = 0; c < m[r].size(); ++c) flat[r * cols + c] = m[r][c];
  setMatrix(m.size(), cols, flat);
}

double HeatmapView::value(int row, int col) const {
  if (row < 0 || col < 0 || row >= m_rows || col >= m_cols) return std::numeric_limits<double>::quiet_NaN();
  return m_values[row * m_cols + col];
}

void HeatmapView::setRowLabels(const QStringList& labels) {
  m_rowLabels = labels;
  rebuildTicks();
  requestReplot();
}

void HeatmapView::setColumnLabels(const QStringList& labels) {
  m_colLabels = labels;
  rebuildTicks();
  requestReplot();
}

QString HeatmapView::rowLabel(int row) const {
  return row >= 0 && row < m_rowLabels.size() ? m_rowLabels[row] : QString::number(row);
}
QString HeatmapView::columnLabel(int col) const {
  return col >= 0 && col < m_colLabels.size() ? m_colLabels[col] : QString::number(col);
}

void HeatmapView::setGradient(const QCPColorGradient& gradient) {
  QCPColorGradient g = gradient;
  g.setNanHandling(QCPColorGradient::nhTransparent);
  m_map->setGradient(g);
  rebuildValueTexts();
  requestReplot();
}

void HeatmapView::setGreyscale(bool inverted) { setGradientPreset(QCPColorGradient::gpGrayscale, inverted); }

void HeatmapView::setGradientPreset(int preset, bool inverted) {
  QCPColorGradient g(static_cast<QCPColorGradient::GradientPreset>(preset));
  setGradient(inverted ? g.inverted() : g);
}

void HeatmapView::setDataRange(double lo, double hi) {
  m_autoRange = false;
  m_lo = lo;
  m_hi = hi;
  applyRange();
  rebuildValueTexts();
  requestReplot();
}

void HeatmapView::setAutoDataRange() {
  m_autoRange = true;
  applyRange();
  rebuildValueTexts();
  requestReplot();
}

double HeatmapView::dataLower() const { return m_map->dataRange().lower; }
double HeatmapView::dataUpper() const { return m_map->dataRange().upper; }

void HeatmapView::applyRange() {
  double lo = m_lo, hi = m_hi;
  if (m_autoRange) {
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
    for (double v : m_values)
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    if (!std::isfinite(lo)) lo = 0, hi = 1;
  }
  if (hi <= lo) hi = lo + 1e-12 * std::max(1.0, std::abs(lo)) + 1e-300;
  m_map->setDataRange(QCPRange(lo, hi));
}

void HeatmapView::setColorScaleLabel(const QString& label) {
  m_scale->setLabel(label);
  requestReplot();
}
void HeatmapView::setColorScaleVisible(bool visible) {
  m_scale->setVisible(visible);
  if (visible && !m_plot->plotLayout()->hasElement(1, 1)) {
    m_plot->plotLayout()->addElement(1, 1, m_scale);
  } else if (!visible && m_plot->plotLayout()->hasElement(1, 1)) {
    m_plot->plotLayout()->take(m_scale);
    m_plot->plotLayout()->simplify();
  }
  requestReplot();
}

void HeatmapView::setShowValues(bool show) {
  m_showValues = show;
  rebuildValueTexts();
  requestReplot();
}
void HeatmapView::setMaxValueCells(int n) {
  m_maxValueCells = n;
  rebuildValueTexts();
  requestReplot();
}
void HeatmapView::setValuePrecision(int digits) {
  m_precision = std::clamp(digits, 0, 12);
  rebuildValueTexts();
  requestReplot();
}

int HeatmapView::valueTextCount() const {
  int n = 0;
  for (int i = 0; i < m_plot->itemCount(); ++i)
    if (qobject_cast<QCPItemText*>(m_plot->item(i))) ++n;
  return n;
}

void HeatmapView::rebuild() {
  auto* data = m_map->data();
  data->setSize(std::max(1, m_cols), std::max(1, m_rows));
  data->setRange(QCPRange(0, std::max(0, m_cols - 1)), QCPRange(0, std::max(0, m_rows - 1)));
  data->fill(std::numeric_limits<double>::quiet_NaN());
  for (int r = 0; r < m_rows; ++r)
    for (int c = 0; c < m_cols; ++c) data->setCell(c, r, m_values[r * m_cols + c]);
  applyRange();
  m_plot->xAxis->setRange(-0.5, std::max(0, m_cols) - 0.5);
  m_plot->yAxis->setRange(-0.5, std::max(0, m_rows) - 0.5);
  rebuildTicks();
  rebuildValueTexts();
  requestReplot();
}

void HeatmapView::rebuildTicks() {
  QSharedPointer<QCPAxisTickerText> xt(new QCPAxisTickerText), yt(new QCPAxisTickerText);
  int longest = 0;
  // Thinned: every step-th label, counted from the last row/column (the characters
  // nearest the end of a text are the interesting ones).
  const QVector<int> shown = labelledColumns();
  for (int c : shown) xt->addTick(c, columnLabel(c));
  for (int c = 0; c < m_cols; ++c) longest = std::max(longest, int(columnLabel(c).size()));
  for (int r = 0; r < m_rows; ++r)
    if ((m_rows - 1 - r) % std::max(1, m_rowStep) == 0) yt->addTick(r, rowLabel(r));
  m_plot->xAxis->setTicker(xt);
  m_plot->yAxis->setTicker(yt);
  // Long column labels are written vertically.
  m_plot->xAxis->setTickLabelRotation(longest > 3 && m_cols > 6 ? 90 : 0);
}

void HeatmapView::setKeyColumns(const QVector<int>& cols, const QVector<int>& first) {
  auto sorted = [](QVector<int> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  m_keyCols = sorted(cols);
  m_firstKeyCols.clear();
  for (int c : sorted(first))
    if (std::binary_search(m_keyCols.begin(), m_keyCols.end(), c)) m_firstKeyCols << c;
  rebuildTicks();
  requestReplot();
}

QVector<int> HeatmapView::labelledColumns() const {
  const int step = std::max(1, m_colStep);
  QVector<int> out;
  if (step == 1) {
    for (int c = 0; c < m_cols; ++c) out << c;
    return out;
  }
  // Labels closer than a step overlap. Key columns first (the higher rank first, each from
  // the last column back), then the regular every-step-th labels, each kept only where no
  // label kept before it is closer than a step.
  std::vector<char> taken(size_t(std::max(0, m_cols)), 0);
  auto clear = [&](int c) {
    for (int d = std::max(0, c - step + 1); d < std::min(m_cols, c + step); ++d)
      if (taken[size_t(d)]) return false;
    return true;
  };
  auto keep = [&](const QVector<int>& cols, bool onlyFirst) {
    for (int i = int(cols.size()) - 1; i >= 0; --i) {
      const int c = cols[i];
      if (c < 0 || c >= m_cols) continue;
      if (!onlyFirst && std::binary_search(m_firstKeyCols.begin(), m_firstKeyCols.end(), c)) continue;
      if (clear(c)) taken[size_t(c)] = 1;
    }
  };
  keep(m_firstKeyCols, true);
  keep(m_keyCols, false);
  for (int c = m_cols - 1; c >= 0; c -= step)
    if (clear(c)) taken[size_t(c)] = 1;
  for (int c = 0; c < m_cols; ++c)
    if (taken[size_t(c)]) out << c;
  return out;
}

void HeatmapView::rebuildValueTexts() {
  // Remove the old texts (all items of this plot are value texts).
  for (int i = m_plot->itemCount() - 1; i >= 0; --i)
    if (qobject_cast<QCPItemText*>(m_plot->item(i))) m_plot->removeItem(i);
  if (!m_showValues || m_rows * m_cols > m_maxValueCells || m_rows * m_cols == 0) return;
  QFont f = font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.8));
  const QCPRange range = m_map->dataRange();
  QCPColorGradient g = m_map->gradient();
  for (int r = 0; r < m_rows; ++r) {
    for (int c = 0; c < m_cols; ++c) {
      const double v = m_values[r * m_cols + c];
      if (!std::isfinite(v)) continue;
      auto* t = new QCPItemText(m_plot);
      t->setClipToAxisRect(true);
      t->position->setType(QCPItemPosition::ptPlotCoords);
      t->position->setCoords(c, r);
      t->setPositionAlignment(Qt::AlignCenter);
      t->setText(QString::number(v, 'f', m_precision));
      t->setFont(f);
      const QColor bg = QColor::fromRgba(g.color(v, range, false));
      t->setColor(qGray(bg.rgb()) < 128 ? Qt::white : Qt::black);
      t->setSelectable(false);
    }
  }
}

bool HeatmapView::cellAt(const QPointF& pixel, int* row, int* col) const {
  if (m_rows == 0 || m_cols == 0) return false;
  if (!m_plot->axisRect()->rect().contains(pixel.toPoint())) return false;
  const int c = int(std::floor(m_plot->xAxis->pixelToCoord(pixel.x()) + 0.5));
  const int r = int(std::floor(m_plot->yAxis->pixelToCoord(pixel.y()) + 0.5));
  if (r < 0 || c < 0 || r >= m_rows || c >= m_cols) return false;
  if (row) *row = r;
  if (col) *col = c;
  return true;
}

QString HeatmapView::tooltipTextAt(const QPointF& pixel) const {
  int r = 0, c = 0;
  if (!cellAt(pixel, &r, &c)) return QString();
  const double v = value(r, c);
  const QString vs = std::isfinite(v) ? QString::number(v, 'g', 6) : QStringLiteral("(blank)");
  return QStringLiteral("row %1 '%2'\ncolumn %3 '%4'\nvalue = %5")
      .arg(r)
      .arg(rowLabel(r))
      .arg(c)
      .arg(columnLabel(c), vs);
}

void HeatmapView::onMouseMove(QMouseEvent* ev) {
  showHoverText(tooltipTextAt(ev->position()), ev->globalPosition().toPoint());
}

QString HeatmapView::toCsv() const {
  QString out = QStringLiteral("row");
  for (int c = 0; c < m_cols; ++c) out += QLatin1Char(',') + csvField(columnLabel(c));
  out += QLatin1Char('\n');
  for (int r = 0; r < m_rows; ++r) {
    out += csvField(rowLabel(r));
    for (int c = 0; c < m_cols; ++c) out += QLatin1Char(',') + csvNumber(m_values[r * m_cols + c]);
    out += QLatin1Char('\n');
  }
  return out;
}

}  // namespace csw
