// The other endings of a data-parallel run: a stop (SIGTERM on the launcher, or a
// stop request on one rank), an early stop and a NaN on one rank end every rank at
// the same step, with the right status, and nobody waits for a collective timeout.
#include <gtest/gtest.h>

#include <torch/nn/modules/linear.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <limits>

#include "corpus_fixture.h"
#include "dist_fixture.h"
#include "nan_task.h"
#include "tasks/task.h"
#include "util/error.h"

namespace test_dist_stop {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

using cstest::NanTask;

// Milliseconds since `t0`.
int64_t elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

class DistStop : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_threads(1); }
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(cstest::default_corpus_path()))
        << "the default corpus is missing: " << cstest::default_corpus_path();
  }
};

// SIGTERM on the launcher: the workers agree on the step, rank 0 writes the one
// checkpoint of the run at that step, status "stopped"; the launcher exits 75 (a
// scheduler's stop: requeue and resume), where a Ctrl-C would exit 0.
TEST_F(DistStop, sigtermStopsEveryRankAtOneStep) {
  json raw = cstest::tiny_config("char_lm", 1000000);
  raw["training"]["eval_every"] = 0;
  raw["training"]["checkpoint_every"] = 0;  // no checkpoint but the stop's
  const std::string dir = cstest::temp_dir() + "/end_sigterm";
  cstest::Process p;
  ASSERT_TRUE(p.start({"train", cstest::write_json_file("sigterm.json", raw), "--nproc", "2", "--run-dir", dir,
                       "--quiet", "--dist-timeout", "30"}))
      << p.err();
  const auto t = std::chrono::steady_clock::now();
  while (elapsed_ms(t) < 60000 && p.running() && RunStore(dir).read_metrics().size() < 2) p.wait(50);
  ASSERT_TRUE(p.running()) << p.err();
  p.signal(SIGTERM);
  const auto stop = std::chrono::steady_clock::now();
  ASSERT_TRUE(p.wait(60000));
  const std::string err = p.err();
  ASSERT_TRUE(p.normal_exit() && p.exit_code() == 75) << p.exit_code() << "\n" << err;
  ASSERT_TRUE(elapsed_ms(stop) < 20000) << "the ranks did not stop promptly";
  RunStore store(dir);
  auto s = store.read_summary();
  ASSERT_EQ(s.status, std::string("stopped"));
  ASSERT_TRUE(s.step > 0);
  ASSERT_TRUE(store.checkpoint_steps() == std::vector<int64_t>{s.step});  // written once, at the agreed step
  Trainer check(load_and_resolve(raw), make_task(load_and_resolve(raw)), nullptr);
  check.load_checkpoint(store.path("checkpoints/last.pt"));
  ASSERT_EQ(check.step(), s.step);
}

// A SIGTERM to one worker of an env- or cluster-launched pair (a scheduler stopping one task):
// both stop at one step and both exit 75, and the summary names SIGTERM; the worker that got no
// signal exited 0 while the run was unfinished (#52).
TEST_F(DistStop, sigtermOnOneWorkerGivesEveryRankSeventyFive) {
  json raw = cstest::tiny_config("char_lm", 1000000);
  raw["training"]["eval_every"] = 0;
  raw["training"]["checkpoint_every"] = 0;
  const std::string cfg = cstest::write_json_file("sigterm_one.json", raw);
  const std::string dir = cstest::temp_dir() + "/sigterm_one", store = cstest::temp_dir() + "/sigterm_one.store";
  cstest::Process w[2];
  for (int r = 0; r < 2; ++r)
    ASSERT_TRUE(w[r].start({"train", cfg, "--run-dir", dir, "--rank", std::to_string(r), "--world-size", "2",
                            "--store-file", store, "--dist-timeout", "30", "--threads", "1", "--quiet"}))
        << w[r].err();
  const auto t = std::chrono::steady_clock::now();
  while (elapsed_ms(t) < 60000 && w[0].running() && w[1].running() && RunStore(dir).read_metrics().size() < 2)
    w[0].wait(50);
  ASSERT_TRUE(w[0].running() && w[1].running()) << w[0].err() << w[1].err();
  w[1].signal(SIGTERM);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(w[r].wait(60000)) << r;
    ASSERT_TRUE(w[r].normal_exit() && w[r].exit_code() == 75) << "rank " << r << ": " << w[r].exit_code() << "\n"
                                                              << w[r].err();
  }
  const RunSummary s = RunStore(dir).read_summary();
  ASSERT_EQ(s.status, std::string("stopped"));
  ASSERT_NE(s.reason.find("stopped by SIGTERM"), std::string::npos) << s.reason;
}

TEST_F(DistStop, earlyStopOnEveryRank) {
  json raw = cstest::tiny_config("word_lm", 100);
  raw["training"]["lr"] = 0.0;  // nothing improves after the first evaluation
  raw["training"]["eval_every"] = 2;
  raw["training"]["patience"] = 2;
  const std::string dir = cstest::temp_dir() + "/end_early";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cstest::write_json_file("early.json", raw), "--nproc", "2", "--run-dir", dir,
                             "--quiet", "--dist-timeout", "30"},
                            &out, &err, 120000),
            0);
  auto s = RunStore(dir).read_summary();
  ASSERT_EQ(s.status, std::string("finished"));
  ASSERT_EQ(s.step, int64_t(6));  // best at 2, no improvement at 4 and 6
  ASSERT_TRUE(s.reason.find("early stop") != std::string::npos) << s.reason.c_str();
  ASSERT_TRUE(s.has_test);
}

// A NaN on rank 1 only: both ranks stop at the same step with the reason, at once.
TEST_F(DistStop, nanOnOneRankStopsEveryRank) {
  const json cfg = load_and_resolve({{"training", {{"steps", 50}, {"eval_every", 0}, {"log_every", 1}}}});
  const auto t = std::chrono::steady_clock::now();
  auto r = cstest::run_two_ranks(cstest::temp_dir() + "/nan_store", [&](DistContext* d) {
    return std::make_unique<Trainer>(cfg, std::make_unique<NanTask>(d->rank == 1 ? 5 : 1000), nullptr, d);
  });
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(r.error[k].empty()) << r.error[k].c_str();
    ASSERT_EQ(r.summary[k].status, std::string("failed"));
    ASSERT_TRUE(r.summary[k].reason.find("NaN at step 5") != std::string::npos) << r.summary[k].reason.c_str();
    ASSERT_EQ(r.step[k], int64_t(4));
  }
  ASSERT_TRUE(elapsed_ms(t) < 15000);  // nobody waited for the 20 s collective timeout
}

// A stop request on one rank only (as when a signal reaches one process first):
// both stop at the same step, status "stopped".
TEST_F(DistStop, stopOnOneRankStopsEveryRank) {
  const json cfg = load_and_resolve({{"training", {{"steps", 50}, {"eval_every", 0}, {"log_every", 1}}}});
  auto r = cstest::run_two_ranks(
      cstest::temp_dir() + "/stop_store",
      [&](DistContext* d) { return std::make_unique<Trainer>(cfg, std::make_unique<NanTask>(1000), nullptr, d); },
      [](int rank, const Progress& p, TrainerControl& c) {
        if (rank == 1 && p.step == 3) c.stop = true;
      });
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(r.error[k].empty()) << r.error[k].c_str();
    ASSERT_EQ(r.summary[k].status, std::string("stopped"));
    ASSERT_EQ(r.step[k], int64_t(4));  // the flag travels with step 4's statistics
  }
}

}  // namespace test_dist_stop
