// TrainingPanel: the "Training" tab. The live curves of the run being trained
// (metric, learning rate, gradient norm, throughput, any extra metric a cell
// logs) against step, epoch or wall time, and the run's log. It only draws:
// points come from the TrainingController (append) or from a finished run's
// directory (showRun).
//
// Evaluation metrics beside the primary one (a seq2seq run's bleu, rouge1,
// rouge2, rougeL next to its ppl; any other key of the valid/test records) go
// to the "Validation metrics" plot, next to the main one, whose picker lists
// every such key seen so far (BLEU first). A baseline the records carry
// (lead_<metric>: the lead baseline of headline generation; freq_baseline_<metric>:
// the frequency baseline of cloze; <metric>_baseline) is drawn as a labelled
// dashed reference line on the plot that shows <metric> (its latest value per
// split), never as a curve of its own.
#pragma once
#include <QHash>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "gui_types.h"

class QComboBox;
class QGridLayout;
class QLabel;
class QPlainTextEdit;

namespace csw {
class CurvePlot;
}

namespace gui {

class FigureExporter;

class TrainingPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingPanel(FigureExporter* exporter, QWidget* parent = nullptr);

  csw::CurvePlot* plot(const QString& name) const;  // metric, eval, lr, grad_norm, throughput, extra
  QList<csw::CurvePlot*> plots() const;
  QString logText() const;
  XAxis xAxis() const { return m_xAxis; }
  void setXAxis(XAxis axis);

  // A new run is being prepared: "preparing" shown; the previous curves and log
  // stay until the run has started (setRunInfo clears them), so a Start that
  // fails (showFailure) keeps them. clearFailure() takes the failure message
  // away again (the window calls it when the configuration is valid again).
  void beginRun();
  void clearFailure();
  bool failureShown() const;
  QString runLabelText() const;
  void setRunInfo(const QString& runDir, const QString& primaryMetric, const QString& unit, qint64 parameters);
  void showFailure(const QString& message);
  // A resumed run's earlier records (before the points of this session): drawn first.
  void prependHistory(const QVector<MetricPoint>& points);
  // New points and log lines of the run being trained; replots (queued) what changed.
  void append(const QVector<MetricPoint>& points, const QStringList& logs);
  void appendLog(const QString& line);
  // A finished run's curves and log. False when dir is not a readable run.
  bool showRun(const QString& dir);
  void resetViews();

  // The "Validation metrics" plot's picker: the evaluation keys offered (in the picker's
  // order) and the one shown.
  QComboBox* evalMetricPicker() const { return m_evalPicker; }
  QStringList evalMetrics() const;
  QString evalMetric() const;
  bool setEvalMetric(const QString& key);
  // The metric a baseline key is the baseline of ("lead_bleu" -> "bleu"); empty for others.
  static QString baselineOf(const QString& key);

  // Every figure of the view: <folder>/<run>-<name>.{png,pdf,svg,csv}.
  bool exportAllFigures(const QString& folder, QStringList* written = nullptr, QString* error = nullptr);

 Q_SIGNALS:
  void xAxisChanged(gui::XAxis axis);

 private:
  void addLivePoint(const MetricPoint& p);
  bool noteEvalKeys(const QVector<MetricPoint>& points);  // true: the metric shown changed
  void showEvalPlot(bool show);
  void drawBaseline(csw::CurvePlot* plot, const QString& split, const QString& key, double value);
  void rebuildLivePlots();
  void reset();

  FigureExporter* m_exporter;
  QLabel* m_runLabel = nullptr;
  QComboBox* m_xAxisCombo = nullptr;
  XAxis m_xAxis = XAxis::Step;
  QHash<QString, csw::CurvePlot*> m_plots;
  QGridLayout* m_grid = nullptr;
  QWidget* m_evalBox = nullptr;
  QComboBox* m_evalPicker = nullptr;
  bool m_evalShown = false, m_evalUserPicked = false;
  QStringList m_plotOrder;
  QPlainTextEdit* m_log = nullptr;
  QVector<MetricPoint> m_live;
  QString m_runDir, m_primary;
  bool m_pending = false, m_failureShown = false;
  QString m_labelBeforeRun, m_labelBeforeFailure;
  QStringList m_pendingLogs;
  QVector<MetricPoint> m_pendingPoints;
};

}  // namespace gui
