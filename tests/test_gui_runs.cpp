// The run table as the place where runs are managed (app/gui/run_table, run_watcher,
// run_actions, process_run), offscreen:
// - every row follows its run while it changes, whoever trains it: a run started from
//   the window (status, parameters, step without any reload), resumed from the table,
//   and resumed from the CLI in the same workspace (a "stopped" row becomes "running",
//   then "finished");
// - the context menu: its actions and shortcuts, Rename (label.txt), Load configuration,
//   Delete (to the trash, refused while the run trains), the Fork dialog's command line;
// - a forked run's curves start with its parent's up to the fork step;
// - the configure panel's process count: N > 1 starts `cellscope-cli train --nproc N`,
//   the window follows the run through its directory (curves, progress, the run table's
//   Processes column) and Stop ends every process with a checkpoint.
#include <QAction>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QPlainTextEdit>
#include <QProcess>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QComboBox>
#include <QTableView>
#include <QThread>
#include <QTimer>
#include <QHelpEvent>
#include <QToolTip>
#include <QtTest/QtTest>

#include "compare_panel.h"
#include "configure_panel.h"
#include "core_bridge.h"
#include "corpus_fixture.h"
#include "curve_plot.h"
#include "harness.h"
#include "main_window.h"
#include "process_run.h"
#include "run_actions.h"
#include "run_table.h"
#include "training_controller.h"
#include "training_panel.h"

using gui::MainWindow;
using gui::RunTableModel;

namespace {
// The environment and the current directory of a root shell with HOME redirected (no ~/.local/share:
// no desktop trash, and Qt 6.4's moveToTrash uses files/ and info/ of the current directory), in `cwd`;
// put back when it goes.
struct RedirectedHome {
  QByteArray oldHome = qgetenv("HOME"), oldXdg = qgetenv("XDG_DATA_HOME");
  QString oldCwd = QDir::currentPath();
  bool entered = false;
  RedirectedHome(const QString& home, const QString& cwd) {
    QDir().mkpath(home);
    qputenv("HOME", home.toUtf8());
    qunsetenv("XDG_DATA_HOME");
    entered = QDir::setCurrent(cwd);
  }
  ~RedirectedHome() {
    qputenv("HOME", oldHome);
    qputenv("XDG_DATA_HOME", oldXdg);
    QDir::setCurrent(oldCwd);
  }
  RedirectedHome(const RedirectedHome&) = delete;
  RedirectedHome& operator=(const RedirectedHome&) = delete;
};
}  // namespace

class GuiRunsTest : public QObject {
  Q_OBJECT

  QString m_root, m_corpus;

  gui::WindowOptions opts(const QString& ws) {
    gui::WindowOptions o;
    o.workspace = ws;
    o.settingsFile = m_root + "/settings.ini";
    o.restoreLastConfig = false;
    return o;
  }
  // A tiny char LM (hidden 16, embed 8, one thread): fast on a loaded machine.
  QJsonObject tinyConfig(int steps, int logEvery = 1, int evalEvery = 0) {
    return QJsonObject{{"task", QJsonObject{{"name", "char_lm"}}},
                       {"dataset", QJsonObject{{"path", m_corpus}}},
                       {"model", QJsonObject{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                       {"training", QJsonObject{{"steps", steps},
                                                {"batch", 8},
                                                {"bptt", 16},
                                                {"log_every", logEvery},
                                                {"eval_every", evalEvery},
                                                {"eval_batch", 4},
                                                {"lr", 0.003},
                                                {"seed", 1},
                                                {"eval_test", false},
                                                {"threads", 1}}}};
  }
  static QJsonObject readJson(const QString& path) { return cstest::readJsonObject(path); }
  static void writeFile(const QString& path, const QByteArray& data) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(data);
  }
  static const gui::RunInfo* row(MainWindow& w, const QString& dir) {
    RunTableModel* m = w.comparePanel()->runModel();
    return m->run(m->rowOf(dir));
  }
  static QVariant cell(MainWindow& w, const QString& dir, int column, int role = Qt::DisplayRole) {
    RunTableModel* m = w.comparePanel()->runModel();
    return m->data(m->index(m->rowOf(dir), column), role);
  }
  static QTableView* runView(MainWindow& w) {
    for (QTableView* v : w.comparePanel()->findChildren<QTableView*>())
      if (v->model() == w.comparePanel()->runProxy()) return v;
    return nullptr;
  }
  static void selectRun(MainWindow& w, const QString& dir) {
    QSortFilterProxyModel* p = w.comparePanel()->runProxy();
    const QModelIndex src = w.comparePanel()->runModel()->index(w.comparePanel()->runModel()->rowOf(dir), 0);
    runView(w)->setCurrentIndex(p->mapFromSource(src));
  }

  // contextMenuRenameLoadDelete's checks of the finished run dir: the context menu and the Run
  // menu's actions, then the exports and an import through the CLI.
  static void checkRunActions(MainWindow& w, const QString& dir) {
    gui::RunActions* acts = w.runActions();
    // The context menu has every action, each with its shortcut, active while the table has the focus.
    const QStringList texts = {"&Resume",
                               "&Fork...",
                               "&Load configuration",
                               "Rename / &label...",
                               "&Open folder",
                               "Export for &PyTorch...",
                               "Export for &TensorBoard...",
                               "&Delete..."};
    const QStringList keys = {"Ctrl+Alt+R", "Ctrl+Alt+F", "Ctrl+Alt+L", "F2",
                              "Ctrl+Alt+O", "Ctrl+Alt+E", "Ctrl+Alt+T", "Del"};
    QCOMPARE(acts->actions().size(), texts.size());
    for (int i = 0; i < texts.size(); ++i) {
      QAction* a = acts->actions()[i];
      QCOMPARE(a->text(), texts[i]);
      QCOMPARE(a->shortcut(), QKeySequence(keys[i]));
      QCOMPARE(a->shortcutContext(), Qt::WidgetWithChildrenShortcut);
      QVERIFY(runView(w)->actions().contains(a));
      QVERIFY(acts->contextMenu()->actions().contains(a));
    }
    QCOMPARE(runView(w)->contextMenuPolicy(), Qt::CustomContextMenu);
    selectRun(w, dir);
    QCOMPARE(acts->selectedRun(), dir);
    acts->updateEnabled();
    QVERIFY(!acts->action(gui::RunActions::Resume)->isEnabled());  // finished: nothing to continue
    QVERIFY(acts->action(gui::RunActions::Resume)->toolTip().contains("finished: Fork it"));
    QVERIFY(acts->action(gui::RunActions::Fork)->isEnabled());
    QVERIFY(acts->action(gui::RunActions::Delete)->isEnabled());
    QVERIFY(acts->action(gui::RunActions::ExportTorch)->isEnabled());
    QVERIFY(acts->action(gui::RunActions::ExportTensorBoard)->isEnabled());
    // Run > Export for PyTorch... and Run > Export for TensorBoard... are the same actions.
    QMenu* runMenu = nullptr;
    for (QAction* m : w.menuBar()->actions())
      if (m->text() == "&Run") runMenu = m->menu();
    QVERIFY(runMenu);
    QVERIFY(runMenu->actions().contains(acts->action(gui::RunActions::ExportTorch)));
    QVERIFY(runMenu->actions().contains(acts->action(gui::RunActions::ExportTensorBoard)));
  }
  void exportAndImport(MainWindow& w, const QString& ws, const QString& dir) const {
    gui::RunActions* acts = w.runActions();
    // Export for PyTorch, as the action does after its folder dialog: the CLI runs as a process and
    // writes <folder>/<run>-pytorch with the state_dict that cellscope_torch.load reads.
    QString exportErr;
    const QString folder = m_root + "/exports";
    QDir().mkpath(folder);
    const QString out = gui::RunActions::exportDirectory(folder, dir);
    QCOMPARE(out, folder + "/a-pytorch");
    QSignalSpy done(acts, &gui::RunActions::exportFinished);
    QVERIFY2(acts->exportRun(dir, gui::RunActions::PyTorch, out, &exportErr), qPrintable(exportErr));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
    QVERIFY2(done[0][2].toBool(), qPrintable(done[0][3].toString()));
    QVERIFY(QFileInfo::exists(out + "/model.pt"));
    QVERIFY(QFileInfo::exists(out + "/config.json"));
    QCOMPARE(gui::RunActions::exportDirectory(folder, dir), folder + "/a-pytorch-2");  // never over an export
    // Into an existing export: the export refuses, and the window says so.
    QVERIFY(acts->exportRun(dir, gui::RunActions::PyTorch, out, &exportErr));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 60000);
    QVERIFY(!done[1][2].toBool());
    QVERIFY2(!done[1][3].toString().isEmpty(), "a failed export names its reason");
    // TensorBoard: one subdirectory per run with an events file.
    QVERIFY2(acts->exportRun(dir, gui::RunActions::TensorBoard, folder + "/tb", &exportErr), qPrintable(exportErr));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, 60000);
    QVERIFY2(done[2][2].toBool(), qPrintable(done[2][3].toString()));
    bool events = false;
    QDirIterator it(folder + "/tb", QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext())
      if (QFileInfo(it.next()).fileName().startsWith("events.out.tfevents.")) events = true;
    QVERIFY(events);
    QCOMPARE(acts->exportsRunning(), 0);
    // File > Import from PyTorch... (Ctrl+Shift+I), as the action does after its folder dialog: the
    // export (cellscope_torch.save_export writes changed weights back into such a folder) becomes a
    // run of this workspace, which the table shows; a folder that is no export is refused by name.
    QAction* imp = w.findChild<QAction*>("importTorchAction");
    QVERIFY(imp);
    QCOMPARE(imp->text(), QString("&Import from PyTorch..."));
    QCOMPARE(imp->shortcut(), QKeySequence("Ctrl+Shift+I"));
    QSignalSpy imported(acts, &gui::RunActions::importFinished);
    QVERIFY2(acts->importRun(out, ws, &exportErr), qPrintable(exportErr));
    QTRY_COMPARE_WITH_TIMEOUT(imported.count(), 1, 60000);
    QVERIFY2(imported[0][2].toBool(), qPrintable(imported[0][3].toString()));
    const QString runDir = imported[0][1].toString();
    QVERIFY2(runDir.startsWith(QFileInfo(ws).absoluteFilePath() + "/"), qPrintable(runDir));
    QVERIFY(QFileInfo::exists(runDir + "/checkpoints/best.pt"));
    QTRY_VERIFY_WITH_TIMEOUT(row(w, runDir), 10000);
    QVERIFY2(w.statusBar()->currentMessage().contains("Imported"), qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(acts->importRun(folder, ws, &exportErr));
    QTRY_COMPARE_WITH_TIMEOUT(imported.count(), 2, 60000);
    QVERIFY(!imported[1][2].toBool());
    QVERIFY2(imported[1][3].toString().contains("no export.json"), qPrintable(imported[1][3].toString()));
    QCOMPARE(acts->exportsRunning(), 0);
  }

 private Q_SLOTS:
  void initTestCase() {
    m_root = cstest::temp_dir() + "/guiruns";
    QDir().mkpath(m_root);
    qunsetenv("CELLSCOPE_WORKSPACE");
    qputenv("CELLSCOPE_CLI", cstest::cli_path().toUtf8());
    // The desktop trash of this test: $XDG_DATA_HOME/Trash, on the workspace's file system.
    qputenv("XDG_DATA_HOME", (m_root + "/xdg").toUtf8());
    QDir().mkpath(m_root + "/xdg");
    QCoreApplication::setOrganizationName("CellscopeTests");
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_root + "/qsettings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_root + "/qsettings");
    m_corpus = cstest::write_text_fixture("gui_runs_corpus.txt", 20000);
  }

  // A run started, stopped and resumed from the window, then resumed from the CLI: the
  // row follows each change with no reload (before: "unknown", 0 parameters, step 0 until
  // F5, and a run resumed from the CLI stayed "stopped").
  void rowFollowsItsRun() {
    const QString ws = m_root + "/ws-live";
    MainWindow w(opts(ws));
    w.show();
    w.configurePanel()->applyConfig(tinyConfig(1000000));
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->currentRunDir().isEmpty(), 60000);
    const QString dir = w.controller()->currentRunDir();
    QTRY_VERIFY_WITH_TIMEOUT(row(w, dir) && row(w, dir)->status() == "running", 15000);
    QTRY_VERIFY_WITH_TIMEOUT(cell(w, dir, RunTableModel::Params, RunTableModel::SortRole).toDouble() > 0, 15000);
    QTRY_VERIFY_WITH_TIMEOUT(cell(w, dir, RunTableModel::Step, RunTableModel::SortRole).toDouble() >= 3, 60000);
    const double s1 = cell(w, dir, RunTableModel::Step, RunTableModel::SortRole).toDouble();
    QTRY_VERIFY_WITH_TIMEOUT(cell(w, dir, RunTableModel::Step, RunTableModel::SortRole).toDouble() > s1, 30000);
    QTRY_VERIFY_WITH_TIMEOUT(cell(w, dir, RunTableModel::Throughput, RunTableModel::SortRole).toDouble() > 0, 30000);
    QCOMPARE(cell(w, dir, RunTableModel::Processes).toString(), QString("1"));

    // Deleting a run that trains is refused.
    gui::RunActions* acts = w.runActions();
    QVERIFY(acts);
    QString err;
    QVERIFY(!acts->remove(dir, true, &err));
    QVERIFY2(err.contains("training in this window"), qPrintable(err));
    QVERIFY(QFileInfo::exists(dir + "/config.json"));
    // Greyed-out actions say why in their tooltips (before: greyed out with no reason).
    selectRun(w, dir);
    acts->updateEnabled();
    QVERIFY(!acts->action(gui::RunActions::Fork)->isEnabled());
    QVERIFY2(acts->action(gui::RunActions::Fork)->toolTip().contains("Not available: a run is training in this window"),
             qPrintable(acts->action(gui::RunActions::Fork)->toolTip()));
    QVERIFY(!acts->action(gui::RunActions::Delete)->isEnabled());
    QVERIFY(acts->action(gui::RunActions::Delete)->toolTip().contains("stop it first"));
    // ... and the menu shows it where the pointer rests on the greyed-out item (menus show no
    // tooltips unless told to).
    {
      QMenu* menu = acts->contextMenu();
      menu->popup(w.mapToGlobal(QPoint(40, 40)));
      QTRY_VERIFY(menu->isVisible());
      const QPoint at = menu->actionGeometry(acts->action(gui::RunActions::Fork)).center();
      QHelpEvent help(QEvent::ToolTip, at, menu->mapToGlobal(at));
      QApplication::sendEvent(menu, &help);
      QTRY_VERIFY(QToolTip::isVisible());
      QVERIFY2(QToolTip::text().contains("Not available: a run is training in this window"),
               qPrintable(QToolTip::text()));
      QVERIFY(acts->action(gui::RunActions::Fork)->statusTip().startsWith("Not available: "));
      menu->hide();
      QToolTip::hideText();
    }

    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(row(w, dir)->status(), QString("stopped"), 10000);
    const qint64 stoppedAt = qint64(readJson(dir + "/summary.json").value("step").toDouble());
    QTRY_COMPARE_WITH_TIMEOUT(qint64(cell(w, dir, RunTableModel::Step, RunTableModel::SortRole).toDouble()), stoppedAt,
                              10000);

    // Resume from the table: the same run continues (in this window) past where it stopped.
    selectRun(w, dir);
    acts->updateEnabled();
    QVERIFY(acts->action(gui::RunActions::Resume)->isEnabled());
    QVERIFY2(acts->resume(dir, &err), qPrintable(err));
    QVERIFY(w.controller()->isTraining());
    QTRY_VERIFY_WITH_TIMEOUT(row(w, dir)->status() == "running", 30000);
    QTRY_VERIFY_WITH_TIMEOUT(cell(w, dir, RunTableModel::Step, RunTableModel::SortRole).toDouble() > stoppedAt + 2,
                             60000);
    QCOMPARE(QFileInfo(w.controller()->currentRunDir()).absoluteFilePath(), QFileInfo(dir).absoluteFilePath());
    w.controller()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(row(w, dir)->status(), QString("stopped"), 10000);
    const qint64 stopped2 = qint64(readJson(dir + "/summary.json").value("step").toDouble());
    QVERIFY(stopped2 > stoppedAt);

    // Resumed from the CLI while the window is open: "stopped" -> "running" -> "finished".
    QProcess cli;
    cli.start(cstest::cli_path(),
              {"train", "--resume", dir, "--steps", QString::number(stopped2 + 150), "--threads", "1", "--quiet"});
    QVERIFY(cli.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(row(w, dir)->status() == "running" || row(w, dir)->status() == "finished", 60000);
    QTRY_COMPARE_WITH_TIMEOUT(row(w, dir)->status(), QString("finished"), 120000);
    // (waitForFinished is false when the process already ended inside the loops above)
    QVERIFY(cli.state() == QProcess::NotRunning || cli.waitForFinished(30000));
    QCOMPARE(cli.exitCode(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(qint64(cell(w, dir, RunTableModel::Step, RunTableModel::SortRole).toDouble()),
                              stopped2 + 150, 10000);
    QVERIFY(!w.controller()->isTraining());
  }

  // A run that appears from the CLI, and one that disappears, without a reload.
  void rowsAppearAndDisappear() {
    const QString ws = m_root + "/ws-appear";
    QDir().mkpath(ws);
    MainWindow w(opts(ws));
    QCOMPARE(w.comparePanel()->runModel()->rowCount(), 0);
    const QString cfgPath = m_root + "/appear.json";
    writeFile(cfgPath, QJsonDocument(tinyConfig(6, 2)).toJson());
    QCOMPARE(cstest::run_cli({"train", cfgPath, "--run-dir", ws + "/cli-run", "--quiet", "--threads", "1"}), 0);
    QTRY_COMPARE_WITH_TIMEOUT(w.comparePanel()->runModel()->rowCount(), 1, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(row(w, ws + "/cli-run")->status(), QString("finished"), 10000);
    QVERIFY(QDir(ws + "/cli-run").removeRecursively());
    QTRY_COMPARE_WITH_TIMEOUT(w.comparePanel()->runModel()->rowCount(), 0, 10000);
  }

  void contextMenuRenameLoadDelete() {
    const QString ws = m_root + "/ws-menu";
    QDir().mkpath(ws);
    const QString cfgPath = m_root + "/menu.json";
    QJsonObject cfg = tinyConfig(8, 2);
    QJsonObject model = cfg["model"].toObject();
    model["hidden"] = 24;
    cfg["model"] = model;
    writeFile(cfgPath, QJsonDocument(cfg).toJson());
    QCOMPARE(cstest::run_cli({"train", cfgPath, "--run-dir", ws + "/a", "--quiet", "--threads", "1"}), 0);
    MainWindow w(opts(ws));
    w.show();
    const QString dir = QFileInfo(ws + "/a").absoluteFilePath();
    QVERIFY(row(w, dir));
    gui::RunActions* acts = w.runActions();
    QVERIFY(acts);

    checkRunActions(w, dir);
    if (QTest::currentTestFailed()) return;

    exportAndImport(w, ws, dir);
    if (QTest::currentTestFailed()) return;

    // Rename: label.txt, shown in the row at once.
    QString err;
    QVERIFY2(acts->rename(dir, "  small gru  ", &err), qPrintable(err));
    QCOMPARE(gui::readRunLabel(dir), QString("small gru"));
    QVERIFY(cell(w, dir, RunTableModel::Name).toString().startsWith("small gru"));
    QVERIFY(!acts->rename(dir, "two\nlines", &err));  // the core's rule: one line
    QVERIFY(!err.isEmpty());
    // Load configuration: the form takes the run's options.
    QCOMPARE(w.configurePanel()->form()->value("model.hidden").toInt() == 24, false);
    QVERIFY2(acts->loadConfiguration(dir, &err), qPrintable(err));
    QCOMPARE(w.configurePanel()->form()->value("model.hidden").toInt(), 24);

    // A run another process is training (a fresh "running" summary) is not deleted.
    const QString busy = ws + "/busy";
    QDir().mkpath(busy);
    QFile::copy(dir + "/config.json", busy + "/config.json");
    writeFile(busy + "/summary.json", "{\"status\": \"running\", \"step\": 3}");
    QTRY_VERIFY_WITH_TIMEOUT(row(w, busy) != nullptr, 10000);
    QVERIFY(!acts->remove(busy, true, &err));
    QVERIFY2(err.contains("another process"), qPrintable(err));
    QVERIFY(QFileInfo::exists(busy + "/config.json"));

    // Delete: to the trash ($XDG_DATA_HOME/Trash), the row goes.
    QVERIFY2(acts->remove(dir, false, &err), qPrintable(err));
    QVERIFY(!QFileInfo::exists(dir));
    QVERIFY(QFileInfo::exists(m_root + "/xdg/Trash/files/a/config.json"));
    QCOMPARE(w.comparePanel()->runModel()->rowOf(dir), -1);
  }

  // Delete as root with a redirected HOME (no ~/.local/share): Qt 6.4's moveToTrash "trashes"
  // into files/ and info/ of the current directory, here the workspace's parent. The run goes
  // to the workspace's own trash instead, nothing is left beside the workspace, and the status
  // bar says where the run went and how to restore it. Driven as a user: a click on the row,
  // the Delete key, Yes in the confirmation.
  void deleteWithoutADesktopTrash() {
    const QString parent = m_root + "/trashless";
    const QString ws = parent + "/ws";
    const QString dir = QFileInfo(ws + "/doomed").absoluteFilePath();
    writeFile(dir + "/config.json", QJsonDocument(tinyConfig(8)).toJson());
    writeFile(dir + "/summary.json", "{\"status\": \"finished\", \"step\": 8}");
    writeFile(dir + "/metrics.jsonl", "{\"step\": 2, \"loss\": 3.0}\n");
    const QString home = m_root + "/redirected-home";
    const RedirectedHome shell(home, parent);
    QVERIFY(shell.entered);

    MainWindow w(opts(ws));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.showPanel(w.comparePanel());
    QTableView* view = runView(w);
    QVERIFY(view);
    QTRY_VERIFY(row(w, dir));
    QSortFilterProxyModel* proxy = w.comparePanel()->runProxy();
    const QModelIndex idx = proxy->mapFromSource(
        w.comparePanel()->runModel()->index(w.comparePanel()->runModel()->rowOf(dir), RunTableModel::Status));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(idx).center());
    QCOMPARE(w.runActions()->selectedRun(), dir);
    view->setFocus();
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    // The confirmation: Yes, as soon as it shows.
    QString question;
    QTimer yes;
    yes.setInterval(20);
    connect(&yes, &QTimer::timeout, [&] {
      auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
      if (!box) return;
      question = box->text();
      box->button(QMessageBox::Yes)->click();
      yes.stop();
    });
    yes.start();
    QTest::keyClick(view, Qt::Key_Delete);
    QTRY_VERIFY(!question.isEmpty());
    QVERIFY2(question.contains("doomed"), qPrintable(question));

    QTRY_VERIFY(!QFileInfo::exists(dir));
    // Into WORKSPACE/.trash/doomed-<time>, with its files.
    const QStringList trashed = QDir(ws + "/.trash").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(trashed.size(), 1);
    QVERIFY2(trashed[0].startsWith("doomed-"), qPrintable(trashed[0]));
    const QString where = QFileInfo(ws + "/.trash/" + trashed[0]).absoluteFilePath();
    QVERIFY(QFileInfo::exists(where + "/config.json"));
    QVERIFY(QFileInfo::exists(where + "/metrics.jsonl"));
    // Nothing beside the workspace (before: files/doomed and info/doomed.trashinfo), nor in it.
    QCOMPARE(QDir(parent).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{"ws"});
    QCOMPARE(QDir(ws).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{".trash"});
    QVERIFY(!QFileInfo::exists(home + "/.local/share/Trash/files/doomed"));
    // The row goes; the status bar says where the run is and how to get it back.
    QTRY_COMPARE(w.comparePanel()->runModel()->rowOf(dir), -1);
    QCOMPARE(proxy->rowCount(), 0);
    const QString msg = w.statusBar()->currentMessage();
    QVERIFY2(msg.contains(where) && msg.contains("restore", Qt::CaseInsensitive) && msg.contains("no desktop trash"),
             qPrintable(msg));
    QVERIFY2(w.statusBar()->isVisible(), "the status bar is hidden");
  }

  // The removal rule (#52) for Delete: files planted with the names it may touch survive. Qt's
  // stand-in trash in the current directory already holds a user's files/doomed and
  // info/doomed.trashinfo; the workspace has a .trash with a user's file, a doomed.tmp folder and
  // a folder that is no run. Only the run moves (into WORKSPACE/.trash/doomed-<time>).
  void deleteLeavesPlantedFilesAlone() {
    const QString parent = m_root + "/planted-delete";
    const QString ws = parent + "/ws";
    const QString dir = QFileInfo(ws + "/doomed").absoluteFilePath();
    writeFile(dir + "/config.json", QJsonDocument(tinyConfig(8)).toJson());
    writeFile(dir + "/summary.json", "{\"status\": \"finished\", \"step\": 8}");
    const QStringList planted = {parent + "/files/doomed/mine.txt", parent + "/info/doomed.trashinfo",
                                 ws + "/.trash/notes.txt",          ws + "/doomed.tmp/mine.txt",
                                 ws + "/other/notes.txt",           ws + "/.trash/doomed/mine.txt"};
    for (const QString& f : planted) writeFile(f, "mine");
    const RedirectedHome shell(m_root + "/planted-home", parent);
    QVERIFY(shell.entered);
    MainWindow w(opts(ws));
    QTRY_VERIFY(row(w, dir));
    QString err, movedTo;
    QVERIFY2(w.runActions()->remove(dir, false, &err, &movedTo), qPrintable(err));
    QVERIFY(!QFileInfo::exists(dir));
    QVERIFY2(QFileInfo(movedTo).fileName().startsWith("doomed-"), qPrintable(movedTo));
    QVERIFY(QFileInfo::exists(movedTo + "/config.json"));
    for (const QString& f : planted) {
      QFile file(f);
      QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(f));
      QCOMPARE(file.readAll(), QByteArray("mine"));
    }
    QCOMPARE(QDir(parent + "/files").entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden),
             QStringList{"doomed"});
    QCOMPARE(QDir(parent + "/info").entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden),
             QStringList{"doomed.trashinfo"});
  }

  // The Fork dialog: checkpoints of the run, the changed options, and the command line
  // H1's `train --fork DIR@STEP --set ... --run-dir NEW` takes.
  void forkDialogCommandLine() {
    const QString dir = m_root + "/fork-parent";
    writeFile(dir + "/config.json", QJsonDocument(tinyConfig(40)).toJson());
    writeFile(dir + "/summary.json", "{\"status\": \"stopped\", \"step\": 30, \"best_step\": 20, \"best_valid\": 3.1}");
    for (const char* f : {"last.pt", "step_10.pt", "step_20.pt", "step_30.pt"})
      writeFile(dir + "/checkpoints/" + f, "x");
    gui::ForkDialog dlg(dir);
    QComboBox* cp = dlg.checkpointCombo();
    QCOMPARE(cp->count(), 4);
    QVERIFY(cp->itemText(0).startsWith("last (step 30)"));
    QCOMPARE(dlg.step(), qint64(-1));
    int best = -1;
    for (int i = 0; i < cp->count(); ++i)
      if (cp->itemText(i).contains("best")) best = i;
    QVERIFY(best > 0);
    cp->setCurrentIndex(best);
    QCOMPARE(dlg.step(), qint64(20));
    QCOMPARE(dlg.lrEdit()->text(), QString("0.003"));
    QVERIFY(dlg.overrides().isEmpty());  // nothing changed yet
    dlg.lrEdit()->setText("0.01");
    dlg.changesEdit()->setPlainText("model.lambda=0.5\n\n  training.steps=80 ");
    const QString abs = QFileInfo(dir).absoluteFilePath();
    const QStringList args = dlg.arguments("/tmp/new-run");
    const QStringList want = {"train",
                              "--fork",
                              abs + "@20",
                              "--set",
                              "training.lr=0.01",
                              "--set",
                              "model.lambda=0.5",
                              "--set",
                              "training.steps=80",
                              "--run-dir",
                              "/tmp/new-run",
                              "--threads",
                              QString::number(gui::threadsPerProcess(1))};
    QCOMPARE(args, want);
    cp->setCurrentIndex(0);
    QCOMPARE(dlg.arguments("/x").at(2), abs);  // last.pt: no @STEP
    dlg.changesEdit()->setPlainText("lambda 0.5");
    QString err;
    QVERIFY(dlg.arguments("/x", &err).isEmpty());
    QVERIFY2(err.contains("line 1") && err.contains("SECTION.KEY=VALUE"), qPrintable(err));
  }

  // The Fork dialog's command, run for real against the CLI's --fork: the child continues from
  // the chosen checkpoint, records its parent, and its curve starts with the parent's.
  void forkDialogCommandRunsTheCli() {
    const QString parent = m_root + "/fork-real/parent", child = m_root + "/fork-real/child";
    QString out, err;
    QCOMPARE(
        cstest::run_cli({"train", "quick-gru", "--set", "model.hidden=16", "--set", "model.embed=8", "--set",
                         "dataset.max_chars=20000", "--set", "training.checkpoint_every=10", "--set",
                         "training.log_every=5", "--steps", "20", "--threads", "1", "--run-dir", parent, "--quiet"},
                        &out, &err),
        0);
    gui::ForkDialog dlg(parent);
    int at10 = -1;
    for (int i = 0; i < dlg.checkpointCombo()->count(); ++i)
      if (dlg.checkpointCombo()->itemText(i).startsWith("step_10.pt")) at10 = i;
    QVERIFY2(at10 >= 0, qPrintable(dlg.checkpointCombo()->itemText(0)));
    dlg.checkpointCombo()->setCurrentIndex(at10);
    dlg.lrEdit()->setText("0.0005");
    dlg.changesEdit()->setPlainText("training.steps=30");
    QProcess cli;
    cli.start(cstest::cli_path(), dlg.arguments(child));
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    const QJsonObject cfg = readJson(child + "/config.json");
    QCOMPARE(cfg.value("parent").toObject().value("step").toInt(), 10);
    QCOMPARE(cfg.value("training").toObject().value("lr").toDouble(), 0.0005);
    const auto joined = gui::readMetricsFile(child + "/metrics.jsonl");
    QVector<qint64> steps;
    for (const auto& p : joined)
      if (!p.eval) steps << p.step;
    QVERIFY(!steps.isEmpty());
    QCOMPARE(steps.first(), qint64(5));                                       // the parent's first logged step
    QCOMPARE(steps.last(), qint64(30));                                       // the child's last
    for (int i = 1; i < steps.size(); ++i) QVERIFY(steps[i] > steps[i - 1]);  // one curve, no overlap
    QVERIFY(steps.contains(10) && steps.contains(15));
  }

  // A forked run's curves start with its parent's, up to the fork step (config "parent").
  void forkCurvesJoinParent() {
    const QString ws = m_root + "/ws-join";
    const QString parent = ws + "/parent", child = ws + "/child";
    QByteArray pm, cm;
    for (int s = 1; s <= 10; ++s)
      pm += "{\"step\":" + QByteArray::number(s) + ",\"epoch\":0,\"elapsed\":" + QByteArray::number(s) +
            ",\"loss\":" + QByteArray::number(5.0 - 0.1 * s) + "}\n";
    pm += "{\"step\":5,\"eval\":true,\"split\":\"valid\",\"epoch\":0,\"elapsed\":5,\"bpc\":4.0}\n";
    for (int s = 7; s <= 12; ++s)
      cm += "{\"step\":" + QByteArray::number(s) + ",\"epoch\":0,\"elapsed\":" + QByteArray::number(s) +
            ",\"loss\":" + QByteArray::number(9.0) + "}\n";
    QJsonObject pcfg = tinyConfig(10);
    writeFile(parent + "/config.json", QJsonDocument(pcfg).toJson());
    writeFile(parent + "/summary.json", "{\"status\": \"stopped\", \"step\": 10, \"primary_metric\": \"bpc\"}");
    writeFile(parent + "/metrics.jsonl", pm);
    QJsonObject ccfg = tinyConfig(12);
    ccfg["parent"] =
        QJsonObject{{"run_dir", QFileInfo(parent).absoluteFilePath()}, {"step", 6}, {"checkpoint", "step_6.pt"}};
    writeFile(child + "/config.json", QJsonDocument(ccfg).toJson());
    writeFile(child + "/summary.json", "{\"status\": \"finished\", \"step\": 12, \"primary_metric\": \"bpc\"}");
    writeFile(child + "/metrics.jsonl", cm);

    const auto pts = gui::readMetricsFile(child + "/metrics.jsonl");
    QVector<qint64> steps;
    for (const auto& p : pts)
      if (!p.eval) steps << p.step;
    QCOMPARE(steps, (QVector<qint64>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
    QCOMPARE(pts[0].value("loss", 0), 4.9);                                     // the parent's first point
    QCOMPARE(pts.last().value("loss", 0), 9.0);                                 // the child's
    QCOMPARE(gui::readMetricsFile(child + "/metrics.jsonl", false).size(), 6);  // the file alone
    QCOMPARE(gui::readMetricsFile(parent + "/metrics.jsonl").size(), 11);       // a root run: unchanged

    // Drawn as one curve in the Training tab and in the comparison.
    MainWindow w(opts(ws));
    w.showRunInTrainingView(child);
    QCOMPARE(w.trainingPanel()->plot("metric")->pointCount("train"), 12);
    QCOMPARE(w.trainingPanel()->plot("metric")->pointCount("valid"), 1);  // the parent's eval at step 5
    w.comparePanel()->runModel()->setChecked(QFileInfo(child).absoluteFilePath(), true);
    QVERIFY(w.comparePanel()->setCompareMetric("train|loss"));
    const QStringList ids = w.comparePanel()->comparePlot()->seriesIds();
    QCOMPARE(ids.size(), 1);
    QCOMPARE(w.comparePanel()->comparePlot()->pointCount(ids[0]), 12);
  }

  // A run the window starts as a cellscope-cli process is followed like its own: a fork
  // the CLI refuses reports the CLI's message and leaves no directory; a plain CLI training
  // shows its curves, progress and final status.
  void followsACliProcess() {
    const QString ws = m_root + "/ws-proc";
    QDir().mkpath(ws);
    MainWindow w(opts(ws));
    w.show();
    QSignalSpy failed(w.controller(), &gui::TrainingController::failedInRun);
    QString err;
    QVERIFY(w.controller()->startCli({"train", "--no-such-flag", "x"}, ws + "/refused", 1, &err));
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 30000);
    QCOMPARE(failed.size(), 1);
    QVERIFY2(failed[0][0].toString().contains("no-such-flag"), qPrintable(failed[0][0].toString()));
    QVERIFY(!QFileInfo::exists(ws + "/refused"));

    const QString cfgPath = m_root + "/proc.json";
    writeFile(cfgPath, QJsonDocument(tinyConfig(30, 1, 15)).toJson());
    QSignalSpy finished(w.controller(), &gui::TrainingController::finishedWithReason);
    const QString dir = QFileInfo(ws + "/followed").absoluteFilePath();
    QVERIFY2(w.controller()->startCli({"train", cfgPath, "--run-dir", dir, "--threads", "1"}, dir, 1, &err),
             qPrintable(err));
    QVERIFY(w.controller()->isProcessRun());
    QVERIFY(!w.controller()->canPause());
    QTRY_VERIFY_WITH_TIMEOUT(finished.size() == 1, 120000);
    QCOMPARE(finished[0][1].toString(), QString("finished"));
    csw::CurvePlot* metric = w.trainingPanel()->plot("metric");
    QCOMPARE(metric->pointCount("train"), 30);
    QCOMPARE(metric->pointCount("valid"), 2);
    QVERIFY(w.trainingPanel()->logText().contains("finished"));
    QTRY_COMPARE_WITH_TIMEOUT(row(w, dir)->status(), QString("finished"), 10000);
  }

  // N local processes from the configure panel: the CLI's launcher, followed through the
  // run directory; the table shows the process count; Stop ends every rank cleanly.
  void dataParallelFromTheWindow() {
    const QString ws = m_root + "/ws-dist";
    MainWindow w(opts(ws));
    w.show();
    QCOMPARE(w.configurePanel()->processCount(), 1);
    w.configurePanel()->applyConfig(tinyConfig(1000000, 1));
    w.configurePanel()->setProcessCount(2);
    QCOMPARE(w.configurePanel()->processCount(), 2);
    // The threads are divided: two processes do not oversubscribe the machine.
    QVERIFY(2 * gui::threadsPerProcess(2) <= std::max(2, QThread::idealThreadCount()));
    QJsonObject noThreads = tinyConfig(5);
    QJsonObject tr = noThreads["training"].toObject();
    tr.remove("threads");
    noThreads["training"] = tr;
    const QStringList pargs = gui::TrainingController::parallelArguments(noThreads, "/c.json", 2, "/run");
    QCOMPARE(pargs, (QStringList{"train", "/c.json", "--nproc", "2", "--run-dir", "/run", "--threads",
                                 QString::number(gui::threadsPerProcess(2))}));

    QVERIFY(w.startTraining());
    QVERIFY(w.controller()->isProcessRun());
    QCOMPARE(w.controller()->currentProcessCount(), 2);
    QVERIFY(w.controller()->processRun()->arguments().contains("--nproc"));
    const QString dir = w.controller()->currentRunDir();
    QVERIFY(!dir.isEmpty());
    csw::CurvePlot* metric = w.trainingPanel()->plot("metric");
    QTRY_VERIFY_WITH_TIMEOUT(metric->pointCount("train") >= 3, 120000);
    QTRY_VERIFY_WITH_TIMEOUT(w.progressText().contains("Step"), 10000);
    QTRY_VERIFY_WITH_TIMEOUT(row(w, dir) && row(w, dir)->status() == "running", 10000);
    QCOMPARE(cell(w, dir, RunTableModel::Processes).toString(), QString("2"));
    QCOMPARE(readJson(dir + "/summary.json").value("processes").toInt(), 2);

    QSignalSpy finished(w.controller(), &gui::TrainingController::finishedWithReason);
    w.controller()->stop();  // SIGTERM to the launcher
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isTraining(), 90000);
    QCOMPARE(finished.size(), 1);
    QCOMPARE(finished[0][1].toString(), QString("stopped"));
    QVERIFY(QFileInfo::exists(dir + "/checkpoints/last.pt"));
    QTRY_COMPARE_WITH_TIMEOUT(row(w, dir)->status(), QString("stopped"), 10000);
  }
};

CS_TEST(GuiRunsTest, "gui_runs")
#include "test_gui_runs.moc"
