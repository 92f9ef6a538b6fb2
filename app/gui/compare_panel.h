// ComparePanel: the "Compare" tab. The runs of the workspace in a sortable,
// filterable table (kept up to date as runs appear, finish or disappear, from
// this window or the CLI), overlays of the ticked runs' curves with optional
// seed aggregation (mean with a min-max or mean +- std band), and the config
// diff of two selected runs.
#pragma once
#include <QHash>
#include <QList>
#include <QSet>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "gui_types.h"

class QCheckBox;
class QComboBox;
class QFileSystemWatcher;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QTableWidget;
class QTimer;

namespace csw {
class CurvePlot;
}

namespace gui {

class FigureExporter;
class RunTableModel;

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePanel(FigureExporter* exporter, QWidget* parent = nullptr);

  RunTableModel* runModel() const { return m_runModel; }
  QSortFilterProxyModel* runProxy() const { return m_runProxy; }  // the table's sorted, filtered view
  csw::CurvePlot* comparePlot() const { return m_comparePlot; }

  // Shows the runs of dir and watches it.
  void setWorkspace(const QString& dir);
  // A run's row (new or updated) and its cached curves.
  void refreshRun(const QString& dir);
  // The x axis of the overlay: step, epoch, wall-clock time or training FLOPs (the compute-matched
  // views; the Compare tab's own "X:" choice, also set when the Training tab's changes). Runs whose
  // metrics have no value on that axis (training FLOPs of older files) are left out and named in
  // xAxisNote().
  void setXAxis(XAxis axis);
  XAxis xAxis() const { return m_xAxis; }
  // The note under the plot (empty when hidden): the runs left out on this axis, and the seed
  // groups with no mean drawn (a seed without a point of the metric yet), each on a line.
  QString xAxisNote() const;

  // The overlaid series as "split|key" (e.g. "valid|bpc"); false when no ticked run has it.
  QString compareMetric() const;
  bool setCompareMetric(const QString& key);
  void setSeedAggregation(bool on, bool stdBand = false);
  // Selects rows of the (sorted, filtered) table, as a click would.
  void selectRows(const QList<int>& rows);
  QString configDiffText() const;  // the diff of the two selected runs, one "key: a -> b" per line
  bool exportRunTable(const QString& path, QString* error = nullptr);

 public Q_SLOTS:
  void redraw();  // the overlay of the ticked runs, from their metrics files
  void exportTableInteractive();

 Q_SIGNALS:
  void showRunRequested(const QString& dir);  // double-click on a run

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QWidget* buildRunTable();  // the constructor's groups, top to bottom
  QWidget* buildPlotBox();
  QWidget* buildDiffBox();
  void watchWorkspace();
  void fitColumns();         // the run table's column widths (as its rows change)
  void updateControlRows();  // the plot's controls on as many rows as its width needs
  void updateDiffLabel();    // the diff's heading, run names elided to its width
  void updateCompareMetrics();
  void updateDiff();
  void periodicRefresh();
  void rescanWorkspace();
  const QVector<MetricPoint>& metricsOf(const QString& dir);

  // redraw()'s steps: the runs grouped by seed, their legend names and the figure's caption,
  // each group drawn (a run's own series, or the mean of its seeds with a band), then the note
  // under the plot. An Overlay is one redraw's series ("split|key") and what it leaves out.
  struct Overlay {
    QString sel, split, key;
    QStringList withoutX;  // runs with points that have no value on the x axis
    QStringList notes;     // said under the plot: what is not drawn, and why
  };
  void collectSeries(Overlay& o, const QString& dir, QVector<double>* xs, QVector<double>* ys,
                     QVector<qint64>* steps = nullptr);
  QStringList legendNames(const QStringList& runDirs, bool skipSeed) const;
  QList<QStringList> seedGroups(const QStringList& dirs) const;
  void setCaption(const QList<QStringList>& groups, const QStringList& names);
  void drawRun(Overlay& o, const QString& dir, const QString& name);
  void drawSeedMean(Overlay& o, const QStringList& group, const QString& name);
  void showNotes(Overlay& o);

  FigureExporter* m_exporter;
  QString m_workspace;
  XAxis m_xAxis = XAxis::Step;
  QFileSystemWatcher* m_watcher = nullptr;
  QTimer* m_rescanTimer = nullptr;
  QTimer* m_refreshTimer = nullptr;
  RunTableModel* m_runModel = nullptr;
  QSortFilterProxyModel* m_runProxy = nullptr;
  QTableView* m_runView = nullptr;
  QTimer* m_fitColumnsTimer = nullptr;
  bool m_fittingColumns = false;
  QSet<int> m_userSizedColumns;
  QWidget* m_plotBox = nullptr;
  QWidget* m_controls = nullptr;
  QList<QWidget*> m_controlGroups;    // metric, x axis, seed aggregation
  QList<QHBoxLayout*> m_controlRows;  // up to three rows of them
  QVector<int> m_controlRowOf;        // the row of each group now
  QLineEdit* m_filterEdit = nullptr;
  csw::CurvePlot* m_comparePlot = nullptr;
  QComboBox* m_compareMetric = nullptr;
  QComboBox* m_xAxisCombo = nullptr;
  QLabel* m_xNote = nullptr;
  QCheckBox* m_seedBox = nullptr;
  QComboBox* m_bandCombo = nullptr;
  QTableWidget* m_diffTable = nullptr;
  QLabel* m_diffLabel = nullptr;
  QStringList m_diffNames;  // the two runs of the diff (empty: none)
  QString m_diffCounts;
  struct CachedMetrics {
    qint64 size = -1;
    QVector<MetricPoint> points;
  };
  QHash<QString, CachedMetrics> m_metricsCache;
};

}  // namespace gui
