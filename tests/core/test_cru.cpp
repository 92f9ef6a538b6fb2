// CRU cells (cells/cru.h) and the bidirectional wrapper (cells/bidirectional.h).
#include <gtest/gtest.h>

#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/functional.h>

#include "cells/bidirectional.h"
#include "cells/cru.h"
#include "cells/registry.h"
#include "config/schema.h"
#include "harness.h"

namespace test_cru {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

CRUOptions cru_opts(CRUFusion f, int64_t I, int64_t H, int64_t k = 3) {
  CRUOptions o;
  o.input_size = I;
  o.hidden_size = H;
  o.fusion = f;
  o.filter_length = k;
  return o;
}

// Finite-difference check of d(sum(w * out))/d(every parameter entry and every input entry), double.
double max_grad_rel_error(CellImpl& cell, const torch::Tensor& x_in, bool stepwise) {
  cell.to(torch::kDouble);
  auto x = x_in.to(torch::kDouble).clone().requires_grad_(true);
  const int64_t B = x.size(1);
  torch::manual_seed(7);
  auto w = torch::randn({x.size(0), B, cell.hidden_size()}, torch::kDouble);
  auto loss_of = [&]() {
    StepContext ctx;
    ctx.stepwise = stepwise;
    auto out = cell.forward_sequence(x, cell.initial_state(B, x.options()), ctx).output;
    return (out * w).sum();
  };
  for (auto& p : cell.parameters()) p.mutable_grad() = torch::Tensor();
  loss_of().backward();
  std::vector<torch::Tensor> targets = cell.parameters();
  targets.push_back(x);
  double worst = 0;
  const double eps = 1e-6;
  torch::NoGradGuard ng;
  for (auto& p : targets) {
    auto g = p.grad().clone();
    auto flat = p.view({-1});
    auto gflat = g.view({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double orig = flat[i].item<double>();
      flat[i] = orig + eps;
      const double lp = loss_of().item<double>();
      flat[i] = orig - eps;
      const double lm = loss_of().item<double>();
      flat[i] = orig;
      const double num = (lp - lm) / (2 * eps), ana = gflat[i].item<double>();
      const double err = std::abs(num - ana) / std::max(1.0, std::abs(num) + std::abs(ana));
      worst = std::max(worst, err);
    }
  }
  return worst;
}

}  // namespace

// Qt Test's initTestCase: once, before the first test of this file.
class Cru : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { torch::manual_seed(1); }
};

TEST_F(Cru, registry_and_config) {
  for (std::string n : {"cru_shallow", "cru_deep", "cru_deep_enhanced"}) {
    const auto& ci = cell_info(n);
    ASSERT_EQ(ci.family, std::string("cru"));
    ASSERT_TRUE(ci.needs_whole_sequence);
    auto cell =
        ci.make(resolve_config(json{{"model", {{"cell", n}, {"hidden", 6}, {"filter_length", 3}}}})["model"], 5, 0);
    ASSERT_EQ(cell->hidden_size(), int64_t(6));
  }
  json res = resolve_config(json{{"model", {{"cell", "cru_deep"}}}});
  ASSERT_EQ(res["model"]["filter_length"].get<int>(), 3);
  ASSERT_EQ(res["model"]["conv_activation"].get<std::string>(), std::string("relu"));
  // conv_channels is a shallow-fusion option only
  auto errs = validate_config(json{{"model", {{"cell", "cru_deep"}, {"conv_channels", 8}}}});
  ASSERT_EQ(int(errs.size()), 1);
  ASSERT_EQ(errs[0].path, std::string("model.conv_channels"));
  ASSERT_TRUE(
      validate_config(json{{"model", {{"cell", "cru_shallow"}, {"conv_channels", 8}, {"conv_window", "causal"}}}})
          .empty());
  // The default task is the char LM: a centred window of k >= 2 would see the character to
  // predict, so it is refused there, naming the option (CRU_NOTES.md); k = 1 has nothing after t.
  for (const char* task : {"char_lm", "word_lm"}) {
    errs = validate_config(json{{"task", {{"name", task}}}, {"model", {{"cell", "cru_deep"}}}});
    ASSERT_EQ(int(errs.size()), 1) << task;
    ASSERT_EQ(errs[0].path, std::string("model.conv_window")) << task;
    ASSERT_TRUE(
        validate_config(json{{"task", {{"name", task}}}, {"model", {{"cell", "cru_deep"}, {"filter_length", 1}}}})
            .empty())
        << task;
  }
  // Tasks that read the whole text keep the paper's centred windows.
  for (const auto& e : validate_config(json{{"task", {{"name", "classify"}}}, {"model", {{"cell", "cru_deep"}}}}))
    ASSERT_NE(e.path, std::string("model.conv_window")) << e.message;
  errs = validate_config(json{{"model", {{"cell", "cru_shallow"}, {"filter_length", 0}}}});
  ASSERT_EQ(int(errs.size()), 1);
  ASSERT_EQ(errs[0].path, std::string("model.filter_length"));
}

// The causal window: the output at t does not depend on any input after t (every fusion, on the
// default path, i.e. the fast path where it applies, and on the step-wise path); the centred
// window does (so the check can fail).
TEST_F(Cru, causal_window_sees_nothing_after_t) {
  const int64_t T = 6, B = 2, I = 5, H = 6;
  for (auto f : {CRUFusion::Shallow, CRUFusion::Deep, CRUFusion::DeepEnhanced}) {
    for (const char* window : {"causal", "centered"}) {
      for (bool stepwise : {false, true}) {
        CRUOptions o;
        o.input_size = I;
        o.hidden_size = H;
        o.fusion = f;
        o.filter_length = 3;
        o.conv_window = enum_from_name<ConvWindow>(window).value();
        torch::manual_seed(2);
        auto cell = std::make_shared<CRUCellImpl>(o);
        cell->to(torch::kDouble);
        const auto x0 = torch::randn({T, B, I}, torch::kDouble);
        for (int64_t t = 0; t + 1 < T; ++t) {
          // a fresh forward per t: the fast path's graph takes one backward
          auto x = x0.clone().requires_grad_(true);
          StepContext ctx;
          ctx.stepwise = stepwise;
          auto so = cell->forward_sequence(x, cell->initial_state(B, x.options()), ctx);
          auto g = torch::autograd::grad({so.output.select(0, t).sum()}, {x})[0];
          const double after = g.narrow(0, t + 1, T - t - 1).abs().max().item<double>();
          if (std::string(window) == "causal")
            ASSERT_EQ(after, 0.0) << int(f) << " t " << t << (stepwise ? " stepwise" : "");
          else ASSERT_GT(after, 0.0) << int(f) << " t " << t << (stepwise ? " stepwise" : "");
        }
      }
    }
  }
}

TEST_F(Cru, same_length_conv_keeps_length_and_matches_conv1d) {
  const int64_t T = 7, B = 2, I = 3, C = 4;
  auto x = torch::randn({T, B, I}, torch::kDouble);
  for (int64_t k = 1; k <= 6; ++k) {
    auto w = torch::randn({C, k * I}, torch::kDouble), b = torch::randn({C}, torch::kDouble);
    auto y = same_length_conv(x, w, b, k);
    ASSERT_EQ(y.size(0), T);
    ASSERT_EQ(y.size(1), B);
    ASSERT_EQ(y.size(2), C);
    // Reference: conv1d over [B, I, T] with explicit zero padding (left, right).
    const int64_t left = (k - 1) / 2, right = k - 1 - left;
    auto wc = w.view({C, k, I}).permute({0, 2, 1}).contiguous();  // [C, I, k]
    auto xp = torch::nn::functional::pad(x.permute({1, 2, 0}), torch::nn::functional::PadFuncOptions({left, right}));
    auto ref = torch::conv1d(xp, wc, b).permute({2, 0, 1});
    ASSERT_TRUE(torch::allclose(y, ref, 1e-10, 1e-10)) << "k=" << k;
    if (k == 2) {  // even k: window (t, t+1); last position sees a zero after the end
      auto exp_last = torch::matmul(x[T - 1], w.narrow(1, 0, I).t()) + b;
      ASSERT_TRUE(torch::allclose(y[T - 1], exp_last, 1e-10, 1e-10));
    }
  }
}

TEST_F(Cru, gradient_checks) {
  const int64_t T = 4, B = 2, I = 3, H = 4;
  auto x = torch::randn({T, B, I});
  struct Case {
    CRUFusion f;
    int64_t k;
    bool reset_after;
    bool stepwise;
  };
  const Case cases[] = {{CRUFusion::Shallow, 3, true, true},        {CRUFusion::Shallow, 3, true, false},
                        {CRUFusion::Deep, 3, true, false},          {CRUFusion::DeepEnhanced, 3, true, false},
                        {CRUFusion::DeepEnhanced, 2, false, false}, {CRUFusion::Deep, 4, false, false}};
  for (auto& c : cases) {
    auto o = cru_opts(c.f, I, H, c.k);
    o.reset_after = c.reset_after;
    o.conv_activation = ConvActivation::Tanh;  // smooth, so finite differences are exact enough everywhere
    CRUCellImpl cell(o);
    const double err = max_grad_rel_error(cell, x, c.stepwise);
    ASSERT_TRUE(err < 1e-5) << cell.type_name() << " k=" << c.k << ": rel err " << err;
  }
  // ReLU (the default) away from its kink: still checked, with a loose-enough margin from 0
  CRUCellImpl cell(cru_opts(CRUFusion::DeepEnhanced, I, H, 3));
  ASSERT_TRUE(max_grad_rel_error(cell, x, false) < 1e-5);
}

TEST_F(Cru, deep_with_tied_cnns_equals_shallow_with_identity) {
  const int64_t T = 6, B = 3, I = 5, H = 4, k = 3;
  auto so = cru_opts(CRUFusion::Shallow, I, H, k);
  so.conv_channels = H;  // conv output size = hidden size
  CRUCellImpl shallow(so);
  CRUCellImpl deep(cru_opts(CRUFusion::Deep, I, H, k));
  {
    torch::NoGradGuard ng;
    deep.conv_w.copy_(torch::cat({shallow.conv_w, shallow.conv_w, shallow.conv_w}, 0));  // phi_r = phi_z = phi
    deep.conv_b.copy_(torch::cat({shallow.conv_b, shallow.conv_b, shallow.conv_b}, 0));
    auto eye = torch::eye(H);
    shallow.w_ih.copy_(torch::cat({eye, eye, eye}, 0));  // GRU input matrices = identity
    shallow.b_ih.zero_();
    deep.w_hh.copy_(shallow.w_hh);
    deep.b_hh.copy_(shallow.b_hh);
  }
  auto x = torch::randn({T, B, I});
  for (bool stepwise : {false, true}) {
    StepContext c1, c2;
    c1.stepwise = c2.stepwise = stepwise;
    auto a = shallow.forward_sequence(x, shallow.initial_state(B, x.options()), c1).output;
    auto b = deep.forward_sequence(x, deep.initial_state(B, x.options()), c2).output;
    ASSERT_TRUE(torch::allclose(a, b, 1e-5, 1e-6));
  }
  // and they differ once the CNNs are untied
  {
    torch::NoGradGuard ng;
    deep.conv_w.narrow(0, 0, H).add_(0.5);
  }
  StepContext c1, c2;
  auto a = shallow.forward_sequence(x, shallow.initial_state(B, x.options()), c1).output;
  auto b = deep.forward_sequence(x, deep.initial_state(B, x.options()), c2).output;
  ASSERT_TRUE(!torch::allclose(a, b, 1e-3, 1e-4));
}

TEST_F(Cru, probe_exposes_convs_and_gates) {
  const int64_t T = 5, B = 2, I = 3, H = 4;
  for (auto f : {CRUFusion::Shallow, CRUFusion::Deep, CRUFusion::DeepEnhanced}) {
    CRUCellImpl cell(cru_opts(f, I, H));
    cell.eval();
    auto x = torch::randn({T, B, I});
    StepContext fast;
    auto ref = cell.forward_sequence(x, cell.initial_state(B, x.options()), fast).output;
    Probe p;
    StepContext ctx;
    ctx.probe = &p;
    auto out = cell.forward_sequence(x, cell.initial_state(B, x.options()), ctx).output;
    ASSERT_TRUE(torch::allclose(out, ref, 1e-5, 1e-6));  // probed path = fast path
    auto conv = cell.conv_outputs(x).detach();
    if (f == CRUFusion::Shallow) {
      ASSERT_TRUE(torch::allclose(p.stacked("conv"), conv, 1e-6, 1e-7));
    } else {
      auto ch = conv.chunk(3, 2);
      ASSERT_TRUE(torch::allclose(p.stacked("conv_r"), ch[0], 1e-6, 1e-7));
      ASSERT_TRUE(torch::allclose(p.stacked("conv_z"), ch[1], 1e-6, 1e-7));
      ASSERT_TRUE(torch::allclose(p.stacked("conv_n"), ch[2], 1e-6, 1e-7));
      ASSERT_TRUE((p.stacked("conv_r") >= 0).all().item<bool>());  // ReLU
    }
    for (auto key : {"update", "reset", "candidate", "gate", "h"}) {
      ASSERT_TRUE(p.has(key)) << key;
      ASSERT_EQ(p.stacked(key).size(0), T);
    }
    ASSERT_TRUE(torch::allclose(p.stacked("update") + p.stacked("gate"), torch::ones({T, B, H}), 1e-6, 1e-6));
    ASSERT_TRUE(torch::allclose(p.stacked("h"), ref, 1e-5, 1e-6));
  }
}

TEST_F(Cru, reverse_padded_within_length) {
  auto x = torch::arange(12, torch::kFloat).view({4, 3, 1});  // x[t, b] = 3t + b
  auto len = torch::tensor({4, 2, 1}, torch::kInt64);
  auto r = reverse_padded(x, len).squeeze(2);
  auto expect = torch::tensor({{9.f, 4.f, 2.f}, {6.f, 1.f, 5.f}, {3.f, 7.f, 8.f}, {0.f, 10.f, 11.f}});
  ASSERT_TRUE(torch::equal(r, expect));
  ASSERT_TRUE(torch::equal(reverse_padded(reverse_padded(x, len), len), x));
}

TEST_F(Cru, bidirectional_padding_invariance) {
  // Same states for a sentence whether it is padded (batched with a longer one) or alone.
  for (std::string cell : {"gru", "lstm", "cru_shallow", "cru_deep", "cru_deep_enhanced"}) {
    for (int layers : {1, 2}) {
      torch::manual_seed(3);
      json m = resolve_config(json{{"model", {{"cell", cell}, {"hidden", 4}, {"layers", layers}}}})["model"];
      Bidirectional bi(m, 3);
      bi->eval();
      const int64_t T = 6;
      auto a = torch::randn({T, 1, 3}), b = torch::randn({3, 1, 3});
      auto bpad = torch::cat({b, torch::randn({T - 3, 1, 3}) * 10}, 0);  // garbage in the padding
      auto x = torch::cat({a, bpad}, 1);
      StepContext c0, c1, c2;
      auto both = bi->forward(x, torch::tensor({T, int64_t(3)}), c0);
      auto alone_b = bi->forward(b, torch::tensor({int64_t(3)}), c1);
      auto alone_a = bi->forward(a, torch::tensor({T}), c2);
      const std::string what = cell + " layers=" + std::to_string(layers);
      ASSERT_EQ(both.final.size(1), int64_t(8));
      ASSERT_TRUE(torch::allclose(both.final[1], alone_b.final[0], 1e-5, 1e-6)) << what;
      ASSERT_TRUE(torch::allclose(both.final[0], alone_a.final[0], 1e-5, 1e-6)) << what;
      ASSERT_TRUE(torch::allclose(both.output.narrow(0, 0, 3).select(1, 1), alone_b.output.select(1, 0), 1e-5, 1e-6))
          << what;
      ASSERT_TRUE(torch::equal(both.output.narrow(0, 3, T - 3).select(1, 1), torch::zeros({T - 3, 8})));
      // the backward final state is the backward output at the first token and does depend on the last one
      auto b2 = b.clone();
      b2[2] += 1.0;
      StepContext c3;
      auto alone_b2 = bi->forward(b2, torch::tensor({int64_t(3)}), c3);
      ASSERT_TRUE(!torch::allclose(alone_b2.final[0].narrow(0, 4, 4), alone_b.final[0].narrow(0, 4, 4), 1e-6, 1e-7));
    }
  }
}

TEST_F(Cru, bidirectional_probe_prefixes) {
  json m = resolve_config(json{{"model", {{"cell", "cru_deep_enhanced"}, {"hidden", 4}}}})["model"];
  Bidirectional bi(m, 4);
  Probe p;
  StepContext ctx;
  ctx.probe = &p;
  bi->forward(torch::randn({5, 2, 4}), torch::tensor({5, 3}), ctx);
  ASSERT_TRUE(p.has("fwd/l0/conv_r"));
  ASSERT_TRUE(p.has("bwd/l0/update"));
  ASSERT_EQ(p.stacked("fwd/l0/conv_n").size(2), int64_t(4));
}

}  // namespace test_cru
