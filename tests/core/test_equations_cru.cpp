// CRU equations (Cui et al., arXiv 1911.05960) against hand computations: the same-length
// convolution (eqs. 7-8, zero padding, the activation f), and the GRU recurrence fed by it in
// shallow (eqs. 5-6), deep (eqs. 9-11) and deep-enhanced (eqs. 12-14) fusion, over a short
// sequence, written as plain scalar loops in double precision over the parameters read from
// the modules, compared with the library's fast path, its probed path and step() to 1e-10.
// Every CRU option is set explicitly (reset after U as Cellscope's GRU, and eqs. 3/11/14's
// literal U (r * h)).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cells/cru.h"
#include "equations_flat.h"

namespace test_equations_cru {  // this file's own names in a unity build (tests/README.md)

using namespace cs;
using cstest::Flat;
using cstest::max_diff;
using cstest::sigm;
using cstest::Vec;

namespace {

const char* fusion_str(CRUFusion f) {
  return f == CRUFusion::Shallow ? "shallow" : f == CRUFusion::Deep ? "deep" : "deep_enhanced";
}

struct Case {
  CRUFusion fusion;
  int64_t k;
  std::string act;
  bool reset_after;
  int64_t channels;  // shallow only (0 = input size)
};

std::string describe(const Case& c) {
  return std::string(fusion_str(c.fusion)) + " k=" + std::to_string(c.k) + " f=" + c.act +
         " reset_after=" + (c.reset_after ? "1" : "0") + " d=" + std::to_string(c.channels);
}

// Builds the cell, runs a padded-free batch through it three ways and compares with the
// reference for every position of every row: the convolution outputs (probe), r, z, the
// candidate and h.
void check(const Case& c, uint64_t seed) {
  CRUOptions o;  // every option set explicitly
  o.input_size = 4;
  o.hidden_size = 5;
  o.fusion = c.fusion;
  o.filter_length = c.k;
  o.conv_channels = c.channels;
  o.conv_activation = enum_from_name<ConvActivation>(c.act).value();
  o.reset_after = c.reset_after;
  torch::manual_seed(seed);
  auto cell = std::make_shared<CRUCellImpl>(o);
  cell->to(torch::kDouble);
  cell->set_candidate_dropout(0.0);
  const int64_t T = 6, B = 2, I = 4, H = 5, k = c.k, d = cell->channels();
  const int64_t nconv = c.fusion == CRUFusion::Shallow ? 1 : 3;
  auto x = torch::randn({T, B, I}, torch::kDouble);
  auto h0 = 0.5 * torch::randn({B, H}, torch::kDouble);
  StepContext gctx;  // the fast path in training with autograd on (what a fused kernel serves)
  auto fast_grad = cell->forward_sequence(x, {h0}, gctx).output.detach();
  torch::NoGradGuard ng;
  StepContext fctx;
  auto fast = cell->forward_sequence(x, {h0}, fctx).output;
  Probe probe;
  StepContext pctx;
  pctx.probe = &probe;
  auto probed = cell->forward_sequence(x, {h0}, pctx).output;
  StepContext sctx;
  State s{h0};
  auto xps = cell->input_projection(x).unbind(0);
  std::vector<torch::Tensor> stepped;
  for (auto& xt : xps) {
    s = cell->step(xt, s, sctx);
    stepped.push_back(s[0]);
  }
  Flat X(x), cw(cell->conv_w), cb(cell->conv_b), whh(cell->w_hh), bhh(cell->b_hh);
  const std::string what = describe(c);
  // padding: left = (k - 1) / 2 positions before t, the rest after (notes)
  int64_t left = (k - 1) / 2;
  for (int64_t b = 0; b < B; ++b) {
    Vec h(H);
    for (int64_t n = 0; n < H; ++n) h[n] = h0[b][n].item<double>();
    for (int64_t t = 0; t < T; ++t) {
      // eq. 8: c = f(w . e_{t-left .. t-left+k-1} + b), zero vectors outside the sentence
      Vec conv(nconv * d);
      for (int64_t ch = 0; ch < nconv * d; ++ch) {
        double acc = cb(ch);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t p = t + j - left;
          if (p < 0 || p >= T) continue;
          for (int64_t i = 0; i < I; ++i) acc += cw(ch, j * I + i) * X(p, b, i);
        }
        conv[ch] = c.act == "relu" ? std::max(acc, 0.0) : c.act == "tanh" ? std::tanh(acc) : acc;
      }
      // the gates' input terms (order r, z, n)
      Vec in(3 * H, 0.0);
      if (c.fusion == CRUFusion::Shallow) {
        // eq. 6: GRU(h_{t-1}, c_t): W_{r,z,n} c_t + b
        Flat wih(cell->w_ih), bih(cell->b_ih);
        for (int64_t r = 0; r < 3 * H; ++r) {
          double a = bih(r);
          for (int64_t j = 0; j < d; ++j) a += wih(r, j) * conv[j];
          in[r] = a;
        }
      } else if (c.fusion == CRUFusion::Deep) {
        // eqs. 9-11: phi_r(e~_t), phi_z(e~_t), phi(e~_t) as they are (d = H)
        for (int64_t r = 0; r < 3 * H; ++r) in[r] = conv[r];
      } else {
        // eqs. 12-14: W_g (phi_g(e~_t) + e_t) + b_g, d = I
        Flat wih(cell->w_ih), bih(cell->b_ih);  // [3, H, d]
        for (int64_t g = 0; g < 3; ++g)
          for (int64_t n = 0; n < H; ++n) {
            double a = bih(g * H + n);
            for (int64_t j = 0; j < d; ++j) a += wih(g, n, j) * (conv[g * d + j] + X(t, b, j));
            in[g * H + n] = a;
          }
      }
      // eqs. 1-4 (10, 9, 11 / 13, 12, 14): r, z, candidate, h = z h + (1 - z) h~
      Vec hn(H), rr(H), zz(H), cand(H);
      for (int64_t n = 0; n < H; ++n) {
        double ur = bhh(n), uz = bhh(H + n);
        for (int64_t j = 0; j < H; ++j) ur += whh(n, j) * h[j], uz += whh(H + n, j) * h[j];
        rr[n] = sigm(in[n] + ur);
        zz[n] = sigm(in[H + n] + uz);
      }
      for (int64_t n = 0; n < H; ++n) {
        double un = bhh(2 * H + n);
        if (c.reset_after) {
          for (int64_t j = 0; j < H; ++j) un += whh(2 * H + n, j) * h[j];
          un *= rr[n];  // r * (U h + b)
          // note: the bias is inside the reset product here (torch/cuDNN convention)
          cand[n] = std::tanh(in[2 * H + n] + un);
        } else {
          for (int64_t j = 0; j < H; ++j) un += whh(2 * H + n, j) * rr[j] * h[j];  // U (r * h) + b
          cand[n] = std::tanh(in[2 * H + n] + un);
        }
      }
      for (int64_t n = 0; n < H; ++n) hn[n] = zz[n] * h[n] + (1 - zz[n]) * cand[n];
      h = hn;
      auto ref = torch::tensor(h, torch::kDouble);
      const std::string at = what + " t=" + std::to_string(t) + " b=" + std::to_string(b);
      ASSERT_LT(max_diff(fast[t][b], ref), 1e-10) << at << " (fast path)";
      ASSERT_LT(max_diff(fast_grad[t][b], ref), 1e-10) << at << " (fast path, autograd on)";
      ASSERT_LT(max_diff(probed[t][b], ref), 1e-10) << at << " (probed path)";
      ASSERT_LT(max_diff(stepped[static_cast<size_t>(t)][b], ref), 1e-10) << at << " (step)";
      ASSERT_LT(max_diff(probe.series.at("reset")[t][b], torch::tensor(rr, torch::kDouble)), 1e-10) << at;
      ASSERT_LT(max_diff(probe.series.at("update")[t][b], torch::tensor(zz, torch::kDouble)), 1e-10) << at;
      ASSERT_LT(max_diff(probe.series.at("candidate")[t][b], torch::tensor(cand, torch::kDouble)), 1e-10) << at;
      if (nconv == 1) {
        ASSERT_LT(max_diff(probe.series.at("conv")[t][b], torch::tensor(conv, torch::kDouble)), 1e-10) << at;
      } else {
        const char* names[3] = {"conv_r", "conv_z", "conv_n"};
        for (int64_t g = 0; g < 3; ++g) {
          Vec part(conv.begin() + g * d, conv.begin() + (g + 1) * d);
          ASSERT_LT(max_diff(probe.series.at(names[g])[t][b], torch::tensor(part, torch::kDouble)), 1e-10)
              << at << " " << names[g];
        }
      }
    }
  }
}

}  // namespace

TEST(EquationsCru, shallowFusion) {
  for (int64_t k : {1, 2, 3, 4})
    for (bool ra : {true, false}) check({CRUFusion::Shallow, k, "relu", ra, 0}, 1);
  check({CRUFusion::Shallow, 3, "tanh", true, 7}, 2);  // d != input size
  check({CRUFusion::Shallow, 5, "identity", false, 3}, 3);
}

TEST(EquationsCru, deepFusion) {
  for (int64_t k : {1, 2, 3})
    for (bool ra : {true, false}) check({CRUFusion::Deep, k, "relu", ra, 0}, 4);
  check({CRUFusion::Deep, 4, "tanh", true, 0}, 5);
}

TEST(EquationsCru, deepEnhancedFusion) {
  for (int64_t k : {1, 2, 3})
    for (bool ra : {true, false}) check({CRUFusion::DeepEnhanced, k, "relu", ra, 0}, 6);
  check({CRUFusion::DeepEnhanced, 5, "identity", true, 0}, 7);
}

TEST(EquationsCru, convWindowOfEvenFilterLooksForward) {
  // k = 2: the window of position t is {t, t+1} (eq. 8's e_{i:i+k-1} starts at i): a change of
  // x at the last position changes the convolution at T-2 and T-1 only, one at position 0
  // changes position 0 only.
  CRUOptions o;
  o.input_size = 3;
  o.hidden_size = 4;
  o.fusion = CRUFusion::Shallow;
  o.filter_length = 2;
  o.conv_channels = 0;
  o.conv_activation = ConvActivation::Identity;
  o.reset_after = true;
  torch::manual_seed(9);
  auto cell = std::make_shared<CRUCellImpl>(o);
  cell->to(torch::kDouble);
  torch::NoGradGuard ng;
  auto x = torch::randn({5, 1, 3}, torch::kDouble);
  auto c0 = cell->conv_outputs(x);
  auto x2 = x.clone();
  x2[4] += 1.0;
  auto d = (cell->conv_outputs(x2) - c0).abs().sum({1, 2});
  ASSERT_EQ(d[0].item<double>(), 0.0);
  ASSERT_EQ(d[2].item<double>(), 0.0);
  ASSERT_GT(d[3].item<double>(), 0.0);
  ASSERT_GT(d[4].item<double>(), 0.0);
  auto x3 = x.clone();
  x3[0] += 1.0;
  auto e = (cell->conv_outputs(x3) - c0).abs().sum({1, 2});
  ASSERT_GT(e[0].item<double>(), 0.0);
  ASSERT_EQ(e[1].item<double>(), 0.0);
}

}  // namespace test_equations_cru
