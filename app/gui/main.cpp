// cellscope: the workbench window. Everything but argument handling lives in
// the cellscope_app library (main_window.cpp and friends).
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QTextStream>
#include <QTimer>

#include <cstdio>
#include <cstring>
#include <memory>

#include "benchmark.h"
#include "util/cpu_cache.h"
#include "analysis_panel.h"
#include "compare_panel.h"
#include "configure_panel.h"
#include "decode_panel.h"
#include "generate_panel.h"
#include "latency_probe.h"
#include "main_window.h"
#include "run_actions.h"
#include "run_table.h"
#include "sweep_panel.h"
#include "training_controller.h"
#include "training_panel.h"
#include "curve_plot.h"

int main(int argc, char** argv) {
  cs::install_cpu_cache();  // large CPU blocks reused rather than page-faulted in every step (util/cpu_cache.h)
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
  // Hidden helpers for screenshots and demos.
  QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                QStringLiteral("Save a screenshot of the window to FILE and quit."),
                                QStringLiteral("FILE"));
  QCommandLineOption windowSize(QStringLiteral("window-size"),
                                QStringLiteral("Window size WIDTHxHEIGHT (e.g. 1024x700), for --screenshot."),
                                QStringLiteral("WxH"));
  QCommandLineOption afterMs(QStringLiteral("after-ms"), QStringLiteral("Delay before --screenshot."),
                             QStringLiteral("N"), QStringLiteral("3000"));
  QCommandLineOption start(QStringLiteral("start"), QStringLiteral("Start training at once."));
  QCommandLineOption measureLatency(
      QStringLiteral("measure-latency"),
      QStringLiteral("Sample the event loop's latency with a 5 ms timer for SECONDS, print p50/p99/max and exit; with "
                     "--start while the run trains (from 2 s after it started; the run is stopped at the end), "
                     "without it in the idle window (a control)."),
      QStringLiteral("SECONDS"));
  QCommandLineOption tab(QStringLiteral("tab"), QStringLiteral("training, compare, or any tab by its title."),
                         QStringLiteral("TAB"));
  QCommandLineOption checkAll(QStringLiteral("check-all"),
                              QStringLiteral("Tick every run of the workspace for comparison."));
  QCommandLineOption seedBands(QStringLiteral("seed-bands"), QStringLiteral("Aggregate seeds in the comparison."));
  // Analyses tab: --analysis KIND [--analysis-run DIR] [--analysis-run2 DIR] [--analysis-text T]
  // [--analysis-k N] [--analysis-position I] [--analysis-checkpoint ID] [--analysis-cmap NAME]: computed at
  // start; with --screenshot the window is grabbed once the result is shown.
  QCommandLineOption anKind(QStringLiteral("analysis"), QStringLiteral("Open the Analyses tab and compute KIND."),
                            QStringLiteral("KIND"));
  QCommandLineOption anRun(QStringLiteral("analysis-run"), QStringLiteral("Run to analyse."), QStringLiteral("DIR"));
  QCommandLineOption anRun2(QStringLiteral("analysis-run2"), QStringLiteral("Second run."), QStringLiteral("DIR"));
  QCommandLineOption anText(QStringLiteral("analysis-text"), QStringLiteral("Text."), QStringLiteral("TEXT"));
  QCommandLineOption anK(QStringLiteral("analysis-k"), QStringLiteral("Last K."), QStringLiteral("N"));
  QCommandLineOption anPos(QStringLiteral("analysis-position"),
                           QStringLiteral("Character index (aoa: the question index)."), QStringLiteral("I"));
  QCommandLineOption anCk(QStringLiteral("analysis-checkpoint"), QStringLiteral("Checkpoint id."),
                          QStringLiteral("ID"));
  QCommandLineOption sweepDir(QStringLiteral("sweep"), QStringLiteral("Open this sweep directory in the Sweeps tab."),
                              QStringLiteral("DIR"));
  QCommandLineOption anCmap(QStringLiteral("analysis-cmap"), QStringLiteral("Colour map."), QStringLiteral("NAME"));
  // Decode tab: --decode CHECKPOINTS (comma-separated: best,last,step_N) [--decode-run DIR]
  // [--decode-examples N]: decoded at start; with --screenshot the window is grabbed once it is done.
  QCommandLineOption decodeCk(QStringLiteral("decode"),
                              QStringLiteral("Open the Decode tab and decode these checkpoints."),
                              QStringLiteral("LIST"));
  QCommandLineOption decodeRun(QStringLiteral("decode-run"), QStringLiteral("Run to decode."), QStringLiteral("DIR"));
  QCommandLineOption decodeExamples(QStringLiteral("decode-examples"), QStringLiteral("Examples to decode."),
                                    QStringLiteral("N"));
  QCommandLineOption showRun(QStringLiteral("show-run"),
                             QStringLiteral("Show this finished run's curves in the Training tab."),
                             QStringLiteral("DIR"));
  QCommandLineOption resumeOpt(QStringLiteral("resume"), QStringLiteral("Resume this stopped run (as Run > Resume)."),
                               QStringLiteral("DIR"));
  for (auto* o : {&resumeOpt, &showRun, &decodeCk, &decodeRun, &decodeExamples, &sweepDir,  &screenshot, &windowSize,
                  &afterMs, &start,    &tab,       &checkAll,       &seedBands, &anKind,     &anRun,
                  &anRun2,  &anText,   &anK,       &anPos,          &anCk,      &anCmap})
    o->setFlags(QCommandLineOption::HiddenFromHelp);
  p.addOptions({dataset, workspace, benchmark, json, preset, set, screenshot, windowSize, afterMs, start, tab, checkAll,
                seedBands});
  p.addOption(measureLatency);
  p.addOptions({anKind, anRun, anRun2, anText, anK, anPos, anCk, anCmap, sweepDir, decodeCk, decodeRun, decodeExamples,
                showRun, resumeOpt});
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
  QSize wantedSize;
  if (p.isSet(windowSize)) {
    const QStringList wh = p.value(windowSize).split(QLatin1Char('x'));
    const int ww = wh.size() == 2 ? wh[0].toInt() : 0, hh = wh.size() == 2 ? wh[1].toInt() : 0;
    if (ww <= 0 || hh <= 0) {
      QTextStream(stderr) << "cellscope: --window-size expects WIDTHxHEIGHT, e.g. 1024x700\n";
      return 2;
    }
    wantedSize = QSize(ww, hh);
    w.resize(wantedSize);  // the saved geometry does not apply
  }
  w.show();
  if (wantedSize.isValid()) w.resize(wantedSize);
  // The grab is the window at its size; a window that cannot shrink to the size asked is said.
  auto grabTo = [&w, wantedSize](const QString& file) {
    if (wantedSize.isValid() && w.size() != wantedSize)
      QTextStream(stderr) << "cellscope: the window is " << w.width() << "x" << w.height() << ", not "
                          << wantedSize.width() << "x" << wantedSize.height() << " (its minimum size is "
                          << w.minimumSizeHint().width() << "x" << w.minimumSizeHint().height() << ")\n";
    w.grab().save(file);
    QTextStream(stdout) << "screenshot: " << file << " (" << w.width() << "x" << w.height() << ")\n";
  };
  if (p.isSet(checkAll))
    for (const auto& r : w.comparePanel()->runModel()->runs()) w.comparePanel()->runModel()->setChecked(r.dir, true);
  if (p.isSet(seedBands)) w.comparePanel()->setSeedAggregation(true);
  if (p.isSet(sweepDir))
    if (w.sweepPanel()->openSweep(p.value(sweepDir))) w.showPanel(w.sweepPanel());
  if (p.isSet(showRun)) w.showRunInTrainingView(p.value(showRun));
  // any tab by its title (training, compare, generate, ...)
  if (!p.value(tab).isEmpty()) w.showPanel(p.value(tab));
  if (p.value(tab) == QLatin1String("generate") && !w.generatePanel()->runDirs().isEmpty())
    QTimer::singleShot(0, w.generatePanel(), &gui::GeneratePanel::generate);
  if (p.value(tab) == QLatin1String("compare")) {
    if (w.comparePanel()->runProxy()->rowCount() >= 2) w.comparePanel()->selectRows({0, 1});
  }
  if (p.isSet(start)) QTimer::singleShot(0, &w, [&w] { w.configurePanel()->revalidateNow(); w.startTraining(); });
  if (p.isSet(resumeOpt))
    QTimer::singleShot(0, &w, [&w, dir = p.value(resumeOpt)] {
      QString error;
      if (!w.runActions()->resume(dir, &error)) QTextStream(stderr) << "cellscope: --resume: " << error << "\n";
    });
  gui::LatencyProbe probe(5);
  if (p.isSet(measureLatency)) {
    bool ok = false;
    const double secs = p.value(measureLatency).toDouble(&ok);
    if (!ok || secs <= 0) {
      QTextStream(stderr) << "cellscope: --measure-latency expects SECONDS > 0\n";
      return 2;
    }
    auto* plot = w.trainingPanel()->plot(QStringLiteral("metric"));
    auto stepsBefore = std::make_shared<qint64>(0);
    auto finish = [&w, &probe, plot, stepsBefore, secs](int code, const QString& why) {
      probe.stop();
      const gui::LatencySummary s = probe.summary();
      const qint64 steps = plot->pointCount(QStringLiteral("train")) - *stepsBefore;
      QTextStream o(stdout);
      if (!why.isEmpty()) o << "cellscope: " << why << "\n";
      o << QStringLiteral("event-loop latency %6 (%1 ms timer, %2 s, %3 samples, %4 training log points)\n")
               .arg(probe.periodMs())
               .arg(secs)
               .arg(s.samples)
               .arg(steps)
               .arg(w.controller()->isTraining() ? QStringLiteral("while training")
                                                 : QStringLiteral("(no run training)"))
        << QStringLiteral("  p50 %1 ms   p99 %2 ms   max %3 ms   mean %4 ms\n")
               .arg(s.p50_ms, 0, 'f', 2)
               .arg(s.p99_ms, 0, 'f', 2)
               .arg(s.max_ms, 0, 'f', 2)
               .arg(s.mean_ms, 0, 'f', 2)
        << QStringLiteral(
               "{\"latency_p50_ms\":%1,\"latency_p99_ms\":%2,\"latency_max_ms\":%3,\"samples\":%4,\"train_steps\":%5}\n")
               .arg(s.p50_ms)
               .arg(s.p99_ms)
               .arg(s.max_ms)
               .arg(s.samples)
               .arg(steps);
      o.flush();
      w.controller()->stop();
      auto* poll = new QTimer(&w);
      QObject::connect(poll, &QTimer::timeout, &w, [&w, code] {
        if (!w.controller()->isTraining()) QApplication::exit(code);
      });
      poll->start(50);
    };
    auto begin = [&w, &probe, plot, stepsBefore, secs, finish] {
      QTimer::singleShot(2000, &w, [&probe, plot, stepsBefore, secs, finish, &w] {
        *stepsBefore = plot->pointCount(QStringLiteral("train"));
        probe.start();
        QTimer::singleShot(int(secs * 1000), &w, [finish] { finish(0, QString()); });
      });
    };
    // With --start: while the run trains; without: the idle window (the control measurement).
    if (p.isSet(start)) QObject::connect(w.controller(), &gui::TrainingController::runStarted, &w, begin);
    else QTimer::singleShot(0, &w, begin);
    QObject::connect(w.controller(), &gui::TrainingController::runFailed, &w,
                     [finish](const QString& m) { finish(1, QStringLiteral("the run failed: ") + m); });
  }
  bool waitForAnalysis = false;
  if (p.isSet(anKind)) {
    gui::AnalysisPanel* a = w.analysisPanel();
    w.showPanel(a);
    if (p.isSet(anRun)) a->selectRun(p.value(anRun));
    a->setKind(p.value(anKind));
    if (p.isSet(anRun2)) a->selectSecondRun(p.value(anRun2));
    if (p.isSet(anText)) a->setText(p.value(anText));
    if (p.isSet(anK)) a->setLastK(p.value(anK).toInt());
    if (p.isSet(anPos)) a->setPosition(p.value(anPos).toInt());
    if (p.isSet(anCmap)) a->setColorMap(p.value(anCmap));
    if (p.isSet(anCk))
      for (int i = 0; i < a->checkpoints().size(); ++i)
        if (a->checkpoints()[i].id == p.value(anCk)) a->checkpointSlider()->setValue(i);
    QTimer::singleShot(0, a, [a] { a->compute(); });
    if (p.isSet(screenshot)) {
      waitForAnalysis = true;
      const QString file = p.value(screenshot);
      const int delay = p.value(afterMs).toInt();
      QObject::connect(a, &gui::AnalysisPanel::computed, &w, [&w, file, delay, grabTo] {
        QTimer::singleShot(delay, &w, [file, grabTo] {
          grabTo(file);
          QApplication::exit(0);
        });
      });
    }
  }
  if (p.isSet(decodeCk)) {
    gui::DecodePanel* d = w.decodePanel();
    w.showPanel(d);
    if (p.isSet(decodeRun) && !d->selectRun(p.value(decodeRun))) {
      QTextStream(stderr) << "cellscope: no seq2seq run with checkpoints at '" << p.value(decodeRun) << "'\n";
      return 2;
    }
    gui::DecodeJob j = d->job();
    j.checkpoints = p.value(decodeCk).split(QLatin1Char(','), Qt::SkipEmptyParts);
    if (p.isSet(decodeExamples)) j.maxExamples = p.value(decodeExamples).toInt();
    d->setJob(j);
    QTimer::singleShot(0, d, [d] { d->decode(); });
    if (p.isSet(screenshot)) {
      waitForAnalysis = true;
      const QString file = p.value(screenshot);
      const int delay = p.value(afterMs).toInt();
      QObject::connect(d, &gui::DecodePanel::finished, &w, [&w, file, delay, grabTo] {
        QTimer::singleShot(delay, &w, [file, grabTo] {
          grabTo(file);
          QApplication::exit(0);
        });
      });
    }
  }
  if (p.isSet(screenshot) && !waitForAnalysis) {
    const QString file = p.value(screenshot);
    QTimer::singleShot(p.value(afterMs).toInt(), &w, [file, grabTo] {
      grabTo(file);
      QApplication::exit(0);
    });
  }
  return app.exec();
}
