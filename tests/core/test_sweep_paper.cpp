// Every bundled reproduce sweep says what it stands in for and where it departs from the paper
// (issue #51 item 2; the spec's "paper" block, SweepPaperLabel): each setting the spec claims as the
// paper's matches the paper value recorded here from the papers' texts (../shared/papers), and
// every setting of the points' resolved configs that differs from the paper's is a departure whose
// "ours" is the value the points really use. Plus the protocol departures no option shows (10-fold
// cross-validation, pretrained embeddings) and gcn_degree = absolute named a departure from eq. 9.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "harness.h"
#include "sweep/sweep.h"
#include "tasks/seq2seq_model.h"
#include "sweep/table.h"
#include "util/paths.h"

namespace test_sweep_paper {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// The papers' settings, as their texts state them (a list: one value per dataset of the table).
const std::map<std::string, json>& recorded_paper_settings() {
  // CRU (Cui et al., arXiv 1911.05960), section 5.1 and Table 1: "l2-regularization of 0.0001 to the
  // embedding layer in all datasets", "The fully connected layer has a dimension of 1024", "batched
  // training strategy of 32 samples with ADAM optimizer ... clipped gradient to 5"; Table 1: embed /
  // hidden 200 (MR, SUBJ), 256 (IMDB); dropout 0.3 (MR, IMDB), 0.4 (SUBJ); initial LR 0.0005 (MR,
  // SUBJ), 0.001 (IMDB).
  static const json cru_t2 = {{"training.optimizer", "adam"},
                              {"training.batch", 32},
                              {"training.clip", 5.0},
                              {"training.embed_l2", 0.0001},
                              {"training.lr", {0.0005, 0.001}},
                              {"model.dropout", {0.3, 0.4}},
                              {"model.fc", 1024},
                              {"model.embed", {200, 256}},
                              {"model.hidden", {200, 256}}};
  // CRU Fig. 3: MR test accuracy, so MR's column of Table 1.
  static const json cru_f3 = {
      {"training.optimizer", "adam"}, {"training.batch", 32}, {"training.clip", 5.0}, {"training.embed_l2", 0.0001},
      {"training.lr", 0.0005},        {"model.dropout", 0.3}, {"model.fc", 1024},     {"model.embed", 200},
      {"model.hidden", 200}};
  // CRU Table 3 (section 6.1): "the deep-enhanced type with the convolutional filter length of 3";
  // otherwise the AoA Reader's setup (Cui et al. 2017, which it follows): Adam 0.001, batch 32, clip 5,
  // l2 1e-4, orthogonal recurrent initialisation, embedding 384 and hidden 256 on CBT (issue #51).
  static const json cru_t3 = {
      {"training.optimizer", "adam"}, {"training.lr", 0.001},        {"training.batch", 32},
      {"training.clip", 5.0},         {"training.embed_l2", 0.0001}, {"model.recurrent_init", "orthogonal"},
      {"model.filter_length", 3},     {"model.embed", 384},          {"model.hidden", 256}};
  // MZU (Meng et al. 2020), experiments: "Adam ... initial learning rate of 0.001", "mini-batch of 256",
  // "truncated backpropagation through time ... 150", "clipped with 5.0", "layer normalization",
  // "dropout to the candidate activation ... Penn Treebank ... 0.5", "hidden size and filter size for
  // Penn Treebank are set to 800 and 1000", "The embedding size is 256", "share parameters of the
  // M-function across different depths", "output capsules to 2, and use 3 routing iterations",
  // "lambda to 1.0"; Table 3 is MZU+DT (depth 1), eq. 9's degree D~_ii = sum_j A~_ij (signed);
  // Table 4 uses 4 zones.
  json mzu = {{"training.optimizer", "adam"},
              {"training.lr", 0.001},
              {"training.batch", 256},
              {"training.bptt", 150},
              {"training.clip", 5.0},
              {"model.layer_norm", true},
              {"model.candidate_dropout", 0.5},
              {"model.hidden", 800},
              {"model.filter", 1000},
              {"model.embed", 256},
              {"model.share_transition", true},
              {"model.zone_disagreement", 1.0},
              {"model.capsules", 2},
              {"model.routing_iters", 3}};
  static const json mzu_t3 = [&] {
    json j = mzu;
    j["model.depth"] = 1;
    j["model.gcn_degree"] = "signed_clamped";
    return j;
  }();
  static const json mzu_t4 = [&] {
    json j = mzu;
    j["model.zones"] = 4;
    j.erase("model.capsules");  // Table 4 has no capMZU
    j.erase("model.routing_iters");
    return j;
  }();
  // MC-RNN (Xu et al. 2019): translation "2-layer LSTM with word embedding size 256 and hidden state
  // size 256", "halve the learning rate according to validation performance", "beam search ... width
  // 5"; summarization "4 layers", "embedding size ... 256, and the LSTM hidden state size is 256",
  // "mini-batch size is 64", "beam search with width 10"; language model: AWD-LSTM's "three-layer LSTM
  // model, with 1150 units in the hidden layer and 400-dimensional word embeddings".
  static const json mc_t2 = {
      {"model.layers", 2}, {"model.embed", 256}, {"model.hidden", 256}, {"task.beam", 5}, {"training.lr_decay", 0.5}};
  static const json mc_t3 = {{"model.layers", 4},    {"model.embed", 256}, {"model.hidden", 256},
                             {"training.batch", 64}, {"task.beam", 10},    {"training.lr_decay", 0.5}};
  static const json mc_t4 = {{"model.layers", 3}, {"model.hidden", 1150}, {"model.embed", 400}};
  // Table 5: Table 2's translation setup, with "the size of the hidden state of Baseline-RNN model from 256 to
  // 286" (Baseline-RNN-large) and "the number of layers from 2 to 3" (Baseline-RNN-deep).
  static const json mc_t5 = {{"model.layers", {2, 3}},
                             {"model.embed", 256},
                             {"model.hidden", {256, 286}},
                             {"task.beam", 5},
                             {"training.lr_decay", 0.5}};
  static const std::map<std::string, json> all = {
      {"reproduce-cru-table2", cru_t2},  {"reproduce-cru-fig3", cru_f3},    {"reproduce-cru-table3", cru_t3},
      {"reproduce-mzu-table3", mzu_t3},  {"reproduce-mzu-table4", mzu_t4},  {"reproduce-mcrnn-table2", mc_t2},
      {"reproduce-mcrnn-table3", mc_t3}, {"reproduce-mcrnn-table4", mc_t4}, {"reproduce-mcrnn-table5", mc_t5}};
  return all;
}

bool same_value(const json& a, const json& b) {
  if (a.is_number() && b.is_number())
    return std::fabs(a.get<double>() - b.get<double>()) <= 1e-12 * std::max(1.0, std::fabs(a.get<double>()));
  return a == b;
}

bool matches_paper(const json& ours, const json& paper) {
  if (paper.is_array()) {
    for (auto& p : paper)
      if (same_value(ours, p)) return true;
    return false;
  }
  return same_value(ours, paper);
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The value of "section.key" in a resolved config (null when the option does not apply to the point).
json option_value(const json& cfg, const std::string& path) {
  const auto dot = path.find('.');
  const std::string s = path.substr(0, dot), k = path.substr(dot + 1);
  if (!cfg.contains(s) || !cfg[s].is_object() || !cfg[s].contains(k)) return json();
  return cfg[s][k];
}

const SweepDeparture* departure_of(const SweepSpec& spec, const std::string& setting) {
  for (auto& d : spec.paper.departures)
    if (d.setting == setting) return &d;
  return nullptr;
}

}  // namespace

TEST(SweepPaper, everyReproduceSpecClaimsThePapersSettingsAndListsItsDepartures) {
  int checked = 0;
  for (auto& [name, recorded] : recorded_paper_settings()) {
    SCOPED_TRACE(name);
    const SweepSpec spec = load_sweep_spec(name);
    ASSERT_TRUE(spec.paper.present()) << name << ": no \"paper\" block";
    // the settings the spec claims as the paper's are the papers' (no more, no fewer)
    EXPECT_EQ(spec.paper.settings.size(), recorded.size()) << spec.paper.settings.dump();
    for (auto& [path, value] : recorded.items()) {
      ASSERT_TRUE(spec.paper.settings.contains(path)) << path;
      EXPECT_EQ(spec.paper.settings[path].dump(), value.dump()) << path;
    }
    // every point's resolved value of each such setting: the paper's, or a listed departure
    std::map<std::string, std::set<std::string>> ours;  // path -> the values that differ from the paper
    std::set<std::string> applied;                      // paths some point has
    for (auto& p : expand_sweep(spec))
      for (auto& [path, paper] : recorded.items()) {
        const json v = option_value(p.config, path);
        if (v.is_null()) continue;
        applied.insert(path);
        if (!matches_paper(v, paper)) ours[path].insert(value_text(v));
      }
    EXPECT_EQ(applied.size(), recorded.size()) << "a recorded setting that no point has is not checked";
    for (auto& [path, values] : ours) {
      const SweepDeparture* d = departure_of(spec, path);
      ASSERT_NE(d, nullptr) << path << " = " << *values.begin() << " differs from the paper but is not a departure";
      for (auto& v : values) EXPECT_NE(d->ours.find(v), std::string::npos) << path << ": ours '" << d->ours << "'";
    }
    // every departure of an option names the value the points use, and that value is not the paper's
    for (auto& d : spec.paper.departures) {
      if (d.setting.find('.') == std::string::npos) continue;  // a protocol setting ("evaluation split")
      std::set<std::string> used;
      for (auto& p : expand_sweep(spec)) {
        const json v = option_value(p.config, d.setting);
        if (!v.is_null()) used.insert(value_text(v));
      }
      ASSERT_FALSE(used.empty()) << d.setting << ": no point has this option";
      for (auto& v : used) EXPECT_NE(d.ours.find(v), std::string::npos) << d.setting << ": ours '" << d.ours << "'";
      if (recorded.contains(d.setting)) {
        EXPECT_TRUE(ours.count(d.setting)) << d.setting << " is the paper's value";
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);
  // and no bundled reproduce spec is missing from the record
  for (auto& s : bundled_sweeps()) {
    const std::string n = s["name"].get<std::string>();
    if (n.rfind("reproduce-", 0) == 0) {
      EXPECT_TRUE(recorded_paper_settings().count(n)) << n;
    }
  }
}

// What no option shows: the evaluation protocol and the pretrained vectors of CRU Table 2 / Fig. 3,
// and gcnMZU's absolute degree, named a departure from eq. 9.
TEST(SweepPaper, protocolDeparturesAndEq9) {
  for (const char* n : {"reproduce-cru-table2", "reproduce-cru-fig3"}) {
    const SweepSpec s = load_sweep_spec(n);
    const SweepDeparture* split = departure_of(s, "evaluation split");
    ASSERT_NE(split, nullptr) << n;
    EXPECT_NE(split->paper.find("10-fold cross-validation"), std::string::npos) << n;
    EXPECT_NE(departure_of(s, "pretrained embeddings"), nullptr) << n;
  }
  const SweepSpec mzu = load_sweep_spec("reproduce-mzu-table3");
  const SweepDeparture* g = departure_of(mzu, "model.gcn_degree");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->ours.rfind("absolute", 0), 0u) << g->ours;
  // issue #51 item 2: eq. 9's own degree runs beside it, at 2, 4 and 8 zones on 3 seeds (not at 16, where it
  // overflows), and the spec says so where the table goes
  std::map<std::string, std::set<int64_t>> eq9;
  for (auto& p : expand_sweep(mzu))
    if (p.config["model"].value("gcn_degree", std::string()) == "signed_clamped" &&
        p.config["model"]["cell"] == "gcn_mzu")
      eq9[p.labels[1]].insert(p.seed);
  const std::map<std::string, std::set<int64_t>> want = {{"2", {1, 2, 3}}, {"4", {1, 2, 3}}, {"8", {1, 2, 3}}};
  EXPECT_EQ(eq9, want);
  ASSERT_EQ(mzu.exclude.size(), 2u);
  EXPECT_NE(mzu.exclude[0].text().find("model.zones=16: not run (eq. 9's signed degree overflows"), std::string::npos)
      << mzu.exclude[0].text();
  EXPECT_NE(g->reason.find("a departure from eq. 9"), std::string::npos) << g->reason;
  EXPECT_NE(mzu.notes.find("a departure from eq. 9"), std::string::npos);
  EXPECT_EQ(mzu.notes.find("eq. 9's degree over |A~_ij|"), std::string::npos) << "the old wording called it eq. 9's";
  const std::string report = read_file(join_path(join_path(resources_dir(), "reports"), "sweep-notes.json"));
  EXPECT_NE(report.find("a departure from eq. 9"), std::string::npos);
}

// The labels name the data the points use and what it stands in for.
TEST(SweepPaper, labelsNameTheDataUsedAndThePapers) {
  SweepResults r;
  r.spec = load_sweep_spec("reproduce-mcrnn-table2");
  const SweepLabels l = sweep_labels(r);
  EXPECT_EQ(l.datasets, (std::vector<std::string>{"spam-headlines"}));
  EXPECT_NE(l.data_line().find("data: spam-headlines ("), std::string::npos) << l.data_line();
  EXPECT_NE(l.data_line().find("standing in for the paper's IWSLT 2014 German-English"), std::string::npos)
      << l.data_line();
  r.spec = load_sweep_spec("reproduce-cru-table2");
  EXPECT_EQ(sweep_labels(r).datasets, (std::vector<std::string>{"spam-assassin", "sotu"}));
  // a malformed block is refused by its JSON path
  json bad = load_sweep_spec("reproduce-cru-fig3").source;
  bad["paper"]["departures"][0].erase("reason");
  EXPECT_THROW(SweepSpec::from_json(bad), UserError);
  try {
    SweepSpec::from_json(bad);
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("paper.departures[0].reason"), std::string::npos) << e.what();
  }
}

// MC-RNN Table 5: the two baselines the paper grows to MC-RNN-3's size ("the model sizes of Baseline-RNN-large and
// Baseline-RNN-deep are almost the same as our best model, MC-RNN-3"), at this spec's scale: the large one within 1 %
// of MC-RNN-3's parameters, the deep one one layer deeper and not smaller than MC-RNN-3; the rows are Table 2's plus
// the two, and every point's model is what its label says.
TEST(SweepPaper, table5BaselinesMatchMcRnn3sParameters) {
  const SweepSpec spec = load_sweep_spec("reproduce-mcrnn-table5");
  std::map<std::string, int64_t> params;
  std::map<std::string, json> model;
  for (auto& p : expand_sweep(spec)) {
    if (p.seed != 1) continue;
    Seq2SeqModel net(p.config["model"], 2000, 2000, 0);  // the spec's 2k shared BPE vocabulary
    int64_t n = 0;
    for (auto& t : net->parameters()) n += t.numel();
    params[p.labels[0]] = n;
    model[p.labels[0]] = p.config["model"];
  }
  const std::vector<std::string> rows = {"Baseline-RNN", "Baseline-RNN-large", "Baseline-RNN-deep",
                                         "MC-RNN-2",     "MC-RNN-3",           "MC-RNN-4"};
  ASSERT_EQ(params.size(), rows.size());
  for (auto& r : rows) ASSERT_TRUE(params.count(r)) << r;
  const double mc3 = static_cast<double>(params["MC-RNN-3"]);
  EXPECT_LT(std::fabs(static_cast<double>(params["Baseline-RNN-large"]) / mc3 - 1.0), 0.01)
      << params["Baseline-RNN-large"] << " vs " << params["MC-RNN-3"];
  EXPECT_GE(params["Baseline-RNN-deep"], params["MC-RNN-3"]);
  EXPECT_GT(params["MC-RNN-3"], params["Baseline-RNN"]);
  EXPECT_EQ(model["Baseline-RNN-large"]["cell"], "lstm");
  EXPECT_GT(model["Baseline-RNN-large"]["hidden"].get<int64_t>(), model["Baseline-RNN"]["hidden"].get<int64_t>());
  EXPECT_EQ(model["Baseline-RNN-deep"]["layers"].get<int64_t>(), model["Baseline-RNN"]["layers"].get<int64_t>() + 1);
  EXPECT_EQ(model["MC-RNN-3"]["block"].get<int64_t>(), 4);
  // Table 2's rows are Table 5's, trained alike (the same base but the grid)
  const SweepSpec t2 = load_sweep_spec("reproduce-mcrnn-table2");
  EXPECT_EQ(t2.source["base"].dump(), spec.source["base"].dump());
}

}  // namespace test_sweep_paper
