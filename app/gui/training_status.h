// TrainingStatus: the status bar's view of the TrainingController. A line
// "Step 120 / 1000 · loss 1.234 · 5.2k chars/s · elapsed 1m02s · ETA 8m40s"
// (or preparing / paused / stopping / how the run ended), the queue length and
// a progress bar shown while a run trains.
#pragma once
#include <QObject>
#include <QString>

class QLabel;
class QProgressBar;
class QStatusBar;

namespace gui {

class TrainingController;
struct TrainProgress;

class TrainingStatus : public QObject {
  Q_OBJECT
public:
  TrainingStatus(TrainingController* controller, QStatusBar* bar);
  QString text() const;

private:
  void showProgress(const TrainProgress& p);
  void showEnd(const QString& text);
  void showState();

  TrainingController* m_controller;
  QLabel* m_status = nullptr;
  QLabel* m_queue = nullptr;
  QProgressBar* m_progress = nullptr;
};

}  // namespace gui
