// Comparisons show like against like (core/inspect/analysis): two runs trained on different
// amounts of one corpus (dataset.max_chars) and for different numbers of steps are analysed
// on the same characters (the first run's text, each run's own vocabulary, unknown symbols
// marked), evaluated on the same data (metric by length), at checkpoints the caption names,
// and named by the options that differ, in the library and in `cellscope-cli analyze`.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "analysis/kinds.h"
#include "analysis/run_names.h"
#include "corpus_fixture.h"
#include "harness.h"

namespace test_analysis_compare {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

class AnalysisCompare : public ::testing::Test {
 protected:
  static std::string ws, run_a, run_b;
  static void SetUpTestSuite() {
    ws = cstest::temp_dir() + "/analysis_compare";
    // "Q", "z" and "é" appear only in the middle of the corpus: run A (all of it) learns
    // them, run B (its first 2500 characters) does not.
    const std::string corpus = ws + "_corpus.txt";
    cstest::write_text(corpus, cstest::fixture_text(3000) + " Qé zz. Qé.\n" + cstest::fixture_text(5000, 9));
    const std::string cfg = ws + "_cfg.json";
    cstest::write_text(cfg, json({{"task", {{"name", "char_lm"}}},
                                  {"dataset", {{"path", corpus}, {"valid_fraction", 0.1}, {"test_fraction", 0.1}}},
                                  {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                                  {"training",
                                   {{"steps", 20},
                                    {"batch", 4},
                                    {"bptt", 16},
                                    {"lr", 0.01},
                                    {"eval_every", 10},
                                    {"checkpoint_every", 10},
                                    {"eval_batch", 4},
                                    {"threads", 1},
                                    {"log_every", 5}}}})
                                .dump());
    run_a = ws + "/all";
    run_b = ws + "/part";
    std::string out, err;
    ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", run_a, "--quiet"}, &out, &err), 0) << out << err;
    ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", run_b, "--set", "dataset.max_chars=2500", "--set",
                               "training.steps=10", "--quiet"},
                              &out, &err),
              0)
        << out << err;
  }
  static AnalysisRequest request(const std::string& kind) {
    AnalysisRequest r;
    r.kind = kind;
    r.runs = {run_a, run_b};
    r.checkpoints = {"step_20", "step_10"};
    r.last_k = 4;
    r.split = "valid";
    return r;
  }
  static bool has(const std::vector<std::string>& v, const std::string& part) {
    for (auto& s : v)
      if (s.find(part) != std::string::npos) return true;
    return false;
  }
};
std::string AnalysisCompare::ws, AnalysisCompare::run_a, AnalysisCompare::run_b;

TEST_F(AnalysisCompare, sideBySideOnTheFirstRunsText) {
  // The Text box empty: both runs read the start of the FIRST run's valid split, although
  // their own valid splits start at different places of the corpus.
  auto r = run_analysis(request("relevance"));
  const auto& h = std::get<HeatmapSet>(r.data);
  ASSERT_EQ(h.matrices.size(), size_t(2));
  // (a symbol run B never saw would be marked «x» in its panel: compare without the marks)
  auto unmarked = [](std::vector<std::string> v) {
    for (auto& s : v)
      if (s.rfind("\u00ab", 0) == 0) s = s.substr(2, s.size() - 4);
    return v;
  };
  EXPECT_EQ(unmarked(h.matrices[0].col_labels), unmarked(h.matrices[1].col_labels));
  EXPECT_GT(h.matrices[0].cols(), 100);
  const auto names = comparison_names_of_dirs({run_a, run_b});
  EXPECT_NE(r.caption.find("the start of the valid split of " + names[0]), std::string::npos) << r.caption;
  EXPECT_NE(r.caption.find("the same for every run"), std::string::npos) << r.caption;
  // At different steps: said, with both steps, first in the caption.
  ASSERT_TRUE(has(r.warnings, "different steps")) << r.caption;
  EXPECT_TRUE(has(r.warnings, names[0] + " at step 20")) << r.caption;
  EXPECT_TRUE(has(r.warnings, names[1] + " at step 10")) << r.caption;
  EXPECT_EQ(r.caption.rfind("Warning: ", 0), size_t(0)) << r.caption;
  // Same step: no warning, the caption still names the checkpoint.
  auto same = request("relevance");
  same.checkpoints = {"step_10", "step_10"};
  auto r2 = run_analysis(same);
  EXPECT_TRUE(r2.warnings.empty());
  EXPECT_NE(r2.caption.find(names[1] + " at step 10"), std::string::npos) << r2.caption;
}

TEST_F(AnalysisCompare, symbolsARunDoesNotKnowAreMarked) {
  auto rq = request("relevance");
  rq.text = "the Qé boat";
  auto r = run_analysis(rq);
  const auto& h = std::get<HeatmapSet>(r.data);
  const auto& a = h.matrices[0].col_labels;
  const auto& b = h.matrices[1].col_labels;
  ASSERT_EQ(a.size(), size_t(11));
  EXPECT_EQ(a[4], "Q");
  EXPECT_EQ(a[5], "\u00e9");
  EXPECT_EQ(b[4], "\u00abQ\u00bb");
  EXPECT_EQ(b[5], "\u00ab\u00e9\u00bb");
  EXPECT_EQ(b[6], "_");
  const auto names = comparison_names_of_dirs({run_a, run_b});
  ASSERT_TRUE(has(r.warnings, names[1] + " does not know \u00abQ\u00bb \u00ab\u00e9\u00bb")) << r.caption;
  EXPECT_FALSE(has(r.warnings, names[0] + " does not know")) << r.caption;
  EXPECT_NE(r.caption.find("the given text"), std::string::npos) << r.caption;
  EXPECT_NE(r.caption.find("does not know"), std::string::npos) << r.caption;
}

TEST_F(AnalysisCompare, metricByLengthOnTheSameData) {
  auto r = run_analysis(request("length"));
  const auto& set = std::get<BucketSet>(r.data);
  ASSERT_EQ(set.runs.size(), size_t(2));
  int64_t na = 0, nb = 0;
  for (size_t k = 0; k < set.runs[0].buckets.size(); ++k) {
    EXPECT_EQ(set.runs[0].buckets[k].sequences, set.runs[1].buckets[k].sequences) << k;
    na += set.runs[0].buckets[k].sequences;
    nb += set.runs[1].buckets[k].sequences;
  }
  EXPECT_GT(na, 0);
  EXPECT_EQ(na, nb);
  const auto names = comparison_names_of_dirs({run_a, run_b});
  EXPECT_EQ(set.runs[0].name, names[0]);
  EXPECT_EQ(set.runs[1].name, names[1]);
  EXPECT_NE(r.caption.find("is evaluated on the data of " + names[0]), std::string::npos) << r.caption;
  EXPECT_NE(r.caption.find("max_chars 0 (" + names[0] + ") vs 2500 (" + names[1] + ")"), std::string::npos)
      << r.caption;
  // The evaluation data holds symbols run B never saw: said.
  EXPECT_TRUE(has(r.warnings, names[1] + " does not know the symbols")) << r.caption;
  EXPECT_TRUE(has(r.warnings, "\u00e9")) << r.caption;
}

TEST_F(AnalysisCompare, cliNamesWarningsAndOneCheckpointPerRun) {
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"analyze", "length", "--run", run_a, "--run", run_b, "--checkpoint", "step_20",
                             "--checkpoint", "step_10", "--split", "valid"},
                            &out, &err),
            0)
      << out << err;
  const json j = json::parse(out);
  const auto names = comparison_names_of_dirs({run_a, run_b});
  ASSERT_EQ(j["buckets"].size(), size_t(2)) << out;
  EXPECT_EQ(j["buckets"][0]["name"], names[0]);
  EXPECT_EQ(j["buckets"][1]["name"], names[1]);
  for (auto& n : names) EXPECT_EQ(n.find('='), std::string::npos) << n;
  EXPECT_NE(err.find("warning: the runs are analysed at different steps"), std::string::npos) << err;
  ASSERT_TRUE(j.contains("warnings")) << out;
  // relevance: the panels' titles are the same names
  ASSERT_EQ(cstest::run_cli({"analyze", "relevance", "--run", run_a, "--run", run_b, "--last", "3"}, &out, &err), 0)
      << out << err;
  const json rj = json::parse(out);
  EXPECT_EQ(rj["matrices"][0]["title"], names[0]);
  EXPECT_EQ(rj["matrices"][1]["title"], names[1]);
  // --checkpoint once per run or once for all
  EXPECT_EQ(cstest::run_cli({"analyze", "length", "--run", run_a, "--run", run_b, "--checkpoint", "step_10",
                             "--checkpoint", "step_10", "--checkpoint", "step_10"},
                            &out, &err),
            2);
  EXPECT_NE(err.find("once per --run"), std::string::npos) << err;
}

}  // namespace test_analysis_compare
