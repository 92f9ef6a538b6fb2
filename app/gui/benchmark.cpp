#include "benchmark.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTextStream>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "compare_panel.h"
#include "configure_panel.h"
#include "core_bridge.h"
#include "curve_plot.h"
#include "main_window.h"
#include "run_table.h"
#include "training_controller.h"
#include "training_panel.h"

namespace gui {

namespace {
void writeFile(const QString& path, const QByteArray& data) {
  QFile f(path);
  if (f.open(QIODevice::WriteOnly)) f.write(data);
}

// 200 small run directories: config.json, summary.json, metrics.jsonl (100 lines).
void makeFakeWorkspace(const QString& ws, int runs) {
  for (int i = 0; i < runs; ++i) {
    const QString dir = QDir(ws).filePath(QStringLiteral("20250101-%1-char_lm-gru").arg(i, 4, 10, QLatin1Char('0')));
    QDir().mkpath(dir);
    const QJsonObject cfg{
        {"task", QJsonObject{{"name", "char_lm"}}},
        {"dataset", QJsonObject{{"name", "moby-dick"}, {"max_chars", 100000}}},
        {"model", QJsonObject{{"cell", i % 2 ? "gru" : "lstm"}, {"hidden", 64 + (i % 5) * 32}, {"embed", 32}}},
        {"training", QJsonObject{{"seed", i % 3}, {"steps", 100}, {"lr", 0.001}}}};
    writeFile(dir + "/config.json", QJsonDocument(cfg).toJson());
    const QJsonObject sum{{"status", "finished"},          {"task", "char_lm"},       {"cell", "gru"},
                          {"primary_metric", "bpc"},       {"parameters", 10000 + i}, {"step", 100},
                          {"best_valid", 2.0 + i * 1e-3},  {"best_step", 100},        {"test_metric", 2.1},
                          {"mean_throughput", 5000.0 + i}, {"unit", "chars"}};
    writeFile(dir + "/summary.json", QJsonDocument(sum).toJson());
    QByteArray m;
    for (int s = 1; s <= 100; ++s)
      m +=
          QStringLiteral(
              "{\"step\":%1,\"epoch\":%2,\"elapsed\":%3,\"loss\":%4,\"bpc\":%5,\"lr\":0.001,\"grad_norm\":1.0,\"throughput\":5000}\n")
              .arg(s)
              .arg(s * 0.01)
              .arg(s * 0.1)
              .arg(3.0 - s * 0.01)
              .arg(4.3 - s * 0.014)
              .toUtf8();
    writeFile(dir + "/metrics.jsonl", m);
  }
}

double percentile(QVector<double> v, double q) {
  if (v.isEmpty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const int i = std::clamp(int(std::ceil(q * v.size())) - 1, 0, int(v.size()) - 1);
  return v[i];
}
}  // namespace

QJsonObject runBenchmark(double trainSeconds) {
  QJsonObject out;
  QTemporaryDir tmp(QDir::tempPath() + QStringLiteral("/cellscope-bench-XXXXXX"));
  const QString settings = tmp.filePath(QStringLiteral("settings.ini"));

  // ---- 1. workspace of 200 runs
  const QString bigWs = tmp.filePath(QStringLiteral("ws200"));
  makeFakeWorkspace(bigWs, 200);
  {
    WindowOptions o;
    o.workspace = tmp.filePath(QStringLiteral("empty"));
    o.settingsFile = settings;
    o.restoreLastConfig = false;
    MainWindow w(o);
    w.show();
    QApplication::processEvents();
    QElapsedTimer t;
    t.start();
    w.openWorkspace(bigWs);
    while (w.comparePanel()->runModel()->rowCount() < 200 && t.elapsed() < 10000) QApplication::processEvents();
    QApplication::processEvents();  // the table paints
    out.insert(QStringLiteral("workspace_open_ms"), double(t.nsecsElapsed()) / 1e6);
    out.insert(QStringLiteral("workspace_runs"), w.comparePanel()->runModel()->rowCount());
  }

  // ---- 2. replot of 1,000,000 points
  out.insert(QStringLiteral("replot_1m_ms"), csw::CurvePlot::benchReplotMs(1000000));

  // ---- 3. event-loop latency while a GRU trains on the worker thread
  {
    WindowOptions o;
    o.workspace = tmp.filePath(QStringLiteral("train"));
    o.settingsFile = settings;
    o.restoreLastConfig = false;
    MainWindow w(o);
    w.resize(1300, 850);
    w.show();
    QJsonObject cfg{
        {"task", QJsonObject{{"name", "char_lm"}}},
        {"model", QJsonObject{{"cell", "gru"}, {"embed", 64}, {"hidden", 256}}},
        {"training",
         QJsonObject{{"steps", 1000000}, {"batch", 32}, {"bptt", 100}, {"log_every", 1}, {"eval_every", 0}}}};
    const QString corpus = QDir(dataCacheDir()).filePath(QStringLiteral("moby-dick.txt"));
    if (QFileInfo::exists(corpus)) {
      cfg.insert(QStringLiteral("dataset"), QJsonObject{{"name", "moby-dick"}, {"max_chars", 400000}});
    } else {
      QByteArray text;
      for (int i = 0; i < 4000; ++i) text += "the quick brown fox jumps over the lazy dog; call me ishmael. ";
      writeFile(tmp.filePath(QStringLiteral("corpus.txt")), text);
      cfg.insert(QStringLiteral("dataset"), QJsonObject{{"path", tmp.filePath(QStringLiteral("corpus.txt"))}});
    }
    w.configurePanel()->applyConfig(cfg);
    w.configurePanel()->revalidateNow();
    bool started = false;
    QObject::connect(w.controller(), &TrainingController::runStarted, [&] { started = true; });
    if (!w.startTraining()) {
      out.insert(QStringLiteral("error"), w.configurePanel()->validationErrors().join(QStringLiteral("; ")));
      return out;
    }
    QElapsedTimer wait;
    wait.start();
    while (!started && w.controller()->isTraining() && wait.elapsed() < 60000)
      QApplication::processEvents(QEventLoop::AllEvents, 20);
    // let the first steps run, then sample a 10 ms timer for trainSeconds
    QEventLoop loop;
    QTimer::singleShot(1000, &loop, &QEventLoop::quit);
    loop.exec();
    QVector<double> delays;
    QElapsedTimer clock;
    clock.start();
    qint64 last = clock.nsecsElapsed();
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    tick.setInterval(10);
    QObject::connect(&tick, &QTimer::timeout, [&] {
      const qint64 now = clock.nsecsElapsed();
      delays << std::max(0.0, (now - last) / 1e6 - 10.0);  // lateness beyond the 10 ms period
      last = now;
      if (now > trainSeconds * 1e9) loop.quit();
    });
    tick.start();
    loop.exec();
    tick.stop();
    const qint64 steps = w.trainingPanel()->plot(QStringLiteral("metric"))->pointCount(QStringLiteral("train"));
    out.insert(QStringLiteral("latency_p99_ms"), percentile(delays, 0.99));
    out.insert(QStringLiteral("latency_p50_ms"), percentile(delays, 0.50));
    out.insert(QStringLiteral("latency_max_ms"), percentile(delays, 1.0));
    out.insert(QStringLiteral("latency_samples"), delays.size());
    out.insert(QStringLiteral("train_steps_during_sampling"), steps);
    out.insert(QStringLiteral("train_threads"), std::max(1, QThread::idealThreadCount() - 1));
    out.insert(QStringLiteral("train_error"), w.controller()->lastError());
    w.controller()->stop();
    wait.restart();
    while (w.controller()->isTraining() && wait.elapsed() < 60000)
      QApplication::processEvents(QEventLoop::AllEvents, 20);
  }
  out.insert(QStringLiteral("goal_latency_p99_ms"), 30);
  out.insert(QStringLiteral("goal_replot_ms"), 50);
  out.insert(QStringLiteral("goal_workspace_open_ms"), 1000);
  return out;
}

int benchmarkMain(bool json) {
  const QJsonObject r = runBenchmark(10.0);
  QTextStream o(stdout);
  if (json) {
    o << QJsonDocument(r).toJson(QJsonDocument::Compact) << "\n";
  } else {
    auto ok = [](double v, double goal) { return v < goal ? "ok" : "OVER GOAL"; };
    const double p99 = r.value("latency_p99_ms").toDouble(), rp = r.value("replot_1m_ms").toDouble(),
                 ws = r.value("workspace_open_ms").toDouble();
    o << QStringLiteral(
             "event-loop latency while training (10 ms timer, %1 samples, %2 training steps, %3 thread(s))\n")
             .arg(r.value("latency_samples").toInt())
             .arg(r.value("train_steps_during_sampling").toInt())
             .arg(r.value("train_threads").toInt())
      << QStringLiteral("  p50 %1 ms   p99 %2 ms   max %3 ms   (goal p99 < 30 ms: %4)\n")
             .arg(r.value("latency_p50_ms").toDouble(), 0, 'f', 2)
             .arg(p99, 0, 'f', 2)
             .arg(r.value("latency_max_ms").toDouble(), 0, 'f', 2)
             .arg(QString::fromLatin1(ok(p99, 30)))
      << QStringLiteral("replot of a 1,000,000-point curve: %1 ms (goal < 50 ms: %2)\n")
             .arg(rp, 0, 'f', 2)
             .arg(QString::fromLatin1(ok(rp, 50)))
      << QStringLiteral("open a workspace of %1 runs: %2 ms (goal < 1000 ms: %3)\n")
             .arg(r.value("workspace_runs").toInt())
             .arg(ws, 0, 'f', 1)
             .arg(QString::fromLatin1(ok(ws, 1000)));
    if (!r.value("train_error").toString().isEmpty())
      o << "training error: " << r.value("train_error").toString() << "\n";
    if (r.contains("error")) o << "error: " << r.value("error").toString() << "\n";
  }
  return r.contains("error") ? 1 : 0;
}

}  // namespace gui
