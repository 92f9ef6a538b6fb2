// Where each cell's fast path runs: a table of option sets per cell family, each held against
// (a) the cell registry's answer, CellInfo::fast_path_refusal (what `bench`, `bench --peer` and
// the other tests ask), and (b) what a training forward of the task's model actually ran,
// StepContext::fast_path_calls (counted by every fast path's dispatcher). The two answers come
// from the same function per family (cells/FUSED_NOTES.md, "Where a fast path runs"), and this
// table keeps them from drifting apart: a family that refuses an option in its dispatcher but
// not in its hook, or the other way round, fails here.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "cells/baseline.h"
#include "cells/fused_common.h"
#include "cells/fused_gru_dt.h"
#include "cells/registry.h"
#include "config/schema.h"
#include "tasks/char_lm.h"
#include "tasks/word_lm.h"

namespace test_fast_path_table {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;

namespace {

struct Case {
  std::string task;  // char_lm or word_lm (word_lm: model.weight_drop)
  json model;        // model section (cell + options), small sizes added by resolve_case
  bool fast;         // whether a training forward takes the cell's fast path
};

// Every family, its defaults and each option that decides. A CRU in a language model needs
// a causal window (tasks/task_common.cpp), which never decides the path.
std::vector<Case> fast_path_cases() {
  const json cru = {{"conv_window", "causal"}};
  auto with = [](json m, const json& extra) {
    m.update(extra);
    return m;
  };
  return {
      // rnn / gru / lstm: LibTorch's fused kernels
      {"char_lm", {{"cell", "rnn"}}, true},
      {"char_lm", {{"cell", "rnn"}, {"layer_norm", true}}, false},
      {"char_lm", {{"cell", "gru"}}, true},
      {"char_lm", {{"cell", "gru"}, {"layer_norm", true}}, false},
      {"char_lm", {{"cell", "gru"}, {"candidate_dropout", 0.25}}, false},
      {"word_lm", {{"cell", "gru"}, {"weight_drop", 0.5}}, true},
      {"char_lm", {{"cell", "lstm"}}, true},
      {"char_lm", {{"cell", "lstm"}, {"layer_norm", true}}, false},
      {"char_lm", {{"cell", "lstm"}, {"candidate_dropout", 0.25}}, false},
      {"word_lm", {{"cell", "lstm"}, {"weight_drop", 0.5}}, true},
      // GRU+DT (fused_gru_dt.cpp): every configuration a task accepts (weight drop is refused by
      // word_lm's check for it; its refusal is checked on the function below)
      {"char_lm", {{"cell", "gru_dt"}}, true},
      {"char_lm", {{"cell", "gru_dt"}, {"depth", 0}}, true},
      {"char_lm",
       {{"cell", "gru_dt"},
        {"depth", 2},
        {"share_transition", false},
        {"layer_norm", true},
        {"candidate_dropout", 0.25}},
       true},
      // CRUs (fused_cru.cpp)
      {"char_lm", with({{"cell", "cru_shallow"}}, cru), true},
      {"char_lm", with({{"cell", "cru_shallow"}, {"reset_after", false}}, cru), false},
      {"char_lm", with({{"cell", "cru_shallow"}, {"candidate_dropout", 0.25}, {"conv_activation", "tanh"}}, cru), true},
      {"char_lm", with({{"cell", "cru_deep"}}, cru), true},
      {"char_lm", with({{"cell", "cru_deep"}, {"reset_after", false}}, cru), false},
      {"char_lm", with({{"cell", "cru_deep_enhanced"}, {"filter_length", 5}}, cru), true},
      {"char_lm", with({{"cell", "cru_deep_enhanced"}, {"reset_after", false}}, cru), false},
      // MZUs (fused_mzu.cpp)
      {"char_lm", {{"cell", "sat_mzu"}}, true},
      {"char_lm", {{"cell", "sat_mzu"}, {"layer_norm", false}, {"candidate_dropout", 0.25}, {"depth", 0}}, true},
      {"char_lm", {{"cell", "sat_mzu"}, {"sat_qkv", "per_zone"}, {"regular_gate", true}}, true},
      {"char_lm", {{"cell", "sat_mzu"}, {"disagreement_pairs", "distinct"}}, false},
      {"char_lm", {{"cell", "sat_mzu"}, {"disagreement_form", "squared_cosine"}}, false},
      {"char_lm", {{"cell", "sat_mzu"}, {"regular_gate", true}, {"regular_trans", true}}, false},
      {"char_lm", {{"cell", "gcn_mzu"}}, true},
      {"char_lm", {{"cell", "gcn_mzu"}, {"gcn_adjacency", "cosine"}}, false},
      {"char_lm", {{"cell", "cap_mzu"}}, true},
      {"char_lm", {{"cell", "cap_mzu"}, {"disagreement_pairs", "distinct"}}, false},
      // MC-RNN (fused_mcrnn.cpp)
      {"char_lm", {{"cell", "mcrnn"}}, true},
      {"char_lm", {{"cell", "mcrnn"}, {"block", 3}}, true},
      {"char_lm", {{"cell", "mcrnn"}, {"base", "gru"}}, false},
      {"char_lm", {{"cell", "mcrnn"}, {"lstm_memory", "average"}}, false},
      {"char_lm", {{"cell", "mcrnn"}, {"state_clamp", "on"}}, false},
      {"char_lm", {{"cell", "mcrnn"}, {"state_clamp", "off"}}, true},
      {"char_lm", {{"cell", "mcrnn"}, {"layer_norm", true}}, false},
      {"char_lm", {{"cell", "mcrnn"}, {"candidate_dropout", 0.25}}, false},
      {"word_lm", {{"cell", "mcrnn"}}, true},
      {"word_lm", {{"cell", "mcrnn"}, {"weight_drop", 0.5}}, false},
  };
}

std::string describe(const Case& c) { return c.task + " " + c.model.dump(); }

json resolve_case(const Case& c) {
  json m = c.model;
  m["embed"] = 8;
  m["hidden"] = 8;
  if (m["cell"].get<std::string>().find("_mzu") != std::string::npos) m["filter"] = 12;
  return cs::load_and_resolve(json{{"task", {{"name", c.task}}}, {"model", m}}, describe(c))["model"];
}

// A training forward of the task's model over a random batch: how many of its cell forwards ran
// a fast path.
int64_t fast_path_calls_of(const Case& c, const json& resolved) {
  torch::manual_seed(0);
  const int64_t V = 11, T = 5, B = 3;
  auto x = torch::randint(0, V, {T, B}, torch::kInt64);
  cs::StepContext ctx;
  if (c.task == "word_lm") {
    cs::WordLMModel net(resolved, V);
    net->train();
    auto st = net->initial_state(B, torch::TensorOptions());
    net->forward(x, st, ctx);
  } else {
    cs::CharLMModel net(resolved, V);
    net->train();
    auto st = net->initial_state(B, torch::TensorOptions());
    net->forward(x, st, ctx);
  }
  return ctx.fast_path_calls;
}

}  // namespace

TEST(FastPathTable, registryAnswersAsTheFastPathRuns) {
  ASSERT_TRUE(cs::fast_paths_enabled());
  for (const Case& c : fast_path_cases()) {
    const json resolved = resolve_case(c);
    const std::string refusal = cs::fast_path_refusal(resolved);
    EXPECT_EQ(refusal.empty(), c.fast) << describe(c) << ": the registry says '" << refusal << "'";
    EXPECT_EQ(cs::cell_has_fast_path(resolved), c.fast) << describe(c);
    const int64_t calls = fast_path_calls_of(c, resolved);
    EXPECT_EQ(calls > 0, c.fast) << describe(c) << ": " << calls << " fast-path forwards ran; the registry says '"
                                 << refusal << "'";
  }
}

// A refusal names the option that decided it, so `bench --peer` can say why a cell runs step-wise.
TEST(FastPathTable, refusalsNameTheirOption) {
  const std::map<std::string, Case> named = {
      {"layer_norm", {"char_lm", {{"cell", "gru"}, {"layer_norm", true}}, false}},
      {"candidate_dropout", {"char_lm", {{"cell", "mcrnn"}, {"candidate_dropout", 0.25}}, false}},
      {"weight_drop", {"word_lm", {{"cell", "mcrnn"}, {"weight_drop", 0.5}}, false}},
      {"reset_after", {"char_lm", {{"cell", "cru_deep"}, {"reset_after", false}, {"conv_window", "causal"}}, false}},
      {"disagreement_pairs", {"char_lm", {{"cell", "sat_mzu"}, {"disagreement_pairs", "distinct"}}, false}},
      {"gcn_adjacency", {"char_lm", {{"cell", "gcn_mzu"}, {"gcn_adjacency", "cosine"}}, false}},
      {"base", {"char_lm", {{"cell", "mcrnn"}, {"base", "rnn"}}, false}},
      {"lstm_memory", {"char_lm", {{"cell", "mcrnn"}, {"lstm_memory", "average"}}, false}},
      {"state_clamp", {"char_lm", {{"cell", "mcrnn"}, {"state_clamp", "on"}}, false}},
  };
  for (const auto& [key, c] : named) {
    const std::string refusal = cs::fast_path_refusal(resolve_case(c));
    EXPECT_NE(refusal.find("model." + key), std::string::npos) << describe(c) << ": '" << refusal << "'";
  }
}

// Every cell of the registry has a hook, and the table above runs each of them at least once on its
// fast path, so a cell with a fast path cannot join without a line here. A cell that only ever runs
// step by step (a TorchScript cell: cells/SCRIPT_CELL_NOTES.md; ho_rnn, hm_rnn) is not listed: its
// own hook says "step by step" for its bare section and for its resolved defaults, and no case of the
// table may claim it runs fast.
TEST(FastPathTable, everyCellIsInTheTable) {
  std::set<std::string> fast_cells;
  for (const Case& c : fast_path_cases())
    if (c.fast) fast_cells.insert(c.model["cell"].get<std::string>());
  int stepwise = 0;
  for (const auto& info : cs::cell_registry()) {
    ASSERT_TRUE(static_cast<bool>(info.fast_path_refusal)) << info.name << ": no CellInfo::fast_path_refusal";
    // the cell's resolved defaults (a script cell's need a script file, SCRIPT_CELL_NOTES.md: its bare section)
    const json m = info.name == "script" ? json{{"cell", info.name}}
                                         : cs::resolve_config(json{{"model", {{"cell", info.name}}}}).at("model");
    const std::string why = info.fast_path_refusal(m);
    if (why.find("step by step") == std::string::npos) {
      EXPECT_EQ(fast_cells.count(info.name), 1u) << info.name << ": not in fast_path_cases()";
      continue;
    }
    ++stepwise;
    EXPECT_EQ(fast_cells.count(info.name), 0u) << info.name << " says it runs step by step: '" << why << "'";
    for (const Case& c : fast_path_cases())  // and says so for every section the table gives it
      if (c.model["cell"] == info.name) {
        EXPECT_NE(cs::fast_path_refusal(resolve_case(c)).find("step by step"), std::string::npos) << describe(c);
      }
  }
  EXPECT_GE(stepwise, 3) << "script, ho_rnn and hm_rnn run step by step";
}

// What no task's configuration reaches: GRU+DT under weight drop (word_lm refuses the option for it),
// and candidate dropout outside [0, 1) (the schema's range). The dispatcher's function refuses both.
TEST(FastPathTable, gruDtRefusesWhatNoConfigReaches) {
  cs::BaselineOptions o;
  EXPECT_EQ(cs::gru_dt_fast_path_refusal(o, 0.0), nullptr);
  EXPECT_NE(cs::gru_dt_fast_path_refusal(o, 0.5), nullptr);
  o.candidate_dropout = 1.0;
  EXPECT_NE(cs::gru_dt_fast_path_refusal(o, 0.0), nullptr);
}

}  // namespace test_fast_path_table
