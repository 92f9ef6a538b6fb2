// CurvePlot: reference lines and their labels, the legend's placement, the vertical marker.
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

void CurvePlot::setReferenceLine(const QString& id, double y, const QString& label, const QColor& color) {
  RefLine* r = nullptr;
  for (RefLine* x : m_refLines)
    if (x->id == id) r = x;
  if (!r) {
    r = new RefLine;
    r->id = id;
    r->line = new QCPItemLine(m_plot);
    r->line->setLayer(QStringLiteral("marker"));
    for (QCPItemPosition* p : {r->line->start, r->line->end}) {
      p->setAxes(m_plot->xAxis, m_plot->yAxis);
      p->setAxisRect(m_plot->axisRect());
      p->setTypeX(QCPItemPosition::ptAxisRectRatio);
      p->setTypeY(QCPItemPosition::ptPlotCoords);
    }
    r->text = new QCPItemText(m_plot);
    r->text->setLayer(QStringLiteral("marker"));
    r->text->position->setAxes(m_plot->xAxis, m_plot->yAxis);
    r->text->position->setAxisRect(m_plot->axisRect());
    r->text->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    r->text->position->setTypeY(QCPItemPosition::ptPlotCoords);
    r->text->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    r->text->setClipToAxisRect(true);
    m_refLines << r;
  }
  r->y = y;
  r->label = label;
  r->color = color.isValid() ? color : QColor(90, 90, 90);
  r->line->start->setCoords(0.0, y);
  r->line->end->setCoords(1.0, y);
  r->line->setPen(QPen(r->color, 1.4, Qt::DashDotLine));
  r->text->setText(QStringLiteral("%1 %2").arg(label, QString::number(y, 'g', 4)));
  r->text->setColor(r->color.darker(120));
  r->text->setBrush(QColor(255, 255, 255, 190));
  placeReferenceLabels();
  markDirty();
}

void CurvePlot::placeLegend() {
  QCPLegend* lg = m_plot->legend;
  QCPLayoutInset* inset = m_plot->axisRect()->insetLayout();
  const QRect area = m_plot->axisRect()->rect();
  if (!lg->visible() || area.width() < 10 || area.height() < 10) return;
  const QSize sz = lg->outerRect().size().isEmpty() ? lg->minimumOuterSizeHint() : lg->outerRect().size();
  // The points of every curve drawn (a series' raw points and its smoothed curve), in pixels, that fall in
  // each corner's rectangle (the legend's size and a margin around it).
  const Qt::Alignment corners[] = {Qt::AlignTop | Qt::AlignRight, Qt::AlignTop | Qt::AlignLeft,
                                   Qt::AlignBottom | Qt::AlignRight, Qt::AlignBottom | Qt::AlignLeft};
  auto rectAt = [&](Qt::Alignment a) {
    const int m = 12;
    const int x = (a & Qt::AlignRight) ? area.right() - sz.width() - m : area.left() + m;
    const int y = (a & Qt::AlignTop) ? area.top() + m : area.bottom() - sz.height() - m;
    return QRect(x - m, y - m, sz.width() + 2 * m, sz.height() + 2 * m);
  };
  // Each curve counts where it is drawn: its points and its lines between them, sampled every 4 px (a short
  // plot's legend covers some of the curve in every corner; it goes where it covers the least).
  int counts[4] = {0, 0, 0, 0};
  QRect rects[4];
  for (int c = 0; c < 4; ++c) rects[c] = rectAt(corners[c]);
  auto count = [&](const QPointF& px) {
    if (!area.contains(px.toPoint())) return;
    for (int c = 0; c < 4; ++c)
      if (rects[c].contains(px.toPoint())) ++counts[c];
  };
  // This runs at every layout (the live plots replot at a fixed rate): a long curve is sampled at about 1,000 of
  // its points in view, which is plenty to tell which corner it crosses (a million-point replot took 120-133 ms
  // with every point counted, 12 ms so).
  const QCPRange xr = m_plot->xAxis->range();
  for (const Series* s : m_series)
    for (const QCPGraph* g : {s->raw, s->smooth}) {
      if (!g || !g->visible()) continue;
      const bool lines = g->lineStyle() != QCPGraph::lsNone;
      const auto first = g->data()->findBegin(xr.lower), last = g->data()->findEnd(xr.upper);
      const int stride = std::max(1, int((last - first) / 1000));
      QPointF prev;
      bool havePrev = false;
      for (auto it = first; it < last; it += std::min<std::ptrdiff_t>(stride, last - it)) {
        if (!std::isfinite(it->key) || !std::isfinite(it->value)) {
          havePrev = false;
          continue;
        }
        const QPointF px(m_plot->xAxis->coordToPixel(it->key), m_plot->yAxis->coordToPixel(it->value));
        count(px);
        if (lines && havePrev) {
          const double len = std::hypot(px.x() - prev.x(), px.y() - prev.y());
          const int n = std::min(2000, int(len / 4));
          for (int k = 1; k < n; ++k) count(prev + (px - prev) * (double(k) / n));
        }
        prev = px;
        havePrev = true;
      }
    }
  int best = 0;
  for (int c = 1; c < 4; ++c)
    if (counts[c] < counts[best]) best = c;
  if (inset->insetAlignment(0) == corners[best]) return;
  inset->setInsetAlignment(0, corners[best]);
  inset->updateLayout();
}

Qt::Alignment CurvePlot::legendCorner() const { return m_plot->axisRect()->insetLayout()->insetAlignment(0); }

void CurvePlot::placeReferenceLabels() {
  // Each label beside its line, inside the axis rect and clear of the other labels: from the
  // top line down, above the line when there is room there (below it in the upper half of
  // the view, where the range ends just above a baseline at the top), else on the other side;
  // when both sides are taken (three close lines), shifted along x.
  const QCPRange yr = m_plot->yAxis->range();
  const QRect area = m_plot->axisRect()->rect();
  QList<RefLine*> order = m_refLines;
  std::sort(order.begin(), order.end(), [](const RefLine* a, const RefLine* b) { return a->y > b->y; });
  QList<QPair<double, double>> taken;  // pixel y intervals of the labels placed so far
  int shifted = 0;
  for (RefLine* r : order) {
    bool below = r->y > yr.center();
    double x = 0.01;
    if (area.height() > 0) {
      const double h = QFontMetricsF(r->text->font()).height() + 2 * r->text->padding().top() + 2;
      const double py = m_plot->yAxis->coordToPixel(r->y);
      auto span = [py, h](bool b) { return b ? qMakePair(py, py + h) : qMakePair(py - h, py); };
      auto fits = [&](bool b) {
        const auto s = span(b);
        if (s.first < area.top() || s.second > area.bottom() + 1) return false;
        for (const auto& t : taken)
          if (s.first < t.second && t.first < s.second) return false;
        return true;
      };
      if (!fits(below) && fits(!below)) below = !below;
      else if (!fits(below)) x += 0.3 * (1 + shifted++ % 2);
      taken << span(below);
    }
    r->text->setPositionAlignment(Qt::AlignLeft | (below ? Qt::AlignTop : Qt::AlignBottom));
    r->text->position->setCoords(x, r->y);
  }
}

QRect CurvePlot::referenceLabelRect(const QString& id) const {
  for (const RefLine* r : m_refLines)
    if (r->id == id) {
      const QPointF a = r->text->topLeft->pixelPosition(), b = r->text->bottomRight->pixelPosition();
      return QRectF(a, b).normalized().toRect();
    }
  return QRect();
}

QRect CurvePlot::plotAreaRect() const { return m_plot->axisRect()->rect(); }

void CurvePlot::removeReferenceLine(const QString& id) {
  for (int i = 0; i < m_refLines.size(); ++i)
    if (m_refLines[i]->id == id) {
      m_plot->removeItem(m_refLines[i]->line);
      m_plot->removeItem(m_refLines[i]->text);
      delete m_refLines.takeAt(i);
      markDirty();
      return;
    }
}

void CurvePlot::clearReferenceLines() {
  while (!m_refLines.isEmpty()) removeReferenceLine(m_refLines.first()->id);
}

QStringList CurvePlot::referenceLineIds() const {
  QStringList ids;
  for (const RefLine* r : m_refLines) ids << r->id;
  return ids;
}

double CurvePlot::referenceLineValue(const QString& id) const {
  for (const RefLine* r : m_refLines)
    if (r->id == id) return r->y;
  return std::numeric_limits<double>::quiet_NaN();
}

QString CurvePlot::referenceLineLabel(const QString& id) const {
  for (const RefLine* r : m_refLines)
    if (r->id == id) return r->label;
  return QString();
}

void CurvePlot::setMarker(double x) {
  m_markerX = x;
  m_marker->start->setCoords(x, 0.0);
  m_marker->end->setCoords(x, 1.0);
  m_marker->setVisible(true);
  markDirty();
}

void CurvePlot::clearMarker() {
  m_marker->setVisible(false);
  markDirty();
}

bool CurvePlot::hasMarker() const { return m_marker->visible(); }
double CurvePlot::markerX() const { return m_markerX; }
double CurvePlot::markerPixelX() const {
  return hasMarker() ? m_plot->xAxis->coordToPixel(m_markerX) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace csw
