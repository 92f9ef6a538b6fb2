// HeatmapView: a matrix of doubles as a colour map (QCustomPlot QCPColorMap).
//
// Cell (row r, column c) is drawn with row 0 at the top. NaN cells are left
// blank (transparent). Every row and every column gets its tick label (the
// caller passes display strings, e.g. characters with spaces already shown as
// "_"); missing labels default to the index. Colours come from a greyscale or
// a QCPColorGradient preset; a colour scale is shown at the right.
// setDataRange(lo, hi) fixes the colour scale (e.g. the same range for two
// views compared side by side); setAutoDataRange() returns to min..max of the
// finite values. With setShowValues(true) each cell prints its value, as long
// as the matrix has at most maxValueCells() cells.
// Hovering shows "row label, column label, value".
// With setTickLabelThinning(true), when there are more labels than fit along an
// axis (long texts), only every n-th label is drawn (n chosen from the axis
// length in pixels and the label size; recomputed before each replot). Key
// columns (setKeyColumns: e.g. a cloze answer's occurrences) keep their labels
// when thinned, and the regular labels too close to them make way.
//
// CSV (toCsv): header "row,<column label 1>,...,<column label n>", then one line
// per row: the row label followed by the values (NaN = empty field).
#pragma once

#include <QPointer>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "plot_view.h"

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPColorGradient;
class QMouseEvent;

namespace csw {

class HeatmapView : public PlotView {
  Q_OBJECT
 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  ~HeatmapView() override;

  // Row-major data of rows x cols values.
  void setMatrix(int rows, int cols, const QVector<double>& rowMajor);
  // m[row][col]; rows shorter than the longest are padded with NaN.
  void setMatrix(const QVector<QVector<double>>& m);
  int rows() const { return m_rows; }
  int columns() const { return m_cols; }
  double value(int row, int col) const;

  void setRowLabels(const QStringList& labels);
  void setColumnLabels(const QStringList& labels);
  QString rowLabel(int row) const;
  QString columnLabel(int col) const;

  // Colours. Greyscale: black (low) to white (high), or white to black when inverted.
  void setGreyscale(bool inverted = false);
  // Preset is a QCPColorGradient::GradientPreset value (e.g. QCPColorGradient::gpThermal).
  void setGradientPreset(int preset, bool inverted = false);
  void setGradient(const QCPColorGradient& gradient);

  void setDataRange(double lo, double hi);
  void setAutoDataRange();
  bool autoDataRange() const { return m_autoRange; }
  double dataLower() const;
  double dataUpper() const;

  void setColorScaleLabel(const QString& label);
  void setColorScaleVisible(bool visible);

  void setShowValues(bool show);
  bool showValues() const { return m_showValues; }
  void setMaxValueCells(int n);
  int maxValueCells() const { return m_maxValueCells; }
  void setValuePrecision(int digits);  // digits after the point (default 2)
  // Number of cells currently printing their value.
  int valueTextCount() const;

  // Tick label thinning (see above). updateTickThinning(w, h) recomputes the
  // label steps for a plot of w x h pixels (export at another size).
  void setTickLabelThinning(bool on);
  bool tickLabelThinning() const { return m_thin; }
  void updateTickThinning(int plotWidth, int plotHeight);
  // The axis rect of the plot laid out at w x h (the screen's layout is restored after).
  QRect axisRectAt(int plotWidth, int plotHeight) const;
  int columnLabelStep() const { return m_colStep; }
  // Key columns keep their labels when thinned, unless a key of higher rank is closer than a
  // step (their labels would overlap): first the columns in `first` (e.g. a cloze answer's
  // occurrences), then the others, each from the last column back.
  void setKeyColumns(const QVector<int>& cols, const QVector<int>& first = {});
  QVector<int> keyColumns() const { return m_keyCols; }
  // Panels of one figure that show the same columns (two runs' relevance side by side): the
  // thinning is decided once for the group, each view using the largest step any of them
  // needs at its size, so every panel labels the same columns and rows.
  static void linkTickThinning(const QVector<HeatmapView*>& views);
  QVector<int> labelledColumns() const;  // the columns whose labels are drawn now
  int rowLabelStep() const { return m_rowStep; }

  // Cell under a pixel position of plot(); false outside the matrix.
  bool cellAt(const QPointF& pixel, int* row, int* col) const;
  QString tooltipTextAt(const QPointF& pixel) const;

  // ExportableView
  QString toCsv() const override;

 private:
  void rebuild();
  void rebuildTicks();
  // Applies max(own need, the linked views' needs) as the label steps; true if they changed.
  bool applyLinkedSteps();
  void rebuildValueTexts();
  void applyRange();
  void onMouseMove(QMouseEvent* ev);

  QCPColorMap* m_map = nullptr;
  QCPColorScale* m_scale = nullptr;
  int m_rows = 0, m_cols = 0;
  QVector<double> m_values;  // row-major
  QStringList m_rowLabels, m_colLabels;
  bool m_autoRange = true;
  double m_lo = 0.0, m_hi = 1.0;
  bool m_showValues = false;
  int m_maxValueCells = 625;
  int m_precision = 2;
  bool m_thin = false;
  int m_colStep = 1, m_rowStep = 1;
  int m_needColStep = 1, m_needRowStep = 1;  // what this view needs at its size
  QVector<QPointer<HeatmapView>> m_linked;   // the other views of its thinning group
  QVector<int> m_keyCols;                    // sorted
  QVector<int> m_firstKeyCols;               // sorted, a subset of m_keyCols
};

}  // namespace csw
