// MC-RNN (Xu et al. 2019): in-degree pattern (eq. 1), n = 2 reduces to f(W_1 h, x),
// attention normalisation, gradient checks with each base cell, the batched layer
// against a plain loop reference (eqs. 2-6), TBPTT continuation, configuration errors.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "cells/baseline.h"
#include "cells/mcrnn.h"
#include "cells/registry.h"
#include "cells/stack.h"
#include "util/error.h"
#include "config/schema.h"
#include "harness.h"

namespace test_mcrnn {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::shared_ptr<McRnnCellImpl> make_mc(const std::string& base, int64_t n, int64_t I, int64_t H, int64_t A = 0,
                                       const std::string& mem = "prev", const std::string& clamp = "off") {
  // dist_scale 1: W_j is the parameter itself, so random W_j below are far from I; state_clamp off: eqs. 2-3 as
  // written (the clamp has tests of its own)
  json m = {{"cell", "mcrnn"}, {"base", base},       {"block", n},        {"hidden", H},
            {"attention", A},  {"lstm_memory", mem}, {"dist_scale", 1.0}, {"state_clamp", clamp}};
  auto cell = cell_info("mcrnn").make(resolve_config(json{{"model", m}})["model"], I, 0);
  auto mc = std::dynamic_pointer_cast<McRnnCellImpl>(cell);
  mc->to(torch::kDouble);
  {
    // random W_j (the identity-based init would hide mistakes in eq. 2)
    torch::NoGradGuard ng;
    mc->w_dist.uniform_(-0.6, 0.6);
    for (auto& p : mc->base().parameters()) p.uniform_(-0.5, 0.5);
  }
  return mc;
}

// Plain eq. 1, written independently of the library.
int64_t ref_degree(int64_t t, int64_t k, int64_t n) {
  int64_t v = t - k - 1;
  while (v < 0) v += (n - 1);
  return v % (n - 1) + 1;
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

torch::Tensor dopts_zeros(std::vector<int64_t> s) { return torch::zeros(s, torch::kDouble); }

}  // namespace

// Qt Test's initTestCase: once, before the first test of this file.
class Mcrnn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { torch::manual_seed(7); }
};

TEST_F(Mcrnn, inDegreeTable) {
  // hand-written from eq. 1 for t = 1..12
  const int64_t n3[2][12] = {{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}};
  const int64_t n4[3][12] = {
      {3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}, {2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1}, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}};
  for (int64_t t = 1; t <= 12; ++t) {
    for (int64_t k = 1; k <= 2; ++k) ASSERT_EQ(mcrnn_in_degree(t, k, 3), n3[k - 1][t - 1]);
    for (int64_t k = 1; k <= 3; ++k) ASSERT_EQ(mcrnn_in_degree(t, k, 4), n4[k - 1][t - 1]);
    ASSERT_EQ(mcrnn_in_degree(t, 1, 2), int64_t(1));
  }
  // the probe's in-degree series follows the same pattern, and continues across segments
  auto mc = make_mc("gru", 4, 3, 5);
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  auto s = mc->initial_state(2, torch::kDouble);
  auto x = torch::randn({7, 2, 3}, torch::kDouble);
  auto o1 = mc->forward_sequence(x.narrow(0, 0, 4), s, ctx);
  mc->forward_sequence(x.narrow(0, 4, 3), o1.state, ctx);
  auto deg = probe.stacked("in_degree");  // [7, 3]
  ASSERT_EQ(deg.size(0), int64_t(7));
  ASSERT_EQ(deg.size(1), int64_t(3));
  for (int64_t t = 1; t <= 7; ++t)
    for (int64_t k = 1; k <= 3; ++k) ASSERT_EQ(deg[t - 1][k - 1].item<int64_t>(), n4[k - 1][t - 1]);
}

TEST_F(Mcrnn, blockTwoIsBaseCell) {
  // n = 2: one channel, m = 1 everywhere: h_t = f(W_1 h_{t-1}, x_t) and the attention weight is 1
  for (std::string base : {"rnn", "gru", "lstm"}) {
    auto mc = make_mc(base, 2, 3, 4);
    const int64_t T = 6, B = 3;
    auto x = torch::randn({T, B, 3}, torch::kDouble);
    StepContext ctx;
    auto out = mc->forward_sequence(x, mc->initial_state(B, torch::kDouble), ctx);
    auto& f = mc->base();
    auto xp = f.input_projection(x).unbind(0);
    State st = f.initial_state(B, torch::kDouble);
    auto W1 = mc->dist_weights()[0];
    for (int64_t t = 0; t < T; ++t) {
      State in = st;
      in[0] = torch::matmul(st[0], W1.t());  // s = W_1 h_{t-1}
      StepContext c2;
      st = f.step(xp[t], in, c2);
      ASSERT_TRUE(max_abs_diff(out.output[t], f.output_of(st)) < 1e-12) << base.c_str();
    }
  }
}

TEST_F(Mcrnn, distScaleParametrisation) {
  // W_j = I + alpha D_j (model.dist_scale): the cell with alpha and D computes the same as
  // the alpha = 1 cell whose parameter is alpha D, and gradients reach D scaled by alpha.
  torch::manual_seed(3);
  auto direct = make_mc("lstm", 3, 3, 4);
  json m = {{"cell", "mcrnn"}, {"base", "lstm"}, {"block", 3}, {"hidden", 4}, {"dist_scale", 0.25}};
  auto scaled = std::dynamic_pointer_cast<McRnnCellImpl>(
      cell_info("mcrnn").make(resolve_config(json{{"model", m}})["model"], 3, 0));
  scaled->to(torch::kDouble);
  {
    torch::NoGradGuard ng;
    auto sp = scaled->named_parameters(), dp = direct->named_parameters();
    for (auto& kv : dp) sp[kv.key()].copy_(kv.value());
    scaled->w_dist.copy_(direct->w_dist / 0.25);
  }
  auto eye = torch::eye(4, torch::kDouble).unsqueeze(0);
  ASSERT_TRUE(torch::allclose(scaled->dist_weights(), eye + direct->w_dist, 1e-12, 1e-12));
  ASSERT_TRUE(torch::allclose(direct->dist_weights(), eye + direct->w_dist, 1e-12, 1e-12));
  auto x = torch::randn({6, 2, 3}, torch::kDouble);
  StepContext c1, c2;
  auto y1 = direct->forward_sequence(x, direct->initial_state(2, torch::kDouble), c1).output;
  auto y2 = scaled->forward_sequence(x, scaled->initial_state(2, torch::kDouble), c2).output;
  ASSERT_TRUE(torch::allclose(y1, y2, 1e-10, 1e-12));
  y1.sum().backward();
  y2.sum().backward();
  ASSERT_TRUE(torch::allclose(scaled->w_dist.grad(), 0.25 * direct->w_dist.grad(), 1e-9, 1e-12));
  // the default keeps W_j near I at initialisation: |W_j - I| <= alpha * k / 2
  auto fresh = std::dynamic_pointer_cast<McRnnCellImpl>(cell_info("mcrnn").make(
      resolve_config(json{{"model", {{"cell", "mcrnn"}, {"block", 3}, {"hidden", 16}}}})["model"], 3, 0));
  const double dev = (fresh->dist_weights() - torch::eye(16).unsqueeze(0)).abs().max().item<double>();
  ASSERT_TRUE(dev > 0 && dev <= 0.1 * 0.25 / 2 + 1e-7) << std::to_string(dev).c_str();
}

TEST_F(Mcrnn, attentionSumsToOne) {
  auto mc = make_mc("lstm", 4, 3, 5, 6);
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  auto x = torch::randn({9, 4, 3}, torch::kDouble);
  mc->forward_sequence(x, mc->initial_state(4, torch::kDouble), ctx);
  auto a = probe.stacked("channel_attention");  // [T, B, K]
  ASSERT_EQ(a.sizes().vec(), (std::vector<int64_t>{9, 4, 3}));
  ASSERT_TRUE(max_abs_diff(a.sum(-1), torch::ones({9, 4}, torch::kDouble)) < 1e-12);
  ASSERT_TRUE(a.min().item<double>() > 0);
  // not uniform: the channels differ
  ASSERT_TRUE((a - 1.0 / 3).abs().max().item<double>() > 1e-4);
}

TEST_F(Mcrnn, gradientCheck) {
  struct Case {
    std::string base, mem, clamp = "off";
  };
  for (const Case& c : {Case{"rnn", "prev"}, Case{"gru", "prev"}, Case{"lstm", "prev"}, Case{"lstm", "average"},
                        Case{"gru", "prev", "on"}}) {
    auto mc = make_mc(c.base, 3, 2, 3, 3, c.mem, c.clamp);
    const int64_t T = 5, B = 2;
    auto x = torch::randn({T, B, 2}, torch::kDouble);
    auto wout = torch::randn({T, B, 3}, torch::kDouble);
    auto loss_fn = [&] {
      StepContext ctx;
      auto o = mc->forward_sequence(x, mc->initial_state(B, torch::kDouble), ctx);
      return (o.output * wout).sum() + o.state[2].pow(2).sum() * 0.3;
    };
    auto params = mc->parameters();
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    loss_fn().backward();
    double worst = 0;
    int64_t checked = 0;
    for (auto& p : params) {
      auto g = p.grad();
      ASSERT_TRUE(g.defined());
      auto flat = p.data().view({-1});
      auto gflat = g.view({-1});
      for (int64_t i = 0; i < flat.numel(); ++i) {
        torch::NoGradGuard ng;
        const double orig = flat[i].item<double>(), eps = 1e-6;
        flat[i] = orig + eps;
        const double lp = loss_fn().item<double>();
        flat[i] = orig - eps;
        const double lm = loss_fn().item<double>();
        flat[i] = orig;
        const double num = (lp - lm) / (2 * eps), ana = gflat[i].item<double>();
        const double rel = std::abs(num - ana) / std::max(1.0, std::abs(num) + std::abs(ana));
        worst = std::max(worst, rel);
        ++checked;
      }
    }
    ASSERT_TRUE(checked > 50);
    ASSERT_TRUE(worst < 1e-5) << (c.base + "/" + c.mem + " worst rel err " + std::to_string(worst)).c_str();
  }
}

TEST_F(Mcrnn, batchedMatchesLoopReference) {
  torch::NoGradGuard ng;
  for (std::string clamp : {"off", "on"})
    for (std::string mem : {"prev", "average"})
      for (std::string base : {"gru", "lstm"}) {
        if (clamp == "on" && (mem != "prev" || base != "gru")) continue;
        const int64_t n = 4, K = 3, I = 3, H = 4, A = 5, T = 8, B = 2;
        auto mc = make_mc(base, n, I, H, A, mem, clamp);
        if (clamp == "on") mc->w_dist.mul_(3.0);  // |W_j| up to 1.8 per entry: s leaves [-1, 1] whatever the seed
        auto x = torch::randn({T, B, I}, torch::kDouble);
        Probe probe;
        StepContext ctx;
        ctx.probe = &probe;
        auto out = mc->forward_sequence(x, mc->initial_state(B, torch::kDouble), ctx).output;
        auto chan = probe.stacked("channel_h");  // [T, B, K, H]
        // reference: every channel, every batch row, plain loops
        auto& f = mc->base();
        const bool lstm = base == "lstm";
        auto xp = f.input_projection(x);
        // h[k][t], c[k][t] per channel, t = 0 is the zero state (t <= 0)
        std::vector<std::vector<torch::Tensor>> h(K), c(K);
        for (int64_t k = 0; k < K; ++k) {
          for (int64_t t = 0; t < n; ++t) {  // padding for t <= 0
            h[k].push_back(dopts_zeros({B, H}));
            c[k].push_back(dopts_zeros({B, H}));
          }
        }
        const int64_t off = n - 1;  // index of time t is t + off
        int64_t clamped = 0;        // entries of s the clamp changed
        for (int64_t t = 1; t <= T; ++t) {
          std::vector<torch::Tensor> hk(K), ek(K);
          for (int64_t k = 1; k <= K; ++k) {
            const int64_t m = ref_degree(t, k, n);
            auto sv = dopts_zeros({B, H});
            auto cv = dopts_zeros({B, H});
            for (int64_t j = 1; j <= m; ++j) {
              for (int64_t b = 0; b < B; ++b)
                sv[b] += torch::mv(mc->dist_weights()[j - 1], h[k - 1][t - j + off][b]) / double(m);
              cv += c[k - 1][t - j + off] / double(m);
            }
            if (clamp == "on") {
              clamped += (sv.abs() > 1).sum().item<int64_t>();
              sv = sv.clamp(-1, 1);
            }
            State in{sv};
            if (lstm) in.push_back(mem == "prev" ? c[k - 1][t - 1 + off] : cv);
            StepContext c2;
            auto ns = f.step(xp[t - 1], in, c2);
            hk[k - 1] = ns[0];
            const double dk = max_abs_diff(chan[t - 1].select(1, k - 1), ns[0]);
            ASSERT_TRUE(dk < 1e-10) << (base + "/" + mem + " channel " + std::to_string(k) + " t=" + std::to_string(t) +
                                        " m=" + std::to_string(m) + " diff " + std::to_string(dk))
                                           .c_str();
            h[k - 1].push_back(ns[0]);
            c[k - 1].push_back(lstm ? ns[1] : ns[0]);
            // e = r^T tanh(V [h; x])
            auto V = torch::cat({mc->v_h, mc->v_x}, 1);
            auto e = dopts_zeros({B});
            for (int64_t b = 0; b < B; ++b)
              e[b] = torch::dot(mc->r, torch::tanh(torch::mv(V, torch::cat({ns[0][b], x[t - 1][b]}))));
            ek[k - 1] = e;
          }
          for (int64_t b = 0; b < B; ++b) {
            double z = 0;
            for (int64_t k = 0; k < K; ++k) z += std::exp(ek[k][b].item<double>());
            auto hatt = dopts_zeros({H});
            for (int64_t k = 0; k < K; ++k) hatt += std::exp(ek[k][b].item<double>()) / z * hk[k][b];
            const double d = max_abs_diff(out[t - 1][b], hatt);
            ASSERT_TRUE(d < 1e-10)
                << (base + "/" + mem + " t=" + std::to_string(t) + " diff " + std::to_string(d)).c_str();
          }
        }
        if (clamp == "on") {
          ASSERT_TRUE(clamped > 0) << "the clamp never acted: the test would not see it missing";
        }
      }
}

TEST_F(Mcrnn, stateClampKeepsAGruBaseBounded) {
  // #51: an MC-RNN over a GRU diverged (loss 1e6 within 7 Adam steps at lr 3e-3, clip 5). A GRU passes s on as
  // z * s, so with ||W_j|| > 1 and closed update gates h grows geometrically; model.state_clamp bounds it.
  torch::NoGradGuard ng;
  const int64_t n = 3, I = 3, H = 8, T = 60, B = 2;
  auto x = torch::randn({T, B, I}, torch::kDouble);
  auto run = [&](const std::string& clamp) {
    auto mc = make_mc("gru", n, I, H, 0, "prev", clamp);
    torch::manual_seed(11);
    mc->w_dist.copy_(0.5 * torch::eye(H, torch::kDouble).expand({n - 1, H, H}));  // W_j = 1.5 I
    auto& gru = dynamic_cast<GRUCellImpl&>(mc->base());
    gru.w_ih.uniform_(-0.3, 0.3);
    gru.w_hh.uniform_(-0.3, 0.3);
    gru.b_hh.zero_();
    gru.b_ih.zero_();
    gru.b_ih.narrow(0, H, H).fill_(4.0);  // z = sigmoid(4) ~ 0.98: the update gates keep s
    StepContext ctx;
    auto out = mc->forward_sequence(x, mc->initial_state(B, torch::kDouble), ctx);
    return std::make_pair(out.output.abs().max().item<double>(), mc->clamps_state());
  };
  const auto off = run("off"), on = run("on"), autod = run("auto");
  EXPECT_FALSE(off.second);
  EXPECT_GT(off.first, 100.0) << "without the clamp h should grow like (z |W|)^t";
  EXPECT_TRUE(on.second);
  EXPECT_LE(on.first, 1.0) << "with the clamp h is a convex combination of values in [-1, 1]";
  EXPECT_TRUE(autod.second) << "'auto' clamps over a GRU base";
  EXPECT_EQ(autod.first, on.first);
  // 'auto' leaves the paper's LSTM base as eq. 3 is written
  EXPECT_FALSE(make_mc("lstm", n, I, H, 0, "prev", "auto")->clamps_state());
  EXPECT_TRUE(make_mc("lstm", n, I, H, 0, "prev", "on")->clamps_state());
  // a run written before the option read as it computed: no clamp
  json old = {{"task", {{"name", "char_lm"}}},
              {"dataset", {{"name", "moby-dick"}}},
              {"model", {{"cell", "mcrnn"}, {"base", "gru"}}}};
  EXPECT_EQ(as_written(old)["model"].value("state_clamp", ""), "off");
  json now = old;
  now["model"]["state_clamp"] = "auto";
  EXPECT_EQ(as_written(now)["model"].value("state_clamp", ""), "auto");
}

TEST_F(Mcrnn, segmentsContinueBlocks) {
  // TBPTT: two segments with the state carried == one pass (the time index and history are in the state)
  auto mc = make_mc("lstm", 4, 3, 4, 0, "average");
  auto x = torch::randn({11, 2, 3}, torch::kDouble);
  StepContext ctx;
  auto whole = mc->forward_sequence(x, mc->initial_state(2, torch::kDouble), ctx);
  auto a = mc->forward_sequence(x.narrow(0, 0, 5), mc->initial_state(2, torch::kDouble), ctx);
  State carried;
  for (auto& t : a.state) carried.push_back(t.detach());
  ASSERT_EQ(carried[1][0].item<int64_t>(), int64_t(5));
  auto b = mc->forward_sequence(x.narrow(0, 5, 6), carried, ctx);
  ASSERT_TRUE(max_abs_diff(torch::cat({a.output, b.output}, 0), whole.output) < 1e-12);
  // step() (the wrapper API) agrees with forward_sequence
  State s = mc->initial_state(2, torch::kDouble);
  auto xp = mc->input_projection(x).unbind(0);
  for (int64_t t = 0; t < 11; ++t) s = mc->step(xp[t], s, ctx);
  ASSERT_TRUE(max_abs_diff(s[0], whole.output[10]) < 1e-12);
}

TEST_F(Mcrnn, stackedAndFlops) {
  json cfg = {{"model", {{"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}, {"hidden", 8}, {"layers", 2}}}};
  json model = load_and_resolve(cfg)["model"];
  CellStack st(model, 5);
  ASSERT_EQ(st->layers.size(), size_t(2));
  ASSERT_EQ(st->layers[1]->input_size(), int64_t(8));
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  auto states = st->initial_state(3, torch::TensorOptions());
  auto y = st->forward(torch::randn({4, 3, 5}), states, ctx);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{4, 3, 8}));
  ASSERT_TRUE(probe.has("l0/channel_attention") && probe.has("l1/channel_attention") && probe.has("l1/in_degree"));
  // flops: LSTM base, K = 2, H = 8, I = 5, A = 8
  auto* mc = dynamic_cast<McRnnCellImpl*>(st->layers[0].get());
  ASSERT_TRUE(mc);
  const double H = 8, I = 5, A = 8, K = 2, n1 = 2, G = 32;
  const double expect = 2 * G * I + 2 * A * I + K * (2 * G * H + 6 * G) + K * n1 * H + 2 * K * n1 * H * H +
                        K * (2 * A * H + 4 * A) + 4 * K + 2 * K * H;
  ASSERT_DOUBLE_EQ(mc->flops_per_step(), expect);
}

TEST_F(Mcrnn, configErrors) {
  auto has = [](const std::vector<ConfigError>& errs, const std::string& path, const std::string& word) {
    for (auto& e : errs)
      if (e.path == path && e.message.find(word) != std::string::npos) return true;
    return false;
  };
  auto e1 = validate_config(json{{"model", {{"cell", "mcrnn"}, {"block", 1}}}});
  ASSERT_TRUE(has(e1, "model.block", "2")) << (e1.empty() ? std::string("no error") : e1[0].str());
  auto e2 = validate_config(json{{"model", {{"cell", "mcrnn"}, {"base", "nosuchcell"}}}});
  ASSERT_TRUE(has(e2, "model.base", "nosuchcell")) << (e2.empty() ? std::string("no error") : e2[0].str());
  auto e3 = validate_config(json{{"model", {{"cell", "mcrnn"}, {"base", "mcrnn"}}}});
  ASSERT_TRUE(has(e3, "model.base", "own base"));
  auto e4 = validate_config(json{{"model", {{"cell", "mcrnn"}, {"lstm_memory", "sum"}}}});
  ASSERT_TRUE(has(e4, "model.lstm_memory", "prev"));
  auto e5 = validate_config(json{{"model", {{"cell", "mcrnn"}, {"dist_scale", 0.0}}}});
  ASSERT_TRUE(has(e5, "model.dist_scale", "")) << (e5.empty() ? std::string("no error") : e5[0].str());
  ASSERT_TRUE(validate_config(json{{"model", {{"cell", "mcrnn"}, {"block", 4}, {"base", "gru"}}}}).empty());
  // block is an option of mcrnn only
  ASSERT_TRUE(has(validate_config(json{{"model", {{"cell", "gru"}, {"block", 4}}}}), "model.block", "mcrnn"));
  // the factory reports the path too when called without validation
  bool threw = false;
  try {
    cell_info("mcrnn").make(json{{"hidden", 4}, {"base", "zzz"}}, 3, 0);
  } catch (const UserError& e) {
    threw = std::string(e.what()).find("model.base") != std::string::npos;
  }
  ASSERT_TRUE(threw);
}

// MC-RNN over an MZU base in a sentence task: the padding mask [T, B] reaches the base's
// zone-disagreement term (MZU eq. 19) step by step, for the batch-folded channel rows
// ([1, B K]). Before, the base refused the [T, B] mask ("token_mask must be [1, B K]") and a
// classify run of this cell could not train. The term is linear in the mask: the loss of two
// disjoint masks adds up to the loss of their union, and padding changes it.
TEST_F(Mcrnn, mzuBaseTakesTheSentenceMask) {
  json m = {{"cell", "mcrnn"}, {"base", "sat_mzu"}, {"block", 3}, {"hidden", 8}};
  auto cell = cell_info("mcrnn").make(resolve_config(json{{"model", m}})["model"], 6, 0);
  cell->to(torch::kDouble);
  cell->train();
  const int64_t T = 5, B = 3;
  auto x = torch::randn({T, B, 6}, torch::kDouble);
  auto loss = [&](const torch::Tensor& mask) {
    StepContext ctx;
    ctx.stepwise = true;
    ctx.loss_units = static_cast<double>(B);
    ctx.token_mask = mask;
    cell->forward_sequence(x, cell->initial_state(B, x.options()), ctx);
    EXPECT_TRUE(ctx.token_mask.defined() == mask.defined());  // the caller's mask is given back
    return ctx.extra_loss.defined() ? ctx.extra_loss.item<double>() : std::nan("");
  };
  auto ones = torch::ones({T, B}, torch::kDouble);
  auto m1 = ones.clone(), m2 = torch::zeros({T, B}, torch::kDouble);
  m1.index_put_({torch::indexing::Slice(3, T), 1}, 0.0);  // sentence 1 padded after its 3rd token
  m2.index_put_({torch::indexing::Slice(3, T), 1}, 1.0);
  const double all = loss(ones), a = loss(m1), b = loss(m2);
  ASSERT_TRUE(std::isfinite(all) && all != 0.0) << all;
  EXPECT_NEAR(loss(torch::Tensor()), all, 1e-12);
  EXPECT_NEAR(a + b, all, 1e-10);
  EXPECT_GT(std::abs(b), 1e-9);  // the padded positions did count before masking
}

}  // namespace test_mcrnn
