// TrainWorker: runs one cs::Trainer at a time on the thread it was moved to
// (a QThread owned by TrainingController; never a QThread::run override).
//
// Thread model: start() is invoked as a queued slot and blocks its own thread
// for the whole run. The trainer's callbacks push plain structs into a
// mutex-protected queue; the GUI drains it on a fixed-rate timer (drain()), so
// however fast training goes, the GUI thread sees one batch per tick and never
// waits on the worker. Pause/stop are atomics (cs::TrainerControl) set directly
// from the GUI thread. Lifecycle events (started, finished, failed) are queued
// signals.
#pragma once
#include <QMutex>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include <atomic>
#include <memory>

#include "gui_types.h"

namespace gui {

class TrainWorker : public QObject {
  Q_OBJECT
 public:
  explicit TrainWorker(QObject* parent = nullptr);
  ~TrainWorker() override;

  // Thread-safe (called from the GUI thread while start() runs).
  void requestStop();
  void setPaused(bool paused);
  bool isPaused() const;
  bool isRunning() const { return m_running.load(); }
  // Moves everything queued since the last call into the arguments (appending).
  // Returns true when a new progress value is available.
  bool drain(QVector<MetricPoint>* metrics, QStringList* logs, TrainProgress* progress);

 public Q_SLOTS:
  // cfgJson: a raw config (validated here). resumeDir non-empty: resume that run.
  // threads: LibTorch intra-op threads when training.threads is 0.
  void start(const QByteArray& cfgJson, const QString& workspace, const QString& resumeDir, int threads);

 Q_SIGNALS:
  void started(const QString& runDir, const QString& primaryMetric, const QString& unit, qint64 parameters);
  void finished(const QString& status, const QString& reason, const QString& runDir);
  void failed(const QString& message, const QString& runDir);

 private:
  struct Impl;
  std::unique_ptr<Impl> d;
  std::atomic<bool> m_running{false};
  mutable QMutex m_mutex;
  QVector<MetricPoint> m_metrics;
  QStringList m_logs;
  TrainProgress m_progress;
  bool m_hasProgress = false;
};

}  // namespace gui
