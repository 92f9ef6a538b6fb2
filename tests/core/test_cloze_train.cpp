// The cloze task end to end (tasks/cloze.h): a few hundred steps on a learnable fixture
// set beat the frequency baseline on held-out questions, resume is exact, and the CLI's
// `train`, `cloze scores` (the re-ranker's input) and `analyze aoa` / `analyze length`.
#include <gtest/gtest.h>

#include <filesystem>

#include "cloze_fixture.h"
#include "config/schema.h"
#include "core_checks.h"
#include "harness.h"
#include "tasks/cloze.h"
#include "sweep/sweep.h"
#include "train/trainer.h"

#include <set>

namespace test_cloze_train {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

json tiny(const std::string& dir, const std::string& cell, const std::string& reader, int steps) {
  return {
      {"task", "cloze"},
      {"dataset", {{"path", dir}}},
      {"model", {{"cell", cell}, {"embed", 16}, {"hidden", 16}, {"reader", reader}}},
      {"training", {{"batch", 16}, {"steps", steps}, {"lr", 0.01}, {"eval_every", 0}, {"threads", 1}, {"seed", 1}}}};
}

std::string data_dir() {
  static const std::string d = clozefix::write_cbt_dir(cstest::temp_dir() + "/cloze-fixture");
  return d;
}

}  // namespace

TEST(ClozeTrain, beatsTheFrequencyBaselineOnHeldOutQuestions) {
  for (std::string reader : {"m_aoa", "aoa"}) {
    json cfg = load_and_resolve(tiny(data_dir(), "gru", reader, 250));
    seed_everything(1);
    auto task = make_task(cfg);
    Trainer tr(cfg, std::move(task), nullptr);
    auto out = tr.run();
    ASSERT_TRUE(out.summary.has_test);
    auto ev = tr.task().evaluate("test");
    const double acc = ev.metrics.at("accuracy"), base = ev.metrics.at("freq_baseline_accuracy");
    std::printf("cloze %s/gru, 250 steps: test accuracy %.3f, frequency baseline %.3f, loss %.3f (60 questions)\n",
                reader.c_str(), acc, base, ev.metrics.at("loss"));
    EXPECT_DOUBLE_EQ(acc, out.summary.test_metric);
    EXPECT_EQ(base, 0.0);  // by construction the most frequent candidate is never the answer
    // seen here (loaded 2-core machine, seed 1): m_aoa 1.000, aoa 0.617 on the 60 test questions (chance 0.1)
    EXPECT_GT(acc, reader == "m_aoa" ? 0.8 : 0.4) << reader;
  }
}

TEST(ClozeTrain, resumeIsExact) {
  json raw = tiny(data_dir(), "cru_deep_enhanced", "m_aoa", 6);
  raw["model"]["dropout"] = 0.2;  // the RNG state must be restored too
  raw["training"]["batch"] = 7;   // the epoch of 400 questions does not divide: order carried over
  json c6 = load_and_resolve(raw);
  raw["training"]["steps"] = 12;
  json c12 = load_and_resolve(raw);
  const auto runs = cstest::run_straight_and_resumed(
      c12, c6, [](const json& c) { return make_task(c); }, cstest::temp_dir() + "/cloze-ck.pt");
  ASSERT_GT(runs.straight_loss(), 0);
  EXPECT_DOUBLE_EQ(runs.resumed_loss(), runs.straight_loss());
  EXPECT_DOUBLE_EQ(runs.resumed->task().epoch(), runs.straight->task().epoch());
}

TEST(ClozeTrain, cliTrainScoresAndAnalyses) {
  const std::string cfgp = cstest::temp_dir() + "/cloze-cli/cfg.json";
  cstest::write_text(cfgp, tiny(data_dir(), "gru", "m_aoa", 20).dump());
  const std::string run = cstest::temp_dir() + "/cloze-cli/run";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err), 0) << err;
  auto s = cstest::json_object(cstest::read_text(run + "/summary.json"));
  EXPECT_EQ(s.value("primary_metric", std::string()), "accuracy");
  EXPECT_EQ(s.value("task", std::string()), "cloze");
  ASSERT_TRUE(std::filesystem::exists(run + "/vocab"));
  ASSERT_EQ(cstest::run_cli({"eval", run, "--split", "test", "--json"}, &out, &err), 0) << err;
  auto ej = cstest::json_object(out);
  EXPECT_TRUE(ej.contains("accuracy") && ej.contains("freq_baseline_accuracy") && ej.contains("loss")) << out;

  // cloze scores: one JSON object per question, the contract's fields
  const std::string f = cstest::temp_dir() + "/cloze-cli/test.jsonl";
  ASSERT_EQ(
      cstest::run_cli({"cloze", "scores", run, "--split", "test", "--checkpoint", "last", "--out", f}, &out, &err), 0)
      << err;
  const auto lines = cstest::split(cstest::read_text(f), '\n', true);
  ASSERT_EQ(lines.size(), 60u);
  const ClozeSplits data = load_cbt_dir(data_dir());
  int correct = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const json j = json::parse(lines[i]);
    ASSERT_EQ(j.size(), 5u) << lines[i];
    EXPECT_EQ(j.at("document").get<std::vector<std::string>>(), data.test[i].document);
    EXPECT_EQ(j.at("query").get<std::vector<std::string>>(), data.test[i].query);
    const auto cands = j.at("candidates").get<std::vector<std::string>>();
    EXPECT_EQ(cands, data.test[i].candidates);
    const auto prob = j.at("prob").get<std::vector<double>>();
    ASSERT_EQ(prob.size(), 10u);
    double sum = 0;
    for (double p : prob) {
      EXPECT_GE(p, 0.0);
      sum += p;
    }
    EXPECT_LE(sum, 1.0 + 1e-5);
    const int64_t a = j.at("answer").get<int64_t>();
    EXPECT_EQ(cands[static_cast<size_t>(a)], data.test[i].answer);
    correct += std::max_element(prob.begin(), prob.end()) - prob.begin() == a;
  }
  // the file's argmax accuracy is the run's accuracy at that checkpoint
  ASSERT_EQ(cstest::run_cli({"eval", run, "--split", "test", "--checkpoint", "last", "--json"}, &out, &err), 0) << err;
  EXPECT_NEAR(cstest::json_object(out).value("accuracy", -1.0), correct / 60.0, 1e-9) << out;
  // bad requests: exit 2 with one message, nothing written
  const std::string g = cstest::temp_dir() + "/cloze-cli/none.jsonl";
  EXPECT_EQ(cstest::run_cli({"cloze", "scores", run, "--split", "nope", "--out", g}, &out, &err), 2);
  EXPECT_TRUE(cstest::contains(err, "nope")) << err;
  EXPECT_FALSE(std::filesystem::exists(g));
  EXPECT_EQ(cstest::run_cli({"cloze", "scores", run, "--split", "test"}, &out, &err), 2);
  EXPECT_TRUE(cstest::contains(err, "--out")) << err;

  // analyses: the AoA heatmap of a question and accuracy by document length
  const std::string aj = cstest::temp_dir() + "/cloze-cli/aoa.json";
  ASSERT_EQ(
      cstest::run_cli({"analyze", "aoa", "--run", run, "--split", "valid", "--question", "3", "--out", aj}, &out, &err),
      0)
      << err;
  const json a = json::parse(cstest::read_text(aj));
  ASSERT_EQ(a.value("kind", std::string()), "aoa");
  const json& m = a.at("matrices").at(0);
  ASSERT_EQ(m.at("columns").size(), data.valid[3].document.size()) << m.dump().substr(0, 400);
  ASSERT_EQ(m.at("rows").size(), 2u);
  double s_sum = 0;
  for (auto& v : m.at("values").at(0)) s_sum += v.get<double>();
  EXPECT_NEAR(s_sum, 1.0, 1e-5);
  EXPECT_EQ(cstest::run_cli({"analyze", "aoa", "--run", run, "--question", "600", "--out", aj}, &out, &err), 2);
  EXPECT_TRUE(cstest::contains(err, "out of range")) << err;
  const std::string lj = cstest::temp_dir() + "/cloze-cli/length.json";
  ASSERT_EQ(cstest::run_cli({"analyze", "length", "--run", run, "--split", "test", "--out", lj}, &out, &err), 0) << err;
  const json l = json::parse(cstest::read_text(lj));
  int64_t n = 0;
  for (auto& b : l.at("buckets").at(0).at("buckets")) n += b.value("sequences", int64_t(0));
  EXPECT_EQ(n, 60) << l.dump().substr(0, 600);
}

TEST(ClozeTrain, presetsAndTable3SweepValidate) {
  // The paper-configuration presets (M-AoA + CRU deep-enhanced k=3, and its GRU baseline) and
  // the Table 3 sweep validate; every point of the sweep is a valid configuration.
  for (std::string name : {"cloze-cbt-cn-cru", "cloze-cbt-cn-gru"}) {
    const json cfg = json::parse(cstest::read_text(cstest::source_dir() + "/resources/presets/" + name + ".json"));
    EXPECT_TRUE(validate_config(cfg).empty()) << name;
    const json r = resolve_config(cfg);
    EXPECT_EQ(r["task"]["name"], "cloze");
    EXPECT_EQ(r["model"]["reader"], "m_aoa");
  }
  const json cru =
      resolve_config(json::parse(cstest::read_text(cstest::source_dir() + "/resources/presets/cloze-cbt-cn-cru.json")));
  EXPECT_EQ(cru["model"]["cell"], "cru_deep_enhanced");
  EXPECT_EQ(cru["model"]["filter_length"], 3);
  // the AoA Reader's setup (Cui et al. 2017, section 4.2): orthogonal recurrent matrices, Adam lr 0.001
  EXPECT_EQ(cru["model"]["recurrent_init"], "orthogonal");
  EXPECT_EQ(cru["training"]["lr"], 0.001);
  const SweepSpec spec = load_sweep_spec("reproduce-cru-table3");
  const auto pts = expand_sweep(spec);
  // 3 readers x the CN set x 5 seeds: the NE set (1 test question) is left out (CLOZE_NOTES.md)
  EXPECT_EQ(pts.size(), 3u * 1u * 5u);
  std::set<std::string> combos;
  for (auto& p : pts) {
    const json r = resolve_config(p.config);
    combos.insert(r["model"]["reader"].get<std::string>() + "/" + r["model"]["cell"].get<std::string>() + "/" +
                  r["dataset"]["name"].get<std::string>());
    EXPECT_EQ(r["model"]["recurrent_init"], "orthogonal");
    EXPECT_EQ(r["training"]["lr"], 0.001);
    EXPECT_EQ(r["dataset"]["blank"], "token");
  }
  EXPECT_TRUE(combos.count("aoa/gru/moby-dick-cbt-cn") && combos.count("m_aoa/gru/moby-dick-cbt-cn") &&
              combos.count("m_aoa/cru_deep_enhanced/moby-dick-cbt-cn"));
  EXPECT_EQ(combos.size(), 3u);
  // a classify dataset is refused for the cloze task with a clear message
  json bad = json::parse(cstest::read_text(cstest::source_dir() + "/resources/presets/cloze-cbt-cn-gru.json"));
  bad["dataset"]["name"] = "spam-assassin";
  const auto errs = validate_config(bad);
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "dataset.name");
}

TEST(ClozeTrain, blankHasItsOwnTokenAndOlderRunsKeepUnk) {
  // A new run: XXXXX is id 2 of its saved vocabulary, and every query's blank reads it.
  const std::string dir = cstest::temp_dir() + "/cloze-blank";
  auto train = [&](const std::string& name, const std::string& blank) {
    json cfg = tiny(data_dir(), "gru", "m_aoa", 10);
    cfg["dataset"]["blank"] = blank;
    const std::string cfgp = dir + "/" + name + ".json", run = dir + "/" + name;
    cstest::write_text(cfgp, cfg.dump());
    std::string out, err;
    EXPECT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err), 0) << err;
    return run;
  };
  auto blank_ids = [](ClozeTask& t) {
    std::set<int32_t> ids;
    const auto& ex = t.examples("test");
    for (size_t i = 0; i < ex.size(); ++i)
      for (size_t j = 0; j < ex[i].query.size(); ++j)
        if (ex[i].query[j] == kClozeBlank) ids.insert(t.items("test")[i].query[j]);
    return ids;
  };
  const std::string fresh = train("fresh", "token");
  EXPECT_EQ(cstest::split(cstest::read_text(fresh + "/vocab"), '\n', true).at(3), "XXXXX");  // header, <unk>, <pad>
  {
    auto task = load_run_task(fresh, "last");
    auto* t = dynamic_cast<ClozeTask*>(task.get());
    ASSERT_TRUE(t);
    EXPECT_TRUE(t->blank_has_own_token());
    EXPECT_EQ(blank_ids(*t), std::set<int32_t>{kClozeBlankId});
  }
  // An older run (made before the blank had its token: its vocabulary has no XXXXX, its config no
  // dataset.blank): it loads, reads the blank as <unk> as it trained, and evaluates exactly as before.
  const std::string old = train("old", "unk");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"eval", old, "--split", "test", "--checkpoint", "last", "--json"}, &out, &err), 0) << err;
  const json before = cstest::json_object(out);
  json cfg = cstest::json_object(cstest::read_text(old + "/config.json"));
  ASSERT_TRUE(cfg["dataset"].contains("blank"));
  cfg["dataset"].erase("blank");
  cstest::write_text(old + "/config.json", cfg.dump(2));
  EXPECT_EQ(cstest::read_text(old + "/vocab").find("XXXXX"), std::string::npos);
  {
    auto task = load_run_task(old, "last");
    auto* t = dynamic_cast<ClozeTask*>(task.get());
    ASSERT_TRUE(t);
    EXPECT_FALSE(t->blank_has_own_token());
    EXPECT_EQ(blank_ids(*t), std::set<int32_t>{Vocab::kUnkId});
  }
  ASSERT_EQ(cstest::run_cli({"eval", old, "--split", "test", "--checkpoint", "last", "--json"}, &out, &err), 0) << err;
  const json after = cstest::json_object(out);
  ASSERT_TRUE(before.contains("loss") && after.contains("loss")) << out;
  EXPECT_DOUBLE_EQ(after.at("loss").get<double>(), before.at("loss").get<double>());
  EXPECT_DOUBLE_EQ(after.at("accuracy").get<double>(), before.at("accuracy").get<double>());
}

}  // namespace test_cloze_train
