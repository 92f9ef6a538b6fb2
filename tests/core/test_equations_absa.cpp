// The ABSA model of the MZU paper ("Aspect Based Sentiment Analysis": a Bi-RNN encoder,
// mean pooling over the output states, concatenation with the aspect embedding, the mean of
// the embeddings of a multi-word aspect, a softmax layer) against a hand computation:
// plain scalar loops in double precision over the parameters read from the model
// (tasks/classify.cpp SentenceModel), per sentence within its own length (padding at the
// end), both directions (the backward one starting at the sentence's last token), one and
// two encoder layers, with and without the optional fully connected layer.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cells/baseline.h"
#include "config/schema.h"
#include "tasks/classify.h"

using namespace cs;

namespace {

using Vec = std::vector<double>;

struct Flat {
  std::vector<double> v;
  std::vector<int64_t> s;
  explicit Flat(const torch::Tensor& t) {
    auto c = t.detach().to(torch::kDouble).contiguous();
    v.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    s = c.sizes().vec();
  }
  double operator()(int64_t i) const { return v[static_cast<size_t>(i)]; }
  double operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * s[1] + j)]; }
};

double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }

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

void check(int64_t layers, int64_t fc) {
  const int64_t V = 11, E = 4, H = 3, C = 4, T = 6, B = 3, A = 3;
  json raw = {{"task", {{"name", "absa"}}},
              {"dataset", {{"name", "semeval2014-restaurants"}}},
              {"model",
               {{"cell", "gru"},
                {"embed", E},
                {"hidden", H},
                {"layers", layers},
                {"fc", fc},
                {"fc_activation", "relu"},
                {"dropout", 0.0},
                {"layer_norm", false},
                {"candidate_dropout", 0.0}}}};
  json model = load_and_resolve(raw, "absa test model")["model"];
  torch::manual_seed(60 + layers + fc);
  const int64_t pad = SentenceTask::kPad;
  SentenceModel net(model, V, C, true, pad);
  net->to(torch::kDouble);
  net->eval();
  ASSERT_FALSE(net->binary);
  SentenceBatch b;
  // token ids in [2, V) (0 = <unk> is allowed too), padded at the end with the pad id
  const std::vector<int64_t> len = {6, 2, 4}, alen = {1, 3, 2};
  b.tokens = torch::full({T, B}, pad, torch::kInt64);
  b.aspect = torch::full({A, B}, pad, torch::kInt64);
  auto ids = torch::randint(2, V, {T, B}, torch::kInt64);
  auto aids = torch::randint(0, V, {A, B}, torch::kInt64);
  for (int64_t j = 0; j < B; ++j) {
    for (int64_t t = 0; t < len[j]; ++t) b.tokens[t][j] = ids[t][j];
    for (int64_t a = 0; a < alen[j]; ++a) b.aspect[a][j] = aids[a][j].item<int64_t>() == pad ? 0 : aids[a][j].item<int64_t>();
  }
  b.lengths = torch::tensor(len, torch::kInt64);
  b.aspect_len = torch::tensor(alen, torch::kInt64);
  b.labels = torch::zeros({B}, torch::kInt64);
  torch::NoGradGuard ng;
  StepContext ctx;
  auto logits = net->forward(b, ctx);
  ASSERT_EQ(logits.size(0), B);
  ASSERT_EQ(logits.size(1), C);
  ASSERT_EQ(net->fc.is_empty(), fc == 0);
  Flat emb(net->embed->weight);
  for (int64_t j = 0; j < B; ++j) {
    const int64_t n = len[j];
    // layer input: the embeddings of the sentence's n tokens
    std::vector<Vec> in(n);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t id = b.tokens[t][j].item<int64_t>();
      for (int64_t e = 0; e < E; ++e) in[t].push_back(emb(id, e));
    }
    for (int64_t l = 0; l < layers; ++l) {
      auto f = std::dynamic_pointer_cast<GRUCellImpl>(net->encoder->fwd[static_cast<size_t>(l)]);
      auto bw = std::dynamic_pointer_cast<GRUCellImpl>(net->encoder->bwd[static_cast<size_t>(l)]);
      ASSERT_TRUE(f && bw);
      std::vector<Vec> of(n), ob(n);
      Vec h(H, 0.0);
      for (int64_t t = 0; t < n; ++t) of[t] = h = gru_ref(*f, in[t], h);
      h.assign(H, 0.0);
      for (int64_t t = n - 1; t >= 0; --t) ob[t] = h = gru_ref(*bw, in[t], h);  // from the last token
      for (int64_t t = 0; t < n; ++t) {
        in[t] = of[t];
        in[t].insert(in[t].end(), ob[t].begin(), ob[t].end());  // [forward, backward]
      }
    }
    // mean pooling over the sentence's n output states
    Vec feat(2 * H, 0.0);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t e = 0; e < 2 * H; ++e) feat[e] += in[t][e] / double(n);
    // concatenated with the mean embedding of the aspect's words
    for (int64_t e = 0; e < E; ++e) {
      double s = 0;
      for (int64_t a = 0; a < alen[j]; ++a) s += emb(b.aspect[a][j].item<int64_t>(), e);
      feat.push_back(s / double(alen[j]));
    }
    if (fc > 0) {
      Flat w(net->fc->weight), bb(net->fc->bias);
      Vec g(fc);
      for (int64_t r = 0; r < fc; ++r) {
        double s = bb(r);
        for (size_t e = 0; e < feat.size(); ++e) s += w(r, static_cast<int64_t>(e)) * feat[e];
        g[r] = std::max(s, 0.0);
      }
      feat = g;
    }
    Flat w(net->out->weight), bb(net->out->bias);
    ASSERT_EQ(static_cast<size_t>(w.s[1]), feat.size());
    for (int64_t c = 0; c < C; ++c) {
      double s = bb(c);
      for (size_t e = 0; e < feat.size(); ++e) s += w(c, static_cast<int64_t>(e)) * feat[e];
      ASSERT_NEAR(logits[j][c].item<double>(), s, 1e-10)
          << "layers=" << layers << " fc=" << fc << " sentence " << j << " class " << c;
    }
  }
}

}  // namespace

TEST(EquationsAbsa, meanPoolingAspectLogits) {
  check(1, 0);  // the MZU paper's setup: pooled sentence + aspect -> softmax layer
  check(2, 0);
  check(1, 5);
}
