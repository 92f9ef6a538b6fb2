// The report states what its tables rest on (issue #51): each sweep section names the data the runs
// used, the paper's data they stand in for and every departure from the paper; a paired table lists
// each comparison's test, p and verdict ("holds" only at p < 0.05 on at least 5 seeds). The
// workspace is written by hand (summary.json with known test values), so the verdicts are known.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/json.h"
#include "harness.h"
#include "report/report.h"
#include "train/test_examples.h"
#include "util/paths.h"

namespace test_report_labels {  // this file's own names in a unity build (tests/README.md)

using namespace cs;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A finished 5-seed sweep "labelled" of three models: "big" is 0.95-0.99 lower than "base" on every
// seed, "odd" differs from it in sign between seeds.
std::string make_workspace() {
  const std::string ws = cstest::temp_dir() + "/report_labels_ws";
  fs::remove_all(ws);
  const json spec = {
      {"name", "labelled"},
      {"base",
       {{"task", {{"name", "char_lm"}}},
        {"dataset", {{"name", "moby-dick"}, {"max_chars", 50000}}},
        {"model", {{"cell", "gru"}}},
        {"training", {{"steps", 100}}}}},
      {"grid", json::array({{{"name", "model"},
                             {"values", json::array({{{"label", "base"}, {"set", json::object()}},
                                                     {{"label", "big"}, {"set", {{"model.hidden", 64}}}},
                                                     {{"label", "odd"}, {"set", {{"model.hidden", 32}}}}})}}})},
      {"seeds", {1, 2, 3, 4, 5}},
      {"table", {{"rows", "model"}, {"metric", "test"}}},
      {"paper",
       {{"source", "Test paper, Table 1"},
        {"dataset", "Penn Treebank"},
        {"dataset_used", "the first 50k characters of Moby Dick"},
        {"settings", {{"training.steps", 5000}}},
        {"departures",
         json::array({{{"setting", "training.steps"}, {"paper", "5000"}, {"ours", "100"}, {"reason", "a test"}}})}}}};
  const std::string dir = ws + "/sweeps/labelled";
  write_text(dir + "/sweep.json", spec.dump(2));
  const double noise[5] = {0.01, -0.02, 0.015, 0.0, -0.01};
  json points = json::object();
  for (const std::string m : {"base", "big", "odd"})
    for (int s = 1; s <= 5; ++s) {
      const double v = 2.0 + noise[s - 1] +
                       (m == "big"   ? -1.0 + 0.01 * s
                        : m == "odd" ? (s % 2 ? 0.05 : -0.05) + noise[s - 1]
                                     : 0.0);
      const std::string rd = ws + "/run-" + m + "-" + std::to_string(s);
      write_text(
          rd + "/config.json",
          json{{"task", {{"name", "char_lm"}}}, {"model", {{"cell", "gru"}}}, {"training", {{"seed", s}}}}.dump());
      write_text(rd + "/summary.json", json{{"status", "finished"},
                                            {"task", "char_lm"},
                                            {"cell", "gru"},
                                            {"primary_metric", "bpc"},
                                            {"lower_is_better", true},
                                            {"parameters", 1000},
                                            {"step", 100},
                                            {"best_valid", v},
                                            {"best_step", 100},
                                            {"test_metric", v},
                                            {"test_units", 5000}}
                                           .dump());
      write_text(rd + "/metrics.jsonl", "");
      points["model=" + m + ",seed=" + std::to_string(s)] = {{"run_dir", rd}, {"status", "finished"}};
    }
  write_text(dir + "/state.json", json{{"points", points}}.dump());
  return ws;
}

}  // namespace

TEST(ReportLabels, sectionsNameTheDataDeparturesAndVerdicts) {
  const std::string ws = make_workspace();
  const json spec = {{"title", "labels"},
                     {"items",
                      {{{"sweep", "labelled"}, {"id", "plain"}},
                       {{"sweep", "labelled"}, {"paired", "row:base"}, {"id", "paired"}},
                       {{"sweep", "labelled"}, {"series", "model"}, {"id", "series"}}}}};
  ReportOptions opt;
  opt.workspace = ws;
  const std::string out = cstest::temp_dir() + "/report_labels_out";
  fs::remove_all(out);
  const json m = render_report(ReportSpec::from_json(spec, "spec"), "", out, opt);
  const std::string md = read_file(out + "/report.md");
  // labels: every sweep section, the figure's CSV and the manifest
  const std::string data =
      "Data: moby-dick (the first 50k characters of Moby Dick), standing in for the paper's Penn Treebank (Test "
      "paper, Table 1).";
  size_t n = 0;
  for (size_t at = md.find(data); at != std::string::npos; at = md.find(data, at + 1)) ++n;
  EXPECT_EQ(n, 3u) << md;
  EXPECT_NE(md.find("- training.steps: paper 5000; ours 100 (a test)"), std::string::npos) << md;
  EXPECT_NE(read_file(out + "/series.csv").find(",moby-dick,Penn Treebank,training.steps: paper 5000; ours 100"),
            std::string::npos);
  EXPECT_NE(read_file(out + "/plain.tex").find("standing in for the paper's Penn Treebank"), std::string::npos);
  EXPECT_EQ(m["items"][0]["labels"]["departures"][0], "training.steps: paper 5000; ours 100 (a test)");
  // verdicts: only the paired item has them; 5 seeds of one sign at p < 0.05 hold, mixed signs do not
  EXPECT_NE(md.find("Verdicts (two-sided tests;"), std::string::npos) << md;
  EXPECT_NE(md.find("| big | -0.970 +- 0.016 (p < 0.0001) |"), std::string::npos) << md;  // the table's cell
  EXPECT_NE(md.find("- big: -0.970 +- 0.016; paired t-test over 5 seeds: t = -137."), std::string::npos) << md;
  EXPECT_NE(md.find(", p < 0.0001; sign test 0+ / 5-, p = 0.062: **holds (p < 0.0001, 5 seeds)**"), std::string::npos)
      << md;
  EXPECT_NE(md.find("- odd: "), std::string::npos) << md;
  EXPECT_NE(md.find("**not established (p = "), std::string::npos) << md;
  EXPECT_NE(md.find("runs store no per-example test results"), std::string::npos) << md;
  EXPECT_EQ(md.find("Verdicts"), md.rfind("Verdicts")) << "one paired item, one list";
  EXPECT_TRUE(m["items"][1]["numbers"]["big / test bpc"].contains("verdict")) << m["items"][1]["numbers"].dump();
  EXPECT_FALSE(m["items"][0]["numbers"]["big / test bpc"].contains("verdict"));
}

// Where the runs stored their test examples, each verdict line gives the bootstrap's p beside the seeds'
// t-test p (the verdict reads the larger): "big" is 1 BPC lower on every one of 40 test lines, "odd"
// the same as "base".
TEST(ReportLabels, verdictsGiveTheBootstrapPBesideTheSeeds) {
  const std::string ws = make_workspace();
  for (const std::string m : {"base", "big", "odd"})
    for (int s = 1; s <= 5; ++s) {
      TestExamples e;
      e.metric = "bpc";
      e.unit = "line";
      for (int i = 0; i < 40; ++i) {
        const double bpc = 2.0 + (m == "big" ? -1.0 : 0.0) + 0.1 * ((i * 7) % 5 - 2);
        e.units.push_back(100);
        e.sums.push_back(bpc * 100 * std::log(2.0));
      }
      write_test_examples(ws + "/run-" + m + "-" + std::to_string(s), e);
    }
  const json spec = {{"title", "bootstrap"}, {"items", {{{"sweep", "labelled"}, {"paired", "row:base"}, {"id", "p"}}}}};
  ReportOptions opt;
  opt.workspace = ws;
  const std::string out = cstest::temp_dir() + "/report_labels_bootstrap";
  fs::remove_all(out);
  render_report(ReportSpec::from_json(spec, "spec"), "", out, opt);
  const std::string md = read_file(out + "/report.md");
  EXPECT_NE(md.find("a paired bootstrap over 40 test lines"), std::string::npos) << md;
  EXPECT_NE(md.find("; bootstrap p < 0.0001; sign test 0+ / 5-"), std::string::npos) << md;  // big
  EXPECT_NE(md.find("; bootstrap p = 1.0; sign test"), std::string::npos) << md;             // odd
}

}  // namespace test_report_labels
