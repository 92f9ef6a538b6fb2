#include "run_table.h"

#include <QColor>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLocale>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core_bridge.h"
#include "export.h"
#include "run_watcher.h"
#include "json_file.h"

namespace gui {

namespace {
QString fmtNumber(double v, int prec = 4) { return QLocale().toString(v, 'g', prec); }
}  // namespace

QMap<QString, QString> flattenConfig(const QJsonObject& cfg) {
  QMap<QString, QString> out;
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    if (it.value().isObject()) {
      const QJsonObject sec = it.value().toObject();
      for (auto jt = sec.begin(); jt != sec.end(); ++jt)
        out.insert(it.key() + QLatin1Char('.') + jt.key(), jsonValueText(jt.value()));
    } else if (it.key() != QLatin1String("name") && it.key() != QLatin1String("notes")) {
      out.insert(it.key(), jsonValueText(it.value()));
    }
  }
  return out;
}

bool readRun(const QString& dir, RunInfo* out) {
  const QString cfgPath = QDir(dir).filePath(QStringLiteral("config.json"));
  if (!QFileInfo::exists(cfgPath)) return false;
  // cleanPath: "runs/x/" (a shell's completion) names the run x, at the same path as "runs/x".
  out->dir = QDir::cleanPath(QFileInfo(dir).absoluteFilePath());
  out->name = QFileInfo(out->dir).fileName();
  out->config = readJsonObjectFile(cfgPath);
  const QString sumPath = QDir(dir).filePath(QStringLiteral("summary.json"));
  out->summary = readJsonObjectFile(sumPath);
  out->summaryTime = QFileInfo(sumPath).lastModified();
  out->flat = flattenConfig(out->config);
  out->label = readRunLabel(out->dir);
  return true;
}

QVector<RunInfo> scanWorkspace(const QString& workspace) {
  QVector<RunInfo> runs;
  QDir d(workspace);
  const QStringList names = d.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  runs.reserve(names.size());
  for (const QString& n : names) {
    RunInfo r;
    if (readRun(d.filePath(n), &r)) runs << r;
  }
  return runs;
}

QStringList differingKeys(const QVector<RunInfo>& runs) {
  QStringList out;
  if (runs.size() < 2) return out;
  QSet<QString> keys;
  for (const auto& r : runs)
    for (auto it = r.flat.begin(); it != r.flat.end(); ++it) keys.insert(it.key());
  QStringList sorted(keys.begin(), keys.end());
  std::sort(sorted.begin(), sorted.end());
  for (const QString& k : sorted) {
    if (isBookkeeping(k)) continue;  // never what tells runs apart (config/common_options.h)
    const QString first = runs[0].flat.value(k, QStringLiteral("<unset>"));
    for (const auto& r : runs)
      if (r.flat.value(k, QStringLiteral("<unset>")) != first) {
        out << k;
        break;
      }
  }
  return out;
}

QVector<std::tuple<QString, QString, QString>> configDiff(const QMap<QString, QString>& a,
                                                          const QMap<QString, QString>& b) {
  QVector<std::tuple<QString, QString, QString>> out;
  QSet<QString> keys;
  for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
  for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
  QStringList sorted(keys.begin(), keys.end());
  std::sort(sorted.begin(), sorted.end());
  for (const QString& k : sorted) {
    const QString va = a.value(k, QStringLiteral("(unset)")), vb = b.value(k, QStringLiteral("(unset)"));
    if (va != vb) out.append({k, va, vb});
  }
  return out;
}

bool isBookkeeping(const QString& key) { return isBookkeepingOption(key); }

QString seedGroupKey(const RunInfo& r) {
  QStringList parts;
  for (auto it = r.flat.begin(); it != r.flat.end(); ++it)
    if (it.key() != QLatin1String("training.seed") && !isBookkeeping(it.key()))
      parts << it.key() + QLatin1Char('=') + it.value();
  return parts.join(QLatin1Char('\n'));
}

RunTableModel::RunTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunTableModel::setRuns(QVector<RunInfo> runs) {
  beginResetModel();
  m_runs = std::move(runs);
  QSet<QString> present;
  for (const auto& r : m_runs) present.insert(r.dir);
  m_checked.intersect(present);
  recomputeDiffering();
  endResetModel();
}

int RunTableModel::rowOf(const QString& dir) const {
  const QString abs = QFileInfo(dir).absoluteFilePath();
  for (int i = 0; i < m_runs.size(); ++i)
    if (m_runs[i].dir == abs) return i;
  return -1;
}

int RunTableModel::refreshRun(const QString& dir) {
  RunInfo r;
  if (!readRun(dir, &r)) return -1;
  int row = rowOf(dir);
  if (row < 0) {
    // keep name order
    row = int(std::lower_bound(m_runs.begin(), m_runs.end(), r,
                               [](const RunInfo& a, const RunInfo& b) { return a.name < b.name; }) -
              m_runs.begin());
    beginInsertRows(QModelIndex(), row, row);
    m_runs.insert(row, r);
    endInsertRows();
    const QStringList before = m_differing;
    recomputeDiffering();
    if (before != m_differing) Q_EMIT dataChanged(index(0, Differs), index(rowCount() - 1, Differs));
  } else {
    m_runs[row] = r;
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
  }
  Q_EMIT runUpdated(m_runs[row].dir);
  return row;
}

bool RunTableModel::removeRun(const QString& dir) {
  const int row = rowOf(dir);
  if (row < 0) return false;
  const bool wasChecked = m_checked.remove(m_runs[row].dir);
  beginRemoveRows(QModelIndex(), row, row);
  m_runs.removeAt(row);
  endRemoveRows();
  const QStringList before = m_differing;
  recomputeDiffering();
  if (before != m_differing && !m_runs.isEmpty()) Q_EMIT dataChanged(index(0, Differs), index(rowCount() - 1, Differs));
  if (wasChecked) Q_EMIT checkedChanged();
  return true;
}

void RunTableModel::watchWorkspace(const QString& dir) {
  if (!m_watcher) {
    m_watcher = new RunWatcher(this);
    connect(m_watcher, &RunWatcher::runAdded, this, [this](const QString& d) { refreshRun(d); });
    connect(m_watcher, &RunWatcher::runChanged, this, [this](const QString& d) { refreshRun(d); });
    connect(m_watcher, &RunWatcher::runRemoved, this, [this](const QString& d) { removeRun(d); });
    connect(m_watcher, &RunWatcher::metricsChanged, this, &RunTableModel::metricsUpdated);
  }
  // The watcher's baseline first, then the rows: a change in between is seen by the next scan.
  m_watcher->setWorkspace(dir);
  const QStringList checked = checkedDirs();
  setRuns(dir.isEmpty() ? QVector<RunInfo>() : scanWorkspace(dir));
  for (const QString& c : checked) setChecked(c, true);
}

QStringList RunTableModel::checkedDirs() const {
  QStringList out;
  for (const auto& r : m_runs)
    if (m_checked.contains(r.dir)) out << r.dir;
  return out;
}

void RunTableModel::setChecked(const QString& dir, bool checked) {
  const int row = rowOf(dir);
  if (row < 0) return;
  const QString abs = m_runs[row].dir;
  if (checked == m_checked.contains(abs)) return;
  if (checked) m_checked.insert(abs);
  else m_checked.remove(abs);
  Q_EMIT dataChanged(index(row, Name), index(row, Name), {Qt::CheckStateRole});
  Q_EMIT checkedChanged();
}

int RunTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_runs.size()); }
int RunTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

void RunTableModel::recomputeDiffering() { m_differing = differingKeys(m_runs); }

QString RunTableModel::differsText(const RunInfo& r) const {
  QStringList parts;
  for (const QString& k : m_differing) {
    if (k == QLatin1String("task.name") || k == QLatin1String("model.cell")) continue;  // own columns
    parts << k.section(QLatin1Char('.'), 1) + QLatin1Char('=') + r.flat.value(k, QStringLiteral("-"));
  }
  return parts.join(QStringLiteral(", "));
}

QVariant RunTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= m_runs.size()) return QVariant();
  const RunInfo& r = m_runs[index.row()];
  const QJsonObject& s = r.summary;
  const int c = index.column();
  if (role == Qt::CheckStateRole && c == Name) return m_checked.contains(r.dir) ? Qt::Checked : Qt::Unchecked;
  if (role == Qt::ToolTipRole) {
    if (c == Status && !s.value(QStringLiteral("reason")).toString().isEmpty())
      return s.value(QStringLiteral("reason")).toString();
    if (c == Name) return r.label.isEmpty() ? r.dir : r.label + QStringLiteral("\n") + r.dir;
    if (c == Processes) return QStringLiteral("Data-parallel processes of the run's last launch");
    if (c == Differs) return differsText(r);
    // Any other cell: its text in full (a narrow column elides it).
    return data(index, Qt::DisplayRole);
  }
  if (role == Qt::ForegroundRole && c == Status) {
    const QString st = r.status();
    if (st == QLatin1String("failed")) return QColor(200, 40, 40);
    if (st == QLatin1String("running")) return QColor(30, 110, 200);
    if (st == QLatin1String("stopped")) return QColor(170, 110, 0);
    return QVariant();
  }
  if (role == Qt::TextAlignmentRole && c >= Params && c <= Processes) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != SortRole) return QVariant();
  const bool sort = role == SortRole;
  const QString metric = s.value(QStringLiteral("primary_metric")).toString();
  // A number of summary.json: itself to sort by, text(value) to show. missing: how a run without the
  // key sorts (shown empty); nullopt: such a run counts as 0.
  auto number = [&](const char* key, std::optional<double> missing, auto text) -> QVariant {
    const QJsonValue v = s.value(QLatin1String(key));
    if (missing && !v.isDouble()) return sort ? QVariant(*missing) : QVariant();
    return sort ? QVariant(v.toDouble()) : QVariant(text(v.toDouble()));
  };
  auto integer = [](double v) { return QLocale().toString(qlonglong(v)); };
  auto withMetric = [&](double v) { return fmtNumber(v) + QLatin1Char(' ') + metric; };
  switch (c) {
    case Name:
      return r.label.isEmpty() ? r.name : r.label + QStringLiteral(" (") + r.name + QLatin1Char(')');
    case Status:
      return r.status();
    case Task:
      return r.config.value(QStringLiteral("task")).toObject().value(QStringLiteral("name")).toString();
    case Cell:
      return r.config.value(QStringLiteral("model")).toObject().value(QStringLiteral("cell")).toString();
    case Params:
      return number("parameters", std::nullopt, integer);
    case Step:
      return number("step", std::nullopt, integer);
    case BestValid:
      return number("best_valid", qInf(), withMetric);
    case BestStep:
      return number("best_step", -1.0, integer);
    case Test:
      return number("test_metric", qInf(), withMetric);
    case Throughput:
      return number("mean_throughput", std::nullopt, [&](double v) {
        return QLocale().toString(v, 'f', 0) + QLatin1Char(' ') + s.value(QStringLiteral("unit")).toString() +
               QStringLiteral("/s");
      });
    case Processes:
      return sort ? QVariant(r.processes()) : QVariant(QLocale().toString(r.processes()));
    case Differs:
      return differsText(r);
  }
  return QVariant();
}

QVariant RunTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[] = {"Run",        "Status",    "Task", "Cell",       "Parameters", "Step",
                                "Best valid", "Best step", "Test", "Throughput", "Processes",  "Differing config"};
  return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

Qt::ItemFlags RunTableModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.column() == Name) f |= Qt::ItemIsUserCheckable;
  return f;
}

bool RunTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::CheckStateRole || index.column() != Name || index.row() >= m_runs.size()) return false;
  setChecked(m_runs[index.row()].dir, value.toInt() == Qt::Checked);
  return true;
}

QString RunTableModel::toCsv() const {
  QString out;
  QStringList header;
  for (int c = 0; c < ColumnCount; ++c)
    header << csw::csvField(headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
  header << QStringLiteral("Metric") << QStringLiteral("Directory");
  out += header.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (int r = 0; r < m_runs.size(); ++r) {
    QStringList row;
    for (int c = 0; c < ColumnCount; ++c) {
      const QVariant v = data(index(r, c), SortRole);
      const bool numeric = c >= Params && c <= Processes;
      if (numeric) {
        const double d = v.toDouble();
        row << (std::isfinite(d) && !(c == BestStep && d < 0) ? csw::csvNumber(d) : QString());
      } else {
        row << csw::csvField(v.toString());
      }
    }
    row << csw::csvField(m_runs[r].summary.value(QStringLiteral("primary_metric")).toString())
        << csw::csvField(m_runs[r].dir);
    out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return out;
}

}  // namespace gui
