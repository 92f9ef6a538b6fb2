// model.architecture = rnnsearch (Bahdanau et al. 2015; tasks/seq2seq_model.h, SEQ2SEQ_NOTES.md):
// the additive attention and the whole decoder (bidirectional encoder, bridge, context in the
// input, maxout output) against a plain loop over i and j in double; the bidirectional encoder's
// real positions independent of the padding; token-by-token decoding equal to teacher forcing;
// a tiny `train` to `finished`, `decode` and the decoder analysis of it; a config without the key
// still builds Luong's network with its old parameter names.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <sstream>

#include "analysis/checkpoints.h"
#include "analysis/kinds.h"
#include "analysis/results.h"
#include "data/text_metrics.h"
#include "config/schema.h"
#include "harness.h"
#include "tasks/seq2seq.h"
#include "tasks/seq2seq_model.h"
#include "train/metrics.h"
#include "train/test_examples.h"
#include "util/error.h"

namespace test_seq2seq_rnnsearch {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

json model_section(const json& m) { return resolve_config(json{{"task", "seq2seq"}, {"model", m}})["model"]; }

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;

Mat to_mat(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat64).contiguous();
  auto a = c.accessor<double, 2>();
  Mat m(static_cast<size_t>(c.size(0)), Vec(static_cast<size_t>(c.size(1))));
  for (int64_t i = 0; i < c.size(0); ++i)
    for (int64_t j = 0; j < c.size(1); ++j) m[static_cast<size_t>(i)][static_cast<size_t>(j)] = a[i][j];
  return m;
}
Vec to_vec(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat64).contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
Vec matvec(const Mat& W, const Vec& x) {  // W x
  Vec y(W.size(), 0.0);
  for (size_t i = 0; i < W.size(); ++i)
    for (size_t j = 0; j < x.size(); ++j) y[i] += W[i][j] * x[j];
  return y;
}
Vec add(Vec a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}
Vec vtanh(Vec a) {
  for (auto& v : a) v = std::tanh(v);
  return a;
}
Vec cat(Vec a, const Vec& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// One layer of cell "rnn": h' = tanh(W_ih x + b_ih + W_hh h + b_hh), parameters of `prefix` in `p`.
struct PlainRnn {
  Mat wih, whh;
  Vec bih, bhh;
  PlainRnn(torch::OrderedDict<std::string, torch::Tensor>& p, const std::string& prefix)
      : wih(to_mat(p[prefix + ".w_ih"])),
        whh(to_mat(p[prefix + ".w_hh"])),
        bih(to_vec(p[prefix + ".b_ih"])),
        bhh(to_vec(p[prefix + ".b_hh"])) {}
  Vec step(const Vec& x, const Vec& h) const { return vtanh(add(add(matvec(wih, x), bih), add(matvec(whh, h), bhh))); }
};

}  // namespace

TEST(Seq2seqRnnsearch, decoder_matches_a_plain_loop_over_i_and_j) {
  // The whole network in double against the equations written out per source position j and
  // target step i (cell rnn, one layer): both encoder directions, s_0 = tanh(W_s <-h_1 + b_s),
  // e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), alpha, c_i, s_i = rnn([E y_{i-1}; c_i], s_{i-1}),
  // t_i = maxout_2(W_t [s_i; E y_{i-1}; c_i] + b_t), logits = W_o t_i + b_o.
  torch::manual_seed(21);
  const int64_t V = 11, E = 4, H = 3, B = 2, S = 5, T = 4;
  Seq2SeqModel net(
      model_section({{"cell", "rnn"}, {"embed", E}, {"hidden", H}, {"layers", 1}, {"architecture", "rnnsearch"}}), V, V,
      0);
  net->to(torch::kFloat64);
  net->eval();
  torch::NoGradGuard ng;
  auto src = torch::tensor({{5, 7}, {3, 9}, {8, 4}, {6, 0}, {2, 0}}, torch::kInt64);  // [S, B], 1: length 3
  auto len = torch::tensor({5, 3}, torch::kInt64);
  auto y = torch::tensor({{2, 2}, {6, 8}, {7, 4}, {9, 3}}, torch::kInt64);  // [T, B]
  StepContext c0, c1;
  auto enc = net->encode(src, len, c0);
  auto st = net->decoder_initial_state(enc);
  torch::Tensor alpha;
  auto logits = net->decode(y, enc, st, c1, &alpha);  // [T, B, V]
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{T, B, V}));

  auto p = net->named_parameters();
  const PlainRnn fwd(p, "encoder.layer0"), bwd(p, "encoder_bwd.layer0"), dec(p, "decoder.layer0");
  const Mat Es = to_mat(p["src_embed.weight"]), Et = to_mat(p["tgt_embed.weight"]);
  const Mat Wa = to_mat(p["attn_w.weight"]), Ua = to_mat(p["attn_u.weight"]), va = to_mat(p["attn_v.weight"]);
  const Mat Ws = to_mat(p["bridge.weight"]), Wt = to_mat(p["combine.weight"]), Wo = to_mat(p["out.weight"]);
  const Vec bs = to_vec(p["bridge.bias"]), bt = to_vec(p["combine.bias"]), bo = to_vec(p["out.bias"]);
  double worst = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = len[b].item<int64_t>();
    std::vector<Vec> x(static_cast<size_t>(n)), hf(static_cast<size_t>(n)), hb(static_cast<size_t>(n)),
        ann(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) x[static_cast<size_t>(j)] = Es[static_cast<size_t>(src[j][b].item<int64_t>())];
    Vec h(static_cast<size_t>(H), 0.0);
    for (int64_t j = 0; j < n; ++j) h = hf[static_cast<size_t>(j)] = fwd.step(x[static_cast<size_t>(j)], h);
    h.assign(static_cast<size_t>(H), 0.0);
    for (int64_t j = n - 1; j >= 0; --j) h = hb[static_cast<size_t>(j)] = bwd.step(x[static_cast<size_t>(j)], h);
    for (int64_t j = 0; j < n; ++j)
      ann[static_cast<size_t>(j)] = cat(hf[static_cast<size_t>(j)], hb[static_cast<size_t>(j)]);
    for (int64_t j = 0; j < S; ++j)  // the memory: annotations at the real positions, 0 at the padding
      for (int64_t k = 0; k < 2 * H; ++k)
        EXPECT_NEAR(enc.memory[b][j][k].item<double>(),
                    j < n ? ann[static_cast<size_t>(j)][static_cast<size_t>(k)] : 0.0, 1e-10);
    Vec s = vtanh(add(matvec(Ws, hb[0]), bs));  // s_0
    for (int64_t i = 0; i < T; ++i) {
      const Vec yprev = Et[static_cast<size_t>(y[i][b].item<int64_t>())];
      const Vec ws = matvec(Wa, s);
      Vec e(static_cast<size_t>(n));
      double mx = -1e300;
      for (int64_t j = 0; j < n; ++j) {  // e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)
        const Vec u = vtanh(add(ws, matvec(Ua, ann[static_cast<size_t>(j)])));
        e[static_cast<size_t>(j)] = matvec(va, u)[0];
        mx = std::max(mx, e[static_cast<size_t>(j)]);
      }
      double z = 0;
      for (auto v : e) z += std::exp(v - mx);
      Vec c(static_cast<size_t>(2 * H), 0.0);
      for (int64_t j = 0; j < S; ++j) {
        const double a = j < n ? std::exp(e[static_cast<size_t>(j)] - mx) / z : 0.0;  // alpha_ij
        EXPECT_NEAR(alpha[i][b][j].item<double>(), a, 1e-10) << "i " << i << " b " << b << " j " << j;
        if (j < n)
          for (int64_t k = 0; k < 2 * H; ++k)
            c[static_cast<size_t>(k)] += a * ann[static_cast<size_t>(j)][static_cast<size_t>(k)];
      }
      s = dec.step(cat(yprev, c), s);  // s_i
      const Vec pre = add(matvec(Wt, cat(cat(s, yprev), c)), bt);
      Vec t(static_cast<size_t>(H));
      for (int64_t k = 0; k < H; ++k)
        t[static_cast<size_t>(k)] = std::max(pre[static_cast<size_t>(2 * k)], pre[static_cast<size_t>(2 * k + 1)]);
      const Vec want = add(matvec(Wo, t), bo);
      for (int64_t v = 0; v < V; ++v) {
        const double got = logits[i][b][v].item<double>();
        worst = std::max(worst, std::abs(got - want[static_cast<size_t>(v)]));
        EXPECT_NEAR(got, want[static_cast<size_t>(v)], 1e-10) << "i " << i << " b " << b << " v " << v;
      }
    }
  }
  EXPECT_LT(worst, 1e-10);
  // the attention alone, for a state that is not the decoder's: the same formula
  auto sp = torch::randn({B, H}, torch::kFloat64);
  torch::Tensor a1;
  auto c = net->additive_attention(sp, enc, &a1);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = len[b].item<int64_t>();
    const Vec ws = matvec(Wa, to_vec(sp[b]));
    Vec e(static_cast<size_t>(n));
    double z = 0;
    for (int64_t j = 0; j < n; ++j) {
      e[static_cast<size_t>(j)] = matvec(va, vtanh(add(ws, matvec(Ua, to_vec(enc.memory[b][j])))))[0];
      z += std::exp(e[static_cast<size_t>(j)]);
    }
    for (int64_t k = 0; k < 2 * H; ++k) {
      double want = 0;
      for (int64_t j = 0; j < n; ++j)
        want += std::exp(e[static_cast<size_t>(j)]) / z * enc.memory[b][j][k].item<double>();
      EXPECT_NEAR(c[b][k].item<double>(), want, 1e-10);
    }
    for (int64_t j = n; j < S; ++j) EXPECT_EQ(a1[b][j].item<double>(), 0.0);
  }
}

TEST(Seq2seqRnnsearch, bidirectional_encoder_ignores_the_padding) {
  // The same sentence alone, padded by 3, and in a batch beside a longer one: its annotations,
  // U_a h_j, <-h_1 and the decoder's logits are the same at its real positions.
  for (json m : {json{{"cell", "gru"}, {"layers", 2}}, json{{"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}}}) {
    torch::manual_seed(4);
    m["embed"] = 6;
    m["hidden"] = 5;
    m["architecture"] = "rnnsearch";
    Seq2SeqModel net(model_section(m), 10, 10, 0);
    net->eval();
    torch::NoGradGuard ng;
    auto alone = torch::tensor({5, 6, 7, 8}, torch::kInt64).unsqueeze(1);                        // [4, 1]
    auto padded = torch::tensor({5, 6, 7, 8, 0, 0, 0}, torch::kInt64).unsqueeze(1);              // [7, 1]
    auto pair = torch::tensor({{5, 3}, {6, 4}, {7, 9}, {8, 2}, {0, 3}, {0, 5}}, torch::kInt64);  // [6, 2]
    StepContext c0, c1, c2;
    auto e0 = net->encode(alone, torch::tensor({4}, torch::kInt64), c0);
    auto e1 = net->encode(padded, torch::tensor({4}, torch::kInt64), c1);
    auto e2 = net->encode(pair, torch::tensor({4, 6}, torch::kInt64), c2);
    for (auto* e : {&e1, &e2}) {
      const int64_t b = 0;
      EXPECT_TRUE(torch::allclose(e0.memory[0], e->memory[b].narrow(0, 0, 4), 1e-6, 1e-6)) << m.dump();
      EXPECT_TRUE(torch::allclose(e0.keys[0], e->keys[b].narrow(0, 0, 4), 1e-6, 1e-6)) << m.dump();
      EXPECT_TRUE(torch::allclose(e0.first_backward[0], e->first_backward[b], 1e-6, 1e-6)) << m.dump();
    }
    // the decoder sees the same source: the same logits
    auto y = torch::tensor({2, 5, 6}, torch::kInt64).unsqueeze(1);
    StepContext d0, d2;
    auto s0 = net->decoder_initial_state(e0);
    auto l0 = net->decode(y, e0, s0, d0);
    auto s2 = net->decoder_initial_state(e2);
    auto l2 = net->decode(torch::cat({y, y}, 1), e2, s2, d2);
    EXPECT_TRUE(torch::allclose(l0.select(1, 0), l2.select(1, 0), 1e-5, 1e-5)) << m.dump();
    // and the backward direction did read the sentence: its last word changes <-h_1
    auto other = torch::tensor({5, 6, 7, 9}, torch::kInt64).unsqueeze(1);
    StepContext c3;
    auto e3 = net->encode(other, torch::tensor({4}, torch::kInt64), c3);
    EXPECT_FALSE(torch::allclose(e0.first_backward, e3.first_backward, 1e-6, 1e-6)) << m.dump();
    EXPECT_TRUE(torch::allclose(e0.memory[0][0].narrow(0, 0, 5), e3.memory[0][0].narrow(0, 0, 5), 1e-6, 1e-6));
  }
}

TEST(Seq2seqRnnsearch, token_by_token_equals_teacher_forcing_and_gradients_flow) {
  for (json m :
       {json{{"cell", "lstm"}, {"layers", 2}}, json{{"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}, {"layers", 2}},
        json{{"cell", "gru"}, {"copy", true}}}) {
    torch::manual_seed(5);
    m["embed"] = 8;
    m["hidden"] = 7;
    m["architecture"] = "rnnsearch";
    const int64_t V = 12;
    Seq2SeqModel net(model_section(m), V, V, 0);
    net->eval();
    const int64_t B = 2, S = 5, T = 6;
    auto src = torch::randint(4, V, {S, B}, torch::kInt64);
    auto len = torch::tensor({5, 3}, torch::kInt64);
    auto y = torch::randint(4, V, {T, B}, torch::kInt64);
    StepContext c0, c1;
    auto enc = net->encode(src, len, c0);
    auto st = net->decoder_initial_state(enc);
    auto full = net->decode(y, enc, st, c1);
    {
      torch::NoGradGuard ng;
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
    // one backward pass reaches both encoders, the bridge and every attention matrix
    full.logsumexp(-1).sum().backward();
    for (const char* k : {"encoder.layer0", "encoder_bwd.layer0", "bridge.weight", "attn_w.weight", "attn_u.weight",
                          "attn_v.weight", "combine.weight"}) {
      bool found = false;
      for (auto& kv : net->named_parameters())
        if (kv.key().rfind(k, 0) == 0 && kv.value().grad().defined()) {
          found = true;
          EXPECT_GT(kv.value().grad().abs().sum().item<double>(), 0.0) << m.dump() << " " << kv.key();
        }
      EXPECT_TRUE(found) << m.dump() << " " << k;
    }
  }
}

TEST(Seq2seqRnnsearch, a_config_without_the_key_builds_luong) {
  // Runs made before model.architecture existed: the resolved default is luong, the network has
  // Luong's parameter names only (so their checkpoints load), and the value is validated.
  const json m = model_section({{"cell", "gru"}, {"embed", 6}, {"hidden", 5}});
  EXPECT_EQ(m.at("architecture"), "luong");
  Seq2SeqModel luong(m, 11, 11, 0);
  EXPECT_FALSE(luong->rnnsearch);
  std::vector<std::string> names;
  for (auto& kv : luong->named_parameters()) names.push_back(kv.key());
  for (const auto& n : names) {
    EXPECT_EQ(n.find("encoder_bwd"), std::string::npos) << n;
    EXPECT_EQ(n.find("bridge"), std::string::npos) << n;
    EXPECT_EQ(n.find("attn_u"), std::string::npos) << n;
  }
  EXPECT_EQ(luong->attn_w->weight.sizes(), (std::vector<int64_t>{5, 5}));
  json r = m;
  r["architecture"] = "rnnsearch";
  Seq2SeqModel bahdanau(r, 11, 11, 0);
  EXPECT_TRUE(bahdanau->rnnsearch);
  EXPECT_EQ(bahdanau->decoder->layers[0]->input_size(), 6 + 10);  // [E y; c], c = [->h; <-h]
  json cfg = {{"task", {{"name", "seq2seq"}}},
              {"dataset", {{"name", "spam-headlines"}}},
              {"model", {{"cell", "lstm"}, {"architecture", "bahdanau"}}}};
  auto errs = validate_config(cfg);
  ASSERT_FALSE(errs.empty());
  bool named = false;
  for (auto& e : errs) named = named || cstest::contains(e.str(), "model.architecture");
  EXPECT_TRUE(named) << errs[0].str();
}

TEST(Seq2seqRnnsearch, mcrnn_decoder_reads_the_bridge_in_its_recurrence) {
  // #51: the MC-RNN paper builds MC-RNN "following the settings of Baseline-RNN", whose decoder starts from
  // s_0 = tanh(W_s <-h_1). model.bridge = recurrence (the default) puts s_0 where an MC-RNN's recurrence reads its
  // past: h_t^k = s_0 for t <= 0 in every channel (eq. 2), and h_att = s_0; output (runs written before the option)
  // only h_att, the first attention query. For every other cell the two are the same state.
  torch::manual_seed(5);
  const int64_t V = 13, B = 3, S = 6, T = 4, H = 5;
  auto src = torch::randint(3, V, {S, B}, torch::kInt64), y = torch::randint(3, V, {T, B}, torch::kInt64);
  auto len = torch::tensor({6, 4, 2}, torch::kInt64);
  auto build = [&](json m, const std::string& bridge) {
    m.update({{"embed", 4}, {"hidden", H}, {"architecture", "rnnsearch"}, {"bridge", bridge}});
    Seq2SeqModel net(model_section(m), V, V, 0);
    net->to(torch::kFloat64);
    net->eval();
    return net;
  };
  torch::NoGradGuard ng;
  const json mc = {{"cell", "mcrnn"}, {"base", "lstm"}, {"block", 4}, {"layers", 2}};
  auto rec = build(mc, "recurrence"), out = build(mc, "output");
  {  // the same weights in both
    auto po = out->named_parameters();
    for (auto& kv : rec->named_parameters()) po[kv.key()].copy_(kv.value());
  }
  StepContext c0, c1, c2, c3;
  auto enc = rec->encode(src, len, c0);
  const auto s0 = torch::tanh(rec->bridge(enc.first_backward));  // [B, 2H]: one W_s^l per layer
  auto st = rec->decoder_initial_state(enc), so = out->decoder_initial_state(out->encode(src, len, c1));
  ASSERT_EQ(st.size(), 2u);
  for (size_t l = 0; l < st.size(); ++l) {
    const auto h0 = s0.narrow(1, static_cast<int64_t>(l) * H, H);
    ASSERT_EQ(st[l][2].sizes(), (std::vector<int64_t>{B, 3, 3, H}));  // [B, K, n-1, H]
    EXPECT_TRUE(torch::equal(st[l][0], h0));
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t j = 0; j < 3; ++j) EXPECT_TRUE(torch::equal(st[l][2].select(1, k).select(1, j), h0)) << l;
    EXPECT_EQ(st[l][1].abs().sum().item<int64_t>(), 0);   // t = 0: the blocks start where they did
    EXPECT_EQ(st[l][3].abs().sum().item<double>(), 0.0);  // the LSTM memory c_0 = 0, as the baseline's
    EXPECT_TRUE(torch::equal(so[l][0], h0));
    EXPECT_EQ(so[l][2].abs().sum().item<double>(), 0.0) << "bridge = output leaves the channel history at zero";
  }
  // The recurrence now reads s_0: the first step's logits differ, and only through the history (with the
  // history of `st` zeroed the two agree).
  auto lr = rec->decode(y, enc, st, c2), lo = out->decode(y, enc, so, c3);
  EXPECT_GT((lr - lo).abs().max().item<double>(), 1e-3);
  auto zeroed = rec->decoder_initial_state(enc);
  for (auto& s : zeroed) s[2] = torch::zeros_like(s[2]);
  StepContext c4;
  EXPECT_LT((rec->decode(y, enc, zeroed, c4) - lo).abs().max().item<double>(), 1e-12);
  // A GRU decoder: the same state either way.
  auto grec = build({{"cell", "gru"}}, "recurrence"), gout = build({{"cell", "gru"}}, "output");
  {
    auto po = gout->named_parameters();
    for (auto& kv : grec->named_parameters()) po[kv.key()].copy_(kv.value());
  }
  StepContext c5, c6;
  auto g1 = grec->decoder_initial_state(grec->encode(src, len, c5)),
       g2 = gout->decoder_initial_state(gout->encode(src, len, c6));
  EXPECT_TRUE(torch::equal(g1[0][0], g2[0][0]));
  // Runs written before the option read it as output; a new config resolves to recurrence; a bad value is named.
  json old = {{"task", {{"name", "seq2seq"}}}, {"dataset", {{"name", "spam-headlines"}}}, {"model", mc}};
  EXPECT_EQ(as_written(old)["model"].value("bridge", ""), "output");
  EXPECT_EQ(model_section(mc).value("bridge", ""), "recurrence");
  old["model"]["bridge"] = "history";
  auto errs = validate_config(old);
  bool named = false;
  for (auto& e : errs) named = named || cstest::contains(e.str(), "model.bridge");
  EXPECT_TRUE(named) << (errs.empty() ? std::string("no error") : errs[0].str());
}

TEST(Seq2seqRnnsearch, paper_presets_and_sweeps_set_rnnsearch) {
  for (const char* f : {"seq2seq-headlines-mcrnn", "seq2seq-headlines-lstm"}) {
    json cfg = json::parse(read_file(cstest::source_dir() + "/resources/presets/" + f + ".json"));
    EXPECT_EQ(cfg["model"].value("architecture", ""), "rnnsearch") << f;
  }
  for (const char* s : {"reproduce-mcrnn-table2", "reproduce-mcrnn-table3", "reproduce-mcrnn-table5"}) {
    json spec = json::parse(read_file(cstest::source_dir() + "/resources/sweeps/" + s + ".json"));
    EXPECT_EQ(spec["base"]["model"].value("architecture", ""), "rnnsearch") << s;
  }
}

namespace {
// target = the source words reversed (as test_seq2seq_decode's fixture, smaller)
std::string reverse_fixture() {
  const std::string dir = cstest::temp_dir() + "/rnnsearch_parallel";
  if (std::filesystem::exists(dir + "/test.en")) return dir;
  std::mt19937_64 rng(13);
  for (auto [split, n] : {std::pair<std::string, int>{"train", 200}, {"valid", 20}, {"test", 20}}) {
    std::string src, tgt;
    for (int i = 0; i < n; ++i) {
      const int len = 3 + static_cast<int>(rng() % 4);
      std::vector<std::string> w;
      for (int j = 0; j < len; ++j) w.push_back(std::string(1, static_cast<char>('a' + rng() % 8)));
      for (int j = 0; j < len; ++j) src += (j ? " " : "") + w[static_cast<size_t>(j)];
      for (int j = 0; j < len; ++j) tgt += (j ? " " : "") + w[static_cast<size_t>(len - 1 - j)];
      src += "\n";
      tgt += "\n";
    }
    cstest::write_text(dir + "/" + split + ".de", src);
    cstest::write_text(dir + "/" + split + ".en", tgt);
  }
  return dir;
}
// the dataset block of a run on it: 20-piece BPE vocabularies
json reverse_dataset() {
  return {{"path", reverse_fixture()},
          {"format", "parallel"},
          {"subword", "bpe"},
          {"source_vocab_size", 20},
          {"target_vocab_size", 20}};
}
}  // namespace

TEST(Seq2seqRnnsearch, tiny_train_finishes_and_decodes) {
  const std::string run = cstest::temp_dir() + "/rnnsearch_run";
  json cfg = {{"task", {{"name", "seq2seq"}}},
              {"dataset", reverse_dataset()},
              {"model",
               {{"cell", "mcrnn"},
                {"block", 3},
                {"base", "lstm"},
                {"embed", 12},
                {"hidden", 16},
                {"architecture", "rnnsearch"}}},
              {"training",
               {{"batch", 16},
                {"steps", 12},
                {"lr", 0.01},
                {"eval_every", 6},
                {"log_every", 4},
                {"threads", 1},
                {"eval_decode", 6}}}};
  const std::string cfgp = cstest::temp_dir() + "/rnnsearch.json";
  cstest::write_text(cfgp, cfg.dump(2));
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err, 600000), 0) << err;
  auto summary = json::parse(read_file(run + "/summary.json"));
  EXPECT_EQ(summary.value("status", ""), "finished") << summary.dump();
  auto resolved = json::parse(read_file(run + "/config.json"));
  EXPECT_EQ(resolved["model"]["architecture"], "rnnsearch");
  // beam search (the step function carries the decoder state the attention reads)
  ASSERT_EQ(cstest::run_cli({"decode", run, "--split", "valid", "--beam", "3", "--max", "4", "--json"}, &out, &err), 0)
      << err;
  auto j = cstest::json_object(out);
  ASSERT_EQ(j["samples"].size(), 4u);
  EXPECT_TRUE(j["metrics"].contains("bleu"));
  // the encoder's channel attention: the forward direction only, one step per source piece
  AnalysisRequest rq;
  rq.kind = "channel_attention";
  rq.runs = {run};
  rq.text = "a b c d";
  auto enc = std::get<ChannelGrid>(run_analysis(rq).data);
  EXPECT_EQ(enc.tokens.size(), 4u);
  EXPECT_EQ(enc.attention.row_labels.size(), 2u);  // block 3: two channels
  // the decoder's channel attention, teacher-forced: one step per target token
  rq.kind = "channel_attention_decoder";
  rq.text = "a b c d ||| d c b a";
  auto dec = std::get<ChannelGrid>(run_analysis(rq).data);
  EXPECT_EQ(dec.tokens.size(), 5u);  // <s> + 4 pieces
  EXPECT_EQ(dec.attention.row_labels.size(), 2u);
  // MC-RNN Fig. 4: BLEU by source length. Every valid pair lands in the bucket of its source's word count, and each
  // bucket's BLEU is sacreBLEU's over that bucket's pairs as one corpus (not a mean of sentence scores), checked
  // against the task's own decodes grouped here.
  rq.kind = "length";
  rq.text.clear();
  rq.split = "valid";
  rq.edges = {0, 3, 5, 100};
  const auto res = run_analysis(rq);
  const auto lb = std::get<BucketSet>(res.data).runs.at(0);
  EXPECT_EQ(lb.metric, "bleu");
  EXPECT_EQ(lb.length_unit, "words");
  ASSERT_EQ(lb.buckets.size(), 3u);
  EXPECT_NE(res.caption.find("BLEU"), std::string::npos) << res.caption;
  EXPECT_NE(res.caption.find("greedy"), std::string::npos) << res.caption;
  auto task = load_checkpoint_task(run, "best");
  auto& s2s = dynamic_cast<Seq2SeqTask&>(*task);
  const auto& ex = s2s.examples("valid");
  const auto hyps = s2s.decode_texts("valid", static_cast<int64_t>(ex.size()));
  std::vector<std::vector<std::string>> h(3), r(3);
  for (size_t i = 0; i < ex.size(); ++i) {
    std::istringstream words(ex[i].source);
    int64_t n = 0;
    for (std::string w; words >> w;) ++n;
    const size_t k = n <= 3 ? 0 : n <= 5 ? 1 : 2;
    h[k].push_back(hyps[i]);
    r[k].push_back(ex[i].target);
  }
  int64_t total = 0;
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(lb.buckets[k].sequences, static_cast<int64_t>(h[k].size())) << k;
    total += lb.buckets[k].sequences;
    if (h[k].empty()) EXPECT_TRUE(std::isnan(lb.buckets[k].value)) << k;
    else EXPECT_DOUBLE_EQ(lb.buckets[k].value, corpus_bleu(h[k], r[k]).bleu) << k;
  }
  EXPECT_EQ(total, static_cast<int64_t>(ex.size()));
  EXPECT_GT(std::min(h[0].size(), std::min(h[1].size(), h[2].size())), 0u) << "a bucket the fixture leaves empty";
}

// Issue #51 item 1 for MC-RNN Tables 2-3: the trainer stores each test pair's BLEU statistics and
// ROUGE F1 (test_examples.json, what sweep table's bootstrap over the pairs reads), equal to its beam
// test evaluation's BLEU and ROUGE; `decode --test-examples` writes the same file for a finished run
// and refuses, writing nothing, when its decodes do not give the recorded BLEU.
TEST(Seq2seqRnnsearch, testExamplesOfTheBeamDecodedTestSplit) {
  const std::string run = cstest::temp_dir() + "/rnnsearch_examples_run";
  json cfg = {{"task", {{"name", "seq2seq"}, {"test_decode", "beam"}, {"beam", 3}}},
              {"dataset", reverse_dataset()},
              {"model", {{"cell", "lstm"}, {"embed", 12}, {"hidden", 16}, {"architecture", "rnnsearch"}}},
              {"training",
               {{"batch", 16}, {"steps", 30}, {"lr", 0.02}, {"eval_every", 15}, {"log_every", 15}, {"threads", 1}}}};
  const std::string cfgp = cstest::temp_dir() + "/rnnsearch_examples.json";
  cstest::write_text(cfgp, cfg.dump(2));
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err, 600000), 0) << err;
  const auto recs = read_metrics(run + "/metrics.jsonl");
  const MetricsRecord* test = nullptr;
  for (const auto& r : recs)
    if (r.eval && r.split == "test") test = &r;
  ASSERT_NE(test, nullptr);
  ASSERT_EQ(test->labels.at("decode"), "beam 3, lp 1.0");
  const auto e = read_test_examples(run);
  ASSERT_TRUE(e.has_value()) << "no test_examples.json in " << run;
  EXPECT_EQ(e->metric, "bleu");
  EXPECT_EQ(e->count(), 20u);
  EXPECT_NEAR(e->metric_value(), test->values.at("bleu"), 1e-9);
  for (const char* k : {"rouge1", "rouge2", "rougeL"}) {
    const auto v = *e->mean_scores(k);
    double sum = 0;
    for (double x : v) sum += x;
    EXPECT_NEAR(sum / static_cast<double>(v.size()), test->values.at(k), 1e-9) << k;
  }
  // decode --test-examples writes the same file again
  const std::string path = run + "/" + kTestExamplesFile;
  const std::string written = cstest::read_text(path);
  std::filesystem::remove(path);
  ASSERT_EQ(cstest::run_cli({"decode", run, "--test-examples", "--threads", "1"}, &out, &err, 600000), 0) << err;
  EXPECT_TRUE(cstest::contains(out, "20 test pairs")) << out;
  EXPECT_EQ(cstest::read_text(path), written);
  // it decodes as the test evaluation did: no option that would change the decodes
  ASSERT_EQ(cstest::run_cli({"decode", run, "--test-examples", "--beam", "2"}, &out, &err), 2);
  EXPECT_TRUE(cstest::contains(err, "takes no --beam")) << err;
  // a recorded BLEU the decodes do not give: refused, nothing written
  std::filesystem::remove(path);
  std::string lines = cstest::read_text(run + "/metrics.jsonl");
  const std::string key = "\"bleu\":";
  const size_t at = lines.rfind(key);
  ASSERT_NE(at, std::string::npos);
  lines.insert(at + key.size(), "1");  // 1 in front of the test BLEU's digits: another number
  cstest::write_text(run + "/metrics.jsonl", lines);
  ASSERT_EQ(cstest::run_cli({"decode", run, "--test-examples", "--threads", "1"}, &out, &err, 600000), 2);
  EXPECT_TRUE(cstest::contains(err, "test_examples.json not written")) << err;
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace test_seq2seq_rnnsearch
