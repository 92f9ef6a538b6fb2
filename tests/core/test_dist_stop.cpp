// The other endings of a data-parallel run: a stop (SIGTERM on the launcher, or a
// stop request on one rank), an early stop and a NaN on one rank end every rank at
// the same step, with the right status, and nobody waits for a collective timeout.
#include <QElapsedTimer>

#include <torch/nn/modules/linear.h>

#include <csignal>
#include <limits>

#include "corpus_fixture.h"
#include "dist_fixture.h"
#include "tasks/task.h"
#include "util/error.h"

using namespace cs;

namespace {

// A task whose loss becomes NaN at step `nan_step` (one rank only in the test).
class NanTask : public Task {
 public:
  explicit NanTask(int nan_step) : nan_step_(nan_step) { net_ = std::make_shared<torch::nn::LinearImpl>(3, 1); }
  std::string name() const override { return "nan_task"; }
  std::shared_ptr<torch::nn::Module> model() override { return net_; }
  StepResult train_step() override {
    ++calls_;
    auto y = net_->forward(torch::ones({4, 3})).pow(2).mean();
    if (calls_ >= nan_step_) y = y * std::numeric_limits<double>::quiet_NaN();
    StepResult r;
    r.loss = y;
    r.task_loss = y.item<double>();
    r.units = 4;
    return r;
  }
  EvalResult evaluate(const std::string&) override { return {{{"loss", 1.0}}, 1}; }
  std::string primary_metric() const override { return "loss"; }
  bool lower_is_better() const override { return true; }
  std::string unit_name() const override { return "items"; }
  double epoch() const override { return 0; }
  void set_shard(int, int) override {}
  void save_state(torch::serialize::OutputArchive& ar) const override {}
  void load_state(torch::serialize::InputArchive& ar) override {}

 private:
  std::shared_ptr<torch::nn::LinearImpl> net_;
  int nan_step_, calls_ = 0;
};

}  // namespace

class TestDistStop : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    if (!QFile::exists(cstest::default_corpus_path()))
      QFAIL(qPrintable("the default corpus is missing: " + cstest::default_corpus_path()));
    set_threads(1);
  }

  // Ctrl-C / SIGTERM on the launcher: the workers agree on the step, rank 0 writes the
  // one checkpoint of the run at that step, every rank exits 0, status "stopped".
  void sigtermStopsEveryRankAtOneStep() {
    json raw = cstest::tiny_config("char_lm", 1000000);
    raw["training"]["eval_every"] = 0;
    raw["training"]["checkpoint_every"] = 0;  // no checkpoint but the stop's
    const QString dir = cstest::temp_dir() + "/end_sigterm";
    QProcess p;
    p.start(cstest::cli_path(), {"train", cstest::write_json_file("sigterm.json", raw), "--nproc", "2", "--run-dir", dir,
                                 "--quiet", "--dist-timeout", "30"});
    QVERIFY(p.waitForStarted(30000));
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 60000 && p.state() == QProcess::Running &&
           RunStore(dir.toStdString()).read_metrics().size() < 2)
      p.waitForFinished(50);
    QVERIFY2(p.state() == QProcess::Running, qPrintable(QString::fromUtf8(p.readAllStandardError())));
    p.terminate();  // SIGTERM
    QElapsedTimer stop;
    stop.start();
    QVERIFY(p.waitForFinished(60000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, qPrintable(err));
    QVERIFY2(stop.elapsed() < 20000, "the ranks did not stop promptly");  // not a collective timeout (30 s)
    RunStore store(dir.toStdString());
    auto s = store.read_summary();
    QCOMPARE(QString::fromStdString(s.status), QString("stopped"));
    QVERIFY(s.step > 0);
    QVERIFY(store.checkpoint_steps() == std::vector<int64_t>{s.step});  // written once, at the agreed step
    Trainer check(load_and_resolve(raw), make_task(load_and_resolve(raw)), nullptr);
    check.load_checkpoint(store.path("checkpoints/last.pt"));
    QCOMPARE(check.step(), s.step);
  }

  void earlyStopOnEveryRank() {
    json raw = cstest::tiny_config("word_lm", 100);
    raw["training"]["lr"] = 0.0;  // nothing improves after the first evaluation
    raw["training"]["eval_every"] = 2;
    raw["training"]["patience"] = 2;
    const QString dir = cstest::temp_dir() + "/end_early";
    QString out, err;
    QCOMPARE(cstest::run_cli({"train", cstest::write_json_file("early.json", raw), "--nproc", "2", "--run-dir", dir, "--quiet",
                              "--dist-timeout", "30"},
                             &out, &err, 120000),
             0);
    auto s = RunStore(dir.toStdString()).read_summary();
    QCOMPARE(QString::fromStdString(s.status), QString("finished"));
    QCOMPARE(s.step, int64_t(6));  // best at 2, no improvement at 4 and 6
    QVERIFY2(s.reason.find("early stop") != std::string::npos, s.reason.c_str());
    QVERIFY(s.has_test);
  }

  // A NaN on rank 1 only: both ranks stop at the same step with the reason, at once.
  void nanOnOneRankStopsEveryRank() {
    const json cfg = load_and_resolve({{"training", {{"steps", 50}, {"eval_every", 0}, {"log_every", 1}}}});
    QElapsedTimer t;
    t.start();
    auto r = cstest::run_two_ranks(cstest::temp_dir() + "/nan_store", [&](DistContext* d) {
      return std::make_unique<Trainer>(cfg, std::make_unique<NanTask>(d->rank == 1 ? 5 : 1000), nullptr, d);
    });
    for (int k = 0; k < 2; ++k) {
      QVERIFY2(r.error[k].empty(), r.error[k].c_str());
      QCOMPARE(QString::fromStdString(r.summary[k].status), QString("failed"));
      QVERIFY2(r.summary[k].reason.find("NaN at step 5") != std::string::npos, r.summary[k].reason.c_str());
      QCOMPARE(r.step[k], int64_t(4));
    }
    QVERIFY(t.elapsed() < 15000);  // nobody waited for the 20 s collective timeout
  }

  // A stop request on one rank only (as when a signal reaches one process first):
  // both stop at the same step, status "stopped".
  void stopOnOneRankStopsEveryRank() {
    const json cfg = load_and_resolve({{"training", {{"steps", 50}, {"eval_every", 0}, {"log_every", 1}}}});
    auto r = cstest::run_two_ranks(
        cstest::temp_dir() + "/stop_store",
        [&](DistContext* d) { return std::make_unique<Trainer>(cfg, std::make_unique<NanTask>(1000), nullptr, d); },
        [](int rank, const Progress& p, TrainerControl& c) {
          if (rank == 1 && p.step == 3) c.stop = true;
        });
    for (int k = 0; k < 2; ++k) {
      QVERIFY2(r.error[k].empty(), r.error[k].c_str());
      QCOMPARE(QString::fromStdString(r.summary[k].status), QString("stopped"));
      QCOMPARE(r.step[k], int64_t(4));  // the flag travels with step 4's statistics
    }
  }
};

CS_TEST(TestDistStop, "dist_stop")
#include "test_dist_stop.moc"
