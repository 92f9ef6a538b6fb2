// The workbench window: configure (forms generated from the config schema),
// train (a queue of runs on a worker thread, live curves), compare (run table,
// overlays, seed bands, config diff) and export (PNG/PDF/SVG/CSV).
// Everything here is Qt; the core is reached through core_bridge.h and
// train_worker.h only.
#pragma once
#include <QHash>
#include <QJsonObject>
#include <QMainWindow>
#include <QPointer>
#include <QStringList>
#include <QVector>

#include "export.h"
#include "gui_types.h"

class QAction;
class QCheckBox;
class QComboBox;
class QFileSystemWatcher;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSettings;
class QSortFilterProxyModel;
class QSplitter;
class QTabWidget;
class QTableView;
class QTableWidget;
class QThread;
class QTimer;

namespace csw {
class CurvePlot;
class OptionForm;
}  // namespace csw

namespace gui {

class AnalysisPanel;
class GeneratePanel;
class RunTableModel;
class TrainWorker;

struct WindowOptions {
  QString workspace;     // empty: $CELLSCOPE_WORKSPACE, else the remembered one, else cs::default_workspace()
  QString settingsFile;  // empty: the application's QSettings; else this INI file (tests)
  QString dataset;       // preselect this manifest dataset
  bool restoreLastConfig = true;
};

class MainWindow : public QMainWindow {
  Q_OBJECT
public:
  explicit MainWindow(const WindowOptions& options = WindowOptions(), QWidget* parent = nullptr);
  ~MainWindow() override;

  // ---- configuration
  csw::OptionForm* form() const { return m_form; }
  QComboBox* taskCombo() const { return m_taskCombo; }
  QComboBox* cellCombo() const { return m_cellCombo; }
  QComboBox* datasetCombo() const { return m_datasetCombo; }
  QComboBox* presetCombo() const { return m_presetCombo; }
  QJsonObject currentConfig() const;
  // Sets task, cell, dataset and every form value found in cfg (others reset to defaults).
  void applyConfig(const QJsonObject& cfg);
  // "section.key" = value, for the dedicated controls too (task.name, model.cell, dataset.name, dataset.path).
  bool setConfigValue(const QString& path, const QVariant& value);
  QStringList presetNames() const;
  bool applyPreset(const QString& name);
  bool selectDataset(const QString& name);
  void setDatasetFile(const QString& path);  // a file of the user's; format detected and shown
  QString datasetFormat() const;             // as shown (manifest format or detected)
  void revalidateNow();                      // synchronous validation (the window debounces it)
  QStringList validationErrors() const { return m_errors; }  // "path: message"
  qint64 parameterCount() const { return m_paramCount; }     // -1 while unknown

  // ---- training
  bool isTraining() const { return m_busy; }
  bool isPaused() const;
  QString currentRunDir() const { return m_runDir; }
  int queueSize() const { return m_queue.size(); }
  QString lastError() const { return m_lastError; }
  QString progressText() const;
  QPlainTextEdit* logView() const { return m_log; }
  csw::CurvePlot* trainingPlot(const QString& name) const;  // metric, lr, grad_norm, throughput, extra
  QList<csw::CurvePlot*> trainingPlots() const;
  void setXAxis(XAxis axis);
  XAxis xAxis() const { return m_xAxis; }
  void showRunInTrainingView(const QString& dir);  // a finished run's curves

  // ---- workspace and comparison
  QString workspace() const { return m_workspace; }
  void openWorkspace(const QString& dir);
  RunTableModel* runModel() const { return m_runModel; }
  QSortFilterProxyModel* runProxy() const { return m_runProxy; }
  QTableView* runView() const { return m_runView; }
  csw::CurvePlot* comparePlot() const { return m_comparePlot; }
  QComboBox* compareMetricCombo() const { return m_compareMetric; }
  void setSeedAggregation(bool on, bool stdBand = false);
  QString configDiffText() const;  // the diff of the two selected runs, one "key: a -> b" per line
  QTabWidget* tabs() const { return m_tabs; }
  AnalysisPanel* analysisPanel() const { return m_analysisPanel; }
  GeneratePanel* generatePanel() const { return m_generatePanel; }

  // ---- export
  void setExportOptions(const csw::ExportOptions& o) { m_exportOptions = o; }
  csw::ExportOptions exportOptions() const { return m_exportOptions; }
  bool exportPlot(csw::CurvePlot* plot, const QString& path, QString* error = nullptr);
  // Every figure of the training view: <folder>/<name>.{png,pdf,svg,csv}.
  bool exportAllFigures(const QString& folder, QStringList* written = nullptr, QString* error = nullptr);
  bool exportRunTable(const QString& path, QString* error = nullptr);

public Q_SLOTS:
  bool startTraining();  // false when the config is invalid (errors shown) or a run is active (then queued)
  void enqueueCurrent();
  void pauseTraining();
  void resumeTraining();
  void togglePause();
  void stopTraining();
  void refreshWorkspace();

Q_SIGNALS:
  void runStarted(const QString& runDir);
  void runFinished(const QString& runDir, const QString& status);
  void runFailed(const QString& message);
  void parameterCountChanged(qint64 count);
  void workspaceLoaded(int runs);

protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

private:
  void buildUi();
  void buildMenus();
  QWidget* buildConfigurePanel();
  QWidget* buildTrainingTab();
  QWidget* buildComparePanel();
  csw::CurvePlot* makePlot(const QString& title, const QString& yLabel);
  void loadSettings(const WindowOptions& options);
  void saveSettings();
  void populatePresets();
  void populateDatasets();
  void rebuildForm();
  void scheduleValidation();
  void requestParameterCount();
  void launch(const QJsonObject& cfg);
  void startNextQueued();
  void updateActions();
  void drainWorker();
  void addLivePoint(const MetricPoint& p);
  void rebuildLivePlots();
  void resetLivePlots();
  void onStarted(const QString& runDir, const QString& metric, const QString& unit, qint64 params);
  void onFinished(const QString& status, const QString& reason, const QString& runDir);
  void onFailed(const QString& message, const QString& runDir);
  void updateCompare();
  void updateCompareMetrics();
  void updateDiff();
  void periodicRefresh();
  void rescanWorkspace();
  const QVector<MetricPoint>& metricsOf(const QString& dir);
  void plotContextMenu(csw::CurvePlot* plot, const QPoint& pos);
  void exportPlotInteractive(csw::CurvePlot* plot);
  void exportAllInteractive();
  void exportTableInteractive();
  void exportOptionsDialog();
  void chooseWorkspace();
  void chooseDatasetFile();
  void showAbout();
  void appendLog(const QString& line);
  QString datasetLabel() const;

  // settings
  QSettings* m_settings = nullptr;
  GeneratePanel* m_generatePanel = nullptr;
  // config widgets
  QComboBox* m_presetCombo = nullptr;
  QComboBox* m_taskCombo = nullptr;
  QComboBox* m_datasetCombo = nullptr;
  QComboBox* m_cellCombo = nullptr;
  QLabel* m_cellInfo = nullptr;
  QLabel* m_formatLabel = nullptr;
  QLabel* m_workspaceLabel = nullptr;
  QLabel* m_topError = nullptr;
  QLabel* m_paramLabel = nullptr;
  csw::OptionForm* m_form = nullptr;
  QPushButton* m_startButton = nullptr;
  QPushButton* m_queueButton = nullptr;
  QPushButton* m_pauseButton = nullptr;
  QPushButton* m_stopButton = nullptr;
  QAction* m_startAction = nullptr;
  QAction* m_queueAction = nullptr;
  QAction* m_pauseAction = nullptr;
  QAction* m_stopAction = nullptr;
  QTimer* m_validateTimer = nullptr;
  QTimer* m_paramTimer = nullptr;
  QStringList m_errors;
  qint64 m_paramCount = -1;
  int m_paramGeneration = 0;
  QString m_datasetFile;  // non-empty: a user file instead of a manifest dataset
  bool m_applying = false;
  // training
  QThread* m_thread = nullptr;
  TrainWorker* m_worker = nullptr;
  bool m_busy = false;
  bool m_closeAfterStop = false;
  QList<QJsonObject> m_queue;
  QString m_runDir, m_primary, m_unit, m_lastError;
  TrainProgress m_progress;
  bool m_hasProgress = false;
  QVector<MetricPoint> m_live;
  QTimer* m_drainTimer = nullptr;
  QTabWidget* m_tabs = nullptr;
  AnalysisPanel* m_analysisPanel = nullptr;
  QComboBox* m_xAxisCombo = nullptr;
  XAxis m_xAxis = XAxis::Step;
  QLabel* m_runLabel = nullptr;
  QHash<QString, csw::CurvePlot*> m_plots;  // training view
  QStringList m_plotOrder;
  QPlainTextEdit* m_log = nullptr;
  QLabel* m_statusLabel = nullptr;
  QLabel* m_queueLabel = nullptr;
  QProgressBar* m_progressBar = nullptr;
  // workspace / compare
  QString m_workspace;
  QFileSystemWatcher* m_watcher = nullptr;
  QTimer* m_rescanTimer = nullptr;
  QTimer* m_refreshTimer = nullptr;
  RunTableModel* m_runModel = nullptr;
  QSortFilterProxyModel* m_runProxy = nullptr;
  QTableView* m_runView = nullptr;
  QLineEdit* m_filterEdit = nullptr;
  csw::CurvePlot* m_comparePlot = nullptr;
  QComboBox* m_compareMetric = nullptr;
  QCheckBox* m_seedBox = nullptr;
  QComboBox* m_bandCombo = nullptr;
  QTableWidget* m_diffTable = nullptr;
  QLabel* m_diffLabel = nullptr;
  struct CachedMetrics {
    qint64 size = -1;
    QVector<MetricPoint> points;
  };
  QHash<QString, CachedMetrics> m_metricsCache;
  QSplitter* m_mainSplitter = nullptr;
  csw::ExportOptions m_exportOptions;
};

}  // namespace gui
