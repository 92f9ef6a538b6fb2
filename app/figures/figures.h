// cellscope_figures: the papers' figures as configured widgets, shared by the
// window's Analyses tab and `cellscope-cli analyze ... --out x.png|pdf|svg|csv`.
//
// Every make_*_figure() returns a csf::Figure: a QWidget holding one or more
// panels (csw::HeatmapView, csw::AttentionGrid, csw::BarChart, csw::CurvePlot)
// laid out in a grid, with an optional title above and a caption below (the
// analysis' definition, e.g. the zone-relevance definition). A Figure is a
// csw::ExportableView, so export_figure() writes it as
//   .png  raster (ExportOptions::scale, DPI metadata),
//   .pdf  vector, page = figure size in points,
//   .svg  vector, text kept as text,
//   .csv  the data: one panel -> that panel's CSV; several panels with the same
//         CSV header -> a leading "panel" column; otherwise a long table
//         "panel,row,column,value".
// The caller owns the returned widget (parent it, or delete it).
//
// Headers: Qt + core/inspect/analysis (torch-free). No QApplication is created here:
// a headless caller (the CLI) creates one on the offscreen platform first.
#pragma once

#include <QSize>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <limits>
#include <string>
#include <vector>

#include "analysis/results.h"
#include "export.h"

class QLabel;
class QGridLayout;

namespace csw {
class HeatmapView;
class AttentionGrid;
class BarChart;
class CurvePlot;
}  // namespace csw

namespace csf {

// Colour maps for heatmaps: "grey" (black = low, white = high), "grey_inverted"
// (white = low, black = high; the paper's look), "viridis", "magma", "thermal",
// "polar" (diverging), "jet".
QStringList color_map_names();
// Applies a colour map by name; false (and greyscale) for an unknown name.
bool apply_color_map(csw::HeatmapView* view, const QString& name);

struct FigureStyle {
  QString color_map = QStringLiteral("grey_inverted");
  // Side-by-side heatmaps share one colour range (one colour scale, drawn on the last panel).
  bool shared_scale = true;
  // Fixed colour range; NaN = from the data (min..max of the finite values over the shared panels).
  double range_lo = std::numeric_limits<double>::quiet_NaN();
  double range_hi = std::numeric_limits<double>::quiet_NaN();
  bool show_values = false;  // print each heatmap cell's value (small matrices only)
  bool show_caption = true;
  QString title;                       // above the panels (empty = none)
  QSize panel_size = QSize(620, 440);  // natural size of one panel (export size when none is given)
  int columns = 0;                     // panels per row; 0 = all in one row up to 3, then 2 or 3 per row
};

// A figure: panels in a grid + title + caption. See the file comment.
class Figure : public QWidget, public csw::ExportableView {
  Q_OBJECT
 public:
  explicit Figure(QWidget* parent = nullptr);

  // view must also be a csw::ExportableView; the figure takes ownership.
  void addPanel(QWidget* view, const QString& name);
  int panelCount() const { return int(m_panels.size()); }
  QWidget* panel(int i) const;
  QString panelName(int i) const;
  template <class T>
  T* panelAs(int i) const {
    return qobject_cast<T*>(panel(i));
  }

  void setTitle(const QString& title) override;
  QString title() const override { return m_title; }
  void setCaption(const QString& caption);
  QString caption() const { return m_caption; }
  void setColumns(int n);  // 0 = automatic
  int columns() const;
  void setPanelSize(const QSize& s);
  QSize panelSize() const { return m_panelSize; }
  // Every panel's minimum size (at most 340x240, 280x240 with several panels in a row,
  // or the panel size): below it the
  // figure does not squeeze, its scroll area scrolls.
  QSize minimumPanelSize() const;

  // Replots every QCustomPlot panel now (synchronously); returns the wall time in ms.
  double replotNow();

  // csw::ExportableView
  QString toCsv() const override;
  void renderFigure(QPainter* painter, const QRect& target) const override;
  QSize figureSize() const override;

  QSize sizeHint() const override;

 private:
  void relayout();
  // Heights of the caption and of the title wrapped to width (on device; nullptr = the screen).
  double captionHeight(double width, const QFont& f, QPaintDevice* device = nullptr) const;
  double titleHeight(double width, const QFont& f, QPaintDevice* device = nullptr) const;

  struct Panel {
    QWidget* view = nullptr;
    QString name;
  };
  std::vector<Panel> m_panels;
  QGridLayout* m_grid = nullptr;
  QLabel* m_titleLabel = nullptr;
  QLabel* m_captionLabel = nullptr;
  QString m_title, m_caption;
  int m_columns = 0;
  QSize m_panelSize = QSize(620, 440);
};

// ---- the analyses' figures ------------------------------------------------

// Per-character relevance (MZU Fig. 3a/b): one heatmap per run, side by side,
// rows = the last K characters, columns = every character (tick labels as the
// core gives them, spaces as "_"), shared colour scale, caption = the first
// matrix' caption. names: panel titles (run names), may be empty.
Figure* make_relevance_figure(const std::vector<cs::LabeledMatrix>& runs, const QStringList& names,
                              const FigureStyle& style = FigureStyle());

// Zone-specific relevance (Fig. 3c): as above, one row per zone.
Figure* make_zone_relevance_figure(const std::vector<cs::LabeledMatrix>& runs, const QStringList& names,
                                   const FigureStyle& style = FigureStyle());

// Small heatmaps, one per matrix (composition weights per step: sat attention,
// gcn adjacency, cap coupling per routing iteration). names = panel titles
// (e.g. "cap coupling, routing iteration 2"); values printed when small.
Figure* make_composition_figure(const std::vector<cs::LabeledMatrix>& matrices, const QStringList& names,
                                const FigureStyle& style = FigureStyle());

// Any labelled matrices as a heatmap figure with the given axis labels.
Figure* make_matrix_figure(const std::vector<cs::LabeledMatrix>& matrices, const QStringList& names,
                           const QString& xLabel, const QString& yLabel, const FigureStyle& style = FigureStyle());

// MC-RNN channel attention (MC-RNN Fig. 3): tokens on x, channels on y, each
// cell shaded by a^k_t with its value printed, and the block boundaries of each
// channel (where the in-degree m^k_t resets to 1) drawn as thick segments.
// weights[channel][token]; inDegree[channel][token] (may be empty).
Figure* make_channel_attention_figure(const QStringList& tokens, const QVector<QVector<double>>& weights,
                                      const QVector<QVector<int>>& inDegree, const QString& caption,
                                      const FigureStyle& style = FigureStyle());

// BPC (or any metric) by sequence length (MZU Fig. 2): bars per bucket, one
// series per run, the number of sequences per bucket printed (from the first run).
struct BucketSeries {
  QString name;
  QStringList buckets;     // bucket labels
  QVector<double> values;  // per bucket (NaN = none)
  QVector<int> counts;     // sequences per bucket
};
Figure* make_buckets_figure(const std::vector<BucketSeries>& runs, const QString& yLabel, const QString& caption,
                            const FigureStyle& style = FigureStyle());

// Lines (curves over training, histograms as lines), optional error bars drawn
// as a band of +-yerr.
struct Series {
  QString name;
  QVector<double> x, y, yerr;  // yerr empty = none
};
Figure* make_series_figure(const std::vector<Series>& series, const QString& title, const QString& xLabel,
                           const QString& yLabel, const QString& caption, const FigureStyle& style = FigureStyle());

// ---- from the core's result types (core/inspect/analysis/results.h; result_figures.cpp) ----

// Heatmaps side by side (one per run) with the set's axis and colour-scale labels;
// few_rows: flatter panels, several runs stacked.
Figure* make_heatmaps_figure(const cs::HeatmapSet& set, const FigureStyle& style = FigureStyle());

// Composition weights (sat/gcn/cap; one small heatmap per panel, values printed;
// cap: one row of panels per M-function and depth, one column per routing iteration).
Figure* make_composition_figure(const cs::MatrixSet& set, const FigureStyle& style = FigureStyle());
// MC-RNN channel attention with the block structure of each channel.
Figure* make_channel_attention_figure(const cs::ChannelGrid& grid, const FigureStyle& style = FigureStyle());
// Metric per length bucket, one bar series per run (names: the runs' names; empty = LengthBuckets::run).
Figure* make_buckets_figure(const std::vector<cs::LengthBuckets>& runs, const QStringList& names,
                            const FigureStyle& style = FigureStyle());
Figure* make_buckets_figure(const cs::BucketSet& set, const FigureStyle& style = FigureStyle());
// Curves ("line"/"points") or a histogram ("bars"); marker_step >= 0 draws a vertical marker.
Figure* make_series_figure(const cs::SeriesSet& set, const FigureStyle& style = FigureStyle());
// A table of strings (CRU Table 5), painted so it exports as PNG/PDF/SVG too (table_view.cpp).
Figure* make_table_figure(const cs::TextTable& table, const FigureStyle& style = FigureStyle());

// The figure of any analysis result, chosen by the result type its variant holds
// (std::visit; what the CLI's image --out calls). The result's caption replaces the
// figure's own. UserError when it holds no result.
Figure* make_figure(const cs::AnalysisResult& result, const FigureStyle& style = FigureStyle());
// The sentence a comparison's caption ends with, naming its runs where the figure shows
// them: "Runs compared (panels left to right): A; B." (heatmaps of several runs) or "(bars
// left to right in each bucket)" (length buckets of several runs); "" for one run or other
// results. make_figure appends it to the caption.
QString compared_runs_sentence(const cs::AnalysisResult& result);

// A table of strings as a custom-painted view (CSV: the columns and rows).
class TableView : public QWidget, public csw::ExportableView {
  Q_OBJECT
 public:
  explicit TableView(QWidget* parent = nullptr);
  void setTable(const QStringList& columns, const QVector<QStringList>& rows);
  void setTitle(const QString& title) override;
  QString title() const override { return m_title; }
  QStringList columns() const { return m_columns; }
  QVector<QStringList> rows() const { return m_rows; }
  QSize sizeHint() const override;
  QString toCsv() const override;
  void renderFigure(QPainter* painter, const QRect& target) const override;
  QSize figureSize() const override { return sizeHint(); }

 protected:
  void paintEvent(QPaintEvent* ev) override;

 private:
  QStringList m_columns;
  QVector<QStringList> m_rows;
  QString m_title;
};

// Writes a figure (or any exportable view) to path: .png .pdf .svg .csv.
// Without options: the process-wide defaults below (the GUI's File > Export
// options; plain csw::ExportOptions() in the CLI, which never sets them).
bool export_figure(QWidget* figure, const QString& path, QString* error = nullptr);
bool export_figure(QWidget* figure, const QString& path, QString* error, const csw::ExportOptions& options);
void set_default_export_options(const csw::ExportOptions& options);
csw::ExportOptions default_export_options();

// Helpers.
QString qs(const std::string& s);
QStringList qs(const std::vector<std::string>& v);

}  // namespace csf
