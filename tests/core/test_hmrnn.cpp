// The HM-RNN (cells/hmrnn.h): its levels against a loop that picks COPY, UPDATE or FLUSH case by case
// as Chung et al. write them; what each operation keeps; the straight-through gradient; the options.
#include <gtest/gtest.h>

#include "cells/hmrnn.h"
#include "cells/registry.h"
#include "config/schema.h"
#include "gradcheck.h"
#include "harness.h"

namespace test_hmrnn {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::shared_ptr<HmRnnCellImpl> make(json extra = json::object(), int64_t in = 5, int64_t hid = 4) {
  json m = {{"cell", "hm_rnn"}, {"hidden", hid}, {"embed", in}};
  m.update(extra);
  auto c = cell_info("hm_rnn").make(resolve_config(json{{"model", m}})["model"], in, 0);
  return std::dynamic_pointer_cast<HmRnnCellImpl>(c);
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

struct OpCounts {
  int64_t copy = 0, update = 0, flush = 0;
};

// One step of the hierarchy with the operation chosen per example by torch::where, as the paper's cases
// read: FLUSH if z^l_{t-1} = 1, else UPDATE if z^{l-1}_t = 1, else COPY (z^0 = 1; no boundary at the top).
State reference_step(const HmRnnCellImpl& c, const torch::Tensor& x, const State& s, OpCounts* ops) {
  const int64_t H = c.hidden_size(), L = c.options().levels;
  const double a = c.options().slope;
  std::vector<torch::Tensor> h, cc, z;
  torch::Tensor below = x, zb = torch::ones({x.size(0), 1});
  for (int64_t l = 0; l < L; ++l) {
    const auto& lv = *c.levels[l];
    const auto hp = s[1 + l], cp = s[1 + L + l], zp = s[1 + 2 * L + l];
    auto pre = torch::matmul(hp, lv.w_rec.t()) + zb * torch::matmul(below, lv.w_bu.t()) + lv.b;
    if (l + 1 < L) pre = pre + zp * torch::matmul(s[2 + l], lv.w_td.t());
    auto f = torch::sigmoid(pre.narrow(1, 0, H)), i = torch::sigmoid(pre.narrow(1, H, H));
    auto o = torch::sigmoid(pre.narrow(1, 2 * H, H)), g = torch::tanh(pre.narrow(1, 3 * H, H));
    const auto flush = zp > 0.5, update = (zp < 0.5).logical_and(zb > 0.5), copy = (zp < 0.5).logical_and(zb < 0.5);
    if (ops) {
      ops->flush += flush.sum().item<int64_t>();
      ops->update += update.sum().item<int64_t>();
      ops->copy += copy.sum().item<int64_t>();
    }
    auto cn = torch::where(flush, i * g, torch::where(update, f * cp + i * g, cp));
    auto hn = torch::where(copy, hp, o * torch::tanh(cn));
    torch::Tensor zn = torch::zeros_like(zp);
    if (l + 1 < L) {
      const auto soft = torch::clamp((a * pre.narrow(1, 4 * H, 1) + 1) / 2, 0, 1);
      zn = (soft > 0.5).to(torch::kFloat);
    }
    h.push_back(hn);
    cc.push_back(cn);
    z.push_back(zn);
    below = hn;
    zb = zn;
  }
  auto gates = torch::sigmoid(torch::matmul(torch::cat(h, 1), c.w_gate.t()));
  torch::Tensor he = torch::zeros({x.size(0), H});
  for (int64_t l = 0; l < L; ++l) he = he + gates.narrow(1, l, 1) * torch::matmul(h[l], c.levels[l]->w_out.t());
  State out{torch::relu(he)};
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), cc.begin(), cc.end());
  out.insert(out.end(), z.begin(), z.end());
  return out;
}

}  // namespace

TEST(Hmrnn, stepsAsThePapersCases) {
  torch::manual_seed(11);
  auto c = make({{"hm_levels", 3}}, 5, 6);
  ASSERT_NE(c, nullptr);
  torch::NoGradGuard ng;
  auto x = torch::randn({12, 8, 5});
  auto s = c->initial_state(8, torch::TensorOptions());
  ASSERT_EQ(s.size(), 10u);
  State r = s;
  OpCounts ops;
  StepContext ctx;
  for (const auto& xt : x.unbind(0)) {
    s = c->step(xt, s, ctx);
    r = reference_step(*c, xt, r, &ops);
    for (size_t k = 0; k < s.size(); ++k) ASSERT_LT(max_diff(s[k], r[k]), 1e-5) << "state " << k;
  }
  // the random weights reach every operation, so each case above was compared
  EXPECT_GT(ops.copy, 0);
  EXPECT_GT(ops.update, 0);
  EXPECT_GT(ops.flush, 0);
  // the sequence path gives the same outputs as the steps
  auto seq = c->forward_sequence(x, c->initial_state(8, torch::TensorOptions()), ctx);
  EXPECT_LT(max_diff(seq.output[11], s[0]), 1e-6);
}

// Without a boundary below (z^1 = 0 at every step), the top level COPYs: its h and c never move.
TEST(Hmrnn, withoutABoundaryBelowTheTopLevelCopies) {
  torch::manual_seed(12);
  auto c = make({{"hm_levels", 2}}, 5, 4);
  torch::NoGradGuard ng;
  c->levels[0]->b.narrow(0, 16, 1).fill_(-100.0);  // level 1's boundary row: z~ = 0
  auto s = c->initial_state(3, torch::TensorOptions());
  for (auto& t : s) t.uniform_(-0.5, 0.5);
  s[5].zero_();  // z^1_0 = 0
  s[6].zero_();  // the top has no boundary
  const auto h2 = s[2].clone(), c2 = s[4].clone();
  StepContext ctx;
  auto out = c->forward_sequence(torch::randn({7, 3, 5}), s, ctx);
  EXPECT_EQ(max_diff(out.state[2], h2), 0.0);
  EXPECT_EQ(max_diff(out.state[4], c2), 0.0);
  EXPECT_GT(max_diff(out.state[1], s[1]), 1e-3);  // the bottom level still updates
}

// After a boundary (z^l_{t-1} = 1) a level FLUSHes: its new c does not read the old one.
TEST(Hmrnn, afterABoundaryALevelFlushes) {
  torch::manual_seed(13);
  auto c = make({{"hm_levels", 2}}, 5, 4);
  torch::NoGradGuard ng;
  auto s = c->initial_state(3, torch::TensorOptions());
  s[5].fill_(1.0);  // z^1_0 = 1
  auto s2 = s;
  s2[3] = torch::randn({3, 4});  // another c^1_0
  StepContext ctx;
  auto x = torch::randn({3, 5});
  auto a = c->step(x, s, ctx), b = c->step(x, s2, ctx);
  EXPECT_EQ(max_diff(a[3], b[3]), 0.0);
  s[5].zero_();
  s2[5].zero_();  // UPDATE instead: c^1_1 = f * c^1_0 + i * g reads it
  EXPECT_GT(max_diff(c->step(x, s, ctx)[3], c->step(x, s2, ctx)[3]), 1e-4);
}

// Where no boundary detector sits near its threshold, the straight-through term adds nothing and the
// gradients are the finite differences'.
TEST(Hmrnn, gradientsAwayFromTheThreshold) {
  torch::manual_seed(14);
  auto c = make({{"hm_levels", 2}}, 4, 3);
  c->to(torch::kFloat64);
  {
    torch::NoGradGuard ng;
    c->levels[0]->b.narrow(0, 12, 1).fill_(8.0);  // z~ saturated at 1: no gradient through the clamp
  }
  auto x = torch::randn({5, 2, 4}, torch::kFloat64).requires_grad_(true);
  auto w = torch::randn({5, 2, 3}, torch::kFloat64);
  auto s0 = c->initial_state(2, torch::TensorOptions().dtype(torch::kFloat64));
  for (int k = 0; k < 5; ++k) s0[k].normal_();
  auto loss = [&] {
    StepContext ctx;
    auto out = c->forward_sequence(x, s0, ctx);
    return (out.output * w).sum() + out.state[3].pow(2).sum();
  };
  auto r = cstest::grad_check(*c, loss, {x});
  ASSERT_GT(r.checked, 20);
  ASSERT_LT(r.max_rel_err, 1e-5) << "worst " << r.worst;
}

// Inside the hard sigmoid's slope the straight-through estimator carries the loss's gradient to the
// boundary detector (a hard step alone would give it none).
TEST(Hmrnn, straightThroughReachesTheBoundaryDetector) {
  torch::manual_seed(15);
  auto c = make({{"hm_levels", 2}, {"hm_slope", 0.05}}, 5, 4);
  auto x = torch::randn({6, 3, 5});
  StepContext ctx;
  auto out = c->forward_sequence(x, c->initial_state(3, torch::TensorOptions()), ctx);
  out.output.pow(2).sum().backward();
  const auto g = c->levels[0]->w_bu.grad().narrow(0, 16, 1);
  EXPECT_GT(g.abs().sum().item<double>(), 0.0);
}

TEST(Hmrnn, bridgeSetsTheOutputAndEveryLevel) {
  auto c = make({{"hm_levels", 3}}, 5, 3);
  auto s = c->with_previous_output(c->initial_state(2, torch::TensorOptions()), torch::full({2, 3}, 0.5));
  for (int k = 0; k <= 3; ++k) EXPECT_EQ(max_diff(s[k], torch::full({2, 3}, 0.5)), 0.0) << k;
  for (int k = 4; k < 10; ++k) EXPECT_EQ(s[k].abs().sum().item<double>(), 0.0) << k;
}

TEST(Hmrnn, optionsAreCheckedByName) {
  auto errs = validate_config(json{{"task", "char_lm"}, {"model", {{"cell", "hm_rnn"}, {"hm_levels", 0}}}});
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "model.hm_levels");
  errs = validate_config(json{{"task", "char_lm"}, {"model", {{"cell", "mcrnn"}, {"base", "hm_rnn"}}}});
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "model.base");
  EXPECT_NE(errs[0].message.find("HM-RNN"), std::string::npos) << errs[0].message;
  EXPECT_TRUE(validate_config(json{{"task", "char_lm"}, {"model", {{"cell", "hm_rnn"}, {"hm_levels", 3}}}}).empty());
}

}  // namespace test_hmrnn
