// The Decode tab's behaviour: the worker, the runs and checkpoints offered, the job, the tables
// and their export; its widgets are built in decode_panel_ui.cpp.
#include "decode_panel.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>

#include <algorithm>
#include <cmath>

#include "core_bridge.h"
#include "run_table.h"

namespace gui {

namespace {
// The metrics the table shows first, with their headers; other keys a report has follow by name.
const QList<QPair<QString, QString>>& knownMetrics() {
  static const QList<QPair<QString, QString>> m = {{QStringLiteral("bleu"), QStringLiteral("BLEU")},
                                                   {QStringLiteral("rouge1"), QStringLiteral("ROUGE-1")},
                                                   {QStringLiteral("rouge2"), QStringLiteral("ROUGE-2")},
                                                   {QStringLiteral("rougeL"), QStringLiteral("ROUGE-L")}};
  return m;
}
const QString kLead = QStringLiteral("lead_");
}  // namespace

// ======================================================================= worker
void DecodeWorker::decode(const DecodeJob& job) {
  const int n = static_cast<int>(job.checkpoints.size());
  for (int i = 0; i < n; ++i) {
    if (m_cancel.load()) {
      Q_EMIT cancelled();
      Q_EMIT finished();
      return;
    }
    QElapsedTimer since;
    since.start();
    bool first = true;
    auto progressCb = [&](qint64 done, qint64 total) {
      if (m_cancel.load()) return false;
      if (first || done >= total || since.elapsed() >= 50) {
        first = false;
        since.restart();
        Q_EMIT progress(i, n, done, total);
      }
      return !m_cancel.load();
    };
    QString error;
    bool wasCancelled = false;
    const DecodeTable t = runDecode(job, job.checkpoints[i], progressCb, &error, &wasCancelled);
    if (wasCancelled) {
      Q_EMIT cancelled();
      Q_EMIT finished();
      return;
    }
    if (!error.isEmpty()) {
      Q_EMIT failed(QStringLiteral("checkpoint %1: %2").arg(job.checkpoints[i], error));
      Q_EMIT finished();
      return;
    }
    Q_EMIT tableReady(t);
  }
  Q_EMIT finished();
}

// ======================================================================= runs and checkpoints
QStringList DecodePanel::runDirs() const {
  QStringList d;
  for (int i = 0; i < m_runCombo->count(); ++i) d << m_runCombo->itemData(i).toString();
  return d;
}

QString DecodePanel::currentRun() const { return m_runCombo->currentData().toString(); }

void DecodePanel::refreshRuns() {
  const QString keep = currentRun();
  {
    QSignalBlocker block(m_runCombo);
    m_runCombo->clear();
    if (m_runs) {
      for (const RunInfo& r : m_runs->runs()) {
        const QString task = r.config.value(QStringLiteral("task")).toObject().value(QStringLiteral("name")).toString();
        if (task != QLatin1String("seq2seq")) continue;
        if (!QFileInfo::exists(r.dir + QStringLiteral("/checkpoints"))) continue;
        const QString cell =
            r.config.value(QStringLiteral("model")).toObject().value(QStringLiteral("cell")).toString();
        // The run's label first (as the Compare and Analyses tabs name it), its folder after it.
        const QString name = r.label.isEmpty() ? r.name : QStringLiteral("%1  (%2)").arg(r.label, r.name);
        m_runCombo->addItem(QStringLiteral("%1  [%2, %3]").arg(name, cell, r.status()), r.dir);
        m_runCombo->setItemData(m_runCombo->count() - 1, r.dir, Qt::ToolTipRole);
      }
    }
    const int i = m_runCombo->findData(keep);
    m_runCombo->setCurrentIndex(i >= 0 ? i : m_runCombo->count() - 1);  // default: the newest run
  }
  refreshCheckpoints();
  if (currentRun() != keep) takeRunDefaults();
  setBusy(m_busy);
}

void DecodePanel::refreshCheckpoints() {
  QStringList keep = checkedCheckpoints();
  m_checkpoints->clear();
  const QString dir = currentRun();
  if (dir.isEmpty()) return;
  const QDir cp(dir + QStringLiteral("/checkpoints"));
  QStringList names;
  if (cp.exists(QStringLiteral("best.pt"))) names << QStringLiteral("best");
  if (cp.exists(QStringLiteral("last.pt"))) names << QStringLiteral("last");
  for (qint64 s : checkpointSteps(dir)) names << QStringLiteral("step_%1").arg(s);
  bool anyKept = false;
  for (const QString& n : keep) anyKept = anyKept || names.contains(n);
  if (!anyKept && !names.isEmpty()) keep = {names.first()};  // best when there is one
  for (const QString& n : names) {
    auto* item = new QListWidgetItem(n, m_checkpoints);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsSelectable);
    item->setCheckState(keep.contains(n) ? Qt::Checked : Qt::Unchecked);
  }
}

void DecodePanel::takeRunDefaults() {
  // The run's own beam width and length penalty (task.beam, task.length_penalty), when it has them.
  if (!m_runs) return;
  const RunInfo* r = m_runs->run(m_runs->rowOf(currentRun()));
  if (!r) return;
  const QJsonObject task = r->config.value(QStringLiteral("task")).toObject();
  if (task.value(QStringLiteral("beam")).isDouble()) m_beam->setValue(task.value(QStringLiteral("beam")).toInt());
  if (task.value(QStringLiteral("length_penalty")).isDouble())
    m_lengthPenalty->setValue(task.value(QStringLiteral("length_penalty")).toDouble());
}

QStringList DecodePanel::availableCheckpoints() const {
  QStringList out;
  for (int i = 0; i < m_checkpoints->count(); ++i) out << m_checkpoints->item(i)->text();
  return out;
}

QStringList DecodePanel::checkedCheckpoints() const {
  QStringList out;
  for (int i = 0; i < m_checkpoints->count(); ++i)
    if (m_checkpoints->item(i)->checkState() == Qt::Checked) out << m_checkpoints->item(i)->text();
  return out;
}

bool DecodePanel::setCheckedCheckpoints(const QStringList& names) {
  const QStringList offered = availableCheckpoints();
  bool all = true;
  for (const QString& n : names) all = all && offered.contains(n);
  for (int i = 0; i < m_checkpoints->count(); ++i) {
    QListWidgetItem* item = m_checkpoints->item(i);
    item->setCheckState(names.contains(item->text()) ? Qt::Checked : Qt::Unchecked);
  }
  return all;
}

bool DecodePanel::selectRun(const QString& dir) {
  refreshRuns();
  int i = m_runCombo->findData(QDir(dir).absolutePath());
  if (i < 0) i = m_runCombo->findData(dir);
  if (i < 0) return false;
  m_runCombo->setCurrentIndex(i);
  return true;
}

// ======================================================================= the job
DecodeJob DecodePanel::job() const {
  DecodeJob j;
  j.runDir = currentRun();
  j.checkpoints = checkedCheckpoints();
  j.split = m_split->currentText();
  j.beam = m_beam->value();
  j.lengthPenalty = m_lengthPenalty->value();
  j.maxExamples = m_examples->value();
  j.maxLength = m_maxLength->value();
  return j;
}

void DecodePanel::setJob(const DecodeJob& j) {
  if (!j.runDir.isEmpty()) selectRun(j.runDir);
  setCheckedCheckpoints(j.checkpoints);
  const int s = m_split->findText(j.split);
  if (s >= 0) m_split->setCurrentIndex(s);
  m_beam->setValue(j.beam);
  m_lengthPenalty->setValue(j.lengthPenalty);
  m_examples->setValue(j.maxExamples);
  m_maxLength->setValue(j.maxLength);
}

void DecodePanel::setBusy(bool busy) {
  m_busy = busy;
  m_decodeButton->setEnabled(!busy && m_runCombo->count() > 0);
  m_cancelButton->setEnabled(busy);
  for (QWidget* w : std::initializer_list<QWidget*>{m_runCombo, m_checkpoints, m_split, m_beam, m_lengthPenalty,
                                                    m_examples, m_maxLength})
    w->setEnabled(!busy);
}

void DecodePanel::decode() {
  if (m_busy) return;
  const DecodeJob j = job();
  if (j.runDir.isEmpty()) {
    m_status->setText(
        tr("No seq2seq run with a checkpoint in this workspace yet: train one first "
           "(task seq2seq in the configuration)."));
    return;
  }
  if (j.checkpoints.isEmpty()) {
    m_status->setText(tr("Tick at least one checkpoint to decode."));
    return;
  }
  m_running = j;
  m_failed = m_wasCancelled = false;
  m_worker->resetCancel();  // before the job is queued: a Cancel from now on reaches it
  setBusy(true);
  m_progress->setValue(0);
  m_progressLabel->setText(tr("loading checkpoint %1...").arg(j.checkpoints.first()));
  m_status->setText(tr("Decoding %1 checkpoint(s) of %2: the first %3 of %4, %5.")
                        .arg(j.checkpoints.size())
                        .arg(QFileInfo(j.runDir).fileName())
                        .arg(j.maxExamples > 0 ? QString::number(j.maxExamples) + tr(" examples") : tr("all examples"))
                        .arg(j.split)
                        .arg(j.beam <= 1 ? tr("greedy") : tr("beam %1").arg(j.beam)));
  m_clock.start();
  Q_EMIT requestDecode(j);
}

void DecodePanel::cancel() {
  if (!m_busy) return;
  m_worker->cancel();
  m_cancelButton->setEnabled(false);
  m_progressLabel->setText(tr("cancelling..."));
}

void DecodePanel::onProgress(int index, int count, qint64 done, qint64 total) {
  if (!m_busy || count <= 0) return;
  const double within = total > 0 ? std::clamp(double(done) / double(total), 0.0, 1.0) : 1.0;
  const double fraction = (index + within) / count;
  m_progress->setValue(static_cast<int>(std::lround(fraction * kProgressMax)));
  const double elapsed = m_clock.elapsed() / 1000.0;
  QString text = tr("%1 (%2 of %3): %4 / %5 examples, %6 elapsed")
                     .arg(index < m_running.checkpoints.size() ? m_running.checkpoints[index] : QString())
                     .arg(index + 1)
                     .arg(count)
                     .arg(done)
                     .arg(total)
                     .arg(formatDuration(elapsed));
  if (fraction > 0 && fraction < 1)
    text += tr(", about %1 left").arg(formatDuration(elapsed * (1 - fraction) / fraction));
  if (m_worker->cancelRequested()) text = tr("cancelling...");
  m_progressLabel->setText(text);
}

void DecodePanel::onTable(const DecodeTable& t) {
  int index = -1;
  for (int i = 0; i < m_tables.size(); ++i) {
    const DecodeTable& o = m_tables[i];
    if (o.runDir == t.runDir && o.checkpoint == t.checkpoint && o.split == t.split && o.beam == t.beam &&
        o.lengthPenalty == t.lengthPenalty && o.maxExamples == t.maxExamples)
      index = i;
  }
  if (index >= 0) m_tables[index] = t;
  else {
    m_tables.push_back(t);
    index = m_tables.size() - 1;
  }
  {
    QSignalBlocker block(m_tableCombo);
    m_tableCombo->clear();
    for (const DecodeTable& x : m_tables) {
      QString label = x.title();
      if (x.runDir != currentRun()) label = QFileInfo(x.runDir).fileName() + QStringLiteral(": ") + label;
      m_tableCombo->addItem(label);
    }
  }
  rebuildMetrics();
  setCurrentTable(index);
  Q_EMIT tableAdded(index);
}

void DecodePanel::onDone() {
  const bool ok = !m_failed && !m_wasCancelled;
  const double elapsed = m_clock.elapsed() / 1000.0;
  setBusy(false);
  if (m_wasCancelled) {
    m_progressLabel->setText(tr("cancelled after %1").arg(formatDuration(elapsed)));
    m_status->setText(tr("Cancelled. The tables of the checkpoints decoded before are kept."));
  } else if (ok) {
    m_progressLabel->setText(tr("done in %1").arg(formatDuration(elapsed)));
    QString s = tr("Decoded %1 checkpoint(s).").arg(m_running.checkpoints.size());
    const int cur = currentTable();
    if (cur >= 0) {
      const DecodeTable& t = m_tables[cur];
      s += tr(" %1: BLEU %2, ROUGE-L %3")
               .arg(t.checkpoint)
               .arg(t.metric(QStringLiteral("bleu"), NAN), 0, 'f', 2)
               .arg(t.metric(QStringLiteral("rougeL"), NAN), 0, 'f', 2);
      if (t.hasMetric(kLead + QStringLiteral("bleu")))
        s += tr(" (lead baseline: BLEU %1, ROUGE-L %2)")
                 .arg(t.metric(kLead + QStringLiteral("bleu"), NAN), 0, 'f', 2)
                 .arg(t.metric(kLead + QStringLiteral("rougeL"), NAN), 0, 'f', 2);
      s += QLatin1Char('.');
    }
    m_status->setText(s);
  } else {
    m_progressLabel->setText(tr("failed"));
  }
  Q_EMIT finished(ok);
}

QString DecodePanel::progressText() const { return m_progressLabel->text(); }
QString DecodePanel::statusText() const { return m_status->text(); }

// ======================================================================= tables
int DecodePanel::currentTable() const { return m_tables.isEmpty() ? -1 : m_tableCombo->currentIndex(); }

void DecodePanel::setCurrentTable(int index) {
  if (index < 0 || index >= m_tables.size()) return;
  if (m_tableCombo->currentIndex() != index) m_tableCombo->setCurrentIndex(index);  // comes back through showTable
  else showTable(index);
}

void DecodePanel::showTable(int index) {
  m_samples->clearContents();
  m_samples->setRowCount(0);
  if (index < 0 || index >= m_tables.size()) return;
  const DecodeTable& t = m_tables[index];
  m_samples->setRowCount(t.rows.size());
  for (int r = 0; r < t.rows.size(); ++r) {
    const DecodeRow& row = t.rows[r];
    auto* num = new QTableWidgetItem;
    num->setData(Qt::DisplayRole, row.index);
    m_samples->setItem(r, 0, num);
    const QString texts[3] = {row.source, row.reference, row.hypothesis};
    for (int c = 0; c < 3; ++c) {
      auto* item = new QTableWidgetItem(QString(texts[c]).replace(QLatin1Char('\n'), QLatin1Char(' ')));
      item->setToolTip(texts[c]);
      if (texts[c].trimmed().isEmpty()) {
        // An empty text (a hypothesis that ends at once) would be a blank cell, read as a
        // display fault: a grey italic marker says it is empty. Copy and export keep "".
        item->setText(c == 2 ? tr("(empty hypothesis)") : tr("(empty)"));
        item->setToolTip(c == 2 ? tr("The model ended this output before its first token (it produced nothing)")
                                : tr("Empty in the data"));
        QFont italic = item->font();
        italic.setItalic(true);
        item->setFont(italic);
        item->setForeground(QColor(0x75, 0x75, 0x75));
      }
      m_samples->setItem(r, c + 1, item);
    }
    auto* score = new QTableWidgetItem(QString::number(row.score, 'f', 3));
    score->setData(Qt::TextAlignmentRole, int(Qt::AlignRight | Qt::AlignVCenter));
    m_samples->setItem(r, 4, score);
  }
  // The metrics table follows the selector.
  const int metricsRow = m_metricsRowTable.indexOf(index);
  if (metricsRow >= 0 && m_metrics->currentRow() != metricsRow) {
    QSignalBlocker block(m_metrics);
    m_metrics->selectRow(metricsRow);
    m_metrics->setCurrentCell(metricsRow, 0);
  }
}

void DecodePanel::rebuildMetrics() {
  // Columns: the known metrics every table has a value of, then the others (lead_* are baseline rows).
  QStringList keys;
  for (const auto& km : knownMetrics()) {
    for (const DecodeTable& t : m_tables)
      if (t.hasMetric(km.first)) {
        keys << km.first;
        break;
      }
  }
  // ("examples" is a column of its own, "lead_words" names the baseline.)
  for (const DecodeTable& t : m_tables)
    for (const auto& kv : t.metrics)
      if (!kv.first.startsWith(kLead) && kv.first != QLatin1String("examples") && !keys.contains(kv.first))
        keys << kv.first;
  QStringList headers{tr("Checkpoint"), tr("Step"), tr("Examples")};
  for (const QString& k : keys) {
    QString h = k;
    for (const auto& km : knownMetrics())
      if (km.first == k) h = km.second;
    headers << h;
  }
  QSignalBlocker block(m_metrics);
  m_metrics->clear();
  m_metrics->setColumnCount(headers.size());
  m_metrics->setHorizontalHeaderLabels(headers);
  m_metricsRowTable.clear();
  struct Row {
    QString label, step, examples;
    QVector<double> values;
    int table;
    bool baseline;
  };
  QVector<Row> rows;
  QStringList baselinesSeen;
  for (int i = 0; i < m_tables.size(); ++i) {
    const DecodeTable& t = m_tables[i];
    Row r{t.title(), QString::number(t.step), QString::number(t.rows.size()), {}, i, false};
    for (const QString& k : keys) r.values << t.metric(k, NAN);
    rows << r;
  }
  // One lead-baseline row per set of examples decoded (run, split, number of examples).
  for (const DecodeTable& t : m_tables) {
    bool any = false;
    for (const QString& k : keys) any = any || t.hasMetric(kLead + k);
    const QString id = QStringLiteral("%1|%2|%3").arg(t.runDir, t.split).arg(t.rows.size());
    if (!any || baselinesSeen.contains(id)) continue;
    baselinesSeen << id;
    const double words = t.metric(QStringLiteral("lead_words"), 0);
    Row r{words > 0 ? tr("lead baseline (the first %1 words of the source), %2").arg(words).arg(t.split)
                    : tr("lead baseline (the first words of the source), %1").arg(t.split),
          QString(),
          QString::number(t.rows.size()),
          {},
          -1,
          true};
    for (const QString& k : keys) r.values << t.metric(kLead + k, NAN);
    rows << r;
  }
  // The best checkpoint of each column in bold (all the known metrics are higher-is-better).
  // A column where every checkpoint scores the same has no best: nothing is bold there (two
  // checkpoints at 0.00 in bold would read as good results).
  QVector<double> best(keys.size(), -INFINITY), worst(keys.size(), INFINITY);
  for (const Row& r : rows)
    if (!r.baseline)
      for (int c = 0; c < keys.size(); ++c)
        if (std::isfinite(r.values[c])) {
          best[c] = std::max(best[c], r.values[c]);
          worst[c] = std::min(worst[c], r.values[c]);
        }
  m_metrics->setRowCount(rows.size());
  // Tall enough for every row up to 6 (the lead baseline, the last row, must not hide below a
  // scroll bar in a small window).
  m_metrics->setMinimumHeight(
      std::max(70, int(std::min<qsizetype>(rows.size(), 6)) * m_metrics->verticalHeader()->defaultSectionSize() +
                       m_metrics->horizontalHeader()->sizeHint().height() + 2 * m_metrics->frameWidth() + 4));
  for (int i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    m_metricsRowTable << r.table;
    const QString cells[3] = {r.label, r.step, r.examples};
    for (int c = 0; c < 3; ++c) m_metrics->setItem(i, c, new QTableWidgetItem(cells[c]));
    for (int c = 0; c < keys.size(); ++c) {
      auto* item =
          new QTableWidgetItem(std::isfinite(r.values[c]) ? QString::number(r.values[c], 'f', 2) : QStringLiteral("-"));
      item->setData(Qt::TextAlignmentRole, int(Qt::AlignRight | Qt::AlignVCenter));
      if (!r.baseline && std::isfinite(r.values[c]) && r.values[c] == best[c] && best[c] > worst[c]) {
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
      }
      m_metrics->setItem(i, 3 + c, item);
    }
    if (r.baseline)
      for (int c = 0; c < m_metrics->columnCount(); ++c) {
        m_metrics->item(i, c)->setForeground(QColor(0x55, 0x55, 0x55));
        m_metrics->item(i, c)->setFlags(Qt::ItemIsEnabled);
        m_metrics->item(i, c)->setToolTip(
            tr("The lead baseline: the first words of each source as its output, scored "
               "against the same references"));
      }
  }
}

void DecodePanel::clearTables() {
  if (m_busy) return;
  m_tables.clear();
  {
    QSignalBlocker block(m_tableCombo);
    m_tableCombo->clear();
  }
  rebuildMetrics();
  showTable(-1);
}

bool DecodePanel::exportTables(const QString& path, TableFormat format, bool allTables, QString* error) const {
  const int cur = currentTable();
  if (cur < 0) {
    if (error) *error = tr("Nothing to export: decode a checkpoint first (Ctrl+Return).");
    return false;
  }
  const QVector<DecodeTable> tables = allTables ? m_tables : QVector<DecodeTable>{m_tables[cur]};
  return writeDecodeTables(path, tables, format, error);
}

QString DecodePanel::selectedRowsText() const {
  const int cur = currentTable();
  if (cur < 0) return QString();
  DecodeTable t = m_tables[cur];
  QList<int> rows;
  for (const QModelIndex& i : m_samples->selectionModel()->selectedRows()) rows << i.row();
  std::sort(rows.begin(), rows.end());
  if (!rows.isEmpty()) {
    QVector<DecodeRow> picked;
    for (int r : rows)
      if (r >= 0 && r < t.rows.size()) picked << t.rows[r];
    t.rows = picked;
  }
  return decodeTablesText({t}, TableFormat::Tsv);
}

void DecodePanel::copySelection() {
  const QString text = selectedRowsText();
  if (text.isEmpty()) {
    m_status->setText(tr("Nothing to copy: decode a checkpoint first (Ctrl+Return)."));
    return;
  }
  QApplication::clipboard()->setText(text);
  m_status->setText(tr("Copied %1 row(s) as TSV.").arg(text.count(QLatin1Char('\n')) - 1));
}

void DecodePanel::exportInteractive(TableFormat format) {
  const int cur = currentTable();
  if (cur < 0) {
    m_status->setText(tr("Nothing to export: decode a checkpoint first (Ctrl+Return)."));
    return;
  }
  const bool csv = format == TableFormat::Csv;
  const DecodeTable& t = m_tables[cur];
  const QString name =
      QStringLiteral("%1-%2-%3.%4")
          .arg(QFileInfo(t.runDir).fileName(), m_exportAll->isChecked() ? QStringLiteral("all") : t.checkpoint, t.split,
               csv ? QStringLiteral("csv") : QStringLiteral("tsv"));
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the decoded outputs"), name,
                                                    csv ? tr("CSV (*.csv)") : tr("TSV (*.tsv)"));
  if (path.isEmpty()) return;
  QString err;
  if (!exportTables(path, format, m_exportAll->isChecked(), &err)) m_status->setText(err);
  else m_status->setText(tr("Wrote %1").arg(path));
}

}  // namespace gui
