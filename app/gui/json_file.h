// Small Qt-only JSON helpers shared by the panels that read run files (no core headers).
#pragma once
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

namespace gui {

// The JSON object in `path`; an empty object when the file is missing, unreadable or not an
// object (a run file being written by another process is read again on its next change).
QJsonObject readJsonObjectFile(const QString& path);
// A value as the user would type it: strings bare, numbers with 12 significant digits,
// true/false, null, arrays and objects as compact JSON; "" for an absent value.
QString jsonValueText(const QJsonValue& v);

}  // namespace gui
