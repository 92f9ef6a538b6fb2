// Event-loop latency of the GUI thread (the workbench stays responsive while a
// training runs; goal p99 < 30 ms). A precise QTimer with a short period (5 ms) runs on the
// thread whose event loop is measured; each timeout records its lateness: the time since the
// previous timeout minus the period (clamped at 0). A busy event loop (a long replot, a slow
// slot, a starved GUI thread) delays the timeouts, and the lateness says by how much.
// Used by `cellscope --measure-latency SECONDS` (main.cpp) and testable without timing.
#pragma once
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <QVector>

namespace gui {

struct LatencySummary {
  int samples = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
};

class LatencyProbe : public QObject {
  Q_OBJECT
 public:
  explicit LatencyProbe(int periodMs = 5, QObject* parent = nullptr);
  void start();  // clears the samples and starts the timer
  void stop();
  bool isRunning() const { return m_timer.isActive(); }
  int periodMs() const { return m_period; }
  const QVector<double>& latenciesMs() const { return m_lat; }
  LatencySummary summary() const { return summarize(m_lat); }
  // The nearest-rank percentile (q in [0, 1]) of v; NaN when v is empty.
  static double percentile(QVector<double> v, double q);
  static LatencySummary summarize(const QVector<double>& latenciesMs);

 private:
  void tick();
  int m_period;
  QTimer m_timer;
  QElapsedTimer m_clock;
  qint64 m_last = 0;
  QVector<double> m_lat;
};

}  // namespace gui
