#include "json_qt.h"

#include <QJsonDocument>

#include "config/json.h"

namespace gui {

nlohmann::json toCoreJson(const QJsonObject& o) {
  return nlohmann::json::parse(QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
}

QJsonObject toQtJson(const nlohmann::json& j) {
  return QJsonDocument::fromJson(QByteArray::fromStdString(j.dump())).object();
}

QVariant toVariant(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return QVariant::fromValue<qlonglong>(v.get<long long>());
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  return QVariant();
}

nlohmann::json parseValue(const QString& text) {
  const std::string s = text.trimmed().toStdString();
  try {
    return cs::parse_json(s, "JSON text");
  } catch (...) {
    return nlohmann::json(s);  // a bare word: a string (e.g. sat_mzu)
  }
}

}  // namespace gui
