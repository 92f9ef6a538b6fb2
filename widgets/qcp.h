// Include QCustomPlot from Qt targets built with QT_NO_KEYWORDS.
// qcustomplot.h uses the `signals` and `foreach` keywords, which do not exist
// under QT_NO_KEYWORDS; map them to Q_SIGNALS / Q_FOREACH just for this header.
#pragma once
#include <QtCore/qglobal.h>
#if defined(QT_NO_KEYWORDS) && !defined(signals)
#define signals Q_SIGNALS
#define CSW_QCP_UNDEF_SIGNALS
#endif
#if defined(QT_NO_KEYWORDS) && !defined(foreach)
#define foreach Q_FOREACH
#define CSW_QCP_UNDEF_FOREACH
#endif
#include <qcustomplot.h>
#ifdef CSW_QCP_UNDEF_SIGNALS
#undef signals
#undef CSW_QCP_UNDEF_SIGNALS
#endif
#ifdef CSW_QCP_UNDEF_FOREACH
#undef foreach
#undef CSW_QCP_UNDEF_FOREACH
#endif
