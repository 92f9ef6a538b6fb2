#include "run_watcher.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QSet>
#include <QTimer>

namespace gui {

RunWatcher::RunWatcher(QObject* parent) : QObject(parent) {
  m_fs = new QFileSystemWatcher(this);
  m_debounce = new QTimer(this);
  m_debounce->setSingleShot(true);
  m_debounce->setInterval(150);
  connect(m_debounce, &QTimer::timeout, this, &RunWatcher::scanNow);
  connect(m_fs, &QFileSystemWatcher::directoryChanged, m_debounce, qOverload<>(&QTimer::start));
  connect(m_fs, &QFileSystemWatcher::fileChanged, m_debounce, qOverload<>(&QTimer::start));
  m_poll = new QTimer(this);
  m_poll->setInterval(1000);
  connect(m_poll, &QTimer::timeout, this, &RunWatcher::scanNow);
}

void RunWatcher::setPollInterval(int ms) { m_poll->setInterval(ms); }

RunWatcher::Signature RunWatcher::signatureOf(const QString& dir) {
  auto sig = [&](const char* name) {
    const QFileInfo fi(QDir(dir).filePath(QLatin1String(name)));
    if (!fi.exists()) return QStringLiteral("-;");
    return QString::number(fi.size()) + QLatin1Char('@') + QString::number(fi.lastModified().toMSecsSinceEpoch()) +
           QLatin1Char(';');
  };
  return {sig("config.json") + sig("summary.json") + sig("label.txt"), sig("metrics.jsonl")};
}

void RunWatcher::watchRun(const QString& dir) {
  m_fs->addPath(dir);
  const QString metrics = QDir(dir).filePath(QStringLiteral("metrics.jsonl"));
  if (QFileInfo::exists(metrics) && !m_fs->files().contains(metrics)) m_fs->addPath(metrics);
}

void RunWatcher::setWorkspace(const QString& dir) {
  if (!m_fs->directories().isEmpty()) m_fs->removePaths(m_fs->directories());
  if (!m_fs->files().isEmpty()) m_fs->removePaths(m_fs->files());
  m_known.clear();
  m_workspace = QFileInfo(dir).absoluteFilePath();
  if (m_workspace.isEmpty()) {
    m_poll->stop();
    return;
  }
  m_fs->addPath(m_workspace);
  QDir d(m_workspace);
  for (const QString& n : d.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    const QString abs = d.absoluteFilePath(n);
    if (!QFileInfo::exists(QDir(abs).filePath(QStringLiteral("config.json")))) continue;
    m_known.insert(abs, signatureOf(abs));
    watchRun(abs);
  }
  m_poll->start();
}

void RunWatcher::scanNow() {
  if (m_workspace.isEmpty()) return;
  QDir d(m_workspace);
  QSet<QString> present;
  for (const QString& n : d.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
    const QString abs = d.absoluteFilePath(n);
    // A directory becomes a run when its config.json appears (a launcher may create it
    // empty first); until then only the directory itself is watched.
    if (!QFileInfo::exists(QDir(abs).filePath(QStringLiteral("config.json")))) {
      if (!m_fs->directories().contains(abs)) m_fs->addPath(abs);
      continue;
    }
    present.insert(abs);
    const Signature now = signatureOf(abs);
    auto it = m_known.find(abs);
    if (it == m_known.end()) {
      m_known.insert(abs, now);
      watchRun(abs);
      Q_EMIT runAdded(abs);
      continue;
    }
    const Signature before = it.value();
    it.value() = now;
    if (now.meta != before.meta) Q_EMIT runChanged(abs);
    if (now.metrics != before.metrics) {
      watchRun(abs);  // metrics.jsonl may be new (first line) or replaced (resume)
      Q_EMIT metricsChanged(abs);
    }
  }
  const QStringList known = m_known.keys();
  for (const QString& k : known)
    if (!present.contains(k)) {
      m_known.remove(k);
      m_fs->removePath(k);
      m_fs->removePath(QDir(k).filePath(QStringLiteral("metrics.jsonl")));
      Q_EMIT runRemoved(k);
    }
}

}  // namespace gui
