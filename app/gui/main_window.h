// The workbench window: a thin shell. On the left the ConfigurePanel, on the
// right the tabs, each a panel registered once in panels() with its title,
// View-menu shortcut and whether the configuration stays beside it; a
// TrainingController trains, a FigureExporter exports. The window owns the
// workspace, the settings, the menus and the status bar and wires the parts
// together; every view lives in its own panel class.
#pragma once
#include <QKeySequence>
#include <QList>
#include <QMainWindow>
#include <QSize>
#include <QString>

class QAction;
class QSettings;
class QSplitter;
class QTabWidget;

namespace gui {

class AnalysisPanel;
class ComparePanel;
class ConfigurePanel;
class DecodePanel;
class FigureExporter;
class GeneratePanel;
class ReportDialog;
class RunActions;
class SweepPanel;
class TrainingController;
class TrainingPanel;
class TrainingStatus;

struct WindowOptions {
  QString workspace;     // empty: $CELLSCOPE_WORKSPACE, else the remembered one, else cs::default_workspace()
  QString settingsFile;  // empty: the application's QSettings; else this INI file (tests)
  QString dataset;       // preselect this manifest dataset
  bool restoreLastConfig = true;
};

// One tab of the window.
struct PanelEntry {
  QString title;          // tab title (also what --tab matches)
  QString menuText;       // View menu entry
  QKeySequence shortcut;  // View menu shortcut
  QWidget* widget = nullptr;
  bool showsConfiguration = true;  // the ConfigurePanel stays beside this tab
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const WindowOptions& options = WindowOptions(), QWidget* parent = nullptr);
  ~MainWindow() override;

  ConfigurePanel* configurePanel() const { return m_configure; }
  TrainingPanel* trainingPanel() const { return m_training; }
  ComparePanel* comparePanel() const { return m_compare; }
  AnalysisPanel* analysisPanel() const { return m_analysis; }
  SweepPanel* sweepPanel() const { return m_sweeps; }
  GeneratePanel* generatePanel() const { return m_generate; }
  DecodePanel* decodePanel() const { return m_decode; }
  TrainingController* controller() const { return m_controller; }
  FigureExporter* exporter() const { return m_exporter; }
  RunActions* runActions() const { return m_runTableActions; }  // the run table's context menu

  const QList<PanelEntry>& panels() const { return m_panels; }
  QWidget* currentPanel() const;
  void showPanel(QWidget* panel);
  bool showPanel(const QString& title);  // case-insensitive

  QString workspace() const { return m_workspace; }
  void openWorkspace(const QString& dir);
  QString progressText() const;                    // the status bar's training status
  void showRunInTrainingView(const QString& dir);  // a finished run's curves
  // Sweeps > Report...: the report dialog over this workspace (created on first use, shown).
  ReportDialog* openReportDialog();

 public Q_SLOTS:
  bool startTraining();  // false when the config is invalid (errors shown), a sweep runs, or a run is active (then
                         // queued)
  void enqueueCurrent();
  void refreshWorkspace();

 protected:
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildPanels();
  void buildMenus();
  void connectTraining();
  void loadSettings(const WindowOptions& options);
  void saveSettings();
  // Within the available geometry of the window's screen (never larger; moved onto it).
  void fitToScreen();
  void updateActions();
  void onFinished(const QString& runDir, const QString& status, const QString& reason);
  void onFailed(const QString& message, const QString& runDir);
  void exportAllInteractive();
  void chooseWorkspace();
  void showAbout();

  QSettings* m_settings = nullptr;
  TrainingController* m_controller = nullptr;
  FigureExporter* m_exporter = nullptr;
  ConfigurePanel* m_configure = nullptr;
  TrainingPanel* m_training = nullptr;
  ComparePanel* m_compare = nullptr;
  AnalysisPanel* m_analysis = nullptr;
  SweepPanel* m_sweeps = nullptr;
  GeneratePanel* m_generate = nullptr;
  DecodePanel* m_decode = nullptr;
  RunActions* m_runTableActions = nullptr;
  ReportDialog* m_reportDialog = nullptr;
  QList<PanelEntry> m_panels;
  QTabWidget* m_tabs = nullptr;
  QSplitter* m_mainSplitter = nullptr;
  QList<QAction*> m_runActions;  // start, queue, pause, stop
  TrainingStatus* m_status = nullptr;
  QString m_workspace;
  bool m_closeAfterStop = false;
  bool m_shownOnce = false;
  QSize m_initialSize;
};

}  // namespace gui
