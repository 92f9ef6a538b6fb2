// Sweeps > Report...: the reproducibility bundle of `cellscope-cli report` in the window
// (core/inspect/report/REPORT_NOTES.md). Pick a spec file (or a bundled one) and an output
// folder; the report is rendered on a worker thread (startWorkerThread), with a progress bar,
// the result, and a button that opens the folder. The dialog reaches the core only through
// report_bridge.h (the bundled specs and the worker, ReportWorker).
#pragma once
#include <QDialog>
#include <QObject>
#include <QString>
#include <QTemporaryDir>

#include <memory>

#include "report_bridge.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QThread;

namespace gui {

class ReportDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ReportDialog(const QString& workspace, QWidget* parent = nullptr);
  ~ReportDialog() override;

  QString specPath() const;
  void setSpecPath(const QString& path);
  QString outputDir() const;
  void setOutputDir(const QString& dir);
  bool isRendering() const { return m_rendering; }
  QString workspace() const { return m_workspace; }

 public Q_SLOTS:
  void startRender();
  void reject() override;  // refused while rendering (Esc, Close)

 Q_SIGNALS:
  void renderRequested(const QString& spec, const QString& out, const QString& workspace);
  void rendered(const QString& out);  // a report was written

 private:
  void onProgress(int done, int total, const QString& item);
  void onFinished(const QString& out, int items, int runs, bool images);
  void onFailed(const QString& message);
  void setBusy(bool busy);
  QString sweepSpec(const QString& sweep, QString* error);  // a spec of one sweep of the workspace

  QString m_workspace;
  QComboBox* m_bundled = nullptr;
  QLineEdit* m_spec = nullptr;
  QLineEdit* m_out = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_result = nullptr;
  QPushButton* m_render = nullptr;
  QPushButton* m_open = nullptr;
  QThread* m_thread = nullptr;
  ReportWorker* m_worker = nullptr;
  bool m_rendering = false;
  QString m_lastOut;
  std::unique_ptr<QTemporaryDir> m_specDir;  // the specs sweepSpec writes
};

}  // namespace gui
