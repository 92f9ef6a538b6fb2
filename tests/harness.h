// The Qt Test executable (GUI, widgets, figures, and core tests not yet moved to
// tests/core/, see tests/README.md). Each tests/test_<name>.cpp defines one QObject
// test class and registers it with CS_TEST(Class, "<name>"); CTest runs
// `cellscope_tests <name>` for each file (see tests/CMakeLists.txt). The Qt-free core
// tests have their own harness, tests/core/harness.h.
#pragma once
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QObject>
#include <QRegularExpression>
#include <QString>
#include <QXmlStreamReader>
#include <QtTest/QtTest>

#include <functional>
#include <string>

namespace cstest {
int register_test(const char* name, std::function<QObject*()> factory);
// Scratch directory unique to this test process (removed at exit unless CS_KEEP_TMP=1).
QString temp_dir();
// Path of the built cellscope-cli and the source tree.
QString cli_path();
QString source_dir();
// Run cellscope-cli with args; returns exit code, fills stdout/stderr.
int run_cli(const QStringList& args, QString* out = nullptr, QString* err = nullptr, int timeout_ms = 600000);
// The JSON object in a file (a run's summary.json, config.json); empty when it cannot be read.
inline QJsonObject readJsonObject(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return QJsonObject();
  return QJsonDocument::fromJson(f.readAll()).object();
}

// The text an SVG draws: the characters of its <text> elements, in order, joined without
// spaces (a wrapped line may break inside a hyphenated word) and without white space.
inline QString svgTextRun(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return QString();
  QXmlStreamReader xml(&f);
  QString out;
  int inText = 0;
  while (!xml.atEnd()) {
    xml.readNext();
    if (xml.isStartElement() && xml.name() == QLatin1String("text")) ++inText;
    else if (xml.isEndElement() && xml.name() == QLatin1String("text")) --inText;
    else if (xml.isCharacters() && inText > 0) out += xml.text();
  }
  return out.remove(QRegularExpression(QStringLiteral("\\s")));
}

}  // namespace cstest

#define CS_TEST(Class, Name) \
  static int cs_test_registered_##Class = ::cstest::register_test(Name, [] { return new Class; });
