#include "analysis_panel.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QShortcut>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTextBrowser>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>

#include "core_bridge.h"
#include "curve_plot.h"
#include "figure_bridge.h"
#include "heatmap_view.h"
#include "json_file.h"
#include "qcp.h"
#include "run_table.h"
#include "worker_thread.h"

namespace gui {

namespace {
QString taskOfRun(const QString& dir) {
  RunInfo r;
  if (!readRun(dir, &r)) return QString();
  return r.config.value(QStringLiteral("task")).toObject().value(QStringLiteral("name")).toString();
}
}  // namespace

AnalysisPanel::AnalysisPanel(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<gui::AnalysisJob>("gui::AnalysisJob");
  qRegisterMetaType<gui::AnalysisOutcome>("gui::AnalysisOutcome");
  buildUi();

  m_worker = startWorkerThread<AnalysisWorker>(this, &m_thread, QStringLiteral("analysis"));
  connect(this, &AnalysisPanel::requestJob, m_worker, &AnalysisWorker::compute, Qt::QueuedConnection);
  connect(m_worker, &AnalysisWorker::finished, this, &AnalysisPanel::onOutcome, Qt::QueuedConnection);

  m_debounce = new QTimer(this);
  m_debounce->setSingleShot(true);
  m_debounce->setInterval(120);
  connect(m_debounce, &QTimer::timeout, this, &AnalysisPanel::compute);
}

AnalysisPanel::~AnalysisPanel() { stopWorkerThread(m_thread); }

void AnalysisPanel::populateKinds() {
  try {
    m_kinds = analysisKinds();
  } catch (const std::exception& e) {
    showMessage(QString::fromUtf8(e.what()), true);
  }
  QSignalBlocker block(m_kind);
  m_kind->clear();
  for (const AnalysisKindInfo& k : m_kinds) {
    m_kind->addItem(k.title, k.name);
    m_kind->setItemData(m_kind->count() - 1, k.help, Qt::ToolTipRole);
  }
  onKindChanged();
}

// ---- runs ----------------------------------------------------------------------

namespace {
constexpr int kTaskRole = Qt::UserRole + 1;  // the run's task.name, in the Run combo's items
}  // namespace

void AnalysisPanel::setWorkspace(const QString& dir) {
  m_workspace = dir;
  refreshRuns();
}

void AnalysisPanel::refreshRuns() {
  const QString a = currentRun(), b = secondRun();
  QVector<RunInfo> runs = m_workspace.isEmpty() ? QVector<RunInfo>() : scanWorkspace(m_workspace);
  {
    QSignalBlocker ba(m_runA);
    m_runA->clear();
    for (const RunInfo& r : runs) {
      const QString task = r.config.value(QStringLiteral("task")).toObject().value(QStringLiteral("name")).toString();
      const QString cell = r.config.value(QStringLiteral("model")).toObject().value(QStringLiteral("cell")).toString();
      // The run's label first, as the Compare tab names it; the directory after it.
      const QString name = r.label.isEmpty() ? r.name : QStringLiteral("%1  (%2)").arg(r.label, r.name);
      m_runA->addItem(QStringLiteral("%1  [%2, %3]").arg(name, task, cell), r.dir);
      m_runA->setItemData(m_runA->count() - 1, r.dir, Qt::ToolTipRole);
      m_runA->setItemData(m_runA->count() - 1, task, kTaskRole);
    }
    int ia = m_runA->findData(a);
    m_runA->setCurrentIndex(ia >= 0 ? ia : (m_runA->count() > 0 ? 0 : -1));
  }
  fillSecondRuns(b);
  // Keep the slider where it is when the run and its checkpoints are unchanged.
  bool same = currentRun() == a && !a.isEmpty();
  if (same) {
    const QList<CheckpointEntry> now = runCheckpoints(a);
    same = now.size() == m_checkpoints.size();
    for (int i = 0; same && i < now.size(); ++i)
      same = now[i].id == m_checkpoints[i].id && now[i].step == m_checkpoints[i].step;
  }
  if (!same) onRunChanged();
}

void AnalysisPanel::showEvent(QShowEvent* ev) {
  QWidget::showEvent(ev);
  if (!m_workspace.isEmpty()) refreshRuns();
}

QStringList AnalysisPanel::runDirs() const {
  QStringList out;
  for (int i = 0; i < m_runA->count(); ++i) out << m_runA->itemData(i).toString();
  return out;
}

static int findRun(QComboBox* box, const QString& dir) {
  const QString want = QFileInfo(dir).absoluteFilePath();
  for (int i = 0; i < box->count(); ++i)
    if (!box->itemData(i).toString().isEmpty() && QFileInfo(box->itemData(i).toString()).absoluteFilePath() == want)
      return i;
  return -1;
}

bool AnalysisPanel::selectRun(const QString& dir) {
  int i = findRun(m_runA, dir);
  if (i < 0) return false;
  m_runA->setCurrentIndex(i);
  return true;
}

bool AnalysisPanel::selectSecondRun(const QString& dir) {
  if (dir.isEmpty()) {
    m_runB->setCurrentIndex(0);
    return true;
  }
  int i = findRun(m_runB, dir);
  if (i < 0) return false;
  m_runB->setCurrentIndex(i);
  return true;
}

void AnalysisPanel::fillSecondRuns(const QString& keep) {
  // "Compare with" offers the other runs of the analysed run's task (comparing a run with
  // itself says nothing, and a classifier's analysis is no partner for a language model's);
  // it keeps its choice when that is still one of them.
  QSignalBlocker bb(m_runB);
  m_runB->clear();
  m_runB->addItem(QStringLiteral("(none)"), QString());
  const QString a = QFileInfo(currentRun()).absoluteFilePath();
  const QString task = m_runA->currentIndex() >= 0 ? m_runA->currentData(kTaskRole).toString() : QString();
  for (int i = 0; i < m_runA->count(); ++i) {
    const QString dir = m_runA->itemData(i).toString();
    if (!currentRun().isEmpty() && QFileInfo(dir).absoluteFilePath() == a) continue;
    if (!task.isEmpty() && m_runA->itemData(i, kTaskRole).toString() != task) continue;
    m_runB->addItem(m_runA->itemText(i), dir);
  }
  const int ib = m_runB->findData(keep);
  m_runB->setCurrentIndex(ib >= 0 ? ib : 0);
}

QStringList AnalysisPanel::secondRunChoices() const {
  QStringList out;
  for (int i = 1; i < m_runB->count(); ++i) out << m_runB->itemData(i).toString();
  return out;
}

QString AnalysisPanel::currentRun() const { return m_runA->currentData().toString(); }
QString AnalysisPanel::secondRun() const { return m_runB->currentData().toString(); }

void AnalysisPanel::onRunChanged() {
  const QString dir = currentRun();
  fillSecondRuns(secondRun());
  QString err;
  m_checkpoints = dir.isEmpty() ? QList<CheckpointEntry>() : runCheckpoints(dir, &err);
  // Enable only the analyses that apply to the run's task and cell (a greyed-out one says why).
  const QString task = dir.isEmpty() ? QString() : taskOfRun(dir);
  m_runTask = task;
  const QJsonObject section = dir.isEmpty() ? QJsonObject()
                                            : readJsonObjectFile(QDir(dir).filePath(QStringLiteral("config.json")))
                                                  .value(QStringLiteral("model"))
                                                  .toObject();
  const QString cell = section.value(QStringLiteral("cell")).toString();
  const QString base = section.value(QStringLiteral("base")).toString();
  auto applies = [&](const AnalysisKindInfo& k) {
    return (task.isEmpty() || k.tasks.contains(task)) && kindAppliesToCell(k, cell, base);
  };
  if (auto* model = qobject_cast<QStandardItemModel*>(m_kind->model()))
    for (int i = 0; i < m_kinds.size() && i < model->rowCount(); ++i) {
      const AnalysisKindInfo& k = m_kinds[i];
      model->item(i)->setEnabled(applies(k));
      QString why;
      if (!task.isEmpty() && !k.tasks.contains(task))
        why = QStringLiteral("Not for a %1 run (applies to: %2)").arg(task, k.tasks.join(QStringLiteral(", ")));
      else if (!kindAppliesToCell(k, cell, base))
        why = QStringLiteral("Not for a %1 run (needs a cell among: %2)").arg(cell, k.cells.join(QStringLiteral(", ")));
      model->item(i)->setToolTip(why.isEmpty() ? k.help : why);
    }
  // A kind that does not apply to this run (relevance on a cloze run, channel attention on a
  // satMZU run): the first one that does.
  if (!task.isEmpty() && kindInfo() && !applies(*kindInfo()))
    for (const AnalysisKindInfo& k : m_kinds)
      if (applies(k)) {
        setKind(k.name);
        break;
      }
  updateInputsVisibility();
  {
    QSignalBlocker b(m_slider);
    m_slider->setRange(0, std::max(0, int(m_checkpoints.size()) - 1));
    // Start at the best checkpoint when there is one, else the last.
    int start = int(m_checkpoints.size()) - 1;
    for (int i = 0; i < m_checkpoints.size(); ++i)
      if (m_checkpoints[i].best) start = i;
    m_slider->setValue(std::max(0, start));
  }
  m_slider->setEnabled(m_checkpoints.size() > 1 && !(kindInfo() && kindInfo()->overTraining));
  if (m_checkpoints.isEmpty())
    m_checkpointLabel->setText(dir.isEmpty() ? QStringLiteral("no run") : QStringLiteral("no checkpoints: ") + err);
  loadTrainingCurve();
  onSliderMoved(m_slider->value());
}

void AnalysisPanel::loadTrainingCurve() {
  m_curve->clear();
  const QString dir = currentRun();
  if (dir.isEmpty()) return;
  RunInfo info;
  readRun(dir, &info);
  QString metric = info.summary.value(QStringLiteral("primary_metric")).toString();
  const QVector<MetricPoint> pts = readMetricsFile(QDir(dir).filePath(QStringLiteral("metrics.jsonl")));
  if (metric.isEmpty())
    for (const MetricPoint& p : pts)
      if (p.eval && !p.values.isEmpty()) {
        metric = p.values.front().first;
        break;
      }
  QVector<double> xs, ys, lx, ly;
  for (const MetricPoint& p : pts) {
    if (p.eval && p.split == QLatin1String("valid") && p.has(metric)) {
      xs << double(p.step);
      ys << p.value(metric, std::nan(""));
    } else if (!p.eval && p.has(QStringLiteral("loss"))) {
      lx << double(p.step);
      ly << p.value(QStringLiteral("loss"), std::nan(""));
    }
  }
  if (!xs.isEmpty()) {
    m_curve->addSeries(QStringLiteral("valid"), QStringLiteral("valid %1").arg(metric));
    m_curve->setSeries(QStringLiteral("valid"), xs, ys);
    m_curve->setYLabel(QStringLiteral("valid %1").arg(metric));
  } else {
    m_curve->addSeries(QStringLiteral("loss"), QStringLiteral("train loss"));
    m_curve->setSeries(QStringLiteral("loss"), lx, ly);
    m_curve->setYLabel(QStringLiteral("train loss"));
  }
  // The x axis covers the training range (from step 0 to the last step logged or reached) and
  // every checkpoint the slider can select, with a little room left and right: the marker is
  // in view at each stop, however few validation points there are.
  double lo = 0, hi = info.summary.value(QStringLiteral("step")).toDouble(0);
  for (const MetricPoint& p : pts) hi = std::max(hi, double(p.step));
  for (const CheckpointEntry& c : m_checkpoints)
    if (c.step >= 0) {
      lo = std::min(lo, double(c.step));
      hi = std::max(hi, double(c.step));
    }
  const double pad = std::max(1.0, (hi - lo) * 0.04);
  m_curve->setXExtent(lo - pad, hi + pad);
  m_curve->resetView();
  updateMarker();
  m_curve->plot()->replot(QCustomPlot::rpQueuedReplot);
}

// ---- kinds and inputs ----------------------------------------------------------

QStringList AnalysisPanel::kindNames() const {
  QStringList out;
  for (const auto& k : m_kinds) out << k.name;
  return out;
}

bool AnalysisPanel::setKind(const QString& name) {
  const int i = m_kind->findData(name);
  if (i < 0) return false;
  m_kind->setCurrentIndex(i);
  return true;
}

QString AnalysisPanel::kind() const { return m_kind->currentData().toString(); }

const AnalysisKindInfo* AnalysisPanel::kindInfo() const {
  const QString k = kind();
  for (const auto& i : m_kinds)
    if (i.name == k) return &i;
  return nullptr;
}

QString AnalysisPanel::helpText() const { return m_help->toPlainText(); }

void AnalysisPanel::onKindChanged() {
  const AnalysisKindInfo* k = kindInfo();
  if (k) {
    QString html = QStringLiteral("<b>%1</b>: %2.<br/><br/>%3")
                       .arg(k->title.toHtmlEscaped(), k->help.toHtmlEscaped(), k->caption.toHtmlEscaped());
    if (k->multiRun) html += QStringLiteral("<br/><br/><i>Accepts a second run (Compare with).</i>");
    if (k->overTraining) html += QStringLiteral("<br/><br/><i>Computed over all the run's checkpoints.</i>");
    m_help->setHtml(html);
  } else {
    m_help->clear();
  }
  updateInputsVisibility();
  m_slider->setEnabled(m_checkpoints.size() > 1 && !(k && k->overTraining));
  m_runB->setEnabled(k && k->multiRun);
}

void AnalysisPanel::updateInputsVisibility() {
  const AnalysisKindInfo* k = kindInfo();
  auto show = [](const QList<QWidget*>& ws, bool on) {
    for (QWidget* w : ws) w->setVisible(on);
  };
  show(m_rowText, k && k->needsText);
  show(m_rowK, k && k->usesLastK);
  show(m_rowPos, k && k->usesPosition);
  show(m_rowSplit, k && k->usesSplit);
  show(m_rowEdges, k && k->usesEdges);
  show(m_rowBins, k && k->usesBins);
  show(m_rowCmap, k && k->colourMap);
  // The text's meaning follows the run's task and the kind (a seq2seq source, a pair).
  QString textHint =
      QStringLiteral("Text to analyse (empty: the start of the first run's valid split, the same for both runs)");
  if (k && k->name == QLatin1String("channel_attention_decoder"))
    textHint = QStringLiteral(
        "SOURCE ||| TARGET (teacher forcing) or a source alone (the greedy decode); empty: the "
        "first source of the run's valid split");
  else if (m_runTask == QLatin1String("seq2seq"))
    textHint = QStringLiteral("A source sentence (empty: the first source of the run's valid split)");
  m_text->setPlaceholderText(textHint);
  if (k && k->usesPosition) {
    const PositionInput in = positionInputFor(k->name);
    if (m_positionLabel->text() != in.label) {
      // Another meaning (a character <-> a question): its own range and default value.
      m_positionLabel->setText(in.label);
      m_positionLabel->setToolTip(in.toolTip);
      m_position->setToolTip(in.toolTip);
      m_position->setSpecialValueText(in.specialValueText);
      m_position->setMinimum(in.minimum);
      m_position->setValue(in.minimum);
    }
  }
  if (k && k->defaultSplit != QLatin1String("test") && m_split->currentText() == QLatin1String("test"))
    m_split->setCurrentText(k->defaultSplit);
}

void AnalysisPanel::setText(const QString& text) { m_text->setPlainText(text); }
QString AnalysisPanel::text() const { return m_text->toPlainText(); }
void AnalysisPanel::setLastK(int k) { m_lastK->setValue(k); }
void AnalysisPanel::setPosition(int index) { m_position->setValue(index); }
int AnalysisPanel::position() const { return m_position->value(); }
QString AnalysisPanel::textPlaceholder() const { return m_text->placeholderText(); }
QString AnalysisPanel::positionLabel() const { return QString(m_positionLabel->text()).remove(QLatin1Char('&')); }
void AnalysisPanel::setSplit(const QString& split) { m_split->setCurrentText(split); }
void AnalysisPanel::setColorMap(const QString& name) { m_colorMap->setCurrentText(name); }

void AnalysisPanel::setEdges(const QVector<qint64>& edges) {
  QStringList parts;
  for (qint64 e : edges) parts << QString::number(e);
  m_edges->setText(parts.join(QLatin1Char(',')));
}

QVector<qint64> AnalysisPanel::edges() const {
  QVector<qint64> out;
  for (const QString& p : m_edges->text().split(QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts)) {
    bool ok = false;
    const qint64 v = p.toLongLong(&ok);
    if (ok) out << v;
  }
  return out;
}

// ---- checkpoints -----------------------------------------------------------------

QString AnalysisPanel::currentCheckpointId() const {
  const int i = m_slider->value();
  return i >= 0 && i < m_checkpoints.size() ? m_checkpoints[i].id : QStringLiteral("best");
}

qint64 AnalysisPanel::currentCheckpointStep() const {
  const int i = m_slider->value();
  return i >= 0 && i < m_checkpoints.size() ? m_checkpoints[i].step : -1;
}

void AnalysisPanel::previousCheckpoint() { m_slider->setValue(m_slider->value() - 1); }
void AnalysisPanel::nextCheckpoint() { m_slider->setValue(m_slider->value() + 1); }

void AnalysisPanel::onSliderMoved(int index) {
  if (index >= 0 && index < m_checkpoints.size())
    m_checkpointLabel->setText(
        QStringLiteral("%1  (%2 of %3)").arg(m_checkpoints[index].label).arg(index + 1).arg(m_checkpoints.size()));
  updateMarker();
  if (m_autoRecompute && !(kindInfo() && kindInfo()->overTraining)) m_debounce->start();
}

void AnalysisPanel::updateMarker() {
  const qint64 step = currentCheckpointStep();
  if (step >= 0) m_curve->setMarker(double(step));
  else m_curve->clearMarker();
  m_curve->replotIfDirty();
}

// ---- computing -------------------------------------------------------------------

AnalysisJob AnalysisPanel::currentJob() const {
  AnalysisJob j;
  j.kind = kind();
  const AnalysisKindInfo* k = kindInfo();
  if (!currentRun().isEmpty()) j.runs << currentRun();
  const QString b = secondRun();
  j.checkpoint = currentCheckpointId();
  if (k && k->multiRun && !b.isEmpty() && b != currentRun()) {
    j.runs << b;
    // Run B at its checkpoint nearest to run A's step (its best when A has no step).
    QString bId = QStringLiteral("best");
    const qint64 step = currentCheckpointStep();
    const QList<CheckpointEntry> bc = runCheckpoints(b);
    qint64 bestDist = -1;
    for (const CheckpointEntry& e : bc) {
      if (step < 0 || e.step < 0) continue;
      const qint64 d = std::abs(e.step - step);
      if (bestDist < 0 || d < bestDist) {
        bestDist = d;
        bId = e.id;
      }
    }
    j.checkpoints = {j.checkpoint, bId};
  }
  j.text = m_text->toPlainText();
  j.lastK = m_lastK->value();
  j.position = m_position->value();
  j.split = m_split->currentText();
  j.edges = edges();
  j.bins = m_bins->value();
  return j;
}

void AnalysisPanel::compute() {
  m_debounce->stop();
  if (currentRun().isEmpty()) {
    showMessage(QStringLiteral("No run to analyse: train one first or open a workspace with runs."), true);
    Q_EMIT computed(false);
    return;
  }
  if (!m_edges->text().trimmed().isEmpty() && edges().size() < 2) {
    showMessage(QStringLiteral("Bucket edges: give at least two increasing numbers, e.g. 0,10,20,40"), true);
    Q_EMIT computed(false);
    return;
  }
  m_autoRecompute = true;
  submit(currentJob());
}

void AnalysisPanel::fillDefaultText() {
  if (currentRun().isEmpty()) return;
  AnalysisJob j;
  j.type = AnalysisJob::Type::DefaultText;
  j.runs << currentRun();
  j.checkpoint = currentCheckpointId();
  submit(j);
}

void AnalysisPanel::submit(const AnalysisJob& job) {
  AnalysisJob j = job;
  j.id = m_nextId++;
  if (m_busy) {
    m_pending = j;  // only the newest request waits
    return;
  }
  m_busy = true;
  m_computeButton->setEnabled(false);
  m_status->setStyleSheet(QString());
  m_status->setText(
      j.type == AnalysisJob::Type::DefaultText
          ? QStringLiteral("Reading the corpus...")
          : QStringLiteral("Computing %1 at %2...").arg(kindInfo() ? kindInfo()->title : j.kind, j.checkpoint));
  Q_EMIT requestJob(j);
}

void AnalysisPanel::onOutcome(const gui::AnalysisOutcome& o) {
  m_busy = false;
  m_computeButton->setEnabled(true);
  m_lastSeconds = o.seconds;
  bool ok = o.ok;
  if (!o.ok) {
    m_warnings.clear();
    m_lastError = o.error;
    showMessage(o.error, true);
  } else if (o.job.type == AnalysisJob::Type::DefaultText) {
    m_text->setPlainText(o.text);
    showMessage(QStringLiteral("Text from the run's corpus (start of the valid split)."), false);
  } else {
    QString ckLabel = o.job.checkpoint;
    for (const CheckpointEntry& e : m_checkpoints)
      if (e.id == o.job.checkpoint) ckLabel = e.label;
    const AnalysisKindInfo* k = nullptr;
    for (const auto& i : m_kinds)
      if (i.name == o.job.kind) k = &i;
    QString title = k ? k->title : o.job.kind;
    if (!(k && k->overTraining) && !o.job.runs.isEmpty()) {
      title += QStringLiteral(" — %1 at %2").arg(QFileInfo(o.job.runs.front()).fileName(), ckLabel);
      // The second run at its own checkpoint: both in the title (the caption names the steps).
      if (o.job.runs.size() > 1 && o.job.checkpoints.size() == o.job.runs.size())
        title += QStringLiteral(" vs %1 at %2")
                     .arg(QFileInfo(o.job.runs[1]).fileName(),
                          QString(o.job.checkpoints[1]).replace(QLatin1Char('_'), QLatin1Char(' ')));
    }
    // The figure (titled) and the result's warnings; a result that cannot be drawn: its error.
    QStringList warnings;
    QString error;
    if (csf::Figure* fig = makeAnalysisFigure(o, m_colorMap->currentText(), title, &warnings, &error)) {
      showFigure(fig);
      m_lastError.clear();
      m_warnings = warnings;
      if (m_warnings.isEmpty()) {
        showMessage(QStringLiteral("Computed in %1 s.").arg(o.seconds, 0, 'f', 2), false);
      } else {
        // Loud: what the reader must not miss, above the figure's caption too.
        m_status->setText(QStringLiteral("Computed in %1 s. Warning: %2")
                              .arg(o.seconds, 0, 'f', 2)
                              .arg(m_warnings.join(QStringLiteral(" Warning: "))));
        m_status->setStyleSheet(QStringLiteral("color: #b35c00; font-weight: bold;"));
      }
      ++m_computed;
    } else {
      ok = false;
      m_lastError = error;
      showMessage(m_lastError, true);
    }
  }
  Q_EMIT computed(ok);
  if (m_pending) {
    const AnalysisJob next = *m_pending;
    m_pending.reset();
    submit(next);
  }
}

void AnalysisPanel::showFigure(csf::Figure* fig) {
  QWidget* old = m_figureArea->takeWidget();
  if (old) old->deleteLater();
  m_figure = fig;
  m_figureArea->setWidget(figureWidget(fig));
}

void AnalysisPanel::showMessage(const QString& text, bool error) {
  m_status->setText(text);
  m_status->setStyleSheet(error ? QStringLiteral("color: #b00020; font-weight: bold;") : QString());
  if (error) {
    // The figure area shows the message too, instead of a stale figure.
    QWidget* old = m_figureArea->takeWidget();
    if (old) old->deleteLater();
    m_figure = nullptr;
    auto* label = new QLabel(text);
    label->setObjectName(QStringLiteral("analysisError"));
    label->setWordWrap(true);
    label->setAlignment(Qt::AlignCenter);
    label->setStyleSheet(QStringLiteral("color: #b00020; font-size: 12pt; padding: 20px;"));
    m_figureArea->setWidget(label);
  }
}

QString AnalysisPanel::statusText() const { return m_status->text(); }

// ---- export --------------------------------------------------------------------

bool AnalysisPanel::exportTo(const QString& path, QString* error) {
  if (!m_figure) {
    if (error) *error = QStringLiteral("nothing to export: compute an analysis first");
    return false;
  }
  return exportAnalysisFigure(m_figure, path, error);
}

QString AnalysisPanel::defaultExportPath(const QString& suffix) const {
  const QString run = currentRun();
  QString dir = run;
  if (dir.isEmpty() || !QFileInfo(dir).isDir()) dir = m_workspace;
  if (dir.isEmpty() || !QFileInfo(dir).isDir()) dir = QDir::homePath();
  const QString base = QStringLiteral("%1_%2_%3.%4")
                           .arg(run.isEmpty() ? QStringLiteral("figure") : QFileInfo(run).fileName(), kind(),
                                currentCheckpointId(), suffix);
  return QDir(dir).filePath(base);
}

void AnalysisPanel::exportInteractive(const QString& filter, const QString& suffix) {
  if (!m_figure) {
    showMessage(QStringLiteral("Nothing to export: compute an analysis first (Ctrl+Return)."), true);
    return;
  }
  const QString path =
      QFileDialog::getSaveFileName(this, QStringLiteral("Export figure"), defaultExportPath(suffix),
                                   filter + QStringLiteral(";;PNG (*.png);;PDF (*.pdf);;SVG (*.svg);;CSV (*.csv)"));
  if (path.isEmpty()) return;
  QString err;
  if (exportTo(path, &err)) m_status->setText(QStringLiteral("Wrote %1").arg(path));
  else m_status->setText(QStringLiteral("Export failed: %1").arg(err));
}

}  // namespace gui
