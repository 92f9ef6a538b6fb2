// MZU family (sat_mzu, gcn_mzu, cap_mzu): gradients, composition invariants, zone
// disagreement, parameter counts (sharing, ablations, paper presets), probed vs fast
// path, config validation, and a short char-LM run on the default corpus.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "cells/mzu.h"
#include "cells/registry.h"
#include "config/schema.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "train/trainer.h"
#include "util/paths.h"

namespace test_mzu {  // this file's own names in a unity build (tests/README.md)

using namespace cs;
using Pairs = DisagreementPairs;
using Form = DisagreementForm;

namespace {

MZUOptions tiny(const std::string& comp, int64_t N = 2, int64_t H = 8) {
  MZUOptions o;
  o.composition = enum_from_name<MZUComposition>(comp).value();
  o.input_size = 3;
  o.hidden_size = H;
  o.zones = N;
  o.filter = 6;
  o.capsules = 2;
  o.routing_iters = 3;
  // the tests below choose these themselves (the defaults are the paper's DT, lambda 1, shared Q/K/V)
  o.depth = 0;
  o.share_transition = false;
  o.zone_disagreement = 0;
  o.sat_qkv = SatQkv::PerZone;
  return o;
}

int64_t count_params(torch::nn::Module& m) {
  int64_t n = 0;
  for (auto& p : m.parameters()) n += p.numel();
  return n;
}

// Finite-difference check of every parameter entry (double precision, central
// differences) against autograd. Returns the worst relative error and where it is.
struct GC {
  double worst = 0;
  std::string where;
  int64_t checked = 0;
};
GC grad_check(torch::nn::Module& m, const std::function<torch::Tensor()>& loss, double eps = 1e-6) {
  GC r;
  m.zero_grad();
  auto l = loss();
  l.backward();
  for (auto& np : m.named_parameters()) {
    auto p = np.value();
    auto g = p.grad().defined() ? p.grad().clone() : torch::zeros_like(p);
    auto flat = p.detach().view({-1});  // shares storage with the parameter
    auto gf = g.view({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double orig = flat[i].item<double>();
      {
        torch::NoGradGuard ng;
        flat[i] = orig + eps;
      }
      const double lp = loss().item<double>();  // grad mode on: the cell adds eq. 19's term
      {
        torch::NoGradGuard ng;
        flat[i] = orig - eps;
      }
      const double lm = loss().item<double>();
      {
        torch::NoGradGuard ng;
        flat[i] = orig;
      }
      const double num = (lp - lm) / (2 * eps), ana = gf[i].item<double>();
      const double rel = std::abs(num - ana) / std::max({std::abs(num), std::abs(ana), 1e-3});
      ++r.checked;
      if (rel > r.worst) {
        r.worst = rel;
        r.where = np.key() + "[" + std::to_string(i) + "] num " + std::to_string(num) + " ana " + std::to_string(ana);
      }
    }
  }
  return r;
}

// Gradient check of a whole cell over a short sequence: loss = <w, outputs> + extra loss.
void check_cell_gradients(const MZUOptions& o, const char* what) {
  torch::manual_seed(7);
  auto cell = std::make_shared<MZUCellImpl>(o);
  cell->to(torch::kDouble);
  cell->train();
  auto x = torch::randn({3, 2, o.input_size}, torch::kDouble);
  auto s0 = torch::randn({2, o.hidden_size}, torch::kDouble) * 0.5;
  auto w = torch::randn({3, 2, o.hidden_size}, torch::kDouble);
  auto loss = [&] {
    StepContext ctx;
    auto out = cell->forward_sequence(x, {s0}, ctx);
    auto l = (out.output * w).sum();
    if (o.zone_disagreement != 0) {
      if (!ctx.extra_loss.defined()) throw std::runtime_error("no zone disagreement term in the loss");
      l = l + ctx.extra_loss;
    }
    return l;
  };
  auto r = grad_check(*cell, loss);
  ASSERT_TRUE(r.checked > 100) << what;
  ASSERT_TRUE(r.worst < 1e-5)
      << (std::string(what) + ": worst rel. error " + std::to_string(r.worst) + " at " + r.where).c_str();
}

// Expected parameter count of one MZU depth, written from the paper's shapes.
int64_t block_params(const MZUOptions& o, int64_t I) {
  const int64_t H = o.hidden_size, N = o.zones, dz = H / N, D = o.filter;
  const int64_t K = (!o.regular_trans) + (!o.regular_gate), R = 2 - K;
  const int64_t J = o.composition == MZUComposition::Cap ? o.capsules : N, Do = H / J;
  int64_t n = (K + R) * H * (I + H) + R * H;  // eq. 4 zones (no bias) + regular maps with bias
  if (o.composition == MZUComposition::Sat) n += K * (o.sat_qkv == SatQkv::Shared ? 1 : N) * 3 * dz * dz;
  if (o.composition == MZUComposition::Gcn) n += K * dz * dz;
  if (o.composition == MZUComposition::Cap) n += K * J * dz * Do;
  n += K * (Do * D + D + D * Do + Do);  // eq. 5
  n += K * (H * H + H);                 // concat -> linear to d_h
  if (o.layer_norm) n += 2 * 2 * H;     // gain + bias for the candidate's and the gate's pre-activations
  return n;
}

int64_t cell_params(const MZUOptions& o) {
  int64_t n = block_params(o, o.input_size);
  if (!o.share_transition) n += o.depth * block_params(o, 0);
  return n;
}

}  // namespace

// Qt Test's initTestCase: once, before the first test of this file.
class Mzu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { torch::set_num_threads(1); }
};

TEST_F(Mzu, gradients_per_composition) {
  {
    auto o = tiny("sat");
    o.layer_norm = true;
    o.zone_disagreement = 0.7;
    check_cell_gradients(o, "sat");
    o.sat_qkv = SatQkv::Shared;
    o.ffn_residual = true;
    check_cell_gradients(o, "sat shared qkv + ffn residual");
  }
  {
    auto o = tiny("gcn");
    o.layer_norm = true;
    o.zone_disagreement = -0.5;
    check_cell_gradients(o, "gcn");
    o.gcn_activation = GcnActivation::Tanh;
    o.gcn_edges = GcnEdges::ReluCosine;
    check_cell_gradients(o, "gcn tanh relu_cosine");
  }
  {
    auto o = tiny("cap", 4, 8);
    o.layer_norm = true;
    o.zone_disagreement = 1.0;
    check_cell_gradients(o, "cap");
  }
}

TEST_F(Mzu, gradients_deep_transition) {
  auto o = tiny("gcn", 2, 8);
  o.depth = 2;
  o.layer_norm = true;
  o.ln_position = LnPosition::Zones;
  o.zone_disagreement = 0.3;
  check_cell_gradients(o, "gcn DT L=2 unshared, LN on zones");
  auto c = tiny("cap", 4, 8);
  c.depth = 1;
  c.share_transition = true;
  c.zone_disagreement = 1.0;
  check_cell_gradients(c, "cap DT L=1 shared");
  auto s = tiny("sat", 2, 8);
  s.depth = 1;
  s.regular_gate = true;
  s.layer_norm = true;
  check_cell_gradients(s, "sat DT, Regular-Gate");
  s.regular_gate = false;
  s.regular_trans = true;
  check_cell_gradients(s, "sat DT, Regular-Trans.");
}

TEST_F(Mzu, sat_attention_rows_sum_to_one) {
  torch::manual_seed(1);
  auto o = tiny("sat", 4, 16);
  auto cell = std::make_shared<MZUCellImpl>(o);
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  cell->forward_sequence(torch::randn({5, 3, 3}), cell->initial_state(3, {}), ctx);
  for (const char* k : {"attn_h", "attn_g"}) {
    auto a = probe.stacked(k);  // [T, B, N, N]
    ASSERT_TRUE(a.sizes().vec() == (std::vector<int64_t>{5, 3, 4, 4}));
    ASSERT_TRUE(torch::allclose(a.sum(-1), torch::ones({5, 3, 4}), 1e-5, 1e-6));
    ASSERT_TRUE(a.min().item<double>() >= 0);
  }
  ASSERT_TRUE(probe.stacked("zones_h").sizes().vec() == (std::vector<int64_t>{5, 3, 4, 4}));
  ASSERT_TRUE(probe.has("candidate") && probe.has("gate") && probe.has("h"));
}

TEST_F(Mzu, gcn_adjacency_symmetric_with_expected_diagonal) {
  for (GcnDegree degree : {GcnDegree::Absolute, GcnDegree::SignedClamped}) {
    torch::manual_seed(2);
    auto o = tiny("gcn", 4, 16);
    o.gcn_degree = degree;
    auto cell = std::make_shared<MZUCellImpl>(o);
    Probe probe;
    StepContext ctx;
    ctx.probe = &probe;
    cell->forward_sequence(torch::randn({4, 3, 3}), cell->initial_state(3, {}), ctx);
    auto A = probe.stacked("adj_g");  // [T, B, N, N]
    ASSERT_TRUE(torch::allclose(A, A.transpose(-1, -2), 1e-6, 1e-7));
    // Independently: A~ = cos + I (eqs. 7-8), D~_ii = sum_j |A~_ij| (absolute) or sum_j A~_ij
    // (signed_clamped), diag of D^-1/2 A~ D^-1/2 = 2 / D~_ii.
    auto Z = probe.stacked("zones_g");  // [T, B, N, d_z]
    auto zn = Z / Z.norm(2, {-1}, true);
    auto At = torch::matmul(zn, zn.transpose(-1, -2)) + torch::eye(4);
    auto deg = degree == GcnDegree::Absolute ? At.abs().sum(-1) : At.sum(-1);
    ASSERT_TRUE(deg.min().item<double>() > 0.01);  // no clamping in this draw
    ASSERT_TRUE(torch::allclose(A.diagonal(0, -2, -1), 2.0 / deg, 1e-5, 1e-6));
    auto expect = At / torch::sqrt(deg.unsqueeze(-1) * deg.unsqueeze(-2));
    ASSERT_TRUE(torch::allclose(A, expect, 1e-5, 1e-6));
    // the two degrees differ in this draw (some cosine is negative), so the check tells them apart
    ASSERT_TRUE((At.abs().sum(-1) - At.sum(-1)).max().item<double>() > 1e-3);
  }
}

TEST_F(Mzu, cap_coupling_and_squash) {
  torch::manual_seed(3);
  auto o = tiny("cap", 4, 12);
  o.capsules = 3;
  o.routing_iters = 4;
  auto cell = std::make_shared<MZUCellImpl>(o);
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  cell->forward_sequence(torch::randn({3, 2, 3}) * 3, cell->initial_state(2, {}), ctx);
  for (const char* m : {"_h", "_g"}) {
    auto c = probe.stacked(std::string("coupling") + m);  // [T, iters, B, N, J]
    ASSERT_TRUE(c.sizes().vec() == (std::vector<int64_t>{3, 4, 2, 4, 3}));
    ASSERT_TRUE(torch::allclose(c.sum(-1), torch::ones({3, 4, 2, 4}), 1e-5, 1e-6));
    // first iteration: b = 0 -> uniform coupling 1/J; later iterations move away from it
    ASSERT_TRUE(torch::allclose(c.select(1, 0), torch::full({3, 2, 4, 3}, 1.0 / 3), 1e-6, 1e-7));
    ASSERT_TRUE((c.select(1, 3) - 1.0 / 3).abs().max().item<double>() > 1e-4);
    auto caps = probe.stacked(std::string("capsules") + m);  // [T, B, J, d_o]
    ASSERT_TRUE(caps.sizes().vec() == (std::vector<int64_t>{3, 2, 3, 4}));
    auto norms = caps.norm(2, {-1});
    ASSERT_TRUE(norms.max().item<double>() < 1.0);
    ASSERT_TRUE(norms.min().item<double>() > 0.0);
  }
  // squash itself: |squash(s)| = |s|^2 / (1 + |s|^2), direction kept
  auto s = torch::randn({5, 7}, torch::kDouble) * 4;
  auto q = squash(s);
  auto n2 = (s * s).sum(-1);
  ASSERT_TRUE(torch::allclose(q.norm(2, {-1}), n2 / (1 + n2), 1e-9, 1e-10));
  ASSERT_TRUE(torch::allclose((q * s).sum(-1), q.norm(2, {-1}) * s.norm(2, {-1}), 1e-9, 1e-10));
}

TEST_F(Mzu, zone_disagreement_values) {
  auto z = torch::randn({6}, torch::kDouble);
  auto same = z.repeat({4, 1});  // 4 identical zones
  ASSERT_TRUE(std::abs(zone_disagreement(same).item<double>() + 1.0) < 1e-12);
  auto orth = torch::eye(4, torch::kDouble) * 3.0;  // 4 orthogonal zones
  const double d_orth = zone_disagreement(orth).item<double>();
  ASSERT_TRUE(std::abs(d_orth + 0.25) < 1e-12);  // only the diagonal counts: -N / N^2
  // Orthogonal zones disagree more: D is higher (-1/N > -1), so the term -lambda*D
  // that the loss gets for lambda > 0 is lower.
  ASSERT_TRUE(d_orth > -1.0);
  // Opposite zones are the most diverse configuration for N = 2: D = 0.
  auto opp = torch::stack({z, -z});
  ASSERT_TRUE(std::abs(zone_disagreement(opp).item<double>()) < 1e-12);

  // The cell adds -lambda * mean over tokens of sum over M-functions of D_zone (eq. 19)
  // and logs the mean D_zone as the metric "zone_disagreement".
  torch::manual_seed(4);
  auto o = tiny("sat", 4, 16);
  o.depth = 1;
  o.zone_disagreement = 0.8;
  auto cell = std::make_shared<MZUCellImpl>(o);
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  cell->forward_sequence(torch::randn({5, 3, 3}), cell->initial_state(3, {}), ctx);
  auto D = probe.stacked("dzone");  // [T, B, M]: M = 2 M-functions x 2 depths
  ASSERT_TRUE(D.sizes().vec() == (std::vector<int64_t>{5, 3, 4}));
  const double expect = -0.8 * D.sum(-1).mean().item<double>();
  ASSERT_TRUE(ctx.extra_loss.defined());
  ASSERT_TRUE(std::abs(ctx.extra_loss.item<double>() - expect) < 1e-5);
  ASSERT_TRUE(ctx.metrics.count("zone_disagreement"));
  const auto& m = ctx.metrics["zone_disagreement"];
  ASSERT_TRUE(std::abs(m.first / m.second - D.mean().item<double>()) < 1e-5);
  // and recomputed from the recorded zones
  auto zh = probe.stacked("zones_h");
  ASSERT_TRUE(torch::allclose(D.select(-1, 0), zone_disagreement(zh), 1e-5, 1e-6));
}

TEST_F(Mzu, parameter_counts) {
  for (const std::string comp : {"sat", "gcn", "cap"}) {
    auto o = tiny(comp, 4, 16);
    o.layer_norm = true;
    // full cell and the Table 4 ablations against the formula
    for (int ab = 0; ab < 3; ++ab) {
      auto v = o;
      v.regular_gate = ab == 1;
      v.regular_trans = ab == 2;
      auto cell = std::make_shared<MZUCellImpl>(v);
      ASSERT_EQ(count_params(*cell), cell_params(v));
    }
    // deep transition: shared parameters do not grow with L; unshared add one t-MZU each
    int mismatches = 0;
    auto counts = [&](bool share, int64_t L) -> int64_t {
      auto v = o;
      v.share_transition = share;
      v.depth = L;
      auto cell = std::make_shared<MZUCellImpl>(v);
      if (count_params(*cell) != cell_params(v)) ++mismatches;
      return count_params(*cell);
    };
    ASSERT_EQ(counts(true, 1), counts(true, 0));
    ASSERT_EQ(counts(true, 3), counts(true, 0));
    ASSERT_EQ(counts(false, 2) - counts(false, 1), counts(false, 1) - counts(false, 0));
    ASSERT_TRUE(counts(false, 1) > counts(false, 0));
    ASSERT_EQ(mismatches, 0);
    // the ablations are smaller than the full cell
    auto g = o;
    g.regular_gate = true;
    ASSERT_TRUE(cell_params(g) < cell_params(o));
  }
  // sat: per-zone Q/K/V has N times the composition parameters of shared ones
  auto s = tiny("sat", 4, 16);
  auto sh = s;
  sh.sat_qkv = SatQkv::Shared;
  ASSERT_EQ(count_params(*std::make_shared<MZUCellImpl>(s)) - count_params(*std::make_shared<MZUCellImpl>(sh)),
            int64_t(2 * 3 * 3 * 4 * 4));
}

TEST_F(Mzu, probed_and_fast_paths_agree) {
  for (const std::string comp : {"sat", "gcn", "cap"}) {
    torch::manual_seed(5);
    auto o = tiny(comp, 4, 16);
    o.depth = 1;
    o.layer_norm = true;
    o.candidate_dropout = 0.3;  // inactive in eval mode
    o.zone_disagreement = 1.0;
    auto cell = std::make_shared<MZUCellImpl>(o);
    cell->eval();
    auto x = torch::randn({6, 2, 3});
    auto s0 = cell->initial_state(2, {});
    StepContext fast;
    auto a = cell->forward_sequence(x, s0, fast);
    Probe probe;
    StepContext slow;
    slow.probe = &probe;
    slow.stepwise = true;
    auto b = cell->forward_sequence(x, s0, slow);
    ASSERT_TRUE(torch::allclose(a.output, b.output, 1e-6, 1e-7));
    ASSERT_TRUE(torch::allclose(a.state[0], b.state[0], 1e-6, 1e-7));
    ASSERT_TRUE(torch::allclose(probe.stacked("h"), a.output, 1e-6, 1e-7));
    ASSERT_TRUE(probe.has("dt1/candidate") && probe.has("dt1/zones_h"));
    // h_t = (1 - g) h_{t-1} + g h~ at the last depth (eq. 15)
    auto g = probe.stacked("dt1/gate"), c = probe.stacked("dt1/candidate");
    ASSERT_TRUE(g.min().item<double>() > 0 && g.max().item<double>() < 1);
    ASSERT_TRUE(c.abs().max().item<double>() <= 1.0);
  }
}

TEST_F(Mzu, invalid_configs_name_the_option) {
  auto errors_for = [](json model) {
    json cfg = {{"task", "char_lm"}, {"model", model}};
    std::map<std::string, std::string> e;
    for (auto& x : validate_config(cfg)) e[x.path] += x.message;
    return e;
  };
  auto e = errors_for({{"cell", "gcn_mzu"}, {"hidden", 30}, {"zones", 4}});
  ASSERT_TRUE(e.count("model.zones"));
  ASSERT_TRUE(e["model.zones"].find("divisible") != std::string::npos);
  e = errors_for({{"cell", "cap_mzu"}, {"hidden", 12}, {"zones", 4}, {"capsules", 5}});
  ASSERT_TRUE(e.count("model.capsules") && !e.count("model.zones"));
  e = errors_for({{"cell", "sat_mzu"}, {"zones", 0}});
  ASSERT_TRUE(e.count("model.zones"));
  e = errors_for({{"cell", "sat_mzu"}, {"depth", -1}});
  ASSERT_TRUE(e.count("model.depth"));
  e = errors_for({{"cell", "gru"}, {"zones", 4}});  // not an option of the GRU
  ASSERT_TRUE(e.count("model.zones"));
  e = errors_for({{"cell", "gcn_mzu"}, {"capsules", 2}});  // cap only
  ASSERT_TRUE(e.count("model.capsules"));
  ASSERT_TRUE(errors_for({{"cell", "cap_mzu"},
                          {"hidden", 16},
                          {"capsules", 4},
                          {"layer_norm", true},
                          {"candidate_dropout", 0.2},
                          {"zone_disagreement", -1.0}})
                  .empty());
  // the registered check itself (for callers that bypass the schema's ranges)
  for (const std::string cell : {"sat_mzu", "gcn_mzu", "cap_mzu"}) {
    std::vector<ConfigError> errs;
    cell_info(cell).check(
        resolve_config(json{{"model", {{"cell", cell}, {"hidden", 16}, {"zones", 0}, {"depth", -2}, {"capsules", 0}}}}),
        errs);
    std::map<std::string, int> paths;
    for (auto& x : errs) paths[x.path]++;
    ASSERT_TRUE(paths.count("model.zones") && paths.count("model.depth"));
    ASSERT_EQ(paths.count("model.capsules") > 0, cell == "cap_mzu");
    ASSERT_EQ(cell_info(cell).family, std::string("mzu"));
  }
  // the cell refuses to build with an impossible shape
  auto o = tiny("gcn", 3, 8);
  ASSERT_THROW(std::make_shared<MZUCellImpl>(o), c10::Error);
}

TEST_F(Mzu, paper_presets_and_params_without_data) {
  // The paper presets validate, and `params --vocab N` counts them without any data.
  for (const std::string ds : {"ptb", "text8"})
    for (const std::string comp : {"sat", "gcn", "cap"}) {
      const std::string name = ds + "-" + comp + "-mzu-dt";
      const std::string path = cstest::source_dir() + "/resources/presets/" + name + ".json";
      std::ifstream f(path);
      ASSERT_TRUE(f.is_open()) << path;
      json cfg = json::parse(cstest::read_text(path));
      ASSERT_TRUE(cfg.contains("notes") && cfg["notes"].get<std::string>().size() > 50);
      ASSERT_TRUE(validate_config(cfg).empty()) << name.c_str();
      json m = resolve_config(cfg)["model"];
      const int64_t V = ds == "ptb" ? 50 : 27;
      std::string out, err;
      ASSERT_EQ(cstest::run_cli({"params", path, "--vocab", std::to_string(V), "--json"}, &out, &err), 0);
      json r = json::parse(out);
      MZUOptions o;
      o.composition = enum_from_name<MZUComposition>(comp).value();
      o.input_size = m["embed"];
      o.hidden_size = m["hidden"];
      o.zones = m["zones"];
      o.filter = m["filter"];
      o.depth = m["depth"];
      o.share_transition = m["share_transition"];
      o.layer_norm = m["layer_norm"];
      o.capsules = comp == "cap" ? m["capsules"].get<int64_t>() : 2;
      const int64_t E = m["embed"], H = m["hidden"];
      ASSERT_EQ(r["total"].get<int64_t>(), cell_params(o) + V * E + H * V + V);
    }
}

TEST_F(Mzu, learns_on_default_corpus) {
  const std::string corpus = data_cache_dir() + "/moby-dick.txt";
  if (!std::filesystem::exists(corpus))
    FAIL() << ("default corpus missing: " + corpus + " (run bash datasets/fetch.sh)");
  struct V {
    std::string cell;
    json extra;
  };
  const std::vector<V> variants = {
      {"sat_mzu", {{"depth", 0}, {"zone_disagreement", 0.0}}},
      {"gcn_mzu", {{"depth", 0}, {"zone_disagreement", 1.0}}},
      {"cap_mzu", {{"depth", 0}, {"zone_disagreement", 0.0}}},
      {"gcn_mzu", {{"depth", 1}, {"share_transition", true}, {"regular_gate", true}, {"zone_disagreement", 0.0}}},
  };
  for (const auto& v : variants) {
    json model = {{"cell", v.cell}, {"embed", 16}, {"hidden", 48}, {"filter", 64}, {"zones", 4}, {"layer_norm", true}};
    for (auto& [k, x] : v.extra.items()) model[k] = x;
    json cfg = {{"task", "char_lm"},
                {"dataset", {{"name", "moby-dick"}, {"max_chars", 40000}}},
                {"model", model},
                {"training",
                 {{"batch", 16},
                  {"bptt", 32},
                  {"steps", 110},
                  {"lr", 0.006},
                  {"eval_every", 0},
                  {"log_every", 10},
                  {"threads", 1},
                  {"eval_test", false},
                  {"seed", 3}}}};
    cfg = load_and_resolve(cfg);
    auto task = make_task(cfg);
    // unigram entropy of the training excerpt, in bits per character
    auto* lm = dynamic_cast<CharLMTask*>(task.get());
    ASSERT_TRUE(lm);
    std::map<int32_t, double> freq;
    for (auto id : lm->corpus().train) freq[id] += 1;
    double Hu = 0;
    const double n = static_cast<double>(lm->corpus().train.size());
    for (auto& [id, c] : freq) Hu -= c / n * std::log2(c / n);
    Trainer tr(cfg, std::move(task), nullptr);
    auto outcome = tr.run();
    const double bpc = tr.task().evaluate("valid").metrics["bpc"];
    const std::string what = v.cell + " " + v.extra.dump() + ": valid BPC " + std::to_string(bpc) +
                             ", unigram entropy " + std::to_string(Hu);
    std::printf("%s\n", what.c_str());
    ASSERT_TRUE(Hu > 3.5 && Hu < 5.0) << what.c_str();
    ASSERT_TRUE(bpc < Hu - 0.6) << what.c_str();
    // the training log carries the zone disagreement as its own metric
    bool logged = false;
    for (auto& rec : tr.history)
      if (!rec.eval && rec.values.count("zone_disagreement")) logged = true;
    ASSERT_TRUE(logged) << what.c_str();
  }
}

TEST_F(Mzu, flops_count_every_stage) {
  auto o = tiny("gcn", 4, 16);
  auto base = std::make_shared<MZUCellImpl>(o)->flops_per_step();
  auto dt = o;
  dt.depth = 1;
  auto bigger = o;
  bigger.filter = 12;
  ASSERT_TRUE(std::make_shared<MZUCellImpl>(dt)->flops_per_step() > 1.7 * base);
  // the FFN is 2 M-functions x J zones x 2 products of d_o x d_f multiply-adds
  const double ffn_delta = 2.0 * 4 * (2.0 * 4 * 6 * 2 + 2 * 6);
  ASSERT_TRUE(std::abs(std::make_shared<MZUCellImpl>(bigger)->flops_per_step() - base - ffn_delta) < 1e-6);
}

// ---------------------------------------------------------------- the papers' settings

TEST_F(Mzu, eq18_readings_by_hand) {
  // N = 3 zones of d_z = 2, scaled on purpose (cosines ignore norms): z1 = (2, 0), z2 = (0, 0.5),
  // z3 = (-3, 0). Cosines: c12 = 0, c13 = -1, c23 = 0; diagonal 1.
  auto Z = torch::tensor({2.0, 0.0, 0.0, 0.5, -3.0, 0.0}, torch::kDouble).view({3, 2});
  // "all" (eq. 18 as written): -(1/9)(3 + 2 c12 + 2 c13 + 2 c23) = -(1/9)(3 - 2) = -1/9
  EXPECT_NEAR(zone_disagreement(Z, Pairs::All, Form::Cosine).item<double>(), -1.0 / 9, 1e-12);
  // "distinct": -(1/6)(2 c12 + 2 c13 + 2 c23) = -(1/6)(-2) = 1/3
  EXPECT_NEAR(zone_disagreement(Z, Pairs::Distinct, Form::Cosine).item<double>(), 1.0 / 3, 1e-12);
  // squared cosines: all -(1/9)(3 + 2) = -5/9; distinct -(1/6)(2) = -1/3
  EXPECT_NEAR(zone_disagreement(Z, Pairs::All, Form::SquaredCosine).item<double>(), -5.0 / 9, 1e-12);
  EXPECT_NEAR(zone_disagreement(Z, Pairs::Distinct, Form::SquaredCosine).item<double>(), -1.0 / 3, 1e-12);
  // defaults = eq. 18 as written
  EXPECT_NEAR(zone_disagreement(Z).item<double>(), -1.0 / 9, 1e-12);

  // The targets: eq. 18 ("cosine") is maximal (0 with "all") for zones whose unit vectors sum
  // to zero -- three at 120 degrees beat three orthogonal ones; "squared_cosine" is maximal for
  // orthogonal zones (0 with "distinct").
  const double c = std::cos(2 * M_PI / 3), sn = std::sin(2 * M_PI / 3);
  auto simplex = torch::tensor({1.0, 0.0, 0.0, c, sn, 0.0, c, -sn, 0.0}, torch::kDouble).view({3, 3});
  auto orth = torch::eye(3, torch::kDouble);
  EXPECT_NEAR(zone_disagreement(simplex, Pairs::All, Form::Cosine).item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(zone_disagreement(orth, Pairs::All, Form::Cosine).item<double>(), -1.0 / 3, 1e-12);
  EXPECT_NEAR(zone_disagreement(simplex, Pairs::Distinct, Form::Cosine).item<double>(), 0.5, 1e-12);  // -cos(120)
  EXPECT_NEAR(zone_disagreement(orth, Pairs::Distinct, Form::SquaredCosine).item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(zone_disagreement(simplex, Pairs::Distinct, Form::SquaredCosine).item<double>(), -0.25, 1e-12);

  // "all" and "distinct" differ by a constant and a scale: the same gradient times N/(N-1)
  auto W = torch::randn({4, 5}, torch::kDouble).requires_grad_(true);
  zone_disagreement(W, Pairs::All, Form::Cosine).backward();
  auto g_all = W.grad().clone();
  W.grad().zero_();
  zone_disagreement(W, Pairs::Distinct, Form::Cosine).backward();
  EXPECT_TRUE(torch::allclose(W.grad(), g_all * (4.0 / 3.0), 1e-9, 1e-12));
}

TEST_F(Mzu, eq18_reading_reaches_the_loss_term) {
  // the cell's D (probe "dzone") and its loss term follow model.disagreement_pairs / _form
  for (const std::string pairs : {"all", "distinct"})
    for (const std::string form : {"cosine", "squared_cosine"}) {
      torch::manual_seed(9);
      auto o = tiny("gcn", 4, 16);
      o.zone_disagreement = 0.5;
      o.disagreement_pairs = enum_from_name<Pairs>(pairs).value();
      o.disagreement_form = enum_from_name<Form>(form).value();
      auto cell = std::make_shared<MZUCellImpl>(o);
      Probe probe;
      StepContext ctx;
      ctx.probe = &probe;
      cell->forward_sequence(torch::randn({3, 2, 3}), cell->initial_state(2, {}), ctx);
      auto D = probe.stacked("dzone");  // [T, B, 2]
      auto zh = probe.stacked("zones_h"), zg = probe.stacked("zones_g");
      const auto dh = zone_disagreement(zh, o.disagreement_pairs, o.disagreement_form);
      const auto dg = zone_disagreement(zg, o.disagreement_pairs, o.disagreement_form);
      ASSERT_TRUE(torch::allclose(D.select(-1, 0), dh, 1e-5, 1e-6)) << pairs << form;
      ASSERT_TRUE(torch::allclose(D.select(-1, 1), dg, 1e-5, 1e-6)) << pairs << form;
      ASSERT_NEAR(ctx.extra_loss.item<double>(), -0.5 * D.sum(-1).mean().item<double>(), 1e-5);
      // the reading-independent metric: mean cosine over distinct pairs
      const auto& m = ctx.metrics["zone_cosine"];
      auto cz = -0.5 * (zone_disagreement(zh, Pairs::Distinct, Form::Cosine) +
                        zone_disagreement(zg, Pairs::Distinct, Form::Cosine));
      ASSERT_NEAR(m.first / m.second, cz.mean().item<double>(), 1e-5);
    }
}

TEST_F(Mzu, eq19_balance_per_loss_unit_with_padding) {
  // Sentence tasks: the task loss is a mean over B sentences, so eq. 19's term is summed over
  // each sentence's REAL tokens and divided by B (StepContext::loss_units, token_mask);
  // char LM: divided by T x B (the default). Padding contributes nothing.
  torch::manual_seed(10);
  auto o = tiny("cap", 4, 8);
  o.zone_disagreement = 0.7;
  auto cell = std::make_shared<MZUCellImpl>(o);
  const int64_t T = 5, B = 3;
  auto x = torch::randn({T, B, 3});
  auto mask = torch::ones({T, B});
  mask.narrow(0, 2, 3).select(1, 1).zero_();  // sentence 1 has 2 tokens
  mask.narrow(0, 4, 1).select(1, 2).zero_();  // sentence 2 has 4 tokens
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  ctx.loss_units = B;
  ctx.token_mask = mask;
  cell->forward_sequence(x, cell->initial_state(B, {}), ctx);
  auto D = probe.stacked("dzone");  // [T, B, M]
  const double expect = -0.7 / B * (D.sum(-1) * mask).sum().item<double>();
  ASSERT_NEAR(ctx.extra_loss.item<double>(), expect, 1e-5);
  // the metric averages the real tokens only
  const auto& m = ctx.metrics["zone_disagreement"];
  ASSERT_NEAR(m.first / m.second, (D.mean(-1) * mask).sum().item<double>() / mask.sum().item<double>(), 1e-5);
  // without them: the per-token mean of the char LM, T x B times smaller per unit than per sentence sum
  StepContext lm;
  lm.probe = &probe;
  probe.series.clear();
  cell->forward_sequence(x, cell->initial_state(B, {}), lm);
  auto D2 = probe.stacked("dzone");
  ASSERT_NEAR(lm.extra_loss.item<double>(), -0.7 * D2.sum(-1).mean().item<double>(), 1e-5);
  // a mask of the wrong shape is refused
  StepContext bad;
  bad.token_mask = torch::ones({T + 1, B});
  ASSERT_THROW(cell->forward_sequence(x, cell->initial_state(B, {}), bad), c10::Error);
}

TEST_F(Mzu, lambda_warmup_follows_the_training_step) {
  torch::manual_seed(11);
  auto o = tiny("sat", 2, 8);
  o.zone_disagreement = 2.0;
  o.disagreement_warmup = 4;
  auto cell = std::make_shared<MZUCellImpl>(o);
  EXPECT_DOUBLE_EQ(cell->lambda_at(-1), 2.0);  // not a trainer step: full lambda
  EXPECT_DOUBLE_EQ(cell->lambda_at(0), 0.5);   // lambda (s + 1) / W
  EXPECT_DOUBLE_EQ(cell->lambda_at(1), 1.0);
  EXPECT_DOUBLE_EQ(cell->lambda_at(3), 2.0);
  EXPECT_DOUBLE_EQ(cell->lambda_at(100), 2.0);
  auto x = torch::randn({3, 2, 3});
  auto term = [&](int64_t step) {
    StepContext ctx;
    ctx.step = step;
    cell->forward_sequence(x, cell->initial_state(2, {}), ctx);
    return ctx.extra_loss.item<double>();
  };
  const double full = term(-1);
  ASSERT_TRUE(std::abs(full) > 1e-6);
  EXPECT_NEAR(term(0), full / 4, 1e-6);
  EXPECT_NEAR(term(2), full * 3 / 4, 1e-6);
  EXPECT_NEAR(term(7), full, 1e-6);
  o.disagreement_warmup = 0;
  EXPECT_DOUBLE_EQ(std::make_shared<MZUCellImpl>(o)->lambda_at(0), 2.0);
}

TEST_F(Mzu, lambda_warmup_reaches_the_cell_through_the_task) {
  // The trainer's step (Task::set_train_step) reaches StepContext::step: with a warm-up of 1000 steps the first
  // update uses lambda / 1000, so (loss - task loss) is 1000 times smaller than without.
  const std::string corpus = data_cache_dir() + "/moby-dick.txt";
  ASSERT_TRUE(std::filesystem::exists(corpus)) << corpus;
  auto first_term = [&](int64_t warmup) {
    json cfg = {{"task", "char_lm"},
                {"dataset", {{"name", "moby-dick"}, {"max_chars", 20000}}},
                {"model",
                 {{"cell", "gcn_mzu"},
                  {"embed", 8},
                  {"hidden", 8},
                  {"filter", 8},
                  {"zones", 2},
                  {"depth", 0},
                  {"zone_disagreement", 1.0},
                  {"disagreement_warmup", warmup}}},
                {"training", {{"batch", 2}, {"bptt", 4}, {"steps", 1}, {"threads", 1}, {"seed", 1}}}};
    cfg = load_and_resolve(cfg);
    torch::manual_seed(1);  // the same initial weights for both runs
    auto task = make_task(cfg);
    task->set_train_step(0);  // what Trainer::train_step does before each update
    auto r = task->train_step();
    return r.loss.item<double>() - r.task_loss;
  };
  const double full = first_term(0), warm = first_term(1000);
  ASSERT_TRUE(std::abs(full) > 1e-3) << full;
  ASSERT_NEAR(warm, full / 1000, 1e-6 + 1e-3 * std::abs(full / 1000));
}

TEST_F(Mzu, gcn_adjacency_eq8_literal_and_plus_identity_by_hand) {
  // Zones of M_g set by hand: x = e_1, h = 0, so z = column 0 of w_x. N = 2, d_z = 2:
  // z1 = (1, 0), z2 = (1, 1): cos = 1/sqrt(2) = c.
  //   eq. 8 as written ("cosine"): A~ = [[1, c], [c, 1]], degrees 1 + c:
  //       D^-1/2 A~ D^-1/2 = [[1/(1+c), c/(1+c)], ...] = [[0.5858, 0.4142], ...]
  //   cos + I ("cosine_plus_identity"): A~ = [[2, c], [c, 2]], degrees 2 + c:
  //       [[2/(2+c), c/(2+c)], ...] = [[0.7388, 0.2612], ...]
  const double c = 1.0 / std::sqrt(2.0);
  for (const std::string adj : {"cosine", "cosine_plus_identity"}) {
    auto o = tiny("gcn", 2, 4);
    o.gcn_adjacency = enum_from_name<GcnAdjacency>(adj).value();
    auto cell = std::make_shared<MZUCellImpl>(o);
    {
      torch::NoGradGuard ng;
      auto& w = cell->first->w_x;  // [2 H, I]: rows 0..3 M_h, rows 4..7 M_g
      w.zero_();
      w[4][0] = 1.0;  // z1 = (1, 0)
      w[6][0] = 1.0;  // z2 = (1, 1)
      w[7][0] = 1.0;
    }
    Probe probe;
    StepContext ctx;
    ctx.probe = &probe;
    auto x = torch::zeros({1, 1, 3});
    x[0][0][0] = 1.0;
    cell->forward_sequence(x, cell->initial_state(1, {}), ctx);
    auto A = probe.stacked("adj_g").view({2, 2});
    const double self = adj == "cosine" ? 1.0 : 2.0, deg = self + c;
    EXPECT_NEAR(A[0][0].item<double>(), self / deg, 1e-6) << adj;
    EXPECT_NEAR(A[1][1].item<double>(), self / deg, 1e-6) << adj;
    EXPECT_NEAR(A[0][1].item<double>(), c / deg, 1e-6) << adj;
    EXPECT_NEAR(A[1][0].item<double>(), c / deg, 1e-6) << adj;
  }
  EXPECT_NEAR(1.0 / (1.0 + c), 0.5858, 1e-4);  // the numbers quoted above
  EXPECT_NEAR(2.0 / (2.0 + c), 0.7388, 1e-4);
}

TEST_F(Mzu, new_run_defaults_are_the_papers) {
  // A new MZU run trains as the paper does: lambda 1, layer normalization, one deep-transition
  // step sharing the M-functions, 4 zones, shared Q/K/V (sat); the baselines keep LN off.
  for (const std::string cell : {"sat_mzu", "gcn_mzu", "cap_mzu"}) {
    json m = resolve_config(json{{"model", {{"cell", cell}}}})["model"];
    EXPECT_EQ(m["zone_disagreement"].get<double>(), 1.0) << cell;
    EXPECT_EQ(m["layer_norm"].get<bool>(), true) << cell;
    EXPECT_EQ(m["depth"].get<int64_t>(), 1) << cell;
    EXPECT_EQ(m["share_transition"].get<bool>(), true) << cell;
    EXPECT_EQ(m["zones"].get<int64_t>(), 4) << cell;
    EXPECT_EQ(m["disagreement_pairs"].get<std::string>(), "all") << cell;
    EXPECT_EQ(m["disagreement_form"].get<std::string>(), "cosine") << cell;
    EXPECT_EQ(m["disagreement_warmup"].get<int64_t>(), 0) << cell;
    if (cell == "sat_mzu") {
      EXPECT_EQ(m["sat_qkv"].get<std::string>(), "shared");
    }
    if (cell == "gcn_mzu") {
      EXPECT_EQ(m["gcn_adjacency"].get<std::string>(), "cosine_plus_identity");
    }
    // the form's default (GUI) says the same
    for (auto& spec : options_for(cell, "char_lm"))
      if (spec.key == "layer_norm") {
        EXPECT_EQ(spec.default_value, json(true)) << cell;
      }
  }
  EXPECT_EQ(resolve_config(json{{"model", {{"cell", "gru"}}}})["model"]["layer_norm"].get<bool>(), false);
  // an explicit value still wins
  EXPECT_EQ(
      resolve_config(json{{"model", {{"cell", "gcn_mzu"}, {"layer_norm", false}}}})["model"]["layer_norm"].get<bool>(),
      false);
}

TEST_F(Mzu, new_options_validate_with_one_message) {
  auto errors_for = [](json model) {
    json cfg = {{"task", "char_lm"}, {"model", model}};
    std::map<std::string, std::string> e;
    for (auto& x : validate_config(cfg)) e[x.path] += x.message;
    return e;
  };
  EXPECT_TRUE(errors_for({{"cell", "gcn_mzu"}, {"disagreement_pairs", "some"}}).count("model.disagreement_pairs"));
  EXPECT_TRUE(errors_for({{"cell", "gcn_mzu"}, {"disagreement_form", "l2"}}).count("model.disagreement_form"));
  EXPECT_TRUE(errors_for({{"cell", "gcn_mzu"}, {"disagreement_warmup", -3}}).count("model.disagreement_warmup"));
  EXPECT_TRUE(errors_for({{"cell", "gcn_mzu"}, {"gcn_adjacency", "laplacian"}}).count("model.gcn_adjacency"));
  EXPECT_TRUE(errors_for({{"cell", "sat_mzu"}, {"gcn_adjacency", "cosine"}}).count("model.gcn_adjacency"));  // gcn only
  auto e = errors_for({{"cell", "gcn_mzu"}, {"hidden", 8}, {"zones", 1}, {"disagreement_pairs", "distinct"}});
  ASSERT_EQ(e.size(), size_t(1));
  EXPECT_TRUE(e.count("model.disagreement_pairs") &&
              e["model.disagreement_pairs"].find("zones = 1") != std::string::npos);
  EXPECT_TRUE(errors_for({{"cell", "gcn_mzu"},
                          {"hidden", 8},
                          {"zones", 1},
                          {"disagreement_pairs", "distinct"},
                          {"zone_disagreement", 0.0}})
                  .empty());
  EXPECT_TRUE(errors_for({{"cell", "cap_mzu"},
                          {"disagreement_pairs", "distinct"},
                          {"disagreement_form", "squared_cosine"},
                          {"disagreement_warmup", 500}})
                  .empty());
}

}  // namespace test_mzu
