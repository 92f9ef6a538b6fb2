// Image output of `cellscope-cli analyze` and the redraw timing of `bench --analysis`.
// Implemented by figure_export/analyze_figure.cpp (Qt + the figures library) when the
// CLI is built with CELLSCOPE_GUI=ON, else by figures_stub.cpp (Qt-free).
#pragma once
#include <string>
#include <vector>

#include "analysis/results.h"

namespace cli {

struct FigureOptions {
  std::string color_map;      // "" = the figures library's default
  int width = 0, height = 0;  // one panel, pixels; 0 = default
};

// True when this executable can draw figures (built with the figures library).
bool figures_available();
// Draw the result's figure offscreen (a QApplication on the offscreen platform is
// created when there is none) and write it to `out` (.png/.pdf/.svg), atomically.
// Throws cs::UserError on failure.
void export_analysis_figure(const cs::AnalysisResult& result, const std::string& out, const FigureOptions& opt);
// Build the result's figure offscreen and time `repeats` synchronous replots of it
// (replot_ms), and `repeats` times building a new figure from the result and drawing it
// (rebuild_ms: what a new checkpoint's result costs the view). Milliseconds.
struct RedrawTimes {
  std::vector<double> replot_ms, rebuild_ms;
};
RedrawTimes figure_redraw_ms(const cs::AnalysisResult& result, int repeats);

}  // namespace cli
