// RunActions: what a user does to a run of the run table, from its context menu,
// the Run > Selected run menu or a shortcut while the table has the focus:
//   Resume              Ctrl+Alt+R  continue a stopped run exactly (`train --resume`)
//   Fork...             Ctrl+Alt+F  a new run from a chosen checkpoint with changed options
//                                   (`cellscope-cli train --fork DIR@STEP --set ... --run-dir NEW`)
//   Load configuration  Ctrl+Alt+L  the run's config into the configure panel
//   Rename / label...   F2          label.txt (cs::RunStore::write_label)
//   Open folder         Ctrl+Alt+O  the run directory in the desktop's file manager
//   Export for PyTorch...      Ctrl+Alt+E  what `cellscope-cli export DIR --out <folder>/<run>-pytorch`
//                                          writes: a state_dict, config and vocabulary for cellscope_torch.load
//   Export for TensorBoard...  Ctrl+Alt+T  what `cellscope-cli export tensorboard DIR --out <logdir>` writes
//                                          (event files that TensorBoard, W&B and Aim read)
//   Delete...           Delete      to the desktop trash (after a confirmation; refused while
//                                   the run is being trained, here or by another process);
//                                   without a desktop trash, to WORKSPACE/.trash, and the
//                                   status bar says where and how to restore it
// Each action has a dialog-free operation (resume, fork, loadConfiguration, rename,
// exportRun, remove) that the tests call; the slots add the dialogs. Exports and imports call the
// core's functions in-process (transfer_bridge.h), the ones the CLI calls, on a worker thread, so the
// window stays responsive; exportFinished / importFinished report the outcome.
#pragma once
#include <functional>
#include <QDialog>
#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

class QAction;
class QComboBox;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QTableView;
class QThread;

namespace gui {

class ConfigurePanel;
class RunTableModel;
class TrainingController;
class TransferWorker;

// The Fork dialog: which checkpoint of the parent, and what changes. Builds the CLI's
// command line; the window runs it as a process and follows the child like any run.
class ForkDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ForkDialog(const QString& runDir, QWidget* parent = nullptr);

  QComboBox* checkpointCombo() const { return m_checkpoint; }
  QLineEdit* lrEdit() const { return m_lr; }
  QPlainTextEdit* changesEdit() const { return m_changes; }
  // The chosen checkpoint's step; -1 for the run's last checkpoint (last.pt).
  qint64 step() const;
  // "--set" values: the learning rate when it was changed, then each non-empty line of the
  // changes box (SECTION.KEY=VALUE). *error names a line that is not of that form.
  QStringList overrides(QString* error = nullptr) const;
  // `train --fork DIR[@STEP] --set ... --run-dir newDir --threads K`.
  QStringList arguments(const QString& newDir, QString* error = nullptr) const;

 private:
  QString m_dir, m_lrOriginal;
  QComboBox* m_checkpoint = nullptr;
  QLineEdit* m_lr = nullptr;
  QPlainTextEdit* m_changes = nullptr;
};

class RunActions : public QObject {
  Q_OBJECT
 public:
  enum Kind { Resume, Fork, LoadConfig, Rename, OpenFolder, ExportTorch, ExportTensorBoard, Delete, KindCount };
  enum ExportFormat { PyTorch, TensorBoard };

  // view shows proxy, whose source is model; dialogs are parented to dialogParent.
  RunActions(RunTableModel* model, QSortFilterProxyModel* proxy, QTableView* view, TrainingController* controller,
             ConfigurePanel* configure, QWidget* dialogParent);
  ~RunActions() override;

  QAction* action(Kind k) const { return m_actions.value(k); }
  QList<QAction*> actions() const { return m_actions; }
  QMenu* contextMenu() const { return m_menu; }
  QString selectedRun() const;  // the current row's directory ("" when none)
  void updateEnabled();         // enables the actions for the current row

  // Why dir cannot be deleted or resumed now ("" when it can): trained by this window, or
  // by another process (summary.json says "running" and changed in the last minute).
  QString busyReason(const QString& dir) const;

  // The operations, without dialogs. Each returns false with *error on refusal.
  bool resume(const QString& dir, QString* error = nullptr);
  bool fork(const QString& dir, const QStringList& args, const QString& newDir, QString* error = nullptr);
  bool loadConfiguration(const QString& dir, QString* error = nullptr);
  bool rename(const QString& dir, const QString& label, QString* error = nullptr);
  // To the desktop trash. Where there is none (moveToTrash fails, or puts the run somewhere
  // that is not a trash: a redirected HOME), to the workspace's own trash,
  // WORKSPACE/.trash/<name>-<yyyyMMdd-HHmmss>; where that cannot be made either, permanently
  // only when allowPermanent. *movedTo: where the run went ("" when deleted).
  bool remove(const QString& dir, bool allowPermanent, QString* error = nullptr, QString* movedTo = nullptr);
  // Whether a path remove() reported is in a workspace's own trash (WORKSPACE/.trash/...).
  static bool isWorkspaceTrash(const QString& path);
  // A fresh directory for a fork of dir, in dir's workspace.
  QString forkDirectory(const QString& dir) const;
  // Starts the export of dir into out (PyTorch: a new directory; TensorBoard: a log directory that
  // gets one subdirectory per run), as `cellscope-cli export` makes it. False with *error when
  // there is nothing to export; otherwise exportFinished follows.
  bool exportRun(const QString& dir, ExportFormat format, const QString& out, QString* error = nullptr);
  // Where the PyTorch export of dir goes inside folder: <folder>/<run>-pytorch, or -2, -3...
  // when that exists.
  static QString exportDirectory(const QString& folder, const QString& dir);
  // Starts the import `cellscope-cli import exportDir --workspace workspace` makes: a new run of the
  // weights an export folder holds after cellscope_torch.save_export wrote them back from PyTorch.
  // False with *error when a path is missing; otherwise importFinished follows.
  bool importRun(const QString& exportDir, const QString& workspace, QString* error = nullptr);
  int exportsRunning() const { return m_exports; }  // exports and imports not ended yet

 public Q_SLOTS:
  void resumeSelected();
  void forkSelected();
  void loadSelected();
  void renameSelected();
  void openFolderSelected();
  void exportTorchSelected();
  void exportTensorBoardSelected();
  void deleteSelected();
  // File > Import from PyTorch...: a folder dialog, then importRun into `workspace`.
  void importInteractive(const QString& workspace);

 Q_SIGNALS:
  void message(const QString& text, int timeoutMs);
  void configurationLoaded(const QString& dir);
  // An export ended: ok, and one line saying what was written or why not.
  void exportFinished(const QString& dir, const QString& out, bool ok, const QString& text);
  // An import ended: the new run's directory ("" when it failed), and what was imported or why not.
  void importFinished(const QString& exportDir, const QString& runDir, bool ok, const QString& text);

 private:
  void report(bool ok, const QString& done, const QString& error);
  using TransferDone = std::function<void(bool ok, const QString& text, const QString& runDir)>;
  void startTransfer(int kind, const QString& source, const QString& target, const TransferDone& done);
  static void setReason(QAction* a, const QString& reason);

  RunTableModel* m_model;
  QSortFilterProxyModel* m_proxy;
  QTableView* m_view;
  TrainingController* m_controller;
  ConfigurePanel* m_configure;
  QWidget* m_dialogParent;
  QList<QAction*> m_actions;
  QMenu* m_menu = nullptr;
  int m_exports = 0;
  QThread* m_transferThread = nullptr;
  TransferWorker* m_transfer = nullptr;
  QHash<int, TransferDone> m_pending;  // the transfers started and not ended, by id
  int m_lastTransfer = 0;
};

}  // namespace gui
