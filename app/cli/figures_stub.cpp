// The CLI without the figures library (CELLSCOPE_GUI=OFF): no image output.
#ifndef CELLSCOPE_CLI_FIGURES
#include "cli_figures.h"
#include "util/error.h"

namespace cli {
bool figures_available() { return false; }
void export_analysis_figure(const cs::AnalysisResult&, const std::string&, const FigureOptions&) {
  throw cs::UserError("image output needs a cellscope-cli built with CELLSCOPE_GUI=ON (the figures library)");
}
RedrawTimes figure_redraw_ms(const cs::AnalysisResult&, int) { return {}; }
}  // namespace cli
#endif
