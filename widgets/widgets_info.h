#pragma once
#include <QString>
namespace csw {
// Version of the widget library's QCustomPlot (for `info` and the About dialog).
QString qcustomplot_version();
}  // namespace csw
