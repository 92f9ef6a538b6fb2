// ConfigurePanel: the left-hand side of the window. Workspace, preset, task,
// dataset (manifest or a file of the user's, format detected) and cell, then
// the option form generated from the config schema, validation next to each
// field (debounced), the parameter count (computed off the GUI thread) and the
// Start / Add to queue / Pause / Stop buttons, which only ask (signals): the
// window's TrainingController trains.
#pragma once
#include <QJsonObject>
#include <QStringList>
#include <QVariant>
#include <QWidget>

class QComboBox;
class QFileSystemWatcher;
class QGridLayout;
class QGroupBox;
class QHBoxLayout;
class QLabel;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QTimer;

namespace csw {
class OptionForm;
}

namespace gui {

class ConfigurePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigurePanel(QWidget* parent = nullptr);

  QJsonObject currentConfig() const;
  // Sets task, cell, dataset and every form value found in cfg (others reset to defaults).
  void applyConfig(const QJsonObject& cfg);
  // "section.key" = value, for the dedicated controls too (task.name, model.cell, dataset.name, dataset.path).
  bool setConfigValue(const QString& path, const QVariant& value);
  QStringList presetNames() const;
  bool applyPreset(const QString& name);
  bool selectDataset(const QString& name);
  void setDatasetFile(const QString& path);  // a file or folder of the user's; format detected and shown
  QString datasetFormat() const;             // as shown (manifest format or detected)
  QStringList datasetChoices() const;        // the manifest datasets offered for the current task, by name
  void revalidateNow();                      // synchronous validation (the panel debounces it)
  QStringList validationErrors() const { return m_errors; }  // "path: message"
  bool isValid() const { return m_errors.isEmpty(); }
  qint64 parameterCount() const { return m_paramCount; }  // -1 while unknown
  csw::OptionForm* form() const { return m_form; }        // the schema-generated fields
  QString datasetError() const;                           // shown under the dataset row (empty: none)
  QPushButton* startButton() const { return m_startButton; }

  // Local processes for the next Start (data-parallel when > 1; not part of the config).
  int processCount() const;
  void setProcessCount(int n);

  void setWorkspaceLabel(const QString& dir);
  // Enables the buttons: Start when valid and idle, Pause/Stop while training.
  void setTrainingState(bool training, bool paused);

 public Q_SLOTS:
  void chooseDatasetFile();
  void chooseDatasetFolder();  // a CBT set, parallel text, PTB directory
  // The manifest datasets' "(not downloaded)" marks as the data cache is now (the combo
  // also does it each time it opens, and validation does).
  void refreshDatasetList();

 Q_SIGNALS:
  void startRequested();
  void enqueueRequested();
  void pauseToggleRequested();
  void stopRequested();
  void workspaceChangeRequested();
  void validated();  // validationErrors() is up to date
  void parameterCountChanged(qint64 count);
  void message(const QString& text, int timeoutMs);

 private:
  void startTimers();  // the constructor's parts, top to bottom
  QHBoxLayout* buildWorkspaceRow();
  QGroupBox* buildSetupBox();
  QHBoxLayout* buildDatasetRow();
  QScrollArea* buildOptionForm();
  QHBoxLayout* buildProcessRow();
  QGridLayout* buildButtons();
  void connectControls();
  void populatePresets();
  void populateDatasets();
  void rebuildForm();
  void scheduleValidation();
  void requestParameterCount();
  void showDatasetLabel();
  void settleLayout();
  void watchDatasetFile();                        // m_datasetFile and its folder, while it is set
  void showDatasetError(const QString& message);  // under the dataset row, red frame on its box
  void showBuildError(const QString& error);      // the model cannot be built: on the field it names
  QString placeBuildError(const QString& error, QString* message = nullptr);  // shows it; the path it names
  QString datasetLabel() const;

  QComboBox* m_presetCombo = nullptr;
  QComboBox* m_taskCombo = nullptr;
  QComboBox* m_datasetCombo = nullptr;
  QComboBox* m_cellCombo = nullptr;
  QLabel* m_cellInfo = nullptr;
  QLabel* m_formatLabel = nullptr;
  QLabel* m_datasetError = nullptr;
  QLabel* m_workspaceLabel = nullptr;
  QLabel* m_topError = nullptr;
  QLabel* m_paramLabel = nullptr;
  csw::OptionForm* m_form = nullptr;
  QPushButton* m_startButton = nullptr;
  QPushButton* m_queueButton = nullptr;
  QPushButton* m_pauseButton = nullptr;
  QPushButton* m_stopButton = nullptr;
  QSpinBox* m_procSpin = nullptr;
  QLabel* m_procHint = nullptr;
  QTimer* m_validateTimer = nullptr;
  QTimer* m_paramTimer = nullptr;
  QFileSystemWatcher* m_watcher = nullptr;
  QStringList m_errors;
  qint64 m_paramCount = -1;
  int m_paramGeneration = 0;
  QString m_buildError;   // the last count's error while it still applies (kept on screen while counting)
  QString m_datasetFile;  // non-empty: a user file instead of a manifest dataset
  bool m_applying = false;
};

}  // namespace gui
