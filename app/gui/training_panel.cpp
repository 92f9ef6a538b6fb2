#include "training_panel.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QSplitter>
#include <QVBoxLayout>
#include <cmath>

#include "core_bridge.h"
#include "curve_plot.h"
#include "figure_export.h"
#include "run_table.h"

namespace gui {

namespace {
bool isKnownKey(const QString& k) {
  for (const char* s : {"loss", "bpc", "ppl", "accuracy", "lr", "grad_norm", "throughput"})
    if (k == QLatin1String(s)) return true;
  return false;
}

// The picker's order: the papers' metrics first, then the others by name, the loss last.
int evalRank(const QString& k) {
  int i = 0;
  for (const char* s : {"bleu", "rouge1", "rouge2", "rougeL", "accuracy", "ppl", "bpc"}) {
    if (k == QLatin1String(s)) return i;
    ++i;
  }
  return k == QLatin1String("loss") ? 100 : 50;
}

QString evalTitle(const QString& k) {
  if (k == QLatin1String("bleu")) return QStringLiteral("BLEU");
  if (k == QLatin1String("rouge1")) return QStringLiteral("ROUGE-1 F1");
  if (k == QLatin1String("rouge2")) return QStringLiteral("ROUGE-2 F1");
  if (k == QLatin1String("rougeL")) return QStringLiteral("ROUGE-L F1");
  return k;
}

QString baselineName(const QString& key) {
  if (key.startsWith(QLatin1String("lead_"))) return QStringLiteral("lead baseline");
  if (key.startsWith(QLatin1String("freq_baseline_"))) return QStringLiteral("frequency baseline");
  return QStringLiteral("baseline");
}
}  // namespace

QString TrainingPanel::baselineOf(const QString& key) {
  for (const char* prefix : {"lead_", "freq_baseline_", "baseline_"})
    if (key.startsWith(QLatin1String(prefix)) && key.size() > int(qstrlen(prefix)))
      return key.mid(int(qstrlen(prefix)));
  if (key.endsWith(QLatin1String("_baseline")) && key.size() > 9) return key.left(key.size() - 9);
  return QString();
}

TrainingPanel::TrainingPanel(FigureExporter* exporter, QWidget* parent) : QWidget(parent), m_exporter(exporter) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout;
  m_runLabel = new QLabel(QStringLiteral("No run yet: configure on the left and press Start (Ctrl+R)."));
  m_runLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_xAxisCombo = new QComboBox;
  m_xAxisCombo->addItems(
      {QStringLiteral("Step"), QStringLiteral("Epoch"), QStringLiteral("Wall time"), QStringLiteral("Training FLOPs")});
  m_xAxisCombo->setToolTip(QStringLiteral("What the x axis of every curve shows"));
  connect(m_xAxisCombo, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int i) { setXAxis(static_cast<XAxis>(i)); });
  top->addWidget(m_runLabel, 1);
  top->addWidget(new QLabel(QStringLiteral("X axis:")));
  top->addWidget(m_xAxisCombo);
  v->addLayout(top);

  auto* split = new QSplitter(Qt::Vertical);
  auto* grid = new QWidget;
  auto* g = new QGridLayout(grid);
  g->setContentsMargins(0, 0, 0, 0);
  g->setSpacing(4);
  m_grid = g;
  struct Def {
    const char* id;
    const char* title;
    const char* y;
  };
  const Def defs[] = {{"metric", "Training and validation", "loss"}, {"lr", "Learning rate", "learning rate"},
                      {"grad_norm", "Gradient norm", "L2 norm"},     {"throughput", "Throughput", "units / s"},
                      {"extra", "Other metrics", "value"},           {"eval", "Validation metrics", "value"}};
  int i = 0;
  for (const Def& d : defs) {
    auto* p = m_exporter->newPlot(QString::fromLatin1(d.title), QString::fromLatin1(d.y), xAxisLabel(m_xAxis));
    m_plots.insert(QString::fromLatin1(d.id), p);
    m_plotOrder << QString::fromLatin1(d.id);
    if (i == 0) g->addWidget(p, 0, 0, 1, 2);
    else if (i <= 4) g->addWidget(p, 1 + (i - 1) / 2, (i - 1) % 2);
    ++i;
  }
  // The evaluation metrics beside the primary one (see the header), with their picker;
  // beside the main plot once such a metric is logged.
  m_evalBox = new QWidget;
  m_evalBox->setObjectName(QStringLiteral("evalMetricsBox"));
  auto* ev = new QVBoxLayout(m_evalBox);
  ev->setContentsMargins(0, 0, 0, 0);
  ev->setSpacing(2);
  auto* evTop = new QHBoxLayout;
  m_evalPicker = new QComboBox;
  m_evalPicker->setObjectName(QStringLiteral("evalMetricPicker"));
  m_evalPicker->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_evalPicker->setToolTip(
      QStringLiteral("The evaluation metric the plot shows (valid and test); a baseline the run "
                     "logs is the dashed line"));
  evTop->addWidget(new QLabel(QStringLiteral("Validation metric:")));
  evTop->addWidget(m_evalPicker);
  evTop->addStretch(1);
  ev->addLayout(evTop);
  ev->addWidget(m_plots.value(QStringLiteral("eval")), 1);
  m_evalBox->hide();
  m_plots.value(QStringLiteral("eval"))->hide();
  connect(m_evalPicker, qOverload<int>(&QComboBox::activated), this, [this] { m_evalUserPicked = true; });
  connect(m_evalPicker, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { rebuildLivePlots(); });
  g->setRowStretch(0, 3);
  g->setRowStretch(1, 2);
  g->setRowStretch(2, 2);
  m_plots.value(QStringLiteral("extra"))->hide();  // shown when a cell logs an extra metric
  // Below the plots' minimum sizes (a 1024x700 window) the grid scrolls instead of squeezing.
  auto* gridScroll = new QScrollArea;
  gridScroll->setObjectName(QStringLiteral("trainingPlotScroll"));
  gridScroll->setWidget(grid);
  gridScroll->setWidgetResizable(true);
  gridScroll->setFrameShape(QFrame::NoFrame);
  gridScroll->setMinimumHeight(160);
  split->addWidget(gridScroll);
  m_log = new QPlainTextEdit;
  m_log->setReadOnly(true);
  m_log->setMaximumBlockCount(5000);
  m_log->setPlaceholderText(QStringLiteral("The run's log appears here."));
  QFont mono(QStringLiteral("monospace"));
  mono.setStyleHint(QFont::Monospace);
  m_log->setFont(mono);
  split->addWidget(m_log);
  split->setStretchFactor(0, 5);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);
}

csw::CurvePlot* TrainingPanel::plot(const QString& name) const { return m_plots.value(name); }

QList<csw::CurvePlot*> TrainingPanel::plots() const {
  QList<csw::CurvePlot*> out;
  for (const QString& id : m_plotOrder) out << m_plots.value(id);
  return out;
}

QString TrainingPanel::logText() const { return m_log->toPlainText(); }

void TrainingPanel::appendLog(const QString& line) { m_log->appendPlainText(line); }

void TrainingPanel::resetViews() {
  for (auto* p : plots()) p->resetView();
}

void TrainingPanel::beginRun() {
  // The previous curves stay until the new run has really started (setRunInfo):
  // a Start that fails while loading the data leaves them in place.
  if (!m_pending) m_labelBeforeRun = m_failureShown ? m_labelBeforeFailure : m_runLabel->text();
  m_pending = true;
  m_failureShown = false;
  m_pendingLogs.clear();
  m_pendingPoints.clear();
  m_runLabel->setText(QStringLiteral("Preparing: loading the data and building the model..."));
}

bool TrainingPanel::failureShown() const { return m_failureShown; }
QString TrainingPanel::runLabelText() const { return m_runLabel->text(); }

void TrainingPanel::clearFailure() {
  if (!m_failureShown) return;
  m_failureShown = false;
  m_runLabel->setText(m_labelBeforeFailure);
}

void TrainingPanel::setRunInfo(const QString& runDir, const QString& metric, const QString& unit, qint64 params) {
  if (m_pending) {
    m_pending = false;
    const QStringList early = m_pendingLogs;
    const QVector<MetricPoint> earlyPoints = m_pendingPoints;
    m_pendingLogs.clear();
    m_pendingPoints.clear();
    reset();
    m_primary = metric;
    append(earlyPoints, early);
  }
  m_failureShown = false;
  m_runDir = runDir;
  m_primary = metric;
  m_runLabel->setText(QStringLiteral("<b>%1</b> &nbsp; %2 parameters")
                          .arg(QFileInfo(runDir).fileName().toHtmlEscaped(), QLocale().toString(params)));
  m_runLabel->setToolTip(runDir);
  m_plots.value(QStringLiteral("metric"))->setYLabel(metric);
  m_plots.value(QStringLiteral("throughput"))->setYLabel(unit + QStringLiteral(" / s"));
  for (auto* p : plots()) {
    p->setSubject(QFileInfo(runDir).fileName());
    p->setProperty("csRunDir", runDir);
  }
  appendLog(QStringLiteral("run directory: ") + runDir);
}

void TrainingPanel::prependHistory(const QVector<MetricPoint>& points) {
  if (points.isEmpty()) return;
  if (m_pending) {  // not started yet: drawn when it has
    m_pendingPoints = points + m_pendingPoints;
    return;
  }
  m_live = points + m_live;
  rebuildLivePlots();
}

void TrainingPanel::showFailure(const QString& message) {
  if (!m_failureShown) m_labelBeforeFailure = m_pending ? m_labelBeforeRun : m_runLabel->text();
  m_pending = false;
  m_failureShown = true;
  m_runLabel->setText(QStringLiteral("<span style='color:#c62828'>Could not train: %1</span>")
                          .arg(message.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"))));
  appendLog(QStringLiteral("error: ") + message);
}

void TrainingPanel::append(const QVector<MetricPoint>& points, const QStringList& logs) {
  if (m_pending) {  // not started yet: the previous run's curves are still shown
    m_pendingLogs << logs;
    m_pendingPoints << points;
    return;
  }
  for (const QString& l : logs) appendLog(l);
  if (noteEvalKeys(points)) {  // a metric first in the picker's order arrived: it is shown from now on
    m_live << points;
    rebuildLivePlots();
    return;
  }
  for (const MetricPoint& p : points) {
    m_live << p;
    addLivePoint(p);
  }
  for (auto* p : plots()) p->replotIfDirty();  // queued replots at most once per drain
}

void TrainingPanel::addLivePoint(const MetricPoint& p) {
  const double x = xOf(p, m_xAxis);
  if (!std::isfinite(x)) return;  // training FLOPs axis, metrics written before they were recorded
  csw::CurvePlot* metric = m_plots.value(QStringLiteral("metric"));
  const QString primary = m_primary.isEmpty() ? QStringLiteral("loss") : m_primary;
  if (p.eval) {
    const QString id = p.split.isEmpty() ? QStringLiteral("valid") : p.split;
    csw::CurvePlot* eval = m_plots.value(QStringLiteral("eval"));
    for (const auto& kv : p.values) {
      const QString base = baselineOf(kv.first);
      if (!base.isEmpty()) continue;  // drawn with its metric below
      if (kv.first != primary) {
        if (kv.first != evalMetric()) continue;
        if (!eval->hasSeries(id)) {
          eval->addSeries(id, id + QLatin1Char(' ') + kv.first);
          eval->setSeriesSparse(id);
        }
        eval->appendPoint(id, x, kv.second);
        continue;
      }
      if (!metric->hasSeries(id)) {
        metric->addSeries(id, id + QLatin1Char(' ') + primary);
        metric->setSeriesSparse(id);  // evaluation points: markers, never smoothed
      }
      metric->appendPoint(id, x, kv.second);
    }
    // Baselines: a reference line on the plot of their metric (after the series, for its colour).
    for (const auto& kv : p.values) {
      const QString base = baselineOf(kv.first);
      if (base.isEmpty() || !std::isfinite(kv.second)) continue;
      if (base == primary) drawBaseline(metric, id, kv.first, kv.second);
      else if (base == evalMetric()) drawBaseline(eval, id, kv.first, kv.second);
    }
    return;
  }
  const QString trainKey = p.has(primary) ? primary : QStringLiteral("loss");
  for (const auto& kv : p.values) {
    const QString& k = kv.first;
    if (k == trainKey) {
      if (!metric->hasSeries(QStringLiteral("train")))
        metric->addSeries(QStringLiteral("train"), QStringLiteral("train ") + trainKey);
      metric->appendPoint(QStringLiteral("train"), x, kv.second);
    } else if (k == QLatin1String("lr")) {
      m_plots.value(QStringLiteral("lr"))->appendPoint(QStringLiteral("lr"), x, kv.second);
    } else if (k == QLatin1String("grad_norm")) {
      m_plots.value(QStringLiteral("grad_norm"))->appendPoint(QStringLiteral("grad_norm"), x, kv.second);
    } else if (k == QLatin1String("throughput")) {
      m_plots.value(QStringLiteral("throughput"))->appendPoint(QStringLiteral("throughput"), x, kv.second);
    } else if (!isKnownKey(k)) {
      // Any extra numeric key a cell logs (e.g. zone_disagreement).
      csw::CurvePlot* extra = m_plots.value(QStringLiteral("extra"));
      extra->appendPoint(k, x, kv.second);
      if (extra->isHidden()) extra->show();
    }
  }
}

void TrainingPanel::drawBaseline(csw::CurvePlot* plot, const QString& split, const QString& key, double value) {
  const QColor c = plot->hasSeries(split) ? plot->seriesColor(split) : QColor();
  plot->setReferenceLine(split + QLatin1Char('|') + key, value, QStringLiteral("%1 %2").arg(split, baselineName(key)),
                         c);
}

bool TrainingPanel::noteEvalKeys(const QVector<MetricPoint>& points) {
  // Every evaluation key beside the primary metric and the baselines.
  const QString primary = m_primary.isEmpty() ? QStringLiteral("loss") : m_primary;
  // The loss beside bpc or ppl is the same measure in other units: not offered again.
  const bool lossIsPrimary = primary == QLatin1String("bpc") || primary == QLatin1String("ppl");
  QStringList keys = evalMetrics();
  bool added = false;
  for (const MetricPoint& p : points) {
    if (!p.eval) continue;
    for (const auto& kv : p.values)
      if (kv.first != primary && !(lossIsPrimary && kv.first == QLatin1String("loss")) &&
          baselineOf(kv.first).isEmpty() && !keys.contains(kv.first)) {
        keys << kv.first;
        added = true;
      }
  }
  if (!added) return false;
  std::stable_sort(keys.begin(), keys.end(), [](const QString& a, const QString& b) {
    const int ra = evalRank(a), rb = evalRank(b);
    return ra != rb ? ra < rb : a < b;
  });
  const QString before = evalMetric();
  // The first metric in the picker's order is shown until the user picks one.
  const QString keep = m_evalUserPicked && !before.isEmpty() ? before : keys.first();
  {
    QSignalBlocker block(m_evalPicker);
    m_evalPicker->clear();
    for (const QString& k : keys) m_evalPicker->addItem(evalTitle(k), k);
    m_evalPicker->setCurrentIndex(std::max(0, m_evalPicker->findData(keep)));
  }
  showEvalPlot(true);
  return evalMetric() != before;
}

void TrainingPanel::showEvalPlot(bool show) {
  if (m_evalShown == show) return;
  m_evalShown = show;
  csw::CurvePlot* metric = m_plots.value(QStringLiteral("metric"));
  m_grid->removeWidget(metric);
  m_grid->removeWidget(m_evalBox);
  if (show) {
    m_grid->addWidget(metric, 0, 0);
    m_grid->addWidget(m_evalBox, 0, 1);
  } else {
    m_grid->addWidget(metric, 0, 0, 1, 2);
  }
  m_evalBox->setVisible(show);
  m_plots.value(QStringLiteral("eval"))->setVisible(show);  // hidden itself too, like the "extra" plot
}

QStringList TrainingPanel::evalMetrics() const {
  QStringList out;
  for (int i = 0; i < m_evalPicker->count(); ++i) out << m_evalPicker->itemData(i).toString();
  return out;
}

QString TrainingPanel::evalMetric() const { return m_evalPicker->currentData().toString(); }

bool TrainingPanel::setEvalMetric(const QString& key) {
  const int i = m_evalPicker->findData(key);
  if (i < 0) return false;
  m_evalUserPicked = true;
  m_evalPicker->setCurrentIndex(i);  // rebuilds through the signal
  return true;
}

void TrainingPanel::reset() {
  m_live.clear();
  m_primary.clear();
  {
    QSignalBlocker block(m_evalPicker);
    m_evalPicker->clear();
  }
  m_evalUserPicked = false;
  showEvalPlot(false);
  for (auto* p : plots()) {
    p->clear();
    p->resetView();
    p->replotIfDirty();
  }
  m_plots.value(QStringLiteral("extra"))->hide();
  m_log->clear();
}

void TrainingPanel::rebuildLivePlots() {
  for (auto* p : plots()) {
    p->clear();
    p->setXLabel(xAxisLabel(m_xAxis));
  }
  noteEvalKeys(m_live);
  const QString shown = evalMetric();
  m_plots.value(QStringLiteral("eval"))->setYLabel(shown.isEmpty() ? QStringLiteral("value") : evalTitle(shown));
  m_plots.value(QStringLiteral("eval"))
      ->setTitle(shown.isEmpty() ? QStringLiteral("Validation metrics")
                                 : QStringLiteral("Validation ") + evalTitle(shown));
  for (const MetricPoint& p : m_live) addLivePoint(p);
  for (auto* p : plots()) {
    p->resetView();
    p->replotIfDirty();
  }
}

void TrainingPanel::setXAxis(XAxis axis) {
  if (m_xAxisCombo->currentIndex() != int(axis)) {
    m_xAxisCombo->setCurrentIndex(int(axis));  // comes back here
    return;
  }
  m_xAxis = axis;
  rebuildLivePlots();
  Q_EMIT xAxisChanged(axis);
}

bool TrainingPanel::showRun(const QString& dir) {
  RunInfo r;
  if (!readRun(dir, &r)) return false;
  m_pending = m_failureShown = false;
  reset();
  m_runDir = r.dir;
  m_primary = r.summary.value(QStringLiteral("primary_metric")).toString();
  m_runLabel->setText(QStringLiteral("<b>%1</b> &nbsp; %2, %3")
                          .arg(r.name.toHtmlEscaped(), r.status(),
                               QLocale().toString(qlonglong(r.summary.value(QStringLiteral("parameters")).toDouble())) +
                                   QStringLiteral(" parameters")));
  m_plots.value(QStringLiteral("metric"))->setYLabel(m_primary.isEmpty() ? QStringLiteral("loss") : m_primary);
  // The task's unit as a live run shows it ("questions / s"), from summary.json.
  const QString unit = r.summary.value(QStringLiteral("unit")).toString();
  m_plots.value(QStringLiteral("throughput"))
      ->setYLabel((unit.isEmpty() ? QStringLiteral("units") : unit) + QStringLiteral(" / s"));
  for (auto* p : plots()) {
    p->setSubject(r.name);
    p->setProperty("csRunDir", r.dir);
  }
  m_live = readMetricsFile(QDir(dir).filePath(QStringLiteral("metrics.jsonl")));
  QFile log(QDir(dir).filePath(QStringLiteral("log.txt")));
  if (log.open(QIODevice::ReadOnly)) m_log->setPlainText(QString::fromUtf8(log.readAll()));
  rebuildLivePlots();
  return true;
}

bool TrainingPanel::exportAllFigures(const QString& folder, QStringList* written, QString* error) {
  if (!QDir().mkpath(folder)) {
    if (error) *error = QStringLiteral("cannot create ") + folder;
    return false;
  }
  const QString prefix = m_runDir.isEmpty() ? QString() : QFileInfo(m_runDir).fileName() + QLatin1Char('-');
  bool any = false;
  for (const QString& id : m_plotOrder) {
    csw::CurvePlot* p = m_plots.value(id);
    bool hasData = false;
    for (const QString& s : p->seriesIds()) hasData = hasData || p->pointCount(s) > 0;
    if (!hasData) continue;
    for (const char* ext : {"png", "pdf", "svg", "csv"}) {
      const QString path = QDir(folder).filePath(prefix + slug(id) + QLatin1Char('.') + QLatin1String(ext));
      if (!m_exporter->exportPlot(p, path, error)) return false;
      if (written) *written << path;
      any = true;
    }
  }
  if (!any && error) *error = QStringLiteral("the training view has no curves yet");
  return any;
}

}  // namespace gui
