// Exports and imports of runs for the window (Run > Export for PyTorch / TensorBoard, File > Import from
// PyTorch), in-process: the same core functions `cellscope-cli export`, `export tensorboard` and `import`
// call (cs::export_torch, cs::tb::export_tensorboard, cs::import_run), run by a worker object on its own
// thread so that the window stays responsive. Plain Qt types cross the threads; the implementation
// (transfer_bridge.cpp) is the only file of these actions that reaches the core.
#pragma once
#include <QObject>
#include <QString>

namespace gui {

enum class TransferKind { ExportTorch = 0, ExportTensorBoard = 1, Import = 2 };

// What one transfer did: ok, one line saying what was done or why not, and (an import) the new run.
struct TransferOutcome {
  bool ok = false;
  QString text;
  QString runDir;
};

// Runs one transfer on the calling thread: `source` is the run (exports) or the export folder (import),
// `target` the export folder, the TensorBoard log directory or the workspace of the imported run. Every
// failure is an outcome (never an exception), its text the core's one-line message.
TransferOutcome runTransfer(TransferKind kind, const QString& source, const QString& target);

// The worker object (gui/worker_thread.h): run() on its thread, finished() back to the window.
class TransferWorker : public QObject {
  Q_OBJECT
 public Q_SLOTS:
  void run(int id, int kind, const QString& source, const QString& target);
 Q_SIGNALS:
  void finished(int id, bool ok, const QString& text, const QString& runDir);
};

}  // namespace gui
