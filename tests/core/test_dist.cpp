// Data-parallel training over c10d/Gloo with two local processes (cellscope-cli
// train --nproc 2, Gloo bound to 127.0.0.1): averaged gradients == single-process
// gradients of the same global batch, replicas stay identical and follow the
// single-process trajectory, a killed worker stops the others with a message naming
// it and leaves a run that resumes with a different number of processes.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <torch/serialize.h>

#include <csignal>

#include "corpus_fixture.h"
#include "dist/dist.h"
#include "dist/launch.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"

using namespace cs;

namespace {

// The real corpus (dataset name "moby-dick"), a short excerpt.
json dist_config(int steps, const std::string& optimizer, double lr) {
  return {{"task", "char_lm"},
          {"dataset", {{"name", "moby-dick"}, {"max_chars", 30000}}},
          {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
          {"training", {{"batch", 4}, {"bptt", 16}, {"steps", steps}, {"optimizer", optimizer}, {"lr", lr},
                        {"clip", 0.0}, {"eval_every", 4}, {"log_every", 2}, {"eval_test", false}, {"seed", 5},
                        {"threads", 1}, {"eval_batch", 4}}}};
}

QString write_json(const QString& name, const json& j) {
  const QString p = cstest::temp_dir() + "/" + name;
  QFile f(p);
  f.open(QIODevice::WriteOnly);
  f.write(QByteArray::fromStdString(j.dump()));
  return p;
}

std::vector<torch::Tensor> clone_params(Task& t) {
  std::vector<torch::Tensor> v;
  for (auto& p : t.model()->parameters()) v.push_back(p.detach().clone());
  return v;
}

// Gradients of the first training step of a freshly built task (optionally one shard).
std::vector<torch::Tensor> first_step_grads(const json& cfg, std::vector<torch::Tensor>* p0, int rank = 0, int world = 1) {
  seed_everything(cfg["training"]["seed"].get<uint64_t>());
  auto task = make_task(cfg);
  if (world > 1) task->set_shard(rank, world);
  if (p0) *p0 = clone_params(*task);
  auto sr = task->train_step();
  sr.loss.backward();
  std::vector<torch::Tensor> g;
  for (auto& p : task->model()->parameters()) g.push_back(p.grad().detach().clone());
  return g;
}

std::vector<json> read_metrics(const QString& dir) { return RunStore(dir.toStdString()).read_metrics(); }

// pid of the worker with `--rank R` whose command line mentions `dir` (scan of /proc).
qint64 find_worker(const QString& dir, int rank) {
  for (const QString& e : QDir("/proc").entryList(QDir::Dirs)) {
    bool ok = false;
    const qint64 pid = e.toLongLong(&ok);
    if (!ok) continue;
    QFile f("/proc/" + e + "/cmdline");
    if (!f.open(QIODevice::ReadOnly)) continue;
    const QList<QByteArray> args = f.readAll().split('\0');
    bool has_dir = false, has_rank = false;
    for (int i = 0; i < args.size(); ++i) {
      if (args[i] == dir.toUtf8()) has_dir = true;
      if (args[i] == "--rank" && i + 1 < args.size() && args[i + 1] == QByteArray::number(rank)) has_rank = true;
    }
    if (has_dir && has_rank) return pid;
  }
  return -1;
}

}  // namespace

class TestDist : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    if (!QFile::exists(cstest::default_corpus_path()))
      QFAIL(qPrintable("the default corpus is missing: " + cstest::default_corpus_path()));
  }

  // Plain SGD with lr 1 and no clipping: p1 = p0 - g, so rank 0's checkpoint after one
  // step gives the averaged gradient g = p0 - p1 exactly up to float32 rounding of p.
  void averagedGradientsEqualSingleProcess() {
    const double lr = 1.0;
    json raw = dist_config(1, "sgd", lr);
    const json cfg = load_and_resolve(raw);
    std::vector<torch::Tensor> p0;
    const auto g_single = first_step_grads(cfg, &p0);
    const QString dir = cstest::temp_dir() + "/dist_grad";
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", write_json("grad.json", raw), "--nproc", "2", "--run-dir", dir, "--quiet"}, &out, &err,
                             120000),
             0);
    auto task = load_run_task(dir.toStdString(), "last");
    auto p1 = task->model()->parameters();
    QCOMPARE(p1.size(), g_single.size());
    // Tolerance: |g_dist - g_single| <= 1e-5 + 1e-4 |g_single| per entry (float32 sums in
    // a different order, and the rounding of p0 - g).
    double max_err = 0, max_g = 0;
    for (size_t i = 0; i < p1.size(); ++i) {
      auto g_dist = (p0[i] - p1[i].detach()) / lr;
      auto bound = 1e-5 + 1e-4 * g_single[i].abs();
      QVERIFY2(((g_dist - g_single[i]).abs() <= bound).all().item<bool>(), qPrintable(QString("parameter %1").arg(i)));
      max_err = std::max(max_err, (g_dist - g_single[i]).abs().max().item<double>());
      max_g = std::max(max_g, g_single[i].abs().max().item<double>());
    }
    QVERIFY(max_g > 1e-3);  // a real gradient, not zeros
    // The check can fail: one shard's gradient alone differs from the global one.
    const auto g_half = first_step_grads(cfg, nullptr, 0, 2);
    double half_err = 0;
    for (size_t i = 0; i < g_half.size(); ++i) half_err = std::max(half_err, (g_half[i] - g_single[i]).abs().max().item<double>());
    QVERIFY2(half_err > 100 * max_err && half_err > 1e-4, qPrintable(QString("half %1 vs dist %2").arg(half_err).arg(max_err)));
  }

  void replicasStayIdenticalAndFollowOneProcess() {
    json raw = dist_config(8, "adam", 3e-3);
    const QString dir = cstest::temp_dir() + "/dist_adam";
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", write_json("adam.json", raw), "--nproc", "2", "--run-dir", dir, "--json"}, &out, &err,
                             120000),
             0);
    auto summary = RunStore(dir.toStdString()).read_summary();
    QCOMPARE(QString::fromStdString(summary.status), QString("finished"));
    QCOMPARE(summary.step, int64_t(8));
    // The same run in one process, in memory.
    const json cfg = load_and_resolve(raw);
    seed_everything(5);
    Trainer single(cfg, make_task(cfg), nullptr);
    single.run();
    std::vector<MetricsRecord> single_train;
    for (auto& r : single.history)
      if (!r.eval) single_train.push_back(r);
    int train_lines = 0, eval_lines = 0;
    for (auto& j : read_metrics(dir)) {
      auto r = MetricsRecord::from_json(j);
      if (r.eval) {
        ++eval_lines;
        QVERIFY(r.values.count("param_divergence"));
        QCOMPARE(r.values.at("param_divergence"), 0.0);  // bit-identical replicas on both ranks
        continue;
      }
      const auto& s = single_train.at(static_cast<size_t>(train_lines++));
      QCOMPARE(r.step, s.step);
      // Adam over 8 steps: the trajectories agree up to float rounding.
      QVERIFY2(std::abs(r.values.at("loss") - s.values.at("loss")) < 1e-4,
               qPrintable(QString("step %1: %2 vs %3").arg(r.step).arg(r.values.at("loss")).arg(s.values.at("loss"))));
      QCOMPARE(r.values.at("world_size"), 2.0);
      auto tp = rank_throughputs(r.values);
      QCOMPARE(int(tp.size()), 2);
      QVERIFY(tp[0] > 0 && tp[1] > 0);
      QVERIFY(r.values.at("allreduce_ms") >= 0);
    }
    QCOMPARE(train_lines, 4);
    QCOMPARE(eval_lines, 2);
    // --json prints rank 0's lines only (one per metrics line + the summary).
    QCOMPARE(out.trimmed().split('\n').size(), 4 + 2 + 1);
    // A global batch that does not split evenly is refused before anything starts.
    QCOMPARE(cstest::run_cli({"train", write_json("adam3.json", raw), "--nproc", "3", "--run-dir", dir + "_3"}, &out, &err), 2);
    QVERIFY2(err.contains("training.batch"), qPrintable(err));
    QVERIFY(!QDir(dir + "_3").exists());
  }

  void killedWorkerStopsOthersAndRunResumes() {
    json raw = dist_config(1000000, "adam", 3e-3);
    raw["training"]["checkpoint_every"] = 3;
    raw["training"]["eval_every"] = 0;
    const QString dir = cstest::temp_dir() + "/dist_kill";
    QProcess p;
    p.start(cstest::cli_path(), {"train", write_json("kill.json", raw), "--nproc", "2", "--run-dir", dir, "--quiet",
                                 "--dist-timeout", "30"});
    QVERIFY(p.waitForStarted(30000));
    // Wait (generously: the machine may be loaded) for a checkpoint and for rank 1.
    QElapsedTimer t;
    t.start();
    qint64 pid1 = -1;
    while (t.elapsed() < 90000 && p.state() == QProcess::Running) {
      if (pid1 < 0) pid1 = find_worker(dir, 1);
      if (pid1 > 0 && QFile::exists(dir + "/checkpoints/last.pt")) break;
      p.waitForFinished(100);
    }
    QVERIFY2(pid1 > 0 && QFile::exists(dir + "/checkpoints/last.pt"), qPrintable(QString::fromUtf8(p.readAllStandardError())));
    QCOMPARE(::kill(static_cast<pid_t>(pid1), SIGKILL), 0);
    QElapsedTimer stop;
    stop.start();
    QVERIFY2(p.waitForFinished(75000), "the surviving worker did not stop");
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY(p.exitCode() != 0);
    QVERIFY2(err.contains("worker rank 1") && err.contains("killed by signal 9"), qPrintable(err));
    QVERIFY2(err.contains("rank 0 of 2"), qPrintable(err));   // the survivor says what it was doing
    QVERIFY2(err.contains("--resume"), qPrintable(err));
    RunStore store(dir.toStdString());
    QCOMPARE(QString::fromStdString(store.read_summary().status), QString("failed"));
    auto steps = store.checkpoint_steps();
    QVERIFY(!steps.empty());
    const int64_t last = steps.back();
    QVERIFY(last % 3 == 0);
    // Resume with a different number of processes (1): the checkpoint is rank-independent.
    QString out, err2;
    QCOMPARE(cstest::run_cli({"train", "--resume", dir, "--steps", QString::number(last + 4), "--quiet"}, &out, &err2, 120000), 0);
    auto s = store.read_summary();
    QCOMPARE(QString::fromStdString(s.status), QString("finished"));
    QCOMPARE(s.step, last + 4);
    // ... and with two again.
    QCOMPARE(cstest::run_cli({"train", "--resume", dir, "--nproc", "2", "--steps", QString::number(last + 8), "--quiet"}, &out,
                             &err2, 120000),
             0);
    QCOMPARE(store.read_summary().step, last + 8);
  }

  void taskWithoutShardingIsNamed() {
    // The Task default refuses data parallelism with the task's name.
    struct NoShard : CharLMTask {
      using CharLMTask::CharLMTask;
      void set_shard(int r, int w) override { Task::set_shard(r, w); }
    };
    const json cfg = load_and_resolve(dist_config(1, "adam", 1e-3));
    NoShard t(cfg, "");
    try {
      t.set_shard(0, 2);
      QFAIL("no error");
    } catch (const UserError& e) {
      QVERIFY2(QString(e.what()).contains("char_lm") && QString(e.what()).contains("does not support data-parallel"), e.what());
    }
  }
};

CS_TEST(TestDist, "dist")
#include "test_dist.moc"
