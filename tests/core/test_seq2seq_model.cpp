// The encoder-decoder of the seq2seq task (tasks/seq2seq_model.h): the attention layer against
// a plain loop of its equations, and the decoder stepped token by token (generation) against
// the whole target at once (teacher forcing), for an LSTM and an MC-RNN.

#include <gtest/gtest.h>

#include <cmath>

#include "config/schema.h"
#include "tasks/seq2seq_model.h"

using namespace cs;

namespace {
json model_section(const json& m) { return resolve_config(json{{"task", "seq2seq"}, {"model", m}})["model"]; }
}  // namespace

TEST(Seq2seqModel, attention_matches_a_plain_loop) {
  torch::manual_seed(3);
  Seq2SeqModel net(model_section({{"cell", "gru"}, {"embed", 6}, {"hidden", 5}, {"layers", 1}}), 11, 13, 0);
  const int64_t B = 3, S = 4, T = 2, H = 5;
  Seq2SeqEncoded enc;
  enc.memory = torch::randn({B, S, H});
  auto len = torch::tensor({4, 2, 1}, torch::kInt64);
  enc.mask = torch::arange(S).unsqueeze(0) < len.unsqueeze(1);
  auto h = torch::randn({T, B, H});
  torch::Tensor a;
  auto got = net->attend(h, enc, &a);
  auto Wa = net->attn_w->weight;   // [He, Hd]
  auto Wc = net->combine->weight;  // [Hd, He + Hd]
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = len[b].item<int64_t>();
      std::vector<double> score(static_cast<size_t>(n));
      double mx = -1e300;
      for (int64_t s = 0; s < n; ++s) {  // score = h_t^T W_a hbar_s
        double v = 0;
        for (int64_t i = 0; i < H; ++i)
          for (int64_t j = 0; j < H; ++j)
            v += h[t][b][j].item<double>() * Wa[i][j].item<double>() * enc.memory[b][s][i].item<double>();
        score[static_cast<size_t>(s)] = v;
        mx = std::max(mx, v);
      }
      double z = 0;
      for (auto v : score) z += std::exp(v - mx);
      std::vector<double> ctx(static_cast<size_t>(H), 0.0);
      for (int64_t s = 0; s < S; ++s) {
        const double w = s < n ? std::exp(score[static_cast<size_t>(s)] - mx) / z : 0.0;
        EXPECT_NEAR(a[t][b][s].item<double>(), w, 1e-5);
        for (int64_t i = 0; i < H; ++i) ctx[static_cast<size_t>(i)] += w * enc.memory[b][s][i].item<double>();
      }
      for (int64_t o = 0; o < H; ++o) {  // htilde = tanh(W_c [c; h])
        double v = 0;
        for (int64_t i = 0; i < H; ++i) v += Wc[o][i].item<double>() * ctx[static_cast<size_t>(i)];
        for (int64_t i = 0; i < H; ++i) v += Wc[o][H + i].item<double>() * h[t][b][i].item<double>();
        EXPECT_NEAR(got[t][b][o].item<double>(), std::tanh(v), 1e-5);
      }
    }
}

TEST(Seq2seqModel, decoder_steps_equal_teacher_forcing) {
  for (json m : {json{{"cell", "lstm"}, {"layers", 2}}, json{{"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}, {"layers", 2}}}) {
    torch::manual_seed(5);
    m["embed"] = 8;
    m["hidden"] = 7;
    Seq2SeqModel net(model_section(m), 10, 12, 0);
    net->eval();
    torch::NoGradGuard ng;
    const int64_t B = 2, S = 5, T = 6;
    auto src = torch::randint(4, 10, {S, B}, torch::kInt64);
    auto len = torch::tensor({5, 3}, torch::kInt64);
    StepContext c0;
    auto enc = net->encode(src, len, c0);
    auto y = torch::randint(4, 12, {T, B}, torch::kInt64);
    auto st = net->decoder_initial_state(B, enc.memory.options());
    StepContext c1;
    auto full = net->decode(y, enc, st, c1);
    auto st2 = net->decoder_initial_state(B, enc.memory.options());
    std::vector<torch::Tensor> steps;
    for (auto& yt : y.unbind(0)) {
      StepContext c;
      steps.push_back(net->decode(yt.unsqueeze(0), enc, st2, c));
    }
    auto stepped = torch::cat(steps, 0);
    EXPECT_TRUE(torch::allclose(full, stepped, 1e-5, 1e-5)) << m.dump() << " max diff " << (full - stepped).abs().max().item<double>();
  }
}

TEST(Seq2seqModel, encoder_outputs_ignore_padding) {
  torch::manual_seed(9);
  Seq2SeqModel net(model_section({{"cell", "mcrnn"}, {"block", 4}, {"base", "gru"}, {"embed", 6}, {"hidden", 5}}), 10, 10, 0);
  net->eval();
  torch::NoGradGuard ng;
  auto a = torch::tensor({5, 6, 7}, torch::kInt64).unsqueeze(1);                   // [3, 1]
  auto padded = torch::tensor({5, 6, 7, 0, 0}, torch::kInt64).unsqueeze(1);        // [5, 1]
  StepContext c0, c1;
  auto e0 = net->encode(a, torch::tensor({3}, torch::kInt64), c0);
  auto e1 = net->encode(padded, torch::tensor({3}, torch::kInt64), c1);
  EXPECT_TRUE(torch::allclose(e0.memory, e1.memory.narrow(1, 0, 3), 1e-6, 1e-6));
  auto h = torch::randn({2, 1, 5});
  EXPECT_TRUE(torch::allclose(net->attend(h, e0), net->attend(h, e1), 1e-6, 1e-6));
}
