// Qt JSON <-> nlohmann JSON (the core's json), in one place. Only the files
// that reach the core include this header (it pulls nlohmann/json.hpp).
#pragma once
#include <QJsonObject>
#include <QString>
#include <QVariant>

#include <nlohmann/json.hpp>

namespace gui {

nlohmann::json toCoreJson(const QJsonObject& o);
QJsonObject toQtJson(const nlohmann::json& j);     // an object (anything else: empty)
QVariant toVariant(const nlohmann::json& scalar);  // bool, integer, number or string; else invalid
// A value typed by the user: JSON when it parses (numbers, true, [1,2]), else the text as a string.
nlohmann::json parseValue(const QString& text);

}  // namespace gui
