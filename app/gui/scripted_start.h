// The workbench's hidden start-up options for screenshots, demos and measurements: --window-size,
// --screenshot/--after-ms, --start, --resume, --tab, --show-run, --sweep, --check-all/--seed-bands,
// --analysis*, --decode*, --measure-latency (and --keep-run). Each is one entry of the step table in
// scripted_start.cpp (a new panel adds its entry there); main() only registers and applies them.
#pragma once

#include <QCommandLineOption>
#include <QList>
#include <QSize>
#include <QString>
#include <memory>

class QCommandLineParser;

namespace gui {

class MainWindow;
class LatencyProbe;

class ScriptedStart {
 public:
  // Adds the options to `p` (hidden from --help, --measure-latency and --keep-run excepted).
  explicit ScriptedStart(QCommandLineParser& p);
  ~ScriptedStart();
  ScriptedStart(const ScriptedStart&) = delete;
  ScriptedStart& operator=(const ScriptedStart&) = delete;

  // After p.process(): sizes and shows `w`, then applies every option that is set, in the table's
  // order. Returns an exit code (2: an option's value is invalid, said on stderr) when main() must
  // return at once, else -1 (run the event loop; a --screenshot or --measure-latency ends it).
  int apply(MainWindow& w);

 private:
  const QCommandLineParser& p_;
  QList<QCommandLineOption> options_;
  std::unique_ptr<LatencyProbe> probe_;
  QSize wanted_;
  bool grabScheduled_ = false;

  bool isSet(const char* name) const;
  QString value(const char* name) const;
  void grabTo(MainWindow& w, const QString& file) const;
  // With --screenshot: grab after --after-ms once `sender` emitted `signal` (a result is shown).
  template <class Sender, class Signal>
  void grabWhen(MainWindow& w, Sender* sender, Signal signal);
  int measureLatency(MainWindow& w);
  int analysis(MainWindow& w);
  int decode(MainWindow& w);
};

}  // namespace gui
