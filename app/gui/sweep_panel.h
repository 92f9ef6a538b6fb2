// The "Sweeps" tab: the window's current configuration as the base, a
// grid editor (option path + comma-separated values), seeds, Run / Stop / Resume
// on a worker thread (SweepWorker), progress, the sweep's table (best in bold,
// paired-difference toggle), CSV / LaTeX export, and a plot of the metric against
// a numeric first axis with error bars over seeds (CRU Fig. 3: filter length).
#pragma once
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QWidget>

#include "sweep_worker.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSplitter;
class QTableWidget;
class QThread;
class QVBoxLayout;

namespace gui {

class ConfigurePanel;
class TrainingController;

class SweepPanel : public QWidget {
  Q_OBJECT
 public:
  // The sweep's base is config's current configuration; no sweep starts while training trains.
  SweepPanel(const ConfigurePanel* config, const TrainingController* training, QWidget* parent = nullptr);
  ~SweepPanel() override;

  // ---- editing (also for tests)
  void setSweepName(const QString& name);
  QString sweepName() const;
  void setGrid(const QList<QPair<QString, QString>>& rows);  // (option path, "v1, v2, ...")
  void setSeeds(const QString& seeds);                       // "1, 2, 3"
  QTableWidget* gridEditor() const { return m_grid; }
  QTableWidget* resultTable() const { return m_table; }
  QCheckBox* pairedCheck() const { return m_paired; }
  QComboBox* pairedReference() const { return m_pairedRef; }
  QCustomPlot* seriesPlot() const { return m_plot; }
  QString statusText() const;
  QString captionText() const;  // the table's caption (title, metric, data, what p covers)
  QString sweepDir() const { return m_dir; }
  bool isRunning() const;
  QString lastError() const { return m_lastError; }
  void setWorkspace(const QString& dir) { m_workspace = dir; }

  // Expands and validates the grid on the window's current config; false (errors shown) if invalid.
  // After openSweep, with the name, grid and seeds as it showed them, it resumes the opened sweep as its
  // sweep.json specifies (its own base, named axes and exclusions, which the editor cannot show).
  bool startSweep();
  void stopSweep();
  // Opens an existing sweep directory (table and plot) without running it.
  bool openSweep(const QString& dir);
  void refreshTable();
  bool exportTable(const QString& path, QString* error = nullptr);  // .csv, .tex, .json, .txt

 Q_SIGNALS:
  void sweepFinished(bool stopped, int done, int total);
  void sweepFailed(const QString& message);
  void runsChanged();  // a sweep finished: new runs in the workspace

 private:
  // The constructor's parts, left to right (each builds its widgets and sets the members it owns).
  QWidget* buildDefinitionSide(QSplitter* split);
  void buildGridEditor(QWidget* left, QVBoxLayout* l);
  QScrollArea* buildStatusArea(QWidget* left);
  QWidget* buildResultSide(QSplitter* split);
  void connectWorker();

  void onPointStarted(int index, int total, const QString& id, bool resumed, const QString& runDir);
  void onPointFinished(int index, int total, const QString& id, const QString& status);
  void onProgress(int step, int total);
  void onFinished(bool stopped, int done, int total, const QString& dir);
  void onFailed(const QString& message);
  void updateButtons();
  void updatePlot();
  void exportInteractive(const QString& ext);
  QList<SweepAxisEdit> axes() const;
  QList<qint64> seeds(QString* error) const;

  const ConfigurePanel* m_config;
  const TrainingController* m_training;
  QString m_workspace;
  QLineEdit* m_name = nullptr;
  QTableWidget* m_grid = nullptr;
  QLineEdit* m_seeds = nullptr;
  QPushButton* m_run = nullptr;
  QPushButton* m_stop = nullptr;
  QPushButton* m_open = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_status = nullptr;
  QLabel* m_caption = nullptr;
  QTableWidget* m_table = nullptr;
  QCheckBox* m_paired = nullptr;
  QComboBox* m_pairedRef = nullptr;
  QString m_pairedRefChosen;  // the reference the user picked (kept even while it has no values)
  QCustomPlot* m_plot = nullptr;
  QThread* m_thread = nullptr;
  SweepWorker* m_worker = nullptr;
  QString m_dir, m_lastError;
  QJsonObject m_opened;    // the spec of the sweep openSweep showed (empty: none)
  QString m_openedEditor;  // the editor's name, grid and seeds as openSweep set them
  QString editorText() const;
  bool m_pending = false;  // a start was requested and has not finished or failed yet
  int m_pointIndex = 0, m_pointTotal = 0;
};

}  // namespace gui
