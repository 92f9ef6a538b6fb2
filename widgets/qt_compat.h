// The differences between the Qt 6 versions Cellscope builds against (Debian 12's 6.4, Debian 13's
// 6.8), each in one place; every entry names the versions it bridges.
#pragma once

#include <QCheckBox>
#include <QtGlobal>

namespace csw::qt_compat {

// A check box's state changes, 6.4 .. 6.6 vs 6.7 and newer: `stateChanged(int)` is deprecated from
// 6.7 for `checkStateChanged(Qt::CheckState)`. `f` takes no argument (it reads the box).
template <class Context, class F>
QMetaObject::Connection onCheckStateChanged(QCheckBox* box, Context* context, F f) {
#if QT_VERSION >= QT_VERSION_CHECK(6, 7, 0)
  return QObject::connect(box, &QCheckBox::checkStateChanged, context, [f](Qt::CheckState) { f(); });
#else
  return QObject::connect(box, &QCheckBox::stateChanged, context, [f](int) { f(); });
#endif
}

}  // namespace csw::qt_compat
