// CurvePlot: live training curves on QCustomPlot.
//
// Series are keyed by a string id and have a label (legend/tooltip) and a colour.
// Data is (x, y) pairs; x is whatever the caller gives (step, epoch, seconds).
//
// Refresh model: appendPoints()/setSeries()/setBand() only store data in the
// QCPGraph data containers (sorted insert; appending at the end is amortised
// O(k)) and mark the plot dirty. They never replot. The caller drives a fixed
// rate refresh by calling replotIfDirty() from a QTimer (e.g. every 100 ms),
// which updates the smoothed curves incrementally, auto-fits the view while the
// user has not zoomed/panned, and queues a replot (PlotView::requestReplot).
// Title, labels and the interactive toggles (smoothing slider, log axes, legend,
// reset) queue a replot at once.
//
// Interaction: drag = pan, wheel = zoom (both axes), double click or the
// "Reset" button = reset view (auto-fit, which also resumes following new data).
// Hovering shows a tooltip with the nearest point's series label, x and y.
//
// Smoothing: factor f in [0, 0.99] (slider). The smoothed curve is TensorBoard's
// debiased exponential moving average:
//     e_0 = 0, e_t = f * e_{t-1} + (1 - f) * y_t,  s_t = e_t / (1 - f^t)
// so there is no start-up bias towards 0 (a constant series smooths to itself
// at every point, and a curve that starts at 5 is not pulled towards 0 at the
// left end). Non-finite y values are passed through and do not enter the
// average. When f > 0 the smoothed curve is drawn on top in the series colour
// and the raw curve faintly behind it.
//
// Sparse series: a series with few points (at most kMarkerPoints) is drawn with
// markers as well as its line, so a lone point (the first validation value, a
// single `test` value) is visible. setSeriesSparse(id) marks an evaluation
// series: always markers, never smoothed (smoothing is for dense training
// series only). A series has a legend entry only once it has a finite point.
//
// Log axes: a range under two decades gets linear "nice" ticks (2, 2.5, 3, ...)
// instead of powers of ten; labels use up to 6 significant digits, so two ticks
// never share a label.
//
// Toolbar: the full row (smoothing slider, log x, log y, legend, reset) when the
// view is wide enough; otherwise one compact "View" button whose menu holds the
// same controls (viewMenu()), so nothing is clipped in a narrow window.
//
// Export caption: setSubject(text) names the runs; exportCaption() states them,
// the x axis and the smoothing (factor, which series, which are unsmoothed);
// exportTo() writes it under the figure.
//
// Bands: setBand(id, xs, lower, upper) draws a filled band (min-max or
// mean +- std) in the series colour behind the curves (QCPGraph channel fill).
// Marker: setMarker(x) draws a vertical line at x ("the step being viewed").
// X extent: setXExtent(lo, hi) is a range of x the auto-fit always covers besides the data
// (the Analyses pane: the training range and every checkpoint its slider can select, so the
// marker is in view at each of them, even with one validation point); clear() removes it.
// Reference lines: setReferenceLine(id, y, label) draws a labelled horizontal dashed
// line at y across the plot (a baseline: the lead baseline's BLEU, the frequency
// baseline's accuracy); the auto-fitted y range includes every reference line as well
// as every point (a reference line on a log axis needs y > 0), and the export caption
// names each line with its value. clear() removes them with the series.
//
// CSV (toCsv): long format, header "series,x,y", one row per raw point of each
// series in series order (series = id); bands and smoothed values are not included.
//
// Large data: a QCPGraph line with adaptive sampling (QCustomPlot's default)
// draws 1,000,000 points in a few ms; graphs above `kNoAntialiasPoints`
// points are drawn without antialiasing. See benchReplotMs().
#pragma once

#include <QColor>
#include <QHash>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "plot_view.h"

class QCustomPlot;
class QCPAxis;
class QCPGraph;
class QCPItemLine;
class QCheckBox;
class QMouseEvent;
class QResizeEvent;
class QLabel;
class QSlider;
class QToolButton;

namespace csw {

class CurvePlot : public PlotView {
  Q_OBJECT
 public:
  static constexpr int kNoAntialiasPoints = 100000;
  static constexpr int kMarkerPoints = 30;

  explicit CurvePlot(QWidget* parent = nullptr);
  ~CurvePlot() override;

  // Series. addSeries on an existing id updates its label/colour. An invalid
  // colour picks the next one from the palette (PlotView::paletteColor).
  void addSeries(const QString& id, const QString& label = QString(), const QColor& color = QColor());
  void removeSeries(const QString& id);
  void clear();
  bool hasSeries(const QString& id) const;
  QStringList seriesIds() const;
  QString seriesLabel(const QString& id) const;
  QColor seriesColor(const QString& id) const;
  int pointCount(const QString& id) const;
  // An evaluation series: markers, never smoothed (see above).
  void setSeriesSparse(const QString& id, bool sparse = true);
  bool seriesSparse(const QString& id) const;
  // Whether the series currently draws markers / has a legend entry / is smoothed.
  bool seriesHasMarkers(const QString& id) const;
  bool seriesInLegend(const QString& id) const;
  bool seriesSmoothed(const QString& id) const;

  // Data (series created on the fly with label = id). xs and ys must have the
  // same length (extra elements are ignored). Never replots.
  void appendPoints(const QString& id, const QVector<double>& xs, const QVector<double>& ys);
  void appendPoint(const QString& id, double x, double y);
  void setSeries(const QString& id, const QVector<double>& xs, const QVector<double>& ys);
  QVector<double> seriesX(const QString& id) const;
  QVector<double> seriesY(const QString& id) const;
  // Smoothed values of a series as currently computed (after replotIfDirty()).
  QVector<double> smoothedY(const QString& id) const;

  // Filled band behind series id (created if needed). Never replots.
  void setBand(const QString& id, const QVector<double>& xs, const QVector<double>& lower,
               const QVector<double>& upper);
  void removeBand(const QString& id);
  bool hasBand(const QString& id) const;

  // Horizontal reference lines (see above). An invalid colour is dark grey. Never replot.
  void setReferenceLine(const QString& id, double y, const QString& label, const QColor& color = QColor());
  void removeReferenceLine(const QString& id);
  void clearReferenceLines();
  QStringList referenceLineIds() const;
  double referenceLineValue(const QString& id) const;  // NaN when there is none
  QString referenceLineLabel(const QString& id) const;
  // The label's box in the plot's pixels (after a replot); empty when there is none. Each
  // label sits above its line, or below it when the line is in the upper half of the view
  // (a baseline at the top of the fitted range keeps its label inside the plot), and the
  // labels of several lines are staggered along x (close baselines never hide each other).
  QRect referenceLabelRect(const QString& id) const;
  QRect plotAreaRect() const;  // the axis rect, in the same pixels

  // Vertical marker line.
  void setMarker(double x);
  void clearMarker();
  bool hasMarker() const;
  double markerX() const;
  // The marker's x in the plot's pixels (after a replot); NaN when there is none.
  double markerPixelX() const;

  // X extent (see above). lo > hi: none. Never replots.
  void setXExtent(double lo, double hi);
  void clearXExtent() { setXExtent(1, 0); }
  bool hasXExtent() const { return m_extentLo <= m_extentHi; }

  // View options.
  void setXLog(bool log);
  void setYLog(bool log);
  bool xLog() const { return m_xLog; }
  bool yLog() const { return m_yLog; }
  void setSmoothing(double factor);  // clamped to [0, 0.99]
  double smoothing() const { return m_smoothing; }
  void setLegendVisible(bool visible);
  bool legendVisible() const;
  // The corner of the plot area the legend is in (placed where it hides the fewest points, at each layout).
  Qt::Alignment legendCorner() const;
  void setToolbarVisible(bool visible);
  // True when the toolbar is collapsed into the "View" menu button.
  bool toolbarCompact() const { return m_compact; }
  QToolButton* viewMenuButton() const { return m_menuButton; }
  QWidget* toolbar() const { return m_toolbar; }
  // What the export caption names: the run(s) shown (e.g. "run 2026...-gru").
  void setSubject(const QString& subject);
  QString subject() const { return m_subject; }
  QString exportCaption() const;
  bool exportTo(const QString& path, const ExportOptions& options = ExportOptions(), QString* error = nullptr);
  bool autoFit() const { return m_autoFit; }

  // Debiased EMA (see above) of ys with the given factor.
  static QVector<double> smoothEma(const QVector<double>& ys, double factor);

  // Nearest data point to a pixel position of plot() within maxDistPx pixels.
  bool nearestPoint(const QPointF& pixel, double maxDistPx, QString* id, double* x, double* y) const;
  // Tooltip text for a pixel position of plot() (empty when no point is near).
  QString tooltipTextAt(const QPointF& pixel) const;

  // Builds an offscreen CurvePlot (1000x700) with one series of `points`
  // points (smoothing `smoothing`, so raw + smoothed curves are drawn), and
  // returns the mean wall time of QCustomPlot::replot() in milliseconds.
  static double benchReplotMs(int points);
  static double benchReplotMs(int points, double smoothing);

  bool isDirty() const { return m_dirty; }

  // ExportableView
  QString toCsv() const override;

 public Q_SLOTS:
  // Replots (queued) when data changed since the last call. Returns true if it did.
  bool replotIfDirty();
  // Auto-fit both axes to the data and follow new data again.
  void resetView();

 Q_SIGNALS:
  void smoothingChanged(double factor);
  void viewReset();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void decorationChanged() override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Series;
  struct RefLine;
  Series* series(const QString& id);
  const Series* series(const QString& id) const;
  Series* ensureSeries(const QString& id);
  void styleSeries(Series& s);
  void updateSmoothing(Series& s);
  void fitView();
  // setXLog / setYLog: `axis` log or linear, its toolbar box checked to match, the view fitted again.
  void setLogScale(QCPAxis* axis, QCheckBox* box, bool* current, bool log);
  // The fitted x range widened by kXPadFraction of it at the right (and at the left unless that would show
  // negative steps for data that has none), so a point at the edge is drawn whole.
  void padXRange();
  static constexpr double kXPadFraction = 0.015;
  // The legend in the corner of the axis rect that hides the fewest points (top right on a tie), at each
  // replot: a fixed top-right legend sat on rising curves and hid the newest points.
  void placeLegend();
  void markDirty() { m_dirty = true; }
  void refreshNow();
  void onMouseMove(QMouseEvent* ev);
  void onRangeChanged();
  void placeReferenceLabels();
  void updateToolbarMode();
  bool smoothOn(const Series& s) const;

  QCPItemLine* m_marker = nullptr;
  QWidget* m_toolbar = nullptr;
  QSlider* m_smoothSlider = nullptr;
  QLabel* m_smoothLabel = nullptr;
  QCheckBox* m_logX = nullptr;
  QCheckBox* m_logY = nullptr;
  QCheckBox* m_legendBox = nullptr;
  QToolButton* m_resetButton = nullptr;
  QToolButton* m_menuButton = nullptr;
  QList<QWidget*> m_fullControls;
  int m_fullToolbarWidth = 0;
  bool m_compact = false;
  QString m_subject;
  QList<Series*> m_series;  // in insertion order
  QList<RefLine*> m_refLines;
  QHash<QString, Series*> m_byId;
  int m_colorIndex = 0;
  double m_smoothing = 0.0;
  bool m_xLog = false, m_yLog = false;
  bool m_dirty = false;
  bool m_autoFit = true;
  bool m_internalRange = false;
  double m_markerX = 0.0;
  double m_extentLo = 1.0, m_extentHi = 0.0;  // none
};

}  // namespace csw
