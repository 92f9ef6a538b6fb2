// The window's one way to run work off the GUI thread: a worker object moved to
// its own QThread (never a QThread::run override), deleted when the thread
// finishes. Jobs reach the worker as queued calls or signals; results come back
// as queued signals carrying plain structs.
#pragma once
#include <QString>
#include <QThread>

namespace gui {

// A new Worker on a new, started QThread owned by owner (stored in *thread).
template <class Worker>
Worker* startWorkerThread(QObject* owner, QThread** thread, const QString& name) {
  *thread = new QThread(owner);
  (*thread)->setObjectName(name);
  auto* worker = new Worker;
  worker->moveToThread(*thread);
  QObject::connect(*thread, &QThread::finished, worker, &QObject::deleteLater);
  (*thread)->start();
  return worker;
}

// Ends the thread's event loop (after the job running now) and waits for it.
inline void stopWorkerThread(QThread* thread) {
  thread->quit();
  thread->wait();
}

}  // namespace gui
