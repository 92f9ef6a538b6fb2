// The window's figures through app/figures (figure_bridge.h).
#include "figure_bridge.h"

#include <QWidget>

#include <exception>
#include <string>

#include "export.h"
#include "figures.h"
#include "heatmap_view.h"
#include "qcp.h"

namespace gui {

QStringList colorMapNames() { return csf::color_map_names(); }

csf::Figure* makeAnalysisFigure(const AnalysisOutcome& o, const QString& colorMap, const QString& title,
                                QStringList* warnings, QString* error) {
  try {
    csf::FigureStyle style;
    style.color_map = colorMap;
    const cs::AnalysisResult& r = *o.result;
    csf::Figure* fig = csf::make_figure(r, style);
    fig->setTitle(title);
    if (warnings) {
      warnings->clear();
      for (const std::string& w : r.warnings) *warnings << QString::fromStdString(w);
    }
    return fig;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return nullptr;
  }
}

QWidget* figureWidget(csf::Figure* fig) { return fig; }

void applyFigureColorMap(csf::Figure* fig, const QString& name) {
  if (!fig) return;
  for (int i = 0; i < fig->panelCount(); ++i)
    if (auto* hv = fig->panelAs<csw::HeatmapView>(i)) {
      csf::apply_color_map(hv, name);
      hv->plot()->replot(QCustomPlot::rpQueuedReplot);
    }
}

bool exportAnalysisFigure(csf::Figure* fig, const QString& path, QString* error) {
  return csf::export_figure(fig, path, error);
}

void setFigureExportDefaults(const csw::ExportOptions& options) { csf::set_default_export_options(options); }

}  // namespace gui
