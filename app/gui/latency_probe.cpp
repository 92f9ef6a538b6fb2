#include "latency_probe.h"

#include <algorithm>
#include <cmath>

namespace gui {

LatencyProbe::LatencyProbe(int periodMs, QObject* parent) : QObject(parent), m_period(std::max(1, periodMs)) {
  m_timer.setTimerType(Qt::PreciseTimer);
  m_timer.setInterval(m_period);
  connect(&m_timer, &QTimer::timeout, this, &LatencyProbe::tick);
}

void LatencyProbe::start() {
  m_lat.clear();
  m_clock.start();
  m_last = m_clock.nsecsElapsed();
  m_timer.start();
}

void LatencyProbe::stop() { m_timer.stop(); }

void LatencyProbe::tick() {
  const qint64 now = m_clock.nsecsElapsed();
  m_lat.push_back(std::max(0.0, double(now - m_last) / 1e6 - m_period));  // lateness beyond the period
  m_last = now;
}

double LatencyProbe::percentile(QVector<double> v, double q) {
  if (v.isEmpty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const int i = std::clamp(int(std::ceil(q * v.size())) - 1, 0, int(v.size()) - 1);
  return v[i];
}

LatencySummary LatencyProbe::summarize(const QVector<double>& lat) {
  LatencySummary s;
  s.samples = int(lat.size());
  if (lat.isEmpty()) return s;
  s.p50_ms = percentile(lat, 0.50);
  s.p99_ms = percentile(lat, 0.99);
  s.max_ms = percentile(lat, 1.0);
  double sum = 0;
  for (double x : lat) sum += x;
  s.mean_ms = sum / lat.size();
  return s;
}

}  // namespace gui
