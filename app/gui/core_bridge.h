// The GUI's window onto cellscope_core. Only core_bridge.cpp and
// train_worker.cpp include core headers; everything here is Qt types, so the
// widely included GUI headers stay free of torch and nlohmann.
#pragma once
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

#include "gui_types.h"
#include "option_form.h"

namespace cs {
struct MetricsRecord;
}

namespace gui {

QStringList cellNames();
QStringList taskNames();
QString cellDescription(const QString& cell);
QString taskDescription(const QString& task);

// The form fields of every option the cell and task have (cs::options_for),
// except the ones the window edits with its own controls (task.name,
// model.cell, dataset.name, dataset.path). Tooltip = OptionSpec::help + range + default.
QList<csw::OptionDesc> optionDescs(const QString& cell, const QString& task);
// Paths edited outside the form.
bool isDedicatedPath(const QString& path);

// cs::validate_config: (path, message) pairs; empty = valid.
QList<QPair<QString, QString>> validateConfig(const QJsonObject& cfg);
// The resolved config (defaults filled in). Call on a valid config.
QJsonObject resolveConfig(const QJsonObject& cfg);

// Builds the task (loads the dataset for its vocabulary) and counts the
// parameters. Blocking and slow for big corpora: call it off the GUI thread.
// Returns -1 and sets *error on failure.
qint64 parameterCount(const QJsonObject& cfg, QString* error);

QString defaultWorkspace();
QString resourcesDir();
QString presetsDir();
QString manifestPath();
QString dataCacheDir();
QString coreVersion();  // "LibTorch x.y"

// A dataset of datasets/manifest.json.
struct DatasetEntry {
  QString name, format, description;
  QStringList tasks;
  bool present = false;  // all its files are in the data cache
};
QList<DatasetEntry> manifestDatasets();

// Guess a dataset file's format from its name and first bytes:
// "ptb_char" (a directory or file with ptb.char.*), "text8" (one long line of
// a-z and spaces), "jsonl" (each line a JSON object), "csv", or "text".
QString detectFormat(const QString& path);

// Seconds as "42s", "3m07s" or "2h05m" (cs::format_duration, as the CLI shows them).
QString formatDuration(double seconds);

// Parse one metrics.jsonl file (a torn last line is skipped).
// One metrics.jsonl record as Qt values.
MetricPoint toMetricPoint(const cs::MetricsRecord& r);
QVector<MetricPoint> readMetricsFile(const QString& path);

}  // namespace gui
