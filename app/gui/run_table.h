// The workspace's runs: scanning run directories (config.json + summary.json
// only, so a workspace of hundreds of runs opens fast), the table model behind
// the Compare view (checkable rows = overlaid curves) and config diffs. The
// model is live: watchWorkspace() follows every run directory through a
// RunWatcher, so each row tracks its run while it changes, whoever trains it.
#pragma once
#include <QAbstractTableModel>
#include <QDateTime>
#include <QJsonObject>
#include <QMap>
#include <QSet>
#include <QString>
#include <QVector>

#include <tuple>

namespace gui {

struct RunInfo {
  QString dir;   // absolute path
  QString name;  // directory name
  QJsonObject config, summary;
  QMap<QString, QString> flat;  // "section.key" -> JSON text of the value
  QDateTime summaryTime;        // mtime of summary.json when read
  QString label;                // label.txt ("" when the user gave none)
  // Data-parallel processes of the run's last launch (summary.json "processes"; 1 when absent).
  int processes() const { return summary.value(QStringLiteral("processes")).toInt(1); }
  QString displayName() const { return label.isEmpty() ? name : label; }
  QString status() const { return summary.value(QStringLiteral("status")).toString(QStringLiteral("unknown")); }
};

// Flatten a config to "section.key" -> compact JSON text (name/notes skipped).
QMap<QString, QString> flattenConfig(const QJsonObject& cfg);
// Read one run directory; false when it is not a run (no config.json).
bool readRun(const QString& dir, RunInfo* out);
// Every run directory directly under workspace, sorted by name.
QVector<RunInfo> scanWorkspace(const QString& workspace);
// Whether a flattened key is a bookkeeping option (threads, log_every, notes...: the list and
// the reasons are cs::bookkeeping_options(), config/common_options.h), which never splits a
// seed group nor counts as a difference between runs.
bool isBookkeeping(const QString& key);
// Keys whose values differ between the runs (a key missing in some run counts as differing),
// bookkeeping options left out.
QStringList differingKeys(const QVector<RunInfo>& runs);
// (key, value in a, value in b) for every key that differs between two configs.
QVector<std::tuple<QString, QString, QString>> configDiff(const QMap<QString, QString>& a,
                                                          const QMap<QString, QString>& b);
// Key identifying runs that differ only in training.seed (and bookkeeping options).
QString seedGroupKey(const RunInfo& r);

class RunWatcher;

class RunTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Name,
    Status,
    Task,
    Cell,
    Params,
    Step,
    BestValid,
    BestStep,
    Test,
    Throughput,
    Processes,
    Differs,
    ColumnCount
  };
  static constexpr int SortRole = Qt::UserRole + 1;

  explicit RunTableModel(QObject* parent = nullptr);

  void setRuns(QVector<RunInfo> runs);  // keeps the check marks of runs still present
  // Re-read the run at dir (added when new). Returns its row.
  int refreshRun(const QString& dir);
  // Drops the row of dir (its check mark too); false when it has none.
  bool removeRun(const QString& dir);
  // Scans dir and follows it from now on (rows added, updated and removed as the run
  // directories change on disk). An empty dir stops watching.
  void watchWorkspace(const QString& dir);
  RunWatcher* watcher() const { return m_watcher; }
  const QVector<RunInfo>& runs() const { return m_runs; }
  const RunInfo* run(int row) const { return row >= 0 && row < m_runs.size() ? &m_runs[row] : nullptr; }
  int rowOf(const QString& dir) const;
  QStringList differing() const { return m_differing; }

  QStringList checkedDirs() const;  // in table order
  void setChecked(const QString& dir, bool checked);

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;

  // The table as CSV (all rows, model order, one column per Column).
  QString toCsv() const;

 Q_SIGNALS:
  void checkedChanged();
  void runUpdated(const QString& dir);      // a row was re-read from disk (summary, config or label)
  void metricsUpdated(const QString& dir);  // a watched run's metrics.jsonl changed

 private:
  void recomputeDiffering();
  QString differsText(const RunInfo& r) const;

  QVector<RunInfo> m_runs;
  QSet<QString> m_checked;
  QStringList m_differing;
  RunWatcher* m_watcher = nullptr;
};

}  // namespace gui
