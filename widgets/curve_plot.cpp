#include "curve_plot.h"

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

// TensorBoard's debiased EMA, one value at a time (a member of CurvePlot::Series, so not in an
// anonymous namespace).
namespace curve_plot_detail {
struct Ema {
  double last = 0.0;
  int n = 0;
  double push(double y, double f) {
    if (!std::isfinite(y)) return y;
    last = last * f + (1.0 - f) * y;
    ++n;
    const double debias = 1.0 - std::pow(f, n);
    return debias > 0 ? last / debias : y;
  }
};
}  // namespace curve_plot_detail
using curve_plot_detail::Ema;

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

bool isSorted(const QVector<double>& xs, int n) {
  for (int i = 1; i < n; ++i)
    if (xs[i] < xs[i - 1]) return false;
  return true;
}
}  // namespace

struct CurvePlot::Series {
  QString id, label;
  QColor color;
  QCPGraph* raw = nullptr;
  QCPGraph* smooth = nullptr;
  QCPGraph* bandLo = nullptr;
  QCPGraph* bandHi = nullptr;
  Ema ema;
  int smoothedCount = 0;
  bool smoothReset = true;
  bool sparse = false;  // an evaluation series: markers, never smoothed
};

struct CurvePlot::RefLine {
  QString id, label;
  double y = 0;
  QColor color;
  QCPItemLine* line = nullptr;
  QCPItemText* text = nullptr;
};

CurvePlot::CurvePlot(QWidget* parent) : PlotView(Kind::CustomPlot, parent) {
  m_plot->setAutoAddPlottableToLegend(false);
  m_plot->setMouseTracking(true);  // hover tooltips without a pressed button
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->setNoAntialiasingOnDrag(true);
  m_plot->setPlottingHint(QCP::phFastPolylines, true);
  m_plot->setNotAntialiasedElements(QCP::aeGrid | QCP::aeSubGrid | QCP::aeZeroLine | QCP::aeFills);
  m_plot->setMinimumSize(200, 150);
  m_plot->addLayer(QStringLiteral("bands"), m_plot->layer(QStringLiteral("grid")), QCustomPlot::limAbove);
  m_plot->addLayer(QStringLiteral("raw"), m_plot->layer(QStringLiteral("bands")), QCustomPlot::limAbove);
  m_plot->addLayer(QStringLiteral("marker"), m_plot->layer(QStringLiteral("main")), QCustomPlot::limAbove);
  m_plot->setCurrentLayer(QStringLiteral("main"));
  m_plot->legend->setVisible(true);
  m_plot->legend->setBrush(QColor(255, 255, 255, 210));
  m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  m_plot->xAxis2->setVisible(false);
  m_plot->yAxis2->setVisible(false);

  m_marker = new QCPItemLine(m_plot);
  m_marker->setLayer(QStringLiteral("marker"));
  for (QCPItemPosition* p : {m_marker->start, m_marker->end}) {
    p->setAxes(m_plot->xAxis, m_plot->yAxis);
    p->setAxisRect(m_plot->axisRect());
    p->setTypeX(QCPItemPosition::ptPlotCoords);
    p->setTypeY(QCPItemPosition::ptAxisRectRatio);
  }
  m_marker->setPen(QPen(QColor(200, 30, 30), 1.5, Qt::DashLine));
  m_marker->setVisible(false);

  // Toolbar: smoothing slider, log axes, legend, reset.
  m_toolbar = new QWidget(this);
  auto* tb = new QHBoxLayout(m_toolbar);
  tb->setContentsMargins(4, 2, 4, 2);
  tb->addWidget(new QLabel(tr("Smoothing"), m_toolbar));
  m_smoothSlider = new QSlider(Qt::Horizontal, m_toolbar);
  m_smoothSlider->setObjectName(QStringLiteral("smoothingSlider"));
  m_smoothSlider->setRange(0, 99);
  m_smoothSlider->setToolTip(tr("Exponential moving average factor (debiased, as in TensorBoard)"));
  m_smoothSlider->setMaximumWidth(160);
  tb->addWidget(m_smoothSlider);
  m_smoothLabel = new QLabel(QStringLiteral("0.00"), m_toolbar);
  m_smoothLabel->setMinimumWidth(32);
  tb->addWidget(m_smoothLabel);
  tb->addSpacing(8);
  m_logX = new QCheckBox(tr("log x"), m_toolbar);
  m_logY = new QCheckBox(tr("log y"), m_toolbar);
  m_legendBox = new QCheckBox(tr("legend"), m_toolbar);
  m_legendBox->setChecked(true);
  tb->addWidget(m_logX);
  tb->addWidget(m_logY);
  tb->addWidget(m_legendBox);
  tb->addStretch(1);
  m_resetButton = new QToolButton(m_toolbar);
  m_resetButton->setText(tr("Reset view"));
  m_resetButton->setToolTip(tr("Fit all data and follow new points (or double-click the plot)"));
  tb->addWidget(m_resetButton);
  m_fullControls = {m_smoothSlider, m_smoothLabel, m_logX, m_logY, m_legendBox, m_resetButton};
  for (QObject* o : m_toolbar->children())
    if (auto* l = qobject_cast<QLabel*>(o); l && l != m_smoothLabel) m_fullControls.prepend(l);
  // Compact mode: the same controls in one menu (see the header).
  m_menuButton = new QToolButton(m_toolbar);
  m_menuButton->setObjectName(QStringLiteral("plotViewMenu"));
  m_menuButton->setText(tr("View"));
  m_menuButton->setToolTip(tr("Smoothing, log axes, legend, reset view"));
  m_menuButton->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(m_menuButton);
  auto* smoothMenu = menu->addMenu(tr("Smoothing"));
  smoothMenu->setObjectName(QStringLiteral("smoothingMenu"));
  for (double f : {0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99}) {
    QAction* a = smoothMenu->addAction(QString::number(f, 'f', 2), this, [this, f] { setSmoothing(f); });
    a->setCheckable(true);
    a->setData(f);
  }
  connect(smoothMenu, &QMenu::aboutToShow, this, [this, smoothMenu] {
    for (QAction* a : smoothMenu->actions()) a->setChecked(std::abs(a->data().toDouble() - m_smoothing) < 1e-9);
  });
  QAction* ax = menu->addAction(tr("log x"), this, [this](bool on) { setXLog(on); });
  QAction* ay = menu->addAction(tr("log y"), this, [this](bool on) { setYLog(on); });
  QAction* al = menu->addAction(tr("legend"), this, [this](bool on) { setLegendVisible(on); });
  for (QAction* a : {ax, ay, al}) a->setCheckable(true);
  connect(menu, &QMenu::aboutToShow, this, [this, ax, ay, al] {
    ax->setChecked(m_xLog);
    ay->setChecked(m_yLog);
    al->setChecked(legendVisible());
  });
  menu->addSeparator();
  menu->addAction(tr("Reset view"), this, &CurvePlot::resetView);
  m_menuButton->setMenu(menu);
  m_menuButton->hide();
  tb->insertWidget(0, m_menuButton);
  m_fullToolbarWidth = m_toolbar->sizeHint().width();

  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->setSpacing(0);
  lay->addWidget(m_toolbar);
  lay->addWidget(m_plot, 1);

  connect(m_smoothSlider, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
  connect(m_logX, &QCheckBox::toggled, this, &CurvePlot::setXLog);
  connect(m_logY, &QCheckBox::toggled, this, &CurvePlot::setYLog);
  connect(m_legendBox, &QCheckBox::toggled, this, &CurvePlot::setLegendVisible);
  // The legend box is drawn only when it has an entry: an empty plot (or one whose series
  // have no finite point yet) shows no empty frame. The toggle keeps what the user asked for.
  connect(m_plot, &QCustomPlot::beforeReplot, this,
          [this] { m_plot->legend->setVisible(m_legendBox->isChecked() && m_plot->legend->itemCount() > 0); });
  connect(m_resetButton, &QToolButton::clicked, this, &CurvePlot::resetView);
  connect(m_plot, &QCustomPlot::mouseMove, this, &CurvePlot::onMouseMove);
  connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) { resetView(); });
  connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &CurvePlot::onRangeChanged);
  connect(m_plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &CurvePlot::onRangeChanged);
  // Reference labels are placed in pixels: again once the layout of each replot is known.
  connect(m_plot, &QCustomPlot::afterLayout, this, &CurvePlot::placeReferenceLabels);
  connect(m_plot, &QCustomPlot::afterLayout, this, &CurvePlot::placeLegend);
  m_plot->installEventFilter(this);
}

CurvePlot::~CurvePlot() {
  qDeleteAll(m_series);
  qDeleteAll(m_refLines);  // their items belong to the plot
}

void CurvePlot::resizeEvent(QResizeEvent* event) {
  PlotView::resizeEvent(event);
  updateToolbarMode();
}

void CurvePlot::updateToolbarMode() {
  const bool compact = width() < m_fullToolbarWidth;
  if (compact == m_compact && (m_menuButton->isVisibleTo(m_toolbar) == compact)) return;
  m_compact = compact;
  for (QWidget* w : m_fullControls) w->setVisible(!compact);
  m_menuButton->setVisible(compact);
}

void CurvePlot::setSeriesSparse(const QString& id, bool sparse) {
  Series* s = ensureSeries(id);
  s->sparse = sparse;
  s->smoothReset = true;
  if (sparse) s->smooth->data()->clear();
  styleSeries(*s);
  markDirty();
}

bool CurvePlot::seriesSparse(const QString& id) const {
  const Series* s = series(id);
  return s && s->sparse;
}

bool CurvePlot::seriesHasMarkers(const QString& id) const {
  const Series* s = series(id);
  return s && s->raw->scatterStyle().shape() != QCPScatterStyle::ssNone;
}

bool CurvePlot::seriesInLegend(const QString& id) const {
  const Series* s = series(id);
  return s && (m_plot->legend->hasItemWithPlottable(s->raw) || m_plot->legend->hasItemWithPlottable(s->smooth));
}

bool CurvePlot::seriesSmoothed(const QString& id) const {
  const Series* s = series(id);
  return s && smoothOn(*s);
}

bool CurvePlot::smoothOn(const Series& s) const { return m_smoothing > 0.0 && !s.sparse; }

void CurvePlot::setSubject(const QString& subject) { m_subject = subject; }

QString CurvePlot::exportCaption() const {
  QStringList lines;
  if (!m_subject.isEmpty()) lines << tr("Runs: %1.").arg(m_subject);
  QString x = xLabel().isEmpty() ? tr("x") : xLabel();
  lines << tr("x axis: %1%2.").arg(x, m_xLog ? tr(" (log scale)") : QString()) +
               (m_yLog ? tr(" y axis: log scale.") : QString());
  QStringList smoothed, raw;
  for (const Series* s : m_series) {
    if (s->raw->data()->isEmpty()) continue;
    (smoothOn(*s) ? smoothed : raw) << s->label;
  }
  if (m_smoothing <= 0.0 || smoothed.isEmpty()) {
    lines << tr("No smoothing: every point as logged.");
  } else {
    QString t = tr("Smoothing: debiased EMA, factor %1, on %2 (raw values faint behind).")
                    .arg(QString::number(m_smoothing, 'f', 2), smoothed.join(QStringLiteral(", ")));
    if (!raw.isEmpty()) t += tr(" Not smoothed: %1.").arg(raw.join(QStringLiteral(", ")));
    lines << t;
  }
  QStringList refs;
  for (const RefLine* r : m_refLines) refs << QStringLiteral("%1 = %2").arg(r->label, QString::number(r->y, 'g', 6));
  if (!refs.isEmpty()) lines << tr("Dashed reference lines: %1.").arg(refs.join(QStringLiteral("; ")));
  return lines.join(QLatin1Char('\n'));
}

bool CurvePlot::exportTo(const QString& path, const ExportOptions& options, QString* error) {
  if (path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) return PlotView::exportTo(path, options, error);
  // The caption row under the figure, for this export only.
  auto* caption =
      new QCPTextElement(m_plot, exportCaption(), QFont(font().family(), std::max(7, font().pointSize() - 1)));
  caption->setTextFlags(Qt::AlignLeft | Qt::AlignTop);
  caption->setTextColor(QColor(40, 40, 40));
  QCPLayoutGrid* layout = m_plot->plotLayout();
  const int row = layout->rowCount();
  layout->insertRow(row);
  layout->addElement(row, 0, caption);
  layout->setRowStretchFactor(row, 0.01);
  const bool ok = PlotView::exportTo(path, options, error);
  layout->remove(caption);
  layout->simplify();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
  return ok;
}

CurvePlot::Series* CurvePlot::series(const QString& id) { return m_byId.value(id, nullptr); }
const CurvePlot::Series* CurvePlot::series(const QString& id) const { return m_byId.value(id, nullptr); }

void CurvePlot::addSeries(const QString& id, const QString& label, const QColor& color) {
  Series* s = series(id);
  if (!s) {
    s = new Series;
    s->id = id;
    s->raw = m_plot->addGraph();
    s->raw->setLayer(QStringLiteral("raw"));
    s->smooth = m_plot->addGraph();
    s->smooth->setLayer(QStringLiteral("main"));
    m_series.append(s);
    m_byId.insert(id, s);
  }
  s->label = label.isEmpty() ? (s->label.isEmpty() ? id : s->label) : label;
  if (color.isValid()) s->color = color;
  else if (!s->color.isValid()) s->color = paletteColor(m_colorIndex++);
  styleSeries(*s);
  markDirty();
}

void CurvePlot::removeSeries(const QString& id) {
  Series* s = series(id);
  if (!s) return;
  m_plot->removeGraph(s->raw);
  m_plot->removeGraph(s->smooth);
  if (s->bandLo) m_plot->removeGraph(s->bandLo);
  if (s->bandHi) m_plot->removeGraph(s->bandHi);
  m_series.removeOne(s);
  m_byId.remove(id);
  delete s;
  markDirty();
}

void CurvePlot::clear() {
  const QStringList ids = seriesIds();
  for (const QString& id : ids) removeSeries(id);
  clearReferenceLines();
  clearXExtent();
  m_colorIndex = 0;
}

bool CurvePlot::hasSeries(const QString& id) const { return m_byId.contains(id); }

QStringList CurvePlot::seriesIds() const {
  QStringList ids;
  for (const Series* s : m_series) ids << s->id;
  return ids;
}

QString CurvePlot::seriesLabel(const QString& id) const {
  const Series* s = series(id);
  return s ? s->label : QString();
}

QColor CurvePlot::seriesColor(const QString& id) const {
  const Series* s = series(id);
  return s ? s->color : QColor();
}

int CurvePlot::pointCount(const QString& id) const {
  const Series* s = series(id);
  return s ? s->raw->data()->size() : 0;
}

CurvePlot::Series* CurvePlot::ensureSeries(const QString& id) {
  if (!hasSeries(id)) addSeries(id);
  return series(id);
}

void CurvePlot::styleSeries(Series& s) {
  const bool smoothed = smoothOn(s);
  QColor faint = s.color;
  faint.setAlphaF(0.25);
  s.raw->setPen(QPen(smoothed ? faint : s.color, s.sparse ? 1.5 : 1.2));
  s.raw->setName(s.label);
  s.smooth->setPen(QPen(s.color, 1.8));
  s.smooth->setName(s.label);
  s.smooth->setVisible(smoothed);
  const int n = s.raw->data()->size();
  const bool big = n > kNoAntialiasPoints;
  s.raw->setAntialiased(!big);
  s.smooth->setAntialiased(!big);
  // Few points: markers, so a single point (which a line cannot draw) is seen.
  const bool markers = s.sparse || n <= kMarkerPoints;
  s.raw->setScatterStyle(markers ? QCPScatterStyle(QCPScatterStyle::ssCircle, smoothed ? faint : s.color,
                                                   smoothed ? faint : s.color, s.sparse ? 6 : 5)
                                 : QCPScatterStyle(QCPScatterStyle::ssNone));
  // At most one legend entry per series, the curve drawn in full colour, and
  // none before the series has a point to show.
  bool anyFinite = false;
  for (auto it = s.raw->data()->constBegin(); it != s.raw->data()->constEnd() && !anyFinite; ++it)
    anyFinite = std::isfinite(it->value) && std::isfinite(it->key);
  QCPGraph* shown = smoothed ? s.smooth : s.raw;
  QCPGraph* other = smoothed ? s.raw : s.smooth;
  if (m_plot->legend->hasItemWithPlottable(other)) other->removeFromLegend();
  const bool inLegend = m_plot->legend->hasItemWithPlottable(shown);
  if (anyFinite && !inLegend) shown->addToLegend();
  else if (!anyFinite && inLegend) shown->removeFromLegend();
  if (s.bandLo) {
    QColor fill = s.color;
    fill.setAlphaF(0.18);
    s.bandLo->setPen(Qt::NoPen);
    s.bandHi->setPen(Qt::NoPen);
    s.bandHi->setBrush(fill);
    s.bandHi->setChannelFillGraph(s.bandLo);
  }
}

void CurvePlot::appendPoints(const QString& id, const QVector<double>& xs, const QVector<double>& ys) {
  Series* s = ensureSeries(id);
  const int n = std::min(xs.size(), ys.size());
  if (n == 0) return;
  auto data = s->raw->data();
  const bool sorted = isSorted(xs, n);
  const bool atEnd = data->isEmpty() || xs[0] >= (data->constEnd() - 1)->key;
  if (!(sorted && atEnd)) s->smoothReset = true;  // inserted before existing points
  if (n == xs.size() && n == ys.size()) {
    s->raw->addData(xs, ys, sorted);
  } else {
    s->raw->addData(xs.mid(0, n), ys.mid(0, n), sorted);
  }
  const bool big = data->size() > kNoAntialiasPoints;
  if (big == s->raw->antialiased()) {
    s->raw->setAntialiased(!big);
    s->smooth->setAntialiased(!big);
  }
  markDirty();
}

void CurvePlot::appendPoint(const QString& id, double x, double y) {
  appendPoints(id, QVector<double>{x}, QVector<double>{y});
}

void CurvePlot::setSeries(const QString& id, const QVector<double>& xs, const QVector<double>& ys) {
  Series* s = ensureSeries(id);
  s->raw->data()->clear();
  s->smoothReset = true;
  appendPoints(id, xs, ys);
  markDirty();
}

QVector<double> CurvePlot::seriesX(const QString& id) const {
  QVector<double> out;
  if (const Series* s = series(id)) {
    out.reserve(s->raw->data()->size());
    for (auto it = s->raw->data()->constBegin(); it != s->raw->data()->constEnd(); ++it) out << it->key;
  }
  return out;
}

QVector<double> CurvePlot::seriesY(const QString& id) const {
  QVector<double> out;
  if (const Series* s = series(id)) {
    out.reserve(s->raw->data()->size());
    for (auto it = s->raw->data()->constBegin(); it != s->raw->data()->constEnd(); ++it) out << it->value;
  }
  return out;
}

QVector<double> CurvePlot::smoothedY(const QString& id) const {
  QVector<double> out;
  if (const Series* s = series(id)) {
    for (auto it = s->smooth->data()->constBegin(); it != s->smooth->data()->constEnd(); ++it) out << it->value;
  }
  return out;
}

QVector<double> CurvePlot::smoothEma(const QVector<double>& ys, double factor) {
  factor = std::clamp(factor, 0.0, 0.999999);
  QVector<double> out(ys.size());
  Ema ema;
  for (int i = 0; i < ys.size(); ++i) out[i] = ema.push(ys[i], factor);
  return out;
}

void CurvePlot::updateSmoothing(Series& s) {
  if (!smoothOn(s)) {
    if (!s.smooth->data()->isEmpty()) s.smooth->data()->clear();
    return;
  }
  if (s.smoothReset) {
    s.smooth->data()->clear();
    s.ema = Ema();
    s.smoothedCount = 0;
    s.smoothReset = false;
  }
  auto raw = s.raw->data();
  const int n = raw->size();
  if (s.smoothedCount >= n) return;
  QVector<double> keys, vals;
  keys.reserve(n - s.smoothedCount);
  vals.reserve(n - s.smoothedCount);
  for (auto it = raw->constBegin() + s.smoothedCount; it != raw->constEnd(); ++it) {
    keys << it->key;
    vals << s.ema.push(it->value, m_smoothing);
  }
  s.smooth->addData(keys, vals, true);
  s.smoothedCount = n;
}

void CurvePlot::setBand(const QString& id, const QVector<double>& xs, const QVector<double>& lower,
                        const QVector<double>& upper) {
  Series* s = ensureSeries(id);
  if (!s->bandLo) {
    s->bandLo = m_plot->addGraph();
    s->bandHi = m_plot->addGraph();
    s->bandLo->setLayer(QStringLiteral("bands"));
    s->bandHi->setLayer(QStringLiteral("bands"));
  }
  const int n = std::min({xs.size(), lower.size(), upper.size()});
  s->bandLo->setData(xs.mid(0, n), lower.mid(0, n));
  s->bandHi->setData(xs.mid(0, n), upper.mid(0, n));
  styleSeries(*s);
  markDirty();
}

void CurvePlot::removeBand(const QString& id) {
  Series* s = series(id);
  if (!s || !s->bandLo) return;
  m_plot->removeGraph(s->bandHi);
  m_plot->removeGraph(s->bandLo);
  s->bandHi = s->bandLo = nullptr;
  markDirty();
}

bool CurvePlot::hasBand(const QString& id) const {
  const Series* s = series(id);
  return s && s->bandLo;
}

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

void CurvePlot::setXLog(bool log) {
  if (log == m_xLog) return;
  m_xLog = log;
  {
    QSignalBlocker b(m_logX);
    m_logX->setChecked(log);
  }
  m_internalRange = true;
  setAxisLog(m_plot->xAxis, log);
  m_internalRange = false;
  m_autoFit = true;
  refreshNow();
}

void CurvePlot::setYLog(bool log) {
  if (log == m_yLog) return;
  m_yLog = log;
  {
    QSignalBlocker b(m_logY);
    m_logY->setChecked(log);
  }
  m_internalRange = true;
  setAxisLog(m_plot->yAxis, log);
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
