// The MC-RNN fast path (cells/fused_mcrnn.*): the recurrence of an MC-RNN over an LSTM as one
// custom autograd function with hand-written BPTT. It must agree with the step-wise autograd
// path (the reference, forced with ctx.stepwise) for every case it claims: outputs, every
// tensor of the final state, every parameter gradient and the gradients of the input and of the
// initial state (double: 1e-10 relative; float: outputs 1e-4, gradients against the double
// result within the step-wise float path's own error, cstest::float_tolerance); finite
// differences of the fast path itself; the whitelist; and the same training curve on the default
// corpus.
#include <gtest/gtest.h>

#include <torch/csrc/autograd/function.h>
#include <torch/nn/functional.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cells/baseline.h"
#include "cells/fused_common.h"
#include "cells/fused_mcrnn.h"
#include "cells/mcrnn.h"
#include "core_checks.h"
#include "gradcheck.h"
#include "util/paths.h"

namespace test_fused_mcrnn {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

struct Case {
  int64_t block = 4;      // n (MC-RNN-(n-1)); the papers' best is 4
  int64_t attention = 0;  // 0 = H
  double dist_scale = 0.1;
  int64_t T = 7;
  int64_t t0 = 0;            // steps already taken (phase of eq. 1)
  bool random_state = true;  // non-zero initial history and memory
  std::string name() const {
    std::ostringstream s;
    s << "n" << block << "_A" << attention << "_alpha" << dist_scale << "_T" << T << "_t0" << t0
      << (random_state ? "_state" : "_zero");
    return s.str();
  }
};

std::shared_ptr<McRnnCellImpl> make_cell(const Case& c, int64_t I, int64_t H, const std::string& memory = "prev",
                                         bool layer_norm = false, double dropout = 0.0) {
  torch::manual_seed(17);
  BaselineOptions bo;
  bo.input_size = I;
  bo.hidden_size = H;
  bo.layer_norm = layer_norm;
  bo.candidate_dropout = dropout;
  McRnnOptions o;
  o.input_size = I;
  o.hidden_size = H;
  o.block = c.block;
  o.attention = c.attention;
  o.dist_scale = c.dist_scale;
  o.lstm_memory = enum_from_name<LstmMemory>(memory).value();
  auto cell = std::make_shared<McRnnCellImpl>(o, std::make_shared<LSTMCellImpl>(bo));
  {  // D_j away from 0 so that W_j is not close to I (the gradient of every W_j matters)
    torch::NoGradGuard ng;
    cell->w_dist.add_(torch::randn_like(cell->w_dist) * 0.3);
  }
  return cell;
}

struct Result {
  std::vector<torch::Tensor> out;  // output, then the final state's tensors
  std::vector<std::pair<std::string, torch::Tensor>> grads;
  std::string node;
};

Result run(McRnnCellImpl& cell, const torch::Tensor& x0, const State& s00, bool stepwise) {
  auto x = x0.clone().requires_grad_(true);
  State s0;
  for (auto& t : s00) s0.push_back(t.is_floating_point() ? t.clone().requires_grad_(true) : t.clone());
  for (auto& p : cell.parameters()) p.mutable_grad() = torch::Tensor();
  StepContext ctx;
  ctx.stepwise = stepwise;
  auto so = cell.forward_sequence(x, s0, ctx);
  torch::manual_seed(6);
  // the loss weights drawn in double whatever the dtype (randn draws other numbers in float), so
  // that a float run and the double run of the same weights compute the same loss
  auto weights = [](const torch::Tensor& t) { return torch::randn(t.sizes(), torch::kDouble).to(t.scalar_type()); };
  auto loss = (so.output * weights(so.output)).sum();
  for (auto& t : so.state)
    if (t.is_floating_point()) loss = loss + (t * weights(t)).sum();
  loss.backward();
  Result r;
  r.node = so.output.grad_fn() ? so.output.grad_fn()->name() : "";
  r.out.push_back(so.output.detach().clone());
  for (auto& t : so.state) r.out.push_back(t.detach().clone());
  for (auto& p : cell.named_parameters())
    r.grads.emplace_back(p.key(), p.value().grad().defined() ? p.value().grad().clone() : torch::Tensor());
  r.grads.emplace_back("x", x.grad().clone());
  for (size_t i = 0; i < s0.size(); ++i)
    if (s0[i].is_floating_point() && i != 0)  // s0[0] (h_att) is not an input of the next step
      r.grads.emplace_back("s0[" + std::to_string(i) + "]",
                           s0[i].grad().defined() ? s0[i].grad().clone() : torch::Tensor());
  return r;
}

double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  if (!a.is_floating_point()) return a.equal(b) ? 0.0 : 1.0;
  const double scale = std::max(b.abs().max().item<double>(), 1e-30);
  return (a - b).abs().max().item<double>() / scale;
}

bool is_fast(const Result& r) { return r.node.find("McRnnFn") != std::string::npos; }

State initial(McRnnCellImpl& cell, const Case& c, int64_t B, torch::Dtype dt) {
  State s = cell.initial_state(B, torch::TensorOptions().dtype(dt));
  torch::manual_seed(4);
  if (c.random_state) {
    s[0] = torch::randn_like(s[0]);
    s[2] = torch::randn_like(s[2]) * 0.5;
    s[3] = torch::randn_like(s[3]) * 0.5;
  }
  s[1].fill_(c.t0);
  return s;
}

// Float: the gradient of V_x (and r) comes only through the softmax over channels (eq. 5), whose
// backward a (da - sum a da) cancels almost exactly where the channels agree (a zero initial state
// makes them equal at the first step): there the float reference itself is off from the exact
// (double) gradient by more than 1e-4 relative. Such a gradient is held to the reference's own
// accuracy instead: the fast path's error against double at most twice the reference's.
void expect_agree(const Case& c, torch::Dtype dt, double tol, int64_t B = 3, int64_t I = 5, int64_t H = 6) {
  auto cell = make_cell(c, I, H);
  cell->to(torch::kDouble);
  cell->train(true);
  torch::manual_seed(3);
  auto xd = torch::randn({c.T, B, I}, torch::kDouble);
  const State s0d = initial(*cell, c, B, torch::kDouble);
  const Result exact = run(*cell, xd, s0d, true);
  cell->to(dt);
  auto x = xd.to(dt);
  State s0;
  for (auto& t : s0d) s0.push_back(t.is_floating_point() ? t.to(dt) : t);
  auto fast = run(*cell, x, s0, false);
  auto ref = run(*cell, x, s0, true);
  ASSERT_TRUE(is_fast(fast)) << c.name() << ": the fast path did not run (" << fast.node << ")";
  ASSERT_FALSE(is_fast(ref)) << c.name();
  ASSERT_EQ(fast.out.size(), ref.out.size());
  for (size_t i = 0; i < fast.out.size(); ++i)
    EXPECT_LT(rel_err(fast.out[i], ref.out[i]), tol)
        << c.name() << (i == 0 ? " output" : " state " + std::to_string(i - 1));
  ASSERT_EQ(fast.grads.size(), ref.grads.size());
  for (size_t i = 0; i < fast.grads.size(); ++i) {
    const auto& [n, g] = fast.grads[i];
    const auto& gr = ref.grads[i].second;
    ASSERT_EQ(g.defined(), gr.defined()) << c.name() << " grad of " << n;
    if (!g.defined()) continue;
    // one channel (n = 2): the softmax over channels is 1, so eq. 4's V and r get no gradient
    const bool attention_param = n == "v_h" || n == "v_x" || n == "r";
    if (!(c.block == 2 && attention_param)) {
      EXPECT_GT(gr.abs().max().item<double>(), 0) << c.name() << " grad of " << n << " is zero in the reference";
    }
    if (dt != torch::kDouble) {
      // float: against the double result of the same weights, inputs and loss (`exact`), within
      // the step-wise float path's own error there (cstest::float_tolerance). The attention's
      // V_h, V_x, r (eq. 4) get their gradient through the softmax over channels (eq. 5), a
      // difference of nearly equal terms when the channels are alike: both float paths are up to
      // ~4e-4 from double there, by an amount that moves with the GEMM kernel (MCRNN_NOTES.md).
      const auto& ex = exact.grads[i].second;
      const double ref_err = rel_err(gr.to(torch::kDouble), ex), fast_err = rel_err(g.to(torch::kDouble), ex);
      EXPECT_LE(fast_err, cstest::float_tolerance(ref_err, tol))
          << c.name() << " grad of " << n << ": fast " << fast_err << ", step-wise " << ref_err << " from double";
      continue;
    }
    EXPECT_LT(rel_err(g, gr), tol) << c.name() << " grad of " << n;
  }
}

std::vector<Case> claimed_cases() {
  std::vector<Case> cs;
  for (int64_t n : {2, 3, 4, 5})
    for (int64_t T : {1, 2, 7})
      for (int64_t t0 : {0, 5}) {
        Case c;
        c.block = n;
        c.T = T;
        c.t0 = t0;
        c.random_state = !(T == 7 && t0 == 0);  // the zero state as the trainer starts it, too
        cs.push_back(c);
      }
  Case a;
  a.attention = 7;  // V with more rows than H
  cs.push_back(a);
  a.attention = 0;
  a.dist_scale = 1.0;  // W_j trained directly
  cs.push_back(a);
  return cs;
}

}  // namespace

TEST(FusedMcrnn, Whitelist) {
  Case c;
  auto x = torch::randn({3, 2, 4});
  StepContext ctx;
  EXPECT_TRUE(mcrnn_fast_path_applies(*make_cell(c, 4, 5), x, ctx));
  EXPECT_FALSE(mcrnn_fast_path_applies(*make_cell(c, 4, 5), x.to(torch::kHalf), ctx));
  EXPECT_FALSE(mcrnn_fast_path_applies(*make_cell(c, 4, 5, "average"), x, ctx)) << "memory 'average' is not fused";
  EXPECT_FALSE(mcrnn_fast_path_applies(*make_cell(c, 4, 5, "prev", true), x, ctx)) << "layer norm is not fused";
  auto dropped = make_cell(c, 4, 5, "prev", false, 0.3);
  dropped->train(true);
  EXPECT_FALSE(mcrnn_fast_path_applies(*dropped, x, ctx)) << "candidate dropout in training is not fused";
  dropped->train(false);
  EXPECT_TRUE(mcrnn_fast_path_applies(*dropped, x, ctx)) << "evaluation has no dropout";
  auto wd = make_cell(c, 4, 5);
  dynamic_cast<LSTMCellImpl&>(wd->base()).weight_drop = 0.2;
  EXPECT_FALSE(mcrnn_fast_path_applies(*wd, x, ctx)) << "weight drop is not fused";
  {  // a GRU base
    BaselineOptions bo;
    bo.input_size = 4, bo.hidden_size = 5;
    McRnnOptions o;
    o.input_size = 4, o.hidden_size = 5, o.block = 3;
    McRnnCellImpl gru(o, std::make_shared<GRUCellImpl>(bo));
    EXPECT_FALSE(mcrnn_fast_path_applies(gru, x, ctx));
  }
  ctx.stepwise = true;
  EXPECT_FALSE(mcrnn_fast_path_applies(*make_cell(c, 4, 5), x, ctx));
  ctx.stepwise = false;
  Probe probe;
  ctx.probe = &probe;
  auto cell = make_cell(c, 4, 5);
  EXPECT_FALSE(mcrnn_fast_path_applies(*cell, x, ctx));
  cell->forward_sequence(x, cell->initial_state(2, torch::TensorOptions()), ctx);
  EXPECT_TRUE(probe.has("channel_attention")) << "the probe must see the step-wise path's records";
  ctx.probe = nullptr;
  setenv("CELLSCOPE_FAST", "0", 1);
  EXPECT_FALSE(mcrnn_fast_path_applies(*cell, x, ctx));
  unsetenv("CELLSCOPE_FAST");
  EXPECT_TRUE(mcrnn_fast_path_applies(*cell, x, ctx));
}

// Both forms of eq. 2 (fused_mcrnn.h, McRnnTuning): the zero-padded window as one GEMM, and one
// GEMM per channel over its actual predecessors.
TEST(FusedMcrnn, AgreesWithAutogradDouble) {
  auto& tune = fused::mcrnn_tuning();
  const auto saved = tune;
  for (int64_t split : {1 << 30, 0}) {
    tune.split_channels_min_batch = split;
    for (const auto& c : claimed_cases()) expect_agree(c, torch::kDouble, 1e-10);
  }
  tune = saved;
}

TEST(FusedMcrnn, AgreesWithAutogradFloat) {
  auto& tune = fused::mcrnn_tuning();
  const auto saved = tune;
  for (int64_t split : {1 << 30, 0}) {
    tune.split_channels_min_batch = split;
    for (const auto& c : claimed_cases()) expect_agree(c, torch::kFloat, 1e-4);
  }
  tune = saved;
}

TEST(FusedMcrnn, AgreesWhenRowsAreSplitOverThreads) {
  // B K = 192 rows of width (n-1) H = 192: more than one at::parallel_for chunk, on 2 threads;
  // T = 24 steps: the backward in two time chunks (21 steps = 4032 rows, [3, 24), then [0, 3)),
  // each block j of eq. 2's weight gradient over the gathered rows with j <= m_t^k.
  const int threads = torch::get_num_threads();
  torch::set_num_threads(2);
  Case c;
  c.T = 24;
  expect_agree(c, torch::kDouble, 1e-10, 64, 8, 64);  // (the per-channel form of eq. 2, the default)
  torch::set_num_threads(threads);
}

TEST(FusedMcrnn, AgreesWhenBackwardRunsInChunks) {
  // The backward's per-row gradients live in chunk buffers of mcrnn_tuning().chunk_rows rows
  // (steps x B K) and each chunk's weight gradients are summed when it is done: one step per
  // chunk, and 20 rows (2 steps of B K = 9 for n = 4, with a partial [0, 1); 6 steps for n = 2).
  auto& tune = fused::mcrnn_tuning();
  const auto saved = tune;
  for (int64_t rows : {1, 20}) {
    tune.chunk_rows = rows;
    for (const auto& c : claimed_cases()) expect_agree(c, torch::kDouble, 1e-10);
  }
  tune = saved;
}

TEST(FusedMcrnn, EvaluationWithoutGradient) {
  Case c;
  auto cell = make_cell(c, 5, 6, "prev", false, 0.4);
  cell->train(false);
  torch::NoGradGuard ng;
  auto x = torch::randn({9, 3, 5});
  const State s0 = initial(*cell, c, 3, torch::kFloat);
  StepContext fast, ref;
  ref.stepwise = true;
  auto a = cell->forward_sequence(x, s0, fast);
  auto b = cell->forward_sequence(x, s0, ref);
  EXPECT_LT(rel_err(a.output, b.output), 1e-5);
  for (size_t i = 0; i < a.state.size(); ++i) EXPECT_LT(rel_err(a.state[i], b.state[i]), 1e-5) << "state " << i;
}

TEST(FusedMcrnn, BackwardTwiceIsRefusedWithAMessage) {
  Case c;
  auto cell = make_cell(c, 4, 5);
  cell->train(true);
  StepContext ctx;
  auto so = cell->forward_sequence(torch::randn({4, 2, 4}), cell->initial_state(2, torch::TensorOptions()), ctx);
  auto loss = so.output.sum();
  loss.backward({}, /*retain_graph=*/true);
  try {
    loss.backward();
    FAIL() << "a second backward through the fused function went through";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("backward through the same graph twice"), std::string::npos) << e.what();
  }
}

TEST(FusedMcrnn, FiniteDifferences) {
  for (int64_t n : {3, 4}) {
    Case c;
    c.block = n;
    c.t0 = 1;
    auto cell = make_cell(c, 3, 4);
    cell->to(torch::kDouble);
    cell->train(true);
    torch::manual_seed(9);
    auto x = torch::randn({5, 2, 3}, torch::kDouble).requires_grad_(true);
    State s0 = initial(*cell, c, 2, torch::kDouble);
    s0[2].requires_grad_(true);
    s0[3].requires_grad_(true);
    auto w = torch::randn({5, 2, 4}, torch::kDouble);
    bool fast = true;
    auto loss = [&]() {
      StepContext ctx;
      auto so = cell->forward_sequence(x, s0, ctx);
      if (torch::GradMode::is_enabled() &&
          (!so.output.grad_fn() || so.output.grad_fn()->name().find("McRnnFn") == std::string::npos))
        fast = false;
      return (so.output * w).sum() + so.state[2].pow(2).sum() + so.state[3].pow(2).sum();
    };
    auto r = cstest::grad_check(*cell, loss, {x, s0[2], s0[3]}, 1000);
    EXPECT_TRUE(fast) << "n " << n;
    EXPECT_GT(r.checked, 100) << "n " << n;
    EXPECT_LT(r.max_rel_err, 1e-6) << "n " << n << " worst " << r.worst;
  }
}

// A tiny char LM (embedding, MC-RNN-3 over an LSTM, linear head) trained 150 Adam steps on the
// default corpus with carried state (truncated BPTT, as the trainer does), once with the fast path
// and once step-wise, same seed: the same mean loss over the last 40 steps, and it learned.
TEST(FusedMcrnn, SameTrainingOnDefaultCorpus) {
  int64_t V = 0;
  auto data = cstest::default_corpus_ids(60000, &V);
  ASSERT_TRUE(data.defined());
  const int64_t B = 8, T = 20, steps = 150, E = 16, H = 32;
  double mean[2] = {0, 0};
  for (int stepwise = 0; stepwise < 2; ++stepwise) {
    Case c;
    auto cell = make_cell(c, E, H);
    torch::manual_seed(42);
    auto emb = torch::nn::Embedding(V, E);
    auto head = torch::nn::Linear(H, V);
    cell->to(torch::kDouble);
    emb->to(torch::kDouble);
    head->to(torch::kDouble);
    std::vector<torch::Tensor> params = cell->parameters();
    for (auto& p : emb->parameters()) params.push_back(p);
    for (auto& p : head->parameters()) params.push_back(p);
    torch::optim::Adam opt(params, torch::optim::AdamOptions(0.006));
    cell->train();
    const int64_t span = (data.size(0) - 1) / B;
    State st = cell->initial_state(B, torch::TensorOptions().dtype(torch::kDouble));
    double sum = 0;
    bool fast_seen = false;
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t off = (s * T) % (span - T);
      auto idx = torch::arange(B, torch::kLong).mul(span).add(off);
      auto pos = idx.unsqueeze(0) + torch::arange(T, torch::kLong).unsqueeze(1);
      auto xin = data.index({pos}), tgt = data.index({pos + 1});
      StepContext ctx;
      ctx.stepwise = stepwise == 1;
      auto so = cell->forward_sequence(emb(xin), st, ctx);
      if (so.output.grad_fn() && so.output.grad_fn()->name().find("McRnnFn") != std::string::npos) fast_seen = true;
      auto loss = torch::nn::functional::cross_entropy(head(so.output).view({-1, V}), tgt.view({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step();
      st.clear();
      for (auto& t : so.state) st.push_back(t.detach());
      if (s >= steps - 40) sum += loss.item<double>();
    }
    EXPECT_EQ(fast_seen, stepwise == 0);
    mean[stepwise] = sum / 40;
  }
  std::printf("mcrnn: mean training loss of the last 40 steps: fast %.8f, step-wise %.8f\n", mean[0], mean[1]);
  EXPECT_LT(mean[0], std::log(static_cast<double>(V)) - 0.8) << "did not learn";
  EXPECT_NEAR(mean[0], mean[1], 1e-6);
}

}  // namespace test_fused_mcrnn
