// Declarations shared by the report's translation units (report_spec.cpp: the spec;
// report_render.cpp: rendering the items; report_check.cpp: the check; report.cpp: the bundle and
// its manifest). Not API: include only from core/inspect/report.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace cs::report_internal {

// One item rendered: its manifest entry (id, kind, caption, runs, numbers, outputs) and its section
// of report.md.
struct ItemOutput {
  json manifest;
  std::string markdown;
};

struct Rendered {
  std::vector<ItemOutput> items;
  json runs;  // run key -> inputs (config, checkpoints, dataset files by SHA-256)
  std::vector<std::string> warnings;
};

// Renders every item of `spec` into `dir`. `item_errors` null: the first error is thrown; else each
// item's error is collected there ("" for none) and the item is left empty.
Rendered render_into(const ReportSpec& spec, const std::string& dir, const ReportOptions& opt,
                     std::vector<std::string>* item_errors);

void remove_tree(const std::string& path);

}  // namespace cs::report_internal
