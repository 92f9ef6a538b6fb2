#include "json_file.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

namespace gui {

QJsonObject readJsonObjectFile(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return QJsonObject();
  return QJsonDocument::fromJson(f.readAll()).object();
}

QString jsonValueText(const QJsonValue& v) {
  if (v.isUndefined()) return QString();
  if (v.isString()) return v.toString();
  if (v.isDouble()) return QString::number(v.toDouble(), 'g', 12);
  if (v.isBool()) return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
  if (v.isNull()) return QStringLiteral("null");
  const QJsonDocument d = v.isArray() ? QJsonDocument(v.toArray()) : QJsonDocument(v.toObject());
  return QString::fromUtf8(d.toJson(QJsonDocument::Compact));
}

}  // namespace gui
