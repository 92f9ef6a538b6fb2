// The window's bridge to app/figures (cellscope_figures), whose header carries the core's result
// types (figures.h includes core/inspect/analysis/results.h): the Analyses tab holds its figure
// as an opaque csf::Figure, and only figure_bridge.cpp and report_bridge.cpp include figures.h.
// Qt types only here.
#pragma once
#include <QString>
#include <QStringList>

#include "analysis_bridge.h"

class QWidget;
namespace csf {
class Figure;
}
namespace csw {
struct ExportOptions;
}

namespace gui {

// The heatmaps' colour maps by name (csf::color_map_names).
QStringList colorMapNames();

// The figure of a computed analysis (csf::make_figure of *o.result, with the colour map colorMap),
// titled title; the result's warnings (cs::AnalysisResult::warnings) in *warnings. The caller owns
// the figure. nullptr and *error (the exception's message) when no figure can be made.
csf::Figure* makeAnalysisFigure(const AnalysisOutcome& o, const QString& colorMap, const QString& title,
                                QStringList* warnings, QString* error);
// The figure as the widget it is (to put it in a layout or a scroll area).
QWidget* figureWidget(csf::Figure* fig);
// Applies a colour map to every heatmap panel of the figure (csf::apply_color_map) and replots it.
void applyFigureColorMap(csf::Figure* fig, const QString& name);
// Writes the figure to path (.png .pdf .svg .csv) with the default export options
// (csf::export_figure); false with *error on failure.
bool exportAnalysisFigure(csf::Figure* fig, const QString& path, QString* error);
// The options csf::export_figure uses when given none (exportAnalysisFigure, the report's figures):
// csf::set_default_export_options.
void setFigureExportDefaults(const csw::ExportOptions& options);

}  // namespace gui
