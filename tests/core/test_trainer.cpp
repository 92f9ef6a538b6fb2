// Trainer: determinism, resume == uninterrupted, NaN stop, early stop, atomic run directories.
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QFile>
#include <QProcess>
#include <QThread>

#include <torch/nn/modules/linear.h>

#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"

using namespace cs;

namespace {

json small_config(const QString& path, int steps) {
  return load_and_resolve({{"task", "char_lm"},
                           {"dataset", {{"path", path.toStdString()}}},
                           {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 24}, {"dropout", 0.1}}},
                           {"training", {{"batch", 8}, {"bptt", 20}, {"steps", steps}, {"eval_every", 20},
                                         {"log_every", 5}, {"checkpoint_every", 10}, {"seed", 11}, {"threads", 1}}}});
}

// Metrics lines without wall-clock fields.
std::vector<json> comparable(const std::vector<json>& lines) {
  std::vector<json> out;
  for (auto j : lines) {
    j.erase("elapsed");
    j.erase("throughput");
    out.push_back(j);
  }
  return out;
}

std::vector<json> train_to_dir(const json& cfg, const QString& dir, int stop_at = -1) {
  seed_everything(cfg["training"]["seed"].get<uint64_t>());
  auto store = std::make_shared<RunStore>(dir.toStdString());
  auto task = make_task(cfg, "");
  store->create();
  store->write_config(cfg);
  atomic_write(store->path("vocab"), task->vocab_text());
  Trainer t(cfg, std::move(task), store);
  TrainerControl control;
  TrainerCallbacks cb;
  cb.on_progress = [&](const Progress& p) {
    if (p.step == stop_at) control.stop = true;
  };
  t.run(&control, cb);
  return store->read_metrics();
}

// A task whose loss becomes NaN at a given step (tests the trainer generically).
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
  void save_state(torch::serialize::OutputArchive& ar) const override {
    ar.write("calls", torch::tensor(static_cast<int64_t>(calls_)));
  }
  void load_state(torch::serialize::InputArchive& ar) override {
    torch::Tensor t;
    ar.read("calls", t);
    calls_ = static_cast<int>(t.item<int64_t>());
  }

 private:
  std::shared_ptr<torch::nn::LinearImpl> net_;
  int nan_step_, calls_ = 0;
};

}  // namespace

class TestTrainer : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { set_threads(1); }

  void deterministicReruns() {
    auto path = cstest::write_text_fixture("det.txt", 20000);
    json cfg = small_config(path, 40);
    auto a = comparable(train_to_dir(cfg, cstest::temp_dir() + "/det_a"));
    auto b = comparable(train_to_dir(cfg, cstest::temp_dir() + "/det_b"));
    QVERIFY(a.size() > 8);
    QVERIFY(a == b);
    // a different seed gives different metrics
    json cfg2 = cfg;
    cfg2["training"]["seed"] = 12;
    auto c = comparable(train_to_dir(cfg2, cstest::temp_dir() + "/det_c"));
    QVERIFY(!(a == c));
  }

  void resumeEqualsUninterrupted() {
    auto path = cstest::write_text_fixture("resume.txt", 20000);
    json cfg = small_config(path, 60);
    auto full = comparable(train_to_dir(cfg, cstest::temp_dir() + "/res_full"));
    // stopped at step 27 (a checkpoint is written at the stop), then resumed in a fresh Trainer
    const QString dir = cstest::temp_dir() + "/res_part";
    train_to_dir(cfg, dir, 27);
    RunStore store(dir.toStdString());
    QCOMPARE(QString::fromStdString(store.read_summary().status), QString("stopped"));
    {
      seed_everything(999);  // whatever the process RNG is now, the checkpoint restores it
      auto st = std::make_shared<RunStore>(dir.toStdString());
      Trainer t(cfg, make_task(cfg, dir.toStdString()), st);
      t.resume();
      QCOMPARE(t.step(), int64_t(27));
      t.run();
    }
    auto resumed = comparable(store.read_metrics());
    QCOMPARE(resumed.size(), full.size());
    for (size_t i = 0; i < full.size(); ++i)
      QVERIFY2(resumed[i] == full[i], qPrintable(QString::fromStdString(resumed[i].dump() + "\n vs " + full[i].dump())));
    auto s = store.read_summary();
    QCOMPARE(QString::fromStdString(s.status), QString("finished"));
    QCOMPARE(s.step, int64_t(60));
  }

  void nanLossStopsCleanlyKeepingLastCheckpoint() {
    const QString dir = cstest::temp_dir() + "/nan_run";
    json cfg = load_and_resolve({{"training", {{"steps", 50}, {"checkpoint_every", 2}, {"eval_every", 0}, {"log_every", 1}}}});
    auto store = std::make_shared<RunStore>(dir.toStdString());
    store->create();
    Trainer t(cfg, std::make_unique<NanTask>(7), store);
    auto out = t.run();
    QCOMPARE(QString::fromStdString(out.summary.status), QString("failed"));
    QVERIFY2(out.summary.reason.find("NaN at step 7") != std::string::npos, out.summary.reason.c_str());
    QCOMPARE(t.step(), int64_t(6));  // the bad update was not applied
    // last good checkpoint (step 6) is kept and loads
    Trainer t2(cfg, std::make_unique<NanTask>(100), nullptr);
    t2.load_checkpoint(store->path("checkpoints/last.pt"));
    QCOMPARE(t2.step(), int64_t(6));
    QCOMPARE(QString::fromStdString(store->read_summary().status), QString("failed"));
  }

  void earlyStopOnPatience() {
    auto path = cstest::write_text_fixture("patience.txt", 8000);
    json cfg = small_config(path, 400);
    cfg["training"]["eval_every"] = 5;
    cfg["training"]["patience"] = 2;
    cfg["training"]["lr"] = 0.0;  // nothing improves after the first evaluation
    Trainer t(cfg, make_task(cfg), nullptr);
    auto out = t.run();
    QCOMPARE(QString::fromStdString(out.summary.status), QString("finished"));
    QCOMPARE(t.step(), int64_t(15));  // best at 5, no improvement at 10 and 15
    QVERIFY(out.summary.reason.find("early stop") != std::string::npos);
  }

  void trackTestLogsTestAtEveryEvaluation() {
    // training.track_test: the test split is evaluated with every valid evaluation (CRU
    // Fig. 4), logged only; without it, test appears once, at the end (best checkpoint).
    auto path = cstest::write_text_fixture("tracktest.txt", 8000);
    for (bool track : {false, true}) {
      json cfg = small_config(path, 60);
      cfg["training"]["track_test"] = track;
      const QString dir = cstest::temp_dir() + (track ? "/track-on" : "/track-off");
      auto lines = train_to_dir(cfg, dir);
      std::vector<int64_t> valid_steps, test_steps;
      for (auto& l : lines) {
        if (!l.value("eval", false)) continue;
        (l.value("split", "") == "test" ? test_steps : valid_steps).push_back(l.value("step", int64_t(-1)));
      }
      QCOMPARE(valid_steps, (std::vector<int64_t>{20, 40, 60}));
      if (track) QCOMPARE(test_steps, (std::vector<int64_t>{20, 40, 60, 60}));  // + the best checkpoint's at the end
      else QCOMPARE(test_steps, (std::vector<int64_t>{60}));
    }
  }

  void corruptedCheckpointGivesClearError() {
    auto path = cstest::write_text_fixture("corrupt.txt", 8000);
    json cfg = small_config(path, 10);
    const QString dir = cstest::temp_dir() + "/corrupt_run";
    train_to_dir(cfg, dir);
    const QString ck = dir + "/checkpoints/last.pt";
    QFile f(ck);
    QVERIFY(f.open(QIODevice::ReadWrite));
    QByteArray bytes = f.readAll();
    f.resize(bytes.size() / 3);
    f.close();
    Trainer t(cfg, make_task(cfg), nullptr);
    bool clear = false;
    try {
      t.load_checkpoint(ck.toStdString());
    } catch (const UserError& e) {
      clear = std::string(e.what()).find("corrupted") != std::string::npos &&
              std::string(e.what()).find("last.pt") != std::string::npos;
    }
    QVERIFY(clear);
  }

  void killedAtAnyInstantLeavesReadableRun() {
    // Train in a child process that checkpoints every step, SIGKILL it at several
    // instants, and check the run directory each time: every file parses, the last
    // checkpoint loads, and --resume finishes the run.
    auto path = cstest::write_text_fixture("kill.txt", 30000);
    json cfg = small_config(path, 100000);
    cfg["training"]["checkpoint_every"] = 1;
    cfg["training"]["log_every"] = 1;
    cfg["training"]["eval_every"] = 0;
    const QString cfg_path = cstest::temp_dir() + "/kill.json";
    QFile cf(cfg_path);
    cf.open(QIODevice::WriteOnly);
    cf.write(QByteArray::fromStdString(cfg.dump()));
    cf.close();
    const QString dir = cstest::temp_dir() + "/kill_run";
    int checked = 0;
    for (int round = 0; round < 4; ++round) {
      QProcess p;
      QStringList args = round == 0 ? QStringList{"train", cfg_path, "--run-dir", dir, "--quiet"}
                                    : QStringList{"train", "--resume", dir, "--quiet"};
      const qint64 before = QFileInfo(dir + "/metrics.jsonl").size();
      p.start(cstest::cli_path(), args);
      QVERIFY(p.waitForStarted());
      // wait until this process is training (new metrics lines), then kill it a little later,
      // at a different instant each round (checkpoints are written every step)
      QElapsedTimer waited;
      waited.start();
      while (QFileInfo(dir + "/metrics.jsonl").size() <= before + 200 && waited.elapsed() < 120000 &&
             p.state() == QProcess::Running)
        QThread::msleep(20);
      QVERIFY2(p.state() == QProcess::Running, qPrintable(QString::fromUtf8(p.readAllStandardError())));
      QThread::msleep(static_cast<unsigned long>(37 + 53 * round));
      p.kill();  // SIGKILL: no chance to clean up
      p.waitForFinished();
      RunStore store(dir.toStdString());
      QVERIFY(QFile::exists(dir + "/config.json"));
      store.read_config();        // parses
      auto s = store.read_summary();  // parses
      QCOMPARE(QString::fromStdString(s.status), QString("running"));
      auto metrics = store.read_metrics();
      if (QFile::exists(dir + "/checkpoints/last.pt")) {
        Trainer t(cfg, make_task(cfg, dir.toStdString()), nullptr);
        t.load_checkpoint((dir + "/checkpoints/last.pt").toStdString());
        QVERIFY(t.step() >= 1);
        ++checked;
      }
    }
    QVERIFY(checked >= 2);
    // finish it with a bounded number of steps
    QString out, err;
    const int rc = cstest::run_cli({"train", "--resume", dir, "--steps", "0", "--quiet"}, &out, &err);
    QVERIFY2(rc == 2, qPrintable(err));  // steps 0 is out of range: clear error, exit 2
    RunStore store(dir.toStdString());
    const int64_t done = store.read_summary().step;
    const int rc2 = cstest::run_cli({"train", "--resume", dir, "--steps", QString::number(done + 5), "--quiet"}, &out, &err);
    QVERIFY2(rc2 == 0, qPrintable(err));
    QCOMPARE(QString::fromStdString(store.read_summary().status), QString("finished"));
    // a resume sweeps away temp files a kill may have left behind
    for (auto& n : QDir(dir + "/checkpoints").entryList(QDir::Files)) QVERIFY2(!n.contains(".tmp."), qPrintable(n));
    for (auto& n : QDir(dir).entryList(QDir::Files)) QVERIFY2(!n.contains(".tmp."), qPrintable(n));
  }
};

CS_TEST(TestTrainer, "trainer")
#include "test_trainer.moc"
