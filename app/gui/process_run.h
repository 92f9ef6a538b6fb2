// ProcessRun: a training the window runs as a separate cellscope-cli process and
// follows through its run directory, exactly as it follows a run the user started
// from a terminal: data-parallel runs (`train --nproc N`: the launcher and its N
// workers) and forks (`train --fork DIR@STEP`). The run directory is fixed before
// the process starts (--run-dir), so the window knows where to look; poll() reads
// what the process added since the last call (metrics.jsonl and log.txt from the
// byte where it stopped, summary.json for the status and the parameter count) into
// the same plain structs the in-process TrainWorker hands over. stop() sends SIGTERM
// to the process (the launcher forwards it to every rank, which agree on a step,
// checkpoint once and exit with status "stopped").
#pragma once
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include "gui_types.h"

class QProcess;

namespace gui {

class ProcessRun : public QObject {
  Q_OBJECT
 public:
  explicit ProcessRun(QObject* parent = nullptr);
  ~ProcessRun() override;  // a process still running is sent SIGTERM and waited for (bounded)

  // Starts program with args; runDir is where the process writes the run (given to it as
  // --run-dir by the caller). An empty runDir that the process leaves empty is removed
  // when it fails before writing anything.
  bool start(const QString& program, const QStringList& args, const QString& runDir, QString* error = nullptr);
  bool isRunning() const;
  QString runDir() const { return m_runDir; }
  QStringList arguments() const { return m_args; }
  qint64 pid() const;
  void stop();  // SIGTERM

  // New points, log lines and progress since the last call (false: no new progress).
  // Emits started() the first time the run directory has its config and summary.
  bool poll(QVector<MetricPoint>* points, QStringList* logs, TrainProgress* progress);

 Q_SIGNALS:
  void started(const QString& runDir, const QString& primaryMetric, const QString& unit, qint64 parameters);
  // The process ended: status/reason from summary.json (a run that never got a summary,
  // or whose summary still says "running", is reported through failed()).
  void finished(const QString& status, const QString& reason, const QString& runDir);
  void failed(const QString& message, const QString& runDir);

 private:
  void onExit();
  QString outputTail() const;

  QProcess* m_proc = nullptr;
  QString m_runDir;
  QStringList m_args;
  bool m_started = false;
  bool m_dirCreatedHere = false;
  qint64 m_metricsOffset = 0, m_logOffset = 0;
  qint64 m_total = 0, m_firstStep = -1;
  double m_firstElapsed = 0;
  QString m_unit;
  QByteArray m_output;  // the process's stdout + stderr (tail kept)
};

}  // namespace gui
