// CurvePlot's inside, shared by its three files (curve_plot.cpp: construction, series, smoothing,
// bands, export; curve_plot_marks.cpp: reference lines, legend, marker; curve_plot_view.cpp: axes,
// the view's range, hover, CSV) and by nothing else.
#pragma once
#include <QColor>
#include <QString>

#include <cmath>

#include "curve_plot.h"
#include "qcp.h"

namespace csw {

// TensorBoard's debiased EMA, one value at a time (a member of CurvePlot::Series, so not in an
// anonymous namespace).
namespace curve_plot_detail {
struct Ema {
  double last = 0.0;
  int n = 0;
  double push(double y, double f) {
    if (!std::isfinite(y)) return y;
    last = last * f + (1.0 - f) * y;
    ++n;
    const double debias = 1.0 - std::pow(f, n);
    return debias > 0 ? last / debias : y;
  }
};
}  // namespace curve_plot_detail
using curve_plot_detail::Ema;

struct CurvePlot::Series {
  QString id, label;
  QColor color;
  QCPGraph* raw = nullptr;
  QCPGraph* smooth = nullptr;
  QCPGraph* bandLo = nullptr;
  QCPGraph* bandHi = nullptr;
  Ema ema;
  int smoothedCount = 0;
  bool smoothReset = true;
  bool sparse = false;  // an evaluation series: markers, never smoothed
};

struct CurvePlot::RefLine {
  QString id, label;
  double y = 0;
  QColor color;
  QCPItemLine* line = nullptr;
  QCPItemText* text = nullptr;
};

}  // namespace csw
