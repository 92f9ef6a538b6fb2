// Plain data that crosses from the training worker (and the core bridge) to the
// GUI. No torch, no nlohmann here: only Qt value types.
#pragma once
#include <QMetaType>
#include <QPair>
#include <QString>
#include <QVector>

namespace gui {

// One metrics.jsonl line (cs::MetricsRecord as Qt values).
struct MetricPoint {
  qint64 step = 0;
  double epoch = 0;
  double elapsed = 0;
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
enum class XAxis { Step = 0, Epoch = 1, Time = 2 };
inline double xOf(const MetricPoint& p, XAxis a) {
  return a == XAxis::Step ? double(p.step) : a == XAxis::Epoch ? p.epoch : p.elapsed;
}
inline QString xAxisLabel(XAxis a) {
  return a == XAxis::Step ? QStringLiteral("step") : a == XAxis::Epoch ? QStringLiteral("epoch") : QStringLiteral("wall time (s)");
}

}  // namespace gui

Q_DECLARE_METATYPE(gui::MetricPoint)
Q_DECLARE_METATYPE(gui::TrainProgress)
