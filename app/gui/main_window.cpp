#include "main_window.h"
#include "sweep_panel.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QFontComboBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QThread>
#include <QThreadPool>
#include <QTimer>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis_panel.h"
#include "core_bridge.h"
#include "curve_plot.h"
#include "option_form.h"
#include "qcp.h"
#include "generate_panel.h"
#include "run_table.h"
#include "train_worker.h"

namespace gui {

namespace {
const char* kKnownKeys[] = {"loss", "bpc", "ppl", "accuracy", "lr", "grad_norm", "throughput"};
bool isKnownKey(const QString& k) {
  for (const char* s : kKnownKeys)
    if (k == QLatin1String(s)) return true;
  return false;
}

QString fmtDuration(double s) {
  if (!std::isfinite(s) || s < 0) return QStringLiteral("?");
  const long t = long(s + 0.5);
  if (t >= 3600) return QStringLiteral("%1h%2m").arg(t / 3600).arg((t % 3600) / 60, 2, 10, QLatin1Char('0'));
  if (t >= 60) return QStringLiteral("%1m%2s").arg(t / 60).arg(t % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1s").arg(t);
}

QString fmtRate(double r) {
  if (r >= 1e6) return QString::number(r / 1e6, 'f', 2) + QLatin1Char('M');
  if (r >= 1e3) return QString::number(r / 1e3, 'f', 1) + QLatin1Char('k');
  return QString::number(r, 'f', 0);
}

QString slug(const QString& s) {
  QString out;
  for (QChar c : s.toLower()) out += c.isLetterOrNumber() ? c : QLatin1Char('_');
  while (out.contains(QLatin1String("__"))) out.replace(QLatin1String("__"), QLatin1String("_"));
  return out;
}

// Put a form value into the config document at section.key.
void putValue(QJsonObject& cfg, const QString& path, const QVariant& v) {
  const QString section = path.section(QLatin1Char('.'), 0, 0), key = path.section(QLatin1Char('.'), 1);
  QJsonObject sec = cfg.value(section).toObject();
  sec.insert(key, QJsonValue::fromVariant(v));
  cfg.insert(section, sec);
}
}  // namespace

// ======================================================================= setup
MainWindow::MainWindow(const WindowOptions& options, QWidget* parent) : QMainWindow(parent) {
  qRegisterMetaType<gui::MetricPoint>();
  qRegisterMetaType<gui::TrainProgress>();
  setWindowTitle(QStringLiteral("Cellscope"));
  setAcceptDrops(true);
  m_settings = options.settingsFile.isEmpty() ? new QSettings(this)
                                              : new QSettings(options.settingsFile, QSettings::IniFormat, this);
  m_exportOptions.scale = 2.0;
  m_exportOptions.fontPointSize = 10;
  m_exportOptions.size = QSize(800, 520);

  // The worker object lives on its own thread for the window's lifetime.
  m_thread = new QThread(this);
  m_thread->setObjectName(QStringLiteral("cellscope-train"));
  m_worker = new TrainWorker;
  m_worker->moveToThread(m_thread);
  connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
  connect(m_worker, &TrainWorker::started, this, &MainWindow::onStarted, Qt::QueuedConnection);
  connect(m_worker, &TrainWorker::finished, this, &MainWindow::onFinished, Qt::QueuedConnection);
  connect(m_worker, &TrainWorker::failed, this, &MainWindow::onFailed, Qt::QueuedConnection);
  m_thread->start();

  m_validateTimer = new QTimer(this);
  m_validateTimer->setSingleShot(true);
  m_validateTimer->setInterval(150);
  connect(m_validateTimer, &QTimer::timeout, this, &MainWindow::revalidateNow);
  m_paramTimer = new QTimer(this);
  m_paramTimer->setSingleShot(true);
  m_paramTimer->setInterval(400);
  connect(m_paramTimer, &QTimer::timeout, this, &MainWindow::requestParameterCount);
  buildUi();
  buildMenus();
  installSweepPanel(this);  // the "Sweeps" tab, View > Sweeps (Ctrl+4): sweep_panel.h

  // Metrics are pulled at 10 Hz, whatever the training speed.
  m_drainTimer = new QTimer(this);
  m_drainTimer->setInterval(100);
  connect(m_drainTimer, &QTimer::timeout, this, &MainWindow::drainWorker);
  m_drainTimer->start();


  // Workspace watching: new run directories (CLI or GUI) and summary updates.
  m_watcher = new QFileSystemWatcher(this);
  m_rescanTimer = new QTimer(this);
  m_rescanTimer->setSingleShot(true);
  m_rescanTimer->setInterval(300);
  connect(m_rescanTimer, &QTimer::timeout, this, &MainWindow::rescanWorkspace);
  connect(m_watcher, &QFileSystemWatcher::directoryChanged, m_rescanTimer, qOverload<>(&QTimer::start));
  m_refreshTimer = new QTimer(this);
  m_refreshTimer->setInterval(2000);
  connect(m_refreshTimer, &QTimer::timeout, this, &MainWindow::periodicRefresh);
  m_refreshTimer->start();

  loadSettings(options);
  updateActions();
}

MainWindow::~MainWindow() {
  // Stop a run still going (its last checkpoint is kept) and let the worker thread end.
  if (m_worker) {
    m_worker->setPaused(false);
    m_worker->requestStop();
  }
  m_thread->quit();
  m_thread->wait();
}

void MainWindow::buildUi() {
  m_tabs = new QTabWidget;
  m_tabs->addTab(buildTrainingTab(), QStringLiteral("Training"));
  m_tabs->addTab(buildComparePanel(), QStringLiteral("Compare"));
  m_tabs->addTab(m_analysisPanel = new AnalysisPanel, QStringLiteral("Analyses"));  // issue #7 (analysis_panel.h)
  m_generatePanel = new GeneratePanel(m_runModel);
  m_tabs->addTab(m_generatePanel, QStringLiteral("Generate"));
  m_mainSplitter = new QSplitter(Qt::Horizontal);
  QWidget* cfg = buildConfigurePanel();
  m_mainSplitter->addWidget(cfg);
  m_mainSplitter->addWidget(m_tabs);
  m_mainSplitter->setStretchFactor(0, 0);
  m_mainSplitter->setStretchFactor(1, 1);
  m_mainSplitter->setSizes({380, 1000});
  // The Analyses tab has its own controls: the training configuration steps aside there.
  connect(m_tabs, &QTabWidget::currentChanged, this, [this, cfg](int i) { cfg->setVisible(m_tabs->widget(i) != m_analysisPanel); });
  setCentralWidget(m_mainSplitter);

  m_statusLabel = new QLabel(QStringLiteral("Ready"));
  m_queueLabel = new QLabel;
  m_progressBar = new QProgressBar;
  m_progressBar->setMaximumWidth(220);
  m_progressBar->setTextVisible(true);
  m_progressBar->hide();
  statusBar()->addWidget(m_statusLabel, 1);
  statusBar()->addPermanentWidget(m_queueLabel);
  statusBar()->addPermanentWidget(m_progressBar);
}

QWidget* MainWindow::buildConfigurePanel() {
  auto* panel = new QWidget;
  panel->setMinimumWidth(330);
  auto* v = new QVBoxLayout(panel);
  v->setContentsMargins(6, 6, 6, 6);

  // Workspace
  auto* wsRow = new QHBoxLayout;
  m_workspaceLabel = new QLabel;
  m_workspaceLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_workspaceLabel->setMinimumWidth(10);
  auto* wsButton = new QToolButton;
  wsButton->setText(QStringLiteral("Change..."));
  wsButton->setToolTip(QStringLiteral("Open another folder of runs (Ctrl+Shift+O)"));
  connect(wsButton, &QToolButton::clicked, this, &MainWindow::chooseWorkspace);
  wsRow->addWidget(new QLabel(QStringLiteral("<b>Workspace</b>")));
  wsRow->addWidget(m_workspaceLabel, 1);
  wsRow->addWidget(wsButton);
  v->addLayout(wsRow);

  auto* setup = new QGroupBox(QStringLiteral("Setup"));
  auto* f = new QFormLayout(setup);
  m_presetCombo = new QComboBox;
  m_presetCombo->setToolTip(QStringLiteral("Bundled configurations (resources/presets): the papers' setups and quick ones"));
  f->addRow(QStringLiteral("Preset"), m_presetCombo);
  m_taskCombo = new QComboBox;
  for (const QString& t : taskNames()) {
    m_taskCombo->addItem(t, t);
    m_taskCombo->setItemData(m_taskCombo->count() - 1, taskDescription(t), Qt::ToolTipRole);
  }
  f->addRow(QStringLiteral("Task"), m_taskCombo);
  auto* dsRow = new QHBoxLayout;
  m_datasetCombo = new QComboBox;
  m_datasetCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_datasetCombo->setMinimumContentsLength(12);
  auto* dsOpen = new QToolButton;
  dsOpen->setText(QStringLiteral("Open..."));
  dsOpen->setToolTip(QStringLiteral("Train on a file of your own (Ctrl+O); you can also drop a file on the window"));
  connect(dsOpen, &QToolButton::clicked, this, &MainWindow::chooseDatasetFile);
  dsRow->addWidget(m_datasetCombo, 1);
  dsRow->addWidget(dsOpen);
  f->addRow(QStringLiteral("Dataset"), dsRow);
  m_formatLabel = new QLabel;
  m_formatLabel->setStyleSheet(QStringLiteral("color: palette(mid);"));
  m_formatLabel->setWordWrap(true);
  f->addRow(QString(), m_formatLabel);
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
  v->addWidget(setup);

  m_topError = new QLabel;
  m_topError->setWordWrap(true);
  m_topError->setStyleSheet(QStringLiteral("color: #c62828;"));
  m_topError->hide();
  v->addWidget(m_topError);

  m_form = new csw::OptionForm;
  auto* scroll = new QScrollArea;
  scroll->setWidget(m_form);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  v->addWidget(scroll, 1);

  m_paramLabel = new QLabel(QStringLiteral("Parameters: -"));
  m_paramLabel->setToolTip(QStringLiteral("Trainable parameters of the configured model (updated as options change)"));
  v->addWidget(m_paramLabel);

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
  v->addLayout(buttons);
  connect(m_startButton, &QPushButton::clicked, this, &MainWindow::startTraining);
  connect(m_queueButton, &QPushButton::clicked, this, &MainWindow::enqueueCurrent);
  connect(m_pauseButton, &QPushButton::clicked, this, &MainWindow::togglePause);
  connect(m_stopButton, &QPushButton::clicked, this, &MainWindow::stopTraining);

  connect(m_taskCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    populateDatasets();
    rebuildForm();
  });
  connect(m_cellCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { rebuildForm(); });
  connect(m_datasetCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    const QString data = m_datasetCombo->currentData().toString();
    m_datasetFile = data.startsWith(QLatin1String("file:")) ? data.mid(5) : QString();
    m_formatLabel->setText(datasetLabel());
    m_formatLabel->setVisible(!m_formatLabel->text().isEmpty());
    scheduleValidation();
  });
  connect(m_presetCombo, qOverload<int>(&QComboBox::activated), this, [this](int i) {
    if (i > 0) applyPreset(m_presetCombo->itemText(i));
    else applyConfig(QJsonObject());
  });
  connect(m_form, &csw::OptionForm::changed, this, [this] { scheduleValidation(); });
  populatePresets();
  populateDatasets();
  rebuildForm();
  return panel;
}

csw::CurvePlot* MainWindow::makePlot(const QString& title, const QString& yLabel) {
  auto* p = new csw::CurvePlot;
  p->setTitle(title);
  p->setYLabel(yLabel);
  p->setXLabel(xAxisLabel(m_xAxis));
  p->setLegendVisible(true);
  p->setMinimumSize(260, 200);
  p->plot()->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(p->plot(), &QWidget::customContextMenuRequested, this, [this, p](const QPoint& pos) { plotContextMenu(p, pos); });
  return p;
}

QWidget* MainWindow::buildTrainingTab() {
  auto* w = new QWidget;
  auto* v = new QVBoxLayout(w);
  v->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout;
  m_runLabel = new QLabel(QStringLiteral("No run yet: configure on the left and press Start (Ctrl+R)."));
  m_runLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_xAxisCombo = new QComboBox;
  m_xAxisCombo->addItems({QStringLiteral("Step"), QStringLiteral("Epoch"), QStringLiteral("Wall time")});
  m_xAxisCombo->setToolTip(QStringLiteral("What the x axis of every curve shows"));
  connect(m_xAxisCombo, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int i) { setXAxis(static_cast<XAxis>(i)); });
  top->addWidget(m_runLabel, 1);
  top->addWidget(new QLabel(QStringLiteral("X axis:")));
  top->addWidget(m_xAxisCombo);
  v->addLayout(top);

  auto* split = new QSplitter(Qt::Vertical);
  auto* grid = new QWidget;
  auto* g = new QGridLayout(grid);
  g->setContentsMargins(0, 0, 0, 0);
  g->setSpacing(4);
  struct Def { const char* id; const char* title; const char* y; };
  const Def defs[] = {{"metric", "Training and validation", "loss"},
                      {"lr", "Learning rate", "learning rate"},
                      {"grad_norm", "Gradient norm", "L2 norm"},
                      {"throughput", "Throughput", "units / s"},
                      {"extra", "Other metrics", "value"}};
  int i = 0;
  for (const Def& d : defs) {
    auto* p = makePlot(QString::fromLatin1(d.title), QString::fromLatin1(d.y));
    m_plots.insert(QString::fromLatin1(d.id), p);
    m_plotOrder << QString::fromLatin1(d.id);
    if (i == 0) g->addWidget(p, 0, 0, 1, 2);
    else g->addWidget(p, 1 + (i - 1) / 2, (i - 1) % 2);
    ++i;
  }
  g->setRowStretch(0, 3);
  g->setRowStretch(1, 2);
  g->setRowStretch(2, 2);
  m_plots.value(QStringLiteral("extra"))->hide();  // shown when a cell logs an extra metric
  split->addWidget(grid);
  m_log = new QPlainTextEdit;
  m_log->setReadOnly(true);
  m_log->setMaximumBlockCount(5000);
  m_log->setPlaceholderText(QStringLiteral("The run's log appears here."));
  QFont mono(QStringLiteral("monospace"));
  mono.setStyleHint(QFont::Monospace);
  m_log->setFont(mono);
  split->addWidget(m_log);
  split->setStretchFactor(0, 5);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);
  return w;
}

QWidget* MainWindow::buildComparePanel() {
  auto* w = new QWidget;
  auto* v = new QVBoxLayout(w);
  v->setContentsMargins(4, 4, 4, 4);
  auto* split = new QSplitter(Qt::Vertical);

  auto* tableBox = new QWidget;
  auto* tv = new QVBoxLayout(tableBox);
  tv->setContentsMargins(0, 0, 0, 0);
  auto* frow = new QHBoxLayout;
  m_filterEdit = new QLineEdit;
  m_filterEdit->setPlaceholderText(QStringLiteral("Filter runs (name, cell, status, config...)"));
  m_filterEdit->setClearButtonEnabled(true);
  frow->addWidget(m_filterEdit, 1);
  auto* exportTable = new QToolButton;
  exportTable->setText(QStringLiteral("Export CSV..."));
  connect(exportTable, &QToolButton::clicked, this, &MainWindow::exportTableInteractive);
  frow->addWidget(exportTable);
  tv->addLayout(frow);
  m_runModel = new RunTableModel(this);
  m_runProxy = new QSortFilterProxyModel(this);
  m_runProxy->setSourceModel(m_runModel);
  m_runProxy->setSortRole(RunTableModel::SortRole);
  m_runProxy->setFilterKeyColumn(-1);
  m_runProxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  connect(m_filterEdit, &QLineEdit::textChanged, m_runProxy, &QSortFilterProxyModel::setFilterFixedString);
  m_runView = new QTableView;
  m_runView->setModel(m_runProxy);
  m_runView->setSortingEnabled(true);
  m_runView->sortByColumn(RunTableModel::Name, Qt::DescendingOrder);
  m_runView->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_runView->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_runView->setAlternatingRowColors(true);
  m_runView->verticalHeader()->hide();
  m_runView->verticalHeader()->setDefaultSectionSize(22);
  m_runView->horizontalHeader()->setStretchLastSection(true);
  m_runView->setToolTip(QStringLiteral("Tick runs to overlay their curves; select two to see their config diff; "
                                       "double-click to show a run in the Training tab"));
  tv->addWidget(m_runView, 1);
  split->addWidget(tableBox);
  connect(m_runModel, &RunTableModel::checkedChanged, this, [this] {
    updateCompareMetrics();
    updateCompare();
  });
  connect(m_runView->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::updateDiff);
  connect(m_runView, &QTableView::doubleClicked, this, [this](const QModelIndex& idx) {
    const RunInfo* r = m_runModel->run(m_runProxy->mapToSource(idx).row());
    if (r) showRunInTrainingView(r->dir);
  });

  auto* bottom = new QSplitter(Qt::Horizontal);
  auto* plotBox = new QWidget;
  auto* pv = new QVBoxLayout(plotBox);
  pv->setContentsMargins(0, 0, 0, 0);
  auto* crow = new QHBoxLayout;
  m_compareMetric = new QComboBox;
  m_compareMetric->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_seedBox = new QCheckBox(QStringLiteral("Aggregate seeds"));
  m_seedBox->setToolTip(QStringLiteral("Runs that differ only in training.seed are drawn as their mean with a band"));
  m_bandCombo = new QComboBox;
  m_bandCombo->addItems({QStringLiteral("min-max band"), QStringLiteral("mean \u00b1 std band")});
  crow->addWidget(new QLabel(QStringLiteral("Metric:")));
  crow->addWidget(m_compareMetric);
  crow->addSpacing(12);
  crow->addWidget(m_seedBox);
  crow->addWidget(m_bandCombo);
  crow->addStretch(1);
  pv->addLayout(crow);
  m_comparePlot = makePlot(QStringLiteral("Comparison"), QStringLiteral("value"));
  pv->addWidget(m_comparePlot, 1);
  connect(m_compareMetric, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { updateCompare(); });
  connect(m_seedBox, &QCheckBox::toggled, this, [this] { updateCompare(); });
  connect(m_bandCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { updateCompare(); });
  bottom->addWidget(plotBox);

  auto* diffBox = new QWidget;
  auto* dv = new QVBoxLayout(diffBox);
  dv->setContentsMargins(0, 0, 0, 0);
  m_diffLabel = new QLabel(QStringLiteral("Select two runs to see how their configs differ."));
  m_diffLabel->setWordWrap(true);
  m_diffTable = new QTableWidget(0, 3);
  m_diffTable->setHorizontalHeaderLabels({QStringLiteral("Option"), QStringLiteral("A"), QStringLiteral("B")});
  m_diffTable->horizontalHeader()->setStretchLastSection(true);
  m_diffTable->verticalHeader()->hide();
  m_diffTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
  dv->addWidget(m_diffLabel);
  dv->addWidget(m_diffTable, 1);
  bottom->addWidget(diffBox);
  diffBox->setMinimumWidth(240);
  bottom->setStretchFactor(0, 3);
  bottom->setStretchFactor(1, 1);
  bottom->setSizes({700, 300});
  split->addWidget(bottom);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  v->addWidget(split, 1);
  return w;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  file->addAction(QStringLiteral("Open &workspace..."), QKeySequence(QStringLiteral("Ctrl+Shift+O")), this, &MainWindow::chooseWorkspace);
  file->addAction(QStringLiteral("Open &dataset file..."), QKeySequence::Open, this, &MainWindow::chooseDatasetFile);
  file->addSeparator();
  file->addAction(QStringLiteral("&Export all figures of this run..."), QKeySequence(QStringLiteral("Ctrl+E")), this,
                  &MainWindow::exportAllInteractive);
  file->addAction(QStringLiteral("Export &comparison figure..."), this, [this] { exportPlotInteractive(m_comparePlot); });
  file->addAction(QStringLiteral("Export run &table as CSV..."), this, &MainWindow::exportTableInteractive);
  file->addAction(QStringLiteral("Export &options..."), this, &MainWindow::exportOptionsDialog);
  file->addSeparator();
  file->addAction(QStringLiteral("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(QStringLiteral("&Run"));
  m_startAction = run->addAction(QStringLiteral("&Start"), QKeySequence(QStringLiteral("Ctrl+R")), this, &MainWindow::startTraining);
  m_queueAction = run->addAction(QStringLiteral("Add to &queue"), QKeySequence(QStringLiteral("Ctrl+Shift+R")), this,
                                 &MainWindow::enqueueCurrent);
  m_pauseAction = run->addAction(QStringLiteral("&Pause / Resume"), QKeySequence(QStringLiteral("Ctrl+P")), this,
                                 &MainWindow::togglePause);
  m_stopAction = run->addAction(QStringLiteral("S&top"), QKeySequence(QStringLiteral("Ctrl+.")), this, &MainWindow::stopTraining);
  run->addAction(QStringLiteral("&Clear queue"), this, [this] {
    m_queue.clear();
    updateActions();
  });

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  view->addAction(QStringLiteral("&Training"), QKeySequence(QStringLiteral("Ctrl+1")), this, [this] { m_tabs->setCurrentIndex(0); });
  view->addAction(QStringLiteral("&Compare"), QKeySequence(QStringLiteral("Ctrl+2")), this, [this] { m_tabs->setCurrentIndex(1); });
  view->addAction(QStringLiteral("&Analyses"), QKeySequence(QStringLiteral("Ctrl+3")), this, [this] { m_tabs->setCurrentIndex(m_tabs->indexOf(m_analysisPanel)); });
  view->addAction(QStringLiteral("&Generate text"), QKeySequence(QStringLiteral("Ctrl+5")), this,
                  [this] { m_tabs->setCurrentWidget(m_generatePanel); });
  view->addAction(QStringLiteral("&Reset all views"), QKeySequence(QStringLiteral("Ctrl+0")), this, [this] {
    for (auto* p : trainingPlots()) p->resetView();
    m_comparePlot->resetView();
  });
  view->addAction(QStringLiteral("Re&load workspace"), QKeySequence::Refresh, this, &MainWindow::refreshWorkspace);

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  help->addAction(QStringLiteral("&About Cellscope"), this, &MainWindow::showAbout);
}

// ======================================================================= settings
void MainWindow::loadSettings(const WindowOptions& options) {
  QSettings& s = *m_settings;
  if (s.contains(QStringLiteral("window/geometry"))) restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
  else resize(1360, 860);
  if (s.contains(QStringLiteral("window/splitter")))
    m_mainSplitter->restoreState(s.value(QStringLiteral("window/splitter")).toByteArray());
  m_xAxisCombo->setCurrentIndex(std::clamp(s.value(QStringLiteral("view/x_axis"), 0).toInt(), 0, 2));
  m_exportOptions.scale = s.value(QStringLiteral("export/scale"), m_exportOptions.scale).toDouble();
  m_exportOptions.fontPointSize = s.value(QStringLiteral("export/font_size"), m_exportOptions.fontPointSize).toDouble();
  m_exportOptions.fontFamily = s.value(QStringLiteral("export/font_family"), m_exportOptions.fontFamily).toString();
  m_exportOptions.size = s.value(QStringLiteral("export/size"), m_exportOptions.size).toSize();
  if (options.restoreLastConfig && s.contains(QStringLiteral("config/last"))) {
    const QJsonObject last = QJsonDocument::fromJson(s.value(QStringLiteral("config/last")).toByteArray()).object();
    if (!last.isEmpty()) applyConfig(last);
  }
  if (!options.dataset.isEmpty()) selectDataset(options.dataset);

  // Workspace: --workspace, else $CELLSCOPE_WORKSPACE, else the remembered one, else the CLI's default.
  QString ws = options.workspace;
  if (ws.isEmpty() && !qEnvironmentVariableIsEmpty("CELLSCOPE_WORKSPACE")) ws = defaultWorkspace();
  if (ws.isEmpty()) ws = s.value(QStringLiteral("workspace")).toString();
  if (ws.isEmpty()) ws = defaultWorkspace();
  openWorkspace(ws);
  scheduleValidation();
}

void MainWindow::saveSettings() {
  QSettings& s = *m_settings;
  s.setValue(QStringLiteral("window/geometry"), saveGeometry());
  s.setValue(QStringLiteral("window/splitter"), m_mainSplitter->saveState());
  s.setValue(QStringLiteral("workspace"), m_workspace);
  s.setValue(QStringLiteral("view/x_axis"), m_xAxisCombo->currentIndex());
  s.setValue(QStringLiteral("config/last"), QJsonDocument(currentConfig()).toJson(QJsonDocument::Compact));
  s.setValue(QStringLiteral("export/scale"), m_exportOptions.scale);
  s.setValue(QStringLiteral("export/font_size"), m_exportOptions.fontPointSize);
  s.setValue(QStringLiteral("export/font_family"), m_exportOptions.fontFamily);
  s.setValue(QStringLiteral("export/size"), m_exportOptions.size);
  s.sync();
}

// ======================================================================= configuration
void MainWindow::populatePresets() {
  m_presetCombo->blockSignals(true);
  m_presetCombo->clear();
  m_presetCombo->addItem(QStringLiteral("(defaults)"));
  QDir d(presetsDir());
  for (const QFileInfo& fi : d.entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
    QFile f(fi.absoluteFilePath());
    QString notes;
    if (f.open(QIODevice::ReadOnly)) notes = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("notes")).toString();
    m_presetCombo->addItem(fi.completeBaseName());
    m_presetCombo->setItemData(m_presetCombo->count() - 1, notes, Qt::ToolTipRole);
  }
  m_presetCombo->blockSignals(false);
}

QStringList MainWindow::presetNames() const {
  QStringList out;
  for (int i = 1; i < m_presetCombo->count(); ++i) out << m_presetCombo->itemText(i);
  return out;
}

bool MainWindow::applyPreset(const QString& name) {
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
  statusBar()->showMessage(QStringLiteral("Preset %1 loaded").arg(name), 4000);
  return true;
}

void MainWindow::populateDatasets() {
  const QString task = m_taskCombo->currentData().toString();
  const QString previous = m_datasetCombo->currentData().toString();
  m_datasetCombo->blockSignals(true);
  m_datasetCombo->clear();
  for (const DatasetEntry& d : manifestDatasets()) {
    if (!d.tasks.isEmpty() && !d.tasks.contains(task)) continue;
    m_datasetCombo->addItem(d.present ? d.name : d.name + QStringLiteral(" (not downloaded)"), d.name);
    m_datasetCombo->setItemData(m_datasetCombo->count() - 1,
                                QStringLiteral("%1\nFormat: %2").arg(d.description, d.format), Qt::ToolTipRole);
    m_datasetCombo->setItemData(m_datasetCombo->count() - 1, d.format, Qt::UserRole + 1);
  }
  if (m_datasetCombo->count() == 0) {
    // No manifest (or nothing for this task): the schema's default dataset name.
    m_datasetCombo->addItem(QStringLiteral("moby-dick"), QStringLiteral("moby-dick"));
  }
  if (!m_datasetFile.isEmpty()) {
    m_datasetCombo->addItem(QStringLiteral("File: ") + QFileInfo(m_datasetFile).fileName(), QStringLiteral("file:") + m_datasetFile);
    m_datasetCombo->setItemData(m_datasetCombo->count() - 1, m_datasetFile, Qt::ToolTipRole);
  }
  int idx = m_datasetCombo->findData(previous);
  m_datasetCombo->setCurrentIndex(idx >= 0 ? idx : 0);
  const QString data = m_datasetCombo->currentData().toString();
  m_datasetFile = data.startsWith(QLatin1String("file:")) ? data.mid(5) : QString();
  m_datasetCombo->blockSignals(false);
  m_formatLabel->setText(datasetLabel());
  m_formatLabel->setVisible(!m_formatLabel->text().isEmpty());
}

bool MainWindow::selectDataset(const QString& name) {
  int idx = m_datasetCombo->findData(name);
  if (idx < 0) {
    m_datasetCombo->addItem(name + QStringLiteral(" (not in the manifest)"), name);
    idx = m_datasetCombo->count() - 1;
  }
  m_datasetCombo->setCurrentIndex(idx);
  m_datasetFile.clear();
  m_formatLabel->setText(datasetLabel());
  m_formatLabel->setVisible(!m_formatLabel->text().isEmpty());
  scheduleValidation();
  return true;
}

void MainWindow::setDatasetFile(const QString& path) {
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
  m_formatLabel->setText(datasetLabel());
  m_formatLabel->setVisible(true);
  scheduleValidation();
}

QString MainWindow::datasetFormat() const {
  if (!m_datasetFile.isEmpty()) return detectFormat(m_datasetFile);
  return m_datasetCombo->currentData(Qt::UserRole + 1).toString();
}

QString MainWindow::datasetLabel() const {
  if (!m_datasetFile.isEmpty()) {
    QFileInfo fi(m_datasetFile);
    const QString size = fi.isDir() ? QStringLiteral("folder") : QLocale().formattedDataSize(fi.size());
    return QStringLiteral("Format: %1 (detected), %2\n%3").arg(datasetFormat(), size, m_datasetFile);
  }
  const QString fmt = datasetFormat();
  return fmt.isEmpty() ? QString() : QStringLiteral("Format: %1 (from the manifest)").arg(fmt);
}

void MainWindow::rebuildForm() {
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
}

QJsonObject MainWindow::currentConfig() const {
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

void MainWindow::applyConfig(const QJsonObject& cfg) {
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
  else if (ds.contains(QStringLiteral("name")))
    selectDataset(ds.value(QStringLiteral("name")).toString());
  m_form->resetToDefaults();
  const QMap<QString, QString> flat = flattenConfig(cfg);
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    if (isDedicatedPath(it.key()) || !m_form->paths().contains(it.key())) continue;
    const QString section = it.key().section(QLatin1Char('.'), 0, 0), key = it.key().section(QLatin1Char('.'), 1);
    m_form->setValue(it.key(), cfg.value(section).toObject().value(key).toVariant());
  }
  m_applying = false;
  scheduleValidation();
}

bool MainWindow::setConfigValue(const QString& path, const QVariant& value) {
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

void MainWindow::scheduleValidation() {
  if (m_applying) return;
  m_validateTimer->start();
}

void MainWindow::revalidateNow() {
  m_validateTimer->stop();
  const QJsonObject cfg = currentConfig();
  const auto errs = validateConfig(cfg);
  m_form->clearErrors();
  m_errors.clear();
  QStringList top;
  const QStringList formPaths = m_form->paths();
  for (const auto& e : errs) {
    m_errors << e.first + QStringLiteral(": ") + e.second;
    if (formPaths.contains(e.first)) m_form->setError(e.first, e.second);
    else top << QStringLiteral("<b>%1</b>: %2").arg(e.first.toHtmlEscaped(), e.second.toHtmlEscaped());
  }
  m_topError->setText(top.join(QStringLiteral("<br>")));
  m_topError->setVisible(!top.isEmpty());
  if (errs.isEmpty()) {
    m_paramLabel->setText(QStringLiteral("Parameters: counting..."));
    m_paramTimer->start();
  } else {
    ++m_paramGeneration;  // drop a count in flight
    m_paramCount = -1;
    m_paramLabel->setText(QStringLiteral("Parameters: - (fix the %1 problem%2 above)").arg(errs.size()).arg(errs.size() > 1 ? "s" : ""));
  }
  updateActions();
}

void MainWindow::requestParameterCount() {
  // Built off the GUI thread (loading the dataset for the vocabulary can take a while);
  // only the newest request's answer is shown.
  const int gen = ++m_paramGeneration;
  const QJsonObject cfg = currentConfig();
  QPointer<MainWindow> self(this);
  QThreadPool::globalInstance()->start([self, gen, cfg] {
    QString err;
    const qint64 n = gui::parameterCount(cfg, &err);
    QMetaObject::invokeMethod(
        qApp,
        [self, gen, n, err] {
          if (!self || gen != self->m_paramGeneration) return;
          self->m_paramCount = n;
          if (n >= 0) {
            self->m_paramLabel->setText(QStringLiteral("Parameters: <b>%1</b> (%2 M)").arg(QLocale().toString(n)).arg(n / 1e6, 0, 'f', 3));
            self->m_paramLabel->setToolTip(QStringLiteral("Trainable parameters of the configured model"));
          } else {
            self->m_paramLabel->setText(QStringLiteral("Parameters: <span style='color:#c62828'>cannot build the model</span>"));
            self->m_paramLabel->setToolTip(err);
          }
          Q_EMIT self->parameterCountChanged(n);
        },
        Qt::QueuedConnection);
  });
}

// ======================================================================= training
bool MainWindow::isPaused() const { return m_worker && m_worker->isPaused(); }

void MainWindow::updateActions() {
  const bool valid = m_errors.isEmpty();
  m_startButton->setEnabled(valid && !m_busy);
  m_startAction->setEnabled(valid && !m_busy);
  m_queueButton->setEnabled(valid);
  m_queueAction->setEnabled(valid);
  m_pauseButton->setEnabled(m_busy);
  m_pauseAction->setEnabled(m_busy);
  m_stopButton->setEnabled(m_busy);
  m_stopAction->setEnabled(m_busy);
  m_pauseButton->setText(isPaused() ? QStringLiteral("Resume") : QStringLiteral("Pause"));
  m_queueLabel->setText(m_queue.isEmpty() ? QString() : QStringLiteral("Queue: %1 waiting").arg(m_queue.size()));
}

bool MainWindow::startTraining() {
  revalidateNow();
  if (!m_errors.isEmpty()) {
    statusBar()->showMessage(QStringLiteral("Not started: the configuration has %1 problem(s), shown next to the fields").arg(m_errors.size()), 6000);
    return false;
  }
  if (m_busy) {
    enqueueCurrent();
    return false;
  }
  // one training at a time: a sweep (Sweeps tab) runs its points one after another
  if (auto* sweep = findChild<SweepPanel*>(QStringLiteral("sweepPanel")); sweep && sweep->isRunning()) {
    statusBar()->showMessage(QStringLiteral("Not started: a sweep is running (Sweeps tab, Ctrl+4); stop it or let it finish first"), 8000);
    return false;
  }
  launch(currentConfig());
  return true;
}

void MainWindow::enqueueCurrent() {
  revalidateNow();
  if (!m_errors.isEmpty()) return;
  if (!m_busy) {
    launch(currentConfig());
    return;
  }
  m_queue << currentConfig();
  statusBar()->showMessage(QStringLiteral("Added to the queue (%1 waiting)").arg(m_queue.size()), 4000);
  updateActions();
}

void MainWindow::launch(const QJsonObject& cfg) {
  m_busy = true;
  m_lastError.clear();
  m_runDir.clear();
  resetLivePlots();
  m_runLabel->setText(QStringLiteral("Preparing: loading the data and building the model..."));
  m_statusLabel->setText(QStringLiteral("Preparing..."));
  m_progressBar->setValue(0);
  m_progressBar->show();
  m_tabs->setCurrentIndex(0);
  const QByteArray json = QJsonDocument(cfg).toJson(QJsonDocument::Compact);
  const QString ws = m_workspace;
  QDir().mkpath(ws);
  const int threads = std::max(1, QThread::idealThreadCount() - 1);  // leave a core for the GUI
  TrainWorker* w = m_worker;
  QMetaObject::invokeMethod(w, [w, json, ws, threads] { w->start(json, ws, QString(), threads); }, Qt::QueuedConnection);
  updateActions();
}

void MainWindow::startNextQueued() {
  if (m_busy || m_queue.isEmpty()) return;
  launch(m_queue.takeFirst());
}

void MainWindow::pauseTraining() {
  if (!m_busy) return;
  m_worker->setPaused(true);
  m_statusLabel->setText(QStringLiteral("Paused at step %1").arg(m_progress.step));
  updateActions();
}

void MainWindow::resumeTraining() {
  if (!m_busy) return;
  m_worker->setPaused(false);
  updateActions();
}

void MainWindow::togglePause() {
  if (isPaused()) resumeTraining();
  else pauseTraining();
}

void MainWindow::stopTraining() {
  if (!m_busy) return;
  m_worker->setPaused(false);
  m_worker->requestStop();
  m_statusLabel->setText(QStringLiteral("Stopping (writing a checkpoint)..."));
}

QString MainWindow::progressText() const { return m_statusLabel->text(); }

void MainWindow::onStarted(const QString& runDir, const QString& metric, const QString& unit, qint64 params) {
  m_runDir = runDir;
  m_primary = metric;
  m_unit = unit;
  m_runLabel->setText(QStringLiteral("<b>%1</b> &nbsp; %2 parameters").arg(QFileInfo(runDir).fileName().toHtmlEscaped(),
                                                                         QLocale().toString(params)));
  m_runLabel->setToolTip(runDir);
  m_plots.value(QStringLiteral("metric"))->setYLabel(metric);
  m_plots.value(QStringLiteral("throughput"))->setYLabel(unit + QStringLiteral(" / s"));
  appendLog(QStringLiteral("run directory: ") + runDir);
  m_runModel->refreshRun(runDir);
  Q_EMIT runStarted(runDir);
}

void MainWindow::onFinished(const QString& status, const QString& reason, const QString& runDir) {
  drainWorker();
  m_busy = false;
  m_progressBar->hide();
  m_statusLabel->setText(QStringLiteral("Run %1%2").arg(status, reason.isEmpty() ? QString() : QStringLiteral(": ") + reason));
  if (status == QLatin1String("failed")) {
    m_lastError = reason;
    QMessageBox* box = new QMessageBox(QMessageBox::Warning, QStringLiteral("Training failed"), reason, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setModal(false);
    box->show();
  }
  m_runModel->refreshRun(runDir);
  m_metricsCache.remove(QFileInfo(runDir).absoluteFilePath());
  updateCompare();
  Q_EMIT runFinished(runDir, status);
  updateActions();
  if (m_closeAfterStop) {
    close();
    return;
  }
  startNextQueued();
}

void MainWindow::onFailed(const QString& message, const QString& runDir) {
  drainWorker();
  m_busy = false;
  m_lastError = message;
  m_progressBar->hide();
  m_statusLabel->setText(QStringLiteral("Failed: ") + message.section(QLatin1Char('\n'), 0, 0));
  m_runLabel->setText(QStringLiteral("<span style='color:#c62828'>Could not train: %1</span>").arg(message.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"))));
  appendLog(QStringLiteral("error: ") + message);
  if (!runDir.isEmpty()) m_runModel->refreshRun(runDir);
  QMessageBox* box = new QMessageBox(QMessageBox::Warning, QStringLiteral("Training failed"), message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setModal(false);
  if (isVisible()) box->show();
  Q_EMIT runFailed(message);
  updateActions();
  if (m_closeAfterStop) {
    close();
    return;
  }
  startNextQueued();
}

void MainWindow::appendLog(const QString& line) { m_log->appendPlainText(line); }

void MainWindow::drainWorker() {
  QVector<MetricPoint> pts;
  QStringList logs;
  TrainProgress pr;
  const bool hasProgress = m_worker->drain(&pts, &logs, &pr);
  for (const QString& l : logs) appendLog(l);
  for (const MetricPoint& p : pts) {
    m_live << p;
    addLivePoint(p);
  }
  if (hasProgress && m_busy) {
    m_progress = pr;
    m_hasProgress = true;
    const int pct = pr.total > 0 ? int(100.0 * pr.step / pr.total) : 0;
    m_progressBar->setValue(pct);
    m_progressBar->setFormat(QStringLiteral("%1 / %2").arg(pr.step).arg(pr.total));
    if (!isPaused())
      m_statusLabel->setText(QStringLiteral("Step %1 / %2  \u00b7  loss %3  \u00b7  %4 %5/s  \u00b7  elapsed %6  \u00b7  ETA %7")
                                 .arg(pr.step)
                                 .arg(pr.total)
                                 .arg(pr.lastLoss, 0, 'f', 3)
                                 .arg(fmtRate(pr.throughput), pr.unit, fmtDuration(pr.elapsed), fmtDuration(pr.eta)));
  }
  for (auto* p : trainingPlots()) p->replotIfDirty();  // queued replots at most 10 per second
  m_comparePlot->replotIfDirty();
}

csw::CurvePlot* MainWindow::trainingPlot(const QString& name) const { return m_plots.value(name); }

QList<csw::CurvePlot*> MainWindow::trainingPlots() const {
  QList<csw::CurvePlot*> out;
  for (const QString& id : m_plotOrder) out << m_plots.value(id);
  return out;
}

void MainWindow::addLivePoint(const MetricPoint& p) {
  const double x = xOf(p, m_xAxis);
  csw::CurvePlot* metric = m_plots.value(QStringLiteral("metric"));
  const QString primary = m_primary.isEmpty() ? QStringLiteral("loss") : m_primary;
  if (p.eval) {
    for (const auto& kv : p.values) {
      if (kv.first != primary) continue;
      const QString id = p.split.isEmpty() ? QStringLiteral("valid") : p.split;
      if (!metric->hasSeries(id)) metric->addSeries(id, id + QLatin1Char(' ') + primary);
      metric->appendPoint(id, x, kv.second);
    }
    return;
  }
  const QString trainKey = p.has(primary) ? primary : QStringLiteral("loss");
  for (const auto& kv : p.values) {
    const QString& k = kv.first;
    if (k == trainKey) {
      if (!metric->hasSeries(QStringLiteral("train"))) metric->addSeries(QStringLiteral("train"), QStringLiteral("train ") + trainKey);
      metric->appendPoint(QStringLiteral("train"), x, kv.second);
    } else if (k == QLatin1String("lr")) {
      m_plots.value(QStringLiteral("lr"))->appendPoint(QStringLiteral("lr"), x, kv.second);
    } else if (k == QLatin1String("grad_norm")) {
      m_plots.value(QStringLiteral("grad_norm"))->appendPoint(QStringLiteral("grad_norm"), x, kv.second);
    } else if (k == QLatin1String("throughput")) {
      m_plots.value(QStringLiteral("throughput"))->appendPoint(QStringLiteral("throughput"), x, kv.second);
    } else if (!isKnownKey(k)) {
      // Any extra numeric key a cell logs (e.g. zone_disagreement).
      csw::CurvePlot* extra = m_plots.value(QStringLiteral("extra"));
      extra->appendPoint(k, x, kv.second);
      if (extra->isHidden()) extra->show();
    }
  }
}

void MainWindow::resetLivePlots() {
  m_live.clear();
  m_primary.clear();
  for (auto* p : trainingPlots()) {
    p->clear();
    p->resetView();
    p->replotIfDirty();
  }
  m_plots.value(QStringLiteral("extra"))->hide();
  m_log->clear();
}

void MainWindow::rebuildLivePlots() {
  for (auto* p : trainingPlots()) {
    p->clear();
    p->setXLabel(xAxisLabel(m_xAxis));
  }
  for (const MetricPoint& p : m_live) addLivePoint(p);
  for (auto* p : trainingPlots()) {
    p->resetView();
    p->replotIfDirty();
  }
}

void MainWindow::setXAxis(XAxis axis) {
  if (m_xAxisCombo->currentIndex() != int(axis)) {
    m_xAxisCombo->setCurrentIndex(int(axis));  // comes back here
    return;
  }
  m_xAxis = axis;
  rebuildLivePlots();
  m_comparePlot->setXLabel(xAxisLabel(m_xAxis));
  updateCompare();
}

void MainWindow::showRunInTrainingView(const QString& dir) {
  if (m_busy) {
    statusBar()->showMessage(QStringLiteral("A run is training: its curves stay in the Training tab; tick runs to compare them"), 5000);
    m_tabs->setCurrentIndex(1);
    return;
  }
  RunInfo r;
  if (!readRun(dir, &r)) return;
  resetLivePlots();
  m_runDir = r.dir;
  m_primary = r.summary.value(QStringLiteral("primary_metric")).toString();
  m_runLabel->setText(QStringLiteral("<b>%1</b> &nbsp; %2, %3").arg(r.name.toHtmlEscaped(), r.status(),
                                                                    QLocale().toString(qlonglong(r.summary.value(QStringLiteral("parameters")).toDouble())) + QStringLiteral(" parameters")));
  m_plots.value(QStringLiteral("metric"))->setYLabel(m_primary.isEmpty() ? QStringLiteral("loss") : m_primary);
  m_live = readMetricsFile(QDir(dir).filePath(QStringLiteral("metrics.jsonl")));
  QFile log(QDir(dir).filePath(QStringLiteral("log.txt")));
  if (log.open(QIODevice::ReadOnly)) m_log->setPlainText(QString::fromUtf8(log.readAll()));
  rebuildLivePlots();
  m_tabs->setCurrentIndex(0);
}

// ======================================================================= workspace
void MainWindow::openWorkspace(const QString& dir) {
  const QString abs = QFileInfo(dir).absoluteFilePath();
  QDir().mkpath(abs);
  if (!m_watcher->directories().isEmpty()) m_watcher->removePaths(m_watcher->directories());
  m_workspace = abs;
  m_watcher->addPath(abs);
  m_workspaceLabel->setText(QFontMetrics(m_workspaceLabel->font()).elidedText(abs, Qt::ElideMiddle, 220));
  m_workspaceLabel->setToolTip(abs);
  m_metricsCache.clear();
  m_runModel->setRuns(scanWorkspace(abs));
  m_runView->resizeColumnsToContents();
  m_runView->horizontalHeader()->setStretchLastSection(true);
  updateCompareMetrics();
  updateCompare();
  m_settings->setValue(QStringLiteral("workspace"), abs);
  m_analysisPanel->setWorkspace(abs);
  Q_EMIT workspaceLoaded(m_runModel->rowCount());
}

void MainWindow::refreshWorkspace() { openWorkspace(m_workspace); }

void MainWindow::rescanWorkspace() {
  // New run directories (from the CLI or this window) and removed ones.
  QDir d(m_workspace);
  const QStringList names = d.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  bool removed = false;
  QSet<QString> present;
  for (const QString& n : names) present.insert(d.absoluteFilePath(n));
  for (const RunInfo& r : m_runModel->runs())
    if (!present.contains(r.dir)) removed = true;
  if (removed) {
    const QStringList checked = m_runModel->checkedDirs();
    m_runModel->setRuns(scanWorkspace(m_workspace));
    for (const QString& c : checked) m_runModel->setChecked(c, true);
    return;
  }
  for (const QString& n : names) {
    const QString abs = d.absoluteFilePath(n);
    if (m_runModel->rowOf(abs) < 0) m_runModel->refreshRun(abs);
  }
}

void MainWindow::periodicRefresh() {
  // summary.json of running runs (a CLI run in the same workspace, or ours).
  bool overlayChanged = false;
  const QStringList checked = m_runModel->checkedDirs();
  for (int i = 0; i < m_runModel->rowCount(); ++i) {
    const RunInfo* r = m_runModel->run(i);
    if (!r || r->status() != QLatin1String("running")) continue;
    const QFileInfo fi(QDir(r->dir).filePath(QStringLiteral("summary.json")));
    if (fi.lastModified() == r->summaryTime) continue;
    const QString dir = r->dir;
    m_runModel->refreshRun(dir);
    if (checked.contains(dir)) overlayChanged = true;
  }
  if (overlayChanged) updateCompare();
}

const QVector<MetricPoint>& MainWindow::metricsOf(const QString& dir) {
  const QString path = QDir(dir).filePath(QStringLiteral("metrics.jsonl"));
  const qint64 size = QFileInfo(path).size();
  CachedMetrics& c = m_metricsCache[dir];
  if (c.size != size) {
    c.points = readMetricsFile(path);
    c.size = size;
  }
  return c.points;
}

void MainWindow::updateCompareMetrics() {
  // Offer every series the ticked runs have: "valid <metric>" and "train <key>".
  const QString previous = m_compareMetric->currentData().toString();
  QStringList keys;
  QString preferred;
  for (const QString& dir : m_runModel->checkedDirs()) {
    const RunInfo* r = m_runModel->run(m_runModel->rowOf(dir));
    if (r && preferred.isEmpty() && !r->summary.value(QStringLiteral("primary_metric")).toString().isEmpty())
      preferred = QStringLiteral("valid|") + r->summary.value(QStringLiteral("primary_metric")).toString();
    for (const MetricPoint& p : metricsOf(dir)) {
      const QString prefix = p.eval ? (p.split.isEmpty() ? QStringLiteral("valid") : p.split) : QStringLiteral("train");
      for (const auto& kv : p.values) {
        const QString k = prefix + QLatin1Char('|') + kv.first;
        if (!keys.contains(k)) keys << k;
      }
    }
  }
  std::sort(keys.begin(), keys.end(), [](const QString& a, const QString& b) {
    const bool va = a.startsWith(QLatin1String("valid")), vb = b.startsWith(QLatin1String("valid"));
    return va != vb ? va : a < b;
  });
  m_compareMetric->blockSignals(true);
  m_compareMetric->clear();
  for (const QString& k : keys) m_compareMetric->addItem(QString(k).replace(QLatin1Char('|'), QLatin1Char(' ')), k);
  int idx = m_compareMetric->findData(previous);
  if (idx < 0) idx = m_compareMetric->findData(preferred);
  m_compareMetric->setCurrentIndex(idx >= 0 ? idx : 0);
  m_compareMetric->blockSignals(false);
}

void MainWindow::setSeedAggregation(bool on, bool stdBand) {
  m_bandCombo->setCurrentIndex(stdBand ? 1 : 0);
  m_seedBox->setChecked(on);
  updateCompare();
}

void MainWindow::updateCompare() {
  csw::CurvePlot* plot = m_comparePlot;
  plot->clear();
  const QString sel = m_compareMetric->currentData().toString();
  const QString split = sel.section(QLatin1Char('|'), 0, 0), key = sel.section(QLatin1Char('|'), 1);
  plot->setYLabel(sel.isEmpty() ? QStringLiteral("value") : QString(sel).replace(QLatin1Char('|'), QLatin1Char(' ')));
  plot->setXLabel(xAxisLabel(m_xAxis));
  const QStringList dirs = m_runModel->checkedDirs();
  if (sel.isEmpty() || dirs.isEmpty()) {
    plot->setTitle(QStringLiteral("Comparison: tick runs in the table"));
    plot->resetView();
    plot->replotIfDirty();
    return;
  }
  plot->setTitle(QStringLiteral("Comparison: ") + QString(sel).replace(QLatin1Char('|'), QLatin1Char(' ')));
  auto seriesOf = [&](const QString& dir, QVector<double>* xs, QVector<double>* ys) {
    for (const MetricPoint& p : metricsOf(dir)) {
      const QString ps = p.eval ? (p.split.isEmpty() ? QStringLiteral("valid") : p.split) : QStringLiteral("train");
      if (ps != split || !p.has(key)) continue;
      xs->append(xOf(p, m_xAxis));
      ys->append(p.value(key, 0));
    }
  };
  const QStringList differing = m_runModel->differing();
  auto labelOf = [&](const RunInfo& r, bool skipSeed) {
    QStringList parts;
    for (const QString& k : differing) {
      if (skipSeed && k == QLatin1String("training.seed")) continue;
      parts << k.section(QLatin1Char('.'), 1) + QLatin1Char('=') + r.flat.value(k, QStringLiteral("-"));
    }
    QString label = parts.isEmpty() ? r.name : parts.join(QStringLiteral(", "));
    if (label.size() > 60) label = label.left(57) + QStringLiteral("...");
    return label;
  };
  // Group runs that differ only in their seed.
  QList<QStringList> groups;
  if (m_seedBox->isChecked()) {
    QMap<QString, int> byKey;
    for (const QString& dir : dirs) {
      const RunInfo* r = m_runModel->run(m_runModel->rowOf(dir));
      const QString k = seedGroupKey(*r);
      if (!byKey.contains(k)) {
        byKey.insert(k, groups.size());
        groups.append(QStringList());
      }
      groups[byKey.value(k)] << dir;
    }
  } else {
    for (const QString& dir : dirs) groups.append(QStringList{dir});
  }
  const bool stdBand = m_bandCombo->currentIndex() == 1;
  for (const QStringList& g : groups) {
    const RunInfo* first = m_runModel->run(m_runModel->rowOf(g.first()));
    if (g.size() == 1) {
      QVector<double> xs, ys;
      seriesOf(g.first(), &xs, &ys);
      plot->addSeries(first->dir, labelOf(*first, false));
      plot->setSeries(first->dir, xs, ys);
      continue;
    }
    // Mean over the seeds at the x values every run of the group has; band = min-max or mean +- std.
    std::map<double, QVector<double>> at;
    for (const QString& dir : g) {
      QVector<double> xs, ys;
      seriesOf(dir, &xs, &ys);
      for (int i = 0; i < xs.size(); ++i) at[xs[i]].append(ys[i]);
    }
    QVector<double> xs, mean, lo, hi;
    for (const auto& [x, vals] : at) {
      if (vals.size() != g.size()) continue;
      double s = 0, mn = vals[0], mx = vals[0];
      for (double v : vals) {
        s += v;
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
      const double m = s / vals.size();
      double var = 0;
      for (double v : vals) var += (v - m) * (v - m);
      const double sd = std::sqrt(var / std::max(1, int(vals.size()) - 1));
      xs << x;
      mean << m;
      lo << (stdBand ? m - sd : mn);
      hi << (stdBand ? m + sd : mx);
    }
    const QString id = QStringLiteral("seeds:") + first->dir;
    plot->addSeries(id, labelOf(*first, true) + QStringLiteral(" (mean of %1 seeds)").arg(g.size()));
    plot->setSeries(id, xs, mean);
    plot->setBand(id, xs, lo, hi);
  }
  plot->resetView();
  plot->replotIfDirty();
}

void MainWindow::updateDiff() {
  const QModelIndexList rows = m_runView->selectionModel()->selectedRows();
  m_diffTable->setRowCount(0);
  if (rows.size() != 2) {
    m_diffLabel->setText(QStringLiteral("Select two runs to see how their configs differ."));
    return;
  }
  const RunInfo* a = m_runModel->run(m_runProxy->mapToSource(rows[0]).row());
  const RunInfo* b = m_runModel->run(m_runProxy->mapToSource(rows[1]).row());
  if (!a || !b) return;
  const auto diff = configDiff(a->flat, b->flat);
  m_diffLabel->setText(QStringLiteral("<b>A</b> %1<br><b>B</b> %2<br>%3 differing option(s)")
                           .arg(a->name.toHtmlEscaped(), b->name.toHtmlEscaped())
                           .arg(diff.size()));
  m_diffTable->setRowCount(diff.size());
  for (int i = 0; i < diff.size(); ++i) {
    m_diffTable->setItem(i, 0, new QTableWidgetItem(std::get<0>(diff[i])));
    m_diffTable->setItem(i, 1, new QTableWidgetItem(std::get<1>(diff[i])));
    m_diffTable->setItem(i, 2, new QTableWidgetItem(std::get<2>(diff[i])));
  }
  m_diffTable->resizeColumnsToContents();
}

QString MainWindow::configDiffText() const {
  QStringList lines;
  for (int i = 0; i < m_diffTable->rowCount(); ++i)
    lines << QStringLiteral("%1: %2 -> %3").arg(m_diffTable->item(i, 0)->text(), m_diffTable->item(i, 1)->text(),
                                                m_diffTable->item(i, 2)->text());
  return lines.join(QLatin1Char('\n'));
}

// ======================================================================= export
bool MainWindow::exportPlot(csw::CurvePlot* plot, const QString& path, QString* error) {
  if (path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) return csw::exportCsv(plot, path, error);
  plot->replotIfDirty();
  csw::ExportOptions o = m_exportOptions;
  return csw::exportFigure(plot, path, o, error);
}

bool MainWindow::exportAllFigures(const QString& folder, QStringList* written, QString* error) {
  if (!QDir().mkpath(folder)) {
    if (error) *error = QStringLiteral("cannot create ") + folder;
    return false;
  }
  const QString prefix = m_runDir.isEmpty() ? QString() : QFileInfo(m_runDir).fileName() + QLatin1Char('-');
  bool any = false;
  for (const QString& id : m_plotOrder) {
    csw::CurvePlot* p = m_plots.value(id);
    bool hasData = false;
    for (const QString& s : p->seriesIds()) hasData = hasData || p->pointCount(s) > 0;
    if (!hasData) continue;
    for (const char* ext : {"png", "pdf", "svg", "csv"}) {
      const QString path = QDir(folder).filePath(prefix + slug(id) + QLatin1Char('.') + QLatin1String(ext));
      if (!exportPlot(p, path, error)) return false;
      if (written) *written << path;
      any = true;
    }
  }
  if (!any && error) *error = QStringLiteral("the training view has no curves yet");
  return any;
}

bool MainWindow::exportRunTable(const QString& path, QString* error) {
  return csw::writeCsvFile(m_runModel->toCsv(), path, error);
}

void MainWindow::plotContextMenu(csw::CurvePlot* plot, const QPoint& pos) {
  QMenu menu(this);
  menu.addAction(QStringLiteral("Export figure (PNG, PDF, SVG)..."), this, [this, plot] { exportPlotInteractive(plot); });
  menu.addAction(QStringLiteral("Export data as CSV..."), this, [this, plot] {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export data"), slug(plot->title()) + QStringLiteral(".csv"),
                                                      QStringLiteral("CSV (*.csv)"));
    QString err;
    if (!path.isEmpty() && !exportPlot(plot, path, &err)) QMessageBox::warning(this, QStringLiteral("Export failed"), err);
  });
  menu.addSeparator();
  menu.addAction(QStringLiteral("Reset view"), plot, &csw::CurvePlot::resetView);
  menu.addAction(QStringLiteral("Export options..."), this, &MainWindow::exportOptionsDialog);
  menu.exec(plot->plot()->mapToGlobal(pos));
}

void MainWindow::exportPlotInteractive(csw::CurvePlot* plot) {
  QString selected;
  const QString path = QFileDialog::getSaveFileName(
      this, QStringLiteral("Export figure"), slug(plot->title()) + QStringLiteral(".png"),
      QStringLiteral("PNG image (*.png);;PDF, vector (*.pdf);;SVG, vector (*.svg);;CSV data (*.csv)"), &selected);
  if (path.isEmpty()) return;
  QString err;
  if (!exportPlot(plot, path, &err)) QMessageBox::warning(this, QStringLiteral("Export failed"), err);
  else statusBar()->showMessage(QStringLiteral("Wrote ") + path, 5000);
}

void MainWindow::exportAllInteractive() {
  const QString folder = QFileDialog::getExistingDirectory(this, QStringLiteral("Export all figures of this run to"));
  if (folder.isEmpty()) return;
  QStringList written;
  QString err;
  if (!exportAllFigures(folder, &written, &err)) QMessageBox::warning(this, QStringLiteral("Export failed"), err);
  else statusBar()->showMessage(QStringLiteral("Wrote %1 files to %2").arg(written.size()).arg(folder), 6000);
}

void MainWindow::exportTableInteractive() {
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export run table"), QStringLiteral("runs.csv"),
                                                    QStringLiteral("CSV (*.csv)"));
  QString err;
  if (!path.isEmpty() && !exportRunTable(path, &err)) QMessageBox::warning(this, QStringLiteral("Export failed"), err);
}

void MainWindow::exportOptionsDialog() {
  QDialog dlg(this);
  dlg.setWindowTitle(QStringLiteral("Export options"));
  auto* f = new QFormLayout(&dlg);
  auto* w = new QSpinBox;
  w->setRange(200, 4000);
  w->setValue(m_exportOptions.size.isValid() ? m_exportOptions.size.width() : 800);
  auto* h = new QSpinBox;
  h->setRange(150, 4000);
  h->setValue(m_exportOptions.size.isValid() ? m_exportOptions.size.height() : 520);
  auto* scale = new QDoubleSpinBox;
  scale->setRange(0.5, 8);
  scale->setSingleStep(0.5);
  scale->setValue(m_exportOptions.scale);
  scale->setToolTip(QStringLiteral("PNG only: pixels = size x scale"));
  auto* font = new QFontComboBox;
  if (!m_exportOptions.fontFamily.isEmpty()) font->setCurrentFont(QFont(m_exportOptions.fontFamily));
  auto* size = new QDoubleSpinBox;
  size->setRange(5, 36);
  size->setValue(m_exportOptions.fontPointSize > 0 ? m_exportOptions.fontPointSize : 10);
  f->addRow(QStringLiteral("Width (pt)"), w);
  f->addRow(QStringLiteral("Height (pt)"), h);
  f->addRow(QStringLiteral("PNG scale"), scale);
  f->addRow(QStringLiteral("Font"), font);
  f->addRow(QStringLiteral("Font size (pt)"), size);
  auto* bb = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(bb, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(bb, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  f->addRow(bb);
  if (dlg.exec() != QDialog::Accepted) return;
  m_exportOptions.size = QSize(w->value(), h->value());
  m_exportOptions.scale = scale->value();
  m_exportOptions.fontFamily = font->currentFont().family();
  m_exportOptions.fontPointSize = size->value();
}

// ======================================================================= misc
void MainWindow::chooseWorkspace() {
  const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Open workspace (a folder of runs)"), m_workspace);
  if (!dir.isEmpty()) openWorkspace(dir);
}

void MainWindow::chooseDatasetFile() {
  const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Train on a file"), QString(),
                                                    QStringLiteral("Text and data files (*.txt *.jsonl *.csv *.tsv);;All files (*)"));
  if (!path.isEmpty()) setDatasetFile(path);
}

void MainWindow::showAbout() {
  QMessageBox::about(this, QStringLiteral("About Cellscope"),
                     QStringLiteral("<h3>Cellscope %1</h3><p>A workbench for training and analysing recurrent cells.</p>"
                                    "<p>Qt %2 &middot; %3</p><p>Workspace: %4</p>")
                         .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion()), coreVersion(),
                              m_workspace.toHtmlEscaped()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (m_busy && !m_closeAfterStop) {
    QMessageBox box(QMessageBox::Question, QStringLiteral("A run is training"),
                    QStringLiteral("Stop the run and quit? The run keeps its last checkpoint and can be resumed "
                                   "with cellscope-cli train --resume."),
                    QMessageBox::NoButton, this);
    QPushButton* stop = box.addButton(QStringLiteral("Stop and quit"), QMessageBox::DestructiveRole);
    box.addButton(QStringLiteral("Keep training"), QMessageBox::RejectRole);
    box.exec();
    if (box.clickedButton() != stop) {
      event->ignore();
      return;
    }
    m_closeAfterStop = true;
    m_queue.clear();
    stopTraining();
    event->ignore();  // closes when the worker reports the run stopped
    return;
  }
  if (m_busy) {  // second close request while stopping
    event->ignore();
    return;
  }
  saveSettings();
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  if (urls.isEmpty() || !urls.first().isLocalFile()) return;
  const QString path = urls.first().toLocalFile();
  // A run directory's config.json (or the directory) loads its config; anything else is a dataset.
  const QString cfgPath = QFileInfo(path).isDir() ? QDir(path).filePath(QStringLiteral("config.json")) : path;
  if (QFileInfo(cfgPath).fileName() == QLatin1String("config.json") && QFileInfo::exists(cfgPath)) {
    QFile f(cfgPath);
    if (f.open(QIODevice::ReadOnly)) applyConfig(QJsonDocument::fromJson(f.readAll()).object());
  } else {
    setDatasetFile(path);
  }
  event->acceptProposedAction();
}

}  // namespace gui
