#include "transfer_bridge.h"

#include <ATen/Parallel.h>

#include <exception>
#include <sstream>

#include "export/torch_export.h"
#include "train/import_run.h"
#include "train/tb_events.h"

namespace gui {

namespace {

// The first line of an exception's message (LibTorch's carry a backtrace after it).
QString firstLine(const char* what) {
  const QString s = QString::fromUtf8(what).trimmed();
  const qsizetype nl = s.indexOf(QLatin1Char('\n'));
  return nl < 0 ? s : s.left(nl);
}

TransferOutcome exportTorch(const QString& run, const QString& out) {
  cs::TorchExportOptions o;
  o.run_dir = run.toStdString();
  o.out = out.toStdString();
  const cs::TorchExport r = cs::export_torch(o);
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  s << "exported " << o.run_dir << " (" << r.checkpoint_file << ", step " << r.step << ", " << r.tensors
    << " tensors) to " << o.out << " in " << r.seconds << " s";
  return {true, QString::fromStdString(s.str()), QString()};
}

TransferOutcome exportTensorBoard(const QString& run, const QString& logdir) {
  const auto written = cs::tb::export_tensorboard(run.toStdString(), logdir.toStdString());
  return {true, QStringLiteral("%1 run(s) written to %2").arg(written.size()).arg(logdir), QString()};
}

TransferOutcome importRun(const QString& folder, const QString& workspace) {
  cs::ImportOptions o;
  o.dir = folder.toStdString();
  o.launch.workspace = workspace.toStdString();
  // The window's own intra-op threads, kept: the import evaluates in this process, beside its analyses.
  o.launch.threads = at::get_num_threads();
  const cs::ImportedRun r = cs::import_run(o);
  QString what = QStringLiteral("%1 tensors; valid %2 %3")
                     .arg(r.tensors)
                     .arg(QString::fromStdString(r.primary_metric))
                     .arg(r.valid, 0, 'g', 5);
  if (r.has_test) what += QStringLiteral(", test %1").arg(r.test, 0, 'g', 5);
  return {true, what, QString::fromStdString(r.run_dir)};
}

}  // namespace

TransferOutcome runTransfer(TransferKind kind, const QString& source, const QString& target) {
  try {
    switch (kind) {
      case TransferKind::ExportTorch:
        return exportTorch(source, target);
      case TransferKind::ExportTensorBoard:
        return exportTensorBoard(source, target);
      case TransferKind::Import:
        return importRun(source, target);
    }
    return {false, QStringLiteral("unknown transfer"), QString()};
  } catch (const std::exception& e) {
    return {false, firstLine(e.what()), QString()};
  }
}

void TransferWorker::run(int id, int kind, const QString& source, const QString& target) {
  const TransferOutcome r = runTransfer(static_cast<TransferKind>(kind), source, target);
  Q_EMIT finished(id, r.ok, r.text, r.runDir);
}

}  // namespace gui
