#include "run_actions.h"

#include <QAction>
#include <QComboBox>
#include <QDateTime>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QJsonArray>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QStorageInfo>
#include <QTableView>
#include <QUrl>
#include <QVBoxLayout>

#include "configure_panel.h"
#include "core_bridge.h"
#include "run_table.h"
#include "training_controller.h"
#include "transfer_bridge.h"
#include "worker_thread.h"
#include "json_file.h"

#include <unistd.h>

namespace gui {

namespace {
// Whether trashed (the path QFile::moveToTrash reported) lies in a trash the desktop knows:
// the home trash $XDG_DATA_HOME/Trash (default ~/.local/share/Trash), or the trash of the
// run's file system, $topdir/.Trash-$uid or $topdir/.Trash/$uid (the freedesktop.org trash
// specification). Qt 6.4 cannot make the home trash when the data directory is missing (a
// redirected HOME) and then "trashes" into files/ and info/ of the current directory, and
// reports a relative "./files/NAME": not a trash (RUN_ACTIONS_NOTES.md).
bool inDesktopTrash(const QString& trashed) {
  if (trashed.isEmpty() || QFileInfo(trashed).isRelative()) return false;
  const QFileInfo item(trashed);
  const QFileInfo files(item.absolutePath());
  if (files.fileName() != QLatin1String("files")) return false;
  const QString base = QFileInfo(files.absolutePath()).canonicalFilePath();
  if (base.isEmpty()) return false;
  auto same = [&](const QString& candidate) {
    return !candidate.isEmpty() && QFileInfo(candidate).canonicalFilePath() == base;
  };
  const QString data = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
  if (!data.isEmpty() && same(QDir(data).filePath(QStringLiteral("Trash")))) return true;
  const QString top = QStorageInfo(base).rootPath();
  const QString uid = QString::number(::getuid());
  return !top.isEmpty() && (same(QDir(top).filePath(QStringLiteral(".Trash-") + uid)) ||
                            same(QDir(top).filePath(QStringLiteral(".Trash/") + uid)));
}

// A fresh name under WORKSPACE/.trash for the run called name: "<name>-<yyyyMMdd-HHmmss>"
// (then -2, -3... when that exists).
QString workspaceTrashPath(const QString& workspace, const QString& name) {
  const QString trash = QDir(workspace).filePath(QStringLiteral(".trash"));
  const QString stem =
      name + QLatin1Char('-') + QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
  QString path = QDir(trash).filePath(stem);
  for (int i = 2; QFileInfo::exists(path); ++i) path = QDir(trash).filePath(stem + QStringLiteral("-%1").arg(i));
  return path;
}
bool hasLastCheckpoint(const QString& dir) {
  return QFileInfo::exists(QDir(dir).filePath(QStringLiteral("checkpoints/last.pt")));
}
}  // namespace

// ======================================================================= ForkDialog
ForkDialog::ForkDialog(const QString& runDir, QWidget* parent)
    : QDialog(parent), m_dir(QFileInfo(runDir).absoluteFilePath()) {
  setWindowTitle(QStringLiteral("Fork %1").arg(QFileInfo(m_dir).fileName()));
  const QJsonObject summary = readJsonObjectFile(QDir(m_dir).filePath(QStringLiteral("summary.json")));
  const QJsonObject cfg = readJsonObjectFile(QDir(m_dir).filePath(QStringLiteral("config.json")));
  auto* v = new QVBoxLayout(this);
  auto* intro = new QLabel(QStringLiteral(
      "A new run that starts from a checkpoint of this one (model, optimizer and data position) with the "
      "changes below; its step counter continues from the checkpoint's, and its curves join the parent's."));
  intro->setWordWrap(true);
  v->addWidget(intro);
  auto* form = new QFormLayout;
  m_checkpoint = new QComboBox;
  const qint64 last = qint64(summary.value(QStringLiteral("step")).toDouble());
  const qint64 best = summary.value(QStringLiteral("best_step")).isDouble()
                          ? qint64(summary.value(QStringLiteral("best_step")).toDouble())
                          : -1;
  if (hasLastCheckpoint(m_dir)) m_checkpoint->addItem(QStringLiteral("last (step %1)").arg(last), qint64(-1));
  const QList<qint64> steps = checkpointSteps(m_dir);
  for (int i = steps.size() - 1; i >= 0; --i)
    m_checkpoint->addItem(QStringLiteral("step_%1.pt%2")
                              .arg(steps[i])
                              .arg(steps[i] == best ? QStringLiteral("  (best valid)") : QString()),
                          steps[i]);
  form->addRow(QStringLiteral("Checkpoint:"), m_checkpoint);
  m_lrOriginal = jsonValueText(cfg.value(QStringLiteral("training")).toObject().value(QStringLiteral("lr")));
  m_lr = new QLineEdit(m_lrOriginal);
  m_lr->setToolTip(QStringLiteral("training.lr of the new run"));
  form->addRow(QStringLiteral("Learning rate:"), m_lr);
  m_changes = new QPlainTextEdit;
  m_changes->setPlaceholderText(QStringLiteral("One change per line, e.g.\nmodel.lambda=0.01\ntraining.steps=4000"));
  m_changes->setToolTip(QStringLiteral("SECTION.KEY=VALUE per line, as cellscope-cli train --set takes them"));
  form->addRow(QStringLiteral("Other changes:"), m_changes);
  v->addLayout(form);
  auto* box = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  box->button(QDialogButtonBox::Ok)->setText(QStringLiteral("Fork and train"));
  box->button(QDialogButtonBox::Ok)->setEnabled(m_checkpoint->count() > 0);
  connect(box, &QDialogButtonBox::accepted, this, [this] {
    QString err;
    overrides(&err);
    if (!err.isEmpty()) {
      QMessageBox::warning(this, windowTitle(), err);
      return;
    }
    accept();
  });
  connect(box, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(box);
  resize(460, 320);
}

qint64 ForkDialog::step() const {
  return m_checkpoint->currentIndex() < 0 ? -1 : m_checkpoint->currentData().toLongLong();
}

QStringList ForkDialog::overrides(QString* error) const {
  QStringList out;
  const QString lr = m_lr->text().trimmed();
  if (!lr.isEmpty() && lr != m_lrOriginal) out << QStringLiteral("training.lr=") + lr;
  static const QRegularExpression kv(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*\\.[A-Za-z_][A-Za-z0-9_.]*=.*$"));
  const QStringList lines = m_changes->toPlainText().split(QLatin1Char('\n'));
  for (int i = 0; i < lines.size(); ++i) {
    const QString l = lines[i].trimmed();
    if (l.isEmpty()) continue;
    if (!kv.match(l).hasMatch()) {
      if (error) *error = QStringLiteral("Other changes, line %1: '%2' is not SECTION.KEY=VALUE").arg(i + 1).arg(l);
      return {};
    }
    out << l;
  }
  return out;
}

QStringList ForkDialog::arguments(const QString& newDir, QString* error) const {
  QString err;
  const QStringList sets = overrides(&err);
  if (!err.isEmpty()) {
    if (error) *error = err;
    return {};
  }
  const qint64 s = step();
  QStringList args{QStringLiteral("train"), QStringLiteral("--fork"),
                   s >= 0 ? m_dir + QLatin1Char('@') + QString::number(s) : m_dir};
  for (const QString& kv : sets) args << QStringLiteral("--set") << kv;
  args << QStringLiteral("--run-dir") << newDir << QStringLiteral("--threads") << QString::number(threadsPerProcess(1));
  return args;
}

// ======================================================================= RunActions
RunActions::RunActions(RunTableModel* model, QSortFilterProxyModel* proxy, QTableView* view,
                       TrainingController* controller, ConfigurePanel* configure, QWidget* dialogParent)
    : QObject(view),
      m_model(model),
      m_proxy(proxy),
      m_view(view),
      m_controller(controller),
      m_configure(configure),
      m_dialogParent(dialogParent) {
  struct Def {
    const char* text;
    const char* keys;
    void (RunActions::*slot)();
    const char* tip;
  };
  const Def defs[KindCount] = {
      {"&Resume", "Ctrl+Alt+R", &RunActions::resumeSelected,
       "Continue this stopped run exactly where its last checkpoint left it"},
      {"&Fork...", "Ctrl+Alt+F", &RunActions::forkSelected,
       "A new run from a checkpoint of this one, with changed options"},
      {"&Load configuration", "Ctrl+Alt+L", &RunActions::loadSelected,
       "Put this run's configuration into the configure panel"},
      {"Rename / &label...", "F2", &RunActions::renameSelected,
       "A short name for legends and the run table (label.txt)"},
      {"&Open folder", "Ctrl+Alt+O", &RunActions::openFolderSelected, "Show the run directory in the file manager"},
      {"Export for &PyTorch...", "Ctrl+Alt+E", &RunActions::exportTorchSelected,
       "A plain PyTorch state_dict, the configuration and the vocabulary, for cellscope_torch.load in Python"},
      {"Export for &TensorBoard...", "Ctrl+Alt+T", &RunActions::exportTensorBoardSelected,
       "The run's metrics as TensorBoard event files (also read by W&B and Aim)"},
      {"&Delete...", "Del", &RunActions::deleteSelected, "Move the run directory to the desktop trash"},
  };
  m_menu = new QMenu(QStringLiteral("Selected &run"), view);
  // Menus show no tooltips by default: a greyed-out item would not say why (setReason).
  m_menu->setToolTipsVisible(true);
  for (const Def& d : defs) {
    auto* a = new QAction(QString::fromUtf8(d.text), this);
    a->setShortcut(QKeySequence(QString::fromLatin1(d.keys)));
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut);  // only while the table has the focus
    a->setToolTip(QString::fromUtf8(d.tip));
    a->setStatusTip(QString::fromUtf8(d.tip));
    a->setProperty("defaultTip", QString::fromUtf8(d.tip));
    connect(a, &QAction::triggered, this, d.slot);
    view->addAction(a);
    m_actions << a;
    m_menu->addAction(a);
    if (d.slot == &RunActions::forkSelected || d.slot == &RunActions::openFolderSelected ||
        d.slot == &RunActions::exportTensorBoardSelected)
      m_menu->addSeparator();
  }
  view->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(view, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    const QModelIndex idx = m_view->indexAt(pos);
    if (!idx.isValid()) return;
    m_view->setCurrentIndex(idx);
    updateEnabled();
    m_menu->popup(m_view->viewport()->mapToGlobal(pos));
  });
  connect(view->selectionModel(), &QItemSelectionModel::currentChanged, this, &RunActions::updateEnabled);
  connect(model, &RunTableModel::runUpdated, this, &RunActions::updateEnabled);
  connect(controller, &TrainingController::stateChanged, this, &RunActions::updateEnabled);
  updateEnabled();
}

QString RunActions::selectedRun() const {
  const QModelIndex idx = m_view->currentIndex();
  if (!idx.isValid()) return QString();
  const RunInfo* r = m_model->run(m_proxy->mapToSource(idx).row());
  return r ? r->dir : QString();
}

// An action greyed out says why in its tooltip ("Not available: <reason>"), which the menus
// show (setToolTipsVisible) when the pointer rests on the item, and in its status tip; an
// enabled one shows its description.
void RunActions::setReason(QAction* a, const QString& reason) {
  a->setEnabled(reason.isEmpty());
  const QString tip = a->property("defaultTip").toString();
  a->setToolTip(reason.isEmpty() ? tip : QStringLiteral("%1\nNot available: %2").arg(tip, reason));
  a->setStatusTip(reason.isEmpty() ? tip : QStringLiteral("Not available: %1").arg(reason));
}

void RunActions::updateEnabled() {
  const QString dir = selectedRun();
  const RunInfo* r = dir.isEmpty() ? nullptr : m_model->run(m_model->rowOf(dir));
  const QString none = r ? QString() : QStringLiteral("select a run in the table first");
  const bool training = m_controller->isTraining();
  const QString st = r ? r->status() : QString();
  const bool last = r && hasLastCheckpoint(dir);
  const bool checkpoint = last || (r && !checkpointSteps(dir).isEmpty());
  auto first = [](std::initializer_list<QString> reasons) {
    for (const QString& x : reasons)
      if (!x.isEmpty()) return x;
    return QString();
  };
  const QString busyHere =
      training ? QStringLiteral("a run is training in this window; stop it or let it finish first") : QString();
  setReason(m_actions[Resume],
            first({none, busyHere,
                   st == QLatin1String("finished") ? QStringLiteral("this run finished: Fork it to train further")
                                                   : QString(),
                   st == QLatin1String("running") ? QStringLiteral("this run is training") : QString(),
                   r && !last ? QStringLiteral("this run has no checkpoints/last.pt to continue from") : QString()}));
  setReason(m_actions[Fork],
            first({none, busyHere, r && !checkpoint ? QStringLiteral("this run has no checkpoint yet") : QString()}));
  setReason(m_actions[LoadConfig], none);
  setReason(m_actions[Rename], none);
  setReason(m_actions[OpenFolder], none);
  setReason(m_actions[ExportTorch],
            first({none, r && !checkpoint ? QStringLiteral("this run has no checkpoint yet") : QString()}));
  setReason(m_actions[ExportTensorBoard], none);
  setReason(m_actions[Delete], first({none, training && m_controller->currentRunDir() == dir
                                                ? QStringLiteral("this run is training in this window; stop it first")
                                                : QString()}));
}

QString RunActions::busyReason(const QString& dir) const {
  const QString abs = QFileInfo(dir).absoluteFilePath();
  if (m_controller->isTraining() && QFileInfo(m_controller->currentRunDir()).absoluteFilePath() == abs)
    return QStringLiteral("it is training in this window (stop it first)");
  const QFileInfo sum(QDir(abs).filePath(QStringLiteral("summary.json")));
  if (readJsonObjectFile(sum.filePath()).value(QStringLiteral("status")).toString() == QLatin1String("running") &&
      sum.lastModified().secsTo(QDateTime::currentDateTime()) < 60)
    return QStringLiteral("another process is training it (its summary.json changed %1 s ago)")
        .arg(std::max<qint64>(0, sum.lastModified().secsTo(QDateTime::currentDateTime())));
  return QString();
}

bool RunActions::resume(const QString& dir, QString* error) {
  const QString busy = busyReason(dir);
  if (!busy.isEmpty()) {
    if (error) *error = QStringLiteral("Not resumed: ") + busy;
    return false;
  }
  if (!m_controller->resumeRun(dir, error)) return false;
  // The form shows what trains now: the resumed run's own configuration.
  const QJsonObject cfg = readJsonObjectFile(QDir(dir).filePath(QStringLiteral("config.json")));
  if (!cfg.isEmpty()) {
    m_configure->applyConfig(cfg);
    const RunInfo* r = m_model->run(m_model->rowOf(dir));
    m_configure->setProcessCount(r ? r->processes() : 1);
  }
  return true;
}

QString RunActions::forkDirectory(const QString& dir) const {
  const QJsonObject cfg = readJsonObjectFile(QDir(dir).filePath(QStringLiteral("config.json")));
  return newRunDirectory(QFileInfo(QFileInfo(dir).absoluteFilePath()).absolutePath(), cfg);
}

bool RunActions::fork(const QString& dir, const QStringList& args, const QString& newDir, QString* error) {
  Q_UNUSED(dir);
  if (args.isEmpty()) {
    if (error) *error = QStringLiteral("nothing to run");
    return false;
  }
  return m_controller->startCli(args, newDir, 1, error);
}

bool RunActions::loadConfiguration(const QString& dir, QString* error) {
  const QJsonObject cfg = readJsonObjectFile(QDir(dir).filePath(QStringLiteral("config.json")));
  if (cfg.isEmpty()) {
    if (error) *error = QStringLiteral("%1 has no readable config.json").arg(dir);
    return false;
  }
  m_configure->applyConfig(cfg);
  const RunInfo* r = m_model->run(m_model->rowOf(dir));
  m_configure->setProcessCount(r ? r->processes() : 1);
  Q_EMIT configurationLoaded(QFileInfo(dir).absoluteFilePath());
  return true;
}

bool RunActions::rename(const QString& dir, const QString& label, QString* error) {
  if (!writeRunLabel(dir, label, error)) return false;
  m_model->refreshRun(dir);  // the watcher would see it too; the row changes at once
  return true;
}

bool RunActions::remove(const QString& dir, bool allowPermanent, QString* error, QString* movedTo) {
  const QString abs = QFileInfo(dir).absoluteFilePath();
  if (movedTo) movedTo->clear();
  if (!QFileInfo::exists(QDir(abs).filePath(QStringLiteral("config.json")))) {
    if (error) *error = QStringLiteral("%1 is not a run directory").arg(abs);
    return false;
  }
  const QString busy = busyReason(abs);
  if (!busy.isEmpty()) {
    if (error) *error = QStringLiteral("Not deleted: ") + busy;
    return false;
  }
  const QString workspace = QFileInfo(abs).absolutePath();
  // Where Qt 6.4 puts files/ and info/ when it finds no trash: the current directory. What was
  // there before this call is left alone.
  const QDir cwd = QDir::current();
  const bool hadFiles = cwd.exists(QStringLiteral("files")), hadInfo = cwd.exists(QStringLiteral("info"));
  QString trashed;
  bool inWorkspaceTrash = false;
  const bool moved = QFile::moveToTrash(abs, &trashed);
  if (moved && !trashed.isEmpty() && !inDesktopTrash(trashed)) {
    // Moved, but not into a trash: on into the workspace's own trash, and Qt's files/ and
    // info/ entries go.
    const QFileInfo item(trashed);
    const QDir base(QFileInfo(item.absolutePath()).absolutePath());
    const QString target = workspaceTrashPath(workspace, QFileInfo(abs).fileName());
    if (!QDir().mkpath(QFileInfo(target).absolutePath()) || !QDir().rename(item.absoluteFilePath(), target)) {
      // Give it back its place rather than leave it in a stray folder.
      QDir().rename(item.absoluteFilePath(), abs);
    } else {
      inWorkspaceTrash = true;
      trashed = target;
    }
    QFile::remove(base.filePath(QStringLiteral("info/") + item.fileName() + QStringLiteral(".trashinfo")));
    const bool baseIsCwd = base.canonicalPath() == cwd.canonicalPath();
    if (!(baseIsCwd && hadFiles)) base.rmdir(QStringLiteral("files"));  // only when empty
    if (!(baseIsCwd && hadInfo)) base.rmdir(QStringLiteral("info"));
    if (!inWorkspaceTrash) {
      if (error)
        *error = QStringLiteral("there is no desktop trash for %1, and its workspace's trash %2 cannot be made")
                     .arg(abs, QDir(workspace).filePath(QStringLiteral(".trash")));
      return false;
    }
  } else if (!moved) {
    // No trash at all: the workspace's own.
    const QString target = workspaceTrashPath(workspace, QFileInfo(abs).fileName());
    if (QDir().mkpath(QFileInfo(target).absolutePath()) && QDir().rename(abs, target)) {
      inWorkspaceTrash = true;
      trashed = target;
    } else if (!allowPermanent) {
      if (error) *error = QStringLiteral("there is no desktop trash for %1").arg(abs);
      return false;
    } else if (!QDir(abs).removeRecursively()) {
      if (error) *error = QStringLiteral("cannot delete %1").arg(abs);
      return false;
    }
  }
  if (movedTo) *movedTo = trashed;
  m_model->removeRun(abs);
  return true;
}

bool RunActions::isWorkspaceTrash(const QString& path) {
  return QFileInfo(QFileInfo(path).absolutePath()).fileName() == QLatin1String(".trash");
}

void RunActions::report(bool ok, const QString& done, const QString& error) {
  if (ok) Q_EMIT message(done, 5000);
  else if (!error.isEmpty()) Q_EMIT message(error, 8000);
}

void RunActions::resumeSelected() {
  const QString dir = selectedRun();
  if (dir.isEmpty()) return;
  QString err;
  report(resume(dir, &err), QStringLiteral("Resuming %1").arg(QFileInfo(dir).fileName()), err);
}

void RunActions::forkSelected() {
  const QString dir = selectedRun();
  if (dir.isEmpty()) return;
  if (m_controller->isTraining()) {
    Q_EMIT message(QStringLiteral("Not forked: a run is training; stop it or let it finish first"), 8000);
    return;
  }
  ForkDialog dlg(dir, m_dialogParent);
  if (dlg.exec() != QDialog::Accepted) return;
  const QString newDir = forkDirectory(dir);
  QString err;
  const QStringList args = dlg.arguments(newDir, &err);
  report(!args.isEmpty() && fork(dir, args, newDir, &err),
         QStringLiteral("Forked %1 into %2").arg(QFileInfo(dir).fileName(), QFileInfo(newDir).fileName()), err);
}

void RunActions::loadSelected() {
  const QString dir = selectedRun();
  if (dir.isEmpty()) return;
  QString err;
  report(loadConfiguration(dir, &err), QStringLiteral("Loaded the configuration of %1").arg(QFileInfo(dir).fileName()),
         err);
}

void RunActions::renameSelected() {
  const QString dir = selectedRun();
  if (dir.isEmpty()) return;
  bool ok = false;
  const QString label =
      QInputDialog::getText(m_dialogParent, QStringLiteral("Label the run"),
                            QStringLiteral("A short name for %1 (empty: none):").arg(QFileInfo(dir).fileName()),
                            QLineEdit::Normal, readRunLabel(dir), &ok);
  if (!ok) return;
  QString err;
  report(rename(dir, label, &err),
         label.trimmed().isEmpty() ? QStringLiteral("Label removed")
                                   : QStringLiteral("Labelled '%1'").arg(label.trimmed()),
         err);
}

void RunActions::openFolderSelected() {
  const QString dir = selectedRun();
  if (dir.isEmpty()) return;
  if (!QDesktopServices::openUrl(QUrl::fromLocalFile(dir)))
    Q_EMIT message(QStringLiteral("Cannot open %1").arg(dir), 8000);
}

QString RunActions::exportDirectory(const QString& folder, const QString& dir) {
  const QString base = QDir(folder).filePath(QFileInfo(dir).fileName() + QStringLiteral("-pytorch"));
  QString out = base;
  for (int i = 2; QFileInfo::exists(out); ++i) out = base + QStringLiteral("-%1").arg(i);
  return out;
}

// Runs one export or import on the transfer worker's thread (transfer_bridge.h: in-process, the functions the
// CLI calls); `done(ok, text, runDir)` on this thread when it ends. Transfers run one after another.
void RunActions::startTransfer(int kind, const QString& source, const QString& target, const TransferDone& done) {
  if (!m_transfer) {
    m_transfer = startWorkerThread<TransferWorker>(this, &m_transferThread, QStringLiteral("cellscope-transfer"));
    connect(m_transfer, &TransferWorker::finished, this,
            [this](int id, bool ok, const QString& text, const QString& runDir) {
              const TransferDone d = m_pending.take(id);
              --m_exports;
              if (d) d(ok, text, runDir);
            });
  }
  const int id = ++m_lastTransfer;
  m_pending.insert(id, done);
  ++m_exports;
  TransferWorker* w = m_transfer;
  QMetaObject::invokeMethod(
      w, [w, id, kind, source, target] { w->run(id, kind, source, target); }, Qt::QueuedConnection);
}

RunActions::~RunActions() {
  if (m_transferThread) stopWorkerThread(m_transferThread);  // the transfer running now ends first
}

bool RunActions::exportRun(const QString& dir, ExportFormat format, const QString& out, QString* error) {
  const QString what = format == PyTorch ? QStringLiteral("PyTorch") : QStringLiteral("TensorBoard");
  if (dir.isEmpty() || out.isEmpty()) {
    if (error) *error = QStringLiteral("Not exported: no run or no destination");
    return false;
  }
  startTransfer(static_cast<int>(format == PyTorch ? TransferKind::ExportTorch : TransferKind::ExportTensorBoard), dir,
                out, [this, dir, out, what](bool ok, const QString& text, const QString&) {
                  Q_EMIT message(
                      ok ? QStringLiteral("Exported %1 for %2 to %3").arg(QFileInfo(dir).fileName(), what, out)
                         : QStringLiteral("%1 export of %2 failed: %3").arg(what, QFileInfo(dir).fileName(), text),
                      ok ? 8000 : 15000);
                  Q_EMIT exportFinished(dir, out, ok, text);
                });
  Q_EMIT message(QStringLiteral("Exporting %1 for %2...").arg(QFileInfo(dir).fileName(), what), 0);
  return true;
}

bool RunActions::importRun(const QString& exportDir, const QString& workspace, QString* error) {
  if (exportDir.isEmpty() || workspace.isEmpty()) {
    if (error) *error = QStringLiteral("Not imported: no export folder or no workspace");
    return false;
  }
  startTransfer(static_cast<int>(TransferKind::Import), exportDir, workspace,
                [this, exportDir](bool ok, const QString& text, const QString& runDir) {
                  if (ok && !runDir.isEmpty()) m_model->refreshRun(runDir);
                  Q_EMIT message(
                      ok ? QStringLiteral("Imported %1 as %2 (%3)").arg(exportDir, QFileInfo(runDir).fileName(), text)
                         : QStringLiteral("Import of %1 failed: %2").arg(exportDir, text),
                      ok ? 10000 : 20000);
                  Q_EMIT importFinished(exportDir, runDir, ok, text);
                });
  Q_EMIT message(QStringLiteral("Importing %1...").arg(exportDir), 0);
  return true;
}

void RunActions::importInteractive(const QString& workspace) {
  QSettings st;
  const QString folder = QFileDialog::getExistingDirectory(
      m_dialogParent,
      QStringLiteral("Import from PyTorch: an export folder whose weights cellscope_torch.save_export wrote back"),
      st.value(QStringLiteral("export/folder"), workspace).toString());
  if (folder.isEmpty()) return;
  st.setValue(QStringLiteral("export/folder"), QFileInfo(folder).absolutePath());
  QString err;
  if (!importRun(folder, workspace, &err)) Q_EMIT message(err, 8000);
}

// The folder dialog of both exports; it starts where the last export went (QSettings
// "export/folder"). "" when the user cancels.
static QString chooseExportFolder(QWidget* parent, const QString& dir, const QString& title) {
  QSettings st;
  const QString folder = QFileDialog::getExistingDirectory(
      parent, title,
      st.value(QStringLiteral("export/folder"), QFileInfo(QFileInfo(dir).absolutePath()).absolutePath()).toString());
  if (!folder.isEmpty()) st.setValue(QStringLiteral("export/folder"), folder);
  return folder;
}

void RunActions::exportTorchSelected() {
  const QString dir = selectedRun();
  const QString folder =
      dir.isEmpty() ? QString()
                    : chooseExportFolder(m_dialogParent, dir,
                                         QStringLiteral("Export for PyTorch: the folder to write <run>-pytorch into"));
  QString err;
  if (!folder.isEmpty() && !exportRun(dir, PyTorch, exportDirectory(folder, dir), &err)) Q_EMIT message(err, 8000);
}

void RunActions::exportTensorBoardSelected() {
  const QString dir = selectedRun();
  const QString folder =
      dir.isEmpty()
          ? QString()
          : chooseExportFolder(m_dialogParent, dir,
                               QStringLiteral("Export for TensorBoard: the log directory (one subdirectory per run)"));
  QString err;
  if (!folder.isEmpty() && !exportRun(dir, TensorBoard, folder, &err)) Q_EMIT message(err, 8000);
}

void RunActions::deleteSelected() {
  const QString dir = selectedRun();
  if (dir.isEmpty()) return;
  const QString busy = busyReason(dir);
  if (!busy.isEmpty()) {
    Q_EMIT message(QStringLiteral("Not deleted: ") + busy, 8000);
    return;
  }
  const QString name = QFileInfo(dir).fileName();
  if (QMessageBox::question(
          m_dialogParent, QStringLiteral("Delete run"),
          QStringLiteral("Move the run %1 (its checkpoints, metrics and log) to the trash?").arg(name),
          QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) != QMessageBox::Yes)
    return;
  QString err, movedTo;
  if (remove(dir, false, &err, &movedTo)) {
    if (isWorkspaceTrash(movedTo))
      Q_EMIT message(QStringLiteral("There is no desktop trash for this user: moved %1 to the workspace's trash, %2. "
                                    "To restore it, move that folder back into %3.")
                         .arg(name, movedTo, QFileInfo(dir).absolutePath()),
                     60000);
    else Q_EMIT message(QStringLiteral("Moved %1 to the trash").arg(name), 5000);
    return;
  }
  if (!err.startsWith(QLatin1String("there is no desktop trash"))) {
    Q_EMIT message(err, 8000);
    return;
  }
  if (QMessageBox::warning(m_dialogParent, QStringLiteral("Delete run"),
                           QStringLiteral("There is no desktop trash for %1. Delete it permanently?").arg(dir),
                           QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) != QMessageBox::Yes)
    return;
  report(remove(dir, true, &err), QStringLiteral("Deleted %1").arg(name), err);
}

}  // namespace gui
