// Fast paths of GRU+DT and the CRUs (cells/fused_gru*.h, cells/fused_cru.h) against the autograd
// reference (the step-wise path, ctx.stepwise = true): outputs, final state, every parameter
// gradient and the input and initial-state gradients, in double (1e-10 relative) and float (1e-4;
// gradients against the double result within the step-wise float path's own error);
// finite-difference checks of the fast path; a short training reaching the same loss both ways.
#include <gtest/gtest.h>

#include <torch/nn/functional.h>
#include <torch/csrc/autograd/function.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <cstdlib>
#include <sstream>

#include "cells/baseline.h"
#include "cells/cru.h"
#include "cells/fused_common.h"
#include "cells/fused_gru.h"
#include "cells/fused_cru.h"
#include "cells/fused_gru_dt.h"
#include "gradcheck.h"

namespace test_fused_cells {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

struct Case {
  std::string cell;  // gru_dt | cru_shallow | cru_deep | cru_deep_enhanced
  int64_t depth = 1;
  bool share = false;
  bool layer_norm = false;
  double dropout = 0.0;
  bool training = true;
  int64_t k = 3;
  std::string act = "relu";
  std::string name() const {
    std::ostringstream s;
    s << cell << "_d" << depth << (share ? "_shared" : "") << (layer_norm ? "_ln" : "") << "_p" << int(dropout * 10)
      << (training ? "_train" : "_eval") << "_k" << k << "_" << act;
    return s.str();
  }
};

std::shared_ptr<CellImpl> make_cell(const Case& c, int64_t I, int64_t H) {
  torch::manual_seed(11);
  if (c.cell == "gru_dt") {
    BaselineOptions o;
    o.input_size = I;
    o.hidden_size = H;
    o.depth = c.depth;
    o.share_transition = c.share;
    o.layer_norm = c.layer_norm;
    o.candidate_dropout = c.dropout;
    auto cell = std::make_shared<GRUDTCellImpl>(o);
    if (c.layer_norm) {
      // Non-trivial LN gains and biases so their gradients and effect are checked.
      torch::NoGradGuard ng;
      for (auto& p : cell->named_parameters()) {
        if (p.key().find("ln_") == std::string::npos) continue;
        // A transition GRU has no input LN (it has no input): draw what its
        // ln_x_gain / ln_x_bias used to take, so every case keeps the values it was checked with.
        if (p.key().rfind("transition", 0) == 0 && p.key().find("ln_h_gain") != std::string::npos)
          for (int k = 0; k < 2; ++k) (void)torch::randn_like(p.value());
        p.value().add_(torch::randn_like(p.value()) * 0.3);
      }
    }
    return cell;
  }
  CRUOptions o;
  o.input_size = I;
  o.hidden_size = H;
  o.fusion = c.cell == "cru_shallow" ? CRUFusion::Shallow
             : c.cell == "cru_deep"  ? CRUFusion::Deep
                                     : CRUFusion::DeepEnhanced;
  o.filter_length = c.k;
  o.conv_activation = enum_from_name<ConvActivation>(c.act).value();
  auto cell = std::make_shared<CRUCellImpl>(o);
  cell->set_candidate_dropout(c.dropout);
  return cell;
}

struct Result {
  torch::Tensor out, state;
  std::vector<std::pair<std::string, torch::Tensor>> grads;  // parameters, then "x", "h0"
  std::string node;                                          // grad_fn of the output
};

Result run(CellImpl& cell, const torch::Tensor& x0, const torch::Tensor& h00, bool stepwise, bool training) {
  cell.train(training);
  auto x = x0.clone().requires_grad_(true);
  auto h0 = h00.clone().requires_grad_(true);
  for (auto& p : cell.parameters()) p.mutable_grad() = torch::Tensor();
  StepContext ctx;
  ctx.stepwise = stepwise;
  torch::manual_seed(5);  // same dropout masks both ways (drawn in step order)
  auto so = cell.forward_sequence(x, {h0}, ctx);
  torch::manual_seed(6);
  // drawn in double whatever the dtype (randn draws other numbers in float): a float run and the
  // double run of the same weights compute the same loss
  auto w = torch::randn(so.output.sizes(), torch::kDouble).to(so.output.scalar_type());
  auto w2 = torch::randn(so.state[0].sizes(), torch::kDouble).to(so.state[0].scalar_type());
  ((so.output * w).sum() + (so.state[0] * w2).sum()).backward();
  Result r;
  r.out = so.output.detach();
  r.state = so.state[0].detach();
  r.node = so.output.grad_fn() ? so.output.grad_fn()->name() : "";
  for (auto& p : cell.named_parameters())
    r.grads.emplace_back(p.key(), p.value().grad().defined() ? p.value().grad().clone() : torch::Tensor());
  r.grads.emplace_back("x", x.grad().clone());
  r.grads.emplace_back("h0", h0.grad().clone());
  return r;
}

double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-30);
  return (a - b).abs().max().item<double>() / scale;
}

bool is_fast(const Result& r) { return r.node.find("GRURecurrenceFn") != std::string::npos; }

void expect_agree(const Case& c, torch::Dtype dt, double tol) {
  const int64_t T = 7, B = 3, I = 5, H = 6;
  auto cell = make_cell(c, I, H);
  cell->to(dt);
  torch::manual_seed(3);
  auto x = torch::randn({T, B, I}, dt);
  auto h0 = torch::randn({B, H}, dt) * 0.5;
  auto fast = run(*cell, x, h0, false, c.training);
  auto ref = run(*cell, x, h0, true, c.training);
  // float: the gradients against the step-wise path in double on the same weights, inputs and
  // dropout masks, the fast path within the step-wise float path's own error there
  // (cstest::float_tolerance), not within a fixed bound of another float path
  Result exact = ref;
  if (dt != torch::kDouble) {
    cell->to(torch::kDouble);
    exact = run(*cell, x.to(torch::kDouble), h0.to(torch::kDouble), true, c.training);
    cell->to(dt);
  }
  ASSERT_TRUE(is_fast(fast)) << c.name() << ": the fast path did not run (" << fast.node << ")";
  ASSERT_FALSE(is_fast(ref)) << c.name();
  EXPECT_LT(rel_err(fast.out, ref.out), tol) << c.name() << " output";
  EXPECT_LT(rel_err(fast.state, ref.state), tol) << c.name() << " state";
  ASSERT_EQ(fast.grads.size(), ref.grads.size());
  ASSERT_EQ(exact.grads.size(), ref.grads.size());
  for (size_t i = 0; i < fast.grads.size(); ++i) {
    const auto& [n, g] = fast.grads[i];
    const auto& gr = ref.grads[i].second;
    ASSERT_EQ(g.defined(), gr.defined()) << c.name() << " grad of " << n;
    if (!g.defined()) continue;
    EXPECT_GT(gr.abs().max().item<double>(), 0) << c.name() << " grad of " << n << " is zero in the reference";
    if (dt != torch::kDouble) {
      const auto& ex = exact.grads[i].second;
      const double fast_err = rel_err(g.to(torch::kDouble), ex), ref_err = rel_err(gr.to(torch::kDouble), ex);
      EXPECT_LE(fast_err, cstest::float_tolerance(ref_err, tol))
          << c.name() << " grad of " << n << ": fast " << fast_err << ", step-wise " << ref_err << " from double";
      continue;
    }
    EXPECT_LT(rel_err(g, gr), tol) << c.name() << " grad of " << n;
  }
}

std::vector<Case> claimed_cases() {
  std::vector<Case> cs;
  for (int64_t depth : {0, 1, 2})
    for (bool share : {false, true})
      for (bool ln : {false, true})
        for (double p : {0.0, 0.5}) {
          if (share && depth < 2) continue;
          Case c;
          c.cell = "gru_dt";
          c.depth = depth;
          c.share = share;
          c.layer_norm = ln;
          c.dropout = p;
          cs.push_back(c);
        }
  {
    Case c;  // the MZU paper's baseline in evaluation mode (dropout off by is_training)
    c.cell = "gru_dt";
    c.share = true;
    c.layer_norm = true;
    c.dropout = 0.5;
    c.training = false;
    cs.push_back(c);
  }
  for (const char* cell : {"cru_shallow", "cru_deep", "cru_deep_enhanced"})
    for (int64_t k : {1, 3, 4})
      for (double p : {0.0, 0.5}) {
        Case c;
        c.cell = cell;
        c.k = k;
        c.dropout = p;
        c.act = k == 4 ? "tanh" : k == 1 ? "identity" : "relu";
        cs.push_back(c);
      }
  return cs;
}

}  // namespace

TEST(FusedCells, SwitchAndWhitelist) {
  BaselineOptions o;
  StepContext ctx;
  EXPECT_TRUE(gru_dt_fast_path_applies(o, ctx));
  ctx.stepwise = true;
  EXPECT_FALSE(gru_dt_fast_path_applies(o, ctx));
  ctx.stepwise = false;
  Probe probe;
  ctx.probe = &probe;
  EXPECT_FALSE(gru_dt_fast_path_applies(o, ctx));
  ctx.probe = nullptr;
  CRUOptions co;
  EXPECT_TRUE(cru_fast_path_applies(co, 0.0, ctx));
  co.reset_after = false;  // U (r * h): not implemented by the fast path
  EXPECT_FALSE(cru_fast_path_applies(co, 0.0, ctx));
  co.reset_after = true;
  EXPECT_FALSE(cru_fast_path_applies(co, 1.0, ctx));

  setenv("CELLSCOPE_FAST", "0", 1);
  EXPECT_FALSE(fast_paths_enabled());
  EXPECT_FALSE(gru_dt_fast_path_applies(o, ctx));
  EXPECT_FALSE(cru_fast_path_applies(co, 0.0, ctx));
  Case c;
  c.cell = "gru_dt";
  auto cell = make_cell(c, 4, 5);
  auto r = run(*cell, torch::randn({3, 2, 4}), torch::zeros({2, 5}), false, true);
  EXPECT_FALSE(is_fast(r)) << r.node;
  setenv("CELLSCOPE_FAST", "1", 1);
  EXPECT_TRUE(fast_paths_enabled());
  r = run(*cell, torch::randn({3, 2, 4}), torch::zeros({2, 5}), false, true);
  EXPECT_TRUE(is_fast(r)) << r.node;
  unsetenv("CELLSCOPE_FAST");
  EXPECT_TRUE(fast_paths_enabled());
}

TEST(FusedCells, AgreesWithAutogradDouble) {
  for (const auto& c : claimed_cases()) expect_agree(c, torch::kDouble, 1e-10);
}

TEST(FusedCells, AgreesWithAutogradFloat) {
  for (const auto& c : claimed_cases()) expect_agree(c, torch::kFloat, 1e-4);
}

TEST(FusedCells, AgreesWhenBackwardRunsInChunks) {
  // The backward's weight gradients are summed chunk by chunk (gru_tuning().chunk_rows rows of
  // steps x B): with B = 3, T = 7, 5 rows are chunks of 2 steps ([5,7), [3,5), [1,3) and a partial
  // [0,1) that reads h0), 1 row one step per chunk, 12 rows [3,7) and a partial [0,3).
  auto& tune = fused::gru_tuning();
  const auto saved = tune;
  for (int64_t rows : {1, 5, 12}) {
    tune.chunk_rows = rows;
    for (const auto& c : claimed_cases()) expect_agree(c, torch::kDouble, 1e-10);
  }
  tune = saved;
}

TEST(FusedCells, ProbeAndStepwiseUseTheReference) {
  Case c;
  c.cell = "cru_deep";
  auto cell = make_cell(c, 4, 5);
  StepContext ctx;
  Probe probe;
  ctx.probe = &probe;
  auto so = cell->forward_sequence(torch::randn({3, 2, 4}), cell->initial_state(2, torch::TensorOptions()), ctx);
  EXPECT_TRUE(probe.has("candidate"));
}

TEST(FusedCells, SavedBuffersAreReleasedByTheFirstBackward) {
  // The recurrence's saved buffers (outputs of earlier stages, gates, U h, LN and dropout state)
  // must not outlive its backward: held by the graph, they stayed referenced through every later
  // node's backward (the CRUs' convolutions), where the workspace pool could not reuse them.
  // With the graph kept (retain_graph), only the output itself may still hold a pooled buffer
  // after the first backward, and a second backward is refused with a message.
  auto& tune = fused::pool_tuning();
  const auto saved = tune;
  tune.min_bytes = 0;  // every buffer pooled, so that the pool's counts see them all
  for (const std::string cell_name : {"gru_dt", "cru_deep"}) {
    fused::pool_release();
    Case c;
    c.cell = cell_name;
    c.depth = cell_name == "gru_dt" ? 1 : 0;
    c.layer_norm = cell_name == "gru_dt";
    c.dropout = cell_name == "gru_dt" ? 0.5 : 0.0;
    auto cell = make_cell(c, 4, 5);
    cell->train(true);
    StepContext ctx;
    auto x = torch::randn({6, 2, 4}, torch::requires_grad());
    auto so = cell->forward_sequence(x, cell->initial_state(2, torch::TensorOptions()), ctx);
    const auto before = fused::pool_stats();
    EXPECT_GE(before.held - before.free, 3) << cell_name << ": the fast path did not run (no pooled buffers lent)";
    auto loss = so.output.sum();
    loss.backward({}, /*retain_graph=*/true);
    const auto after = fused::pool_stats();
    EXPECT_LE(after.held - after.free, 1) << cell_name << ": pooled buffers still lent after the backward";
    try {
      loss.backward();
      FAIL() << cell_name << ": a second backward through the fused recurrence went through";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("backward through the same graph twice"), std::string::npos) << e.what();
    }
  }
  tune = saved;
}

TEST(FusedCells, FiniteDifferences) {
  std::vector<Case> cases;
  for (bool ln : {false, true}) {
    Case c;
    c.cell = "gru_dt";
    c.depth = 2;
    c.layer_norm = ln;
    c.dropout = 0.3;
    cases.push_back(c);
  }
  for (const char* n : {"cru_shallow", "cru_deep", "cru_deep_enhanced"}) {
    Case c;
    c.cell = n;
    c.act = "tanh";
    c.dropout = 0.3;
    cases.push_back(c);
  }
  for (const auto& c : cases) {
    const int64_t T = 4, B = 2, I = 3, H = 4;
    auto cell = make_cell(c, I, H);
    cell->to(torch::kDouble);
    cell->train(true);
    torch::manual_seed(9);
    auto x = torch::randn({T, B, I}, torch::kDouble).requires_grad_(true);
    auto h0 = (torch::randn({B, H}, torch::kDouble) * 0.5).requires_grad_(true);
    auto w = torch::randn({T, B, H}, torch::kDouble);
    bool fast = true;
    auto loss = [&]() {
      StepContext ctx;
      torch::manual_seed(21);  // the same dropout masks at every evaluation
      auto so = cell->forward_sequence(x, {h0}, ctx);
      // (the finite differences run under NoGradGuard: only the analytic pass has a grad_fn)
      if (torch::GradMode::is_enabled() &&
          (!so.output.grad_fn() || so.output.grad_fn()->name().find("GRURecurrenceFn") == std::string::npos))
        fast = false;
      return (so.output * w).sum() + so.state[0].pow(2).sum();
    };
    auto r = cstest::grad_check(*cell, loss, {x, h0}, 1000);
    EXPECT_TRUE(fast) << c.name();
    EXPECT_GT(r.checked, 50) << c.name();
    EXPECT_LT(r.max_rel_err, 1e-6) << c.name() << " worst " << r.worst;
  }
}

// A tiny model (cell + linear readout) trained 150 Adam steps on a fixed synthetic sequence task
// (predict a smoothed, delayed copy of the input), once with the fast path and once with
// CELLSCOPE_FAST=0, same seed: the losses agree within float noise, and the training learned.
TEST(FusedCells, ShortTrainingSameLoss) {
  for (const char* name : {"gru_dt", "cru_deep_enhanced"}) {
    Case c;
    c.cell = name;
    c.share = true;
    c.layer_norm = std::string(name) == "gru_dt";
    c.dropout = 0.2;
    const int64_t T = 12, B = 8, I = 6, H = 16;
    auto train = [&](bool fast) {
      if (!fast) setenv("CELLSCOPE_FAST", "0", 1);
      auto cell = make_cell(c, I, H);
      torch::manual_seed(1);
      auto readout = torch::nn::Linear(H, I);
      std::vector<torch::Tensor> params = cell->parameters();
      for (auto& p : readout->parameters()) params.push_back(p);
      torch::optim::Adam opt(params, torch::optim::AdamOptions(3e-3));
      torch::manual_seed(2);
      auto data = torch::randn({T + 2, B, I});
      auto x = data.narrow(0, 2, T);
      auto y = 0.5 * (data.narrow(0, 0, T) + data.narrow(0, 1, T));
      cell->train(true);
      double first = 0, last = 0;
      torch::manual_seed(4);
      for (int step = 0; step < 150; ++step) {
        StepContext ctx;
        auto so = cell->forward_sequence(x, cell->initial_state(B, x.options()), ctx);
        EXPECT_EQ(so.output.grad_fn()->name().find("GRURecurrenceFn") != std::string::npos, fast);
        auto loss = torch::mse_loss(readout->forward(so.output), y);
        opt.zero_grad();
        loss.backward();
        opt.step();
        if (step == 0) first = loss.item<double>();
        last = loss.item<double>();
      }
      unsetenv("CELLSCOPE_FAST");
      return std::make_pair(first, last);
    };
    auto f = train(true);
    auto s = train(false);
    EXPECT_NEAR(f.first, s.first, 1e-5 * f.first) << name;
    EXPECT_NEAR(f.second, s.second, 1e-3 * s.second) << name;
    EXPECT_LT(f.second, 0.7 * f.first) << name << ": did not learn";
  }
}

// The workspace pool (fused_common.h): with every buffer pooled (threshold 0), a second
// training call reuses the first one's released buffers and computes the same thing, and a
// buffer that something still refers to (an output kept alive, its graph) is never handed out.
TEST(FusedCells, WorkspacePoolReusesOnlyReleasedBuffers) {
  auto& tune = fused::pool_tuning();
  const auto saved = tune;
  tune.min_bytes = 0;
  fused::pool_release();
  Case c;
  c.cell = "gru_dt";
  c.layer_norm = true;
  c.share = true;
  auto cell = make_cell(c, 5, 6);
  cell->to(torch::kDouble);
  torch::manual_seed(3);
  auto x = torch::randn({7, 3, 5}, torch::kDouble);
  auto h0 = torch::randn({3, 6}, torch::kDouble);
  const Result first = run(*cell, x, h0, false, true);
  ASSERT_TRUE(is_fast(first));
  const auto s1 = fused::pool_stats();
  EXPECT_GT(s1.allocated, 0);
  // every buffer of the finished call is free again but its output, which `first` still views
  EXPECT_EQ(s1.held - s1.free, 1);
  const Result second = run(*cell, x, h0, false, true);
  const auto s2 = fused::pool_stats();
  EXPECT_GT(s2.reused, s1.reused) << "the second call allocated afresh instead of reusing";
  EXPECT_EQ(s2.allocated, s1.allocated + 1) << "same shapes: only a new output buffer (first's is alive)";
  EXPECT_EQ(rel_err(second.out, first.out), 0.0);
  for (size_t i = 0; i < first.grads.size(); ++i)
    if (first.grads[i].second.defined()) {
      EXPECT_EQ(rel_err(second.grads[i].second, first.grads[i].second), 0.0) << first.grads[i].first;
    }

  // Outputs still alive: a new call must not write into their storage.
  cell->train(true);
  StepContext ctx;
  auto held = cell->forward_sequence(x, {h0}, ctx);
  const auto kept = held.output.detach().clone();
  auto other = cell->forward_sequence(x * 2, {h0}, ctx);
  EXPECT_NE(other.output.data_ptr(), held.output.data_ptr());
  EXPECT_EQ(rel_err(held.output.detach(), kept), 0.0) << "a live output was overwritten by a pooled buffer";
  EXPECT_LT(fused::pool_stats().free, fused::pool_stats().held) << "buffers of live graphs counted as free";
  held = SeqOutput();
  other = SeqOutput();
  EXPECT_EQ(fused::pool_stats().held - fused::pool_stats().free, 2) << "only first's and second's outputs";
  fused::pool_release();
  EXPECT_EQ(fused::pool_stats().held, 2);
  tune = saved;
}

// The core is built with OpenMP (core/CMakeLists.txt): ATen's parallel_for, a header template,
// forks only where _OPENMP is defined, and without it every fast path's parallel_for ran on
// one thread. At 2 intra-op threads a parallel_for over 8 items in core code uses both.
TEST(FusedCells, CoreParallelForUsesTheIntraOpThreads) {
  const int old = at::get_num_threads();
  at::set_num_threads(2);
  const int used = fused::parallel_threads_used(8);
  at::set_num_threads(1);
  const int single = fused::parallel_threads_used(8);
  at::set_num_threads(old);
#if defined(__GNUC__) && !defined(__clang__) && !defined(CELLSCOPE_TORCH_OWN_GOMP)
  // the GCC build (the one users and benchmarks run) must have it: core/CMakeLists.txt (not against a
  // LibTorch that carries its own OpenMP runtime, a PyTorch wheel's: the top-level CMakeLists.txt)
  EXPECT_TRUE(fused::core_has_openmp());
#endif
  if (fused::core_has_openmp()) EXPECT_EQ(used, 2) << "core code's at::parallel_for ran on one thread";
  else EXPECT_EQ(used, 1);  // a clang build (the sanitizer stage) keeps the core serial
  EXPECT_EQ(single, 1);
}

}  // namespace test_fused_cells
