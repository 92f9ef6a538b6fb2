// `cellscope-cli report SPEC --out DIR` and `report --check DIR`: the reproducibility bundle
// (core/inspect/report/report.h, REPORT_NOTES.md). Figures as PNG + PDF through the figures
// library when the CLI has it (cli_figures.h), else their CSV alone.
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "cli_figures.h"
#include "report/report.h"
#include "train/run_store.h"
#include "util/error.h"

namespace cli {

int cmd_report(const std::vector<std::string>& a) {
  auto args = parse(a, "report");
  if (args.has("list")) {
    for (auto& r : cs::bundled_reports())
      std::cout << std::left << std::setw(24) << r["name"].get<std::string>()
                << (r.contains("error") ? "ERROR: " + r["error"].get<std::string>() : r["title"].get<std::string>())
                << "\n";
    return 0;
  }
  cs::ReportOptions opt;
  opt.workspace = args.get("workspace");
  if (args.has("check")) {
    if (!args.positional.empty() || args.has("out")) throw UsageError("report --check DIR takes no SPEC and no --out");
    opt.on_progress = [](int done, int total, const std::string& what) {
      if (!what.empty()) std::cerr << "[" << done + 1 << "/" << total << "] recomputing " << what << "\n";
    };
    const cs::ReportCheck c = cs::check_report(args.get("check"), opt);
    for (auto& l : c.lines) {
      std::cout << l.item << ": ";
      if (l.item == "code") {
        std::cout << (l.ok ? "ok" : l.changes.front() + " (a note: the items below say whether their numbers moved)")
                  << "\n";
        continue;
      }
      if (l.ok) {
        std::cout << "ok\n";
        continue;
      }
      std::cout << "CHANGED:";
      for (auto& w : l.changes) std::cout << "\n    " << w;
      std::cout << "\n";
    }
    std::cout << (c.ok() ? "all items match\n" : "some items no longer match\n");
    return c.ok() ? 0 : 1;
  }
  if (args.positional.size() != 1) throw UsageError("expected one SPEC (a file or a bundled name) and --out DIR");
  if (!args.has("out")) throw UsageError("--out DIR is required");
  const cs::ReportSpec spec = cs::load_report_spec(args.positional[0]);
  if (opt.workspace.empty()) opt.workspace = cs::default_workspace();
  if (figures_available() && !args.has("no-images")) {
    opt.write_images = [](const cs::AnalysisResult& r, const std::string& stem) {
      export_analysis_figure(r, stem + ".png", FigureOptions{});
      export_analysis_figure(r, stem + ".pdf", FigureOptions{});
    };
  }
  opt.on_progress = [](int done, int total, const std::string& what) {
    if (!what.empty()) std::cerr << "[" << done + 1 << "/" << total << "] " << what << "\n";
  };
  const cs::json m = cs::render_report(spec, args.positional[0], args.get("out"), opt);
  for (auto& w : m["warnings"]) std::cerr << "warning: " << w.get<std::string>() << "\n";
  std::cout << "wrote " << args.get("out") << ": " << m["items"].size() << " items, " << m["runs"].size()
            << " runs (report.md, manifest.json)" << (m["images"].get<bool>() ? "" : "; figures as CSV only") << "\n";
  return 0;
}

}  // namespace cli
