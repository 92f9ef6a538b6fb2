// The encoder-decoder of the seq2seq task (tasks/seq2seq_model.h): the attention layer against
// a plain loop of its equations, and the decoder stepped token by token (generation) against
// the whole target at once (teacher forcing), for an LSTM and an MC-RNN.

#include <gtest/gtest.h>

#include <cmath>

#include "config/schema.h"
#include "harness.h"
#include "sweep/sweep.h"
#include "util/error.h"
#include "tasks/seq2seq_model.h"

namespace test_seq2seq_model {  // this file's own names in a unity build (tests/README.md)

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
  for (json m : {json{{"cell", "lstm"}, {"layers", 2}},
                 json{{"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}, {"layers", 2}}}) {
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
    auto st = net->decoder_initial_state(enc);
    StepContext c1;
    auto full = net->decode(y, enc, st, c1);
    auto st2 = net->decoder_initial_state(enc);
    std::vector<torch::Tensor> steps;
    for (auto& yt : y.unbind(0)) {
      StepContext c;
      steps.push_back(net->decode(yt.unsqueeze(0), enc, st2, c));
    }
    auto stepped = torch::cat(steps, 0);
    EXPECT_TRUE(torch::allclose(full, stepped, 1e-5, 1e-5))
        << m.dump() << " max diff " << (full - stepped).abs().max().item<double>();
  }
}

TEST(Seq2seqModel, encoder_outputs_ignore_padding) {
  torch::manual_seed(9);
  Seq2SeqModel net(model_section({{"cell", "mcrnn"}, {"block", 4}, {"base", "gru"}, {"embed", 6}, {"hidden", 5}}), 10,
                   10, 0);
  net->eval();
  torch::NoGradGuard ng;
  auto a = torch::tensor({5, 6, 7}, torch::kInt64).unsqueeze(1);             // [3, 1]
  auto padded = torch::tensor({5, 6, 7, 0, 0}, torch::kInt64).unsqueeze(1);  // [5, 1]
  StepContext c0, c1;
  auto e0 = net->encode(a, torch::tensor({3}, torch::kInt64), c0);
  auto e1 = net->encode(padded, torch::tensor({3}, torch::kInt64), c1);
  EXPECT_TRUE(torch::allclose(e0.memory, e1.memory.narrow(1, 0, 3), 1e-6, 1e-6));
  auto h = torch::randn({2, 1, 5});
  EXPECT_TRUE(torch::allclose(net->attend(h, e0), net->attend(h, e1), 1e-6, 1e-6));
}

TEST(Seq2seqModel, copy_mixes_the_vocabulary_and_the_attention_over_source_ids) {
  // model.copy (See et al. 2017, eqs. 8-9) against a plain loop: P(w) = p_gen softmax(logits)_w +
  // (1 - p_gen) sum of a_ts over the source positions s holding w; padded positions add nothing.
  torch::manual_seed(9);
  const int64_t V = 12, B = 2, T = 3;
  Seq2SeqModel plain(model_section({{"cell", "gru"}, {"embed", 6}, {"hidden", 5}, {"layers", 1}}), V, V, 0);
  Seq2SeqModel net(model_section({{"cell", "gru"}, {"embed", 6}, {"hidden", 5}, {"layers", 1}, {"copy", true}}), V, V,
                   0);
  {  // the same weights except the gate, so the vocabulary part is `plain`'s output
    torch::NoGradGuard ng;
    auto pp = plain->named_parameters();
    for (auto& kv : net->named_parameters())
      if (kv.key().rfind("copy_gate", 0) != 0) kv.value().copy_(pp[kv.key()]);
  }
  net->eval();
  plain->eval();
  torch::NoGradGuard ng;
  // source 0: ids with a repeat (7 twice); source 1: length 3, padded with id 0
  auto src = torch::tensor({{7, 4}, {3, 9}, {7, 4}, {5, 0}, {2, 0}}, torch::kInt64);  // [S, B]
  auto len = torch::tensor({5, 3}, torch::kInt64);
  auto y = torch::tensor({{1, 1}, {6, 8}, {7, 4}}, torch::kInt64);  // [T, B]
  StepContext c0, c1, c2, c3;
  auto enc = net->encode(src, len, c0);
  auto st = net->decoder_initial_state(enc);
  torch::Tensor a;
  auto logp = net->decode(y, enc, st, c1, &a);  // [T, B, V], log P
  auto encp = plain->encode(src, len, c2);
  auto stp = plain->decoder_initial_state(encp);
  auto pv = torch::softmax(plain->decode(y, encp, stp, c3), -1);
  // p_gen by hand: sigmoid(w . [c_t; h_t; x_t] + b), with h_t, c_t, x_t recomputed
  auto x = net->tgt_embed(y);
  auto st3 = net->decoder_initial_state(enc);
  StepContext c4;
  auto h = net->decoder->forward(x, st3, c4);
  torch::Tensor ctx;
  net->attend(h, enc, nullptr, &ctx);
  auto w = net->copy_gate->weight[0];
  const double bias = net->copy_gate->bias[0].item<double>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      const double z = (torch::cat({ctx[t][b], h[t][b], x[t][b]}) * w).sum().item<double>() + bias;
      const double pg = 1.0 / (1.0 + std::exp(-z));
      double total = 0;
      for (int64_t v = 0; v < V; ++v) {
        double copied = 0;
        for (int64_t s = 0; s < len[b].item<int64_t>(); ++s)
          if (src[s][b].item<int64_t>() == v) copied += a[t][b][s].item<double>();
        const double want = pg * pv[t][b][v].item<double>() + (1 - pg) * copied;
        EXPECT_NEAR(std::exp(logp[t][b][v].item<double>()), want, 1e-6) << "t " << t << " b " << b << " v " << v;
        total += want;
      }
      EXPECT_NEAR(total, 1.0, 1e-6);
      EXPECT_GT(1 - pg, 1e-3);  // the copy part is not vanishing, so the check above tests it
    }
  // padded positions get no attention, so id 0 (pad) gets nothing copied to it in source 1
  EXPECT_EQ(a[0][1][3].item<double>(), 0.0);
  // a log-distribution: its own log_softmax (what the loss and the searches apply)
  EXPECT_TRUE(torch::allclose(torch::log_softmax(logp, -1), logp, 1e-5, 1e-5));
}

TEST(Seq2seqModel, copy_needs_a_shared_vocabulary) {
  EXPECT_THROW(Seq2SeqModel(model_section({{"cell", "gru"}, {"embed", 6}, {"hidden", 5}, {"copy", true}}), 11, 13, 0),
               c10::Error);
  json cfg = {{"task", {{"name", "seq2seq"}}},
              {"dataset", {{"name", "spam-headlines"}, {"shared_vocab", false}}},
              {"model", {{"cell", "lstm"}, {"copy", true}}}};
  auto errs = validate_config(cfg);
  ASSERT_FALSE(errs.empty());
  bool named = false;
  for (auto& e : errs) named = named || e.str().find("model.copy") != std::string::npos;
  EXPECT_TRUE(named) << errs[0].str();
}

TEST(Seq2seqModel, presets_and_sweeps_validate) {
  // The seq2seq presets and the MC-RNN Table 2/3 sweeps (and Table 4, renamed from table2).
  for (const char* f : {"seq2seq-headlines-mcrnn", "seq2seq-headlines-lstm", "seq2seq-headlines-copy"}) {
    const std::string path = cstest::source_dir() + "/resources/presets/" + f + ".json";
    json cfg = json::parse(read_file(path));
    auto errs = validate_config(cfg);
    EXPECT_TRUE(errs.empty()) << f << ": " << (errs.empty() ? "" : errs[0].str());
    EXPECT_TRUE(cfg.contains("notes") && cfg["notes"].is_string()) << f;
  }
  for (const char* s : {"reproduce-mcrnn-table2", "reproduce-mcrnn-table3", "reproduce-mcrnn-table4"}) {
    auto spec = load_sweep_spec(s);
    EXPECT_EQ(spec.name, s);
  }
}

}  // namespace test_seq2seq_model
