// RunWatcher: follows the run directories of a workspace, whoever writes them (this
// window's worker, a CLI run, a data-parallel launcher, a sweep). A QFileSystemWatcher
// on the workspace and on each run directory (summary.json, config.json and label.txt
// are replaced by rename, which changes the directory; metrics.jsonl is watched as a
// file) triggers a debounced scan, and a poll timer scans anyway (file-system events
// are not delivered on every file system, e.g. NFS). A scan compares each run's
// signature (size and modification time of those four files) with the last one and
// reports what changed. No parsing here: the RunTableModel re-reads what it is told.
#pragma once
#include <QHash>
#include <QObject>
#include <QString>
#include <QStringList>

class QFileSystemWatcher;
class QTimer;

namespace gui {

class RunWatcher : public QObject {
  Q_OBJECT
 public:
  explicit RunWatcher(QObject* parent = nullptr);

  // Watches dir (the previous workspace is forgotten). The runs already there are
  // known without a signal.
  void setWorkspace(const QString& dir);
  QString workspace() const { return m_workspace; }
  void setPollInterval(int ms);

 public Q_SLOTS:
  void scanNow();  // compares every run's signature now

 Q_SIGNALS:
  void runAdded(const QString& dir);
  void runRemoved(const QString& dir);
  void runChanged(const QString& dir);      // summary.json, config.json or label.txt changed
  void metricsChanged(const QString& dir);  // metrics.jsonl grew or was rewritten

 private:
  struct Signature {
    QString meta;     // summary + config + label
    QString metrics;  // metrics.jsonl
  };
  static Signature signatureOf(const QString& dir);
  void watchRun(const QString& dir);

  QString m_workspace;
  QFileSystemWatcher* m_fs = nullptr;
  QTimer* m_debounce = nullptr;
  QTimer* m_poll = nullptr;
  QHash<QString, Signature> m_known;  // absolute run dir -> last signature
};

}  // namespace gui
