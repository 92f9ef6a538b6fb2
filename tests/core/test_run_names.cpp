// Short names of compared runs (core/inspect/analysis/run_names.h): labels first, else the
// options that differ between the compared runs, abbreviated; never a truncated config diff.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/run_names.h"
#include "harness.h"
#include "train/run_store.h"

namespace test_run_names {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {
json char_lm(const std::string& cell, int hidden, double lr, int64_t max_chars,
             const json& extra_model = json::object()) {
  json model = {{"cell", cell}, {"embed", 64}, {"hidden", hidden}, {"dropout", 0.0}, {"layers", 1}};
  for (auto& [k, v] : extra_model.items()) model[k] = v;
  return {{"task", {{"name", "char_lm"}}},
          {"notes", "free text that differs " + cell},
          {"dataset", {{"name", "moby-dick"}, {"max_chars", max_chars}, {"valid_fraction", 0.05}}},
          {"model", model},
          {"training",
           {{"lr", lr}, {"batch", 32}, {"seed", 1}, {"eval_every", cell == "gru" ? 250 : 100}, {"threads", 0}}}};
}
RunIdentity id(const std::string& dir, const json& cfg, const std::string& label = "") { return {dir, label, cfg}; }
}  // namespace

TEST(RunNames, cellsAndSizesAsThePapersWriteThem) {
  // The example: a gcnMZU with deep transition against a GRU, another hidden size.
  auto names = comparison_names(
      {id("/ws/20260101-char_lm-gcn_mzu", char_lm("gcn_mzu", 256, 0.002, 0, {{"depth", 1}, {"zones", 4}})),
       id("/ws/20260101-char_lm-gru", char_lm("gru", 128, 0.002, 0))});
  ASSERT_EQ(names.size(), size_t(2));
  EXPECT_EQ(names[0], "gcnMZU+DT h256");
  EXPECT_EQ(names[1], "GRU h128");
}

TEST(RunNames, onlyWhatDiffersAbbreviated) {
  auto names =
      comparison_names({id("/ws/a", char_lm("gru", 128, 0.001, 0)), id("/ws/b", char_lm("gru", 128, 0.002, 0))});
  EXPECT_EQ(names[0], "lr 1e-3");
  EXPECT_EQ(names[1], "lr 2e-3");
  // dataset size: 0 = all the corpus
  names =
      comparison_names({id("/ws/a", char_lm("gru", 128, 0.001, 0)), id("/ws/b", char_lm("gru", 128, 0.001, 300000))});
  EXPECT_EQ(names[0], "all chars");
  EXPECT_EQ(names[1], "300k chars");
  // bookkeeping (eval_every, threads) and notes never make a name; nothing else differs
  json a = char_lm("gru", 128, 0.001, 0), b = a;
  b["training"]["eval_every"] = 7;
  b["notes"] = "other";
  names = comparison_names({id("/ws/run-a", a), id("/ws/run-b/", b)});
  EXPECT_EQ(names[0], "run-a");
  EXPECT_EQ(names[1], "run-b");
}

TEST(RunNames, neverATruncatedConfigDiff) {
  // A GRU with max_chars=0 against a gcnMZU with max_chars=300000 (the comparison):
  // the cell first, options the GRU lacks (zones, candidate dropout) left out, short.
  auto names = comparison_names(
      {id("/ws/a", char_lm("gru", 256, 0.003, 0)),
       id("/ws/b", char_lm("gcn_mzu", 256, 0.002, 300000, {{"depth", 0}, {"zones", 4}, {"candidate_dropout", 0.1}}))});
  EXPECT_EQ(names[0], "GRU lr 3e-3 all chars");
  EXPECT_EQ(names[1], "gcnMZU lr 2e-3 300k chars");
  for (auto& n : names) {
    EXPECT_EQ(n.find('='), std::string::npos) << n;
    EXPECT_EQ(n.find("..."), std::string::npos) << n;
    EXPECT_LE(n.size(), size_t(32)) << n;
  }
}

TEST(RunNames, labelsWinAndEqualNamesAreToldApart) {
  auto names = comparison_names(
      {id("/ws/a", char_lm("gru", 128, 0.001, 0), "baseline"), id("/ws/b", char_lm("gru", 128, 0.002, 0))});
  EXPECT_EQ(names[0], "baseline");
  EXPECT_EQ(names[1], "lr 2e-3");
  names = comparison_names(
      {id("/ws/a", char_lm("gru", 128, 0.001, 0), "same"), id("/ws/b", char_lm("gru", 128, 0.002, 0), "same")});
  EXPECT_EQ(names[0], "same (a)");
  EXPECT_EQ(names[1], "same (b)");
  // The seed of a seed group is left out on request
  json s2 = char_lm("gru", 128, 0.001, 0);
  s2["training"]["seed"] = 2;
  RunNameOptions o;
  o.ignore_keys = {"training.seed"};
  names = comparison_names(
      {id("/ws/a", char_lm("gru", 128, 0.001, 0)), id("/ws/b", s2), id("/ws/c", char_lm("gru", 64, 0.001, 0))}, o);
  EXPECT_EQ(names[0], "h128 (a)");
  EXPECT_EQ(names[1], "h128 (b)");
  EXPECT_EQ(names[2], "h64");
  names = comparison_names({id("/ws/a", char_lm("gru", 128, 0.001, 0)), id("/ws/b", s2)});
  EXPECT_EQ(names[1], "seed 2");
}

TEST(RunNames, oneRunAndTheCells) {
  EXPECT_EQ(comparison_names({id("/ws/gru-tiny", char_lm("gru", 16, 0.01, 0))})[0], "GRU (gru-tiny)");
  EXPECT_EQ(comparison_names({id("/ws/x", char_lm("gru", 16, 0.01, 0), "mine")})[0], "mine");
  EXPECT_EQ(cell_short_name({{"cell", "cap_mzu"}, {"depth", 2}}), "capMZU+DT2");
  EXPECT_EQ(cell_short_name({{"cell", "gru_dt"}, {"depth", 1}}), "GRU+DT");
  EXPECT_EQ(cell_short_name({{"cell", "mcrnn"}, {"block", 4}, {"base", "lstm"}}), "MC-RNN-3/LSTM");
  EXPECT_EQ(cell_short_name({{"cell", "sat_mzu"}, {"depth", 0}}), "satMZU");
  EXPECT_EQ(option_short("model.layer_norm", true), "LN");
  EXPECT_EQ(option_short("model.zone_disagreement", 0.5), "\u03bb 0.5");
  EXPECT_EQ(option_short("training.lr", 0.0025), "lr 2.5e-3");
  EXPECT_EQ(option_short("training.lr", 0.05), "lr 0.05");
  EXPECT_EQ(option_short("dataset.max_chars", 1500000), "1.5M chars");
  EXPECT_EQ(option_short("model.share_transition", false), "no share transition");
}

TEST(RunNames, readFromRunDirectoriesWithTheirLabels) {
  const std::string ws = cstest::temp_dir() + "/run_names";
  RunStore a(ws + "/a"), b(ws + "/b");
  a.create();
  b.create();
  a.write_config(char_lm("gru", 128, 0.001, 0));
  b.write_config(char_lm("gru", 256, 0.001, 0));
  auto names = comparison_names_of_dirs({a.dir(), b.dir()});
  EXPECT_EQ(names[0], "h128");
  EXPECT_EQ(names[1], "h256");
  b.write_label("wide GRU");
  names = comparison_names_of_dirs({a.dir(), b.dir()});
  EXPECT_EQ(names[1], "wide GRU");
}

}  // namespace test_run_names
