#include "training_controller.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QTemporaryFile>
#include <QThread>
#include <QTimer>

#include <algorithm>

#include "core_bridge.h"
#include "process_run.h"
#include "train_worker.h"
#include "worker_thread.h"

namespace gui {

TrainingController::TrainingController(QObject* parent) : QObject(parent) {
  qRegisterMetaType<gui::MetricPoint>();
  qRegisterMetaType<gui::TrainProgress>();
  // The worker object lives on its own thread for the controller's lifetime.
  m_worker = startWorkerThread<TrainWorker>(this, &m_thread, QStringLiteral("cellscope-train"));
  connect(m_worker, &TrainWorker::started, this, &TrainingController::onStarted, Qt::QueuedConnection);
  connect(m_worker, &TrainWorker::finished, this, &TrainingController::onFinished, Qt::QueuedConnection);
  connect(m_worker, &TrainWorker::failed, this, &TrainingController::onFailed, Qt::QueuedConnection);
  // Runs in cellscope-cli processes: the same lifecycle, queued so that the slot runs after
  // the process's last output was read.
  m_process = new ProcessRun(this);
  connect(m_process, &ProcessRun::started, this, &TrainingController::onStarted);
  connect(m_process, &ProcessRun::finished, this, &TrainingController::onFinished, Qt::QueuedConnection);
  connect(m_process, &ProcessRun::failed, this, &TrainingController::onFailed, Qt::QueuedConnection);

  // Metrics are pulled at 10 Hz, whatever the training speed.
  m_drainTimer = new QTimer(this);
  m_drainTimer->setInterval(100);
  connect(m_drainTimer, &QTimer::timeout, this, &TrainingController::drain);
  m_drainTimer->start();
}

TrainingController::~TrainingController() {
  delete m_process;  // SIGTERM to a process still running, waited for (it checkpoints)
  m_process = nullptr;
  if (!m_configFile.isEmpty()) QFile::remove(m_configFile);
  m_worker->setPaused(false);
  m_worker->requestStop();
  stopWorkerThread(m_thread);
}

bool TrainingController::isPaused() const { return !m_processMode && m_worker->isPaused(); }

bool TrainingController::start(const QJsonObject& cfg, int nproc) {
  if (m_busy) {
    enqueue(cfg, nproc);
    return false;
  }
  launch({cfg, nproc});
  return true;
}

void TrainingController::enqueue(const QJsonObject& cfg, int nproc) {
  if (!m_busy) {
    launch({cfg, nproc});
    return;
  }
  m_queue << Queued{cfg, nproc};
  Q_EMIT stateChanged();
}

QStringList TrainingController::parallelArguments(const QJsonObject& cfg, const QString& configFile, int nproc,
                                                  const QString& runDir) {
  const int own = cfg.value(QStringLiteral("training")).toObject().value(QStringLiteral("threads")).toInt(0);
  const int threads = own > 0 ? own : threadsPerProcess(nproc);
  return {QStringLiteral("train"),     configFile, QStringLiteral("--nproc"),   QString::number(nproc),
          QStringLiteral("--run-dir"), runDir,     QStringLiteral("--threads"), QString::number(threads)};
}

void TrainingController::beginRun(int nproc, bool processMode) {
  m_busy = true;
  m_processMode = processMode;
  m_nproc = nproc;
  m_lastError.clear();
  m_runDir.clear();
  m_primary.clear();
  m_progress = TrainProgress();
  m_history.clear();
  m_worker->drain(nullptr, nullptr, nullptr);  // nothing of an earlier run is left to drain
  Q_EMIT preparing();
}

bool TrainingController::startCli(const QStringList& args, const QString& runDir, int nproc, QString* error) {
  if (m_busy) {
    if (error) *error = QStringLiteral("a run is training; stop it or let it finish first");
    return false;
  }
  beginRun(nproc, true);
  QString err;
  if (!m_process->start(cliProgram(), args, runDir, &err)) {
    // Reported like any failed start (message box, status bar), then the queue goes on.
    QMetaObject::invokeMethod(
        this, [this, err] { onFailed(err, QString()); }, Qt::QueuedConnection);
    Q_EMIT stateChanged();
    if (error) *error = err;
    return false;
  }
  m_runDir = QFileInfo(runDir).absoluteFilePath();
  Q_EMIT stateChanged();
  return true;
}

bool TrainingController::resumeRun(const QString& dir, QString* error) {
  if (m_busy) {
    if (error) *error = QStringLiteral("a run is training; stop it or let it finish first");
    return false;
  }
  const QString abs = QFileInfo(dir).absoluteFilePath();
  if (!QFileInfo::exists(QDir(abs).filePath(QStringLiteral("checkpoints/last.pt")))) {
    if (error) *error = QStringLiteral("%1 has no checkpoint to resume from").arg(QFileInfo(abs).fileName());
    return false;
  }
  QFile f(QDir(abs).filePath(QStringLiteral("summary.json")));
  const QJsonObject summary =
      f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
  const int nproc = std::max(1, summary.value(QStringLiteral("processes")).toInt(1));
  // What the run logged before (read now, while nothing writes the file), up to its last step.
  QVector<MetricPoint> history = readMetricsFile(QDir(abs).filePath(QStringLiteral("metrics.jsonl")));
  const double stoppedAt = summary.value(QStringLiteral("step")).toDouble(-1);
  if (stoppedAt >= 0)
    history.erase(std::remove_if(history.begin(), history.end(),
                                 [stoppedAt](const MetricPoint& p) { return p.step > stoppedAt; }),
                  history.end());
  if (nproc > 1) {
    const bool ok =
        startCli({QStringLiteral("train"), QStringLiteral("--resume"), abs, QStringLiteral("--nproc"),
                  QString::number(nproc), QStringLiteral("--threads"), QString::number(threadsPerProcess(nproc))},
                 abs, nproc, error);
    if (ok) m_history = history;
    return ok;
  }
  beginRun(1, false);
  m_history = history;
  const QString ws = m_workspace;
  const int threads = threadsPerProcess(1);
  TrainWorker* w = m_worker;
  QMetaObject::invokeMethod(
      w, [w, ws, abs, threads] { w->start(QByteArray("{}"), ws, abs, threads); }, Qt::QueuedConnection);
  Q_EMIT stateChanged();
  return true;
}

void TrainingController::clearQueue() {
  m_queue.clear();
  Q_EMIT stateChanged();
}

void TrainingController::launch(const Queued& item) {
  const QJsonObject& cfg = item.cfg;
  const QByteArray json = QJsonDocument(cfg).toJson(QJsonDocument::Compact);
  const QString ws = m_workspace;
  QDir().mkpath(ws);
  if (item.nproc > 1) {
    // The launcher and every worker read the config from a file: it lives until the run ends.
    QTemporaryFile tmp(QDir::temp().filePath(QStringLiteral("cellscope-config-XXXXXX.json")));
    tmp.setAutoRemove(false);
    QString err;
    if (!tmp.open() || tmp.write(QJsonDocument(cfg).toJson()) < 0 || !tmp.flush()) {
      beginRun(item.nproc, true);
      err = QStringLiteral("cannot write a temporary configuration file: ") + tmp.errorString();
      QMetaObject::invokeMethod(
          this, [this, err] { onFailed(err, QString()); }, Qt::QueuedConnection);
      return;
    }
    m_configFile = tmp.fileName();
    tmp.close();
    const QString dir = newRunDirectory(ws, cfg);
    startCli(parallelArguments(cfg, m_configFile, item.nproc, dir), dir, item.nproc);
    return;
  }
  beginRun(1, false);
  const int threads = threadsPerProcess(1);  // leave a core for the GUI
  TrainWorker* w = m_worker;
  QMetaObject::invokeMethod(
      w, [w, json, ws, threads] { w->start(json, ws, QString(), threads); }, Qt::QueuedConnection);
  Q_EMIT stateChanged();
}

void TrainingController::startNextQueued() {
  if (m_busy || m_queue.isEmpty()) return;
  m_fromQueue = true;
  launch(m_queue.takeFirst());
  m_fromQueue = false;
}

void TrainingController::pause() {
  if (!m_busy) return;
  if (m_processMode) {
    Q_EMIT notice(
        QStringLiteral("A run in separate processes cannot pause: Stop keeps a checkpoint and Resume continues it"));
    return;
  }
  m_worker->setPaused(true);
  Q_EMIT paused();
  Q_EMIT stateChanged();
}

void TrainingController::resume() {
  if (!m_busy || m_processMode) return;
  m_worker->setPaused(false);
  Q_EMIT stateChanged();
}

void TrainingController::togglePause() {
  if (isPaused()) resume();
  else pause();
}

void TrainingController::stop() {
  if (!m_busy) return;
  if (m_processMode) {
    m_process->stop();  // SIGTERM: every rank stops at the same step, one checkpoint
    Q_EMIT stopping();
    return;
  }
  m_worker->setPaused(false);
  m_worker->requestStop();
  Q_EMIT stopping();
}

void TrainingController::drain() {
  QVector<MetricPoint> pts;
  QStringList logs;
  TrainProgress pr;
  const bool hasProgress = m_processMode ? m_process->poll(&pts, &logs, &pr) : m_worker->drain(&pts, &logs, &pr);
  Q_EMIT drained(pts, logs);
  if (hasProgress && m_busy) {
    m_progress = pr;
    Q_EMIT progressChanged(pr);
  }
}

void TrainingController::onStarted(const QString& runDir, const QString& metric, const QString& unit, qint64 params) {
  m_runDir = runDir;
  m_primary = metric;
  Q_EMIT runInfo(runDir, metric, unit, params);
  Q_EMIT runStarted(runDir);
}

void TrainingController::endRun() {
  m_busy = false;
  m_processMode = false;
  if (!m_configFile.isEmpty()) QFile::remove(m_configFile);
  m_configFile.clear();
}

void TrainingController::onFinished(const QString& status, const QString& reason, const QString& runDir) {
  drain();
  endRun();
  if (status == QLatin1String("failed")) m_lastError = reason;
  Q_EMIT finishedWithReason(runDir, status, reason);
  Q_EMIT runFinished(runDir, status);
  Q_EMIT stateChanged();
  startNextQueued();
}

void TrainingController::onFailed(const QString& message, const QString& runDir) {
  drain();
  endRun();
  m_lastError = message;
  Q_EMIT failedInRun(message, runDir);
  Q_EMIT runFailed(message);
  Q_EMIT stateChanged();
  startNextQueued();
}

}  // namespace gui
