// One task's data-parallel end-of-run check, shared by test_dist_end (the language
// models) and test_dist_end_sentences (classify, ABSA) so that each test stays short.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "dist_fixture.h"
#include "tasks/task.h"
#include "train/metrics.h"

namespace cstest {
using namespace cs;

// 7 steps: the last step is no evaluation step (eval_every 4), checkpoints at 3 and 6
// and the final one; 8 steps: the last step is an evaluation step. Both walk the whole
// end: final evaluation, last checkpoint, test evaluation of best.pt, summary.
inline void two_processes_finish_like_one(const std::string& task) {
  for (int steps : {7, 8}) {
    const json raw = cstest::tiny_config(task, steps);
    const std::string dir = cstest::temp_dir() + "/end_" + task + "_" + std::to_string(steps);
    std::string out, err;
    const int rc = cstest::run_cli({"train", cstest::write_json_file(task + ".json", raw), "--nproc", "2", "--run-dir",
                                    dir, "--quiet", "--dist-timeout", "30"},
                                   &out, &err, 120000);
    ASSERT_TRUE(rc == 0) << err;
    auto s = RunStore(dir).read_summary();
    ASSERT_EQ(s.status, std::string("finished"));
    ASSERT_EQ(s.step, int64_t(steps));
    ASSERT_TRUE(s.has_test);
    if (steps != 8) continue;
    // One process, same global batch and seed, in memory. Without dropout the two runs
    // differ only by float32 rounding (a mean over the ranks' half-batch gradients
    // instead of one mean over the batch), which Adam carries along for 8 steps:
    // |loss difference| < 1e-3 nats is ~1000x that rounding and far below the
    // change of the loss over the run (tens of 1e-3), so a wrong shard, a missing
    // all-reduce or a mis-weighted short batch fails it.
    const json cfg = load_and_resolve(raw);
    seed_everything(5);
    Trainer single(cfg, make_task(cfg), nullptr);
    single.run();
    auto dist = read_metrics(dir + "/metrics.jsonl");
    std::vector<const MetricsRecord*> one, two;
    for (auto& r : single.history)
      if (!(r.eval && r.split == "test")) one.push_back(&r);
    for (auto& r : dist)
      if (!(r.eval && r.split == "test")) two.push_back(&r);
    ASSERT_EQ(two.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_EQ(two[i]->step, one[i]->step);
      ASSERT_EQ(two[i]->eval, one[i]->eval);
      const double a = one[i]->values.at("loss"), b = two[i]->values.at("loss");
      ASSERT_TRUE(std::abs(a - b) < 1e-3)
          << task << " step " << one[i]->step << " (" << (one[i]->eval ? "eval" : "train") << "): " << a << " vs " << b;
      if (two[i]->eval) {
        ASSERT_NEAR(two[i]->values.at("param_divergence"), 0.0,
                    1e-12);  // identical replicas (QCOMPARE with 0: qFuzzyIsNull)
      } else {
        ASSERT_DOUBLE_EQ(two[i]->values.at("world_size"), 2.0);
        ASSERT_EQ(two[i]->values.count("throughput_rank1"), size_t(1));
      }
    }
  }
}

}  // namespace cstest
