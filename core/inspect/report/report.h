// The reproducibility bundle (`cellscope-cli report SPEC --out DIR`, `report --check DIR`,
// the window's Sweeps > Report...): a list of sweeps' tables, sweeps' series and analyses of
// runs (a small JSON spec) re-rendered from the workspace into one directory, with report.md
// and a manifest.json pinning what made them (code version, resolved configs, seeds,
// checkpoints and dataset files by SHA-256, every output file's SHA-256, every table number).
// Qt-free: images are drawn by the front end through ReportOptions::write_images.
// Spec format, manifest and the check's rules: core/inspect/report/REPORT_NOTES.md.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "analysis/results.h"
#include "config/json.h"

namespace cs {

// One item of a spec, checked. kind: "table" (a sweep's table), "series" (a sweep's metric
// against one axis with error bars), "analysis" (an analysis kind of one or more runs; the
// spec's "figure": "curves" is the analysis metric_time).
struct ReportItem {
  std::string id;       // file stem of its outputs: "01-reproduce-cru-table2"
  std::string kind;     // table | series | analysis
  std::string caption;  // "" = a default caption
  json spec;            // the item as given
};

struct ReportSpec {
  std::string title;
  std::vector<ReportItem> items;
  json source;  // the document as given
  // Checks every item; every problem is collected into one UserError naming `file` and each
  // problem's JSON path ("items[2].sweep: ...").
  static ReportSpec from_json(const json& j, const std::string& file);
};

// A spec file, or the name of a bundled spec (resources/reports/<name>.json).
ReportSpec load_report_spec(const std::string& file_or_name);
// Bundled specs: {name, title, path}.
std::vector<json> bundled_reports();

struct ReportOptions {
  std::string workspace;  // runs and sweeps are found here
  // Draws `result` as PNG and PDF at `stem` + ".png" / ".pdf" (atomically); null: no images (a
  // build without the figures library), the report keeps each figure's CSV and says so.
  std::function<void(const AnalysisResult& result, const std::string& stem)> write_images;
  std::function<void(int done, int total, const std::string& what)> on_progress;  // may be null
};

// The code that makes a report: {"version", "commit" ("" when unknown), "libtorch"}.
json code_version();

// Renders every item into `out` (built as `out`.tmp and renamed; an existing `out` is replaced only
// when it is an earlier report, i.e. holds a manifest.json). Returns the manifest. UserError (and
// no `out`) when a run or sweep is missing: a sweep that has not run says which command runs it.
json render_report(const ReportSpec& spec, const std::string& spec_file, const std::string& out,
                   const ReportOptions& options);

struct ReportCheckLine {
  std::string item;  // the item's id, or "code" for the code version
  bool ok = true;
  std::vector<std::string> changes;  // why not ok (or notes when ok)
};
struct ReportCheck {
  std::vector<ReportCheckLine> lines;
  bool ok() const;
};
// Recomputes every item of the report in `dir` (its manifest's spec, over options.workspace or,
// when empty, the manifest's) without images, and compares inputs (configs, checkpoints, dataset
// files by SHA-256), numbers (tables: every cell's mean, std and values; figures: every CSV cell,
// relative tolerance kReportTolerance) and the code version. UserError when `dir` is no report.
ReportCheck check_report(const std::string& dir, const ReportOptions& options);
inline constexpr double kReportTolerance = 1e-6;

}  // namespace cs
