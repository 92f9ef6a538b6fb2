#include "analysis_bridge.h"

#include <QElapsedTimer>

#include <algorithm>
#include <exception>
#include <limits>

#include "analysis/kinds.h"
#include "tasks/task.h"
#include "util/error.h"

namespace gui {

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
QStringList qsl(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << qs(s);
  return out;
}
}  // namespace

QList<AnalysisKindInfo> analysisKinds() {
  QList<AnalysisKindInfo> out;
  for (const cs::AnalysisKind& k : cs::analysis_kinds()) {
    AnalysisKindInfo i;
    i.name = qs(k.name);
    i.title = qs(k.title);
    i.help = qs(k.help);
    i.caption = qs(k.caption);
    i.tasks = qsl(k.tasks);
    i.cells = qsl(k.cells);
    i.needsText = k.inputs.text;
    i.usesLastK = k.inputs.last_k;
    i.usesPosition = k.inputs.position;
    i.usesSplit = k.inputs.split;
    i.usesEdges = k.inputs.edges;
    i.usesBins = k.inputs.bins;
    i.multiRun = k.multi_run;
    i.overTraining = k.over_training;
    i.colourMap = k.colour_map;
    i.defaultSplit = qs(k.default_split);
    out << i;
  }
  return out;
}

bool kindAppliesToCell(const AnalysisKindInfo& k, const QString& cell, const QString& base) {
  if (cell.isEmpty()) return true;  // unknown: let the analysis say
  for (const cs::AnalysisKind& c : cs::analysis_kinds())
    if (qs(c.name) == k.name) return cs::analysis_applies_to_cell(c, cell.toStdString(), base.toStdString());
  return true;
}

PositionInput positionInputFor(const QString& kind) {
  PositionInput p;
  if (kind == QLatin1String("aoa")) {
    p.label = QStringLiteral("&Question");
    p.toolTip =
        QStringLiteral("Index of the question in the chosen split (0 = the first); the view shows its document");
    p.minimum = 0;
  } else {
    p.label = QStringLiteral("C&haracter");
    p.toolTip = QStringLiteral("Index of the character in the text (0 = first; 'last' = the last one)");
    p.minimum = -1;
    p.specialValueText = QStringLiteral("last");
  }
  return p;
}

QList<CheckpointEntry> runCheckpoints(const QString& runDir, QString* error) {
  QList<CheckpointEntry> out;
  try {
    for (const cs::CheckpointInfo& c : cs::list_checkpoints(runDir.toStdString())) {
      CheckpointEntry e;
      e.id = qs(c.id);
      e.step = c.step;
      e.label = qs(c.label);
      e.best = c.is_best;
      e.last = c.is_last;
      out << e;
    }
    // Checkpoints saved at the same step are one stop of the slider: "step 100 (best)", not
    // "step 100" and "best (step 100)". The stop loads the step_N file when there is one, else
    // "last" (best.pt and last.pt of one step hold the same model).
    auto rank = [](const CheckpointEntry& e) {
      return e.id.startsWith(QLatin1String("step_")) ? 0 : e.id == QLatin1String("last") ? 1 : 2;
    };
    QList<CheckpointEntry> merged;
    for (const CheckpointEntry& e : out) {
      CheckpointEntry* same = nullptr;
      for (CheckpointEntry& m : merged)
        if (e.step >= 0 && m.step == e.step) same = &m;
      if (!same) {
        merged << e;
        continue;
      }
      const bool best = same->best || e.best, last = same->last || e.last;
      if (rank(e) < rank(*same)) *same = e;
      same->best = best;
      same->last = last;
      QStringList tags;
      if (best && same->id != QLatin1String("best")) tags << QStringLiteral("best");
      if (last && same->id != QLatin1String("last")) tags << QStringLiteral("last");
      const QString t = tags.join(QStringLiteral(", "));
      if (rank(*same) == 0)
        same->label =
            QStringLiteral("step %1").arg(same->step) + (t.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(t));
      else
        same->label = QStringLiteral("%1 (step %2%3)")
                          .arg(same->id)
                          .arg(same->step)
                          .arg(t.isEmpty() ? QString() : QStringLiteral(", ") + t);
    }
    // In step order (a "best" between two step_N checkpoints between them); unknown steps last.
    std::stable_sort(merged.begin(), merged.end(), [](const CheckpointEntry& a, const CheckpointEntry& b) {
      return (a.step < 0 ? std::numeric_limits<qint64>::max() : a.step) <
             (b.step < 0 ? std::numeric_limits<qint64>::max() : b.step);
    });
    out = merged;
    if (out.isEmpty() && error) *error = QStringLiteral("this run has no checkpoints yet");
  } catch (const std::exception& e) {
    if (error) *error = qs(e.what());
    out.clear();
  }
  return out;
}

QVector<qint64> defaultEdges(const QString& task) {
  QVector<qint64> out;
  for (int64_t e : cs::default_edges_for(task.toStdString())) out << e;
  return out;
}

AnalysisOutcome runAnalysisJob(const AnalysisJob& job) {
  AnalysisOutcome o;
  o.id = job.id;
  o.job = job;
  QElapsedTimer timer;
  timer.start();
  try {
    if (job.runs.isEmpty()) throw cs::UserError("choose a run first");
    if (job.type == AnalysisJob::Type::DefaultText) {
      auto task = cs::load_checkpoint_task(job.runs.front().toStdString(), job.checkpoint.toStdString());
      o.text = qs(cs::default_text(*task));
    } else {
      cs::AnalysisRequest r;
      r.kind = job.kind.toStdString();
      for (const QString& d : job.runs) r.runs.push_back(d.toStdString());
      r.checkpoint = job.checkpoint.toStdString();
      r.text = job.text.toStdString();
      r.last_k = job.lastK;
      r.position = job.position;
      r.layer = job.layer;
      r.split = job.split.toStdString();
      for (qint64 e : job.edges) r.edges.push_back(e);
      r.bins = job.bins;
      r.metric = job.metric.toStdString();
      // Each run at its own checkpoint (the core analyses them on one text and one data set,
      // and says in the caption when their steps differ); analyses over a run's whole
      // history (metric_time, dzone, ...) take no checkpoint.
      const bool overTraining = cs::analysis_kind(r.kind).over_training;
      if (!overTraining && job.checkpoints.size() == job.runs.size() && !job.checkpoints.isEmpty()) {
        r.checkpoint = job.checkpoints.front().toStdString();
        for (const QString& c : job.checkpoints) r.checkpoints.push_back(c.toStdString());
      }
      o.result = std::make_shared<const cs::AnalysisResult>(cs::run_analysis(r));
    }
    o.ok = true;
  } catch (const std::exception& e) {
    o.ok = false;
    o.error = qs(e.what());
  } catch (...) {
    o.ok = false;
    o.error = QStringLiteral("unexpected error while computing the analysis");
  }
  o.seconds = double(timer.nsecsElapsed()) / 1e9;
  return o;
}

void AnalysisWorker::compute(const gui::AnalysisJob& job) { Q_EMIT finished(runAnalysisJob(job)); }

}  // namespace gui
