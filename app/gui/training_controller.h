// TrainingController: one training at a time, and a queue of the configurations
// to train next. A one-process run trains in this program on a worker thread:
// the controller owns the QThread and the TrainWorker moved to it (never a
// QThread::run override). A data-parallel run (nproc > 1), a fork and the resume
// of a data-parallel run are cellscope-cli processes (ProcessRun) that the
// controller follows through their run directory. Either way a timer drains the
// new points at a fixed rate (10 Hz, whatever the training speed) and the views
// only listen to the same signals. No widgets here.
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

class ProcessRun;
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
  // The current run is a cellscope-cli process the window follows (no pause then).
  bool isProcessRun() const { return m_busy && m_processMode; }
  bool canPause() const { return m_busy && !m_processMode; }
  ProcessRun* processRun() const { return m_process; }
  // Processes of the current (or last) run: 1 in this program, N for `--nproc N`.
  int currentProcessCount() const { return m_nproc; }
  int queueSize() const { return m_queue.size(); }
  QString currentRunDir() const { return m_runDir; }
  QString primaryMetric() const { return m_primary; }
  QString lastError() const { return m_lastError; }
  TrainProgress progress() const { return m_progress; }
  // The run being prepared was started from the queue (not by Start, Resume or a fork).
  bool startedFromQueue() const { return m_fromQueue; }
  // A resumed run's records before it was resumed (metrics.jsonl up to the step it stopped at,
  // a fork's parent records first); empty for a new run.
  const QVector<MetricPoint>& resumedHistory() const { return m_history; }

  // Starts cfg now when idle; queues it behind the current run otherwise (then false).
  // nproc > 1: `cellscope-cli train CFG --nproc nproc --run-dir NEW --threads K` (K:
  // training.threads when set, else threadsPerProcess(nproc)), followed through NEW.
  bool start(const QJsonObject& cfg, int nproc = 1);
  // Queues cfg behind the current run; starts it at once when idle.
  void enqueue(const QJsonObject& cfg, int nproc = 1);
  // Continues a stopped run exactly where its last checkpoint left it (`train --resume`):
  // in this program, or with `--nproc N` when the run was trained by N processes.
  // False (with *error) when a run is training or dir has no last checkpoint.
  bool resumeRun(const QString& dir, QString* error = nullptr);
  // Runs `cellscope-cli <args>` that writes a run into runDir and follows it like a run of
  // its own (forks: train --fork DIR@STEP ... --run-dir runDir). False (*error) when busy.
  bool startCli(const QStringList& args, const QString& runDir, int nproc = 1, QString* error = nullptr);
  // The command line start() uses for nproc > 1 (configFile: where cfg was written).
  static QStringList parallelArguments(const QJsonObject& cfg, const QString& configFile, int nproc,
                                       const QString& runDir);

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
  void stopping();                   // stop() was asked: the run writes its checkpoint and ends
  void notice(const QString& text);  // a short message for the status bar

 private:
  struct Queued {
    QJsonObject cfg;
    int nproc = 1;
  };
  void launch(const Queued& item);
  void beginRun(int nproc, bool processMode);
  void endRun();
  void startNextQueued();
  void onStarted(const QString& runDir, const QString& metric, const QString& unit, qint64 params);
  void onFinished(const QString& status, const QString& reason, const QString& runDir);
  void onFailed(const QString& message, const QString& runDir);

  QThread* m_thread = nullptr;
  TrainWorker* m_worker = nullptr;
  QTimer* m_drainTimer = nullptr;
  ProcessRun* m_process = nullptr;
  QString m_configFile;  // the config a data-parallel run reads (removed when it ends)
  QList<Queued> m_queue;
  QString m_workspace, m_runDir, m_primary, m_lastError;
  TrainProgress m_progress;
  bool m_busy = false;
  bool m_processMode = false;
  bool m_fromQueue = false;
  QVector<MetricPoint> m_history;
  int m_nproc = 1;
};

}  // namespace gui
