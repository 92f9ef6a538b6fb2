// BarChart: grouped bars over labelled buckets, with per-bucket counts and
// optional error bars (QCustomPlot QCPBars + QCPBarsGroup + QCPErrorBars).
//
// Typical uses: BPC by sequence length (buckets = length ranges, one bar per
// run, the number of sequences per bucket printed above each bucket or drawn on
// a second y axis), and accuracy vs filter length with the std over seeds as
// symmetric error bars.
//
// CSV (toCsv): header "bucket,series,value,count,error", one row per
// (series, bucket), series-major; count/error are empty when not set.
#pragma once

#include <QColor>
#include <limits>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "plot_view.h"

class QCustomPlot;
class QCPBars;
class QCPBarsGroup;
class QCPErrorBars;
class QCPGraph;

namespace csw {

class BarChart : public PlotView {
  Q_OBJECT
 public:
  enum class CountsMode { Hidden, Text, SecondAxis };

  explicit BarChart(QWidget* parent = nullptr);
  ~BarChart() override;

  void setBuckets(const QStringList& labels);
  QStringList buckets() const { return m_buckets; }
  // values[i] for bucket i; errors empty = no error bars for this series.
  // An existing id is replaced. Invalid colour = palette.
  void setSeries(const QString& id, const QString& label, const QVector<double>& values,
                 const QVector<double>& errors = {}, const QColor& color = QColor());
  void removeSeries(const QString& id);
  void clearSeries();
  QStringList seriesIds() const;
  bool hasErrorBars(const QString& id) const;

  // Number of items per bucket (e.g. sequences), shown according to countsMode.
  void setCounts(const QVector<int>& counts);
  QVector<int> counts() const { return m_counts; }
  void setCountsMode(CountsMode mode);
  CountsMode countsMode() const { return m_countsMode; }
  void setCountsLabel(const QString& label);  // axis label / text prefix, default "n"

  void setLegendVisible(bool visible);
  // Fixed y range; NaN for either = automatic (0 .. max(value + error) with headroom).
  void setYRange(double lo, double hi);

  // Bucket labels thinned to every step-th (from the first) where all of them would run together in a plot
  // `plotWidth` pixels wide (a gate histogram's 20-50 bins); called at each replot with the widget's width,
  // and by a figure's export with the panel's width there. labelStep(): the step in use.
  void updateLabelThinning(int plotWidth);
  int labelStep() const { return m_labelStep; }

  // ExportableView
  QString toCsv() const override;

 private:
  struct Series;
  void rebuild();

  QCPBarsGroup* m_group = nullptr;
  QCPGraph* m_countGraph = nullptr;
  QStringList m_buckets;
  QList<Series*> m_series;
  QVector<int> m_counts;
  CountsMode m_countsMode = CountsMode::Text;
  QString m_countsLabel = QStringLiteral("n");
  double m_yLo = std::numeric_limits<double>::quiet_NaN();
  double m_yHi = std::numeric_limits<double>::quiet_NaN();
  bool m_legend = true;
  int m_labelStep = 1;
  void rebuildTicks();
};

}  // namespace csw
