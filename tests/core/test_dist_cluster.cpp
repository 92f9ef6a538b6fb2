// The multi-machine form of data-parallel training (--rank/--world-size/--master), with
// local processes on 127.0.0.1 started one by one exactly as a cluster launcher would:
// a run to completion, a worker that never arrives (a clear timeout message), and a
// worker killed mid-run (a bounded exit of the other; the run resumes with one process).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>

#include "corpus_fixture.h"
#include "dist_fixture.h"

namespace test_dist_cluster {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// A port for this test process's rendezvous (distinct per test function).
std::string port(int k) { return std::to_string(20000 + (::getpid() * 7 + k * 101) % 40000); }

std::vector<std::string> worker_args(const std::string& cfg, const std::string& dir, int rank,
                                     const std::string& master, const std::string& timeout) {
  return {"train",        cfg, "--run-dir", dir,    "--rank",         std::to_string(rank),
          "--world-size", "2", "--master",  master, "--dist-timeout", timeout,
          "--threads",    "1", "--quiet"};
}

// Milliseconds since `t0`.
int64_t elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

class DistCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(cstest::default_corpus_path()))
        << "the default corpus is missing: " << cstest::default_corpus_path();
  }
};

TEST_F(DistCluster, masterFormRunsToCompletion) {
  const std::string cfg = cstest::write_json_file("cluster.json", cstest::tiny_config("char_lm", 6));
  const std::string dir = cstest::temp_dir() + "/cluster_ok", master = "127.0.0.1:" + port(1);
  cstest::Process r0, r1;
  ASSERT_TRUE(r0.start(worker_args(cfg, dir, 0, master, "30"))) << r0.err();
  ASSERT_TRUE(r1.start(worker_args(cfg, dir, 1, master, "30"))) << r1.err();
  ASSERT_TRUE(r0.wait(90000));
  ASSERT_TRUE(r1.wait(90000));
  ASSERT_TRUE(r0.exit_code() == 0) << r0.err();
  ASSERT_TRUE(r1.exit_code() == 0) << r1.err();
  auto s = RunStore(dir).read_summary();
  ASSERT_EQ(s.status, std::string("finished"));
  ASSERT_EQ(s.step, int64_t(6));
  ASSERT_TRUE(s.has_test);
}

TEST_F(DistCluster, workerThatNeverArrives) {
  const std::string cfg = cstest::write_json_file("lonely.json", cstest::tiny_config("char_lm", 6));
  const std::string dir = cstest::temp_dir() + "/cluster_lonely", master = "127.0.0.1:" + port(2);
  const auto t = std::chrono::steady_clock::now();
  cstest::Process r0;
  r0.start(worker_args(cfg, dir, 0, master, "3"));
  ASSERT_TRUE(r0.wait(60000));
  const std::string err = r0.err();
  ASSERT_EQ(r0.exit_code(), 1);
  ASSERT_TRUE(cstest::contains(err, "not every worker arrived within 3 s") && cstest::contains(err, "--world-size 2") &&
              cstest::contains(err, "--master " + master))
      << err;
  ASSERT_TRUE(elapsed_ms(t) < 45000);
}

TEST_F(DistCluster, killedWorkerStopsTheOtherAndRunResumes) {
  json raw = cstest::tiny_config("char_lm", 1000000);
  raw["training"]["eval_every"] = 0;
  raw["training"]["checkpoint_every"] = 3;
  const std::string cfg = cstest::write_json_file("killed.json", raw);
  const std::string dir = cstest::temp_dir() + "/cluster_kill", master = "127.0.0.1:" + port(3);
  cstest::Process r0, r1;
  ASSERT_TRUE(r0.start(worker_args(cfg, dir, 0, master, "10"))) << r0.err();
  ASSERT_TRUE(r1.start(worker_args(cfg, dir, 1, master, "10"))) << r1.err();
  const auto t = std::chrono::steady_clock::now();
  while (elapsed_ms(t) < 60000 && r0.running() && !std::filesystem::exists(dir + "/checkpoints/last.pt")) r0.wait(50);
  ASSERT_TRUE(std::filesystem::exists(dir + "/checkpoints/last.pt")) << r0.err();
  ::kill(r1.pid(), SIGKILL);
  const auto bounded = std::chrono::steady_clock::now();
  ASSERT_TRUE(r0.wait(40000)) << "rank 0 kept waiting for the killed worker";
  ASSERT_TRUE(elapsed_ms(bounded) < 30000);  // at most about the 10 s collective timeout
  r1.wait(5000);
  const std::string err = r0.err();
  ASSERT_EQ(r0.exit_code(), 1);
  ASSERT_TRUE(cstest::contains(err, "rank 0 of 2")) << err;
  RunStore store(dir);
  ASSERT_EQ(store.read_summary().status, std::string("failed"));
  const std::vector<int64_t> steps = store.checkpoint_steps();
  ASSERT_FALSE(steps.empty());
  const int64_t last = steps.back();
  // Another number of processes: one.
  std::string out, err2;
  ASSERT_EQ(
      cstest::run_cli({"train", "--resume", dir, "--steps", std::to_string(last + 2), "--quiet"}, &out, &err2, 120000),
      0);
  auto s = store.read_summary();
  ASSERT_EQ(s.status, std::string("finished"));
  ASSERT_EQ(s.step, last + 2);
}

}  // namespace test_dist_cluster
