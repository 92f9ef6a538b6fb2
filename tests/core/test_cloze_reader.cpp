// The AoA Reader's computation (tasks/cloze.h) against plain loops, the M-AoA features by
// hand, and masking: padding in a batch does not change a question's probabilities; the
// orthogonal initialisation of the recurrent matrices (Cui et al. 2017, section 4.2).
#include <gtest/gtest.h>

#include <cmath>

#include "config/schema.h"
#include "tasks/cloze.h"
#include "util/error.h"

namespace test_cloze_reader {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

TEST(ClozeReader, attentionOverAttentionMatchesPlainLoops) {
  torch::manual_seed(3);
  const int64_t B = 2, Td = 6, Tq = 4, H = 3;
  auto hd = torch::randn({B, Td, H}, torch::kFloat64), hq = torch::randn({B, Tq, H}, torch::kFloat64);
  auto dl = torch::tensor({6, 4}, torch::kInt64), ql = torch::tensor({4, 2}, torch::kInt64);
  const AoAOutput o = attention_over_attention(hd, hq, dl, ql);
  // candidate 0 occurs twice in document 1 (positions 0 and 2): sum attention adds both
  auto cm = torch::zeros({B, 2, Td}, torch::kFloat64);
  cm[0][0][1] = 1;
  cm[0][1][5] = 1;
  cm[1][0][0] = 1;
  cm[1][0][2] = 1;
  cm[1][1][3] = 1;
  const auto P = sum_attention(o.s, cm);
  auto h = [&](const torch::Tensor& t, int64_t b, int64_t i, int64_t k) { return t[b][i][k].item<double>(); };
  for (int64_t b = 0; b < B; ++b) {
    const int64_t nd = dl[b].item<int64_t>(), nq = ql[b].item<int64_t>();
    std::vector<std::vector<double>> M(nd, std::vector<double>(nq)), alpha = M, beta_t = M;
    for (int64_t i = 0; i < nd; ++i)
      for (int64_t j = 0; j < nq; ++j) {
        double m = 0;
        for (int64_t k = 0; k < H; ++k) m += h(hd, b, i, k) * h(hq, b, j, k);
        M[i][j] = m;
      }
    for (int64_t j = 0; j < nq; ++j) {  // column-wise softmax over the document
      double z = 0;
      for (int64_t i = 0; i < nd; ++i) z += std::exp(M[i][j]);
      for (int64_t i = 0; i < nd; ++i) alpha[i][j] = std::exp(M[i][j]) / z;
    }
    for (int64_t i = 0; i < nd; ++i) {  // row-wise softmax over the query
      double z = 0;
      for (int64_t j = 0; j < nq; ++j) z += std::exp(M[i][j]);
      for (int64_t j = 0; j < nq; ++j) beta_t[i][j] = std::exp(M[i][j]) / z;
    }
    std::vector<double> beta(nq, 0.0), s(nd, 0.0);
    for (int64_t j = 0; j < nq; ++j) {
      for (int64_t i = 0; i < nd; ++i) beta[j] += beta_t[i][j];
      beta[j] /= static_cast<double>(nd);
    }
    for (int64_t i = 0; i < nd; ++i)
      for (int64_t j = 0; j < nq; ++j) s[i] += alpha[i][j] * beta[j];
    for (int64_t i = 0; i < Td; ++i) {
      for (int64_t j = 0; j < Tq; ++j) {
        const bool real = i < nd && j < nq;
        if (real) {
          EXPECT_NEAR(o.M[b][i][j].item<double>(), M[i][j], 1e-12);
          EXPECT_NEAR(o.alpha[b][i][j].item<double>(), alpha[i][j], 1e-12);
          EXPECT_NEAR(o.beta_t[b][i][j].item<double>(), beta_t[i][j], 1e-12);
        }
        if (i >= nd) {
          EXPECT_EQ(o.alpha[b][i][j].item<double>(), 0.0);
        }  // padded document position
        if (j >= nq && i < nd) {
          EXPECT_EQ(o.beta_t[b][i][j].item<double>(), 0.0);
        }  // padded query position
      }
      EXPECT_NEAR(o.s[b][i].item<double>(), i < nd ? s[i] : 0.0, 1e-12);
    }
    for (int64_t j = 0; j < Tq; ++j) EXPECT_NEAR(o.beta[b][j].item<double>(), j < nq ? beta[j] : 0.0, 1e-12);
    double total = 0;
    for (double v : s) total += v;
    EXPECT_NEAR(total, 1.0, 1e-12);  // s is a distribution over the document
  }
  EXPECT_NEAR(P[0][0].item<double>(), o.s[0][1].item<double>(), 1e-15);
  EXPECT_NEAR(P[1][0].item<double>(), o.s[1][0].item<double>() + o.s[1][2].item<double>(), 1e-15);
  EXPECT_NEAR(P[1][1].item<double>(), o.s[1][3].item<double>(), 1e-15);
}

TEST(ClozeReader, modifiedAoAFeaturesByHand) {
  // D = "a b a c a", Q = "a XXXXX a b": freq(a) = 3/5, freq(b) = freq(c) = 1/5; CoQ(a) = 2, CoQ(b) = 1, CoQ(c) = 0
  std::vector<float> f, q;
  cloze_document_features({"a", "b", "a", "c", "a"}, {"a", "XXXXX", "a", "b"}, f, q);
  const std::vector<float> ef = {0.6f, 0.2f, 0.6f, 0.2f, 0.6f}, eq = {2, 1, 2, 0, 2};
  ASSERT_EQ(f.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_FLOAT_EQ(f[i], ef[i]);
    EXPECT_FLOAT_EQ(q[i], eq[i]);
  }
  EXPECT_EQ(cloze_frequency_baseline({"a", "b", "a", "c", "a"}, {"c", "b", "a"}), 2);
  EXPECT_EQ(cloze_frequency_baseline({"a", "b", "c"}, {"z", "c", "b"}), 1);  // ties: the first in candidate order
  // encoding: words compared as strings (two unknown words are told apart), lower-cased
  ClozeExample e;
  e.document = {"The", "Zork", "met", "Blip", "and", "the", "zork"};
  e.query = {"XXXXX", "met", "Blip"};
  e.answer = "Zork";
  e.candidates = {"Blip", "Zork"};
  Vocab v;
  v.add("<pad>");
  v.add("the");
  const ClozeItem it = encode_cloze(e, v, true);
  EXPECT_EQ(it.doc[1], 0);  // <unk>
  EXPECT_EQ(it.doc[3], 0);
  EXPECT_EQ(it.cand_pos[0], (std::vector<int64_t>{3}));
  EXPECT_EQ(it.cand_pos[1], (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(it.answer, 1);
  EXPECT_FLOAT_EQ(it.freq[0], 2.0f / 7);  // "the" twice after lower-casing
  EXPECT_FLOAT_EQ(it.coq[2], 1.0f);       // "met"
  EXPECT_FLOAT_EQ(it.coq[3], 1.0f);       // "blip"
  EXPECT_FLOAT_EQ(it.coq[1], 0.0f);
}

TEST(ClozeReader, paddingDoesNotChangeProbabilities) {
  // A short question alone and in a batch with a longer one: the same probabilities, for
  // both readers and cells whose neighbours matter (CRU's convolution) or not (GRU).
  ClozeItem a, b;
  a.doc = {2, 3, 4, 3, 5};
  a.query = {4, 6};
  cloze_document_features({"b", "c", "d", "c", "e"}, {"d", "f"}, a.freq, a.coq);
  a.cand_pos = {{1, 3}, {4}, {0}};
  a.answer = 0;
  b.doc = {5, 6, 7, 2, 3, 4, 8, 9, 2};
  b.query = {3, 2, 6, 7};
  b.freq.assign(9, 0.25f);
  b.coq.assign(9, 1.0f);
  b.cand_pos = {{0}, {3, 8}, {5}, {6}};
  b.answer = 1;
  for (std::string cell : {"gru", "cru_deep_enhanced", "lstm"})
    for (std::string reader : {"aoa", "m_aoa"}) {
      json m = resolve_config(json{{"task", {{"name", "cloze"}}},
                                   {"dataset", {{"path", "/nonexistent"}}},
                                   {"model", {{"cell", cell}, {"embed", 8}, {"hidden", 6}, {"reader", reader}}},
                                   {"training", json::object()}})["model"];
      torch::manual_seed(1);
      ClozeReader r(m, 10, 1, reader == "m_aoa");
      r->eval();
      torch::NoGradGuard ng;
      StepContext c1, c2;
      auto alone = r->forward(make_cloze_batch({&a}, 1, torch::kCPU), c1).prob;
      auto both = r->forward(make_cloze_batch({&b, &a}, 1, torch::kCPU), c2).prob;
      ASSERT_EQ(alone.size(1), 3);
      ASSERT_EQ(both.size(1), 4);
      EXPECT_TRUE(torch::allclose(both[1].slice(0, 0, 3), alone[0], 1e-5, 1e-6)) << cell << " " << reader << "\n"
                                                                                 << both << alone;
      EXPECT_EQ(both[1][3].item<float>(), 0.0f);   // the padded candidate
      EXPECT_LT(alone.sum().item<double>(), 1.0);  // "d" (position 2) is no candidate
      // the M-AoA Reader's document encoder reads the two features (E + 2 inputs)
      auto count = [](torch::nn::Module& mod) {
        int64_t n = 0;
        for (auto& p : mod.parameters()) n += p.numel();
        return n;
      };
      EXPECT_EQ(count(*r->doc_encoder) != count(*r->query_encoder), reader == "m_aoa") << cell;
    }
}

TEST(ClozeReader, orthogonalInitOfTheRecurrentMatrices) {
  // model.recurrent_init = orthogonal: every gate block W of every encoder's w_hh (both
  // directions, both layers) has W^T W = I; the cell's own uniform initialisation does not.
  auto reader = [](const std::string& cell, const std::string& init) {
    json m = resolve_config(
        json{{"task", {{"name", "cloze"}}},
             {"dataset", {{"path", "/nonexistent"}}},
             {"model", {{"cell", cell}, {"embed", 8}, {"hidden", 8}, {"layers", 2}, {"recurrent_init", init}}},
             {"training", json::object()}})["model"];
    torch::manual_seed(3);
    return ClozeReader(m, 10, 1, true);
  };
  // the largest |W^T W - I| over the H x H gate blocks of every w_hh, and how many blocks
  auto deviation = [](ClozeReader& r, int64_t* blocks) {
    double worst = 0;
    *blocks = 0;
    for (auto& p : r->named_parameters()) {
      const std::string& n = p.key();
      if (n.size() < 4 || n.compare(n.size() - 4, 4, "w_hh") != 0) continue;
      const torch::Tensor w = p.value().detach().to(torch::kFloat64);
      const int64_t H = w.size(1);
      for (int64_t g = 0; g < w.size(0) / H; ++g) {
        const torch::Tensor b = w.narrow(0, g * H, H);
        worst = std::max(worst, (b.t().mm(b) - torch::eye(H, torch::kFloat64)).abs().max().item<double>());
        ++*blocks;
      }
    }
    return worst;
  };
  for (std::string cell : {"gru", "cru_deep_enhanced", "lstm"}) {
    int64_t blocks = 0;
    auto r = reader(cell, "orthogonal");
    EXPECT_LT(deviation(r, &blocks), 1e-5) << cell;
    // 2 encoders x 2 directions x 2 layers, 3 gate blocks (LSTM 4)
    EXPECT_EQ(blocks, 8 * (cell == "lstm" ? 4 : 3)) << cell;
    auto u = reader(cell, "cell");
    EXPECT_GT(deviation(u, &blocks), 0.1) << cell << ": the uniform initialisation is no orthogonal matrix";
  }
  // a cell without a w_hh matrix: one clear message naming the cell and the way out
  try {
    reader("sat_mzu", "orthogonal");
    FAIL() << "sat_mzu has no w_hh";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cell 'sat_mzu' has no recurrent matrix w_hh"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("model.recurrent_init to \"cell\""), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(reader("sat_mzu", "cell"));
}

}  // namespace test_cloze_reader
