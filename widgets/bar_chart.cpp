#include "bar_chart.h"

#include <QFontMetricsF>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "qcp.h"

namespace csw {

struct BarChart::Series {
  QString id, label;
  QVector<double> values, errors;
  QColor color;
};

BarChart::BarChart(QWidget* parent) : PlotView(Kind::CustomPlot, parent) {
  m_plot->setMinimumSize(150, 100);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->addWidget(m_plot);
  m_plot->setAutoAddPlottableToLegend(false);
  m_plot->legend->setBrush(QColor(255, 255, 255, 210));
  m_plot->xAxis->grid()->setVisible(false);
  m_plot->xAxis->setSubTicks(false);
  m_plot->xAxis->setTickLength(0, 4);
  m_group = new QCPBarsGroup(m_plot);
  m_group->setSpacingType(QCPBarsGroup::stAbsolute);
  m_group->setSpacing(1);

  // Legend in a row below the plot, laid out horizontally, so it never hides bars.
  m_plot->axisRect()->insetLayout()->take(m_plot->legend);
  m_plot->plotLayout()->addElement(2, 0, m_plot->legend);
  m_plot->plotLayout()->setRowStretchFactor(2, 0.001);
  m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_plot->legend->setWrap(6);
  m_plot->legend->setBorderPen(Qt::NoPen);
  m_plot->legend->setMargins(QMargins(4, 0, 4, 2));
  connect(m_plot, &QCustomPlot::beforeReplot, this, [this] { updateLabelThinning(m_plot->width()); });
  rebuild();
}

void BarChart::updateLabelThinning(int plotWidth) {
  const int nb = m_buckets.size();
  // The axis rect's width: the plot's minus the margins of the last layout (estimated before the first one).
  const QRect ar = m_plot->axisRect()->rect();
  const bool laidOut = ar.width() > 10 && m_plot->viewport().width() > 10;
  const int margins = laidOut ? m_plot->viewport().width() - ar.width() : 80;
  const double axis = std::max(20, plotWidth - margins);
  const QFontMetricsF fm(m_plot->xAxis->tickLabelFont());
  double widest = 0;
  for (const QString& b : m_buckets)  // a label of several lines (a bucket and its counts): its widest line
    for (const QString& line : b.split(QLatin1Char('\n'))) widest = std::max(widest, fm.horizontalAdvance(line));
  const double need = widest + 3;  // labels 3 px apart still read as two (multi-line bucket labels are centred)
  const int step = nb > 0 ? std::max(1, int(std::ceil(nb * need / axis))) : 1;
  if (step == m_labelStep) return;
  m_labelStep = step;
  rebuildTicks();
}

void BarChart::rebuildTicks() {
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int i = 0; i < m_buckets.size(); i += std::max(1, m_labelStep)) ticker->addTick(i + 1, m_buckets[i]);
  m_plot->xAxis->setTicker(ticker);
}

BarChart::~BarChart() { qDeleteAll(m_series); }

void BarChart::setBuckets(const QStringList& labels) {
  m_buckets = labels;
  rebuild();
}

void BarChart::setSeries(const QString& id, const QString& label, const QVector<double>& values,
                         const QVector<double>& errors, const QColor& color) {
  Series* s = nullptr;
  for (Series* e : m_series)
    if (e->id == id) s = e;
  if (!s) {
    s = new Series;
    s->id = id;
    s->color = paletteColor(m_series.size());
    m_series.append(s);
  }
  s->label = label.isEmpty() ? id : label;
  s->values = values;
  s->errors = errors;
  if (color.isValid()) s->color = color;
  rebuild();
}

void BarChart::removeSeries(const QString& id) {
  for (int i = 0; i < m_series.size(); ++i)
    if (m_series[i]->id == id) delete m_series.takeAt(i--);
  rebuild();
}

void BarChart::clearSeries() {
  qDeleteAll(m_series);
  m_series.clear();
  rebuild();
}

QStringList BarChart::seriesIds() const {
  QStringList out;
  for (const Series* s : m_series) out << s->id;
  return out;
}

bool BarChart::hasErrorBars(const QString& id) const {
  for (const Series* s : m_series)
    if (s->id == id) return !s->errors.isEmpty();
  return false;
}

void BarChart::setCounts(const QVector<int>& counts) {
  m_counts = counts;
  rebuild();
}
void BarChart::setCountsMode(CountsMode mode) {
  m_countsMode = mode;
  rebuild();
}
void BarChart::setCountsLabel(const QString& label) {
  m_countsLabel = label;
  rebuild();
}

void BarChart::setLegendVisible(bool visible) {
  m_legend = visible;
  rebuild();
}
void BarChart::setYRange(double lo, double hi) {
  m_yLo = lo;
  m_yHi = hi;
  rebuild();
}

void BarChart::rebuild() {
  m_plot->clearPlottables();  // bars, error bars, count graph
  m_plot->clearItems();
  m_countGraph = nullptr;
  m_plot->legend->clearItems();
  const int nb = m_buckets.size();
  const int ns = std::max(1, int(m_series.size()));

  QVector<double> keys;
  for (int i = 0; i < nb; ++i) keys << i + 1;
  rebuildTicks();
  m_plot->xAxis->setRange(0.4, nb + 0.6);

  double top = 0.0, bottom = 0.0;
  const double width = 0.8 / ns;
  for (const Series* s : m_series) {
    auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    bars->setName(s->label);
    bars->setWidth(width);
    bars->setPen(QPen(s->color.darker(130), 1));
    bars->setBrush(s->color);
    bars->setBarsGroup(m_group);
    QVector<double> vals(nb, 0.0);
    for (int i = 0; i < nb && i < s->values.size(); ++i) vals[i] = s->values[i];
    bars->setData(keys, vals, true);
    bars->addToLegend();
    QVector<double> errs(nb, 0.0);
    for (int i = 0; i < nb && i < s->errors.size(); ++i) errs[i] = s->errors[i];
    if (!s->errors.isEmpty()) {
      auto* eb = new QCPErrorBars(m_plot->xAxis, m_plot->yAxis);
      eb->removeFromLegend();
      eb->setDataPlottable(bars);
      eb->setData(errs);
      eb->setPen(QPen(Qt::black, 1.2));
      eb->setWhiskerWidth(std::clamp(60.0 / (nb * ns + 1), 3.0, 9.0));
    }
    for (int i = 0; i < nb; ++i) {
      if (!std::isfinite(vals[i])) continue;
      top = std::max(top, vals[i] + std::abs(errs[i]));
      bottom = std::min(bottom, vals[i] - std::abs(errs[i]));
    }
  }

  const bool haveCounts = !m_counts.isEmpty() && nb > 0;
  m_plot->yAxis2->setVisible(haveCounts && m_countsMode == CountsMode::SecondAxis);
  if (haveCounts && m_countsMode == CountsMode::SecondAxis) {
    m_countGraph = new QCPGraph(m_plot->xAxis, m_plot->yAxis2);
    m_countGraph->setName(m_countsLabel);
    QVector<double> cv;
    for (int i = 0; i < nb; ++i) cv << (i < m_counts.size() ? m_counts[i] : 0);
    m_countGraph->setData(keys, cv, true);
    m_countGraph->setPen(QPen(QColor(60, 60, 60), 1.2, Qt::DashLine));
    m_countGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
    m_countGraph->addToLegend();
    m_plot->yAxis2->setLabel(m_countsLabel);
    m_plot->yAxis2->setTickLabels(true);
    double cmax = *std::max_element(cv.constBegin(), cv.constEnd());
    m_plot->yAxis2->setRange(0, std::max(1.0, cmax * 1.15));
  } else if (haveCounts && m_countsMode == CountsMode::Text) {
    for (int i = 0; i < nb && i < m_counts.size(); ++i) {
      auto* t = new QCPItemText(m_plot);
      t->position->setTypeX(QCPItemPosition::ptPlotCoords);
      t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
      t->position->setAxes(m_plot->xAxis, m_plot->yAxis);
      t->position->setAxisRect(m_plot->axisRect());
      t->position->setCoords(i + 1, 0.02);
      t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
      t->setText(QStringLiteral("%1=%2").arg(m_countsLabel).arg(m_counts[i]));
      QFont f = font();
      f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.85));
      t->setFont(f);
      t->setColor(QColor(70, 70, 70));
    }
  }

  // y range: room for the counts text at the top.
  double lo = std::isnan(m_yLo) ? bottom : m_yLo;
  double hi =
      std::isnan(m_yHi) ? (top > 0 ? top * (haveCounts && m_countsMode == CountsMode::Text ? 1.22 : 1.1) : 1.0) : m_yHi;
  if (hi <= lo) hi = lo + 1.0;
  m_plot->yAxis->setRange(lo, hi);
  m_plot->legend->setVisible(m_legend && (m_series.size() > 1 || m_countGraph));
  requestReplot();
}

QString BarChart::toCsv() const {
  QString out = QStringLiteral("bucket,series,value,count,error\n");
  for (const Series* s : m_series) {
    for (int i = 0; i < m_buckets.size(); ++i) {
      const double v = i < s->values.size() ? s->values[i] : std::nan("");
      out += csvField(m_buckets[i]) + QLatin1Char(',') + csvField(s->id) + QLatin1Char(',') + csvNumber(v) +
             QLatin1Char(',') + (i < m_counts.size() ? QString::number(m_counts[i]) : QString()) + QLatin1Char(',') +
             (i < s->errors.size() ? csvNumber(s->errors[i]) : QString()) + QLatin1Char('\n');
    }
  }
  return out;
}

}  // namespace csw
