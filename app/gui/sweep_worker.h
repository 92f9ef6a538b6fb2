// The window's access to sweeps (core/run/sweep): a worker that runs a sweep on its
// own QThread (a QObject moved to the thread, never a QThread::run override), and
// Qt-typed helpers for the spec, the table and the series. Only sweep_worker.cpp
// includes core headers; everything crossing threads is plain Qt values.
#pragma once
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QVector>

#include <atomic>

namespace gui {

// One grid axis as the panel edits it: an option path and its values (JSON text each).
struct SweepAxisEdit {
  QString option;
  QStringList values;
};

// Builds a sweep spec {name, base, grid, seeds, table} (rows: the first axis,
// columns: the second if any, further axes join the rows), expands and validates
// every point. Returns an empty object and sets *error (every invalid point) on failure.
QJsonObject buildSweepSpec(const QString& name, const QJsonObject& base, const QList<SweepAxisEdit>& axes,
                           const QList<qint64>& seeds, int* points, QString* error);

struct SweepCellView {
  QString text;  // "mean ± std", "-" when empty, "(ref.)" for the paired reference
  bool best = false;
  int n = 0;
  double mean = 0, std = 0;
  // paired view: the verdict with its p ("holds (p = 0.012, 5 seeds)") and the tests behind it
  // (SWEEP_NOTES "Significance"); empty in the plain view and for the reference
  QString verdict, tests;
};
struct SweepTableView {
  QString title, metric, rowHeader, colHeader, caption;
  QStringList rows, cols;
  QVector<QVector<SweepCellView>> cells;
  bool higherIsBetter = false;
  int missing = 0;
};
// The table of the sweep in `dir` (pairedRef non-empty: paired differences to that column).
bool sweepTable(const QString& dir, const QString& pairedRef, SweepTableView* out, QString* error);
// Writes the table as CSV, a LaTeX tabular, JSON or text (by the file's extension).
bool exportSweepTable(const QString& dir, const QString& pairedRef, const QString& path, QString* error);
// Numeric series of the first axis (e.g. CRU Fig. 3: filter length): per series label, x, mean, std.
struct SweepSeriesView {
  QString label;
  QVector<double> x, mean, std;
};
bool sweepSeries(const QString& dir, QList<SweepSeriesView>* out, QString* xName, QString* error);
QString sweepsRoot(const QString& workspace);  // <workspace>/sweeps

class SweepWorker : public QObject {
  Q_OBJECT
 public:
  explicit SweepWorker(QObject* parent = nullptr);
  void requestStop() { m_stop.store(true); }
  bool isRunning() const { return m_running.load(); }

 public Q_SLOTS:
  // specJson: a spec (buildSweepSpec). Runs the points not finished yet (resume).
  void start(const QByteArray& specJson, const QString& workspace, int threads);

 Q_SIGNALS:
  void pointStarted(int index, int total, const QString& id, bool resumed, const QString& runDir);
  void pointFinished(int index, int total, const QString& id, const QString& status);
  void progress(int step, int totalSteps);
  void finished(bool stopped, int done, int total, const QString& dir);
  void failed(const QString& message);

 private:
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_running{false};
};

}  // namespace gui
