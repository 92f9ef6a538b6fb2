// PlotView: the base of every cellscope figure widget (CurvePlot, HeatmapView,
// BarChart on QCustomPlot; AttentionGrid, painted by hand). It holds what they
// all share:
//  - the title above the figure and the two axis labels;
//  - the series palette (matplotlib's "tab10", paletteColor(i));
//  - export: ExportableView (replaceTitle, figurePlot) and exportTo();
//  - one replot policy: every change ends in requestReplot(), a queued replot
//    (QCustomPlot::rpQueuedReplot; update() for a painted view), so any number
//    of changes in one pass of the event loop costs one repaint. Views whose
//    data change per point (CurvePlot) may in addition defer their own per-point
//    work to a caller-driven refresh, which then calls requestReplot() too;
//  - the hover tooltip (showHoverText).
#pragma once
#include <QColor>
#include <QString>
#include <QWidget>

#include "export.h"

class QCustomPlot;
class QCPTextElement;

namespace csw {

class PlotView : public QWidget, public ExportableView {
  Q_OBJECT
 public:
  void setTitle(const QString& title) override;
  QString title() const override { return m_title; }
  // The title as drawn: broken into lines that fit width pixels (at word boundaries, anywhere
  // inside a word wider than that), so a long run name is never cut at both ends. Done before
  // each replot for the plot's width; Figure::renderFigure does it for an export's width.
  void wrapTitleTo(int width);
  QString drawnTitle() const;
  void setXLabel(const QString& label);
  void setYLabel(const QString& label);
  QString xLabel() const { return m_xLabel; }
  QString yLabel() const { return m_yLabel; }

  // The i-th colour of the 10-colour palette (wraps around).
  static QColor paletteColor(int index);

  // Writes the figure (.png, .pdf, .svg) or its data (.csv); see export.h.
  bool exportTo(const QString& path, const ExportOptions& options = ExportOptions(), QString* error = nullptr);

  // The QCustomPlot drawing the figure; nullptr for a painted view.
  QCustomPlot* plot() const { return m_plot; }

  // ExportableView
  QCustomPlot* figurePlot() const override { return m_plot; }

 public Q_SLOTS:
  // The one replot policy (see above).
  void requestReplot();

 protected:
  enum class Kind { CustomPlot, Painted };
  // CustomPlot: creates plot() (the subclass lays it out) with the title row
  // above its axis rect (call before adding other elements to row 0).
  explicit PlotView(Kind kind, QWidget* parent = nullptr);
  // The hover tooltip: text at globalPos (over plot(), or the view when painted); hidden when empty.
  void showHoverText(const QString& text, const QPoint& globalPos);
  // Called after the title or a label changed; default: requestReplot().
  virtual void decorationChanged() { requestReplot(); }

  QCustomPlot* m_plot = nullptr;  // CustomPlot views only

 private:
  QCPTextElement* m_titleElement = nullptr;
  QString m_title, m_xLabel, m_yLabel;
};

}  // namespace csw
