// TrainingController: one training at a time on a worker thread, and a queue of
// the configurations to train next. Owns the QThread and the TrainWorker moved
// to it (never a QThread::run override) and the timer that drains the worker's
// new points at a fixed rate (10 Hz, whatever the training speed); the views
// only listen to its signals. No widgets here.
#pragma once
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include "gui_types.h"

class QThread;
class QTimer;

namespace gui {

class TrainWorker;

class TrainingController : public QObject {
  Q_OBJECT
public:
  explicit TrainingController(QObject* parent = nullptr);
  ~TrainingController() override;  // stops a run still going (its last checkpoint is kept)

  void setWorkspace(const QString& dir) { m_workspace = dir; }
  QString workspace() const { return m_workspace; }

  bool isTraining() const { return m_busy; }
  bool isPaused() const;
  int queueSize() const { return m_queue.size(); }
  QString currentRunDir() const { return m_runDir; }
  QString primaryMetric() const { return m_primary; }
  QString lastError() const { return m_lastError; }
  TrainProgress progress() const { return m_progress; }

  // Starts cfg now when idle; queues it behind the current run otherwise (then false).
  bool start(const QJsonObject& cfg);
  // Queues cfg behind the current run; starts it at once when idle.
  void enqueue(const QJsonObject& cfg);

public Q_SLOTS:
  void clearQueue();
  void pause();
  void resume();
  void togglePause();
  void stop();  // the run keeps its last checkpoint
  // Drains the worker now (the timer does it every 100 ms).
  void drain();

Q_SIGNALS:
  void preparing();  // a run was launched: the data is loading and the model being built
  void runStarted(const QString& runDir);
  void runInfo(const QString& runDir, const QString& primaryMetric, const QString& unit, qint64 parameters);
  void runFinished(const QString& runDir, const QString& status);
  void finishedWithReason(const QString& runDir, const QString& status, const QString& reason);
  void runFailed(const QString& message);
  void failedInRun(const QString& message, const QString& runDir);
  // Every drain: the points and log lines since the last one (possibly none).
  void drained(const QVector<gui::MetricPoint>& points, const QStringList& logs);
  void progressChanged(const gui::TrainProgress& progress);
  void stateChanged();  // training, paused or queue size changed
  void paused();
  void stopping();  // stop() was asked: the run writes its checkpoint and ends

private:
  void launch(const QJsonObject& cfg);
  void startNextQueued();
  void onStarted(const QString& runDir, const QString& metric, const QString& unit, qint64 params);
  void onFinished(const QString& status, const QString& reason, const QString& runDir);
  void onFailed(const QString& message, const QString& runDir);

  QThread* m_thread = nullptr;
  TrainWorker* m_worker = nullptr;
  QTimer* m_drainTimer = nullptr;
  QList<QJsonObject> m_queue;
  QString m_workspace, m_runDir, m_primary, m_lastError;
  TrainProgress m_progress;
  bool m_busy = false;
};

}  // namespace gui
