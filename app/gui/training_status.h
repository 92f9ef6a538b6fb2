// TrainingStatus: the status bar's view of the TrainingController. A line
// "Step 120 / 1000 · train bpc 2.785 · 5.2k chars/s · elapsed 1m02s · ETA 8m40s"
// (or preparing / paused / stopping / how the run ended), the queue length and
// a progress bar shown while a run trains. The bar's value is the step (range
// 0..total), set from the same progress value as the line, so both always show
// the same step. The last step's loss (a cross-entropy in nats) is shown in the
// unit of the training plot: bits per character for bpc, perplexity for ppl,
// else "loss ... nats" (lossInPlotUnit).
#pragma once
#include <QObject>
#include <QString>

class QLabel;
class QProgressBar;
class QStatusBar;

namespace gui {

class TrainingController;
struct TrainProgress;

QString lossInPlotUnit(double lossNats, const QString& primaryMetric);

class TrainingStatus : public QObject {
  Q_OBJECT
 public:
  TrainingStatus(TrainingController* controller, QStatusBar* bar);
  QString text() const;
  QProgressBar* progressBar() const;
  // "Failed: ..." goes back to "Ready" (the configuration was fixed).
  void clearFailure();
  // The status of one progress value (public for tests).
  void showProgress(const TrainProgress& p);

 private:
  void showEnd(const QString& text);
  void showState();

  TrainingController* m_controller;
  QLabel* m_status = nullptr;
  QLabel* m_queue = nullptr;
  QProgressBar* m_progress = nullptr;
};

}  // namespace gui
