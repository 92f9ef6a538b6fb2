// The Analyses tab's window onto core/inspect/analysis (kinds.h). Torch-free: Qt value
// types, plus a shared pointer to the core's plain result (cs::AnalysisResult,
// only forward-declared here) which figure_bridge.h turns into a figure
// (app/figures). Computation runs on an AnalysisWorker moved to a QThread (see
// analysis_panel.cpp); jobs and outcomes are plain structs copied across threads.
#pragma once
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include <memory>

namespace cs {
struct AnalysisResult;
}

namespace gui {

// cs::AnalysisKind as Qt values: which inputs the kind reads, what it accepts.
struct AnalysisKindInfo {
  QString name, title, help, caption;
  QStringList tasks;
  QStringList cells;  // model.cell (or an MC-RNN's model.base) it applies to; empty: any (cs::AnalysisKind::cells)
  bool needsText = false, usesLastK = false, usesPosition = false, usesSplit = false, usesEdges = false,
       usesBins = false;
  bool multiRun = false, overTraining = false;
  bool colourMap = false;  // heatmaps: the colour-map choice applies
  QString defaultSplit = QStringLiteral("test");
};
QList<AnalysisKindInfo> analysisKinds();
// Whether a kind applies to a run with this model.cell and model.base (cs::analysis_applies_to_cell).
bool kindAppliesToCell(const AnalysisKindInfo& k, const QString& cell, const QString& base);

// What AnalysisRequest::position means for a kind, as its input shows it: the index of
// a character of the text (zone relevance, composition; -1 = the last one), or, for the
// attention-over-attention view of a cloze run, the index of a question of the split
// (0 = the first; the CLI's `analyze aoa --question N`).
struct PositionInput {
  QString label;  // the form label, with its mnemonic ("C&haracter", "&Question")
  QString toolTip;
  int minimum = -1;
  QString specialValueText;  // shown at the minimum ("last"), empty for none
};
PositionInput positionInputFor(const QString& kind);

// cs::CheckpointInfo as Qt values.
struct CheckpointEntry {
  QString id;  // "step_100", "best", "last"
  qint64 step = -1;
  QString label;
  bool best = false, last = false;
};
// The run's step_N checkpoints in step order (then last/best when their step is
// not among them: "best" at the step of a step_N checkpoint is that stop, labelled
// "step 100 (best)"; likewise "last"). Empty (and *error set) when the run has none or on failure.
QList<CheckpointEntry> runCheckpoints(const QString& runDir, QString* error = nullptr);

// Default length-bucket edges for a task ("char_lm", "word_lm", ...).
QVector<qint64> defaultEdges(const QString& task);

// One computation (cs::AnalysisRequest as Qt values).
struct AnalysisJob {
  quint64 id = 0;
  enum class Type { Analysis, DefaultText } type = Type::Analysis;
  QString kind;
  QStringList runs;
  QString checkpoint = QStringLiteral("best");
  // Per-run checkpoints (same order as runs); empty = `checkpoint` for every run
  // (cs::AnalysisRequest::checkpoints: one text and one data set for all the runs, the
  // caption naming each run's step and warning when they differ).
  QStringList checkpoints;
  QString text;
  qint64 lastK = 10;
  qint64 position = -1;
  int layer = -1;
  QString split = QStringLiteral("test");
  QVector<qint64> edges;
  int bins = 20;
  QString metric;
};

struct AnalysisOutcome {
  quint64 id = 0;
  AnalysisJob job;
  bool ok = false;
  QString error;                                     // one clear message when !ok
  QString text;                                      // DefaultText jobs: the text
  std::shared_ptr<const cs::AnalysisResult> result;  // Analysis jobs
  double seconds = 0;                                // compute wall time
};

// Runs a job synchronously (any thread). Never throws: errors land in the outcome.
AnalysisOutcome runAnalysisJob(const AnalysisJob& job);

// Lives on a worker thread (moveToThread); compute() is invoked through a queued
// connection/QMetaObject::invokeMethod and answers with finished().
class AnalysisWorker : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
 public Q_SLOTS:
  void compute(const gui::AnalysisJob& job);
 Q_SIGNALS:
  void finished(const gui::AnalysisOutcome& outcome);
};

}  // namespace gui

Q_DECLARE_METATYPE(gui::AnalysisJob)
Q_DECLARE_METATYPE(gui::AnalysisOutcome)
