// CurvePlot: the axes (log or linear), the view's range (fit, reset, replot), hover tooltips, CSV.
#include "curve_plot.h"
#include "curve_plot_internal.h"

#include <QCheckBox>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QResizeEvent>
#include <QSlider>
#include <QWidgetAction>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include "qcp.h"

namespace csw {

namespace {

// A log axis that stays readable over a short range: under two decades the
// ticks are QCPAxisTicker's linear "nice" steps (2, 2.5, 3, ...) instead of the
// powers of ten (none of which may fall in the range); otherwise the log ticks.
class ReadableLogTicker : public QCPAxisTickerLog {
 protected:
  QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
    if (range.lower > 0 && range.upper > 0 && range.upper / range.lower < 100.0) {
      // QCPAxisTickerLog does not override getTickStep: tickStep is the linear one.
      return QCPAxisTicker::createTickVector(tickStep, range);
    }
    return QCPAxisTickerLog::createTickVector(tickStep, range);
  }
  int getSubTickCount(double tickStep) override {
    return lastShort ? QCPAxisTicker::getSubTickCount(tickStep) : QCPAxisTickerLog::getSubTickCount(tickStep);
  }
  void generate(const QCPRange& range, const QLocale& locale, QChar formatChar, int precision, QVector<double>& ticks,
                QVector<double>* subTicks, QVector<QString>* tickLabels) override {
    lastShort = range.lower > 0 && range.upper > 0 && range.upper / range.lower < 100.0;
    QCPAxisTickerLog::generate(range, locale, formatChar, precision, ticks, subTicks, tickLabels);
  }
  bool lastShort = false;
};

}  // namespace

void CurvePlot::setXExtent(double lo, double hi) {
  m_extentLo = lo;
  m_extentHi = hi;
  markDirty();
}

void CurvePlot::decorationChanged() {
  // The title row (PlotView) has zero height without a title; no spacing below it then either.
  m_plot->plotLayout()->setRowSpacing(title().isEmpty() ? 0 : 5);
  requestReplot();
}

static void setAxisLog(QCPAxis* ax, bool log) {
  if (log) {
    ax->setScaleType(QCPAxis::stLogarithmic);
    QSharedPointer<QCPAxisTickerLog> t(new ReadableLogTicker);
    ax->setTicker(t);
    ax->setNumberFormat(QStringLiteral("gb"));
    ax->setNumberPrecision(6);  // enough digits that two ticks never share a label
  } else {
    ax->setScaleType(QCPAxis::stLinear);
    ax->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    ax->setNumberFormat(QStringLiteral("gb"));
    ax->setNumberPrecision(6);
  }
}

void CurvePlot::setXLog(bool log) { setLogScale(m_plot->xAxis, m_logX, &m_xLog, log); }

void CurvePlot::setYLog(bool log) { setLogScale(m_plot->yAxis, m_logY, &m_yLog, log); }

void CurvePlot::setLogScale(QCPAxis* axis, QCheckBox* box, bool* current, bool log) {
  if (log == *current) return;
  *current = log;
  {
    QSignalBlocker b(box);
    box->setChecked(log);
  }
  m_internalRange = true;
  setAxisLog(axis, log);
  m_internalRange = false;
  m_autoFit = true;
  refreshNow();
}

void CurvePlot::setSmoothing(double factor) {
  factor = std::clamp(factor, 0.0, 0.99);
  if (std::isnan(factor)) factor = 0.0;
  {
    QSignalBlocker b(m_smoothSlider);
    m_smoothSlider->setValue(qRound(factor * 100));
  }
  m_smoothLabel->setText(QString::number(factor, 'f', 2));
  if (factor == m_smoothing) return;
  m_smoothing = factor;
  for (Series* s : m_series) {
    s->smoothReset = true;
    if (factor <= 0.0) s->smooth->data()->clear();
    styleSeries(*s);
  }
  refreshNow();
  Q_EMIT smoothingChanged(factor);
}

void CurvePlot::setLegendVisible(bool visible) {
  {
    QSignalBlocker b(m_legendBox);
    m_legendBox->setChecked(visible);
  }
  refreshNow();  // (the legend entries follow the series' points)
  m_plot->legend->setVisible(visible && m_plot->legend->itemCount() > 0);
}

bool CurvePlot::legendVisible() const { return m_legendBox->isChecked(); }

void CurvePlot::setToolbarVisible(bool visible) { m_toolbar->setVisible(visible); }

void CurvePlot::padXRange() {
  const QCPRange r = m_plot->xAxis->range();
  if (!(r.upper > r.lower)) return;
  if (m_xLog) {
    if (r.lower <= 0) return;
    const double f = std::pow(r.upper / r.lower, kXPadFraction);
    m_plot->xAxis->setRange(r.lower, r.upper * f);
    return;
  }
  const double pad = (r.upper - r.lower) * kXPadFraction;
  const double lower = r.lower < 0 || r.lower - pad >= 0 ? r.lower - pad : r.lower;
  m_plot->xAxis->setRange(lower, r.upper + pad);
}

void CurvePlot::fitView() {
  bool any = false;
  for (const Series* s : m_series) any = any || !s->raw->data()->isEmpty();
  // The x extent, as far as the axis can show it (a log axis: its positive part).
  const double extentLo = m_xLog ? std::max(m_extentLo, m_extentHi * 1e-6) : m_extentLo;
  const bool extent =
      hasXExtent() && std::isfinite(extentLo) && std::isfinite(m_extentHi) && (!m_xLog || m_extentHi > 0);
  if (!any) {
    // Nothing to fit: the empty view's own range, never the one of data shown before.
    m_internalRange = true;
    m_plot->xAxis->setRange(m_xLog ? QCPRange(1, 10) : QCPRange(0, 1));
    if (extent && m_extentHi > extentLo) m_plot->xAxis->setRange(extentLo, m_extentHi);
    m_plot->yAxis->setRange(m_yLog ? QCPRange(1, 10) : QCPRange(0, 1));
    m_internalRange = false;
    return;
  }
  m_internalRange = true;
  m_plot->rescaleAxes(true);
  // The data's x range (a log axis: its positive part).
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
  for (const Series* s : m_series)
    for (auto it = s->raw->data()->constBegin(); it != s->raw->data()->constEnd(); ++it)
      if (std::isfinite(it->key) && (!m_xLog || it->key > 0)) {
        xlo = std::min(xlo, it->key);
        xhi = std::max(xhi, it->key);
      }
  if (extent) {
    // QCustomPlot fits one point into a tiny range (x +- 2): the extent replaces such a range.
    const double lo = std::min(extentLo, xlo), hi = std::max(m_extentHi, xhi);
    if (hi > lo) m_plot->xAxis->setRange(lo, hi);
  } else if (std::isfinite(xlo) && xhi - xlo <= 1e-12 * std::max(1.0, std::abs(xhi))) {
    // One x value (one point, or several at one step): QCustomPlot keeps the previous
    // range's width around it, which shows negative steps for a point at step 0..few. A range
    // of its own instead, never below 0 when no x is negative.
    if (m_xLog) {
      m_plot->xAxis->setRange(xlo / 2, xhi * 2);
    } else {
      const double pad = std::max(std::abs(xlo), 1.0);
      m_plot->xAxis->setRange(xlo >= 0 ? std::max(0.0, xlo - pad) : xlo - pad, xhi + pad);
    }
  }
  // Room at the right for the newest point's marker (a point on the axis rect's edge was drawn half clipped),
  // and at the left where that keeps the range's sign (no negative steps shown for data from step 0).
  padXRange();
  // A little headroom in y; a flat line gets a unit-sized range.
  // (QCustomPlot keeps the previous range's size for a flat line, so check the data itself.)
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const Series* s : m_series)
    for (auto it = s->raw->data()->constBegin(); it != s->raw->data()->constEnd(); ++it)
      if (std::isfinite(it->value)) {
        lo = std::min(lo, it->value);
        hi = std::max(hi, it->value);
      }
  // Reference lines (baselines) are in the view too, beside every point.
  bool refOutside = false;
  for (const RefLine* r : m_refLines)
    if (std::isfinite(r->y) && (!m_yLog || r->y > 0)) {
      refOutside = refOutside || r->y < lo || r->y > hi;
      lo = std::min(lo, r->y);
      hi = std::max(hi, r->y);
    }
  if (refOutside && hi > lo) m_plot->yAxis->setRange(lo, hi);
  QCPRange yr = m_plot->yAxis->range();
  if (std::isfinite(lo) && hi - lo <= 1e-12 * std::max(1.0, std::abs(hi))) {
    const double pad = lo != 0 ? std::abs(lo) * 0.1 : 0.5;  // flat line: +-10% of its value
    m_plot->yAxis->setRange(lo - pad, hi + pad);
  } else if (yr.size() <= 0) {
    m_plot->yAxis->setRange(yr.lower - 0.5, yr.upper + 0.5);
  } else {
    m_plot->yAxis->scaleRange(1.06, m_plot->yAxis->range().center());
  }
  m_internalRange = false;
}

void CurvePlot::onRangeChanged() {
  if (!m_internalRange) m_autoFit = false;  // the user zoomed or panned
  placeReferenceLabels();
}

void CurvePlot::resetView() {
  m_autoFit = true;
  fitView();
  requestReplot();
  Q_EMIT viewReset();
}

bool CurvePlot::replotIfDirty() {
  if (!m_dirty) return false;
  m_dirty = false;
  for (Series* s : m_series) {
    updateSmoothing(*s);
    styleSeries(*s);  // markers and the legend entry follow the point count
  }
  if (m_autoFit) fitView();
  requestReplot();
  return true;
}

void CurvePlot::refreshNow() {
  markDirty();
  replotIfDirty();
}

bool CurvePlot::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_plot && event->type() == QEvent::Leave) QToolTip::hideText();
  return QWidget::eventFilter(watched, event);
}

bool CurvePlot::nearestPoint(const QPointF& pixel, double maxDistPx, QString* id, double* x, double* y) const {
  const QCPAxis* xa = m_plot->xAxis;
  const QCPAxis* ya = m_plot->yAxis;
  double k1 = xa->pixelToCoord(pixel.x() - maxDistPx), k2 = xa->pixelToCoord(pixel.x() + maxDistPx);
  if (k1 > k2) std::swap(k1, k2);
  double best = maxDistPx * maxDistPx;
  bool found = false;
  for (const Series* s : m_series) {
    // Hover the curve that is drawn in full colour.
    const QCPGraph* g = (smoothOn(*s) && !s->smooth->data()->isEmpty()) ? s->smooth : s->raw;
    auto data = g->data();
    if (data->isEmpty()) continue;
    auto begin = data->findBegin(k1, true);
    auto end = data->findEnd(k2, true);
    const int count = int(end - begin);
    const int stride = std::max(1, count / 4000);  // bounded work on huge series
    for (auto it = begin; it < end; it += stride) {
      if (!std::isfinite(it->value)) continue;
      const double px = xa->coordToPixel(it->key), py = ya->coordToPixel(it->value);
      const double d = (px - pixel.x()) * (px - pixel.x()) + (py - pixel.y()) * (py - pixel.y());
      if (d <= best) {
        best = d;
        found = true;
        if (id) *id = s->id;
        if (x) *x = it->key;
        if (y) *y = it->value;
      }
    }
  }
  return found;
}

QString CurvePlot::tooltipTextAt(const QPointF& pixel) const {
  QString id;
  double x = 0, y = 0;
  if (!nearestPoint(pixel, 20.0, &id, &x, &y)) return QString();
  QString text =
      QStringLiteral("%1\nx = %2\ny = %3").arg(seriesLabel(id), QString::number(x, 'g', 8), QString::number(y, 'g', 6));
  const Series* s = series(id);
  if (s && smoothOn(*s)) {
    // Also show the raw value at that x.
    auto it = s->raw->data()->findBegin(x, false);
    if (it != s->raw->data()->constEnd() && it->key == x)
      text += QStringLiteral("\nraw = %1").arg(QString::number(it->value, 'g', 6));
  }
  return text;
}

void CurvePlot::onMouseMove(QMouseEvent* ev) {
  if (ev->buttons() != Qt::NoButton) return;  // dragging
  showHoverText(tooltipTextAt(ev->position()), ev->globalPosition().toPoint());
}

QString CurvePlot::toCsv() const {
  QString out = QStringLiteral("series,x,y\n");
  for (const Series* s : m_series) {
    const QString name = csvField(s->id);
    for (auto it = s->raw->data()->constBegin(); it != s->raw->data()->constEnd(); ++it) {
      out += name;
      out += QLatin1Char(',');
      out += csvNumber(it->key);
      out += QLatin1Char(',');
      out += csvNumber(it->value);
      out += QLatin1Char('\n');
    }
  }
  return out;
}

double CurvePlot::benchReplotMs(int points) { return benchReplotMs(points, 0.6); }

double CurvePlot::benchReplotMs(int points, double smoothing) {
  CurvePlot w;
  w.setAttribute(Qt::WA_DontShowOnScreen);
  w.resize(1000, 700);
  w.show();
  QVector<double> xs(points), ys(points);
  double v = 1.0;
  quint32 state = 12345u;
  for (int i = 0; i < points; ++i) {
    state = state * 1664525u + 1013904223u;  // LCG: deterministic noise
    v += ((state >> 8) / double(1 << 24) - 0.5) * 0.01;
    xs[i] = i;
    ys[i] = v + 0.3 * std::sin(i * 1e-4);
  }
  w.setTitle(QStringLiteral("bench"));
  w.setXLabel(QStringLiteral("step"));
  w.setYLabel(QStringLiteral("loss"));
  w.appendPoints(QStringLiteral("bench"), xs, ys);
  w.setSmoothing(smoothing);
  w.replotIfDirty();
  w.plot()->replot(QCustomPlot::rpImmediateRefresh);  // warm-up (layout, label cache)
  const int reps = 5;
  QElapsedTimer t;
  t.start();
  for (int i = 0; i < reps; ++i) w.plot()->replot(QCustomPlot::rpImmediateRefresh);
  return t.nsecsElapsed() / 1e6 / reps;
}

}  // namespace csw
