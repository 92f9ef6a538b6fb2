// The embedding lookup folded into the first layer's input map (cells/token_fold.h,
// TOKEN_FOLD_NOTES.md). The fold must be the same model: for every cell of the papers whose fast
// path folds, the loss and every parameter's gradient (the embedding's included) with the fold
// agree with the unfolded fast path to 1e-10 in double; in float, each path agrees with the double
// result of the same weights within the step-wise float path's own error (cstest::float_tolerance)
// or 1e-4; and the fold must actually have run (StepContext::folded_flops), so the comparison
// cannot pass by never folding. The gather's own backward is checked by finite differences, the
// folded convolution against same_length_conv for every window length and padding, and the cases
// that must not fold (input dropout in training, a large vocabulary, the step-wise path,
// CELLSCOPE_FAST=0) are checked to take the unfolded path.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_peer.h"
#include "cells/cru.h"
#include "cells/token_fold.h"
#include "config/schema.h"
#include "fixture_text.h"
#include "gradcheck.h"
#include "tasks/char_lm.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

namespace test_token_fold {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;

namespace {

constexpr int64_t kT = 7, kB = 3, kV = 5;

struct FoldGuard {
  explicit FoldGuard(bool on) { cs::set_token_fold_enabled(on); }
  ~FoldGuard() { cs::set_token_fold_enabled(true); }
};

json resolved(json m) {
  // The char-LM check refuses a centred CRU window (it sees t + 1); the fold is exact for either
  // window, so the centred case (the paper's, for sentence tasks) is built past the check.
  const bool centred = m.value("conv_window", std::string()) == "centered";
  if (centred) m["conv_window"] = "causal";
  json r = cs::load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", m}}, "token fold test")["model"];
  if (centred) r["conv_window"] = "centered";
  return r;
}

// The bench's paper configuration of `cell` at a tiny size.
json tiny_model(const std::string& cell) {
  json m = cs::paper_model(cell, /*embed=*/8, /*hidden=*/16);
  if (m.contains("filter")) m["filter"] = 12;
  return m;
}

struct Step {
  double loss = 0;
  std::vector<std::string> names;
  std::vector<torch::Tensor> grads;
  double folded = 0;
};

// One training forward + backward of the char-LM model (x and y drawn after the model, from the
// same seed, so both runs see the same batch and parameters).
Step run_step(const json& m, bool fold, torch::Dtype dt, bool train = true, int64_t V = kV, bool stepwise = false) {
  FoldGuard g(fold);
  torch::manual_seed(11);
  cs::CharLMModel net(resolved(m), V);
  net->to(dt);
  if (train) net->train();
  else net->eval();
  auto x = torch::randint(0, V, {kT, kB}, torch::kInt64);
  auto y = torch::randint(0, V, {kT, kB}, torch::kInt64);
  cs::StepContext ctx;
  ctx.stepwise = stepwise;
  auto states = net->initial_state(kB, torch::TensorOptions().dtype(dt));
  auto logits = net->forward(x, states, ctx);
  auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
  if (ctx.extra_loss.defined()) loss = loss + ctx.extra_loss;
  loss.backward();
  Step s;
  s.loss = loss.item<double>();
  s.folded = ctx.folded_flops;
  for (const auto& p : net->named_parameters()) {
    s.names.push_back(p.key());
    s.grads.push_back(p.value().grad().defined() ? p.value().grad().clone() : torch::zeros_like(p.value()));
  }
  return s;
}

// Largest element-wise difference relative to the largest entry of the reference.
double rel_diff(const torch::Tensor& a, const torch::Tensor& ref) {
  const double scale = std::max(ref.abs().max().item<double>(), 1e-300);
  return (a - ref).abs().max().item<double>() / scale;
}

void expect_same(const Step& a, const Step& b, double tol, const std::string& what) {
  EXPECT_NEAR(a.loss, b.loss, tol * std::abs(b.loss)) << what;
  ASSERT_EQ(a.grads.size(), b.grads.size()) << what;
  for (size_t i = 0; i < a.grads.size(); ++i) {
    if (b.grads[i].abs().max().item<double>() == 0) {
      EXPECT_EQ(a.grads[i].abs().max().item<double>(), 0) << what << ": " << a.names[i];
      continue;
    }
    EXPECT_LE(rel_diff(a.grads[i], b.grads[i]), tol) << what << ": gradient of " << a.names[i];
  }
}

// A float step `a` against the double step of the same weights and batch (`exact`): the loss and
// each gradient within cstest::float_tolerance of the step-wise float path's (`sw`) own error
// against `exact`. Some gradients are ill-conditioned: MC-RNN's attention parameters V_x, r
// (eq. 4) get a gradient through the softmax over channels (eq. 5), whose channels are nearly
// identical at initialisation, so it is a difference of nearly equal terms ~1e-5 of the other
// gradients; every float path, the step-wise autograd one included, is up to 6e-4 from double
// there, by an amount that moves with the GEMM kernel (TOKEN_FOLD_NOTES.md, "Float agreement").
void expect_float_close(const Step& a, const Step& exact, const Step& sw, const std::string& what) {
  const double sw_loss = std::abs(sw.loss - exact.loss) / std::abs(exact.loss);
  EXPECT_NEAR(a.loss, exact.loss, cstest::float_tolerance(sw_loss) * std::abs(exact.loss)) << what;
  ASSERT_EQ(a.grads.size(), exact.grads.size()) << what;
  ASSERT_EQ(sw.grads.size(), exact.grads.size()) << what;
  for (size_t i = 0; i < a.grads.size(); ++i) {
    if (exact.grads[i].abs().max().item<double>() == 0) {
      EXPECT_EQ(a.grads[i].abs().max().item<double>(), 0) << what << ": " << a.names[i];
      continue;
    }
    const double err = rel_diff(a.grads[i], exact.grads[i]), sw_err = rel_diff(sw.grads[i], exact.grads[i]);
    EXPECT_LE(err, cstest::float_tolerance(sw_err)) << what << ": gradient of " << a.names[i] << ", " << err
                                                    << " from double (the step-wise float path: " << sw_err << ")";
  }
}

// The paper cells whose fast path folds, plus option variants the fold reads: input layer norm
// (GRU+DT), the CRUs' centred window (the paper's, as a sentence task uses it) and tanh.
std::vector<std::pair<std::string, json>> fold_cases() {
  std::vector<std::pair<std::string, json>> v;
  for (const std::string& cell : cs::peer_cells()) v.push_back({cell, tiny_model(cell)});
  json ln = tiny_model("gru_dt");
  ln["layer_norm"] = true;
  v.push_back({"gru_dt layer_norm", ln});
  for (const char* c : {"cru_shallow", "cru_deep", "cru_deep_enhanced"}) {
    json m = tiny_model(c);
    m["conv_window"] = "centered";
    m["filter_length"] = 4;
    m["conv_activation"] = "tanh";
    v.push_back({std::string(c) + " centred k=4 tanh", m});
  }
  return v;
}

}  // namespace

TEST(TokenFold, windowGatherBackwardByFiniteDifferences) {
  torch::manual_seed(2);
  const auto d = torch::TensorOptions().dtype(torch::kDouble);
  for (int64_t left : {0, 1, 2})
    for (auto act : {cs::GatherAct::None, cs::GatherAct::Tanh})
      for (bool with_bias : {false, true}) {
        const std::string what = "left " + std::to_string(left) + " act " + std::to_string(static_cast<int>(act)) +
                                 (with_bias ? " bias" : "");
        auto P = torch::randn({kV, 3, 4}, d).requires_grad_(true);
        auto bias = with_bias ? torch::randn({4}, d).requires_grad_(true) : torch::Tensor();
        auto tok = torch::randint(0, kV, {kT, kB}, torch::kInt64);
        auto R = torch::randn({kT, kB, 4}, d);
        auto f = [&](const torch::Tensor& p, const torch::Tensor& bb) {
          return (cs::fused::window_gather(p, tok, left, bb, act) * R).sum();
        };
        f(P, bias).backward();
        const double eps = 1e-6;
        int checked = 0;
        for (int64_t i = 0; i < P.numel(); i += 3) {
          auto Pp = P.detach().clone(), Pm = P.detach().clone();
          Pp.view({-1})[i] += eps;
          Pm.view({-1})[i] -= eps;
          const auto b0 = with_bias ? bias.detach() : torch::Tensor();
          const double fd = (f(Pp, b0).item<double>() - f(Pm, b0).item<double>()) / (2 * eps);
          EXPECT_NEAR(P.grad().view({-1})[i].item<double>(), fd, 1e-7) << what << " entry " << i;
          ++checked;
        }
        EXPECT_GT(checked, 10);
        if (with_bias)
          for (int64_t i = 0; i < 4; ++i) {
            auto bp = bias.detach().clone(), bm = bias.detach().clone();
            bp[i] += eps;
            bm[i] -= eps;
            const double fd = (f(P.detach(), bp).item<double>() - f(P.detach(), bm).item<double>()) / (2 * eps);
            EXPECT_NEAR(bias.grad()[i].item<double>(), fd, 1e-7) << what << " bias " << i;
          }
      }
}

TEST(TokenFold, foldedConvolutionIsSameLengthConv) {
  torch::manual_seed(4);
  const auto d = torch::TensorOptions().dtype(torch::kDouble);
  const int64_t I = 6, C = 5;
  for (int64_t k = 1; k <= 4; ++k)
    for (int64_t left = 0; left < k; ++left)
      for (auto act : {cs::GatherAct::None, cs::GatherAct::Relu, cs::GatherAct::Tanh}) {
        auto table = torch::randn({kV, I}, d).requires_grad_(true);
        auto w = torch::randn({C, k * I}, d).requires_grad_(true);
        auto bias = torch::randn({C}, d).requires_grad_(true);
        auto tok = torch::randint(0, kV, {kT, kB}, torch::kInt64);
        auto R = torch::randn({kT, kB, C}, d);
        auto ref = cs::same_length_conv(table.index_select(0, tok.reshape({-1})).view({kT, kB, I}), w, bias, k, left);
        if (act == cs::GatherAct::Relu) ref = torch::relu(ref);
        if (act == cs::GatherAct::Tanh) ref = torch::tanh(ref);
        (ref * R).sum().backward();
        auto gt = table.grad().clone(), gw = w.grad().clone(), gb = bias.grad().clone();
        table.grad().zero_();
        w.grad().zero_();
        bias.grad().zero_();
        auto got = cs::fold_conv(cs::TokenInput{table, tok}, w, k, left, bias, act);
        (got * R).sum().backward();
        const std::string what = "k " + std::to_string(k) + " left " + std::to_string(left) + " act " +
                                 std::to_string(static_cast<int>(act));
        EXPECT_LE(rel_diff(got, ref), 1e-12) << what;
        EXPECT_LE(rel_diff(table.grad(), gt), 1e-12) << what;
        EXPECT_LE(rel_diff(w.grad(), gw), 1e-12) << what;
        EXPECT_LE(rel_diff(bias.grad(), gb), 1e-12) << what;
      }
}

TEST(TokenFold, tokensOutsideTheTableAreRefused) {
  auto P = torch::zeros({kV, 1, 2});
  auto tok = torch::full({2, 2}, kV, torch::kInt64);
  try {
    cs::fused::window_gather(P, tok, 0);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokens must lie in [0, 5)"), std::string::npos) << e.what();
  }
}

TEST(TokenFold, everyFoldingCellMatchesItsUnfoldedFastPath) {
  for (const auto& [name, m] : fold_cases()) {
    const Step folded = run_step(m, true, torch::kDouble);
    const Step plain = run_step(m, false, torch::kDouble);
    EXPECT_GT(folded.folded, 0) << name << ": the fold did not run";
    EXPECT_EQ(plain.folded, 0) << name;
    expect_same(folded, plain, 1e-10, name + " (double)");
    // and against the step-wise autograd reference
    const Step ref = run_step(m, true, torch::kDouble, true, kV, /*stepwise=*/true);
    EXPECT_EQ(ref.folded, 0) << name << ": the step-wise path must not fold";
    expect_same(folded, ref, 1e-10, name + " (double, against the step-wise path)");
    // float: both paths against the step-wise path in double (the model is built in float and
    // converted, so `ref` is the exact result of the float model's weights), not each other
    const Step ff = run_step(m, true, torch::kFloat);
    const Step pf = run_step(m, false, torch::kFloat);
    const Step sf = run_step(m, true, torch::kFloat, true, kV, /*stepwise=*/true);
    EXPECT_GT(ff.folded, 0) << name;
    EXPECT_EQ(sf.folded, 0) << name;
    expect_float_close(ff, ref, sf, name + " (float, folded)");
    expect_float_close(pf, ref, sf, name + " (float, unfolded)");
  }
}

TEST(TokenFold, foldsOnlyWhereTheInputIsTheLookup) {
  json m = tiny_model("gru_dt");
  // eval: the same output folded or not
  EXPECT_GT(run_step(m, true, torch::kDouble, /*train=*/false).folded, 0);
  // input dropout in training: the stack's input is not table[tokens]
  json md = m;
  md["dropout"] = 0.2;
  EXPECT_EQ(run_step(md, true, torch::kDouble, /*train=*/true).folded, 0);
  // ... but in evaluation dropout is the identity and the fold applies
  EXPECT_GT(run_step(md, true, torch::kDouble, /*train=*/false).folded, 0);
  // a table of more than half the positions (kT kB = 21): not worth it
  EXPECT_EQ(run_step(m, true, torch::kDouble, true, /*V=*/11).folded, 0);
  EXPECT_GT(run_step(m, true, torch::kDouble, true, /*V=*/10).folded, 0);
  // LibTorch's own GRU has no input map of ours to fold
  EXPECT_EQ(run_step(json{{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}, true, torch::kDouble).folded, 0);
  // CELLSCOPE_FAST=0 (every fast path off) and CELLSCOPE_FOLD=0 (the fold alone)
  ::setenv("CELLSCOPE_FAST", "0", 1);
  EXPECT_EQ(run_step(m, true, torch::kDouble).folded, 0);
  ::unsetenv("CELLSCOPE_FAST");
  ::setenv("CELLSCOPE_FOLD", "0", 1);
  EXPECT_EQ(run_step(m, true, torch::kDouble).folded, 0);
  ::unsetenv("CELLSCOPE_FOLD");
  EXPECT_GT(run_step(m, true, torch::kDouble).folded, 0);
}

TEST(TokenFold, foldedFlopsCountTheSkippedProducts) {
  // GRU+DT: W_ih [3H, E] on T B positions replaced by V table rows: (T B - V) 2 3H E
  json m = tiny_model("gru_dt");
  const double expect = (kT * kB - kV) * 2.0 * 3 * 16 * 8;
  EXPECT_DOUBLE_EQ(run_step(m, true, torch::kDouble).folded, expect);
}

// A short char-LM training on a text with structure (the corpus fixtures' text), same seed, with
// and without the fold: the same losses within float noise, and the model learned.
TEST(TokenFold, shortCharLmTrainingReachesTheSameBpc) {
  const std::string text = cstest::fixture_text(20000);
  std::map<char, int64_t> ids;
  for (char ch : text) ids.emplace(ch, 0);
  int64_t V = 0;
  for (auto& kv : ids) kv.second = V++;
  auto ids_t = torch::empty({static_cast<int64_t>(text.size())}, torch::kInt64);
  for (size_t i = 0; i < text.size(); ++i) ids_t[static_cast<int64_t>(i)] = ids[text[i]];
  const int64_t T = 20, B = 8, steps = 120;
  for (const std::string cell : {"gru_dt", "cru_shallow"}) {
    auto train = [&](bool fold) {
      FoldGuard g(fold);
      torch::manual_seed(21);
      cs::CharLMModel net(resolved(tiny_model(cell)), V);
      net->train();
      torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(3e-3));
      std::mt19937 rng(5);
      std::vector<double> losses;
      double folded_steps = 0;
      for (int64_t s = 0; s < steps; ++s) {
        auto x = torch::empty({T, B}, torch::kInt64), y = torch::empty({T, B}, torch::kInt64);
        for (int64_t b = 0; b < B; ++b) {
          const int64_t at = static_cast<int64_t>(rng() % (text.size() - T - 1));
          x.select(1, b).copy_(ids_t.narrow(0, at, T));
          y.select(1, b).copy_(ids_t.narrow(0, at + 1, T));
        }
        cs::StepContext ctx;
        auto states = net->initial_state(B, torch::TensorOptions());
        auto logits = net->forward(x, states, ctx);
        auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
        if (ctx.extra_loss.defined()) loss = loss + ctx.extra_loss;
        opt.zero_grad();
        loss.backward();
        opt.step();
        losses.push_back(loss.item<double>() / std::log(2.0));
        folded_steps += ctx.folded_flops > 0 ? 1 : 0;
      }
      return std::make_pair(losses, folded_steps);
    };
    const auto [f, nf] = train(true);
    const auto [p, np] = train(false);
    EXPECT_EQ(nf, steps) << cell << ": every step should have folded";
    EXPECT_EQ(np, 0) << cell;
    auto tail = [&](const std::vector<double>& v) {
      double m = 0;
      for (int64_t i = steps - 10; i < steps; ++i) m += v[static_cast<size_t>(i)];
      return m / 10;
    };
    EXPECT_NEAR(f.front(), p.front(), 1e-5 * p.front()) << cell;
    EXPECT_NEAR(tail(f), tail(p), 5e-3 * tail(p)) << cell << ": BPC after " << steps << " steps";
    EXPECT_LT(tail(f), 0.75 * f.front()) << cell << ": did not learn";
  }
}

}  // namespace test_token_fold
