// The kill trial as a test: a tiny char-LM that checkpoints every step is SIGKILLed at
// random instants (some during start-up and run-directory creation, most while it trains and
// writes checkpoints), resumed after each kill, and its final metrics, summary and last
// checkpoint equal an uninterrupted run's bit for bit. A kill may never leave a directory that
// both --resume and --run-dir refuse (docs/RELIABILITY.md).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "corpus_fixture.h"
#include "harness.h"

namespace test_kill_resume {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
constexpr int kSteps = 200;
constexpr int kKills = 22;

std::string kill_config() {
  const std::string corpus = cstest::write_text_fixture("kill_resume.txt", 20000);
  json cfg = {{"task", "char_lm"},
              {"dataset", {{"path", corpus}}},
              {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}, {"dropout", 0.1}}},
              {"training",
               {{"batch", 4},
                {"bptt", 16},
                {"steps", kSteps},
                {"eval_every", 50},
                {"log_every", 1},
                {"checkpoint_every", 1},
                {"keep_checkpoints", 2},
                {"seed", 5},
                {"threads", 1}}}};
  const std::string p = cstest::temp_dir() + "/kill_resume.json";
  cstest::write_text(p, cfg.dump(2));
  return p;
}

json comparable_summary(const std::string& dir) {
  json s = cstest::json_object(cstest::read_text(dir + "/summary.json"));
  for (auto k : {"elapsed", "mean_throughput", "started", "updated"}) s.erase(k);
  return s;
}

std::string eval_last(const std::string& dir) {
  std::string out, err;
  EXPECT_EQ(cstest::run_cli({"eval", dir, "--checkpoint", "last", "--split", "valid", "--json", "--threads", "1"}, &out,
                            &err),
            0)
      << err;
  return out;
}

// Lines of metrics.jsonl (one per step here: log_every 1), 0 while it does not exist.
size_t metrics_lines(const std::string& dir) {
  if (!fs::exists(dir + "/metrics.jsonl")) return 0;
  const std::string t = cstest::read_text(dir + "/metrics.jsonl");
  return static_cast<size_t>(std::count(t.begin(), t.end(), '\n'));
}
}  // namespace

TEST(KillResume, killedAndResumedRunEqualsUninterrupted) {
  const std::string cfg = kill_config();
  const auto t_start = std::chrono::steady_clock::now();
  const std::string ref = cstest::temp_dir() + "/kill_ref";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", ref, "--quiet", "--threads", "1"}, &out, &err), 0) << err;
  // A training kill comes 1-3 logged steps after the round's start plus a random fraction of one
  // step (the step time measured by the reference run), so each round advances a few steps
  // wherever the test runs. (Kill instants drawn from wall-clock delays alone let a fast, quiet
  // machine finish the 200 steps after 17 kills.)
  const double ref_elapsed = cstest::json_object(cstest::read_text(ref + "/summary.json")).value("elapsed", 0.0);
  const int max_delay_us = std::clamp(static_cast<int>(1e6 * ref_elapsed / kSteps), 200, 30000);

  const std::string dir = cstest::temp_dir() + "/kill_parent/kill_run";
  fs::create_directories(cstest::temp_dir() + "/kill_parent");
  std::mt19937 rng(19);
  int kills = 0, rounds = 0, kills_while_training = 0;
  size_t lines_at_last_kill = 0;
  bool finished = false;
  while (!finished && rounds < 80) {
    ++rounds;
    const bool have_run = fs::exists(dir + "/config.json");
    std::vector<std::string> args =
        have_run ? std::vector<std::string>{"train", "--resume", dir, "--quiet", "--threads", "1"}
                 : std::vector<std::string>{"train", cfg, "--run-dir", dir, "--quiet", "--threads", "1"};
    cstest::Process p;
    ASSERT_TRUE(p.start(args)) << p.err();
    const bool want_kill = kills < kKills;
    if (want_kill) {
      if (kills < 3) {
        // early kills: during start-up, data loading, run-directory creation; at the latest as the
        // round's first new metrics line appears (on a fast machine a fixed delay of up to 0.9 s
        // could otherwise train most of the 200 steps before the kill: 17 kills, then finished)
        const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 900)(rng));
        const size_t lines = metrics_lines(dir);
        const auto t0 = std::chrono::steady_clock::now();
        while (p.running() && metrics_lines(dir) <= lines && std::chrono::steady_clock::now() - t0 < delay)
          std::this_thread::sleep_for(std::chrono::microseconds(500));
      } else {
        // later kills: while training, 1-3 new metrics lines into the round, at a random instant
        const size_t target = metrics_lines(dir) + std::uniform_int_distribution<size_t>(1, 3)(rng);
        const auto t0 = std::chrono::steady_clock::now();
        while (p.running() && metrics_lines(dir) < target &&
               std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
          std::this_thread::sleep_for(std::chrono::microseconds(500));
        std::this_thread::sleep_for(
            std::chrono::microseconds(std::uniform_int_distribution<int>(0, max_delay_us)(rng)));
      }
      if (p.running()) {
        p.signal(SIGKILL);
        ASSERT_TRUE(p.wait(30000));
        ++kills;
        if (fs::exists(dir + "/metrics.jsonl")) ++kills_while_training;
        lines_at_last_kill = metrics_lines(dir);
        continue;
      }
    }
    ASSERT_TRUE(p.wait(300000)) << "the run did not end";
    ASSERT_EQ(p.exit_code(), 0) << (have_run ? "resume" : "new run") << " failed after " << kills
                                << " kills: " << p.err();
    finished =
        cstest::json_object(cstest::read_text(dir + "/summary.json")).value("status", std::string()) == "finished";
  }
  ASSERT_TRUE(finished) << "not finished after " << rounds << " rounds";
  ASSERT_GE(kills, 20) << "the run finished before enough kills; lower the kill delays or raise kSteps";
  ASSERT_GE(kills_while_training, 15);

  // bit for bit: metrics (without wall-clock fields), summary, weights of the last checkpoint
  const auto a = cstest::comparable_metrics(ref), b = cstest::comparable_metrics(dir);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "line " << i;
  ASSERT_EQ(comparable_summary(ref), comparable_summary(dir));
  const std::string ea = eval_last(ref), eb = eval_last(dir);
  ASSERT_FALSE(ea.empty());
  ASSERT_EQ(ea, eb);
  // no temporary files or directories left behind
  for (auto& e : fs::directory_iterator(cstest::temp_dir() + "/kill_parent"))
    ASSERT_EQ(e.path().filename().string(), "kill_run") << "left behind: " << e.path();
  std::printf(
      "kill trial: %d kills (%d while training) in %d rounds, the last at metrics line %zu of %zu, delays up "
      "to %d us, %.1f s\n",
      kills, kills_while_training, rounds, lines_at_last_kill, metrics_lines(dir), max_delay_us,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
}

}  // namespace test_kill_resume
