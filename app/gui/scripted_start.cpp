#include "scripted_start.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QTextStream>
#include <QTimer>

#include "analysis_panel.h"
#include "compare_panel.h"
#include "configure_panel.h"
#include "curve_plot.h"
#include "decode_panel.h"
#include "generate_panel.h"
#include "latency_probe.h"
#include "main_window.h"
#include "run_actions.h"
#include "run_table.h"
#include "sweep_panel.h"
#include "training_controller.h"
#include "training_panel.h"

namespace gui {

namespace {

struct OptionRow {
  const char* name;
  const char* valueName;  // nullptr: a flag
  const char* help;
  const char* defaultValue;
  bool hidden;
};

// Every scripted option once: its name, value, help and whether --help lists it.
const OptionRow kOptions[] = {
    {"window-size", "WxH", "Window size WIDTHxHEIGHT (e.g. 1024x700), for --screenshot.", nullptr, true},
    {"screenshot", "FILE", "Save a screenshot of the window to FILE and quit.", nullptr, true},
    {"after-ms", "N", "Delay before --screenshot.", "3000", true},
    {"start", nullptr, "Start training at once.", nullptr, true},
    {"resume", "DIR", "Resume this stopped run (as Run > Resume).", nullptr, true},
    {"tab", "TAB", "training, compare, or any tab by its title.", nullptr, true},
    {"check-all", nullptr, "Tick every run of the workspace for comparison.", nullptr, true},
    {"seed-bands", nullptr, "Aggregate seeds in the comparison.", nullptr, true},
    {"sweep", "DIR", "Open this sweep directory in the Sweeps tab.", nullptr, true},
    {"show-run", "DIR", "Show this finished run's curves in the Training tab.", nullptr, true},
    {"measure-latency", "SECONDS",
     "Sample the event loop's latency with a 5 ms timer for SECONDS, print p50/p99/max and exit; with --start while "
     "the run trains (from 2 s after it started; the run is stopped at the end), without it in the idle window (a "
     "control).",
     nullptr, false},
    {"keep-run", nullptr,
     "With --measure-latency --start: keep the run the measurement trained (by default it is removed once the "
     "measurement has stopped it: a run nobody asked for would stay in the workspace's tables).",
     nullptr, false},
    // Analyses tab: computed at start; with --screenshot the window is grabbed once the result is shown.
    {"analysis", "KIND", "Open the Analyses tab and compute KIND.", nullptr, true},
    {"analysis-run", "DIR", "Run to analyse.", nullptr, true},
    {"analysis-run2", "DIR", "Second run.", nullptr, true},
    {"analysis-text", "TEXT", "Text.", nullptr, true},
    {"analysis-k", "N", "Last K.", nullptr, true},
    {"analysis-position", "I", "Character index (aoa: the question index).", nullptr, true},
    {"analysis-checkpoint", "ID", "Checkpoint id.", nullptr, true},
    {"analysis-cmap", "NAME", "Colour map.", nullptr, true},
    // Decode tab: CHECKPOINTS comma-separated (best,last,step_N); decoded at start; with --screenshot
    // the window is grabbed once it is done.
    {"decode", "LIST", "Open the Decode tab and decode these checkpoints.", nullptr, true},
    {"decode-run", "DIR", "Run to decode.", nullptr, true},
    {"decode-examples", "N", "Examples to decode.", nullptr, true},
};

}  // namespace

ScriptedStart::ScriptedStart(QCommandLineParser& p) : p_(p), probe_(std::make_unique<LatencyProbe>(5)) {
  for (const OptionRow& r : kOptions) {
    QCommandLineOption o(QString::fromLatin1(r.name), QString::fromUtf8(r.help));
    if (r.valueName) o.setValueName(QString::fromLatin1(r.valueName));
    if (r.defaultValue) o.setDefaultValue(QString::fromLatin1(r.defaultValue));
    if (r.hidden) o.setFlags(QCommandLineOption::HiddenFromHelp);
    options_.append(o);
  }
  p.addOptions(options_);
}

ScriptedStart::~ScriptedStart() = default;

bool ScriptedStart::isSet(const char* name) const { return p_.isSet(QString::fromLatin1(name)); }
QString ScriptedStart::value(const char* name) const { return p_.value(QString::fromLatin1(name)); }

// The grab is the window at its size; a window that cannot shrink to the size asked is said.
void ScriptedStart::grabTo(MainWindow& w, const QString& file) const {
  if (wanted_.isValid() && w.size() != wanted_)
    QTextStream(stderr) << "cellscope: the window is " << w.width() << "x" << w.height() << ", not " << wanted_.width()
                        << "x" << wanted_.height() << " (its minimum size is " << w.minimumSizeHint().width() << "x"
                        << w.minimumSizeHint().height() << ")\n";
  w.grab().save(file);
  QTextStream(stdout) << "screenshot: " << file << " (" << w.width() << "x" << w.height() << ")\n";
}

template <class Sender, class Signal>
void ScriptedStart::grabWhen(MainWindow& w, Sender* sender, Signal signal) {
  if (!isSet("screenshot")) return;
  grabScheduled_ = true;
  const QString file = value("screenshot");
  const int delay = value("after-ms").toInt();
  QObject::connect(sender, signal, &w, [this, &w, file, delay] {
    QTimer::singleShot(delay, &w, [this, &w, file] {
      grabTo(w, file);
      QApplication::exit(0);
    });
  });
}

int ScriptedStart::apply(MainWindow& w) {
  if (isSet("window-size")) {
    const QStringList wh = value("window-size").split(QLatin1Char('x'));
    const int ww = wh.size() == 2 ? wh[0].toInt() : 0, hh = wh.size() == 2 ? wh[1].toInt() : 0;
    if (ww <= 0 || hh <= 0) {
      QTextStream(stderr) << "cellscope: --window-size expects WIDTHxHEIGHT, e.g. 1024x700\n";
      return 2;
    }
    wanted_ = QSize(ww, hh);
    w.resize(wanted_);  // the saved geometry does not apply
  }
  w.show();
  if (wanted_.isValid()) w.resize(wanted_);

  ComparePanel* cmp = w.comparePanel();
  if (isSet("check-all"))
    for (const auto& r : cmp->runModel()->runs()) cmp->runModel()->setChecked(r.dir, true);
  if (isSet("seed-bands")) cmp->setSeedAggregation(true);
  if (isSet("sweep") && w.sweepPanel()->openSweep(value("sweep"))) w.showPanel(w.sweepPanel());
  if (isSet("show-run")) w.showRunInTrainingView(value("show-run"));
  // any tab by its title (training, compare, generate, ...)
  const QString tab = value("tab");
  if (!tab.isEmpty()) w.showPanel(tab);
  if (tab == QLatin1String("generate") && !w.generatePanel()->runDirs().isEmpty())
    QTimer::singleShot(0, w.generatePanel(), &GeneratePanel::generate);
  if (tab == QLatin1String("compare") && cmp->runProxy()->rowCount() >= 2) cmp->selectRows({0, 1});
  if (isSet("start"))
    QTimer::singleShot(0, &w, [&w] {
      w.configurePanel()->revalidateNow();
      w.startTraining();
    });
  if (isSet("resume"))
    QTimer::singleShot(0, &w, [&w, dir = value("resume")] {
      QString error;
      if (!w.runActions()->resume(dir, &error)) QTextStream(stderr) << "cellscope: --resume: " << error << "\n";
    });
  for (int (ScriptedStart::*step)(MainWindow&) :
       {&ScriptedStart::measureLatency, &ScriptedStart::analysis, &ScriptedStart::decode})
    if (const int rc = (this->*step)(w); rc >= 0) return rc;
  if (isSet("screenshot") && !grabScheduled_)
    QTimer::singleShot(value("after-ms").toInt(), &w, [this, &w, file = value("screenshot")] {
      grabTo(w, file);
      QApplication::exit(0);
    });
  return -1;
}

int ScriptedStart::measureLatency(MainWindow& w) {
  if (!isSet("measure-latency")) return -1;
  bool ok = false;
  const double secs = value("measure-latency").toDouble(&ok);
  if (!ok || secs <= 0) {
    QTextStream(stderr) << "cellscope: --measure-latency expects SECONDS > 0\n";
    return 2;
  }
  LatencyProbe* probe = probe_.get();
  auto* plot = w.trainingPanel()->plot(QStringLiteral("metric"));
  auto stepsBefore = std::make_shared<qint64>(0);
  // The run --start made for the measurement (its folder as runStarted reported it; only that
  // folder is ever removed, and only once the run has stopped).
  auto runDir = std::make_shared<QString>();
  const bool keepRun = isSet("keep-run");
  if (isSet("start"))
    QObject::connect(w.controller(), &TrainingController::runStarted, &w,
                     [runDir](const QString& dir) { *runDir = dir; });
  auto finish = [&w, probe, plot, stepsBefore, secs, runDir, keepRun](int code, const QString& why) {
    probe->stop();
    const LatencySummary s = probe->summary();
    const qint64 steps = plot->pointCount(QStringLiteral("train")) - *stepsBefore;
    QTextStream o(stdout);
    if (!why.isEmpty()) o << "cellscope: " << why << "\n";
    o << QStringLiteral("event-loop latency %6 (%1 ms timer, %2 s, %3 samples, %4 training log points)\n")
             .arg(probe->periodMs())
             .arg(secs)
             .arg(s.samples)
             .arg(steps)
             .arg(w.controller()->isTraining() ? QStringLiteral("while training") : QStringLiteral("(no run training)"))
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
    QObject::connect(poll, &QTimer::timeout, &w, [&w, code, poll, runDir, keepRun] {
      if (w.controller()->isTraining()) return;
      poll->stop();
      if (!runDir->isEmpty() && QFileInfo(*runDir).isDir()) {
        QTextStream out(stdout);
        if (keepRun) {
          out << "cellscope: the measurement's run is kept: " << *runDir << "\n";
        } else if (QDir(*runDir).removeRecursively()) {
          out << "cellscope: removed the measurement's run " << *runDir << " (--keep-run keeps it)\n";
        } else {
          QTextStream(stderr) << "cellscope: could not remove the measurement's run " << *runDir << "\n";
        }
      }
      QApplication::exit(code);
    });
    poll->start(50);
  };
  auto begin = [&w, probe, plot, stepsBefore, secs, finish] {
    QTimer::singleShot(2000, &w, [probe, plot, stepsBefore, secs, finish, &w] {
      *stepsBefore = plot->pointCount(QStringLiteral("train"));
      probe->start();
      QTimer::singleShot(int(secs * 1000), &w, [finish] { finish(0, QString()); });
    });
  };
  // With --start: while the run trains; without: the idle window (the control measurement).
  if (isSet("start")) QObject::connect(w.controller(), &TrainingController::runStarted, &w, begin);
  else QTimer::singleShot(0, &w, begin);
  QObject::connect(w.controller(), &TrainingController::runFailed, &w,
                   [finish](const QString& m) { finish(1, QStringLiteral("the run failed: ") + m); });
  return -1;
}

int ScriptedStart::analysis(MainWindow& w) {
  if (!isSet("analysis")) return -1;
  AnalysisPanel* a = w.analysisPanel();
  w.showPanel(a);
  if (isSet("analysis-run")) a->selectRun(value("analysis-run"));
  a->setKind(value("analysis"));
  if (isSet("analysis-run2")) a->selectSecondRun(value("analysis-run2"));
  if (isSet("analysis-text")) a->setText(value("analysis-text"));
  if (isSet("analysis-k")) a->setLastK(value("analysis-k").toInt());
  if (isSet("analysis-position")) a->setPosition(value("analysis-position").toInt());
  if (isSet("analysis-cmap")) a->setColorMap(value("analysis-cmap"));
  if (isSet("analysis-checkpoint"))
    for (int i = 0; i < a->checkpoints().size(); ++i)
      if (a->checkpoints()[i].id == value("analysis-checkpoint")) a->checkpointSlider()->setValue(i);
  QTimer::singleShot(0, a, [a] { a->compute(); });
  grabWhen(w, a, &AnalysisPanel::computed);
  return -1;
}

int ScriptedStart::decode(MainWindow& w) {
  if (!isSet("decode")) return -1;
  DecodePanel* d = w.decodePanel();
  w.showPanel(d);
  if (isSet("decode-run") && !d->selectRun(value("decode-run"))) {
    QTextStream(stderr) << "cellscope: no seq2seq run with checkpoints at '" << value("decode-run") << "'\n";
    return 2;
  }
  DecodeJob j = d->job();
  j.checkpoints = value("decode").split(QLatin1Char(','), Qt::SkipEmptyParts);
  if (isSet("decode-examples")) j.maxExamples = value("decode-examples").toInt();
  d->setJob(j);
  QTimer::singleShot(0, d, [d] { d->decode(); });
  grabWhen(w, d, &DecodePanel::finished);
  return -1;
}

}  // namespace gui
