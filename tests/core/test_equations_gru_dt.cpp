// The GRU+DT baseline the MZU paper (Meng et al., AAAI 2020, Table 4) compares against, against a
// hand computation as the MZU's equations are (test_equations_mzu.cpp): a GRU step written as
// plain scalar loops in double precision over the parameters read from the modules, then L
// transition GRUs on a zero input, compared with the library's forward_sequence (autograd on and
// off) to 1e-10. Every option the cell reads is set explicitly here, so a change of a default
// does not change what is tested.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "cells/baseline.h"
#include "equations_flat.h"

namespace test_equations_gru_dt {  // this file's own names in a unity build (tests/README.md)

using namespace cs;
using cstest::Flat;
using cstest::max_diff;
using cstest::sigm;
using cstest::Vec;

namespace {

// One GRU step (torch's formulation, reset after U) for one row: xp = W_ih x + b_ih given.
Vec gru_ref(const GRUCellImpl& g, const Vec& xp, const Vec& h) {
  const int64_t H = static_cast<int64_t>(h.size());
  Flat whh(g.w_hh), bhh(g.b_hh);
  Vec hp(3 * H);
  for (int64_t r = 0; r < 3 * H; ++r) {
    double s = bhh(r);
    for (int64_t j = 0; j < H; ++j) s += whh(r, j) * h[j];
    hp[r] = s;
  }
  Vec out(H);
  for (int64_t n = 0; n < H; ++n) {
    const double r = sigm(xp[n] + hp[n]);
    const double z = sigm(xp[H + n] + hp[H + n]);
    const double c = std::tanh(xp[2 * H + n] + r * hp[2 * H + n]);
    out[n] = (1 - z) * c + z * h[n];
  }
  return out;
}

}  // namespace

TEST(EquationsGruDt, gruDtStep) {
  // GRU+DT (the MZU paper's baseline): a GRU on x_t, then L transition GRUs on a zero input
  // (only their b_ih remains of W_ih x + b_ih), the last state carried.
  for (int64_t L : {1, 2})
    for (bool share : {false, true}) {
      BaselineOptions o;
      o.input_size = 3;
      o.hidden_size = 5;
      o.layer_norm = false;
      o.candidate_dropout = 0;
      o.depth = L;
      o.share_transition = share;
      torch::manual_seed(50);
      auto cell = std::make_shared<GRUDTCellImpl>(o);
      cell->to(torch::kDouble);
      const int64_t T = 3, B = 2, H = 5, I = 3;
      auto x = torch::randn({T, B, I}, torch::kDouble);
      auto h0 = torch::randn({B, H}, torch::kDouble);
      StepContext gctx;  // autograd on (a fused path would serve this), then off
      auto out_grad = cell->forward_sequence(x, {h0}, gctx).output.detach();
      torch::NoGradGuard ng;
      StepContext ctx;
      auto out = cell->forward_sequence(x, {h0}, ctx).output;
      ASSERT_EQ(static_cast<int64_t>(cell->transitions.size()), L);
      if (share && L == 2) {
        ASSERT_EQ(cell->transitions[0].get(), cell->transitions[1].get());
      }
      if (!share && L == 2) {
        ASSERT_NE(cell->transitions[0].get(), cell->transitions[1].get());
      }
      Flat X(x), wih(cell->first->w_ih), bih(cell->first->b_ih);
      for (int64_t b = 0; b < B; ++b) {
        Vec h = Flat(h0[b]).v;
        for (int64_t t = 0; t < T; ++t) {
          Vec xp(3 * H);
          for (int64_t r = 0; r < 3 * H; ++r) {
            double s = bih(r);
            for (int64_t i = 0; i < I; ++i) s += wih(r, i) * X(t, b, i);
            xp[r] = s;
          }
          h = gru_ref(*cell->first, xp, h);
          for (auto& tr : cell->transitions) {
            Vec zp = Flat(tr->b_ih).v;  // zero input: W_ih 0 + b_ih
            h = gru_ref(*tr, zp, h);
          }
          ASSERT_LT(max_diff(out[t][b], torch::tensor(h, torch::kDouble)), 1e-10)
              << "L=" << L << " share=" << share << " t=" << t;
          ASSERT_LT(max_diff(out_grad[t][b], torch::tensor(h, torch::kDouble)), 1e-10)
              << "L=" << L << " share=" << share << " t=" << t;
        }
      }
    }
}

}  // namespace test_equations_gru_dt
