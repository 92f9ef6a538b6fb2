#include "process_run.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include "core_bridge.h"
#include "json_file.h"

namespace gui {

ProcessRun::ProcessRun(QObject* parent) : QObject(parent) {}

ProcessRun::~ProcessRun() {
  if (m_proc && m_proc->state() != QProcess::NotRunning) {
    disconnect(m_proc, nullptr, this, nullptr);
    m_proc->terminate();
    if (!m_proc->waitForFinished(20000)) {
      m_proc->kill();
      m_proc->waitForFinished(5000);
    }
  }
}

bool ProcessRun::start(const QString& program, const QStringList& args, const QString& runDir, QString* error) {
  if (isRunning()) {
    if (error) *error = QStringLiteral("a process is already running");
    return false;
  }
  if (program.isEmpty()) {
    if (error) *error = QStringLiteral("cellscope-cli was not found (set CELLSCOPE_CLI to its path)");
    return false;
  }
  delete m_proc;
  m_proc = new QProcess(this);
  m_proc->setProcessChannelMode(QProcess::MergedChannels);
  m_runDir = QFileInfo(runDir).absoluteFilePath();
  m_args = args;
  m_started = false;
  m_metricsOffset = m_logOffset = 0;
  m_total = 0;
  m_firstStep = -1;
  m_firstElapsed = 0;
  m_unit.clear();
  m_output.clear();
  m_dirCreatedHere = !QFileInfo::exists(m_runDir);
  connect(m_proc, &QProcess::readyRead, this, [this] {
    m_output += m_proc->readAll();
    if (m_output.size() > 65536) m_output = m_output.right(65536);
  });
  connect(m_proc, &QProcess::finished, this, &ProcessRun::onExit);
  m_proc->start(program, args);
  if (!m_proc->waitForStarted(10000)) {  // reported here, not through failed()
    if (error) *error = QStringLiteral("cannot start %1: %2").arg(program, m_proc->errorString());
    disconnect(m_proc, nullptr, this, nullptr);
    m_runDir.clear();
    return false;
  }
  return true;
}

bool ProcessRun::isRunning() const { return m_proc && m_proc->state() != QProcess::NotRunning; }

qint64 ProcessRun::pid() const { return m_proc ? m_proc->processId() : 0; }

void ProcessRun::stop() {
  if (isRunning()) m_proc->terminate();  // SIGTERM: the CLI (and the launcher's ranks) stop cleanly
}

bool ProcessRun::poll(QVector<MetricPoint>* points, QStringList* logs, TrainProgress* progress) {
  if (m_runDir.isEmpty()) return false;
  const QDir dir(m_runDir);
  if (!m_started) {
    // Started = the run directory has its config and a summary that says "running" (a
    // resumed run has an old summary until the trainer writes the new one); a process
    // that already ended counts too (it may have finished between two polls).
    const QJsonObject summary = readJsonObjectFile(dir.filePath(QStringLiteral("summary.json")));
    if (!QFileInfo::exists(dir.filePath(QStringLiteral("config.json"))) || summary.isEmpty()) return false;
    if (summary.value(QStringLiteral("status")).toString() != QLatin1String("running") && isRunning()) return false;
    m_started = true;
    const QJsonObject cfg = readJsonObjectFile(dir.filePath(QStringLiteral("config.json")));
    m_total = qint64(cfg.value(QStringLiteral("training")).toObject().value(QStringLiteral("steps")).toDouble());
    m_unit = summary.value(QStringLiteral("unit")).toString();
    Q_EMIT started(m_runDir, summary.value(QStringLiteral("primary_metric")).toString(), m_unit,
                   qint64(summary.value(QStringLiteral("parameters")).toDouble()));
    // A fork: the parent's curve up to the fork step comes first (one joined curve).
    if (points) *points += parentMetrics(m_runDir);
  }
  const QVector<MetricPoint> fresh = readMetricsFrom(dir.filePath(QStringLiteral("metrics.jsonl")), &m_metricsOffset);
  if (points) *points += fresh;
  QFile log(dir.filePath(QStringLiteral("log.txt")));
  if (logs && log.open(QIODevice::ReadOnly) && log.size() > m_logOffset && log.seek(m_logOffset)) {
    const QByteArray chunk = log.readAll();
    const int end = chunk.lastIndexOf('\n');
    if (end >= 0) {
      m_logOffset += end + 1;
      for (const QByteArray& l : chunk.left(end).split('\n')) *logs << QString::fromUtf8(l);
    }
  }
  // Progress from the newest training line.
  for (int i = fresh.size() - 1; i >= 0; --i) {
    const MetricPoint& p = fresh[i];
    if (p.eval) continue;
    if (m_firstStep < 0) {
      m_firstStep = p.step;
      m_firstElapsed = p.elapsed;
    }
    if (progress) {
      progress->step = p.step;
      progress->total = m_total;
      progress->elapsed = p.elapsed;
      progress->throughput = p.value(QStringLiteral("throughput"), 0);
      progress->lastLoss = p.value(QStringLiteral("loss"), 0);
      progress->unit = m_unit;
      const double rate = p.step > m_firstStep ? (p.elapsed - m_firstElapsed) / double(p.step - m_firstStep) : 0;
      progress->eta = rate > 0 && m_total > p.step ? rate * double(m_total - p.step) : 0;
    }
    return true;
  }
  return false;
}

QString ProcessRun::outputTail() const {
  QStringList lines = QString::fromUtf8(m_output).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  // Progress lines redraw themselves with '\r': keep what follows the last one.
  for (QString& l : lines) l = l.section(QLatin1Char('\r'), -1).trimmed();
  lines.removeAll(QString());
  while (lines.size() > 6) lines.removeFirst();
  return lines.join(QLatin1Char('\n'));
}

void ProcessRun::onExit() {
  const QDir dir(m_runDir);
  const QJsonObject summary = readJsonObjectFile(dir.filePath(QStringLiteral("summary.json")));
  const QString status = summary.value(QStringLiteral("status")).toString();
  const bool hasRun = QFileInfo::exists(dir.filePath(QStringLiteral("config.json")));
  if (hasRun && !summary.isEmpty() && status != QLatin1String("running")) {
    QString reason = summary.value(QStringLiteral("reason")).toString();
    if (status == QLatin1String("failed") && reason.isEmpty()) reason = outputTail();
    Q_EMIT finished(status, reason, m_runDir);
    return;
  }
  QString msg = outputTail();
  if (msg.isEmpty())
    msg = m_proc && m_proc->error() == QProcess::FailedToStart
              ? QStringLiteral("cannot start %1: %2").arg(m_proc->program(), m_proc->errorString())
              : QStringLiteral("cellscope-cli exited with status %1").arg(m_proc ? m_proc->exitCode() : -1);
  // Nothing written (the CLI refused the configuration): leave no empty run directory behind.
  if (m_dirCreatedHere && QFileInfo(m_runDir).isDir() && QDir(m_runDir).isEmpty()) QDir().rmdir(m_runDir);
  Q_EMIT failed(msg, hasRun ? m_runDir : QString());
}

}  // namespace gui
