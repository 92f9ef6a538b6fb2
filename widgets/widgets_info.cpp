#include "widgets_info.h"
#include <qcustomplot.h>
namespace csw {
QString qcustomplot_version() { return QStringLiteral(QCUSTOMPLOTVERSIONSTR); }
}
