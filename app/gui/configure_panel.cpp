#include "configure_panel.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QLocale>
#include <QMenu>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QThread>
#include <QThreadPool>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <functional>

#include "core_bridge.h"
#include "option_form.h"
#include "run_table.h"

namespace gui {

namespace {
// Put a form value into the config document at section.key.
void putValue(QJsonObject& cfg, const QString& path, const QVariant& v) {
  const QString section = path.section(QLatin1Char('.'), 0, 0), key = path.section(QLatin1Char('.'), 1);
  QJsonObject sec = cfg.value(section).toObject();
  sec.insert(key, QJsonValue::fromVariant(v));
  cfg.insert(section, sec);
}

// The dataset combo looks at the data cache again each time it opens: a set that was
// downloaded or built meanwhile (a CBT set on a cloze run's first use) loses its
// "(not downloaded)".
class DatasetCombo : public QComboBox {
 public:
  std::function<void()> beforePopup;
  void showPopup() override {
    if (beforePopup) beforePopup();
    QComboBox::showPopup();
  }
};

QString datasetItemText(const DatasetEntry& d) {
  if (d.present) return d.name;
  return d.name + (d.built ? QStringLiteral(" (built on first use)") : QStringLiteral(" (not downloaded)"));
}
}  // namespace

ConfigurePanel::ConfigurePanel(QWidget* parent) : QWidget(parent) {
  startTimers();
  setMinimumWidth(330);
  // The groups top to bottom, built in the order the widgets were always created (tab order).
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  v->addLayout(buildWorkspaceRow());
  v->addWidget(buildSetupBox());
  m_topError = new QLabel;
  m_topError->setWordWrap(true);
  m_topError->setStyleSheet(QStringLiteral("color: #c62828;"));
  m_topError->hide();
  v->addWidget(m_topError);
  v->addWidget(buildOptionForm(), 1);
  m_paramLabel = new QLabel(QStringLiteral("Parameters: -"));
  m_paramLabel->setObjectName(QStringLiteral("parameterCount"));
  m_paramLabel->setToolTip(QStringLiteral("Trainable parameters of the configured model (updated as options change)"));
  v->addWidget(m_paramLabel);
  v->addLayout(buildProcessRow());
  v->addLayout(buildButtons());
  connectControls();
  populatePresets();
  populateDatasets();
  rebuildForm();
}

// Validation and the parameter count run a moment after the last change (debounced).
void ConfigurePanel::startTimers() {
  m_validateTimer = new QTimer(this);
  m_validateTimer->setSingleShot(true);
  m_validateTimer->setInterval(150);
  connect(m_validateTimer, &QTimer::timeout, this, &ConfigurePanel::revalidateNow);
  m_paramTimer = new QTimer(this);
  m_paramTimer->setSingleShot(true);
  m_paramTimer->setInterval(400);
  connect(m_paramTimer, &QTimer::timeout, this, &ConfigurePanel::requestParameterCount);
}

// The workspace's folder and its Change... button.
QHBoxLayout* ConfigurePanel::buildWorkspaceRow() {
  auto* wsRow = new QHBoxLayout;
  m_workspaceLabel = new QLabel;
  m_workspaceLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_workspaceLabel->setMinimumWidth(10);
  auto* wsButton = new QToolButton;
  wsButton->setText(QStringLiteral("Change..."));
  wsButton->setToolTip(QStringLiteral("Open another folder of runs (Ctrl+Shift+O)"));
  connect(wsButton, &QToolButton::clicked, this, &ConfigurePanel::workspaceChangeRequested);
  wsRow->addWidget(new QLabel(QStringLiteral("<b>Workspace</b>")));
  wsRow->addWidget(m_workspaceLabel, 1);
  wsRow->addWidget(wsButton);
  return wsRow;
}

// Preset, task, dataset (with its format and error lines) and cell (with its description).
QGroupBox* ConfigurePanel::buildSetupBox() {
  auto* setup = new QGroupBox(QStringLiteral("Setup"));
  auto* f = new QFormLayout(setup);
  m_presetCombo = new QComboBox;
  m_presetCombo->setObjectName(QStringLiteral("presetCombo"));
  m_presetCombo->setToolTip(
      QStringLiteral("Bundled configurations (resources/presets): the papers' setups and quick ones"));
  f->addRow(QStringLiteral("Preset"), m_presetCombo);
  m_taskCombo = new QComboBox;
  for (const QString& t : taskNames()) {
    m_taskCombo->addItem(t, t);
    m_taskCombo->setItemData(m_taskCombo->count() - 1, taskDescription(t), Qt::ToolTipRole);
  }
  f->addRow(QStringLiteral("Task"), m_taskCombo);
  QHBoxLayout* dsRow = buildDatasetRow();
  f->addRow(QStringLiteral("Dataset"), dsRow);
  m_formatLabel = new QLabel;
  m_formatLabel->setObjectName(QStringLiteral("datasetFormat"));
  m_formatLabel->setStyleSheet(QStringLiteral("color: palette(mid);"));
  m_formatLabel->setWordWrap(true);
  f->addRow(QString(), m_formatLabel);
  m_datasetError = new QLabel;
  m_datasetError->setObjectName(QStringLiteral("datasetError"));
  m_datasetError->setStyleSheet(QStringLiteral("color: #d32f2f;"));
  m_datasetError->setWordWrap(true);
  m_datasetError->hide();
  f->addRow(QString(), m_datasetError);
  m_cellCombo = new QComboBox;
  for (const QString& c : cellNames()) {
    m_cellCombo->addItem(c, c);
    m_cellCombo->setItemData(m_cellCombo->count() - 1, cellDescription(c), Qt::ToolTipRole);
  }
  const int gruIndex = m_cellCombo->findData(QStringLiteral("gru"));  // the schema's default cell
  if (gruIndex >= 0) m_cellCombo->setCurrentIndex(gruIndex);
  f->addRow(QStringLiteral("Cell"), m_cellCombo);
  m_cellInfo = new QLabel;
  m_cellInfo->setWordWrap(true);
  m_cellInfo->setStyleSheet(QStringLiteral("color: palette(mid);"));
  f->addRow(QString(), m_cellInfo);
  return setup;
}

// The dataset combo and its Open... button (a file, or a folder from the arrow's menu).
QHBoxLayout* ConfigurePanel::buildDatasetRow() {
  auto* dsRow = new QHBoxLayout;
  auto* datasetCombo = new DatasetCombo;
  datasetCombo->beforePopup = [this] { refreshDatasetList(); };
  m_datasetCombo = datasetCombo;
  m_datasetCombo->setObjectName(QStringLiteral("datasetCombo"));
  m_datasetCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_datasetCombo->setMinimumContentsLength(12);
  auto* dsOpen = new QToolButton;
  dsOpen->setText(QStringLiteral("Open..."));
  dsOpen->setToolTip(
      QStringLiteral("Train on a file of your own (Ctrl+O); you can also drop a file on the window. "
                     "The arrow: a folder (a CBT set, parallel text, PTB)"));
  connect(dsOpen, &QToolButton::clicked, this, &ConfigurePanel::chooseDatasetFile);
  // The cloze and seq2seq loaders read folders (cbtest_*_{train,valid,test}*.txt, train.de +
  // train.en, ...), which a file dialog cannot pick.
  auto* openMenu = new QMenu(dsOpen);
  openMenu->addAction(QStringLiteral("File..."), this, &ConfigurePanel::chooseDatasetFile);
  openMenu->addAction(QStringLiteral("Folder (CBT set, parallel text, PTB)..."), this,
                      &ConfigurePanel::chooseDatasetFolder);
  dsOpen->setMenu(openMenu);
  dsOpen->setPopupMode(QToolButton::MenuButtonPopup);
  dsRow->addWidget(m_datasetCombo, 1);
  dsRow->addWidget(dsOpen);
  return dsRow;
}

// The options of the chosen task and cell (csw::OptionForm), scrolled.
QScrollArea* ConfigurePanel::buildOptionForm() {
  m_form = new csw::OptionForm;
  auto* scroll = new QScrollArea;
  scroll->setWidget(m_form);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  return scroll;
}

// Local processes (data-parallel training, `cellscope-cli train --nproc N`): 1 trains in
// this window; N > 1 starts the CLI's launcher, the window follows the run's directory.
QHBoxLayout* ConfigurePanel::buildProcessRow() {
  auto* procRow = new QHBoxLayout;
  m_procSpin = new QSpinBox;
  m_procSpin->setRange(1, std::max(2, QThread::idealThreadCount()));
  m_procSpin->setValue(1);
  m_procSpin->setToolTip(QStringLiteral(
      "Local processes training data-parallel (cellscope-cli train --nproc N): training.batch is the global "
      "batch, split evenly over them. 1 trains in this window; more start cellscope-cli and the window follows "
      "the run (Stop ends every process cleanly; no pause)."));
  m_procHint = new QLabel;
  auto showProcHint = [this] {
    const int n = m_procSpin->value();
    const int k = threadsPerProcess(n);
    const QString threads = QStringLiteral("%1 thread%2").arg(k).arg(k == 1 ? QString() : QStringLiteral("s"));
    m_procHint->setText(n == 1 ? QStringLiteral("in this window, ") + threads
                               : QStringLiteral("x ") + threads + QStringLiteral(" each"));
  };
  showProcHint();
  connect(m_procSpin, qOverload<int>(&QSpinBox::valueChanged), this, showProcHint);
  procRow->addWidget(new QLabel(QStringLiteral("Processes:")));
  procRow->addWidget(m_procSpin);
  procRow->addWidget(m_procHint, 1);
  return procRow;
}

// Start, Add to queue, Pause, Stop.
QGridLayout* ConfigurePanel::buildButtons() {
  auto* buttons = new QGridLayout;
  m_startButton = new QPushButton(QStringLiteral("Start"));
  m_startButton->setToolTip(QStringLiteral("Start training (Ctrl+R)"));
  m_startButton->setDefault(true);
  m_queueButton = new QPushButton(QStringLiteral("Add to queue"));
  m_queueButton->setToolTip(QStringLiteral("Train this configuration after the current run (Ctrl+Shift+R)"));
  m_pauseButton = new QPushButton(QStringLiteral("Pause"));
  m_pauseButton->setToolTip(QStringLiteral("Pause / resume (Ctrl+P)"));
  m_stopButton = new QPushButton(QStringLiteral("Stop"));
  m_stopButton->setToolTip(QStringLiteral("Stop; the run keeps its last checkpoint (Ctrl+.)"));
  buttons->addWidget(m_startButton, 0, 0);
  buttons->addWidget(m_queueButton, 0, 1);
  buttons->addWidget(m_pauseButton, 1, 0);
  buttons->addWidget(m_stopButton, 1, 1);
  return buttons;
}

// The buttons' signals, and the choices that rebuild the form, relist datasets or revalidate.
void ConfigurePanel::connectControls() {
  connect(m_startButton, &QPushButton::clicked, this, &ConfigurePanel::startRequested);
  connect(m_queueButton, &QPushButton::clicked, this, &ConfigurePanel::enqueueRequested);
  connect(m_pauseButton, &QPushButton::clicked, this, &ConfigurePanel::pauseToggleRequested);
  connect(m_stopButton, &QPushButton::clicked, this, &ConfigurePanel::stopRequested);

  connect(m_taskCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    populateDatasets();
    rebuildForm();
  });
  connect(m_cellCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { rebuildForm(); });
  connect(m_datasetCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    const QString data = m_datasetCombo->currentData().toString();
    m_datasetFile = data.startsWith(QLatin1String("file:")) ? data.mid(5) : QString();
    showDatasetLabel();
    scheduleValidation();
  });
  connect(m_presetCombo, qOverload<int>(&QComboBox::activated), this, [this](int i) {
    if (i > 0) applyPreset(m_presetCombo->itemText(i));
    else applyConfig(QJsonObject());
  });
  connect(m_form, &csw::OptionForm::changed, this, [this] { scheduleValidation(); });
}

void ConfigurePanel::setWorkspaceLabel(const QString& dir) {
  m_workspaceLabel->setText(QFontMetrics(m_workspaceLabel->font()).elidedText(dir, Qt::ElideMiddle, 220));
  m_workspaceLabel->setToolTip(dir);
}

int ConfigurePanel::processCount() const { return m_procSpin->value(); }
void ConfigurePanel::setProcessCount(int n) { m_procSpin->setValue(n); }

void ConfigurePanel::setTrainingState(bool training, bool paused) {
  const bool valid = isValid();
  m_startButton->setEnabled(valid && !training);
  m_queueButton->setEnabled(valid);
  m_pauseButton->setEnabled(training);
  m_stopButton->setEnabled(training);
  m_pauseButton->setText(paused ? QStringLiteral("Resume") : QStringLiteral("Pause"));
}

void ConfigurePanel::showDatasetLabel() {
  // The format line describes the file as it is now, and gives way to an error about it
  // (no "Format: text (detected)" above "looks binary" or "cannot read").
  m_formatLabel->setText(datasetLabel());
  m_formatLabel->setVisible(!m_formatLabel->text().isEmpty() && m_datasetError->text().isEmpty());
  watchDatasetFile();
}

void ConfigurePanel::watchDatasetFile() {
  // A dataset file of the user's that changes or goes away (or comes back) is looked at
  // again at once: its format line and its errors never describe a file that is gone.
  if (!m_watcher) {
    m_watcher = new QFileSystemWatcher(this);
    auto again = [this] {
      showDatasetLabel();
      scheduleValidation();
    };
    connect(m_watcher, &QFileSystemWatcher::fileChanged, this, again);
    // Its folder: only the file's coming back (or a folder dataset's own content) counts,
    // not every other file written beside it.
    connect(m_watcher, &QFileSystemWatcher::directoryChanged, this, [this, again](const QString& dir) {
      const QFileInfo fi(m_datasetFile);
      const QString abs = fi.absoluteFilePath();
      const bool watched = m_watcher->files().contains(abs) || m_watcher->directories().contains(abs);
      if (!m_datasetFile.isEmpty() && (dir == abs || fi.exists() != watched)) again();
    });
  }
  QStringList want;
  if (!m_datasetFile.isEmpty()) {
    const QFileInfo fi(m_datasetFile);
    if (fi.exists()) want << fi.absoluteFilePath();
    if (fi.absoluteDir().exists()) want << fi.absolutePath();
  }
  QStringList have = m_watcher->files() + m_watcher->directories();
  QStringList sortedWant = want;
  std::sort(have.begin(), have.end());
  std::sort(sortedWant.begin(), sortedWant.end());
  if (have == sortedWant) return;
  if (!have.isEmpty()) m_watcher->removePaths(have);
  if (!want.isEmpty()) m_watcher->addPaths(want);
}

void ConfigurePanel::populatePresets() {
  m_presetCombo->blockSignals(true);
  m_presetCombo->clear();
  m_presetCombo->addItem(QStringLiteral("(defaults)"));
  QDir d(presetsDir());
  for (const QFileInfo& fi : d.entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
    QFile f(fi.absoluteFilePath());
    QString notes;
    if (f.open(QIODevice::ReadOnly))
      notes = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("notes")).toString();
    m_presetCombo->addItem(fi.completeBaseName());
    m_presetCombo->setItemData(m_presetCombo->count() - 1, notes, Qt::ToolTipRole);
  }
  m_presetCombo->blockSignals(false);
}

QStringList ConfigurePanel::presetNames() const {
  QStringList out;
  for (int i = 1; i < m_presetCombo->count(); ++i) out << m_presetCombo->itemText(i);
  return out;
}

bool ConfigurePanel::applyPreset(const QString& name) {
  QFile f(QDir(presetsDir()).filePath(name + QStringLiteral(".json")));
  if (!f.open(QIODevice::ReadOnly)) return false;
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
  if (!doc.isObject()) {
    m_topError->setText(QStringLiteral("Preset '%1' is not valid JSON: %2").arg(name, err.errorString()));
    m_topError->show();
    return false;
  }
  applyConfig(doc.object());
  const int i = m_presetCombo->findText(name);
  if (i >= 0) m_presetCombo->setCurrentIndex(i);
  Q_EMIT message(QStringLiteral("Preset %1 loaded").arg(name), 4000);
  return true;
}

void ConfigurePanel::populateDatasets() {
  const QString task = m_taskCombo->currentData().toString();
  const QString previous = m_datasetCombo->currentData().toString();
  m_datasetCombo->blockSignals(true);
  m_datasetCombo->clear();
  for (const DatasetEntry& d : manifestDatasets()) {
    if (!d.tasks.isEmpty() && !d.tasks.contains(task)) continue;
    m_datasetCombo->addItem(datasetItemText(d), d.name);
    m_datasetCombo->setItemData(m_datasetCombo->count() - 1,
                                QStringLiteral("%1\nFormat: %2").arg(d.description, d.format), Qt::ToolTipRole);
    m_datasetCombo->setItemData(m_datasetCombo->count() - 1, d.format, Qt::UserRole + 1);
  }
  if (m_datasetCombo->count() == 0) {
    // No manifest (or nothing for this task): the schema's default dataset name.
    m_datasetCombo->addItem(QStringLiteral("moby-dick"), QStringLiteral("moby-dick"));
  }
  if (!m_datasetFile.isEmpty()) {
    m_datasetCombo->addItem(QStringLiteral("File: ") + QFileInfo(m_datasetFile).fileName(),
                            QStringLiteral("file:") + m_datasetFile);
    m_datasetCombo->setItemData(m_datasetCombo->count() - 1, m_datasetFile, Qt::ToolTipRole);
  }
  int idx = m_datasetCombo->findData(previous);
  m_datasetCombo->setCurrentIndex(idx >= 0 ? idx : 0);
  const QString data = m_datasetCombo->currentData().toString();
  m_datasetFile = data.startsWith(QLatin1String("file:")) ? data.mid(5) : QString();
  m_datasetCombo->blockSignals(false);
  showDatasetLabel();
}

void ConfigurePanel::refreshDatasetList() {
  for (const DatasetEntry& d : manifestDatasets()) {
    const int i = m_datasetCombo->findData(d.name);
    if (i >= 0 && m_datasetCombo->itemText(i) != datasetItemText(d)) m_datasetCombo->setItemText(i, datasetItemText(d));
  }
}

bool ConfigurePanel::selectDataset(const QString& name) {
  int idx = m_datasetCombo->findData(name);
  if (idx < 0) {
    m_datasetCombo->addItem(name + QStringLiteral(" (not in the manifest)"), name);
    idx = m_datasetCombo->count() - 1;
  }
  m_datasetCombo->setCurrentIndex(idx);
  m_datasetFile.clear();
  showDatasetLabel();
  scheduleValidation();
  return true;
}

void ConfigurePanel::setDatasetFile(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  int idx = m_datasetCombo->findData(QStringLiteral("file:") + abs);
  if (idx < 0) {
    m_datasetCombo->blockSignals(true);
    m_datasetCombo->addItem(QStringLiteral("File: ") + QFileInfo(abs).fileName(), QStringLiteral("file:") + abs);
    idx = m_datasetCombo->count() - 1;
    m_datasetCombo->setItemData(idx, abs, Qt::ToolTipRole);
    m_datasetCombo->blockSignals(false);
  }
  m_datasetCombo->setCurrentIndex(idx);
  m_datasetFile = abs;
  showDatasetLabel();
  scheduleValidation();
}

QStringList ConfigurePanel::datasetChoices() const {
  QStringList out;
  for (int i = 0; i < m_datasetCombo->count(); ++i) {
    const QString d = m_datasetCombo->itemData(i).toString();
    if (!d.startsWith(QLatin1String("file:"))) out << d;
  }
  return out;
}

QString ConfigurePanel::datasetFormat() const {
  if (!m_datasetFile.isEmpty()) return detectFormat(m_datasetFile);
  return m_datasetCombo->currentData(Qt::UserRole + 1).toString();
}

QString ConfigurePanel::datasetLabel() const {
  if (!m_datasetFile.isEmpty()) {
    QFileInfo fi(m_datasetFile);
    const QString size = fi.isDir() ? QStringLiteral("folder") : QLocale().formattedDataSize(fi.size());
    return QStringLiteral("Format: %1 (detected), %2\n%3").arg(datasetFormat(), size, m_datasetFile);
  }
  const QString fmt = datasetFormat();
  return fmt.isEmpty() ? QString() : QStringLiteral("Format: %1 (from the manifest)").arg(fmt);
}

void ConfigurePanel::rebuildForm() {
  const QString cell = m_cellCombo->currentData().toString(), task = m_taskCombo->currentData().toString();
  m_cellInfo->setText(cellDescription(cell));
  const QVariantMap keep = m_form->values();
  m_form->setOptions(optionDescs(cell, task));
  // Keep the values of options the new cell/task also has.
  QVariantMap carried;
  const QStringList paths = m_form->paths();
  for (auto it = keep.begin(); it != keep.end(); ++it)
    if (paths.contains(it.key())) carried.insert(it.key(), it.value());
  m_form->setValues(carried);
  scheduleValidation();
  settleLayout();
}

void ConfigurePanel::settleLayout() {
  // The new rows and the labels above the form (the cell's description, the dataset's
  // format line) take their final place before the next paint, not a pass of the event
  // loop later under the user's pointer (FORM_LAYOUT_NOTES.md).
  m_form->settleLayout();
  // A label's new height reaches the panel's layout one layout level per LayoutRequest
  // (the Setup box's layout first, then the panel's): deliver them now, level by level.
  for (int level = 0; level < 4; ++level) QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
  m_form->settleLayout();  // the form's own size may have changed with the panel's
}

QJsonObject ConfigurePanel::currentConfig() const {
  QJsonObject cfg;
  cfg.insert(QStringLiteral("task"), QJsonObject{{QStringLiteral("name"), m_taskCombo->currentData().toString()}});
  QJsonObject ds;
  if (!m_datasetFile.isEmpty()) ds.insert(QStringLiteral("path"), m_datasetFile);
  else ds.insert(QStringLiteral("name"), m_datasetCombo->currentData().toString());
  cfg.insert(QStringLiteral("dataset"), ds);
  cfg.insert(QStringLiteral("model"), QJsonObject{{QStringLiteral("cell"), m_cellCombo->currentData().toString()}});
  cfg.insert(QStringLiteral("training"), QJsonObject());
  const QVariantMap values = m_form->values();
  for (auto it = values.begin(); it != values.end(); ++it) putValue(cfg, it.key(), it.value());
  return cfg;
}

void ConfigurePanel::applyConfig(const QJsonObject& cfg) {
  m_applying = true;
  const QJsonValue taskV = cfg.value(QStringLiteral("task"));
  const QString task = taskV.isString() ? taskV.toString() : taskV.toObject().value(QStringLiteral("name")).toString();
  if (!task.isEmpty()) {
    const int i = m_taskCombo->findData(task);
    if (i >= 0) m_taskCombo->setCurrentIndex(i);
  }
  const QJsonObject model = cfg.value(QStringLiteral("model")).toObject();
  const QString cell = model.value(QStringLiteral("cell")).toString();
  const int ci = m_cellCombo->findData(cell.isEmpty() ? QStringLiteral("gru") : cell);
  if (ci >= 0 && ci != m_cellCombo->currentIndex()) m_cellCombo->setCurrentIndex(ci);  // rebuilds the form
  const QJsonObject ds = cfg.value(QStringLiteral("dataset")).toObject();
  if (ds.contains(QStringLiteral("path")) && ds.value(QStringLiteral("path")).isString())
    setDatasetFile(ds.value(QStringLiteral("path")).toString());
  else if (ds.contains(QStringLiteral("name"))) selectDataset(ds.value(QStringLiteral("name")).toString());
  m_form->resetToDefaults();
  const QMap<QString, QString> flat = flattenConfig(cfg);
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    if (isDedicatedPath(it.key()) || !m_form->paths().contains(it.key())) continue;
    const QString section = it.key().section(QLatin1Char('.'), 0, 0), key = it.key().section(QLatin1Char('.'), 1);
    m_form->setValue(it.key(), cfg.value(section).toObject().value(key).toVariant());
  }
  m_applying = false;
  scheduleValidation();
  settleLayout();
}

bool ConfigurePanel::setConfigValue(const QString& path, const QVariant& value) {
  if (path == QLatin1String("task.name")) {
    const int i = m_taskCombo->findData(value.toString());
    if (i < 0) return false;
    m_taskCombo->setCurrentIndex(i);
    return true;
  }
  if (path == QLatin1String("model.cell")) {
    const int i = m_cellCombo->findData(value.toString());
    if (i < 0) return false;
    m_cellCombo->setCurrentIndex(i);
    return true;
  }
  if (path == QLatin1String("dataset.name")) return selectDataset(value.toString());
  if (path == QLatin1String("dataset.path")) {
    setDatasetFile(value.toString());
    return true;
  }
  return m_form->setValue(path, value);
}

void ConfigurePanel::scheduleValidation() {
  if (m_applying) return;
  m_validateTimer->start();
}

void ConfigurePanel::revalidateNow() {
  m_validateTimer->stop();
  const QJsonObject cfg = currentConfig();
  const auto errs = validateConfig(cfg);
  m_form->clearErrors();
  m_errors.clear();
  QStringList top;
  const QStringList formPaths = m_form->paths();
  // Every problem on its own field: the schema's checks, values out of their
  // range (the editors never clamp), and a dataset file whose format is unknown.
  // A value out of its range is said once, in the form's words ("0 is out of range: must be
  // in [1, 100]"): the schema's "expected an integer in [1, 100], got 0" on the same field
  // is the same problem and is left out (it would be shown twice and counted twice).
  QList<QPair<QString, QString>> ranges;
  for (const QString& r : m_form->rangeErrors())
    ranges << qMakePair(r.section(QStringLiteral(": "), 0, 0), r.section(QStringLiteral(": "), 1));
  QList<QPair<QString, QString>> all;
  for (const auto& e : errs) {
    const bool rangeMessage =
        e.second.startsWith(QLatin1String("expected a")) && e.second.contains(QLatin1String(" in ["));
    const bool hasRange = std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) { return r.first == e.first; });
    if (!(rangeMessage && hasRange) && !all.contains(e)) all << e;
  }
  all << ranges;
  QString dsError;
  if (!m_datasetFile.isEmpty()) {
    const QString fmt = detectFormat(m_datasetFile);
    if (fmt == QLatin1String("unreadable")) dsError = QStringLiteral("cannot read %1").arg(m_datasetFile);
    else if (fmt == QLatin1String("empty")) dsError = QStringLiteral("%1 is empty").arg(m_datasetFile);
    else if (fmt == QLatin1String("directory"))
      dsError = QStringLiteral(
                    "unknown dataset format: %1 is a folder without a known corpus (ptb.char.*, ptb.*.txt; "
                    "CBT *train*.txt / *valid*.txt / *test*.txt; parallel train.SRC + train.TGT; "
                    "train.article.txt)")
                    .arg(m_datasetFile);
    if (!dsError.isEmpty()) all << qMakePair(QStringLiteral("dataset.path"), dsError);
  }
  m_formatLabel->setText(datasetLabel());
  refreshDatasetList();
  showDatasetError(dsError);
  watchDatasetFile();
  QMap<QString, QStringList> onField;  // a field with several problems shows them all
  for (const auto& e : all) {
    m_errors << e.first + QStringLiteral(": ") + e.second;
    if (formPaths.contains(e.first)) {
      if (!onField[e.first].contains(e.second)) onField[e.first] << e.second;
      m_form->setError(e.first, onField[e.first].join(QStringLiteral("; ")));
    } else if (e.first == QLatin1String("dataset.path") || e.first == QLatin1String("dataset.name")) {
      if (e.second != dsError) showDatasetError(e.second);
    } else top << QStringLiteral("<b>%1</b>: %2").arg(e.first.toHtmlEscaped(), e.second.toHtmlEscaped());
  }
  m_topError->setText(top.join(QStringLiteral("<br>")));
  m_topError->setVisible(!top.isEmpty());
  // The model could not be built from the configuration before: its message stays where it
  // is while the new count runs (hiding it for "counting..." and showing it again moved the
  // form under the pointer); the count's answer replaces or clears it.
  if (all.isEmpty() && !m_buildError.isEmpty()) placeBuildError(m_buildError);
  else m_buildError.clear();
  if (all.isEmpty()) {
    m_paramLabel->setText(QStringLiteral("Parameters: counting..."));
    m_paramTimer->start();
  } else {
    m_paramTimer->stop();  // a count asked for by an earlier, valid state would build this invalid one
    ++m_paramGeneration;   // drop a count in flight
    m_paramCount = -1;
    m_paramLabel->setText(all.size() == 1
                              ? QStringLiteral("Parameters: - (fix the problem above)")
                              : QStringLiteral("Parameters: - (fix the %1 problems above)").arg(all.size()));
    m_paramLabel->setToolTip(QString());
  }
  Q_EMIT validated();
}

void ConfigurePanel::requestParameterCount() {
  // Built off the GUI thread (loading the dataset for the vocabulary can take a while);
  // only the newest request's answer is shown.
  const int gen = ++m_paramGeneration;
  const QJsonObject cfg = currentConfig();
  QPointer<ConfigurePanel> self(this);
  QThreadPool::globalInstance()->start([self, gen, cfg] {
    QString err;
    const qint64 n = gui::parameterCount(cfg, &err);
    QMetaObject::invokeMethod(
        qApp,
        [self, gen, n, err] {
          if (!self || gen != self->m_paramGeneration) return;
          self->m_paramCount = n;
          if (!self->m_buildError.isEmpty()) {
            // The configuration is valid (the count ran): the messages shown are the last build
            // error's; they go (a new one, if any, is placed below in this same pass).
            self->m_buildError.clear();
            self->m_form->clearErrors();
            self->showDatasetError(QString());
            self->m_topError->hide();
          }
          if (n >= 0) {
            self->m_paramLabel->setText(
                QStringLiteral("Parameters: <b>%1</b> (%2 M)").arg(QLocale().toString(n)).arg(n / 1e6, 0, 'f', 3));
            self->m_paramLabel->setToolTip(QStringLiteral("Trainable parameters of the configured model"));
          } else {
            self->showBuildError(err);
          }
          Q_EMIT self->parameterCountChanged(n);
          if (n < 0) Q_EMIT self->validated();  // Start follows: disabled
        },
        Qt::QueuedConnection);
  });
}

QString ConfigurePanel::datasetError() const { return m_datasetError->text(); }

void ConfigurePanel::showDatasetError(const QString& message) {
  m_datasetError->setText(message);
  m_datasetError->setVisible(!message.isEmpty());
  m_formatLabel->setVisible(message.isEmpty() && !m_formatLabel->text().isEmpty());
  m_datasetCombo->setStyleSheet(message.isEmpty() ? QString()
                                                  : QStringLiteral("QComboBox { border: 1px solid #d32f2f; }"));
}

void ConfigurePanel::showBuildError(const QString& err) {
  m_buildError = err;
  QString message;
  const QString path = placeBuildError(err, &message);
  m_errors << (path.isEmpty() ? QStringLiteral("model") : path) + QStringLiteral(": ") + message;
  m_paramLabel->setText(
      QStringLiteral("Parameters: <span style='color:#c62828'>cannot build the model (see above)</span>"));
  m_paramLabel->setToolTip(err);
}

QString ConfigurePanel::placeBuildError(const QString& err, QString* messageOut) {
  // The model cannot be built from a config the schema accepts (an unknown
  // dataset format, a corpus too short, ...): the message goes on the field it
  // names ("dataset.format: unknown format 'x'"), else under the dataset (a data
  // problem) or above the form, and Start stays disabled until it is fixed.
  QString path, message = err.trimmed();
  static const QRegularExpression pathRe(QStringLiteral("^([a-z_]+\\.[a-z_0-9]+):\\s*(.*)$"),
                                         QRegularExpression::DotMatchesEverythingOption);
  const QRegularExpressionMatch m = pathRe.match(message);
  if (m.hasMatch()) {
    path = m.captured(1);
    message = m.captured(2);
  }
  if (messageOut) *messageOut = message;
  if (!path.isEmpty() && m_form->paths().contains(path)) {
    m_form->setError(path, message);
  } else if (path.startsWith(QLatin1String("dataset")) || path.isEmpty()) {
    showDatasetError(path.isEmpty() ? message : path + QStringLiteral(": ") + message);
  } else {
    m_topError->setText(QStringLiteral("<b>%1</b>: %2").arg(path.toHtmlEscaped(), message.toHtmlEscaped()));
    m_topError->show();
  }
  return path;
}

void ConfigurePanel::chooseDatasetFile() {
  const QString path =
      QFileDialog::getOpenFileName(this, QStringLiteral("Train on a file"), QString(),
                                   QStringLiteral("Text and data files (*.txt *.jsonl *.csv *.tsv);;All files (*)"));
  if (!path.isEmpty()) setDatasetFile(path);
}

void ConfigurePanel::chooseDatasetFolder() {
  const QString path = QFileDialog::getExistingDirectory(this, QStringLiteral("Train on a folder"));
  if (!path.isEmpty()) setDatasetFile(path);
}

}  // namespace gui
