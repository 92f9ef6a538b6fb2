// CurvePlot: construction, series and their data, smoothing, bands, export (curve_plot.h; the
// reference lines, legend and marker are curve_plot_marks.cpp's, axes, view and hover curve_plot_view.cpp's).
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

bool isSorted(const QVector<double>& xs, int n) {
  for (int i = 1; i < n; ++i)
    if (xs[i] < xs[i - 1]) return false;
  return true;
}
}  // namespace

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

}  // namespace csw
