// The analyses (core/inspect/analysis/kinds.h, computations.h) on tiny models with hand-set weights
// where the answer is known.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <fstream>

#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "cells/baseline.h"
#include "cells/mcrnn.h"
#include "cells/mzu.h"
#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "tasks/classify.h"
#include "tasks/word_lm.h"
#include "train/run_store.h"
#include "util/error.h"

namespace test_analysis_more {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

void write(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::absolute(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f << data;
}

json char_cfg(const std::string& path, json model) {
  model["embed"] = 6;
  return load_and_resolve({{"task", "char_lm"},
                           {"dataset", {{"path", path}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
                           {"model", model},
                           {"training", {{"batch", 2}, {"bptt", 8}}}});
}

std::shared_ptr<MZUCellImpl> mzu_of(CharLMTask& t) {
  auto c = std::dynamic_pointer_cast<MZUCellImpl>(t.net()->stack->layers[0]);
  if (!c) throw std::runtime_error("not an MZU cell");
  return c;
}

// Make every zone of every M-function a copy of zone 0 (rows of eq. 4), so all zones are equal.
void identical_zones(MZUCellImpl& c, int64_t K, int64_t N, int64_t H) {
  torch::NoGradGuard ng;
  const int64_t dz = H / N;
  for (auto* w : {&c.first->w_x, &c.first->w_h}) {
    auto z = w->narrow(0, 0, K * H).view({K, N, dz, w->size(1)});
    for (int64_t i = 1; i < N; ++i) z.select(1, i).copy_(z.select(1, 0));
  }
}

bool near(double a, double b, double tol = 1e-6) { return std::abs(a - b) < tol; }

// a JSONL classification fixture: sentences of 3 and 12 tokens
std::string sentence_fixture() {
  std::string s;
  for (int i = 0; i < 60; ++i) {
    const bool pos = i % 3 != 0;
    std::string text = i % 2 ? "good film here" : "this is a much longer sentence with twelve tokens in it ok";
    s += json{{"text", text}, {"label", pos ? "pos" : "neg"}}.dump() + "\n";
  }
  const std::string p = cstest::temp_dir() + "/more_sent.jsonl";
  write(p, s);
  return p;
}

json sentence_cfg(const std::string& path, const std::string& cell = "gru") {
  return load_and_resolve({{"task", "classify"},
                           {"dataset", {{"path", path}, {"valid_fraction", 0.25}, {"test_fraction", 0.25}}},
                           {"model", {{"cell", cell}, {"embed", 8}, {"hidden", 6}, {"fc", 8}, {"dropout", 0.0}}},
                           {"training", {{"batch", 4}}}});
}

// Lines of a CSV (as QString::trimmed().split('\n').size()).
int csv_lines(const std::string& csv) {
  const auto b = csv.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return 1;
  const auto e = csv.find_last_not_of(" \t\n\r\f\v");
  return static_cast<int>(cstest::split(csv.substr(b, e - b + 1), '\n').size());
}
}  // namespace

TEST(AnalysisMore, satAttentionIsUniformWithZeroProjections) {
  auto path = cstest::write_text_fixture("more_sat.txt", 3000);
  CharLMTask task(char_cfg(path, {{"cell", "sat_mzu"}, {"hidden", 8}, {"zones", 4}, {"filter", 8}, {"depth", 0}}), "");
  {
    torch::NoGradGuard ng;
    mzu_of(task)->first->w_qkv.zero_();  // Q = K = 0: softmax of zeros, eq. 6
  }
  auto ms = composition_weights(task, "the whale", 4);
  ASSERT_EQ(ms.composition, std::string("sat"));
  ASSERT_EQ(ms.character, std::string("w"));
  ASSERT_EQ(int(ms.panels.size()), 2);  // M_h and M_g
  ASSERT_EQ(ms.panels[0].m_function, std::string("h"));
  for (auto& p : ms.panels) {
    ASSERT_EQ(p.matrix.rows(), int64_t(4));
    ASSERT_EQ(p.matrix.cols(), int64_t(4));
    for (double v : p.matrix.values) ASSERT_TRUE(near(v, 0.25)) << v;
  }
  // CSV: header + 2 panels x 16 cells
  ASSERT_EQ(csv_lines(ms.to_csv()), 33);
}

TEST(AnalysisMore, gcnAdjacencyOfIdenticalZonesAndDzoneMinusOne) {
  auto path = cstest::write_text_fixture("more_gcn.txt", 3000);
  CharLMTask task(char_cfg(path, {{"cell", "gcn_mzu"}, {"hidden", 8}, {"zones", 4}, {"filter", 8}, {"depth", 0}}), "");
  identical_zones(*mzu_of(task), 2, 4, 8);
  // all cosines 1: A~ = W + I has 2 on the diagonal and 1 elsewhere, degree N + 1 = 5,
  // so D^-1/2 A~ D^-1/2 = A~ / 5 (eqs. 7-9)
  auto ms = composition_weights(task, "the sea", -1);
  ASSERT_EQ(ms.composition, std::string("gcn"));
  ASSERT_EQ(int(ms.panels.size()), 2);
  for (auto& p : ms.panels)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 4; ++c) ASSERT_TRUE(near(p.matrix.at(r, c), r == c ? 0.4 : 0.2));
  // D_zone = -mean_ij cos = -1 for both M-functions (eq. 18)
  auto d = mean_dzone(task, "the sea");
  ASSERT_EQ(int(d.size()), 2);
  ASSERT_TRUE(d.count("l0/M_h") && d.count("l0/M_g"));
  for (auto& [k, v] : d) ASSERT_TRUE(near(v, -1.0, 1e-5)) << k;
}

TEST(AnalysisMore, capCouplingIsUniformWithZeroPredictions) {
  auto path = cstest::write_text_fixture("more_cap.txt", 3000);
  CharLMTask task(char_cfg(path, {{"cell", "cap_mzu"},
                                  {"hidden", 8},
                                  {"zones", 4},
                                  {"filter", 8},
                                  {"capsules", 2},
                                  {"routing_iters", 3},
                                  {"depth", 0}}),
                  "");
  {
    torch::NoGradGuard ng;
    mzu_of(task)->first->w_c.zero_();  // z^_{j|i} = 0: b stays 0, c = softmax(0) = 1/J (eqs. 10-14)
  }
  auto ms = composition_weights(task, "a boat", 2);
  ASSERT_EQ(ms.composition, std::string("cap"));
  ASSERT_EQ(ms.iterations, 3);
  ASSERT_EQ(int(ms.panels.size()), 6);  // 2 M-functions x 3 iterations
  ASSERT_EQ(ms.panels[2].iteration, 2);
  for (auto& p : ms.panels) {
    ASSERT_EQ(p.matrix.rows(), int64_t(4));  // input zones
    ASSERT_EQ(p.matrix.cols(), int64_t(2));  // output capsules
    for (double v : p.matrix.values) ASSERT_TRUE(near(v, 0.5));
  }
  // with random weights the routing changes the coefficients, each row still sums to 1
  CharLMTask t2(char_cfg(path, {{"cell", "cap_mzu"}, {"hidden", 8}, {"zones", 4}, {"filter", 8}, {"depth", 0}}), "");
  auto m2 = composition_weights(t2, "a boat", 3);
  bool changed = false;
  for (auto& p : m2.panels)
    for (int64_t r = 0; r < 4; ++r) {
      ASSERT_TRUE(near(p.matrix.at(r, 0) + p.matrix.at(r, 1), 1.0));
      if (p.iteration > 0 && !near(p.matrix.at(r, 0), 0.5, 1e-9)) changed = true;
      if (p.iteration == 0) {
        ASSERT_TRUE(near(p.matrix.at(r, 0), 0.5));
      }  // b = 0 before the first update
    }
  ASSERT_TRUE(changed);
  // a cell without composition weights: one clear error
  CharLMTask gru(char_cfg(path, {{"cell", "gru"}, {"hidden", 8}}), "");
  ASSERT_THROW(composition_weights(gru, "a boat"), UserError);
}

TEST(AnalysisMore, channelAttentionGridAndBlocks) {
  auto path = cstest::write_text_fixture("more_mc.txt", 3000);
  CharLMTask task(char_cfg(path, {{"cell", "mcrnn"}, {"block", 3}, {"base", "gru"}, {"hidden", 8}}), "");
  auto mc = std::dynamic_pointer_cast<McRnnCellImpl>(task.net()->stack->layers[0]);
  ASSERT_TRUE(mc);
  {
    torch::NoGradGuard ng;
    mc->r.zero_();  // e_t^k = 0 for every channel: a_t^k = 1/K (eqs. 4-5)
  }
  const std::string text = "the old man";
  auto g = channel_attention(task, text);
  const int64_t T = 11, K = 2;
  ASSERT_EQ(g.attention.rows(), K);
  ASSERT_EQ(g.attention.cols(), T);
  ASSERT_EQ(g.block_size, int64_t(3));
  ASSERT_EQ(g.tokens[3], std::string("_"));
  for (double v : g.attention.values) ASSERT_TRUE(near(v, 0.5));
  // in-degree = eq. 1 at global positions 1..T; blocks start where it is 1
  for (int64_t k = 0; k < K; ++k) {
    int64_t covered = 0;
    for (int64_t t = 0; t < T; ++t) ASSERT_EQ(g.in_degree[size_t(k)][size_t(t)], mcrnn_in_degree(t + 1, k + 1, 3));
    for (auto& [b, e] : g.blocks[size_t(k)]) {
      ASSERT_TRUE(e > b && e - b <= 2);
      if (b > 0) {
        ASSERT_EQ(g.in_degree[size_t(k)][size_t(b)], int64_t(1));
      }
      covered += e - b;
    }
    ASSERT_EQ(covered, T);
  }
  // the two channels' blocks are offset by one (eq. 1)
  ASSERT_TRUE(g.blocks[0].size() != g.blocks[1].size() || g.blocks[0][0] != g.blocks[1][0]);
  // a random attention vector: every column sums to 1 and the CSV has K*T rows
  CharLMTask t2(char_cfg(path, {{"cell", "mcrnn"}, {"block", 4}, {"base", "lstm"}, {"hidden", 8}}), "");
  auto g2 = channel_attention(t2, text);
  ASSERT_EQ(g2.attention.rows(), int64_t(3));
  for (int64_t t = 0; t < T; ++t)
    ASSERT_TRUE(near(g2.attention.at(0, t) + g2.attention.at(1, t) + g2.attention.at(2, t), 1.0));
  ASSERT_EQ(csv_lines(g2.to_csv()), 1 + 3 * 11);
  CharLMTask gru(char_cfg(path, {{"cell", "gru"}, {"hidden", 8}}), "");
  ASSERT_THROW(channel_attention(gru, text), UserError);
}

TEST(AnalysisMore, wordLmPerplexityByLengthOfAUniformModel) {
  const std::string dir = cstest::temp_dir() + "/more_ptb";
  std::string tr, te;
  for (int i = 0; i < 30; ++i) tr += i % 2 ? " a b c \n" : " a b c d e f g h i j k l \n";
  for (int i = 0; i < 7; ++i) te += i < 4 ? " c b a \n" : " l k j i h g f e d c b a \n";
  write(dir + "/ptb.train.txt", tr);
  write(dir + "/ptb.valid.txt", te);
  write(dir + "/ptb.test.txt", te);
  json cfg = load_and_resolve({{"task", "word_lm"},
                               {"dataset", {{"path", dir}}},
                               {"model", {{"cell", "gru"}, {"embed", 6}, {"hidden", 6}, {"tie_weights", false}}},
                               {"training", {{"batch", 2}, {"bptt", 5}}}});
  WordLMTask task(cfg, "");
  {
    torch::NoGradGuard ng;
    task.net()->out_w.zero_();
    task.net()->out_b.zero_();
  }
  auto b = metric_by_length(task, "test", {});
  ASSERT_EQ(b.metric, std::string("ppl"));
  const double V = static_cast<double>(task.corpus().vocab.size());
  // 4 sentences of 3 words -> bucket (0,10]; 3 of 12 words -> (10,20]. Every token incl.
  // <eos> is scored except the split's very first: 4*4-1 and 3*13 tokens; perplexity V.
  ASSERT_EQ(b.buckets[0].sequences, int64_t(4));
  ASSERT_EQ(b.buckets[0].units, int64_t(15));
  ASSERT_EQ(b.buckets[1].sequences, int64_t(3));
  ASSERT_EQ(b.buckets[1].units, int64_t(39));
  ASSERT_TRUE(near(b.buckets[0].value, V, 1e-3)) << b.buckets[0].value;
  ASSERT_TRUE(near(b.buckets[1].value, V, 1e-3));
  ASSERT_TRUE(std::isnan(b.buckets[2].value));
  ASSERT_EQ(csv_lines(b.to_csv()), 1 + int(b.buckets.size()));
}

TEST(AnalysisMore, classifyAccuracyByLengthAndPrefixTable) {
  SentenceTask task(sentence_cfg(sentence_fixture()), "", false);
  ASSERT_TRUE(task.labels() == (std::vector<std::string>{"neg", "pos"}));
  {
    torch::NoGradGuard ng;
    task.net()->out->weight.zero_();
    task.net()->out->bias.fill_(std::log(3.0));  // sigmoid = 0.75 for "pos" whatever the input
  }
  auto b = metric_by_length(task, "test", {0, 5, 20});
  ASSERT_EQ(b.metric, std::string("accuracy"));
  // expected: the fraction of "pos" among the test sentences of each length
  const auto& sp = task.split("test");
  double pos[2] = {0, 0}, n[2] = {0, 0};
  for (size_t i = 0; i < sp.tokens.size(); ++i) {
    const int k = sp.tokens[i].size() <= 5 ? 0 : 1;
    n[k] += 1;
    pos[k] += sp.labels[i] == 1 ? 1 : 0;
  }
  ASSERT_TRUE(n[0] > 0 && n[1] > 0);
  ASSERT_EQ(b.buckets[0].sequences, int64_t(n[0]));
  ASSERT_EQ(b.buckets[1].sequences, int64_t(n[1]));
  ASSERT_TRUE(near(b.buckets[0].value, pos[0] / n[0]));
  ASSERT_TRUE(near(b.buckets[1].value, pos[1] / n[1]));

  // CRU Table 5: one row per prefix, every prediction "pos" at 0.75
  auto t = prefix_predictions(task, "Good film here");
  ASSERT_EQ(int(t.rows.size()), 3);
  ASSERT_EQ(t.rows[0][0], std::string("good"));
  ASSERT_EQ(t.rows[2][0], std::string("good film here"));
  for (auto& r : t.rows) {
    ASSERT_EQ(r[2], std::string("pos"));
    ASSERT_EQ(r[3], std::string("0.75"));
  }
  // a trained-looking (random) model: each row equals the model on that prefix alone
  SentenceTask t2(sentence_cfg(sentence_fixture(), "cru_shallow"), "", false);
  auto tab = prefix_predictions(t2, "this is a much longer sentence");
  ASSERT_EQ(int(tab.rows.size()), 6);
  t2.net()->eval();
  torch::NoGradGuard ng;
  for (size_t i = 0; i < 6; ++i) {
    SentenceTask::Split s;
    std::vector<int32_t> ids;
    std::istringstream ss(tab.rows[i][0]);
    for (std::string w; ss >> w;) ids.push_back(t2.vocab().id(w));
    s.tokens = {ids};
    s.aspect = {{0}};
    s.labels = {0};
    s.hard = {0};
    StepContext ctx;
    const double p1 = torch::sigmoid(t2.net()->forward(t2.make_batch(s, {0}), ctx)).item<double>();
    const double p = p1 >= 0.5 ? p1 : 1 - p1;
    ASSERT_EQ(tab.rows[i][2], std::string(p1 > 0.5 ? "pos" : "neg"));
    ASSERT_TRUE(near(std::stod(tab.rows[i][3]), p, 1e-4));
  }
}

TEST(AnalysisMore, gateHistogramsOfHandSetGru) {
  auto path = cstest::write_text_fixture("more_gate.txt", 3000);
  CharLMTask task(char_cfg(path, {{"cell", "gru"}, {"hidden", 8}}), "");
  auto cell = std::dynamic_pointer_cast<GateCellBase>(task.net()->stack->layers[0]);
  ASSERT_TRUE(cell);
  {
    torch::NoGradGuard ng;
    for (auto* p : {&cell->w_ih, &cell->w_hh, &cell->b_ih, &cell->b_hh}) p->zero_();
  }
  // every gate is sigmoid(0) = 0.5: all mass in the bin [0.5, 0.55)
  auto h = gate_histograms(task, "the whale", 20);
  ASSERT_EQ(int(h.series.size()), 2);  // l0/gate (1 - z) and l0/reset (r)
  for (auto& s : h.series) {
    ASSERT_EQ(int(s.y.size()), 20);
    for (int b = 0; b < 20; ++b) ASSERT_TRUE(near(s.y[size_t(b)], b == 10 ? 1.0 : 0.0));
    ASSERT_TRUE(near(s.x[10], 0.525));
  }
  auto sat = gate_saturation(task, "the whale");
  for (auto& g : sat) ASSERT_TRUE(g.below == 0 && g.above == 0 && g.count == 9 * 8);
  // biases +20: z, r -> 1, so 1 - z < 0.1 everywhere and r > 0.9 everywhere
  {
    torch::NoGradGuard ng;
    cell->b_ih.fill_(20.0);
  }
  for (auto& g : gate_saturation(task, "the whale")) {
    if (g.key == "l0/gate") ASSERT_TRUE(g.below == 1.0 && g.above == 0.0);
    else if (g.key == "l0/reset") ASSERT_TRUE(g.above == 1.0 && g.below == 0.0);
    else FAIL() << "unexpected gate " + g.key;
  }
  CharLMTask rnn(char_cfg(path, {{"cell", "rnn"}, {"hidden", 8}}), "");
  ASSERT_THROW(gate_histograms(rnn, "the whale"), UserError);
}

TEST(AnalysisMore, metricVsTimeOfHandWrittenRuns) {
  const std::string base = cstest::temp_dir() + "/more_runs";
  for (int r = 0; r < 2; ++r) {
    const std::string d = base + "/run" + std::to_string(r);
    write(d + "/config.json", json{{"task", "classify"}, {"model", {{"cell", r ? "cru_shallow" : "gru"}}}}.dump());
    std::string m;
    for (int i = 1; i <= 3; ++i) {
      m += json{{"step", i * 10}, {"elapsed", i * (r + 1) * 1.5}, {"loss", 0.5}}.dump() + "\n";  // train line
      m += json{{"step", i * 10},
                {"elapsed", i * (r + 1) * 1.5},
                {"eval", true},
                {"split", "valid"},
                {"accuracy", 0.5 + 0.1 * i + 0.01 * r}}
               .dump() +
           "\n";
    }
    write(d + "/metrics.jsonl", m);
  }
  auto s = metric_vs_time({(base + "/run0"), (base + "/run1")}, "valid");
  ASSERT_EQ(int(s.series.size()), 2);
  // named as every comparison is (run_names.h): the cells differ
  ASSERT_EQ(s.series[0].name, std::string("GRU"));
  ASSERT_EQ(s.series[1].name, std::string("CRU shallow"));
  ASSERT_EQ(int(s.series[1].x.size()), 3);
  ASSERT_TRUE(near(s.series[1].x[2], 9.0));
  ASSERT_TRUE(near(s.series[1].y[2], 0.81));
  ASSERT_TRUE(near(s.series[0].x[0], 1.5));
  ASSERT_TRUE(near(s.series[0].y[0], 0.6));
  ASSERT_EQ(s.y_label, std::string("valid accuracy"));
  ASSERT_EQ(csv_lines(s.to_csv()), 7);
  // no test evaluations in these runs: a clear message naming the split
  ASSERT_THROW(metric_vs_time({(base + "/run0")}, "test"), UserError);
}

TEST(AnalysisMore, checkpointsAndHistoryOfATinyRun) {
  // a real tiny MZU run with step checkpoints, through the CLI
  auto path = cstest::write_text_fixture("more_hist.txt", 4000);
  json raw = {{"task", "char_lm"},
              {"dataset", {{"path", path}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
              {"model", {{"cell", "sat_mzu"}, {"embed", 6}, {"hidden", 8}, {"zones", 2}, {"filter", 8}, {"depth", 0}}},
              {"training",
               {{"batch", 2},
                {"bptt", 8},
                {"steps", 4},
                {"eval_every", 2},
                {"checkpoint_every", 2},
                {"keep_checkpoints", 5},
                {"log_every", 1},
                {"threads", 1}}}};
  const std::string cfgp = cstest::temp_dir() + "/more_hist.json";
  write(cfgp, raw.dump());
  const std::string run = cstest::temp_dir() + "/more_hist_run";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err), 0);
  auto cks = list_checkpoints(run);
  std::string ids;
  for (auto& c : cks) ids += (ids.empty() ? "" : ",") + c.id;
  ASSERT_EQ(ids, std::string("step_2,step_4,last,best"));
  ASSERT_EQ(cks[2].step, int64_t(4));
  ASSERT_TRUE(cks[3].step == 2 || cks[3].step == 4);
  ASSERT_TRUE(load_checkpoint_task(run, "step_2"));
  ASSERT_TRUE(load_checkpoint_task(run, "4"));
  ASSERT_THROW(load_checkpoint_task(run, "step_3"), UserError);
  ASSERT_THROW(load_checkpoint_task(run, "soon"), UserError);
  // D_zone over training: one point per step checkpoint and M-function, equal to the
  // checkpoint's own mean_dzone
  auto s = dzone_over_training(run, "the whale");
  ASSERT_EQ(int(s.series.size()), 2);
  ASSERT_TRUE(s.series[0].x == (std::vector<double>{2, 4}));
  auto t2 = load_checkpoint_task(run, "step_2");
  auto d2 = mean_dzone(*t2, "the whale");
  ASSERT_TRUE(near(s.series[0].y[0], d2[s.series[0].name]));
  for (double v : s.series[0].y) ASSERT_TRUE(v >= -1.0 - 1e-9 && v <= 1.0);
  auto g = gate_saturation_over_training(run, "the whale");
  ASSERT_EQ(int(g.series.size()), 2);  // l0/gate < 0.1 and > 0.9
  // the shared entry point: every kind is listed, unknown kinds and wrong tasks are clear errors
  AnalysisRequest rq;
  rq.kind = "relevance";
  rq.runs = {run, run};
  rq.text = "the whale and the sea";
  rq.last_k = 5;
  auto r = run_analysis(rq);
  const auto& h = std::get<HeatmapSet>(r.data);
  ASSERT_EQ(int(h.matrices.size()), 2);
  ASSERT_TRUE(h.shared_min <= h.shared_max && h.shared_min >= -1 - 1e-9 && h.shared_max <= 1 + 1e-9);
  ASSERT_TRUE(r.to_json().contains("matrices"));
  rq.kind = "prefix_table";
  rq.runs = {run};
  ASSERT_THROW(run_analysis(rq), UserError);
  rq.kind = "nope";
  ASSERT_THROW(run_analysis(rq), UserError);
  ASSERT_EQ(int(analysis_kinds().size()), 12);  // + aoa (cloze), channel_attention_decoder (seq2seq)
}

}  // namespace test_analysis_more
