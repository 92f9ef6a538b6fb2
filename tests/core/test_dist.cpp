// Data-parallel training over c10d/Gloo with two local processes (cellscope-cli
// train --nproc 2, Gloo bound to 127.0.0.1): averaged gradients == single-process
// gradients of the same global batch, replicas stay identical and follow the
// single-process trajectory, a killed worker stops the others with a message naming
// it and leaves a run that resumes with a different number of processes.
#include <gtest/gtest.h>
#include <signal.h>

#include <torch/serialize.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <sstream>

#include "corpus_fixture.h"
#include "dist/dist.h"
#include "dist/launch.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"

namespace test_dist {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// The real corpus (dataset name "moby-dick"), a short excerpt.
json dist_config(int steps, const std::string& optimizer, double lr) {
  return {{"task", "char_lm"},
          {"dataset", {{"name", "moby-dick"}, {"max_chars", 30000}}},
          {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
          {"training",
           {{"batch", 4},
            {"bptt", 16},
            {"steps", steps},
            {"optimizer", optimizer},
            {"lr", lr},
            {"clip", 0.0},
            {"eval_every", 4},
            {"log_every", 2},
            {"eval_test", false},
            {"seed", 5},
            {"threads", 1},
            {"eval_batch", 4}}}};
}

std::string write_json(const std::string& name, const json& j) {
  const std::string p = cstest::temp_dir() + "/" + name;
  cstest::write_text(p, j.dump());
  return p;
}

std::vector<torch::Tensor> clone_params(Task& t) {
  std::vector<torch::Tensor> v;
  for (auto& p : t.model()->parameters()) v.push_back(p.detach().clone());
  return v;
}

// Gradients of the first training step of a freshly built task (optionally one shard).
std::vector<torch::Tensor> first_step_grads(const json& cfg, std::vector<torch::Tensor>* p0, int rank = 0,
                                            int world = 1) {
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

std::vector<json> metrics_lines(const std::string& dir) { return RunStore(dir).read_metrics(); }

// pid of the worker with `--rank R` whose command line mentions `dir` (scan of /proc).
int64_t find_worker(const std::string& dir, int rank) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string e = it->path().filename().string();
    if (e.empty() || e.find_first_not_of("0123456789") != std::string::npos) continue;
    const int64_t pid = std::stoll(e);
    if (!std::filesystem::exists("/proc/" + e + "/cmdline")) continue;
    const std::vector<std::string> args = cstest::split(cstest::read_text("/proc/" + e + "/cmdline"), '\0');
    bool has_dir = false, has_rank = false;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == dir) has_dir = true;
      if (args[i] == "--rank" && i + 1 < args.size() && args[i + 1] == std::to_string(rank)) has_rank = true;
    }
    if (has_dir && has_rank) return pid;
  }
  return -1;
}

// Lines of `s` (as QString::trimmed().split('\n').size()).
int trimmed_lines(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return 1;
  const auto e = s.find_last_not_of(" \t\n\r\f\v");
  return static_cast<int>(cstest::split(s.substr(b, e - b + 1), '\n').size());
}

// Milliseconds since `t0`.
int64_t elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

class Dist : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(cstest::default_corpus_path()))
        << "the default corpus is missing: " << cstest::default_corpus_path();
  }
};

// Plain SGD with lr 1 and no clipping: p1 = p0 - g, so rank 0's checkpoint after one
// step gives the averaged gradient g = p0 - p1 exactly up to float32 rounding of p.
TEST_F(Dist, averagedGradientsEqualSingleProcess) {
  const double lr = 1.0;
  json raw = dist_config(1, "sgd", lr);
  const json cfg = load_and_resolve(raw);
  std::vector<torch::Tensor> p0;
  const auto g_single = first_step_grads(cfg, &p0);
  const std::string dir = cstest::temp_dir() + "/dist_grad";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", write_json("grad.json", raw), "--nproc", "2", "--run-dir", dir, "--quiet"}, &out,
                            &err, 120000),
            0);
  auto task = load_run_task(dir, "last");
  auto p1 = task->model()->parameters();
  ASSERT_EQ(p1.size(), g_single.size());
  // Tolerance: |g_dist - g_single| <= 1e-5 + 1e-4 |g_single| per entry (float32 sums in
  // a different order, and the rounding of p0 - g).
  double max_err = 0, max_g = 0;
  for (size_t i = 0; i < p1.size(); ++i) {
    auto g_dist = (p0[i] - p1[i].detach()) / lr;
    auto bound = 1e-5 + 1e-4 * g_single[i].abs();
    ASSERT_TRUE(((g_dist - g_single[i]).abs() <= bound).all().item<bool>()) << "parameter " << i;
    max_err = std::max(max_err, (g_dist - g_single[i]).abs().max().item<double>());
    max_g = std::max(max_g, g_single[i].abs().max().item<double>());
  }
  ASSERT_TRUE(max_g > 1e-3);  // a real gradient, not zeros
  // The check can fail: one shard's gradient alone differs from the global one.
  const auto g_half = first_step_grads(cfg, nullptr, 0, 2);
  double half_err = 0;
  for (size_t i = 0; i < g_half.size(); ++i)
    half_err = std::max(half_err, (g_half[i] - g_single[i]).abs().max().item<double>());
  ASSERT_TRUE(half_err > 100 * max_err && half_err > 1e-4) << "half " << half_err << " vs dist " << max_err;
}

TEST_F(Dist, replicasStayIdenticalAndFollowOneProcess) {
  json raw = dist_config(8, "adam", 3e-3);
  const std::string dir = cstest::temp_dir() + "/dist_adam";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", write_json("adam.json", raw), "--nproc", "2", "--run-dir", dir, "--json"}, &out,
                            &err, 120000),
            0);
  auto summary = RunStore(dir).read_summary();
  ASSERT_EQ(summary.status, std::string("finished"));
  ASSERT_EQ(summary.step, int64_t(8));
  // The same run in one process, in memory.
  const json cfg = load_and_resolve(raw);
  seed_everything(5);
  Trainer single(cfg, make_task(cfg), nullptr);
  single.run();
  std::vector<MetricsRecord> single_train;
  for (auto& r : single.history)
    if (!r.eval) single_train.push_back(r);
  int train_lines = 0, eval_lines = 0;
  for (auto& j : metrics_lines(dir)) {
    auto r = MetricsRecord::from_json(j);
    if (r.eval) {
      ++eval_lines;
      ASSERT_TRUE(r.values.count("param_divergence"));
      ASSERT_NEAR(r.values.at("param_divergence"), 0.0, 1e-12);  // bit-identical replicas on both ranks
      continue;
    }
    const auto& s = single_train.at(static_cast<size_t>(train_lines++));
    ASSERT_EQ(r.step, s.step);
    // Adam over 8 steps: the trajectories agree up to float rounding.
    ASSERT_TRUE(std::abs(r.values.at("loss") - s.values.at("loss")) < 1e-4)
        << "step " << r.step << ": " << r.values.at("loss") << " vs " << s.values.at("loss");
    ASSERT_DOUBLE_EQ(r.values.at("world_size"), 2.0);
    auto tp = rank_throughputs(r.values);
    ASSERT_EQ(int(tp.size()), 2);
    ASSERT_TRUE(tp[0] > 0 && tp[1] > 0);
    ASSERT_TRUE(r.values.at("allreduce_ms") >= 0);
  }
  ASSERT_EQ(train_lines, 4);
  ASSERT_EQ(eval_lines, 2);
  // --json prints rank 0's lines only (one per metrics line + the summary).
  ASSERT_EQ(trimmed_lines(out), 4 + 2 + 1);
  // A global batch that does not split evenly is refused before anything starts.
  ASSERT_EQ(
      cstest::run_cli({"train", write_json("adam3.json", raw), "--nproc", "3", "--run-dir", dir + "_3"}, &out, &err),
      2);
  ASSERT_TRUE(cstest::contains(err, "training.batch")) << err;
  ASSERT_TRUE(!std::filesystem::is_directory(dir + "_3"));
}

TEST_F(Dist, killedWorkerStopsOthersAndRunResumes) {
  json raw = dist_config(1000000, "adam", 3e-3);
  raw["training"]["checkpoint_every"] = 3;
  raw["training"]["eval_every"] = 0;
  const std::string dir = cstest::temp_dir() + "/dist_kill";
  cstest::Process p;
  ASSERT_TRUE(p.start(
      {"train", write_json("kill.json", raw), "--nproc", "2", "--run-dir", dir, "--quiet", "--dist-timeout", "30"}))
      << p.err();
  // Wait (generously: the machine may be loaded) for a checkpoint and for rank 1.
  const auto t = std::chrono::steady_clock::now();
  int64_t pid1 = -1;
  while (elapsed_ms(t) < 90000 && p.running()) {
    if (pid1 < 0) pid1 = find_worker(dir, 1);
    if (pid1 > 0 && std::filesystem::exists(dir + "/checkpoints/last.pt")) break;
    p.wait(100);
  }
  ASSERT_TRUE(pid1 > 0 && std::filesystem::exists(dir + "/checkpoints/last.pt")) << p.err();
  ASSERT_EQ(::kill(static_cast<pid_t>(pid1), SIGKILL), 0);
  ASSERT_TRUE(p.wait(75000)) << "the surviving worker did not stop";
  const std::string err = p.err();
  ASSERT_TRUE(p.exit_code() != 0);
  ASSERT_TRUE(cstest::contains(err, "worker rank 1") && cstest::contains(err, "killed by signal 9")) << err;
  ASSERT_TRUE(cstest::contains(err, "rank 0 of 2")) << err;  // the survivor says what it was doing
  ASSERT_TRUE(cstest::contains(err, "--resume")) << err;
  RunStore store(dir);
  ASSERT_EQ(store.read_summary().status, std::string("failed"));
  auto steps = store.checkpoint_steps();
  ASSERT_TRUE(!steps.empty());
  const int64_t last = steps.back();
  ASSERT_TRUE(last % 3 == 0);
  // Resume with a different number of processes (1): the checkpoint is rank-independent.
  std::string out, err2;
  ASSERT_EQ(
      cstest::run_cli({"train", "--resume", dir, "--steps", std::to_string(last + 4), "--quiet"}, &out, &err2, 120000),
      0);
  auto s = store.read_summary();
  ASSERT_EQ(s.status, std::string("finished"));
  ASSERT_EQ(s.step, last + 4);
  // ... and with two again.
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--nproc", "2", "--steps", std::to_string(last + 8), "--quiet"},
                            &out, &err2, 120000),
            0);
  ASSERT_EQ(store.read_summary().step, last + 8);
}

TEST_F(Dist, taskWithoutShardingIsNamed) {
  // The Task default refuses data parallelism with the task's name.
  struct NoShard : CharLMTask {
    using CharLMTask::CharLMTask;
    void set_shard(int r, int w) override { Task::set_shard(r, w); }
  };
  const json cfg = load_and_resolve(dist_config(1, "adam", 1e-3));
  NoShard t(cfg, "");
  try {
    t.set_shard(0, 2);
    FAIL() << "no error";
  } catch (const UserError& e) {
    ASSERT_TRUE(cstest::contains(e.what(), "char_lm") && cstest::contains(e.what(), "does not support data-parallel"))
        << e.what();
  }
}

}  // namespace test_dist
