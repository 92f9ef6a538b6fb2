// Core <-> Qt conversions (see core_bridge.h). Configs cross as JSON text.
#include "core_bridge.h"
#include "json_qt.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QStandardPaths>
#include <QThread>

#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>

#include "analysis/run_names.h"
#include "cells/registry.h"
#include "data/manifest.h"
#include "config/common_options.h"
#include "config/json.h"
#include "config/schema.h"
#include "tasks/task.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "util/cpu_cache.h"
#include "util/error.h"
#include "util/format.h"
#include "util/paths.h"
#include "json_file.h"

#include <torch/version.h>

namespace gui {

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }

QString fmtBound(double v) {
  if (v >= 1e299) return QStringLiteral("inf");
  if (v <= -1e299) return QStringLiteral("-inf");
  return QString::number(v, 'g', 10);
}

}  // namespace

QStringList cellNames() {
  QStringList out;
  for (auto& c : cs::cell_registry()) out << q(c.name);
  return out;
}

QStringList taskNames() {
  QStringList out;
  for (auto& t : cs::task_registry()) out << q(t.name);
  return out;
}

QString cellDescription(const QString& cell) {
  for (auto& c : cs::cell_registry())
    if (q(c.name) == cell) return q(c.description);
  return QString();
}

QString taskDescription(const QString& task) {
  for (auto& t : cs::task_registry())
    if (q(t.name) == task) return q(t.description);
  return QString();
}

bool isDedicatedPath(const QString& path) {
  return path == QLatin1String("task.name") || path == QLatin1String("model.cell") ||
         path == QLatin1String("dataset.name") || path == QLatin1String("dataset.path");
}

QList<csw::OptionDesc> optionDescs(const QString& cell, const QString& task) {
  QList<csw::OptionDesc> out;
  for (const auto& o : cs::options_for(cell.toStdString(), task.toStdString())) {
    csw::OptionDesc d;
    d.section = q(o.section);
    d.key = q(o.key);
    if (isDedicatedPath(d.path())) continue;
    QString label = d.key;
    label.replace(QLatin1Char('_'), QLatin1Char(' '));
    if (!label.isEmpty()) label[0] = label[0].toUpper();
    d.label = label;
    switch (o.type) {
      case cs::OptType::Int:
        d.type = csw::OptionDesc::Int;
        break;
      case cs::OptType::Float:
        d.type = csw::OptionDesc::Float;
        break;
      case cs::OptType::Bool:
        d.type = csw::OptionDesc::Bool;
        break;
      case cs::OptType::String:
        d.type = csw::OptionDesc::String;
        break;
      case cs::OptType::Enum:
        d.type = csw::OptionDesc::Enum;
        break;
    }
    for (auto& c : o.choices) d.choices << q(c);
    d.defaultValue = toVariant(o.default_value);
    // No default in the schema (a std::optional member: "unset" means the task decides,
    // e.g. the dataset format's own default): the form leaves it out of the config until
    // the user sets it, instead of sending 0 / false / "" (which the task would take
    // literally, or refuse as out of range).
    d.optional = o.default_value.is_null() && d.type != csw::OptionDesc::Enum;
    if (!d.defaultValue.isValid() && d.type == csw::OptionDesc::String) d.defaultValue = QString();
    // A file named by path: a Browse... button beside the field.
    if (d.path() == QLatin1String("model.script"))
      d.fileFilter = QStringLiteral("TorchScript cell sources (*.py);;All files (*)");
    if (d.type == csw::OptionDesc::Int) {
      // QSpinBox holds an int: clamp the schema's range.
      d.min = std::max(o.min, double(INT_MIN + 1));
      d.max = std::min(o.max, double(INT_MAX));
    } else if (d.type == csw::OptionDesc::Float) {
      d.min = o.min;
      d.max = o.max;
    }
    QString help = q(o.help);
    if (d.type == csw::OptionDesc::Int || d.type == csw::OptionDesc::Float)
      help += QStringLiteral("\nRange: [%1, %2].").arg(fmtBound(o.min), fmtBound(o.max));
    if (!o.default_value.is_null()) help += QStringLiteral(" Default: %1.").arg(q(o.default_value.dump()));
    else if (d.optional)
      help += QStringLiteral("\nShown as 'default' while unset: left out of the configuration, the task decides.");
    help += QStringLiteral("\nConfig path: %1").arg(d.path());
    d.help = help.trimmed();
    d.advanced = o.advanced;
    out << d;
  }
  return out;
}

QList<QPair<QString, QString>> validateConfig(const QJsonObject& cfg) {
  QList<QPair<QString, QString>> out;
  for (auto& e : cs::validate_config(toCoreJson(cfg))) out << qMakePair(q(e.path), q(e.message));
  return out;
}

QJsonObject resolveConfig(const QJsonObject& cfg) { return toQtJson(cs::resolve_config(toCoreJson(cfg))); }

qint64 parameterCount(const QJsonObject& cfg, QString* error) {
  try {
    auto resolved = cs::load_and_resolve(toCoreJson(cfg));
    auto task = cs::make_task(resolved);
    return task->parameter_count();
  } catch (const std::exception& e) {
    if (error) *error = q(e.what());
    return -1;
  }
}

QString defaultWorkspace() { return q(cs::default_workspace()); }
QString resourcesDir() { return q(cs::resources_dir()); }
QString presetsDir() { return QDir(resourcesDir()).filePath(QStringLiteral("presets")); }
QString manifestPath() { return q(cs::datasets_manifest_path()); }
QString dataCacheDir() { return q(cs::data_cache_dir()); }
QString formatDuration(double seconds) { return q(cs::format_duration(seconds)); }
QString coreVersion() { return QStringLiteral("LibTorch %1").arg(QStringLiteral(TORCH_VERSION)); }

QList<DatasetEntry> manifestDatasets() {
  QList<DatasetEntry> out;
  cs::json manifest;
  try {
    manifest = cs::load_manifest(manifestPath().toStdString());
  } catch (const std::exception&) {
    return out;  // no (or a broken) manifest: the window offers the schema's default dataset
  }
  for (const std::string& name : cs::manifest_names(manifest)) {
    const cs::json& e = *cs::find_manifest_entry(manifest, name);
    DatasetEntry d;
    d.name = q(name);
    d.format = q(e.value("format", std::string()));
    d.description = q(e.value("description", std::string()));
    if (e.contains("tasks"))
      for (const auto& t : e.at("tasks")) d.tasks << q(t.get<std::string>());
    d.present = cs::dataset_fetched(e);
    d.built = e.value("obtain", std::string()) == "build";
    out << d;
  }
  return out;
}

QString detectFormat(const QString& path) {
  QFileInfo fi(path);
  if (fi.isDir()) {
    QDir d(path);
    if (!d.entryList({QStringLiteral("ptb.char.*")}, QDir::Files).isEmpty()) return QStringLiteral("ptb_char");
    if (!d.entryList({QStringLiteral("ptb.*.txt")}, QDir::Files).isEmpty()) return QStringLiteral("ptb_word");
    // The issue-18 directories (what the core's loaders read, core/base/data): Gigaword's
    // train.article.txt; a CBT set (a *train*.txt file whose first line is the numbered
    // "1 ..." of a CBT example, e.g. cbtest_CN_train.txt); parallel text (train.<src> and
    // train.<tgt>, e.g. train.de / train.en).
    if (d.exists(QStringLiteral("train.article.txt"))) return QStringLiteral("gigaword");
    for (const QString& name : d.entryList({QStringLiteral("*train*.txt")}, QDir::Files, QDir::Name)) {
      QFile f(d.filePath(name));
      if (f.open(QIODevice::ReadOnly) && f.readLine(4096).startsWith("1 ")) return QStringLiteral("cbt");
    }
    if (d.entryList({QStringLiteral("train.*")}, QDir::Files).size() >= 2) return QStringLiteral("parallel");
    return QStringLiteral("directory");
  }
  const QString name = fi.fileName().toLower();
  if (name.startsWith(QLatin1String("ptb.char"))) return QStringLiteral("ptb_char");
  if (name.endsWith(QLatin1String(".jsonl"))) return QStringLiteral("jsonl");
  if (name.endsWith(QLatin1String(".csv")) || name.endsWith(QLatin1String(".tsv"))) return QStringLiteral("csv");
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return QStringLiteral("unreadable");
  const QByteArray head = f.read(64 * 1024);
  if (head.isEmpty()) return QStringLiteral("empty");
  bool text8 = head.size() >= 1024;
  for (char c : head)
    if (!((c >= 'a' && c <= 'z') || c == ' ')) {
      text8 = false;
      break;
    }
  if (text8) return QStringLiteral("text8");
  const QList<QByteArray> lines = head.split('\n');
  int json_lines = 0, nonempty = 0;
  for (int i = 0; i + 1 < lines.size() && i < 20; ++i) {
    const QByteArray l = lines[i].trimmed();
    if (l.isEmpty()) continue;
    ++nonempty;
    if (l.startsWith('{') && QJsonDocument::fromJson(l).isObject()) ++json_lines;
  }
  if (nonempty > 0 && json_lines == nonempty) return QStringLiteral("jsonl");
  return QStringLiteral("text");
}

MetricPoint toMetricPoint(const cs::MetricsRecord& r) {
  MetricPoint p;
  p.step = r.step;
  p.epoch = r.epoch;
  p.elapsed = r.elapsed;
  p.trainFlops = r.train_flops;
  p.eval = r.eval;
  p.split = QString::fromStdString(r.split);
  p.values.reserve(static_cast<int>(r.values.size()));
  for (const auto& [k, v] : r.values) p.values.append({QString::fromStdString(k), v});
  return p;
}

QVector<MetricPoint> readMetricsFile(const QString& path, bool joinParent) {
  // The format is core's (train/metrics.h): the same reader as the CLI and the analyses.
  // The tolerant reader: a damaged line ends the curve there instead of throwing into a slot.
  std::string problem;
  const auto records = cs::read_metrics(path.toStdString(), &problem);
  QVector<MetricPoint> out;
  if (joinParent && QFileInfo(path).fileName() == QLatin1String("metrics.jsonl"))
    out = parentMetrics(QFileInfo(path).absolutePath());
  out.reserve(out.size() + static_cast<int>(records.size()));
  for (const auto& r : records) out << toMetricPoint(r);
  return out;
}

bool runParent(const QJsonObject& config, QString* parentDir, qint64* step) {
  const QJsonValue pv = config.value(QStringLiteral("parent"));
  if (!pv.isObject()) return false;
  const QJsonObject p = pv.toObject();
  const QString dir = p.value(QStringLiteral("run_dir")).toString();
  if (dir.isEmpty() || !p.value(QStringLiteral("step")).isDouble()) return false;
  if (parentDir) *parentDir = dir;
  if (step) *step = qint64(p.value(QStringLiteral("step")).toDouble());
  return true;
}

QVector<MetricPoint> parentMetrics(const QString& runDir) {
  // Walk up the chain (child -> parent -> grandparent), then concatenate from the root down,
  // each generation's records cut at the step where the next one forked from it.
  struct Gen {
    QString dir;
    qint64 upTo;
  };
  QVector<Gen> chain;
  QStringList seen{QFileInfo(runDir).absoluteFilePath()};
  QString dir = runDir;
  for (int depth = 0; depth < 32; ++depth) {
    QString parent;
    qint64 step = 0;
    if (!runParent(readJsonObjectFile(QDir(dir).filePath(QStringLiteral("config.json"))), &parent, &step)) break;
    if (QFileInfo(parent).isRelative()) parent = QDir(QFileInfo(dir).absolutePath()).filePath(parent);
    parent = QFileInfo(parent).absoluteFilePath();
    if (seen.contains(parent)) break;
    seen << parent;
    chain.prepend({parent, step});
    dir = parent;
  }
  QVector<MetricPoint> out;
  for (const Gen& g : chain) {
    // This generation's records up to the step its child forked from (the child's own
    // step counter continues from there, so the steps follow on).
    for (const auto& r : cs::read_metrics(QDir(g.dir).filePath(QStringLiteral("metrics.jsonl")).toStdString()))
      if (r.step <= g.upTo) out << toMetricPoint(r);
  }
  return out;
}

QVector<MetricPoint> readMetricsFrom(const QString& path, qint64* offset, bool* rewound) {
  QVector<MetricPoint> out;
  if (rewound) *rewound = false;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return out;
  if (f.size() < *offset) {
    *offset = 0;
    if (rewound) *rewound = true;
  }
  if (!f.seek(*offset)) return out;
  const QByteArray chunk = f.readAll();
  const int end = chunk.lastIndexOf('\n');
  if (end < 0) return out;
  *offset += end + 1;
  for (const QByteArray& line : chunk.left(end).split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    try {
      out << toMetricPoint(cs::MetricsRecord::from_json(cs::parse_json(line.toStdString(), path.toStdString())));
    } catch (const std::exception&) {
      // an unreadable line is skipped, as cs::read_metrics does
    }
  }
  return out;
}

QStringList comparisonNames(const QList<ComparedRun>& runs, const QStringList& ignoreKeys) {
  std::vector<cs::RunIdentity> ids;
  for (const ComparedRun& run : runs) {
    cs::RunIdentity id;
    id.dir = run.dir.toStdString();
    if (run.hasConfig) id.config = toCoreJson(run.config);
    id.label = cs::RunStore(id.dir).read_label();
    ids.push_back(std::move(id));
  }
  cs::RunNameOptions opt;
  for (const QString& k : ignoreKeys) opt.ignore_keys.push_back(k.toStdString());
  QStringList out;
  for (const std::string& n : cs::comparison_names(ids, opt)) out << q(n);
  return out;
}

bool isBookkeepingOption(const QString& flatKey) { return cs::is_bookkeeping_option(flatKey.toStdString()); }

QString readRunLabel(const QString& runDir) {
  try {
    return q(cs::RunStore(runDir.toStdString()).read_label());
  } catch (const std::exception&) {
    return QString();
  }
}

bool writeRunLabel(const QString& runDir, const QString& label, QString* error) {
  try {
    cs::RunStore(runDir.toStdString()).write_label(label.toStdString());
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
}

QString newRunDirectory(const QString& workspace, const QJsonObject& cfg) {
  return q(cs::new_run_dir(workspace.toStdString(), toCoreJson(cfg)));
}

QList<qint64> checkpointSteps(const QString& runDir) {
  QList<qint64> out;
  try {
    for (int64_t s : cs::RunStore(runDir.toStdString()).checkpoint_steps()) out << qint64(s);
  } catch (const std::exception&) {
  }
  return out;
}

QString cliProgram() {
  const QString env = qEnvironmentVariable("CELLSCOPE_CLI");
  if (!env.isEmpty()) return QFileInfo(env).isExecutable() ? env : QString();
  const QString here = QCoreApplication::applicationDirPath();
  for (const QString& rel : {QStringLiteral("cellscope-cli"), QStringLiteral("../cli/cellscope-cli"),
                             QStringLiteral("../app/cli/cellscope-cli")}) {
    const QFileInfo fi(QDir(here).filePath(rel));
    if (fi.isFile() && fi.isExecutable()) return fi.canonicalFilePath();
  }
  return QStandardPaths::findExecutable(QStringLiteral("cellscope-cli"));
}

int threadsPerProcess(int n) {
  const int cores = std::max(1, QThread::idealThreadCount());
  const int forTraining = std::max(1, cores - 1);  // a core for the window
  return std::max(1, forTraining / std::max(1, n));
}

bool installCpuCache() { return cs::install_cpu_cache(); }

}  // namespace gui
