#include "widgets_info.h"

#include "qcp.h"

namespace csw {
QString qcustomplot_version() { return QStringLiteral(QCUSTOMPLOT_VERSION_STR); }
}  // namespace csw
