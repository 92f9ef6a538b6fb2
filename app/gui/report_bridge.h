// Sweeps > Report...'s window onto core/inspect/report (report_dialog.h): the bundled specs and
// the worker that renders a report. Qt types only; report_bridge.cpp is the one file of the
// dialog that reaches the core (and app/figures, which draws the report's figures).
#pragma once
#include <QList>
#include <QObject>
#include <QString>

namespace gui {

// A spec bundled with the program (cs::bundled_reports).
struct BundledReport {
  QString label;  // "<name>: <title>"
  QString path;   // the spec file
};
QList<BundledReport> bundledReports();

// Renders a report on its own thread. Figures are drawn on the GUI thread (they are widgets):
// the worker hands each one over with a blocking queued call.
class ReportWorker : public QObject {
  Q_OBJECT
 public:
  explicit ReportWorker(QObject* parent = nullptr);

 public Q_SLOTS:
  void render(const QString& spec, const QString& out, const QString& workspace);

 Q_SIGNALS:
  void progress(int done, int total, const QString& item);
  void finished(const QString& out, int items, int runs, bool images);
  void failed(const QString& message);
};

}  // namespace gui
