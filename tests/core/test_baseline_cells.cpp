// Baseline cells: gradient checks, fused vs step-wise agreement, agreement with torch::nn::GRU/LSTM.
#include <gtest/gtest.h>

#include <torch/nn/modules/rnn.h>

#include "cells/baseline.h"
#include "cells/registry.h"
#include "config/schema.h"
#include "cells/stack.h"
#include "gradcheck.h"
#include "harness.h"

namespace test_baseline_cells {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::shared_ptr<CellImpl> make(const std::string& cell, json extra = json::object(), int64_t in = 5, int64_t hid = 4) {
  json m = {{"cell", cell}, {"hidden", hid}, {"embed", in}};
  m.update(extra);
  return cell_info(cell).make(resolve_config(json{{"model", m}})["model"], in, 0);  // make() takes a resolved section
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

// Qt Test's data-driven rows as parameterised tests: BaselineCells/Gradients.gradients/<cell>[_ln].
struct GradientsRow {
  std::string cell;
  bool layerNorm;
};
void PrintTo(const GradientsRow& r, std::ostream* os) { *os << r.cell << (r.layerNorm ? "+ln" : ""); }
class Gradients : public ::testing::TestWithParam<GradientsRow> {};
INSTANTIATE_TEST_SUITE_P(BaselineCells, Gradients,
                         ::testing::Values(GradientsRow{"rnn", false}, GradientsRow{"rnn", true},
                                           GradientsRow{"gru", false}, GradientsRow{"gru", true},
                                           GradientsRow{"lstm", false}, GradientsRow{"lstm", true},
                                           GradientsRow{"gru_dt", false}, GradientsRow{"gru_dt", true}),
                         [](const ::testing::TestParamInfo<GradientsRow>& i) {
                           return i.param.cell + (i.param.layerNorm ? "_ln" : "");
                         });

TEST_P(Gradients, gradients) {
  const std::string cell = GetParam().cell;
  const bool layerNorm = GetParam().layerNorm;
  torch::manual_seed(3);
  auto c = make(cell, {{"layer_norm", layerNorm}, {"depth", 2}});
  c->to(torch::kFloat64);
  auto x = torch::randn({6, 3, 5}, torch::kFloat64).requires_grad_(true);
  auto w = torch::randn({6, 3, 4}, torch::kFloat64);
  auto s0 = c->initial_state(3, torch::TensorOptions().dtype(torch::kFloat64));
  for (auto& t : s0) t.normal_();
  auto loss = [&] {
    StepContext ctx;
    ctx.stepwise = true;
    auto out = c->forward_sequence(x, s0, ctx);
    return (out.output * w).sum() + out.state[0].pow(2).sum();
  };
  auto r = cstest::grad_check(*c, loss, {x});
  ASSERT_TRUE(r.checked > 20) << "too few entries checked";
  ASSERT_TRUE(r.max_rel_err < 1e-5) << "worst " << r.worst << " rel err " << r.max_rel_err;
  // The fused path (when the cell has one) gives the same gradients as the step-wise one.
  if (!layerNorm && cell != "gru_dt") {
    c->zero_grad();
    StepContext fast;
    auto o1 = c->forward_sequence(x, s0, fast);
    ((o1.output * w).sum()).backward();
    std::vector<torch::Tensor> g1;
    for (auto& p : c->parameters()) g1.push_back(p.grad().clone());
    c->zero_grad();
    StepContext slow;
    slow.stepwise = true;
    auto o2 = c->forward_sequence(x, s0, slow);
    ((o2.output * w).sum()).backward();
    auto ps = c->parameters();
    for (size_t i = 0; i < ps.size(); ++i) ASSERT_TRUE(max_diff(g1[i], ps[i].grad()) < 1e-9);
  }
}

// BaselineCells/FusedMatchesStepwise.fusedMatchesStepwise/<cell>
class FusedMatchesStepwise : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(BaselineCells, FusedMatchesStepwise, ::testing::Values("rnn", "gru", "lstm"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST_P(FusedMatchesStepwise, fusedMatchesStepwise) {
  const std::string cell = GetParam();
  torch::manual_seed(1);
  auto c = make(cell, json::object(), 16, 32);
  auto x = torch::randn({40, 8, 16});
  auto s0 = c->initial_state(8, torch::TensorOptions());
  for (auto& t : s0) t.uniform_(-0.5, 0.5);
  torch::NoGradGuard ng;
  StepContext fast, slow;
  slow.stepwise = true;
  auto a = c->forward_sequence(x, s0, fast);
  auto b = c->forward_sequence(x, s0, slow);
  ASSERT_TRUE(max_diff(a.output, b.output) < 1e-5) << max_diff(a.output, b.output);
  for (size_t i = 0; i < a.state.size(); ++i) ASSERT_TRUE(max_diff(a.state[i], b.state[i]) < 1e-5);
}

TEST(BaselineCells, gruMatchesTorchGRU) {
  torch::manual_seed(2);
  auto c = std::dynamic_pointer_cast<GRUCellImpl>(make("gru", json::object(), 10, 12));
  ASSERT_TRUE(c);
  torch::nn::GRU ref(torch::nn::GRUOptions(10, 12));
  {
    torch::NoGradGuard ng;
    ref->named_parameters()["weight_ih_l0"].copy_(c->w_ih);
    ref->named_parameters()["weight_hh_l0"].copy_(c->w_hh);
    ref->named_parameters()["bias_ih_l0"].copy_(c->b_ih);
    ref->named_parameters()["bias_hh_l0"].copy_(c->b_hh);
  }
  auto x = torch::randn({25, 4, 10});
  auto h0 = torch::randn({4, 12}) * 0.3;
  torch::NoGradGuard ng;
  auto [yr, hr] = ref->forward(x, h0.unsqueeze(0));
  for (bool stepwise : {false, true}) {
    StepContext ctx;
    ctx.stepwise = stepwise;
    auto out = c->forward_sequence(x, {h0}, ctx);
    ASSERT_TRUE(max_diff(out.output, yr) < 1e-5) << max_diff(out.output, yr);
    ASSERT_TRUE(max_diff(out.state[0], hr.squeeze(0)) < 1e-5);
  }
}

TEST(BaselineCells, lstmMatchesTorchLSTM) {
  torch::manual_seed(4);
  auto c = std::dynamic_pointer_cast<LSTMCellImpl>(make("lstm", json::object(), 6, 7));
  torch::nn::LSTM ref(torch::nn::LSTMOptions(6, 7));
  {
    torch::NoGradGuard ng;
    ref->named_parameters()["weight_ih_l0"].copy_(c->w_ih);
    ref->named_parameters()["weight_hh_l0"].copy_(c->w_hh);
    ref->named_parameters()["bias_ih_l0"].copy_(c->b_ih);
    ref->named_parameters()["bias_hh_l0"].copy_(c->b_hh);
  }
  auto x = torch::randn({9, 3, 6});
  // The reference with gradients on: without them Debian 13's LibTorch 2.6 runs torch::nn::LSTM through its
  // oneDNN, which gets it wrong there (cells/baseline.cpp, onednn_lstm_unsound); with them it is the equations.
  auto out = std::get<0>(ref->forward(x)).detach();
  torch::NoGradGuard ng;
  for (bool stepwise : {true, false}) {  // the equations, and at::lstm with the probe's choice of kernel
    StepContext ctx;
    ctx.stepwise = stepwise;
    auto mine = c->forward_sequence(x, c->initial_state(3, torch::TensorOptions()), ctx);
    ASSERT_TRUE(max_diff(mine.output, out) < 1e-5) << (stepwise ? "stepwise " : "fused ") << max_diff(mine.output, out);
  }
}

TEST(BaselineCells, probeRecordsInternals) {
  auto c = make("gru");
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  auto x = torch::randn({7, 2, 5});
  auto out = c->forward_sequence(x, c->initial_state(2, torch::TensorOptions()), ctx);
  ASSERT_TRUE(probe.has("candidate") && probe.has("gate") && probe.has("h"));
  ASSERT_EQ(probe.stacked("candidate").sizes().vec(), (std::vector<int64_t>{7, 2, 4}));
  // the recorded h is the output
  ASSERT_TRUE(max_diff(probe.stacked("h"), out.output.detach()) < 1e-6);
  // gate g = 1 - z lies in (0, 1)
  auto g = probe.stacked("gate");
  ASSERT_TRUE(g.min().item<double>() > 0 && g.max().item<double>() < 1);
}

TEST(BaselineCells, gruDtZeroInputTransitionsAndSharing) {
  // With sharing the parameter count does not grow with depth; without, it grows by one
  // hidden-only GRU (3H*H + 2*3H) per extra depth.
  auto count = [](const std::shared_ptr<CellImpl>& c) {
    int64_t n = 0;
    for (auto& p : c->parameters()) n += p.numel();
    return n;
  };
  const int64_t H = 4, I = 5;
  const int64_t gru = 3 * H * I + 3 * H * H + 6 * H, trans = 3 * H * H + 6 * H;
  ASSERT_EQ(count(make("gru_dt", {{"depth", 0}})), gru);
  ASSERT_EQ(count(make("gru_dt", {{"depth", 1}, {"share_transition", false}})), gru + trans);
  ASSERT_EQ(count(make("gru_dt", {{"depth", 3}, {"share_transition", false}})), gru + 3 * trans);
  // shared (the default, as the MZU paper on PTB): the transition GRUs are the first GRU, so
  // sharing matters already at L = 1 (sharing only among the transition GRUs would not)
  ASSERT_EQ(count(make("gru_dt", {{"depth", 1}})), gru);
  ASSERT_EQ(count(make("gru_dt", {{"depth", 3}, {"share_transition", true}})), gru);
  // depth 0 is exactly a GRU with the same weights
  torch::manual_seed(5);
  auto dt = std::dynamic_pointer_cast<GRUDTCellImpl>(make("gru_dt", {{"depth", 0}}));
  auto x = torch::randn({5, 2, I});
  torch::NoGradGuard ng;
  StepContext a, b;
  b.stepwise = true;
  auto o1 = dt->forward_sequence(x, dt->initial_state(2, torch::TensorOptions()), a);
  auto o2 = dt->first->forward_sequence(x, dt->initial_state(2, torch::TensorOptions()), b);
  ASSERT_TRUE(max_diff(o1.output, o2.output) < 1e-6);
}

TEST(BaselineCells, gruDtSharedTransitionIsTheFirstGruWithZeroInput) {
  // L = 1 shared: per step h' = GRU(x_t, h), then h'' = GRU(0, h') with the SAME weights
  // (MZU paper eqs. 15-17 with the M-functions replaced by the GRU's maps, shared across
  // depths). Hand computation from the first GRU's parameters, torch's gate order (r, z, n).
  torch::manual_seed(8);
  const int64_t H = 4, I = 5, B = 2, T = 3;
  auto dt = std::dynamic_pointer_cast<GRUDTCellImpl>(make("gru_dt", {{"depth", 1}, {"share_transition", true}}));
  ASSERT_TRUE(dt);
  ASSERT_EQ(dt->transitions.size(), size_t(1));
  ASSERT_TRUE(dt->transitions[0].get() == dt->first.get());
  auto x = torch::randn({T, B, I});
  torch::NoGradGuard ng;
  StepContext ctx;
  auto out = dt->forward_sequence(x, dt->initial_state(B, torch::TensorOptions()), ctx).output;
  const auto& g = *dt->first;
  auto gru = [&](const torch::Tensor& xin, const torch::Tensor& h) {  // xin: [B, I] or undefined (zero input)
    auto gi = xin.defined() ? torch::matmul(xin, g.w_ih.t()) + g.b_ih : g.b_ih.expand({B, 3 * H});
    auto gh = torch::matmul(h, g.w_hh.t()) + g.b_hh;
    auto r = torch::sigmoid(gi.narrow(1, 0, H) + gh.narrow(1, 0, H));
    auto z = torch::sigmoid(gi.narrow(1, H, H) + gh.narrow(1, H, H));
    auto n = torch::tanh(gi.narrow(1, 2 * H, H) + r * gh.narrow(1, 2 * H, H));
    return (1 - z) * n + z * h;
  };
  auto h = torch::zeros({B, H});
  for (int64_t t = 0; t < T; ++t) {
    h = gru(torch::Tensor(), gru(x.select(0, t), h));  // the GRU on x_t, then the same GRU on a zero input
    ASSERT_TRUE(max_diff(out.select(0, t), h) < 1e-5) << t;
  }
}

TEST(BaselineCells, everyParameterReceivesAGradient) {
  // A parameter that never gets a gradient is dead weight that the parameter counts of the
  // tables would still include (the GRU+DT transition GRUs once registered input-LN gains for
  // an input they never have). Every cell and option combination the presets use.
  const std::vector<std::pair<std::string, json>> rows = {
      {"gru", {{"layer_norm", true}}},
      {"lstm", {{"layer_norm", true}}},
      {"gru_dt", {{"depth", 2}, {"share_transition", false}, {"layer_norm", true}}},
      {"gru_dt", {{"depth", 2}, {"share_transition", false}, {"layer_norm", false}}},
      {"gru_dt", {{"depth", 1}, {"share_transition", true}, {"layer_norm", true}}}};
  for (auto& [cell, extra] : rows) {
    torch::manual_seed(4);
    auto c = make(cell, extra);
    auto x = torch::randn({4, 2, 5});
    StepContext ctx;
    ctx.stepwise = true;
    auto out = c->forward_sequence(x, c->initial_state(2, torch::TensorOptions()), ctx);
    (out.output * torch::randn_like(out.output)).sum().backward();
    for (auto& p : c->named_parameters()) {
      if (p.value().numel() == 0) continue;  // a transition GRU's [3H, 0] w_ih: no weights to train or count
      ASSERT_TRUE(p.value().grad().defined()) << cell << " " << extra.dump() << ": " << p.key() << " has no gradient";
      ASSERT_GT(p.value().grad().abs().sum().item<double>(), 0.0)
          << cell << " " << extra.dump() << ": " << p.key() << " has a zero gradient";
    }
  }
}

TEST(BaselineCells, candidateDropoutOnlyInTraining) {
  torch::manual_seed(6);
  auto c = make("gru", {{"candidate_dropout", 0.5}});
  auto x = torch::randn({5, 3, 5});
  torch::NoGradGuard ng;
  c->eval();
  StepContext e1, e2;
  auto a = c->forward_sequence(x, c->initial_state(3, torch::TensorOptions()), e1);
  auto b = c->forward_sequence(x, c->initial_state(3, torch::TensorOptions()), e2);
  ASSERT_TRUE(max_diff(a.output, b.output) == 0);
  c->train();
  Probe p;
  StepContext t;
  t.probe = &p;
  c->forward_sequence(x, c->initial_state(3, torch::TensorOptions()), t);
  auto cand = p.stacked("candidate");
  const double zeros = (cand == 0).to(torch::kFloat64).mean().item<double>();
  ASSERT_TRUE(zeros > 0.3 && zeros < 0.7) << zeros;
}

TEST(BaselineCells, stackShapesAndDropout) {
  json m = {{"cell", "lstm"}, {"hidden", 6}, {"layers", 3}, {"dropout", 0.0}, {"embed", 5}};
  CellStack s(resolve_config(json{{"model", m}})["model"], 5);
  ASSERT_EQ(static_cast<int>(s->layers.size()), 3);
  auto st = s->initial_state(2, torch::TensorOptions());
  StepContext ctx;
  auto y = s->forward(torch::randn({4, 2, 5}), st, ctx);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{4, 2, 6}));
  ASSERT_EQ(static_cast<int>(st[2].size()), 2);  // LSTM state {h, c}
}

}  // namespace test_baseline_cells
