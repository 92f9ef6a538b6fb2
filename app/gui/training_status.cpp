#include "training_status.h"

#include <QLabel>
#include <QProgressBar>
#include <QStatusBar>

#include <algorithm>
#include <climits>
#include <cmath>

#include "core_bridge.h"
#include "training_controller.h"

namespace gui {

namespace {
QString fmtRate(double r) {
  if (r >= 1e6) return QString::number(r / 1e6, 'f', 2) + QLatin1Char('M');
  if (r >= 1e3) return QString::number(r / 1e3, 'f', 1) + QLatin1Char('k');
  return QString::number(r, 'f', 0);
}
}  // namespace

QString lossInPlotUnit(double lossNats, const QString& primaryMetric) {
  // The training loss is a cross-entropy in nats; the plots show the task's metric.
  if (primaryMetric == QLatin1String("bpc"))
    return QStringLiteral("train bpc %1").arg(lossNats / std::log(2.0), 0, 'f', 3);
  if (primaryMetric == QLatin1String("ppl"))
    return QStringLiteral("train ppl %1").arg(std::exp(std::min(lossNats, 700.0)), 0, 'f', 2);
  return QStringLiteral("train loss %1 nats").arg(lossNats, 0, 'f', 3);
}

TrainingStatus::TrainingStatus(TrainingController* controller, QStatusBar* bar)
    : QObject(bar), m_controller(controller) {
  m_status = new QLabel(QStringLiteral("Ready"));
  m_queue = new QLabel;
  m_progress = new QProgressBar;
  m_progress->setMaximumWidth(220);
  m_progress->setTextVisible(true);
  m_progress->hide();
  bar->addWidget(m_status, 1);
  bar->addPermanentWidget(m_queue);
  bar->addPermanentWidget(m_progress);

  connect(controller, &TrainingController::preparing, this, [this] {
    m_status->setText(QStringLiteral("Preparing..."));
    m_progress->setValue(0);
    m_progress->show();
  });
  connect(controller, &TrainingController::progressChanged, this, &TrainingStatus::showProgress);
  connect(controller, &TrainingController::runInfo, this, [this] {
    const TrainProgress p = m_controller->progress();
    if (p.total > 0) showProgress(p);
  });
  connect(controller, &TrainingController::paused, this,
          [this] { m_status->setText(QStringLiteral("Paused at step %1").arg(m_controller->progress().step)); });
  connect(controller, &TrainingController::stopping, this,
          [this] { m_status->setText(QStringLiteral("Stopping (writing a checkpoint)...")); });
  connect(
      controller, &TrainingController::finishedWithReason, this,
      [this](const QString&, const QString& status, const QString& reason) {
        showEnd(QStringLiteral("Run %1%2").arg(status, reason.isEmpty() ? QString() : QStringLiteral(": ") + reason));
      });
  connect(controller, &TrainingController::failedInRun, this, [this](const QString& message) {
    showEnd(QStringLiteral("Failed: ") + message.section(QLatin1Char('\n'), 0, 0));
  });
  connect(controller, &TrainingController::stateChanged, this, &TrainingStatus::showState);
}

QString TrainingStatus::text() const { return m_status->text(); }
QProgressBar* TrainingStatus::progressBar() const { return m_progress; }

void TrainingStatus::clearFailure() {
  if (m_status->text().startsWith(QLatin1String("Failed: "))) m_status->setText(QStringLiteral("Ready"));
}

void TrainingStatus::showProgress(const TrainProgress& pr) {
  // One step for both: the bar's value is the step itself (range 0..total).
  const int total = int(std::clamp<qint64>(pr.total, 0, INT_MAX));
  const int step = int(std::clamp<qint64>(pr.step, 0, std::max(total, 0)));
  m_progress->setRange(0, std::max(total, 1));
  m_progress->setValue(step);
  m_progress->setFormat(QStringLiteral("%1 / %2").arg(pr.step).arg(pr.total));
  // Pause takes effect after the step in flight: the step that step reports comes
  // after the pause, so the paused line follows the bar instead of keeping the step before.
  if (m_controller->isPaused()) m_status->setText(QStringLiteral("Paused at step %1").arg(pr.step));
  else
    m_status->setText(QStringLiteral("Step %1 / %2  \u00b7  %3  \u00b7  %4 %5/s  \u00b7  elapsed %6  \u00b7  ETA %7")
                          .arg(pr.step)
                          .arg(pr.total)
                          .arg(lossInPlotUnit(pr.lastLoss, m_controller->primaryMetric()))
                          .arg(fmtRate(pr.throughput), pr.unit, formatDuration(pr.elapsed), formatDuration(pr.eta)));
}

void TrainingStatus::showEnd(const QString& text) {
  m_progress->hide();
  m_status->setText(text);
}

void TrainingStatus::showState() {
  const int queued = m_controller->queueSize();
  m_queue->setText(queued == 0 ? QString() : QStringLiteral("Queue: %1 waiting").arg(queued));
}

}  // namespace gui
