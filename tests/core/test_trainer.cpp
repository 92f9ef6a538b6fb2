// Trainer: determinism, resume == uninterrupted, NaN stop, early stop, atomic run directories.
#include <gtest/gtest.h>
#include <signal.h>

#include <torch/nn/modules/linear.h>

#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include "corpus_fixture.h"
#include "harness.h"
#include "nan_task.h"
#include "tasks/char_lm.h"
#include "train/run_store.h"
#include "train/test_examples.h"
#include "train/trainer.h"
#include "util/error.h"

namespace test_trainer {  // this file's own names in a unity build (tests/README.md)

// Not `using namespace cs`: the suite (fixture) is named Trainer, like cs::Trainer.
using cs::atomic_write;
using cs::EvalResult;
using cs::json;
using cs::load_and_resolve;
using cs::make_task;
using cs::Progress;
using cs::RunStore;
using cs::seed_everything;
using cs::StepResult;
using cs::Task;
using cs::TrainerCallbacks;
using cs::TrainerControl;
using cs::UserError;

namespace {

json small_config(const std::string& path, int steps) {
  return load_and_resolve({{"task", "char_lm"},
                           {"dataset", {{"path", path}}},
                           {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 24}, {"dropout", 0.1}}},
                           {"training",
                            {{"batch", 8},
                             {"bptt", 20},
                             {"steps", steps},
                             {"eval_every", 20},
                             {"log_every", 5},
                             {"checkpoint_every", 10},
                             {"seed", 11},
                             {"threads", 1}}}});
}

// Metrics lines without wall-clock fields.
std::vector<json> comparable(const std::vector<json>& lines) {
  std::vector<json> out;
  for (auto j : lines) {
    j.erase("elapsed");
    j.erase("throughput");
    j.erase("wall_time");
    out.push_back(j);
  }
  return out;
}

std::vector<json> train_to_dir(const json& cfg, const std::string& dir, int stop_at = -1) {
  seed_everything(cfg["training"]["seed"].get<uint64_t>());
  auto store = std::make_shared<RunStore>(dir);
  auto task = make_task(cfg, "");
  store->create();
  store->write_config(cfg);
  atomic_write(store->path("vocab"), task->vocab_text());
  cs::Trainer t(cfg, std::move(task), store);
  TrainerControl control;
  TrainerCallbacks cb;
  cb.on_progress = [&](const Progress& p) {
    if (p.step == stop_at) control.stop = true;
  };
  t.run(&control, cb);
  return store->read_metrics();
}

using cstest::NanTask;

// Size of a file, 0 when it is missing (as QFileInfo::size()).
int64_t file_size(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// Names of the regular files in a directory (none when it is missing).
std::vector<std::string> file_names(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    if (it->is_regular_file()) out.push_back(it->path().filename().string());
  return out;
}

}  // namespace

class Trainer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cs::set_threads(1); }
};

TEST_F(Trainer, deterministicReruns) {
  auto path = cstest::write_text_fixture("det.txt", 20000);
  json cfg = small_config(path, 40);
  auto a = comparable(train_to_dir(cfg, cstest::temp_dir() + "/det_a"));
  auto b = comparable(train_to_dir(cfg, cstest::temp_dir() + "/det_b"));
  ASSERT_TRUE(a.size() > 8);
  ASSERT_TRUE(a == b);
  // a different seed gives different metrics
  json cfg2 = cfg;
  cfg2["training"]["seed"] = 12;
  auto c = comparable(train_to_dir(cfg2, cstest::temp_dir() + "/det_c"));
  ASSERT_TRUE(!(a == c));
}

TEST_F(Trainer, resumeEqualsUninterrupted) {
  auto path = cstest::write_text_fixture("resume.txt", 20000);
  json cfg = small_config(path, 60);
  auto full = comparable(train_to_dir(cfg, cstest::temp_dir() + "/res_full"));
  // stopped at step 27 (a checkpoint is written at the stop), then resumed in a fresh Trainer
  const std::string dir = cstest::temp_dir() + "/res_part";
  train_to_dir(cfg, dir, 27);
  RunStore store(dir);
  ASSERT_EQ(store.read_summary().status, std::string("stopped"));
  {
    seed_everything(999);  // whatever the process RNG is now, the checkpoint restores it
    auto st = std::make_shared<RunStore>(dir);
    cs::Trainer t(cfg, make_task(cfg, dir), st);
    t.resume();
    ASSERT_EQ(t.step(), int64_t(27));
    t.run();
  }
  auto resumed = comparable(store.read_metrics());
  ASSERT_EQ(resumed.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i)
    ASSERT_TRUE(resumed[i] == full[i]) << resumed[i].dump() + "\n vs " + full[i].dump();
  auto s = store.read_summary();
  ASSERT_EQ(s.status, std::string("finished"));
  ASSERT_EQ(s.step, int64_t(60));
}

TEST_F(Trainer, nanLossStopsCleanlyKeepingLastCheckpoint) {
  const std::string dir = cstest::temp_dir() + "/nan_run";
  json cfg =
      load_and_resolve({{"training", {{"steps", 50}, {"checkpoint_every", 2}, {"eval_every", 0}, {"log_every", 1}}}});
  auto store = std::make_shared<RunStore>(dir);
  store->create();
  cs::Trainer t(cfg, std::make_unique<NanTask>(7), store);
  auto out = t.run();
  ASSERT_EQ(out.summary.status, std::string("failed"));
  ASSERT_TRUE(out.summary.reason.find("NaN at step 7") != std::string::npos) << out.summary.reason.c_str();
  ASSERT_EQ(t.step(), int64_t(6));  // the bad update was not applied
  // The weights of step 6 gave the NaN at step 7: their checkpoint is not a good one (a resume
  // from it would replay the same NaN). The last good checkpoint, step 4, is last.pt again.
  ASSERT_TRUE(out.summary.reason.find("step 4") != std::string::npos) << out.summary.reason.c_str();
  ASSERT_FALSE(std::filesystem::exists(store->path("checkpoints/step_6.pt")));
  cs::Trainer t2(cfg, std::make_unique<NanTask>(100), nullptr);
  t2.load_checkpoint(store->path("checkpoints/last.pt"));
  ASSERT_EQ(t2.step(), int64_t(4));
  ASSERT_EQ(store->read_summary().status, std::string("failed"));
}

TEST_F(Trainer, earlyStopOnPatience) {
  auto path = cstest::write_text_fixture("patience.txt", 8000);
  json cfg = small_config(path, 400);
  cfg["training"]["eval_every"] = 5;
  cfg["training"]["patience"] = 2;
  cfg["training"]["lr"] = 0.0;  // nothing improves after the first evaluation
  cs::Trainer t(cfg, make_task(cfg), nullptr);
  auto out = t.run();
  ASSERT_EQ(out.summary.status, std::string("finished"));
  ASSERT_EQ(t.step(), int64_t(15));  // best at 5, no improvement at 10 and 15
  ASSERT_TRUE(out.summary.reason.find("early stop") != std::string::npos);
}

TEST_F(Trainer, lrDecaysAfterEachEvaluationWithoutImprovement) {
  // training.lr_decay: lr x factor after every evaluation that does not beat the best valid
  // metric; the logged lr shows it, and a run resumed after a decay continues at the decayed lr
  // exactly as the uninterrupted run (metrics identical line by line).
  auto path = cstest::write_text_fixture("lrdecay.txt", 20000);
  json cfg = small_config(path, 80);
  cfg["training"]["eval_every"] = 5;
  cfg["training"]["lr"] = 0.2;  // large enough that some evaluations get worse
  cfg["training"]["lr_decay"] = 0.5;
  const auto full = train_to_dir(cfg, cstest::temp_dir() + "/lrd_full");
  // Replay the rule on the logged valid metrics: after a non-improving evaluation at step s
  // every training line after s logs the halved lr.
  double best = std::numeric_limits<double>::infinity(), lr = 0.2;
  int decays = 0;
  std::map<int64_t, double> lr_after;  // step of an evaluation -> lr from the next step on
  for (auto& l : full) {
    if (!l.value("eval", false) || l.value("split", "") != "valid") continue;
    const double v = l.at("bpc").get<double>();
    if (v < best) best = v;
    else {
      lr *= 0.5;
      ++decays;
    }
    lr_after[l.at("step").get<int64_t>()] = lr;
  }
  ASSERT_GT(decays, 0) << "the fixture never got worse: the test would not check the decay";
  ASSERT_LT(decays, 16) << "every evaluation got worse: nothing to tell decays from no decay";
  int checked = 0;
  for (auto& l : full) {
    if (l.value("eval", false) || !l.contains("lr")) continue;
    const int64_t step = l.at("step").get<int64_t>();
    double expect = 0.2;
    for (auto& [s, v] : lr_after)
      if (s < step) expect = v;
    ASSERT_DOUBLE_EQ(l.at("lr").get<double>(), expect) << l.dump();
    ++checked;
  }
  ASSERT_GT(checked, 10);
  // resume after a decay
  int64_t first_decay = -1;
  for (auto& [s, v] : lr_after)
    if (v < 0.2 && first_decay < 0) first_decay = s;
  const std::string dir = cstest::temp_dir() + "/lrd_part";
  train_to_dir(cfg, dir, static_cast<int>(first_decay + 3));
  {
    auto st = std::make_shared<RunStore>(dir);
    cs::Trainer t(cfg, make_task(cfg, dir), st);
    t.resume();
    t.run();
  }
  auto a = comparable(full), b = comparable(RunStore(dir).read_metrics());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(a[i] == b[i]) << b[i].dump() + "\n vs " + a[i].dump();
}

TEST_F(Trainer, trackTestLogsTestAtEveryEvaluation) {
  // training.track_test: the test split is evaluated with every valid evaluation (CRU
  // Fig. 4), logged only; without it, test appears once, at the end (best checkpoint).
  auto path = cstest::write_text_fixture("tracktest.txt", 8000);
  for (bool track : {false, true}) {
    json cfg = small_config(path, 60);
    cfg["training"]["track_test"] = track;
    const std::string dir = cstest::temp_dir() + (track ? "/track-on" : "/track-off");
    auto lines = train_to_dir(cfg, dir);
    std::vector<int64_t> valid_steps, test_steps;
    for (auto& l : lines) {
      if (!l.value("eval", false)) continue;
      (l.value("split", "") == "test" ? test_steps : valid_steps).push_back(l.value("step", int64_t(-1)));
    }
    ASSERT_EQ(valid_steps, (std::vector<int64_t>{20, 40, 60}));
    if (track) {
      ASSERT_EQ(test_steps, (std::vector<int64_t>{20, 40, 60, 60}));  // + the best checkpoint's at the end
    } else {
      ASSERT_EQ(test_steps, (std::vector<int64_t>{60}));
    }
  }
}

// The final test evaluation leaves its per-example results (RUN_DIR/test_examples.json,
// train/test_examples.h) for the sweep tables' paired bootstrap: char_lm's lines, whose BPC is the
// test BPC but for the newline predictions they leave out.
TEST_F(Trainer, finalTestEvaluationWritesItsExamples) {
  auto path = cstest::write_text_fixture("examples.txt", 8000);
  const std::string dir = cstest::temp_dir() + "/examples-run";
  train_to_dir(small_config(path, 40), dir);
  const auto e = cs::read_test_examples(dir);
  ASSERT_TRUE(e.has_value()) << "no test_examples.json in " << dir;
  ASSERT_EQ(e->metric, "bpc");
  ASSERT_GT(e->sums.size(), 3u);
  const auto summary = RunStore(dir).read_summary();
  ASSERT_TRUE(summary.has_test);
  ASSERT_NEAR(e->metric_value(), summary.test_metric, 0.05 * summary.test_metric);
  double units = 0;
  for (auto u : e->units) units += static_cast<double>(u);
  ASSERT_GT(units, 0.9 * static_cast<double>(summary.test_units)) << "the lines miss more than their newlines";
  // No test split evaluated (training.eval_test = false): no file.
  json cfg = small_config(path, 20);
  cfg["training"]["eval_test"] = false;
  train_to_dir(cfg, dir + "-no-test");
  ASSERT_FALSE(cs::read_test_examples(dir + "-no-test").has_value());
}

TEST_F(Trainer, corruptedCheckpointGivesClearError) {
  auto path = cstest::write_text_fixture("corrupt.txt", 8000);
  json cfg = small_config(path, 10);
  const std::string dir = cstest::temp_dir() + "/corrupt_run";
  train_to_dir(cfg, dir);
  const std::string ck = dir + "/checkpoints/last.pt";
  ASSERT_TRUE(std::filesystem::exists(ck));
  const std::string bytes = cstest::read_text(ck);
  std::filesystem::resize_file(ck, bytes.size() / 3);
  cs::Trainer t(cfg, make_task(cfg), nullptr);
  bool clear = false;
  try {
    t.load_checkpoint(ck);
  } catch (const UserError& e) {
    clear = std::string(e.what()).find("corrupted") != std::string::npos &&
            std::string(e.what()).find("last.pt") != std::string::npos;
  }
  ASSERT_TRUE(clear);
}

TEST_F(Trainer, killedAtAnyInstantLeavesReadableRun) {
  // Train in a child process that checkpoints every step, SIGKILL it at several
  // instants, and check the run directory each time: every file parses, the last
  // checkpoint loads, and --resume finishes the run.
  auto path = cstest::write_text_fixture("kill.txt", 30000);
  json cfg = small_config(path, 100000);
  cfg["training"]["checkpoint_every"] = 1;
  cfg["training"]["log_every"] = 1;
  cfg["training"]["eval_every"] = 0;
  const std::string cfg_path = cstest::temp_dir() + "/kill.json";
  cstest::write_text(cfg_path, cfg.dump());
  const std::string dir = cstest::temp_dir() + "/kill_run";
  int checked = 0;
  for (int round = 0; round < 4; ++round) {
    cstest::Process p;
    std::vector<std::string> args = round == 0
                                        ? std::vector<std::string>{"train", cfg_path, "--run-dir", dir, "--quiet"}
                                        : std::vector<std::string>{"train", "--resume", dir, "--quiet"};
    const int64_t before = file_size(dir + "/metrics.jsonl");
    ASSERT_TRUE(p.start(args)) << p.err();
    // wait until this process is training (new metrics lines), then kill it a little later,
    // at a different instant each round (checkpoints are written every step)
    const auto waited = std::chrono::steady_clock::now();
    while (file_size(dir + "/metrics.jsonl") <= before + 200 &&
           std::chrono::steady_clock::now() - waited < std::chrono::milliseconds(120000) && p.running())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(p.running()) << p.err();
    std::this_thread::sleep_for(std::chrono::milliseconds(37 + 53 * round));
    p.signal(SIGKILL);  // no chance to clean up
    p.wait(30000);
    RunStore store(dir);
    ASSERT_TRUE(std::filesystem::exists(dir + "/config.json"));
    store.read_config();            // parses
    auto s = store.read_summary();  // parses
    ASSERT_EQ(s.status, std::string("running"));
    auto metrics = store.read_metrics();
    if (std::filesystem::exists(dir + "/checkpoints/last.pt")) {
      cs::Trainer t(cfg, make_task(cfg, dir), nullptr);
      t.load_checkpoint(dir + "/checkpoints/last.pt");
      ASSERT_TRUE(t.step() >= 1);
      ++checked;
    }
  }
  ASSERT_TRUE(checked >= 2);
  // finish it with a bounded number of steps
  std::string out, err;
  const int rc = cstest::run_cli({"train", "--resume", dir, "--steps", "0", "--quiet"}, &out, &err);
  ASSERT_TRUE(rc == 2) << err;  // steps 0 is out of range: clear error, exit 2
  RunStore store(dir);
  const int64_t done = store.read_summary().step;
  const int rc2 =
      cstest::run_cli({"train", "--resume", dir, "--steps", std::to_string(done + 5), "--quiet"}, &out, &err);
  ASSERT_TRUE(rc2 == 0) << err;
  ASSERT_EQ(store.read_summary().status, std::string("finished"));
  // a resume sweeps away temp files a kill may have left behind
  for (auto& n : file_names(dir + "/checkpoints")) ASSERT_TRUE(!cstest::contains(n, ".tmp.")) << n;
  for (auto& n : file_names(dir)) ASSERT_TRUE(!cstest::contains(n, ".tmp.")) << n;
}

}  // namespace test_trainer
