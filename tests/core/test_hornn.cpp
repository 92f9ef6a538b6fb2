// The HO-RNN (cells/hornn.h): its recurrence against a loop written from HORNN's equation, one
// weighted path per preceding state; order 1 is the plain RNN; gradients; the bridge; the options.
#include <gtest/gtest.h>

#include "cells/baseline.h"
#include "cells/hornn.h"
#include "cells/registry.h"
#include "config/schema.h"
#include "gradcheck.h"
#include "harness.h"

namespace test_hornn {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::shared_ptr<CellImpl> make(const std::string& cell, json extra = json::object(), int64_t in = 5, int64_t hid = 4) {
  json m = {{"cell", cell}, {"hidden", hid}, {"embed", in}};
  m.update(extra);
  return cell_info(cell).make(resolve_config(json{{"model", m}})["model"], in, 0);
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

// h_t = f(W_in x_t + b_in + sum_{n=1}^{N} W_hn h_{t-n} + b_h) with h_{t-n} = s0[n-1] before the sequence,
// one matrix W_hn = w_hh[:, (n-1)H : nH] per path, summed path by path.
torch::Tensor reference(const HoRnnCellImpl& c, const torch::Tensor& x, std::vector<torch::Tensor> past, bool sig) {
  const int64_t H = c.hidden_size(), N = c.options().order;
  std::vector<torch::Tensor> outs;
  for (int64_t t = 0; t < x.size(0); ++t) {
    auto pre = torch::matmul(x[t], c.w_ih.t()) + c.b_ih + c.b_hh;
    for (int64_t n = 1; n <= N; ++n) pre = pre + torch::matmul(past[n - 1], c.w_hh.narrow(1, (n - 1) * H, H).t());
    auto h = sig ? torch::sigmoid(pre) : torch::tanh(pre);
    past.insert(past.begin(), h);
    past.pop_back();
    outs.push_back(h);
  }
  return torch::stack(outs);
}

}  // namespace

TEST(Hornn, stepsAsTheEquationWithEveryPrecedingState) {
  for (const std::string act : {"tanh", "sigmoid"}) {
    torch::manual_seed(4);
    auto c = make("ho_rnn", {{"ho_order", 3}, {"ho_activation", act}}, 5, 6);
    auto* h = dynamic_cast<HoRnnCellImpl*>(c.get());
    ASSERT_NE(h, nullptr);
    ASSERT_EQ(h->w_hh.sizes(), (std::vector<int64_t>{6, 18}));
    torch::NoGradGuard ng;
    auto x = torch::randn({9, 3, 5});
    auto s0 = c->initial_state(3, torch::TensorOptions());
    ASSERT_EQ(s0.size(), 3u);
    for (auto& t : s0) t.uniform_(-0.8, 0.8);
    StepContext ctx;
    auto out = c->forward_sequence(x, s0, ctx);
    auto ref = reference(*h, x, s0, act == "sigmoid");
    EXPECT_LT(max_diff(out.output, ref), 1e-5) << act;
    // The state after the sequence is {h_T, h_{T-1}, h_{T-2}}, newest first.
    ASSERT_EQ(out.state.size(), 3u);
    for (int n = 0; n < 3; ++n) EXPECT_LT(max_diff(out.state[n], ref[8 - n]), 1e-5) << act << " n=" << n;
  }
}

// Each path matters: with W_h1 = W_h2 = 0 only h_{t-3} reaches h_t, so a change of s0's third state
// moves h_1 and nothing else of s0 does.
TEST(Hornn, theNthPathReadsTheNthPrecedingState) {
  torch::manual_seed(5);
  auto c = make("ho_rnn", {{"ho_order", 3}}, 5, 4);
  auto* h = dynamic_cast<HoRnnCellImpl*>(c.get());
  torch::NoGradGuard ng;
  h->w_hh.narrow(1, 0, 8).zero_();
  auto x = torch::randn({1, 2, 5});
  auto s0 = c->initial_state(2, torch::TensorOptions());
  for (auto& t : s0) t.uniform_(-0.8, 0.8);
  StepContext ctx;
  const auto base = c->forward_sequence(x, s0, ctx).output;
  for (int n = 0; n < 3; ++n) {
    auto s = s0;
    s[n] = s[n] + 0.5;
    const double d = max_diff(c->forward_sequence(x, s, ctx).output, base);
    if (n == 2) EXPECT_GT(d, 1e-3);
    else EXPECT_EQ(d, 0.0) << "state " << n;
  }
}

// Order 1 is model.cell = rnn (LibTorch's fused tanh RNN) with the same weights.
TEST(Hornn, orderOneIsThePlainRnn) {
  torch::manual_seed(6);
  auto ho = make("ho_rnn", {{"ho_order", 1}}, 5, 7);
  auto rnn = make("rnn", json::object(), 5, 7);
  torch::NoGradGuard ng;
  auto hp = ho->named_parameters(), rp = rnn->named_parameters();
  for (const char* n : {"w_ih", "w_hh", "b_ih", "b_hh"}) rp[n].copy_(hp[n]);
  auto x = torch::randn({11, 3, 5});
  StepContext a, b;
  auto oa = ho->forward_sequence(x, ho->initial_state(3, torch::TensorOptions()), a);
  auto ob = rnn->forward_sequence(x, rnn->initial_state(3, torch::TensorOptions()), b);
  EXPECT_LT(max_diff(oa.output, ob.output), 1e-5);
}

TEST(Hornn, gradients) {
  torch::manual_seed(7);
  auto c = make("ho_rnn", {{"ho_order", 2}}, 4, 3);
  c->to(torch::kFloat64);
  auto x = torch::randn({5, 2, 4}, torch::kFloat64).requires_grad_(true);
  auto w = torch::randn({5, 2, 3}, torch::kFloat64);
  auto s0 = c->initial_state(2, torch::TensorOptions().dtype(torch::kFloat64));
  for (auto& t : s0) t.normal_();
  auto loss = [&] {
    StepContext ctx;
    auto out = c->forward_sequence(x, s0, ctx);
    return (out.output * w).sum() + out.state[1].pow(2).sum();
  };
  auto r = cstest::grad_check(*c, loss, {x});
  ASSERT_GT(r.checked, 20);
  ASSERT_LT(r.max_rel_err, 1e-5) << "worst " << r.worst;
}

// An encoder-decoder's bridge reaches every preceding state (model.bridge = recurrence).
TEST(Hornn, bridgeSetsEveryPrecedingState) {
  auto c = make("ho_rnn", {{"ho_order", 4}}, 5, 3);
  auto s = c->initial_state(2, torch::TensorOptions());
  const auto h0 = torch::full({2, 3}, 0.25);
  s = c->with_previous_output(s, h0);
  ASSERT_EQ(s.size(), 4u);
  for (auto& t : s) EXPECT_EQ(max_diff(t, h0), 0.0);
}

TEST(Hornn, optionsAreCheckedByName) {
  auto errs = validate_config(json{{"task", "char_lm"}, {"model", {{"cell", "ho_rnn"}, {"ho_order", 0}}}});
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "model.ho_order");
  errs = validate_config(json{{"task", "char_lm"}, {"model", {{"cell", "ho_rnn"}, {"ho_activation", "relu"}}}});
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "model.ho_activation");
  // an option of another cell is refused for ho_rnn, and ho_order for another cell
  EXPECT_FALSE(validate_config(json{{"task", "char_lm"}, {"model", {{"cell", "gru"}, {"ho_order", 2}}}}).empty());
  // as an MC-RNN's base its own history would mix with eq. 2's channel history
  errs = validate_config(json{{"task", "char_lm"}, {"model", {{"cell", "mcrnn"}, {"base", "ho_rnn"}}}});
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "model.base");
  EXPECT_NE(errs[0].message.find("HO-RNN"), std::string::npos) << errs[0].message;
  EXPECT_TRUE(validate_config(json{{"task", "char_lm"}, {"model", {{"cell", "ho_rnn"}, {"ho_order", 5}}}}).empty());
}

// The analytic FLOPs count every path: 2HI + 2NH^2 + 3H.
TEST(Hornn, flopsCountEveryPath) {
  auto c = make("ho_rnn", {{"ho_order", 3}}, 5, 4);
  EXPECT_DOUBLE_EQ(c->flops_per_step(), 2.0 * 4 * 5 + 2.0 * 3 * 4 * 4 + 3.0 * 4);
}

}  // namespace test_hornn
