// cellscope: the workbench window. Everything but argument handling lives in
// the cellscope_app library (main_window.cpp and friends).
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QTextStream>

#include <cstdio>
#include <cstring>

#include "benchmark.h"
#include "configure_panel.h"
#include "core_bridge.h"
#include "main_window.h"
#include "scripted_start.h"

int main(int argc, char** argv) {
  gui::installCpuCache();  // large CPU blocks reused rather than page-faulted in every step (util/cpu_cache.h)
  // --benchmark, --help and --version need no display: fall back to the offscreen platform.
  bool headless = false;
  for (int i = 1; i < argc; ++i)
    for (const char* a : {"--benchmark", "--help", "-h", "--help-all", "--version", "-v"})
      headless = headless || std::strcmp(argv[i], a) == 0;
  if (headless && qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
      qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
    qputenv("QT_QPA_PLATFORM", "offscreen");
  if (!headless && qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
      qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    std::fprintf(stderr,
                 "cellscope: no display ($DISPLAY and $WAYLAND_DISPLAY are unset). Start it from a graphical "
                 "session, under xvfb-run, or use cellscope-cli for headless work.\n");
    return 2;
  }

  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("Cellscope"));
  QApplication::setOrganizationName(QStringLiteral("Cellscope"));
  QApplication::setApplicationVersion(QStringLiteral(CELLSCOPE_VERSION));

  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral("Cellscope workbench: configure, train and compare recurrent cells."));
  p.addHelpOption();
  p.addVersionOption();
  QCommandLineOption dataset(QStringLiteral("dataset"), QStringLiteral("Preselect the manifest dataset NAME."),
                             QStringLiteral("NAME"));
  QCommandLineOption workspace(
      QStringLiteral("workspace"),
      QStringLiteral(
          "Folder of runs (default: $CELLSCOPE_WORKSPACE or the last one used, else ~/.local/share/cellscope/runs)."),
      QStringLiteral("DIR"));
  QCommandLineOption benchmark(
      QStringLiteral("benchmark"),
      QStringLiteral("Measure GUI latency while training, replot time and workspace open time, then exit."));
  QCommandLineOption json(QStringLiteral("json"), QStringLiteral("With --benchmark: print JSON."));
  QCommandLineOption preset(QStringLiteral("preset"), QStringLiteral("Load a preset."), QStringLiteral("NAME"));
  QCommandLineOption set(QStringLiteral("set"),
                         QStringLiteral("Set a config value, e.g. model.hidden=128 (repeatable)."),
                         QStringLiteral("PATH=VALUE"));
  p.addOptions({dataset, workspace, benchmark, json, preset, set});
  gui::ScriptedStart script(p);  // the hidden options for screenshots, demos and measurements
  p.process(app);

  if (p.isSet(benchmark)) return gui::benchmarkMain(p.isSet(json));

  gui::WindowOptions o;
  o.workspace = p.value(workspace);
  o.dataset = p.value(dataset);
  gui::MainWindow w(o);
  if (p.isSet(preset) && !w.configurePanel()->applyPreset(p.value(preset))) {
    QTextStream(stderr) << "cellscope: no preset '" << p.value(preset) << "'\n";
    return 2;
  }
  for (const QString& s : p.values(set)) {
    const int eq = s.indexOf(QLatin1Char('='));
    if (eq <= 0 || !w.configurePanel()->setConfigValue(s.left(eq), s.mid(eq + 1))) {
      QTextStream(stderr) << "cellscope: cannot set '" << s << "'\n";
      return 2;
    }
  }
  if (const int rc = script.apply(w); rc >= 0) return rc;
  return app.exec();
}
