#include "train_worker.h"

#include <QMutexLocker>

#include "core_bridge.h"
#include "train/launch.h"
#include "train/trainer.h"
#include "util/error.h"

namespace gui {

struct TrainWorker::Impl {
  cs::TrainerControl control;
};

TrainWorker::TrainWorker(QObject* parent) : QObject(parent), d(std::make_unique<Impl>()) {}
TrainWorker::~TrainWorker() = default;

void TrainWorker::requestStop() { d->control.stop = true; }
void TrainWorker::setPaused(bool paused) { d->control.pause = paused; }
bool TrainWorker::isPaused() const { return d->control.pause.load(); }

bool TrainWorker::drain(QVector<MetricPoint>* metrics, QStringList* logs, TrainProgress* progress) {
  QMutexLocker lock(&m_mutex);
  if (metrics) metrics->append(m_metrics);
  if (logs) logs->append(m_logs);
  m_metrics.clear();
  m_logs.clear();
  const bool had = m_hasProgress;
  if (had && progress) *progress = m_progress;
  m_hasProgress = false;
  return had;
}

void TrainWorker::start(const QByteArray& cfgJson, const QString& workspace, const QString& resumeDir, int threads) {
  d->control.stop = false;
  d->control.pause = false;
  m_running = true;
  QString runDir = resumeDir;
  try {
    cs::LaunchOptions lo;
    lo.workspace = workspace.toStdString();
    lo.resume_dir = resumeDir.toStdString();
    lo.default_threads = threads;
    // validate -> threads + seed -> make_task (loads data) -> run directory -> Trainer
    cs::LaunchedRun run = cs::start_run(cs::parse_json(cfgJson.toStdString(), "configuration"), lo);
    runDir = QString::fromStdString(run.store->dir());
    for (const auto& note : run.notes) {  // e.g. the run's own script copy used (cells/script_cell.h)
      run.store->log(note);
      QMutexLocker lock(&m_mutex);
      m_logs << QString::fromStdString(note);
    }
    const auto& s = run.trainer->summary();
    Q_EMIT started(runDir, QString::fromStdString(run.trainer->task().primary_metric()),
                   QString::fromStdString(run.trainer->task().unit_name()), static_cast<qint64>(s.parameters));
    cs::TrainerCallbacks cb;
    cb.on_metrics = [this](const cs::MetricsRecord& r) {
      MetricPoint p = toMetricPoint(r);
      QMutexLocker lock(&m_mutex);
      m_metrics.append(std::move(p));
    };
    cb.on_progress = [this](const cs::Progress& pr) {
      QMutexLocker lock(&m_mutex);
      m_progress.step = pr.step;
      m_progress.total = pr.total_steps;
      m_progress.elapsed = pr.elapsed;
      m_progress.eta = pr.eta;
      m_progress.throughput = pr.throughput;
      m_progress.lastLoss = pr.last_loss;
      m_progress.unit = QString::fromStdString(pr.unit);
      m_hasProgress = true;
    };
    cb.on_log = [this](const std::string& line) {
      QMutexLocker lock(&m_mutex);
      m_logs << QString::fromStdString(line);
    };
    auto outcome = run.trainer->run(&d->control, cb);
    m_running = false;
    Q_EMIT finished(QString::fromStdString(outcome.summary.status), QString::fromStdString(outcome.summary.reason),
                    runDir);
  } catch (const std::exception& e) {
    // The trainer marks the run failed in summary.json before rethrowing;
    // errors before the run directory exists leave nothing behind.
    m_running = false;
    Q_EMIT failed(QString::fromUtf8(e.what()), runDir);
  } catch (...) {
    m_running = false;
    Q_EMIT failed(QStringLiteral("unknown error"), runDir);
  }
}

}  // namespace gui
