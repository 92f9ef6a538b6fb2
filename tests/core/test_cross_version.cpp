// Runs across LibTorch versions (docs/PLATFORMS.md): the two runs of tests/core/fixtures/torch113,
// written by a build against Debian 12's LibTorch 1.13 (make.sh there), are evaluated, resumed and
// exported by the build under test (1.13 on Debian 12, 2.6 on Debian 13, a CUDA 2.x elsewhere), and
// the same configurations trained again give the same losses within the documented tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace test_cross_version {  // this file's own names in a unity build (tests/README.md)

namespace fs = std::filesystem;
using nlohmann::json;

// The path the fixtures were written with (make.sh) and the corpus it wrote there, byte for byte.
const char* const kFixtureCorpusPath = "/tmp/cellscope-xv/tiny.txt";
std::string cross_version_corpus() {
  std::string s;
  for (int i = 1; i <= 300; ++i)
    s += "the quick brown fox " + std::to_string(i) + " jumps over the lazy dog; call me ishmael.\n";
  return s;
}

// Float tolerances (docs/PLATFORMS.md): an evaluation of the same weights differs only by the GEMM
// kernels' rounding; a training of 40-100 steps lets those differences grow through Adam's updates.
constexpr double kEvalTolBpc = 1e-4;
constexpr double kTrainTolRel = 2e-3;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// A copy of fixture `name` in the test's scratch folder, pointed at a fresh copy of the corpus.
std::string fixture_copy(const std::string& name, const std::string& where) {
  const std::string src = cstest::source_dir() + "/tests/core/fixtures/torch113/" + name;
  const std::string dst = cstest::temp_dir() + "/" + where;
  const std::string corpus = cstest::temp_dir() + "/" + where + "-corpus.txt";
  fs::remove_all(dst);
  fs::copy(src, dst, fs::copy_options::recursive);
  cstest::write_text(corpus, cross_version_corpus());
  for (const char* f : {"config.json", "dataset.json"})
    cstest::write_text(dst + "/" + f, replace_all(cstest::read_text(dst + "/" + f), kFixtureCorpusPath, corpus));
  return dst;
}

std::vector<json> train_lines(const std::string& run_dir) {
  std::vector<json> out;
  std::istringstream in(cstest::read_text(run_dir + "/metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_object() && !j.contains("eval") && j.contains("loss")) out.push_back(j);
  }
  return out;
}

class CrossVersion : public ::testing::TestWithParam<std::string> {};

TEST_P(CrossVersion, torch113RunEvaluatesResumesAndExports) {
  const std::string run = fixture_copy(GetParam(), GetParam() + "-resume");
  const json summary = cstest::json_object(cstest::read_text(run + "/summary.json"));
  ASSERT_TRUE(summary.contains("test_metric")) << run;
  const int64_t step = summary.at("step").get<int64_t>();

  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"eval", run, "--split", "test", "--checkpoint", "last", "--json"}, &out, &err), 0) << err;
  const json ev = cstest::json_object(out);
  ASSERT_TRUE(ev.contains("bpc")) << out;
  EXPECT_NEAR(ev["bpc"].get<double>(), summary["test_metric"].get<double>(), kEvalTolBpc)
      << "the 1.13 checkpoint evaluates to another test BPC than the one it recorded";

  // Resumed and trained on, or refused with the one message that says why (never misread: a shape error at the
  // next step, or a training on misplaced optimizer moments). The build whose LibTorch wrote the run resumes it.
  const std::string before_metrics = cstest::read_text(run + "/metrics.jsonl");
  const int rc = cstest::run_cli({"train", "--resume", run, "--steps", std::to_string(step + 20), "--quiet"}, &out, &err);
  int64_t now = step;
  std::string info;
  cstest::run_cli({"info"}, &info);
  if (cstest::contains(info, "LibTorch        1.13")) {
    ASSERT_EQ(rc, 0) << "the writer's own LibTorch: " << err;
  }
  if (rc == 0) {
    const json after = cstest::json_object(cstest::read_text(run + "/summary.json"));
    EXPECT_EQ(after.value("status", ""), "finished");
    EXPECT_EQ(after.value("step", int64_t(0)), step + 20);
    const auto lines = train_lines(run);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back()["step"].get<int64_t>(), step + 20);
    for (const auto& l : lines) EXPECT_TRUE(std::isfinite(l["loss"].get<double>())) << l.dump();
    now = step + 20;
  } else {
    EXPECT_EQ(rc, 2) << err;
    EXPECT_TRUE(cstest::contains(err, "its optimizer state does not fit the model")) << err;
    EXPECT_EQ(cstest::read_text(run + "/metrics.jsonl"), before_metrics) << "a refused resume changed the run";
    std::cout << "[ note ] " << GetParam() << ": this build refuses to resume the LibTorch 1.13 run: " << err;
  }

  const std::string exported = cstest::temp_dir() + "/" + GetParam() + "-export";
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", exported}, &out, &err), 0) << err;
  EXPECT_TRUE(fs::is_regular_file(exported + "/model.pt"));
  const json man = cstest::json_object(cstest::read_text(exported + "/export.json"));
  EXPECT_EQ(man["checkpoint"].value("step", int64_t(0)), now) << man.dump();
}

TEST_P(CrossVersion, sameTrainingGivesTorch113Losses) {
  const std::string fixture = fixture_copy(GetParam(), GetParam() + "-config");
  const auto want = train_lines(fixture);
  ASSERT_GE(want.size(), 4u);
  const int64_t steps = want.back()["step"].get<int64_t>();
  const std::string run = cstest::temp_dir() + "/" + GetParam() + "-again";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", fixture + "/config.json", "--run-dir", run, "--steps", std::to_string(steps),
                             "--quiet"},
                            &out, &err),
            0)
      << err;
  const auto got = train_lines(run);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i]["step"], want[i]["step"]);
    const double a = got[i]["loss"].get<double>(), b = want[i]["loss"].get<double>();
    EXPECT_NEAR(a, b, kTrainTolRel * std::abs(b)) << GetParam() << " step " << want[i]["step"];
  }
}

INSTANTIATE_TEST_SUITE_P(CrossVersion, CrossVersion, ::testing::Values(std::string("gru"), std::string("gcn_mzu")));

}  // namespace test_cross_version
