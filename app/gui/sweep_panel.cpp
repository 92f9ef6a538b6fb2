#include "sweep_panel.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QScrollArea>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

#include "configure_panel.h"
#include "training_controller.h"
#include "worker_thread.h"
#include "qcp.h"

namespace gui {

SweepPanel::SweepPanel(const ConfigurePanel* config, const TrainingController* training, QWidget* parent)
    : QWidget(parent), m_config(config), m_training(training) {
  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  outer->addWidget(split);
  // The sweep's definition and its progress on the left, its table, export and plot on the right,
  // built in the order the widgets were always created (tab order).
  buildDefinitionSide(split);
  buildResultSide(split);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  connectWorker();
  updateButtons();
}

// Left: the hint, the name and seeds, the grid editor, Run / Stop / Open, the progress and status.
QWidget* SweepPanel::buildDefinitionSide(QSplitter* split) {
  auto* left = new QWidget(split);
  auto* l = new QVBoxLayout(left);
  auto* hint = new QLabel(
      QStringLiteral("Base: the configuration of the Training tab. Each grid row is an option path and "
                     "comma-separated values; the first row gives the table's rows, the second its columns. "
                     "Every point x seed is an ordinary run of the workspace; Run again resumes a stopped sweep."),
      left);
  hint->setWordWrap(true);
  l->addWidget(hint);
  auto* form = new QFormLayout;
  m_name = new QLineEdit(QStringLiteral("sweep-1"), left);
  m_name->setToolTip(QStringLiteral("The sweep's name: its directory is <workspace>/sweeps/<name>"));
  form->addRow(QStringLiteral("Name"), m_name);
  m_seeds = new QLineEdit(QStringLiteral("1, 2, 3"), left);
  m_seeds->setToolTip(QStringLiteral("training.seed of each repetition (pairs share the seed and so the data order)"));
  form->addRow(QStringLiteral("Seeds"), m_seeds);
  l->addLayout(form);
  buildGridEditor(left, l);
  auto* runButtons = new QHBoxLayout;
  m_run = new QPushButton(QStringLiteral("Run / Resume"), left);
  m_stop = new QPushButton(QStringLiteral("Stop"), left);
  m_open = new QPushButton(QStringLiteral("Open sweep..."), left);
  runButtons->addWidget(m_run);
  runButtons->addWidget(m_stop);
  runButtons->addWidget(m_open);
  l->addLayout(runButtons);
  m_progress = new QProgressBar(left);
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  l->addWidget(m_progress);
  l->addWidget(buildStatusArea(left));
  connect(m_run, &QPushButton::clicked, this, [this] { startSweep(); });
  connect(m_stop, &QPushButton::clicked, this, &SweepPanel::stopSweep);
  connect(m_open, &QPushButton::clicked, this, [this] {
    const QString d =
        QFileDialog::getExistingDirectory(this, QStringLiteral("Open a sweep directory"), sweepsRoot(m_workspace));
    if (!d.isEmpty()) openSweep(d);
  });
  return left;
}

// The grid (option path, values) with its Add axis / Remove axis buttons, into l.
void SweepPanel::buildGridEditor(QWidget* left, QVBoxLayout* l) {
  m_grid = new QTableWidget(2, 2, left);
  m_grid->setHorizontalHeaderLabels({QStringLiteral("Option path"), QStringLiteral("Values (comma-separated)")});
  m_grid->horizontalHeader()->setStretchLastSection(true);
  m_grid->setItem(0, 0, new QTableWidgetItem(QStringLiteral("model.hidden")));
  m_grid->setItem(0, 1, new QTableWidgetItem(QStringLiteral("64, 128")));
  m_grid->setItem(1, 0, new QTableWidgetItem(QString()));
  m_grid->setItem(1, 1, new QTableWidgetItem(QString()));
  l->addWidget(m_grid, 1);
  auto* gridButtons = new QHBoxLayout;
  auto* add = new QPushButton(QStringLiteral("Add axis"), left);
  auto* remove = new QPushButton(QStringLiteral("Remove axis"), left);
  gridButtons->addWidget(add);
  gridButtons->addWidget(remove);
  gridButtons->addStretch();
  l->addLayout(gridButtons);
  connect(add, &QPushButton::clicked, this, [this] {
    const int r = m_grid->rowCount();
    m_grid->insertRow(r);
    m_grid->setItem(r, 0, new QTableWidgetItem(QString()));
    m_grid->setItem(r, 1, new QTableWidgetItem(QString()));
  });
  connect(remove, &QPushButton::clicked, this, [this] {
    const int r = m_grid->currentRow() >= 0 ? m_grid->currentRow() : m_grid->rowCount() - 1;
    if (r >= 0) m_grid->removeRow(r);
  });
}

// The status label in its scroll area.
QScrollArea* SweepPanel::buildStatusArea(QWidget* left) {
  m_status = new QLabel(QStringLiteral("No sweep running."), left);
  m_status->setWordWrap(true);
  m_status->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Three lines high whatever it says ("[3/8] point: status", the step, an error), a longer
  // message scrolling inside: the buttons above do not move as a sweep starts, runs and ends.
  auto* statusArea = new QScrollArea(left);
  statusArea->setObjectName(QStringLiteral("sweepStatusArea"));
  statusArea->setWidget(m_status);
  statusArea->setWidgetResizable(true);
  statusArea->setFrameShape(QFrame::NoFrame);
  statusArea->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  statusArea->setFixedHeight(3 * m_status->fontMetrics().lineSpacing() + 6);
  return statusArea;
}

// Right: the table, its paired view and export, and the plot.
QWidget* SweepPanel::buildResultSide(QSplitter* split) {
  auto* right = new QWidget(split);
  auto* r = new QVBoxLayout(right);
  m_caption = new QLabel(QStringLiteral("The table appears here as runs finish."), right);
  m_caption->setWordWrap(true);
  r->addWidget(m_caption);
  m_table = new QTableWidget(right);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  r->addWidget(m_table, 2);
  auto* tableButtons = new QHBoxLayout;
  m_paired = new QCheckBox(QStringLiteral("Paired difference to"), right);
  m_paired->setToolTip(
      QStringLiteral("Each cell: the difference to the chosen column (or row) of the runs that share the seed "
                     "(and so the data order) and every other option; mean ± std over seeds"));
  m_pairedRef = new QComboBox(right);
  tableButtons->addWidget(m_paired);
  tableButtons->addWidget(m_pairedRef);
  tableButtons->addStretch();
  // The exports on a row of their own: beside the paired controls they made the tab wider than a
  // 1024 px window (Export LaTeX... off screen).
  auto* exportButtons = new QHBoxLayout;
  exportButtons->addStretch();
  auto* csv = new QPushButton(QStringLiteral("Export CSV..."), right);
  auto* tex = new QPushButton(QStringLiteral("Export LaTeX..."), right);
  exportButtons->addWidget(csv);
  exportButtons->addWidget(tex);
  r->addLayout(tableButtons);
  r->addLayout(exportButtons);
  connect(m_paired, &QCheckBox::toggled, this, [this] { refreshTable(); });
  connect(m_pairedRef, &QComboBox::activated, this,
          [this](int i) { m_pairedRefChosen = m_pairedRef->itemData(i).toString(); });
  connect(m_pairedRef, &QComboBox::currentTextChanged, this, [this] {
    if (m_paired->isChecked()) refreshTable();
  });
  connect(csv, &QPushButton::clicked, this, [this] { exportInteractive(QStringLiteral("csv")); });
  connect(tex, &QPushButton::clicked, this, [this] { exportInteractive(QStringLiteral("tex")); });
  m_plot = new QCustomPlot(right);
  m_plot->setMinimumHeight(220);
  m_plot->legend->setVisible(false);  // shown once there are series (updatePlot): no empty box
  m_plot->yAxis->setLabel(QStringLiteral("metric"));
  r->addWidget(m_plot, 2);
  return right;
}

// The sweep worker on its own thread, and its reports back to the panel.
void SweepPanel::connectWorker() {
  m_worker = startWorkerThread<SweepWorker>(this, &m_thread, QStringLiteral("cellscope-sweep"));
  connect(m_worker, &SweepWorker::pointStarted, this, &SweepPanel::onPointStarted);
  connect(m_worker, &SweepWorker::pointFinished, this, &SweepPanel::onPointFinished);
  connect(m_worker, &SweepWorker::progress, this, &SweepPanel::onProgress);
  connect(m_worker, &SweepWorker::finished, this, &SweepPanel::onFinished);
  connect(m_worker, &SweepWorker::failed, this, &SweepPanel::onFailed);
}

SweepPanel::~SweepPanel() {
  if (m_worker) m_worker->requestStop();  // the current run stops with a checkpoint (resumable)
  stopWorkerThread(m_thread);
}

void SweepPanel::setSweepName(const QString& name) { m_name->setText(name); }
QString SweepPanel::sweepName() const { return m_name->text().trimmed(); }

void SweepPanel::setGrid(const QList<QPair<QString, QString>>& rows) {
  m_grid->setRowCount(0);
  for (auto& p : rows) {
    const int r = m_grid->rowCount();
    m_grid->insertRow(r);
    m_grid->setItem(r, 0, new QTableWidgetItem(p.first));
    m_grid->setItem(r, 1, new QTableWidgetItem(p.second));
  }
}

void SweepPanel::setSeeds(const QString& seeds) { m_seeds->setText(seeds); }
QString SweepPanel::statusText() const { return m_status->text(); }
// m_pending covers the moment between the request and the worker thread picking it up
bool SweepPanel::isRunning() const { return m_pending || (m_worker && m_worker->isRunning()); }

QList<SweepAxisEdit> SweepPanel::axes() const {
  QList<SweepAxisEdit> out;
  for (int r = 0; r < m_grid->rowCount(); ++r) {
    const QString opt = m_grid->item(r, 0) ? m_grid->item(r, 0)->text().trimmed() : QString();
    const QString vals = m_grid->item(r, 1) ? m_grid->item(r, 1)->text() : QString();
    if (opt.isEmpty() && vals.trimmed().isEmpty()) continue;
    SweepAxisEdit a;
    a.option = opt;
    for (auto& v : vals.split(',', Qt::SkipEmptyParts)) a.values << v.trimmed();
    out << a;
  }
  return out;
}

QList<qint64> SweepPanel::seeds(QString* error) const {
  QList<qint64> out;
  for (auto& s : m_seeds->text().split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const qint64 v = s.trimmed().toLongLong(&ok);
    if (!ok || v < 0) {
      *error = QStringLiteral("seeds: '%1' is not a non-negative integer").arg(s.trimmed());
      return {};
    }
    out << v;
  }
  if (out.isEmpty()) *error = QStringLiteral("seeds: give at least one seed");
  return out;
}

bool SweepPanel::startSweep() {
  m_lastError.clear();
  auto fail = [this](const QString& msg) {
    m_lastError = msg;
    m_status->setText(
        QStringLiteral("<span style='color:#b00020'>%1</span>").arg(msg.toHtmlEscaped().replace('\n', "<br>")));
    return false;
  };
  if (isRunning()) return fail(QStringLiteral("A sweep is running."));
  if (m_training->isTraining())
    return fail(QStringLiteral("A run is training in the Training tab: stop it or wait for it first."));
  QString err;
  const auto s = seeds(&err);
  if (!err.isEmpty()) return fail(err);
  int points = 0;
  QJsonObject spec;
  if (!m_opened.isEmpty() && editorText() == m_openedEditor) {
    // the opened sweep as it was specified: its own base, named axes and exclusions (the editor shows labels)
    spec = m_opened;
    m_status->setText(QStringLiteral("Resuming %1 as its sweep.json specifies...").arg(sweepName()));
  } else {
    spec = buildSweepSpec(sweepName(), m_config->currentConfig(), axes(), s, &points, &err);
    if (spec.isEmpty()) return fail(err);
    m_opened = {};
    m_status->setText(QStringLiteral("Starting %1 runs...").arg(points));
  }
  m_dir = sweepsRoot(m_workspace) + "/" + sweepName();
  m_pointTotal = points;
  m_progress->setRange(0, points);  // 0: unknown until the first point starts (a busy bar)
  m_progress->setValue(0);
  const QByteArray json = QJsonDocument(spec).toJson(QJsonDocument::Compact);
  const int threads = std::max(1, QThread::idealThreadCount() - 1);
  QMetaObject::invokeMethod(m_worker, "start", Qt::QueuedConnection, Q_ARG(QByteArray, json),
                            Q_ARG(QString, m_workspace), Q_ARG(int, threads));
  m_pending = true;
  m_run->setEnabled(false);
  m_stop->setEnabled(true);
  return true;
}

void SweepPanel::stopSweep() {
  if (!isRunning()) return;
  m_worker->requestStop();
  m_status->setText(QStringLiteral("Stopping after a checkpoint of the current run..."));
}

void SweepPanel::updateButtons() {
  const bool running = isRunning();
  m_run->setEnabled(!running);
  m_stop->setEnabled(running);
}

void SweepPanel::onPointStarted(int index, int total, const QString& id, bool resumed, const QString& runDir) {
  m_pointIndex = index;
  m_pointTotal = total;
  m_progress->setRange(0, total);
  m_progress->setValue(index);
  m_status->setText(
      QStringLiteral("[%1/%2] %3%4\n%5").arg(index + 1).arg(total).arg(resumed ? "resuming " : "", id, runDir));
  m_run->setEnabled(false);
  m_stop->setEnabled(true);
}

void SweepPanel::onPointFinished(int index, int total, const QString& id, const QString& status) {
  m_progress->setValue(index + 1);
  m_status->setText(QStringLiteral("[%1/%2] %3: %4").arg(index + 1).arg(total).arg(id, status));
  refreshTable();
}

void SweepPanel::onProgress(int step, int total) {
  Q_UNUSED(total);
  m_status->setText(m_status->text().section('\n', 0, 1) + QStringLiteral("\nstep %1/%2").arg(step).arg(total));
}

void SweepPanel::onFinished(bool stopped, int done, int total, const QString& dir) {
  m_pending = false;
  m_dir = dir;
  m_status->setText(stopped ? QStringLiteral("Stopped: %1/%2 points done. Run again to resume.").arg(done).arg(total)
                            : QStringLiteral("Done: %1/%2 points.").arg(done).arg(total));
  m_progress->setRange(0, std::max(1, total));
  m_progress->setValue(done);
  updateButtons();
  m_run->setEnabled(true);
  m_stop->setEnabled(false);
  refreshTable();
  Q_EMIT runsChanged();
  Q_EMIT sweepFinished(stopped, done, total);
}

void SweepPanel::onFailed(const QString& message) {
  m_pending = false;
  m_lastError = message;
  m_status->setText(
      QStringLiteral("<span style='color:#b00020'>%1</span>").arg(message.toHtmlEscaped().replace('\n', "<br>")));
  m_run->setEnabled(true);
  m_stop->setEnabled(false);
  Q_EMIT sweepFailed(message);
}

bool SweepPanel::openSweep(const QString& dir) {
  if (!QFileInfo::exists(dir + "/sweep.json")) {
    m_lastError = QStringLiteral("'%1' is not a sweep directory (no sweep.json)").arg(dir);
    m_status->setText(m_lastError);
    return false;
  }
  m_dir = dir;
  m_name->setText(QFileInfo(dir).fileName());
  // Show the opened sweep's own grid and seeds in the editor (not the previous one).
  QFile f(dir + QStringLiteral("/sweep.json"));
  if (f.open(QIODevice::ReadOnly)) {
    const QJsonObject spec = QJsonDocument::fromJson(f.readAll()).object();
    auto text = [](const QJsonValue& v) {
      if (v.isString()) return v.toString();
      if (v.isDouble()) return QString::number(v.toDouble(), 'g', 12);
      if (v.isBool()) return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
      if (v.isObject()) return v.toObject().value(QStringLiteral("label")).toString();  // a multi-option value
      return QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact)).mid(1).chopped(1);
    };
    auto joined = [&](const QJsonArray& values) {
      QStringList parts;
      for (const QJsonValue& v : values) parts << text(v);
      return parts.join(QStringLiteral(", "));
    };
    QList<QPair<QString, QString>> rows;
    const QJsonValue grid = spec.value(QStringLiteral("grid"));
    if (grid.isObject()) {
      const QJsonObject g = grid.toObject();
      for (auto it = g.begin(); it != g.end(); ++it) rows.append({it.key(), joined(it.value().toArray())});
    } else {
      for (const QJsonValue& a : grid.toArray()) {
        const QJsonObject ax = a.toObject();
        const QString name = ax.value(QStringLiteral("option")).toString(ax.value(QStringLiteral("name")).toString());
        rows.append({name, joined(ax.value(QStringLiteral("values")).toArray())});
      }
    }
    setGrid(rows);
    QStringList seeds;
    for (const QJsonValue& v : spec.value(QStringLiteral("seeds")).toArray()) seeds << QString::number(v.toInteger());
    setSeeds(seeds.join(QStringLiteral(", ")));
    m_opened = spec;
    m_openedEditor = editorText();
  }
  refreshTable();
  return true;
}

QString SweepPanel::editorText() const {
  QString t = sweepName() + "\n" + m_seeds->text().simplified();
  for (int r = 0; r < m_grid->rowCount(); ++r)
    for (int c = 0; c < 2; ++c) t += "\n" + (m_grid->item(r, c) ? m_grid->item(r, c)->text().simplified() : QString());
  return t;
}

void SweepPanel::refreshTable() {
  if (m_dir.isEmpty() || !QFileInfo::exists(m_dir + "/sweep.json")) return;
  // The reference choices: the columns, then the rows of the plain table (MZU Table 4 pairs
  // every model with satMZU, a row).
  SweepTableView plain;
  QString err;
  if (!sweepTable(m_dir, QString(), &plain, &err)) {
    m_caption->setText(err);
    return;
  }
  {
    const QString keep = m_pairedRef->currentData().toString();
    QSignalBlocker b(m_pairedRef);
    m_pairedRef->clear();
    // Whether the reference has a value in some cell: the first that has is the default choice (a
    // sweep's first row may be one not run yet, e.g. MC-RNN Table 3's HM-RNN, and a reference
    // without values compares nothing). The choice is kept while it has values, or when the user
    // made it; a default taken before any run finished moves on to the first that has.
    QVector<bool> hasValues;
    auto filled = [&](int r, int c) {
      return r < plain.cells.size() && c < plain.cells[r].size() && plain.cells[r][c].n > 0;
    };
    if (plain.cols.size() > 1)
      for (int c = 0; c < plain.cols.size(); ++c) {
        m_pairedRef->addItem(QStringLiteral("column %1").arg(plain.cols[c]), QStringLiteral("col:") + plain.cols[c]);
        bool any = false;
        for (int r = 0; r < plain.rows.size(); ++r) any = any || filled(r, c);
        hasValues.push_back(any);
      }
    if (plain.rows.size() > 1)
      for (int r = 0; r < plain.rows.size(); ++r) {
        m_pairedRef->addItem(QStringLiteral("row %1").arg(plain.rows[r]), QStringLiteral("row:") + plain.rows[r]);
        bool any = false;
        for (int c = 0; c < plain.cols.size(); ++c) any = any || filled(r, c);
        hasValues.push_back(any);
      }
    int i = m_pairedRef->findData(keep);
    if (i < 0 || (!hasValues[i] && keep != m_pairedRefChosen))
      i = std::max(0, static_cast<int>(hasValues.indexOf(true)));
    m_pairedRef->setCurrentIndex(i);
  }
  m_paired->setEnabled(m_pairedRef->count() > 0);
  SweepTableView t = plain;
  if (m_paired->isChecked() && m_pairedRef->count() > 0 &&
      !sweepTable(m_dir, m_pairedRef->currentData().toString(), &t, &err)) {
    m_caption->setText(err);
    return;
  }
  m_caption->setText(QStringLiteral("<b>%1</b>: %2").arg(t.title.toHtmlEscaped(), t.caption.toHtmlEscaped()));
  m_table->clear();
  m_table->setRowCount(t.rows.size());
  m_table->setColumnCount(t.cols.size());
  m_table->setHorizontalHeaderLabels(t.cols);
  m_table->setVerticalHeaderLabels(t.rows);
  for (int r = 0; r < t.rows.size(); ++r)
    for (int c = 0; c < t.cols.size(); ++c) {
      const auto& cell = t.cells[r][c];
      // the paired view's verdict under the difference, its tests in the tooltip
      auto* item = new QTableWidgetItem(cell.verdict.isEmpty() ? cell.text : cell.text + "\n" + cell.verdict);
      item->setTextAlignment(Qt::AlignCenter);
      QFont f = item->font();
      f.setBold(cell.best);
      item->setFont(f);
      item->setToolTip(QStringLiteral("n = %1 seed(s)").arg(cell.n) +
                       (cell.tests.isEmpty() ? QString() : QStringLiteral("\n") + cell.tests));
      m_table->setItem(r, c, item);
    }
  m_table->resizeColumnsToContents();
  m_table->resizeRowsToContents();
  updatePlot();
}

QString SweepPanel::captionText() const { return m_caption->text(); }

void SweepPanel::updatePlot() {
  m_plot->clearPlottables();
  QList<SweepSeriesView> series;
  QString xName, err;
  if (m_dir.isEmpty() || !sweepSeries(m_dir, &series, &xName, &err)) {
    m_plot->xAxis->setLabel(err.isEmpty() ? QString() : QStringLiteral("(no plot: %1)").arg(err));
    m_plot->legend->setVisible(false);
    m_plot->replot();
    return;
  }
  static const QColor colors[] = {QColor(31, 119, 180), QColor(255, 127, 14),  QColor(44, 160, 44),
                                  QColor(214, 39, 40),  QColor(148, 103, 189), QColor(140, 86, 75)};
  int i = 0;
  for (auto& s : series) {
    const QColor col = colors[i++ % 6];
    auto* g = m_plot->addGraph();
    g->setName(s.label);
    g->setPen(QPen(col, 1.6));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, col, col, 6));
    g->setData(s.x, s.mean);
    auto* bars = new QCPErrorBars(m_plot->xAxis, m_plot->yAxis);  // mean ± sample std over seeds
    bars->removeFromLegend();
    bars->setDataPlottable(g);
    bars->setData(s.std);
    bars->setPen(QPen(col, 1.2));
  }
  m_plot->legend->setVisible(m_plot->graphCount() > 0);
  m_plot->xAxis->setLabel(xName);
  SweepTableView t;
  if (sweepTable(m_dir, QString(), &t, &err))
    m_plot->yAxis->setLabel(t.metric + QStringLiteral(" (mean ± std over seeds)"));
  m_plot->rescaleAxes();
  // Room around the points and their bars.
  m_plot->xAxis->scaleRange(1.15, m_plot->xAxis->range().center());
  double lo = 1e300, hi = -1e300;
  for (auto& s : series)
    for (int k = 0; k < s.x.size(); ++k) {
      lo = std::min(lo, s.mean[k] - s.std[k]);
      hi = std::max(hi, s.mean[k] + s.std[k]);
    }
  if (lo < hi) m_plot->yAxis->setRange(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo));
  m_plot->replot();
}

bool SweepPanel::exportTable(const QString& path, QString* error) {
  if (m_dir.isEmpty()) {
    if (error) *error = QStringLiteral("no sweep to export");
    return false;
  }
  const QString ref =
      m_paired->isChecked() && m_paired->isEnabled() ? m_pairedRef->currentData().toString() : QString();
  return exportSweepTable(m_dir, ref, path, error);
}

void SweepPanel::exportInteractive(const QString& ext) {
  const QString path = QFileDialog::getSaveFileName(
      this, QStringLiteral("Export the table"), QDir::homePath() + "/" + sweepName() + "." + ext,
      ext == "csv" ? QStringLiteral("CSV (*.csv)") : QStringLiteral("LaTeX (*.tex)"));
  if (path.isEmpty()) return;
  QString err;
  if (!exportTable(path, &err)) m_status->setText(QStringLiteral("Export failed: ") + err);
  else m_status->setText(QStringLiteral("Wrote ") + path);
}

}  // namespace gui
