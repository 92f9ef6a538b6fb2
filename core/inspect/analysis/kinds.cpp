// The registry of analysis kinds (see kinds.h) and the shared entry point.
#include "analysis/kinds.h"

#include <algorithm>

#include "analysis/run_names.h"
#include "data/utf8.h"
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
  X(channel_attention_decoder)      \
  X(length)                         \
  X(gate_histogram)                 \
  X(gate_saturation)                \
  X(dzone)                          \
  X(metric_time)                    \
  X(prefix_table)                   \
  X(aoa)

#define CELLSCOPE_DECLARE_KIND(name) AnalysisKind name##_kind();
CELLSCOPE_ANALYSIS_KINDS(CELLSCOPE_DECLARE_KIND)
#undef CELLSCOPE_DECLARE_KIND

const std::vector<AnalysisKind>& analysis_kinds() {
#define CELLSCOPE_KIND_ENTRY(name) name##_kind(),
  static const std::vector<AnalysisKind> k = {CELLSCOPE_ANALYSIS_KINDS(CELLSCOPE_KIND_ENTRY)};
#undef CELLSCOPE_KIND_ENTRY
  return k;
}

bool analysis_applies_to_cell(const AnalysisKind& kind, const std::string& cell, const std::string& base) {
  if (kind.cells.empty()) return true;
  for (const std::string& c : kind.cells)
    if (c == cell || (cell == "mcrnn" && !base.empty() && c == base)) return true;
  return false;
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
  if (!req.checkpoints.empty() && req.checkpoints.size() != req.runs.size())
    throw UserError("give one checkpoint per run (" + std::to_string(req.runs.size()) + " runs, " +
                    std::to_string(req.checkpoints.size()) + " checkpoints)");
  AnalysisResult r = kind.run(kind, req);
  r.kind = kind.name;
  if (r.caption.empty()) r.caption = kind.caption;
  if (req.runs.size() > 1 && !kind.over_training) {
    // Which checkpoint each run was analysed at; a loud note when the steps differ.
    const auto names = run_titles(req);
    std::string at;
    std::vector<int64_t> steps;
    for (size_t i = 0; i < req.runs.size(); ++i) {
      at += (i ? "; " : "") + names[i] + " at " + checkpoint_label(req.runs[i], checkpoint_of(req, i));
      steps.push_back(checkpoint_step(req.runs[i], checkpoint_of(req, i)));
    }
    const bool differ = std::any_of(steps.begin(), steps.end(), [&](int64_t s) { return s != steps[0]; });
    if (differ) r.warnings.push_back("the runs are analysed at different steps: " + at + ".");
    else r.caption += " Checkpoints: " + at + ".";
  }
  if (!r.warnings.empty()) {
    std::string w;
    for (auto& s : r.warnings) w += "Warning: " + s + " ";
    r.caption = w + r.caption;
  }
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

namespace cs {

std::string checkpoint_of(const AnalysisRequest& req, size_t i) {
  return i < req.checkpoints.size() && !req.checkpoints[i].empty() ? req.checkpoints[i] : req.checkpoint;
}

std::vector<std::string> run_titles(const AnalysisRequest& req) { return comparison_names_of_dirs(req.runs); }

SharedText shared_text(const AnalysisRequest& req, Task& first, const std::string& first_name) {
  SharedText t;
  if (!req.text.empty()) {
    t.text = req.text;
    t.source = "the given text";
  } else {
    t.text = default_text(first);
    t.source = "the start of the valid split of " + first_name;
  }
  return t;
}

std::string text_note(const SharedText& t) {
  const auto syms = utf8_symbols(t.text);
  std::string quoted;
  const size_t show = 40;
  for (size_t i = 0; i < syms.size() && i < show; ++i) quoted += syms[i] == "\n" ? std::string(" ") : syms[i];
  if (syms.size() > show) quoted += "...";
  return "Text: " + t.source + ", " + std::to_string(syms.size()) + " characters, the same for every run (\"" + quoted +
         "\").";
}

}  // namespace cs

// A unity batch's next files do not see this file's macros (tests/check_unity.py).
#undef CELLSCOPE_ANALYSIS_KINDS
