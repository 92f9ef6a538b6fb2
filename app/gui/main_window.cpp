#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QShowEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QScrollArea>
#include <QGuiApplication>
#include <QScreen>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QUrl>

#include <algorithm>

#include "analysis_panel.h"
#include "compare_panel.h"
#include "configure_panel.h"
#include "core_bridge.h"
#include "curve_plot.h"
#include "decode_panel.h"
#include "figure_export.h"
#include "generate_panel.h"
#include "report_dialog.h"
#include "run_actions.h"
#include "run_table.h"
#include "sweep_panel.h"
#include "training_controller.h"
#include "training_panel.h"
#include "training_status.h"

namespace gui {

namespace {
// The panel of tab index (each tab page is a QScrollArea holding its panel).
QWidget* tabPanel(QTabWidget* tabs, int index) {
  auto* page = qobject_cast<QScrollArea*>(tabs->widget(index));
  return page ? page->widget() : tabs->widget(index);
}
}  // namespace

// ======================================================================= setup
MainWindow::MainWindow(const WindowOptions& options, QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(QStringLiteral("Cellscope"));
  setAcceptDrops(true);
  m_settings = options.settingsFile.isEmpty() ? new QSettings(this)
                                              : new QSettings(options.settingsFile, QSettings::IniFormat, this);
  m_controller = new TrainingController(this);
  m_exporter = new FigureExporter(this);
  connect(m_exporter, &FigureExporter::message, statusBar(), &QStatusBar::showMessage);
  buildPanels();
  buildMenus();
  connectTraining();
  loadSettings(options);
  updateActions();
}

MainWindow::~MainWindow() = default;  // the controller stops a run still going

void MainWindow::buildPanels() {
  m_configure = new ConfigurePanel;
  m_training = new TrainingPanel(m_exporter);
  m_compare = new ComparePanel(m_exporter);
  m_analysis = new AnalysisPanel;
  m_sweeps = new SweepPanel(m_configure, m_controller);
  m_generate = new GeneratePanel(m_compare->runModel());
  m_decode = new DecodePanel(m_compare->runModel());
  // The tabs, in order; each gets View > <menu text> with its shortcut.
  m_panels = {
      {QStringLiteral("Training"), QStringLiteral("&Training"), QKeySequence(QStringLiteral("Ctrl+1")), m_training,
       true},
      {QStringLiteral("Compare"), QStringLiteral("&Compare"), QKeySequence(QStringLiteral("Ctrl+2")), m_compare, true},
      // the Analyses tab has its own controls: the training configuration steps aside there
      {QStringLiteral("Analyses"), QStringLiteral("&Analyses"), QKeySequence(QStringLiteral("Ctrl+3")), m_analysis,
       false},
      {QStringLiteral("Sweeps"), QStringLiteral("&Sweeps"), QKeySequence(QStringLiteral("Ctrl+4")), m_sweeps, true},
      {QStringLiteral("Generate"), QStringLiteral("&Generate text"), QKeySequence(QStringLiteral("Ctrl+5")), m_generate,
       true},
      // seq2seq outputs per checkpoint; its own controls, like the Analyses tab
      {QStringLiteral("Decode"), QStringLiteral("&Decode (seq2seq)"), QKeySequence(QStringLiteral("Ctrl+6")), m_decode,
       false},
  };
  m_tabs = new QTabWidget;
  // Each tab in a scroll area: in a small window (1024x700) a panel keeps its
  // minimum size and scrolls instead of forcing the window wider or being clipped.
  for (const PanelEntry& e : m_panels) {
    auto* page = new QScrollArea;
    page->setObjectName(QStringLiteral("tabScroll_") + e.title);
    page->setWidget(e.widget);
    page->setWidgetResizable(true);
    page->setFrameShape(QFrame::NoFrame);
    m_tabs->addTab(page, e.title);
  }
  connect(m_tabs, &QTabWidget::currentChanged, this, [this](int i) {
    QWidget* panel = tabPanel(m_tabs, i);
    for (const PanelEntry& e : m_panels)
      if (e.widget == panel) m_configure->setVisible(e.showsConfiguration);
    // The keyboard focus goes with the tab (Ctrl+1..6, a click on the tab bar): the panels'
    // shortcuts (Ctrl+Return, Alt+Left/Right, Ctrl+Shift+E) act while the focus is inside the
    // panel. A field of the configuration being edited beside the tab keeps it.
    QWidget* f = QApplication::focusWidget();
    if (panel && (!f || f == m_tabs->tabBar() || m_tabs->isAncestorOf(f) || !f->isVisible()) &&
        !(f && panel->isAncestorOf(f)))
      panel->setFocus(Qt::TabFocusReason);
  });

  m_mainSplitter = new QSplitter(Qt::Horizontal);
  m_mainSplitter->addWidget(m_configure);
  m_mainSplitter->addWidget(m_tabs);
  m_mainSplitter->setStretchFactor(0, 0);
  m_mainSplitter->setStretchFactor(1, 1);
  m_mainSplitter->setSizes({380, 1000});
  setCentralWidget(m_mainSplitter);

  m_status = new TrainingStatus(m_controller, statusBar());

  connect(m_configure, &ConfigurePanel::startRequested, this, &MainWindow::startTraining);
  connect(m_configure, &ConfigurePanel::enqueueRequested, this, &MainWindow::enqueueCurrent);
  connect(m_configure, &ConfigurePanel::pauseToggleRequested, m_controller, &TrainingController::togglePause);
  connect(m_configure, &ConfigurePanel::stopRequested, m_controller, &TrainingController::stop);
  connect(m_configure, &ConfigurePanel::workspaceChangeRequested, this, &MainWindow::chooseWorkspace);
  connect(m_configure, &ConfigurePanel::validated, this, &MainWindow::updateActions);
  // A failed Start's message goes once the configuration is valid again (the problem was fixed).
  connect(m_configure, &ConfigurePanel::validated, this, [this] {
    if (!m_configure->isValid() || m_controller->isTraining()) return;
    m_training->clearFailure();
    m_status->clearFailure();
  });
  connect(m_configure, &ConfigurePanel::message, statusBar(), &QStatusBar::showMessage);
  connect(m_training, &TrainingPanel::xAxisChanged, m_compare, &ComparePanel::setXAxis);
  connect(m_compare, &ComparePanel::showRunRequested, this, &MainWindow::showRunInTrainingView);
  connect(m_sweeps, &SweepPanel::runsChanged, this, &MainWindow::refreshWorkspace);

  // The run table is live (RunTableModel::watchWorkspace): a ticked run's overlay follows it.
  RunTableModel* runs = m_compare->runModel();
  auto redrawIfTicked = [this, runs](const QString& dir) {
    if (runs->checkedDirs().contains(dir)) m_compare->redraw();
  };
  connect(runs, &RunTableModel::metricsUpdated, this, redrawIfTicked);
  // Its context menu and shortcuts (the table view is the one showing the panel's proxy).
  QTableView* runView = nullptr;
  for (QTableView* v : m_compare->findChildren<QTableView*>())
    if (v->model() == m_compare->runProxy()) runView = v;
  if (runView) {
    m_runTableActions = new RunActions(runs, m_compare->runProxy(), runView, m_controller, m_configure, this);
    connect(m_runTableActions, &RunActions::message, statusBar(), &QStatusBar::showMessage);
    connect(m_runTableActions, &RunActions::configurationLoaded, this, [this] { showPanel(m_training); });
  }
  connect(m_controller, &TrainingController::notice, this,
          [this](const QString& t) { statusBar()->showMessage(t, 8000); });
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  file->addAction(QStringLiteral("Open &workspace..."), QKeySequence(QStringLiteral("Ctrl+Shift+O")), this,
                  &MainWindow::chooseWorkspace);
  file->addAction(QStringLiteral("Open &dataset file..."), QKeySequence::Open, m_configure,
                  &ConfigurePanel::chooseDatasetFile);
  if (m_runTableActions) {
    QAction* imp =
        file->addAction(QStringLiteral("&Import from PyTorch..."), QKeySequence(QStringLiteral("Ctrl+Shift+I")), this,
                        [this] { m_runTableActions->importInteractive(m_workspace); });
    imp->setObjectName(QStringLiteral("importTorchAction"));
    imp->setStatusTip(
        QStringLiteral("A new run of a model changed in PyTorch: an export folder written back with "
                       "cellscope_torch.save_export"));
  }
  file->addSeparator();
  file->addAction(QStringLiteral("&Export all figures of this run..."), QKeySequence(QStringLiteral("Ctrl+E")), this,
                  &MainWindow::exportAllInteractive);
  file->addAction(QStringLiteral("Export &comparison figure..."), this,
                  [this] { m_exporter->exportPlotInteractive(m_compare->comparePlot()); });
  file->addAction(QStringLiteral("Export run &table as CSV..."), m_compare, &ComparePanel::exportTableInteractive);
  file->addAction(QStringLiteral("Export &options..."), m_exporter, &FigureExporter::optionsDialog);
  file->addSeparator();
  file->addAction(QStringLiteral("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(QStringLiteral("&Run"));
  m_runActions = {run->addAction(QStringLiteral("&Start"), QKeySequence(QStringLiteral("Ctrl+R")), this,
                                 &MainWindow::startTraining),
                  run->addAction(QStringLiteral("Add to &queue"), QKeySequence(QStringLiteral("Ctrl+Shift+R")), this,
                                 &MainWindow::enqueueCurrent),
                  run->addAction(QStringLiteral("&Pause / Resume"), QKeySequence(QStringLiteral("Ctrl+P")),
                                 m_controller, &TrainingController::togglePause),
                  run->addAction(QStringLiteral("S&top"), QKeySequence(QStringLiteral("Ctrl+.")), m_controller,
                                 &TrainingController::stop)};
  run->addAction(QStringLiteral("&Clear queue"), m_controller, &TrainingController::clearQueue);
  if (m_runTableActions) {
    run->addSeparator();
    run->setToolTipsVisible(true);  // a greyed-out export says why (RunActions::setReason)
    run->addMenu(m_runTableActions->contextMenu());
    // The exports of the selected run, also straight under Run (as in the run table's context menu).
    run->addAction(m_runTableActions->action(RunActions::ExportTorch));
    run->addAction(m_runTableActions->action(RunActions::ExportTensorBoard));
  }

  // The reproducibility bundle of sweeps and analyses (`cellscope-cli report`).
  QMenu* sweeps = menuBar()->addMenu(QStringLiteral("S&weeps"));
  sweeps->setObjectName(QStringLiteral("sweepsMenu"));
  QAction* report = sweeps->addAction(QStringLiteral("&Report..."), this, [this] { openReportDialog(); });
  report->setObjectName(QStringLiteral("reportAction"));
  report->setStatusTip(QStringLiteral("Re-render sweeps' tables and runs' figures into one folder with a manifest"));

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  for (const PanelEntry& e : m_panels)
    view->addAction(e.menuText, e.shortcut, this, [this, w = e.widget] { showPanel(w); });
  view->addAction(QStringLiteral("&Reset all views"), QKeySequence(QStringLiteral("Ctrl+0")), this, [this] {
    m_training->resetViews();
    m_compare->comparePlot()->resetView();
  });
  view->addAction(QStringLiteral("Re&load workspace"), QKeySequence::Refresh, this, &MainWindow::refreshWorkspace);

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  help->addAction(QStringLiteral("&About Cellscope"), this, &MainWindow::showAbout);
}

void MainWindow::connectTraining() {
  TrainingController* c = m_controller;
  connect(c, &TrainingController::preparing, this, [this] {
    m_training->beginRun();
    // A run the user started is shown; a queued one starting leaves the user where they are.
    if (m_controller->startedFromQueue())
      statusBar()->showMessage(QStringLiteral("The next queued run started (Training tab, Ctrl+1)"), 8000);
    else showPanel(m_training);
  });
  connect(c, &TrainingController::runInfo, this,
          [this](const QString& dir, const QString& metric, const QString& unit, qint64 n) {
            m_training->setRunInfo(dir, metric, unit, n);
            m_training->prependHistory(m_controller->resumedHistory());  // a resumed run's curves go on from its past
            m_compare->refreshRun(dir);
          });
  connect(c, &TrainingController::drained, m_training, &TrainingPanel::append);
  connect(c, &TrainingController::finishedWithReason, this, &MainWindow::onFinished);
  connect(c, &TrainingController::failedInRun, this, &MainWindow::onFailed);
  connect(c, &TrainingController::stateChanged, this, &MainWindow::updateActions);
}

QWidget* MainWindow::currentPanel() const { return tabPanel(m_tabs, m_tabs->currentIndex()); }

void MainWindow::showPanel(QWidget* panel) {
  for (int i = 0; i < m_tabs->count(); ++i)
    if (tabPanel(m_tabs, i) == panel) m_tabs->setCurrentIndex(i);
}

bool MainWindow::showPanel(const QString& title) {
  for (const PanelEntry& e : m_panels)
    if (e.title.compare(title, Qt::CaseInsensitive) == 0) {
      showPanel(e.widget);
      return true;
    }
  return false;
}

// ======================================================================= settings
void MainWindow::loadSettings(const WindowOptions& options) {
  QSettings& s = *m_settings;
  if (!s.contains(QStringLiteral("window/geometry")) ||
      !restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray()))
    resize(1360, 860);
  fitToScreen();
  m_initialSize = size();
  if (s.contains(QStringLiteral("window/splitter")))
    m_mainSplitter->restoreState(s.value(QStringLiteral("window/splitter")).toByteArray());
  m_training->setXAxis(static_cast<XAxis>(std::clamp(s.value(QStringLiteral("view/x_axis"), 0).toInt(), 0, 3)));
  m_exporter->load(s);
  if (options.restoreLastConfig && s.contains(QStringLiteral("config/last"))) {
    const QJsonObject last = QJsonDocument::fromJson(s.value(QStringLiteral("config/last")).toByteArray()).object();
    if (!last.isEmpty()) m_configure->applyConfig(last);
  }
  if (!options.dataset.isEmpty()) m_configure->selectDataset(options.dataset);

  // Workspace: --workspace, else $CELLSCOPE_WORKSPACE, else the remembered one, else the CLI's default.
  QString ws = options.workspace;
  if (ws.isEmpty() && !qEnvironmentVariableIsEmpty("CELLSCOPE_WORKSPACE")) ws = defaultWorkspace();
  if (ws.isEmpty()) ws = s.value(QStringLiteral("workspace")).toString();
  if (ws.isEmpty()) ws = defaultWorkspace();
  openWorkspace(ws);
}

void MainWindow::fitToScreen() {
  QScreen* sc = screen() ? screen() : QGuiApplication::primaryScreen();
  if (!sc || isMaximized() || isFullScreen()) return;
  const QRect avail = sc->availableGeometry();
  // The frame (title bar, borders) is known once shown; until then the window alone is fitted.
  const QRect frame = frameGeometry(), inner = geometry();
  const bool framed = isVisible() && frame != inner;
  const QSize extra = framed ? frame.size() - inner.size() : QSize(0, 0);
  const QSize fit(std::max(1, std::min(width(), avail.width() - extra.width())),
                  std::max(1, std::min(height(), avail.height() - extra.height())));
  if (fit != size()) resize(fit);
  // Wholly on the screen: moved in when a remembered position (another monitor) is off it.
  QRect r = frameGeometry();
  if (!avail.contains(r)) {
    r.moveLeft(std::clamp(r.left(), avail.left(), std::max(avail.left(), avail.right() - r.width() + 1)));
    r.moveTop(std::clamp(r.top(), avail.top(), std::max(avail.top(), avail.bottom() - r.height() + 1)));
    move(r.topLeft());
  }
}

void MainWindow::saveSettings() {
  QSettings& s = *m_settings;
  s.setValue(QStringLiteral("window/geometry"), saveGeometry());
  s.setValue(QStringLiteral("window/splitter"), m_mainSplitter->saveState());
  s.setValue(QStringLiteral("workspace"), m_workspace);
  s.setValue(QStringLiteral("view/x_axis"), int(m_training->xAxis()));
  s.setValue(QStringLiteral("config/last"), QJsonDocument(m_configure->currentConfig()).toJson(QJsonDocument::Compact));
  m_exporter->save(s);
  s.sync();
}

// ======================================================================= training
void MainWindow::updateActions() {
  const bool valid = m_configure->isValid(), busy = m_controller->isTraining(), paused = m_controller->isPaused();
  m_configure->setTrainingState(busy, paused);
  m_runActions[0]->setEnabled(valid && !busy);
  m_runActions[1]->setEnabled(valid);
  m_runActions[2]->setEnabled(busy && m_controller->canPause());
  m_runActions[3]->setEnabled(busy);
}

bool MainWindow::startTraining() {
  m_configure->revalidateNow();
  const QStringList errors = m_configure->validationErrors();
  if (!errors.isEmpty()) {
    statusBar()->showMessage(
        QStringLiteral("Not started: the configuration has %1 problem(s), shown next to the fields").arg(errors.size()),
        6000);
    return false;
  }
  if (m_controller->isTraining()) {
    enqueueCurrent();
    return false;
  }
  // one training at a time: a sweep (Sweeps tab) runs its points one after another
  if (m_sweeps->isRunning()) {
    statusBar()->showMessage(
        QStringLiteral("Not started: a sweep is running (Sweeps tab, Ctrl+4); stop it or let it finish first"), 8000);
    return false;
  }
  return m_controller->start(m_configure->currentConfig(), m_configure->processCount());
}

void MainWindow::enqueueCurrent() {
  m_configure->revalidateNow();
  if (!m_configure->isValid()) return;
  const bool queued = m_controller->isTraining();
  m_controller->enqueue(m_configure->currentConfig(), m_configure->processCount());
  if (queued)
    statusBar()->showMessage(QStringLiteral("Added to the queue (%1 waiting)").arg(m_controller->queueSize()), 4000);
}

QString MainWindow::progressText() const { return m_status->text(); }

void MainWindow::onFinished(const QString& runDir, const QString& status, const QString& reason) {
  if (status == QLatin1String("failed")) {
    QMessageBox* box =
        new QMessageBox(QMessageBox::Warning, QStringLiteral("Training failed"), reason, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setModal(false);
    box->show();
  }
  m_compare->refreshRun(runDir);
  m_compare->redraw();
  m_configure->refreshDatasetList();  // a run may have built (or fetched) its dataset
  if (m_closeAfterStop) close();
}

void MainWindow::onFailed(const QString& message, const QString& runDir) {
  m_training->showFailure(message);
  if (!runDir.isEmpty()) m_compare->refreshRun(runDir);
  QMessageBox* box =
      new QMessageBox(QMessageBox::Warning, QStringLiteral("Training failed"), message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setModal(false);
  if (isVisible()) box->show();
  if (m_closeAfterStop) close();
}

void MainWindow::showRunInTrainingView(const QString& dir) {
  if (m_controller->isTraining()) {
    statusBar()->showMessage(
        QStringLiteral("A run is training: its curves stay in the Training tab; tick runs to compare them"), 5000);
    showPanel(m_compare);
    return;
  }
  if (m_training->showRun(dir)) showPanel(m_training);
}

// ======================================================================= workspace
void MainWindow::openWorkspace(const QString& dir) {
  const QString abs = QFileInfo(dir).absoluteFilePath();
  QDir().mkpath(abs);
  m_workspace = abs;
  m_configure->setWorkspaceLabel(abs);
  m_controller->setWorkspace(abs);
  m_exporter->setWorkspace(abs);
  m_sweeps->setWorkspace(abs);
  m_compare->setWorkspace(abs);
  m_compare->runModel()->watchWorkspace(abs);  // rows follow their runs, whoever trains them
  m_settings->setValue(QStringLiteral("workspace"), abs);
  m_analysis->setWorkspace(abs);
}

void MainWindow::refreshWorkspace() { openWorkspace(m_workspace); }

void MainWindow::chooseWorkspace() {
  const QString dir =
      QFileDialog::getExistingDirectory(this, QStringLiteral("Open workspace (a folder of runs)"), m_workspace);
  if (!dir.isEmpty()) openWorkspace(dir);
}

// ======================================================================= misc
void MainWindow::exportAllInteractive() {
  const QString folder = QFileDialog::getExistingDirectory(this, QStringLiteral("Export all figures of this run to"));
  if (folder.isEmpty()) return;
  QStringList written;
  QString err;
  if (!m_training->exportAllFigures(folder, &written, &err))
    QMessageBox::warning(this, QStringLiteral("Export failed"), err);
  else statusBar()->showMessage(QStringLiteral("Wrote %1 files to %2").arg(written.size()).arg(folder), 6000);
}

ReportDialog* MainWindow::openReportDialog() {
  // A dialog over another workspace (File > Open workspace since) is replaced, unless it renders.
  if (m_reportDialog && m_reportDialog->workspace() != m_workspace && !m_reportDialog->isRendering()) {
    delete m_reportDialog;
    m_reportDialog = nullptr;
  }
  if (!m_reportDialog) m_reportDialog = new ReportDialog(m_workspace, this);
  m_reportDialog->show();
  m_reportDialog->raise();
  m_reportDialog->activateWindow();
  return m_reportDialog;
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, QStringLiteral("About Cellscope"),
      QStringLiteral("<h3>Cellscope %1</h3><p>A workbench for training and analysing recurrent cells.</p>"
                     "<p>Qt %2 &middot; %3</p><p>Workspace: %4</p>")
          .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion()), coreVersion(),
               m_workspace.toHtmlEscaped()));
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  // The first time, with the real frame: the size chosen at construction still fits.
  if (!m_shownOnce && size() == m_initialSize) fitToScreen();
  m_shownOnce = true;
  // A status message posted before the window was shown (a --preset's "Preset X loaded")
  // did not hide the status bar's own label, which was not visible yet: both were drawn on
  // top of each other. Posting it again now hides the label until the message ends.
  const QString m = statusBar()->currentMessage();
  if (!m.isEmpty()) {
    statusBar()->clearMessage();  // showMessage() ignores the message it already shows
    statusBar()->showMessage(m, 4000);
  }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (m_controller->isTraining() && !m_closeAfterStop) {
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
    if (!m_controller->isTraining()) {  // the run ended while the question was open: nothing to stop
      saveSettings();
      event->accept();
      return;
    }
    m_closeAfterStop = true;
    m_controller->clearQueue();
    m_controller->stop();
    event->ignore();  // closes when the controller reports the run stopped
    return;
  }
  if (m_controller->isTraining()) {  // second close request while stopping
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
    if (f.open(QIODevice::ReadOnly)) m_configure->applyConfig(QJsonDocument::fromJson(f.readAll()).object());
  } else {
    m_configure->setDatasetFile(path);
  }
  event->acceptProposedAction();
}

}  // namespace gui
