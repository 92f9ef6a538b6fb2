// Image output of `cellscope-cli analyze` (PNG/PDF/SVG) and the redraw timing of
// `cellscope-cli bench --analysis relevance`, through the figures library
// (app/figures). Compiled into the CLI only when it is built with CELLSCOPE_GUI=ON.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryFile>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "../cli_figures.h"
#include "figures.h"
#include "util/error.h"

namespace cli {

namespace {

// A QApplication on the offscreen platform (unless QT_QPA_PLATFORM is set), created
// once, on first use: only image output pays for Qt.
QApplication* ensure_app() {
  if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance())) return app;
  if (!std::getenv("QT_QPA_PLATFORM")) ::setenv("QT_QPA_PLATFORM", "offscreen", 1);
  // Qt's harmless offscreen notices would clutter a scripted report's stderr.
  qInstallMessageHandler([](QtMsgType type, const QMessageLogContext&, const QString& msg) {
    if (msg.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR")) ||
        msg.contains(QLatin1String("does not support propagateSizeHints")))
      return;
    if (type != QtDebugMsg) std::fprintf(stderr, "%s\n", qPrintable(msg));
  });
  static int argc = 1;
  static char name[] = "cellscope-cli";
  static char* argv[] = {name, nullptr};
  // Deliberately never destroyed: destroying it from a static destructor at exit runs
  // after Qt's own globals are gone (crash in ~QInputDevice); the process is ending anyway.
  static QApplication* app = new QApplication(argc, argv);
  return app;
}

csf::FigureStyle style_of(const FigureOptions& o) {
  csf::FigureStyle s;
  if (!o.color_map.empty()) {
    const QString cm = QString::fromStdString(o.color_map);
    if (!csf::color_map_names().contains(cm))
      throw cs::UserError("unknown colour map '" + o.color_map + "' (" +
                          csf::color_map_names().join(", ").toStdString() + ")");
    s.color_map = cm;
  }
  if (o.width > 0 || o.height > 0) {
    if (o.width < 100 || o.height < 100 || o.width > 8000 || o.height > 8000)
      throw cs::UserError("--width and --height must both be between 100 and 8000 pixels");
    s.panel_size = QSize(o.width, o.height);
  }
  return s;
}

}  // namespace

bool figures_available() { return true; }

void export_analysis_figure(const cs::AnalysisResult& result, const std::string& out, const FigureOptions& opt) {
  ensure_app();
  std::unique_ptr<csf::Figure> fig(csf::make_figure(result, style_of(opt)));
  if (!fig) throw cs::UserError("no figure for analysis '" + result.kind + "'");
  fig->resize(fig->sizeHint());
  fig->ensurePolished();
  // write next to the target, then rename: never a half-written file
  const QFileInfo fi(QString::fromStdString(out));
  if (!fi.absoluteDir().exists()) throw cs::UserError("directory of '" + out + "' does not exist");
  // A name of this call's own beside the target (QTemporaryFile: created exclusively, a unique
  // suffix), never the pid-named one that a file of that name would have lost (#52).
  QTemporaryFile reserve(fi.absoluteDir().filePath(".tmp.XXXXXX." + fi.fileName()));
  reserve.setAutoRemove(false);
  if (!reserve.open()) throw cs::UserError("could not create a temporary file beside '" + out + "'");
  const QString tmp = reserve.fileName();
  reserve.close();
  QString err;
  if (!csf::export_figure(fig.get(), tmp, &err)) {
    QFile::remove(tmp);
    throw cs::UserError("could not write '" + out + "': " + err.toStdString());
  }
  if (std::rename(tmp.toStdString().c_str(), fi.absoluteFilePath().toStdString().c_str()) != 0) {
    QFile::remove(tmp);
    throw cs::UserError("could not write '" + out + "'");
  }
}

RedrawTimes figure_redraw_ms(const cs::AnalysisResult& result, int repeats) {
  ensure_app();
  RedrawTimes t;
  std::unique_ptr<csf::Figure> fig(csf::make_figure(result));
  fig->resize(fig->sizeHint());
  fig->show();  // offscreen: laid out and painted like a window
  QCoreApplication::processEvents();
  fig->replotNow();  // warm-up
  for (int i = 0; i < std::max(1, repeats); ++i) t.replot_ms.push_back(fig->replotNow());
  // a new result arriving (checkpoint slider): build the figure from the data and draw it
  for (int i = 0; i < std::max(1, repeats); ++i) {
    QElapsedTimer timer;
    timer.start();
    std::unique_ptr<csf::Figure> f2(csf::make_figure(result));
    f2->resize(fig->size());
    f2->show();
    QCoreApplication::processEvents();
    f2->replotNow();
    t.rebuild_ms.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
  }
  return t;
}

}  // namespace cli
