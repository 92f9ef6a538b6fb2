#include "training_controller.h"

#include <QDir>
#include <QJsonDocument>
#include <QThread>
#include <QTimer>

#include <algorithm>

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

  // Metrics are pulled at 10 Hz, whatever the training speed.
  m_drainTimer = new QTimer(this);
  m_drainTimer->setInterval(100);
  connect(m_drainTimer, &QTimer::timeout, this, &TrainingController::drain);
  m_drainTimer->start();
}

TrainingController::~TrainingController() {
  m_worker->setPaused(false);
  m_worker->requestStop();
  stopWorkerThread(m_thread);
}

bool TrainingController::isPaused() const { return m_worker->isPaused(); }

bool TrainingController::start(const QJsonObject& cfg) {
  if (m_busy) {
    enqueue(cfg);
    return false;
  }
  launch(cfg);
  return true;
}

void TrainingController::enqueue(const QJsonObject& cfg) {
  if (!m_busy) {
    launch(cfg);
    return;
  }
  m_queue << cfg;
  Q_EMIT stateChanged();
}

void TrainingController::clearQueue() {
  m_queue.clear();
  Q_EMIT stateChanged();
}

void TrainingController::launch(const QJsonObject& cfg) {
  m_busy = true;
  m_lastError.clear();
  m_runDir.clear();
  m_primary.clear();
  m_progress = TrainProgress();
  Q_EMIT preparing();
  const QByteArray json = QJsonDocument(cfg).toJson(QJsonDocument::Compact);
  const QString ws = m_workspace;
  QDir().mkpath(ws);
  const int threads = std::max(1, QThread::idealThreadCount() - 1);  // leave a core for the GUI
  TrainWorker* w = m_worker;
  QMetaObject::invokeMethod(w, [w, json, ws, threads] { w->start(json, ws, QString(), threads); }, Qt::QueuedConnection);
  Q_EMIT stateChanged();
}

void TrainingController::startNextQueued() {
  if (m_busy || m_queue.isEmpty()) return;
  launch(m_queue.takeFirst());
}

void TrainingController::pause() {
  if (!m_busy) return;
  m_worker->setPaused(true);
  Q_EMIT paused();
  Q_EMIT stateChanged();
}

void TrainingController::resume() {
  if (!m_busy) return;
  m_worker->setPaused(false);
  Q_EMIT stateChanged();
}

void TrainingController::togglePause() {
  if (isPaused()) resume();
  else pause();
}

void TrainingController::stop() {
  if (!m_busy) return;
  m_worker->setPaused(false);
  m_worker->requestStop();
  Q_EMIT stopping();
}

void TrainingController::drain() {
  QVector<MetricPoint> pts;
  QStringList logs;
  TrainProgress pr;
  const bool hasProgress = m_worker->drain(&pts, &logs, &pr);
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

void TrainingController::onFinished(const QString& status, const QString& reason, const QString& runDir) {
  drain();
  m_busy = false;
  if (status == QLatin1String("failed")) m_lastError = reason;
  Q_EMIT finishedWithReason(runDir, status, reason);
  Q_EMIT runFinished(runDir, status);
  Q_EMIT stateChanged();
  startNextQueued();
}

void TrainingController::onFailed(const QString& message, const QString& runDir) {
  drain();
  m_busy = false;
  m_lastError = message;
  Q_EMIT failedInRun(message, runDir);
  Q_EMIT runFailed(message);
  Q_EMIT stateChanged();
  startNextQueued();
}

}  // namespace gui
