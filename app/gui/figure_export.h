// FigureExporter: the window's export settings (size, PNG scale, font) and the
// export actions every curve of the workbench offers (right-click menu, File
// menu): figure as PNG/PDF/SVG or data as CSV, through widgets/export.h.
#pragma once
#include <QObject>
#include <QString>

#include "export.h"

class QSettings;
class QWidget;

namespace csw {
class CurvePlot;
}

namespace gui {

// A file-name friendly form of a title ("Learning rate" -> "learning_rate").
QString slug(const QString& s);

class FigureExporter : public QObject {
  Q_OBJECT
 public:
  // dialogParent: the widget the file and option dialogs belong to.
  explicit FigureExporter(QWidget* dialogParent);

  csw::ExportOptions options() const { return m_options; }
  // Also the defaults of csf::export_figure (the Analyses figures), PNG dpi = 96 x scale.
  void setOptions(const csw::ExportOptions& o);
  void setWorkspace(const QString& dir) { m_workspace = dir; }
  // The export dialog's default: the plot's run folder (QObject property
  // "csRunDir"), else the workspace; the file name carries the run and the figure.
  QString defaultExportPath(csw::CurvePlot* plot, const QString& suffix) const;
  void load(const QSettings& s);
  void save(QSettings& s) const;

  // .png/.pdf/.svg: the figure; .csv: its data.
  bool exportPlot(csw::CurvePlot* plot, const QString& path, QString* error = nullptr);
  // A curve plot with the right-click export menu.
  csw::CurvePlot* newPlot(const QString& title, const QString& yLabel, const QString& xLabel);

 public Q_SLOTS:
  void exportPlotInteractive(csw::CurvePlot* plot);
  void optionsDialog();

 Q_SIGNALS:
  void message(const QString& text, int timeoutMs);

 private:
  void contextMenu(csw::CurvePlot* plot, const QPoint& pos);
  void publish();

  QWidget* m_parent;
  csw::ExportOptions m_options;
  QString m_workspace;
};

}  // namespace gui
