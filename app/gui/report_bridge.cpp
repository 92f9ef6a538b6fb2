// Reports through the core (report_bridge.h).
#include "report_bridge.h"

#include <QApplication>

#include <exception>
#include <memory>
#include <string>

#include "figures.h"
#include "report/report.h"
#include "util/error.h"

namespace gui {

namespace {

// Draws a result as PNG and PDF; must run on the GUI thread (a figure is a widget).
QString drawFigure(const cs::AnalysisResult& result, const QString& stem) {
  std::unique_ptr<csf::Figure> fig(csf::make_figure(result));
  if (!fig) return QStringLiteral("no figure for ") + QString::fromStdString(result.kind);
  fig->resize(fig->sizeHint());
  fig->ensurePolished();
  for (const char* ext : {".png", ".pdf"}) {
    QString err;
    if (!csf::export_figure(fig.get(), stem + QLatin1String(ext), &err)) return err;
  }
  return QString();
}

}  // namespace

QList<BundledReport> bundledReports() {
  QList<BundledReport> out;
  for (const auto& r : cs::bundled_reports())
    out << BundledReport{QString::fromStdString(r["name"].get<std::string>() + ": " + r["title"].get<std::string>()),
                         QString::fromStdString(r["path"].get<std::string>())};
  return out;
}

ReportWorker::ReportWorker(QObject* parent) : QObject(parent) {}

void ReportWorker::render(const QString& spec, const QString& out, const QString& workspace) {
  try {
    const cs::ReportSpec s = cs::load_report_spec(spec.toStdString());
    cs::ReportOptions opt;
    opt.workspace = workspace.toStdString();
    opt.on_progress = [this](int done, int total, const std::string& what) {
      Q_EMIT progress(done, total, QString::fromStdString(what));
    };
    opt.write_images = [](const cs::AnalysisResult& r, const std::string& stem) {
      QString err;
      QMetaObject::invokeMethod(
          qApp, [&] { err = drawFigure(r, QString::fromStdString(stem)); }, Qt::BlockingQueuedConnection);
      if (!err.isEmpty()) throw cs::UserError("could not draw " + stem + ": " + err.toStdString());
    };
    const cs::json m = cs::render_report(s, spec.toStdString(), out.toStdString(), opt);
    Q_EMIT finished(out, int(m["items"].size()), int(m["runs"].size()), m["images"].get<bool>());
  } catch (const std::exception& e) {
    Q_EMIT failed(QString::fromStdString(e.what()));
  }
}

}  // namespace gui
