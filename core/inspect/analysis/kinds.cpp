// The registry of analysis kinds (see kinds.h) and the shared entry point.
#include "analysis/kinds.h"

#include <algorithm>

#include "tasks/task.h"
#include "util/error.h"

namespace cs {

// Every kind, in the order front ends list them: one line each. kind_<name>.cpp defines
// `AnalysisKind <name>_kind()`; a new kind adds its file and one line here.
#define CELLSCOPE_ANALYSIS_KINDS(X) \
  X(relevance)                      \
  X(zone_relevance)                 \
  X(composition)                    \
  X(channel_attention)              \
  X(length)                         \
  X(gate_histogram)                 \
  X(gate_saturation)                \
  X(dzone)                          \
  X(metric_time)                    \
  X(prefix_table)

#define CELLSCOPE_DECLARE_KIND(name) AnalysisKind name##_kind();
CELLSCOPE_ANALYSIS_KINDS(CELLSCOPE_DECLARE_KIND)
#undef CELLSCOPE_DECLARE_KIND

const std::vector<AnalysisKind>& analysis_kinds() {
#define CELLSCOPE_KIND_ENTRY(name) name##_kind(),
  static const std::vector<AnalysisKind> k = {CELLSCOPE_ANALYSIS_KINDS(CELLSCOPE_KIND_ENTRY)};
#undef CELLSCOPE_KIND_ENTRY
  return k;
}

const AnalysisKind& analysis_kind(const std::string& name) {
  std::string names;
  for (auto& k : analysis_kinds()) {
    if (k.name == name || (name == "bpc_length" && k.name == "length")) return k;
    names += (names.empty() ? "" : ", ") + k.name;
  }
  throw UserError("unknown analysis '" + name + "' (" + names + ")");
}

AnalysisResult run_analysis(const AnalysisRequest& req) {
  const auto& kind = analysis_kind(req.kind);
  if (req.runs.empty()) throw UserError("an analysis needs a run (--run DIR)");
  if (req.runs.size() > 1 && !kind.multi_run) throw UserError("analysis '" + kind.name + "' takes one run");
  AnalysisResult r = kind.run(kind, req);
  r.kind = kind.name;
  if (r.caption.empty()) r.caption = kind.caption;
  return r;
}

std::string default_text(Task& task) { return task.default_analysis_text(); }

std::unique_ptr<Task> load_for(const AnalysisKind& kind, const std::string& dir, const std::string& checkpoint) {
  auto t = load_checkpoint_task(dir, checkpoint);
  if (std::find(kind.tasks.begin(), kind.tasks.end(), t->name()) == kind.tasks.end()) {
    std::string ts;
    for (auto& n : kind.tasks) ts += (ts.empty() ? "" : ", ") + n;
    throw UserError("analysis '" + kind.name + "' needs a " + ts + " run; '" + dir + "' is a " + t->name() + " run");
  }
  return t;
}

std::string text_or_default(const AnalysisRequest& req, Task& task) {
  return req.text.empty() ? default_text(task) : req.text;
}

std::string run_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return basename_of(d);
}

}  // namespace cs
