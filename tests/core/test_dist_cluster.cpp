// The multi-machine form of data-parallel training (--rank/--world-size/--master), with
// local processes on 127.0.0.1 started one by one exactly as a cluster launcher would:
// a run to completion, a worker that never arrives (a clear timeout message), and a
// worker killed mid-run (a bounded exit of the other; the run resumes with one process).
#include <QElapsedTimer>

#include <unistd.h>

#include <csignal>

#include "corpus_fixture.h"
#include "dist_fixture.h"

using namespace cs;

namespace {

// A port for this test process's rendezvous (distinct per test function).
QString port(int k) { return QString::number(20000 + (::getpid() * 7 + k * 101) % 40000); }

QStringList worker_args(const QString& cfg, const QString& dir, int rank, const QString& master, const QString& timeout) {
  return {"train", cfg, "--run-dir", dir, "--rank", QString::number(rank), "--world-size", "2", "--master", master,
          "--dist-timeout", timeout, "--threads", "1", "--quiet"};
}

}  // namespace

class TestDistCluster : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    if (!QFile::exists(cstest::default_corpus_path()))
      QFAIL(qPrintable("the default corpus is missing: " + cstest::default_corpus_path()));
  }

  void masterFormRunsToCompletion() {
    const QString cfg = cstest::write_json_file("cluster.json", cstest::tiny_config("char_lm", 6));
    const QString dir = cstest::temp_dir() + "/cluster_ok", master = "127.0.0.1:" + port(1);
    QProcess r0, r1;
    r0.start(cstest::cli_path(), worker_args(cfg, dir, 0, master, "30"));
    QVERIFY(r0.waitForStarted(30000));
    r1.start(cstest::cli_path(), worker_args(cfg, dir, 1, master, "30"));
    QVERIFY(r1.waitForStarted(30000));
    QVERIFY(r0.waitForFinished(90000));
    QVERIFY(r1.waitForFinished(90000));
    QVERIFY2(r0.exitCode() == 0, r0.readAllStandardError().constData());
    QVERIFY2(r1.exitCode() == 0, r1.readAllStandardError().constData());
    auto s = RunStore(dir.toStdString()).read_summary();
    QCOMPARE(QString::fromStdString(s.status), QString("finished"));
    QCOMPARE(s.step, int64_t(6));
    QVERIFY(s.has_test);
  }

  void workerThatNeverArrives() {
    const QString cfg = cstest::write_json_file("lonely.json", cstest::tiny_config("char_lm", 6));
    const QString dir = cstest::temp_dir() + "/cluster_lonely", master = "127.0.0.1:" + port(2);
    QElapsedTimer t;
    t.start();
    QProcess r0;
    r0.start(cstest::cli_path(), worker_args(cfg, dir, 0, master, "3"));
    QVERIFY(r0.waitForFinished(60000));
    const QString err = QString::fromUtf8(r0.readAllStandardError());
    QCOMPARE(r0.exitCode(), 1);
    QVERIFY2(err.contains("not every worker arrived within 3 s") && err.contains("--world-size 2") &&
                 err.contains("--master " + master),
             qPrintable(err));
    QVERIFY(t.elapsed() < 45000);
  }

  void killedWorkerStopsTheOtherAndRunResumes() {
    json raw = cstest::tiny_config("char_lm", 1000000);
    raw["training"]["eval_every"] = 0;
    raw["training"]["checkpoint_every"] = 3;
    const QString cfg = cstest::write_json_file("killed.json", raw);
    const QString dir = cstest::temp_dir() + "/cluster_kill", master = "127.0.0.1:" + port(3);
    QProcess r0, r1;
    r0.start(cstest::cli_path(), worker_args(cfg, dir, 0, master, "10"));
    QVERIFY(r0.waitForStarted(30000));
    r1.start(cstest::cli_path(), worker_args(cfg, dir, 1, master, "10"));
    QVERIFY(r1.waitForStarted(30000));
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 60000 && r0.state() == QProcess::Running && !QFile::exists(dir + "/checkpoints/last.pt"))
      r0.waitForFinished(50);
    QVERIFY2(QFile::exists(dir + "/checkpoints/last.pt"), r0.readAllStandardError().constData());
    ::kill(static_cast<pid_t>(r1.processId()), SIGKILL);
    QElapsedTimer bounded;
    bounded.start();
    QVERIFY2(r0.waitForFinished(40000), "rank 0 kept waiting for the killed worker");
    QVERIFY(bounded.elapsed() < 30000);  // at most about the 10 s collective timeout
    r1.waitForFinished(5000);
    const QString err = QString::fromUtf8(r0.readAllStandardError());
    QCOMPARE(r0.exitCode(), 1);
    QVERIFY2(err.contains("rank 0 of 2"), qPrintable(err));
    RunStore store(dir.toStdString());
    QCOMPARE(QString::fromStdString(store.read_summary().status), QString("failed"));
    const int64_t last = store.checkpoint_steps().back();
    // Another number of processes: one.
    QString out, err2;
    QCOMPARE(cstest::run_cli({"train", "--resume", dir, "--steps", QString::number(last + 2), "--quiet"}, &out, &err2, 120000),
             0);
    auto s = store.read_summary();
    QCOMPARE(QString::fromStdString(s.status), QString("finished"));
    QCOMPARE(s.step, last + 2);
  }
};

CS_TEST(TestDistCluster, "dist_cluster")
#include "test_dist_cluster.moc"
