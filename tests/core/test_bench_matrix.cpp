// `cellscope-cli bench` for every cell x task it offers (every cell of the registry; --task char_lm
// and classify), at tiny sizes and one timed step each: exit 0, and every figure of the report
// present and finite, the baseline's included. Each compared model is configured from its own
// cell's options (bench/bench.h, model_for_cell): a CRU's conv_window or filter_length is not
// handed to the GRU baseline, and a CRU in the char-LM benchmark reads causally.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cells/registry.h"
#include "harness.h"

namespace test_bench_matrix {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;

namespace {

// The tasks `bench` offers besides --dist / --peer / --analysis (app/cli/commands.cpp, cmd_bench).
const std::vector<std::string>& bench_tasks() {
  static const std::vector<std::string> t = {"char_lm", "classify"};
  return t;
}

std::vector<std::string> bench_args(const std::string& cell, const std::string& task) {
  // hidden 8: divisible by the MZUs' 4 zones and 2 capsules
  return {"bench", "--cell",   cell, "--task",  task, "--batch", "2", "--seq",     "4", "--embed",
          "8",     "--hidden", "8",  "--vocab", "12", "--iters", "1", "--threads", "1"};
}

void expect_positive_finite(const json& r, const std::string& key, const std::string& what) {
  ASSERT_TRUE(r.contains(key) && r[key].is_number()) << what << ": no number '" << key << "' in " << r.dump();
  const double v = r[key].get<double>();
  EXPECT_TRUE(std::isfinite(v) && v > 0) << what << ": " << key << " = " << v;
}

}  // namespace

TEST(BenchMatrix, everyCellAndTaskRuns) {
  for (const std::string& task : bench_tasks()) {
    for (const std::string& cell : cs::cell_names()) {
      // a TorchScript cell needs its file (and has no FLOP count): test_script_cell benches one
      if (cell == "script") continue;
      const std::string what = "bench --cell " + cell + " --task " + task;
      auto args = bench_args(cell, task);
      args.push_back("--json");
      std::string out, err;
      const int rc = cstest::run_cli(args, &out, &err);
      EXPECT_EQ(rc, 0) << what << ": " << err;
      if (rc != 0) continue;
      const json r = cstest::json_object(out);
      EXPECT_EQ(r.value("cell", std::string()), cell) << what;
      EXPECT_EQ(r.value("task", std::string()), task) << what;
      for (const char* k :
           {"seconds_per_step", "throughput", "flops_per_step", "gflops", "gemm_gflops", "efficiency",
            "baseline_seconds_per_step", "baseline_throughput", "baseline_gflops", "time_ratio", "flop_ratio"})
        expect_positive_finite(r, k, what);
      EXPECT_FALSE(r.value("baseline", std::string()).empty()) << what;
    }
  }
}

// The report as text: every line, for the cell whose own options the GRU baseline once received.
TEST(BenchMatrix, textReportHasEveryLine) {
  for (const std::string& task : bench_tasks()) {
    std::string out, err;
    ASSERT_EQ(cstest::run_cli(bench_args("cru_deep_enhanced", task), &out, &err), 0) << task << ": " << err;
    for (const char* line : {"cell cru_deep_enhanced", "training step", "achieved", "baseline gru", "time ratio"})
      EXPECT_TRUE(cstest::contains(out, line)) << task << ": no '" << line << "' in\n" << out;
    EXPECT_FALSE(cstest::contains(out, "nan") || cstest::contains(out, "inf")) << task << ":\n" << out;
  }
}

// A task bench does not offer is a usage error, so the matrix above is all of it.
TEST(BenchMatrix, otherTasksAreRefused) {
  std::string out, err;
  EXPECT_EQ(cstest::run_cli(bench_args("gru", "word_lm"), &out, &err), 2);
  EXPECT_TRUE(cstest::contains(err, "--task")) << err;
}

}  // namespace test_bench_matrix
