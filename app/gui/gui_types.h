// Plain data that crosses from the training worker (and the core bridge) to the
// GUI. No torch, no nlohmann here: only Qt value types.
#pragma once
#include <QMetaType>
#include <QPair>
#include <QString>
#include <QVector>

#include <limits>

namespace gui {

// One metrics.jsonl line (cs::MetricsRecord as Qt values).
struct MetricPoint {
  qint64 step = 0;
  double epoch = 0;
  double elapsed = 0;
  double trainFlops = std::numeric_limits<double>::quiet_NaN();  // cumulative training FLOPs; NaN: not recorded
  bool eval = false;
  QString split;  // "valid" / "test" for eval lines
  QVector<QPair<QString, double>> values;
  double value(const QString& key, double fallback) const {
    for (const auto& kv : values)
      if (kv.first == key) return kv.second;
    return fallback;
  }
  bool has(const QString& key) const {
    for (const auto& kv : values)
      if (kv.first == key) return true;
    return false;
  }
};

// cs::Progress as Qt values.
struct TrainProgress {
  qint64 step = 0, total = 0;
  double elapsed = 0, eta = 0, throughput = 0, lastLoss = 0;
  QString unit;
};

// What the x axis of a curve shows.
// Flops: cumulative training FLOPs (3 x the analytic forward FLOPs; NaN for metrics files
// written before they were recorded: such points are not drawn, and the Compare tab says so).
enum class XAxis { Step = 0, Epoch = 1, Time = 2, Flops = 3 };
inline double xOf(const MetricPoint& p, XAxis a) {
  return a == XAxis::Step ? double(p.step) : a == XAxis::Epoch ? p.epoch : a == XAxis::Time ? p.elapsed : p.trainFlops;
}
inline QString xAxisLabel(XAxis a) {
  return a == XAxis::Step    ? QStringLiteral("step")
         : a == XAxis::Epoch ? QStringLiteral("epoch")
         : a == XAxis::Time  ? QStringLiteral("wall time (s)")
                             : QStringLiteral("training FLOPs");
}

}  // namespace gui

Q_DECLARE_METATYPE(gui::MetricPoint)
Q_DECLARE_METATYPE(gui::TrainProgress)
