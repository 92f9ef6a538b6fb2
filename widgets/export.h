// Figure and data export for the cellscope widgets.
//
// exportFigure() writes a view as PNG, PDF or SVG, chosen by the file extension:
//  - QCustomPlot-based views (CurvePlot, HeatmapView, BarChart, or a bare
//    QCustomPlot): PNG via QCustomPlot::savePng (raster, scaled by
//    ExportOptions::scale, with DPI metadata), PDF via savePdf (vector, page =
//    figure size in points, zero margins, non-cosmetic pens) and SVG via
//    QSvgGenerator + QCPPainter + QCustomPlot::toPainter (vector, text kept as text).
//  - Custom-painted views (AttentionGrid, or any ExportableView that paints
//    itself through renderFigure()) and, as a fallback, any QWidget
//    (QWidget::render): the same three formats through QImage, QPdfWriter and
//    QSvgGenerator.
// The export font (ExportOptions::fontFamily / fontPointSize) is applied to all
// text of the figure before rendering and restored afterwards, so the view on
// screen is left unchanged. ExportOptions::title, when set, temporarily replaces
// the view's title.
//
// exportCsv() writes ExportableView::toCsv() (each view documents its columns).
#pragma once

#include <QSize>
#include <QList>
#include <QString>
#include <QStringList>

class QCustomPlot;
class QPainter;
class QRect;
class QWidget;

namespace csw {

// Implemented by every cellscope view (in addition to QWidget).
class ExportableView {
 public:
  virtual ~ExportableView() = default;
  // The view's data as CSV text (header line + rows, '\n' line ends, RFC 4180 quoting).
  virtual QString toCsv() const = 0;
  // The QCustomPlot that draws the figure; nullptr for custom-painted views.
  virtual QCustomPlot* figurePlot() const { return nullptr; }
  // Custom-painted views: draw the whole figure into target (logical pixels)
  // using the painter's device. Only called when figurePlot() is nullptr.
  virtual void renderFigure(QPainter* painter, const QRect& target) const;
  // Natural figure size when ExportOptions::size is not given (default: widget size).
  virtual QSize figureSize() const { return QSize(); }
  // The figure's title ("" for none) and setting it: a view without a title keeps these defaults.
  virtual QString title() const { return QString(); }
  virtual void setTitle(const QString& title) { Q_UNUSED(title); }
  // Temporarily replace the figure title (export). Returns the previous title. The one replaceTitle
  // of the views (PlotView, Figure, TableView): each has only its own title() and setTitle().
  QString replaceTitle(const QString& title) {
    QString old = this->title();
    setTitle(title);
    return old;
  }
};

struct ExportOptions {
  QSize size;                // figure size in logical pixels (= points in PDF); empty: view's size
  double scale = 1.0;        // PNG only: pixel size = size * scale
  int dpi = 300;             // PNG only: DPI written to the file (pHYs)
  QString fontFamily;        // empty: keep the view's fonts
  double fontPointSize = 0;  // <= 0: keep the view's font sizes
  QString title;             // non-empty: title used for this export only
  QString creator = QStringLiteral("Cellscope");
};

// Writes view to path; format from the extension (.png, .pdf, .svg; .csv is
// forwarded to exportCsv). Returns false and sets *error on failure.
bool exportFigure(QWidget* view, const QString& path, const ExportOptions& options = ExportOptions(),
                  QString* error = nullptr);

// The font-family an SVG names for Qt's family: the font Qt resolved it to, then the CSS generic
// family of its kind ("DejaVu Sans, sans-serif" for Qt's "Sans Serif"), so a browser or Inkscape
// draws the text in the font it was measured and wrapped with.
QString svgFontFamily(const QString& qtFamily);

// Writes the view's toCsv() to path (UTF-8). view must be an ExportableView.
bool exportCsv(QWidget* view, const QString& path, QString* error = nullptr);
// Writes csv text to path (UTF-8).
bool writeCsvFile(const QString& csv, const QString& path, QString* error = nullptr);

// CSV helpers used by the views.
QString csvField(const QString& s);                 // quotes when needed (RFC 4180: core/base/util/csv.h)
QList<QStringList> csvRecords(const QString& csv);  // the records of a CSV text, each its fields
QString csvNumber(double v);                        // shortest round-trip text, empty for NaN

}  // namespace csw
