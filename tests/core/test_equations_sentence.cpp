// The sentence models against a hand computation (tasks/classify.cpp SentenceModel): plain
// scalar loops in double precision over the parameters read from the model, per sentence
// within its own length (padding at the end), both directions (the backward one starting at
// the sentence's last token), one and two encoder layers, with and without the fully
// connected layer:
//  * ABSA (MZU paper, "Aspect Based Sentiment Analysis"): Bi-RNN encoder, mean pooling over
//    the output states, concatenated with the aspect embedding (the mean of the embeddings of
//    a multi-word aspect), a softmax layer; with a GRU and with the paper's capMZU+DT;
//  * classify (CRU paper Fig. 2): the two directions' final states concatenated, the fully
//    connected layer, one sigmoid unit for two classes or a softmax layer; with a GRU and bi-CRUs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cells/baseline.h"
#include "config/schema.h"
#include "tasks/classify.h"
#include "equations_flat.h"

namespace test_equations_sentence {  // this file's own names in a unity build (tests/README.md)

using namespace cs;
using cstest::Flat;
using cstest::max_diff;
using cstest::sigm;
using cstest::Vec;

namespace {

// One GRU step (torch's formulation: gates r, z, n; reset applied after U) for one row.
Vec gru_ref(const GRUCellImpl& g, const Vec& x, const Vec& h) {
  const int64_t H = static_cast<int64_t>(h.size()), I = static_cast<int64_t>(x.size());
  Flat wih(g.w_ih), bih(g.b_ih), whh(g.w_hh), bhh(g.b_hh);
  Vec xp(3 * H), hp(3 * H), out(H);
  for (int64_t r = 0; r < 3 * H; ++r) {
    double a = bih(r), c = bhh(r);
    for (int64_t i = 0; i < I; ++i) a += wih(r, i) * x[i];
    for (int64_t j = 0; j < H; ++j) c += whh(r, j) * h[j];
    xp[r] = a, hp[r] = c;
  }
  for (int64_t n = 0; n < H; ++n) {
    const double r = sigm(xp[n] + hp[n]), z = sigm(xp[H + n] + hp[H + n]);
    const double c = std::tanh(xp[2 * H + n] + r * hp[2 * H + n]);
    out[n] = (1 - z) * c + z * h[n];
  }
  return out;
}

struct Setup {
  bool absa = true;
  std::string cell = "gru";
  int64_t layers = 1, fc = 0, classes = 4;
  std::string fc_activation = "relu";
};

std::string describe(const Setup& u) {
  return std::string(u.absa ? "absa" : "classify") + " cell=" + u.cell + " layers=" + std::to_string(u.layers) +
         " fc=" + std::to_string(u.fc) + "/" + u.fc_activation + " classes=" + std::to_string(u.classes);
}

// The model section of setup u with embedding E and hidden H, every option the cells read set explicitly.
json model_section(const Setup& u, int64_t E, int64_t H) {
  json m = {{"cell", u.cell}, {"embed", E},
            {"hidden", H},    {"layers", u.layers},
            {"fc", u.fc},     {"fc_activation", u.fc_activation},
            {"dropout", 0.0}, {"candidate_dropout", 0.0}};
  if (u.cell.rfind("cru_", 0) != 0) m["layer_norm"] = false;  // the CRU cells have no layer_norm option
  if (u.cell.rfind("cru_", 0) == 0) {
    // CRU (every option explicit): the convolution must see zeros past a padded sentence's end
    m.update(json{{"filter_length", 3}, {"conv_activation", "relu"}, {"reset_after", true}});
    if (u.cell == "cru_shallow") m["conv_channels"] = 0;
  } else if (u.cell != "gru") {
    // capMZU+DT, the paper's ABSA cell, every option explicit
    m.update(json{{"zones", 2},
                  {"filter", 5},
                  {"depth", 1},
                  {"share_transition", true},
                  {"capsules", 2},
                  {"routing_iters", 3},
                  {"zone_disagreement", 1.0},
                  {"regular_gate", false},
                  {"regular_trans", false},
                  {"ffn_residual", false}});
  }
  return m;
}

// A batch of sentences of lengths `len` (T positions, token ids in [2, V), padded at the end with the pad id)
// and, for ABSA, aspects of lengths `alen` (A positions; they may contain <unk> (0)).
SentenceBatch padded_batch(bool absa, int64_t V, int64_t T, int64_t A, int64_t pad, const std::vector<int64_t>& len,
                           const std::vector<int64_t>& alen) {
  const int64_t B = static_cast<int64_t>(len.size());
  SentenceBatch b;
  b.tokens = torch::full({T, B}, pad, torch::kInt64);
  auto ids = torch::randint(2, V, {T, B}, torch::kInt64);
  for (int64_t j = 0; j < B; ++j)
    for (int64_t t = 0; t < len[j]; ++t) b.tokens[t][j] = ids[t][j];
  b.lengths = torch::tensor(len, torch::kInt64);
  if (absa) {
    b.aspect = torch::full({A, B}, pad, torch::kInt64);
    auto aids = torch::randint(0, V, {A, B}, torch::kInt64);
    for (int64_t j = 0; j < B; ++j)
      for (int64_t a = 0; a < alen[j]; ++a)
        b.aspect[a][j] = aids[a][j].item<int64_t>() == pad ? 0 : aids[a][j].item<int64_t>();
    b.aspect_len = torch::tensor(alen, torch::kInt64);
  }
  b.labels = torch::zeros({B}, torch::kInt64);
  return b;
}

// The encoder on one sentence: `in` (the embeddings of its tokens) becomes the last layer's output states, each
// [forward, backward]. For the GRU the encoder is written out (gru_ref); for other cells each direction is the
// cell's own forward_sequence over the one unpadded sentence (reversed for the backward one).
void encode_sentence(SentenceModel& net, const Setup& u, int64_t H, std::vector<Vec>& in) {
  const int64_t n = static_cast<int64_t>(in.size());
  for (int64_t l = 0; l < u.layers; ++l) {
    const auto& fc_ = net->encoder->fwd[static_cast<size_t>(l)];
    const auto& bc_ = net->encoder->bwd[static_cast<size_t>(l)];
    std::vector<Vec> of(n), ob(n);
    if (u.cell == "gru") {
      auto f = std::dynamic_pointer_cast<GRUCellImpl>(fc_);
      auto bw = std::dynamic_pointer_cast<GRUCellImpl>(bc_);
      ASSERT_TRUE(f && bw);
      Vec h(H, 0.0);
      for (int64_t t = 0; t < n; ++t) of[t] = h = gru_ref(*f, in[t], h);
      h.assign(H, 0.0);
      for (int64_t t = n - 1; t >= 0; --t) ob[t] = h = gru_ref(*bw, in[t], h);  // from the last token
    } else {
      std::vector<torch::Tensor> rows, rev;
      for (int64_t t = 0; t < n; ++t) rows.push_back(torch::tensor(in[t], torch::kDouble));
      for (int64_t t = n - 1; t >= 0; --t) rev.push_back(torch::tensor(in[t], torch::kDouble));
      StepContext c1, c2;
      auto yf =
          fc_->forward_sequence(torch::stack(rows).unsqueeze(1), fc_->initial_state(1, torch::kDouble), c1).output;
      auto yb = bc_->forward_sequence(torch::stack(rev).unsqueeze(1), bc_->initial_state(1, torch::kDouble), c2).output;
      for (int64_t t = 0; t < n; ++t) {
        of[t] = Flat(yf[t][0]).v;
        ob[t] = Flat(yb[n - 1 - t][0]).v;
      }
    }
    for (int64_t t = 0; t < n; ++t) {
      in[t] = of[t];
      in[t].insert(in[t].end(), ob[t].begin(), ob[t].end());  // [forward, backward]
    }
  }
}

// What the output layer reads for sentence j of batch b, from its encoder states `out` (one per token): ABSA's
// pooled states and aspect, or classify's final states, then the fully connected layer when there is one.
Vec output_features(SentenceModel& net, const Setup& u, const SentenceBatch& b, const Flat& emb,
                    const std::vector<Vec>& out, int64_t j, int64_t alen, int64_t H, int64_t E) {
  const int64_t n = static_cast<int64_t>(out.size());
  Vec feat;
  if (u.absa) {
    // MZU paper: mean pooling over the sentence's n output states ...
    feat.assign(static_cast<size_t>(2 * H), 0.0);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t e = 0; e < 2 * H; ++e) feat[e] += out[t][e] / double(n);
    // ... concatenated with the mean embedding of the aspect's words
    for (int64_t e = 0; e < E; ++e) {
      double s = 0;
      for (int64_t a = 0; a < alen; ++a) s += emb(b.aspect[a][j].item<int64_t>(), e);
      feat.push_back(s / double(alen));
    }
  } else {
    // CRU paper Fig. 2: the forward state at the last token and the backward state at the first
    feat.assign(out[n - 1].begin(), out[n - 1].begin() + H);
    feat.insert(feat.end(), out[0].begin() + H, out[0].end());
  }
  if (u.fc > 0) {
    Flat w(net->fc->weight), bb(net->fc->bias);
    Vec g(u.fc);
    for (int64_t r = 0; r < u.fc; ++r) {
      double s = bb(r);
      for (size_t e = 0; e < feat.size(); ++e) s += w(r, static_cast<int64_t>(e)) * feat[e];
      g[r] = u.fc_activation == "relu" ? std::max(s, 0.0) : u.fc_activation == "tanh" ? std::tanh(s) : s;
    }
    feat = g;
  }
  return feat;
}

// The model's logits for a padded batch of three sentences against the reference, sentence by
// sentence within its own length. For the GRU the encoder is written out (gru_ref); for other
// cells (MZU, CRU: their equations are checked in test_equations_{mzu,cru}.cpp) each direction
// is the cell's own forward_sequence over the one unpadded sentence (reversed for the backward
// one), so what is checked is the batching, padding, reversal and pooling around it.
void check(const Setup& u) {
  const int64_t V = 11, E = 4, H = u.cell == "gru" ? 3 : 4, C = u.classes, T = 6, B = 3, A = 3;
  json raw = {{"task", {{"name", u.absa ? "absa" : "classify"}}},
              {"dataset", {{"name", u.absa ? "semeval2014-restaurants" : "spam-assassin"}}},
              {"model", model_section(u, E, H)}};
  json model = load_and_resolve(raw, "sentence test model")["model"];
  torch::manual_seed(60 + u.layers + u.fc);
  const int64_t pad = SentenceTask::kPad;
  SentenceModel net(model, V, C, u.absa, pad);
  net->to(torch::kDouble);
  net->eval();
  const std::string what = describe(u);
  ASSERT_EQ(net->binary, !u.absa && C == 2) << what;
  const std::vector<int64_t> len = {6, 2, 4}, alen = {1, 3, 2};
  SentenceBatch b = padded_batch(u.absa, V, T, A, pad, len, alen);
  torch::NoGradGuard ng;
  StepContext ctx;
  auto logits = net->forward(b, ctx);
  const int64_t outs = net->binary ? 1 : C;
  ASSERT_EQ(logits.size(0), B) << what;
  ASSERT_EQ(logits.size(1), outs) << what;
  ASSERT_EQ(net->fc.is_empty(), u.fc == 0) << what;
  Flat emb(net->embed->weight);
  for (int64_t j = 0; j < B; ++j) {
    const int64_t n = len[j];
    // layer input: the embeddings of the sentence's n tokens
    std::vector<Vec> in(n);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t id = b.tokens[t][j].item<int64_t>();
      for (int64_t e = 0; e < E; ++e) in[t].push_back(emb(id, e));
    }
    ASSERT_NO_FATAL_FAILURE(encode_sentence(net, u, H, in));
    const Vec feat = output_features(net, u, b, emb, in, j, alen[j], H, E);
    Flat w(net->out->weight), bb(net->out->bias);
    ASSERT_EQ(static_cast<size_t>(w.s[1]), feat.size()) << what;
    for (int64_t c = 0; c < outs; ++c) {
      double s = bb(c);
      for (size_t e = 0; e < feat.size(); ++e) s += w(c, static_cast<int64_t>(e)) * feat[e];
      ASSERT_NEAR(logits[j][c].item<double>(), s, 1e-10) << what << " sentence " << j << " class " << c;
    }
  }
}

}  // namespace

TEST(EquationsSentence, absaMeanPoolingAspectLogits) {
  check({true, "gru", 1, 0, 4, "relu"});  // the MZU paper's setup: pooled sentence + aspect -> softmax layer
  check({true, "gru", 2, 0, 4, "relu"});
  check({true, "gru", 1, 5, 3, "tanh"});
}

TEST(EquationsSentence, absaWithCapMzuDtEncoder) {
  check({true, "cap_mzu", 1, 0, 4, "relu"});  // the paper's ABSA cell: capMZU+DT
  check({true, "cap_mzu", 2, 0, 4, "relu"});
}

TEST(EquationsSentence, classifyFinalStates) {
  check({false, "gru", 1, 5, 2, "relu"});  // CRU paper Fig. 2: one sigmoid unit for two classes
  check({false, "gru", 2, 5, 5, "tanh"});
  check({false, "gru", 1, 0, 3, "relu"});
}

TEST(EquationsSentence, classifyWithBiCru) {
  // the CRU paper's bi-CRU: a padded batch equals each sentence run alone (both directions,
  // the convolution window at the sentence's own ends), two layers reading both directions
  check({false, "cru_shallow", 1, 5, 2, "relu"});
  check({false, "cru_deep_enhanced", 2, 5, 5, "relu"});
  check({true, "cru_deep", 1, 0, 4, "relu"});
}

}  // namespace test_equations_sentence
