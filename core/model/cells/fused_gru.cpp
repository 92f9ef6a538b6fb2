#include "cells/fused_gru.h"

#include "cells/fused_common.h"
#include "cells/fused_math.h"
#include "cells/packed_gemm.h"
#include "util/loop_hints.h"
#include "util/torch_compat.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>

namespace cs::fused {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

constexpr double kLnEps = 1e-5;  // torch::layer_norm's eps as cells/baseline.cpp uses it

// Parameter layout in the flat list handed to the autograd function: per stage s
//   w_hh, b_hh, [b_ih if s > 0], [ln_g, ln_b if layer_norm]
struct Layout {
  int64_t S;
  bool ln;
  int64_t per(int64_t s) const { return 2 + (s > 0 ? 1 : 0) + (ln ? 2 : 0); }
  int64_t base(int64_t s) const {
    int64_t b = 0;
    for (int64_t i = 0; i < s; ++i) b += per(i);
    return b;
  }
  int64_t w(int64_t s) const { return base(s); }
  int64_t bhh(int64_t s) const { return base(s) + 1; }
  int64_t bih(int64_t s) const { return base(s) + 2; }  // s > 0
  int64_t g(int64_t s) const { return base(s) + 2 + (s > 0 ? 1 : 0); }
  int64_t b(int64_t s) const { return g(s) + 1; }
};

// Forward of one stage for one step (after the GEMM hp = h W^T (+ b_hh)). hp [B,3H] (raw U h
// without bias when ln, else U h + b_hh), x: input term rows (stride xs: 3H or 0), hprev [B,H],
// mask [B,H] or null. Writes hout [B,H], gates (r, z, n pre-dropout) [B,3H], hn [B,H] (the value
// multiplied by r), and with ln xhat [B,3H], rstd [B,3]. One pass per row; the sigmoids and the
// tanh are fused_math.h's vectorised row functions (three loops with ATen's in-place kernels
// between them were measurably slower: FUSED_NOTES.md).
template <typename T>
void stage_forward(int64_t B, int64_t H, T* hp, const T* x, int64_t xs, const T* hprev, const T* mask, const T* bhh,
                   const T* lg, const T* lb, bool ln, T* hout, const Tensor& gates_t, T* hn, T* xhat, T* rstd) {
  T* gates = gates_t.data_ptr<T>();
  at::parallel_for(0, B, row_grain(3 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      T* p = hp + b * 3 * H;
      if (ln) {
        T* xh = xhat + b * 3 * H;
        for (int64_t k = 0; k < 3; ++k) {
          const T* v = p + k * H;
          double mean = 0;
          for (int64_t j = 0; j < H; ++j) mean += v[j];
          mean /= H;
          double var = 0;
          for (int64_t j = 0; j < H; ++j) {
            const double d = v[j] - mean;
            var += d * d;
          }
          var /= H;
          const T rs = static_cast<T>(1.0 / std::sqrt(var + kLnEps));
          rstd[b * 3 + k] = rs;
          for (int64_t j = 0; j < H; ++j) {
            const T xv = (v[j] - static_cast<T>(mean)) * rs;
            xh[k * H + j] = xv;
            p[k * H + j] = xv * lg[k * H + j] + lb[k * H + j] + bhh[k * H + j];
          }
        }
      }
      const T* xr = x + b * xs;
      T* g = gates + b * 3 * H;
      for (int64_t j = 0; j < 2 * H; ++j) g[j] = xr[j] + p[j];  // r, z pre-activations
      sigmoid_inplace(g, 2 * H);
      T* q = hn + b * H;
      for (int64_t j = 0; j < H; ++j) {
        q[j] = p[2 * H + j];
        g[2 * H + j] = xr[2 * H + j] + g[j] * q[j];  // x_n + r * hp_n
      }
      tanh_inplace(g + 2 * H, H);
      const T* h = hprev + b * H;
      T* o = hout + b * H;
      if (mask) {
        const T* m = mask + b * H;
        for (int64_t j = 0; j < H; ++j) {
          const T nd = g[2 * H + j] * m[j];
          o[j] = nd + g[H + j] * (h[j] - nd);
        }
      } else {
        for (int64_t j = 0; j < H; ++j) {
          const T n = g[2 * H + j];
          o[j] = n + g[H + j] * (h[j] - n);
        }
      }
    }
  });
}

// Backward of one stage for one step (elementwise part). dh [B,H]: gradient w.r.t. this stage's
// output. Writes dx [B,3H] (gradient of the input term), dy [B,3H] (gradient of hp after LN and bias,
// i.e. of U h + b_hh without LN), draw [B,3H] (gradient of the raw U h: = dy without LN; LN backward
// with ln), dhz [B,H] = dh * z (the direct path to h_prev).
// dx may be `gates` itself (stage 0 writes its input gradient over its saved gates):
// each element's three gates are read before its three gradients are written, and no other
// element reads them; the pointers are therefore not restrict.
template <typename T>
void stage_backward(int64_t B, int64_t H, const T* dh, const T* gates, const T* hn, const T* hprev, const T* mask,
                    bool ln, const T* xhat, const T* rstd, const T* lg, T* dx, T* dy, T* draw, T* dhz) {
  at::parallel_for(0, B, row_grain(3 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* g = gates + b * 3 * H;
      const T* q = hn + b * H;
      const T* h = hprev + b * H;
      const T* d = dh + b * H;
      const T* m = mask ? mask + b * H : nullptr;
      T* ox = dx + b * 3 * H;
      T* oy = dy + b * 3 * H;
      T* oz = dhz + b * H;
      // no dependence between iterations (ox may be g itself, element by element, see above), so
      // the compiler need not guard the vector loop with an overlap check that the aliased case
      // would fail (neither checked in the generated code nor measured on its own)
      CS_IVDEP
      for (int64_t j = 0; j < H; ++j) {
        const T r = g[j], z = g[H + j], n = g[2 * H + j];
        const T mj = m ? m[j] : T(1);
        const T nd = n * mj;
        const T dn = d[j] * (T(1) - z) * mj;
        const T dan = dn * (T(1) - n * n);
        const T daz = d[j] * (h[j] - nd) * ((T(1) - z) * z);
        const T dar = dan * q[j] * ((T(1) - r) * r);
        ox[j] = dar;
        ox[H + j] = daz;
        ox[2 * H + j] = dan;
        oy[j] = dar;
        oy[H + j] = daz;
        oy[2 * H + j] = dan * r;
        oz[j] = d[j] * z;
      }
      if (ln) {
        const T* xh = xhat + b * 3 * H;
        T* orw = draw + b * 3 * H;
        for (int64_t k = 0; k < 3; ++k) {
          double s1 = 0, s2 = 0;
          for (int64_t j = 0; j < H; ++j) {
            const double dxh = static_cast<double>(oy[k * H + j]) * lg[k * H + j];
            s1 += dxh;
            s2 += dxh * xh[k * H + j];
          }
          const T m1 = static_cast<T>(s1 / H), m2 = static_cast<T>(s2 / H);
          const T rs = rstd[b * 3 + k];
          for (int64_t j = 0; j < H; ++j) {
            const T dxh = oy[k * H + j] * lg[k * H + j];
            orw[k * H + j] = rs * (dxh - m1 - xh[k * H + j] * m2);
          }
        }
      }
    }
  });
}

class GRURecurrenceFn : public torch::autograd::Function<GRURecurrenceFn> {
 public:
  static variable_list forward(AutogradContext* ctx, Tensor xp, Tensor h0, at::TensorList params, int64_t S, bool ln,
                               double p, bool training) {
    const Layout L{S, ln};
    xp = xp.contiguous();
    h0 = h0.contiguous();
    const int64_t T = xp.size(0), B = xp.size(1), H = h0.size(1);
    const auto opts = xp.options();
    std::vector<Tensor> P;
    for (auto& t : params) P.push_back(t.contiguous());
    const bool drop = training && p > 0;
    // Buffers for backward, allocated once for the whole sequence.
    // (pool_empty: reused from the previous call once released, see fused_common.h)
    Tensor out = pool_empty({T, B, H}, opts);                             // last stage's outputs
    Tensor hmid = S > 1 ? pool_empty({S - 1, T, B, H}, opts) : Tensor();  // earlier stages' outputs
    // r, z, n (pre-dropout): stage 0's in a buffer of its own, which backward overwrites with the
    // gradient of xp and returns (no second [T, B, 3H] buffer alive through the caller's backward)
    Tensor gates0 = pool_empty({T, B, 3 * H}, opts);
    Tensor gatesR = S > 1 ? pool_empty({S - 1, T, B, 3 * H}, opts) : Tensor();
    auto gates = [&](int64_t s, int64_t t) { return s == 0 ? gates0[t] : gatesR[s - 1][t]; };
    Tensor hn = pool_empty({S, T, B, H}, opts);  // hp_n (multiplied by r)
    Tensor xhat = ln ? pool_empty({S, T, B, 3 * H}, opts) : Tensor();
    Tensor rstd = ln ? pool_empty({S, T, B, 3}, opts) : Tensor();
    Tensor masks = drop ? pool_empty({S, T, B, H}, opts) : Tensor();
    Tensor hp = at::empty({B, 3 * H}, opts);
    // Each stage's W_hh^T packed once for the whole sequence (cells/packed_gemm.h).
    std::vector<PackedMatrix> wt;
    for (int64_t s = 0; s < S; ++s) wt.emplace_back(P[L.w(s)].t());
    AT_DISPATCH_FLOATING_TYPES(xp.scalar_type(), "fused_gru_forward", [&] {
      using T_ = scalar_t;
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t s = 0; s < S; ++s) {
          Tensor hprev = s > 0 ? hmid[s - 1][t] : (t > 0 ? out[t - 1] : h0);
          Tensor hout = s == S - 1 ? out[t] : hmid[s][t];
          const Tensor& bhh = P[L.bhh(s)];
          if (ln) wt[static_cast<size_t>(s)].mm(hp, hprev);
          else wt[static_cast<size_t>(s)].addmm(hp, bhh, hprev);
          Tensor m;
          if (drop) {
            // As F::dropout draws it (at::native::_dropout on CPU): bernoulli_(1 - p) on a [B, H]
            // tensor, divided by 1 - p; one per stage and step, in the autograd path's order.
            m = masks[s][t];
            m.bernoulli_(1 - p);
            m.div_(1 - p);
          }
          const T_* x = s == 0 ? xp[t].data_ptr<T_>() : P[L.bih(s)].data_ptr<T_>();
          stage_forward<T_>(B, H, hp.data_ptr<T_>(), x, s == 0 ? 3 * H : 0, hprev.data_ptr<T_>(),
                            drop ? m.data_ptr<T_>() : nullptr, bhh.data_ptr<T_>(),
                            ln ? P[L.g(s)].data_ptr<T_>() : nullptr, ln ? P[L.b(s)].data_ptr<T_>() : nullptr, ln,
                            hout.data_ptr<T_>(), gates(s, t), hn[s][t].data_ptr<T_>(),
                            ln ? xhat[s][t].data_ptr<T_>() : nullptr, ln ? rstd[s][t].data_ptr<T_>() : nullptr);
        }
      }
    });
    Tensor hT = out[T - 1].clone();
    ctx->save_for_backward({out});
    ctx->saved_data["h0"] = h0;
    ctx->saved_data["hmid"] = hmid;
    ctx->saved_data["gates0"] = gates0;
    ctx->saved_data["gatesR"] = gatesR;
    ctx->saved_data["hn"] = hn;
    ctx->saved_data["xhat"] = xhat;
    ctx->saved_data["rstd"] = rstd;
    ctx->saved_data["masks"] = masks;
    ctx->saved_data["params"] = c10::List<Tensor>(P);
    ctx->saved_data["S"] = S;
    ctx->saved_data["ln"] = ln;
    return {out, hT};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Tensor out = ctx->get_saved_variables()[0];
    TORCH_CHECK(ctx->saved_data.count("gates0") != 0,
                "fused GRU: backward through the same graph twice is not supported (the buffers are released "
                "after the first backward); run the forward again");
    Tensor h0 = ctx->saved_data["h0"].toTensor();
    Tensor hmid = ctx->saved_data["hmid"].toTensor();
    Tensor gates0 = ctx->saved_data["gates0"].toTensor();
    Tensor gatesR = ctx->saved_data["gatesR"].toTensor();
    Tensor hn = ctx->saved_data["hn"].toTensor();
    Tensor xhat = ctx->saved_data["xhat"].toTensor();
    Tensor rstd = ctx->saved_data["rstd"].toTensor();
    Tensor masks = ctx->saved_data["masks"].toTensor();
    std::vector<Tensor> P = ctx->saved_data["params"].toTensorVector();
    const int64_t S = ctx->saved_data["S"].toInt();
    const bool ln = ctx->saved_data["ln"].toBool();
    // The saved buffers would live on in saved_data (the engine's release frees only saved
    // variables) until the graph is destroyed, i.e. through every later node's backward, and the
    // workspace pool could not reuse them before that. Dropped here; this call's handles let go
    // of them when it returns. (What made CRU deep need more live bytes than its autograd path,
    // 153 vs 140 MiB at the bench shape, was a second [T, B, 3H] buffer for the gradient of xp
    // next to the gates: that gradient is now written over stage 0's gates, see stage_backward.)
    ctx->saved_data.clear();
    const Layout L{S, ln};
    const int64_t T = out.size(0), B = out.size(1), H = out.size(2);
    const auto opts = out.options();
    const bool drop = masks.defined();

    Tensor gout = grads[0].defined() ? grads[0].contiguous() : at::zeros_like(out);
    Tensor dh = grads[1].defined() ? grads[1].clone().contiguous() : at::zeros({B, H}, opts);
    // The backward runs in chunks of C steps (about gru_tuning().chunk_rows rows of C B): the
    // per-row gradients of a chunk go to chunk buffers, and the chunk's weight gradients are one
    // GEMM / reduction over its C B rows when the chunk is done. Whole-sequence buffers of these
    // ([S, T, B, 3H] each, three of them) made the step need 22% more memory than the autograd
    // path at GRU+DT's bench shape; only stage 0's input gradient, which is returned,
    // spans the sequence.
    const int64_t C = std::max<int64_t>(1, std::min<int64_t>(T, (gru_tuning().chunk_rows + B - 1) / B));
    Tensor dx0 = gates0;  // grad of xp, written over stage 0's gates (see stage_backward)
    Tensor dxc = S > 1 ? pool_empty({S - 1, C, B, 3 * H}, opts) : Tensor();  // later stages: of b_ih per row
    Tensor dy = pool_empty({S, C, B, 3 * H}, opts);                          // grad of hp (after LN, incl. b_hh)
    Tensor draw = ln ? pool_empty({S, C, B, 3 * H}, opts) : dy;              // grad of the raw U h
    Tensor dhz = at::empty({B, H}, opts);
    Tensor dh2 = at::empty({B, H}, opts);
    const int64_t NP = static_cast<int64_t>(P.size());
    variable_list res(2 + NP + 4);
    for (int64_t s = 0; s < S; ++s) {  // weight-gradient accumulators
      res[2 + L.w(s)] = at::zeros_like(P[L.w(s)]);
      res[2 + L.bhh(s)] = at::zeros_like(P[L.bhh(s)]);
      if (s > 0) res[2 + L.bih(s)] = at::zeros_like(P[L.bih(s)]);
      if (ln) res[2 + L.g(s)] = at::zeros_like(P[L.g(s)]);
    }
    // The weight gradients of the n steps [t0, t0 + n) held in the chunk buffers.
    auto flush = [&](int64_t t0, int64_t n) {
      for (int64_t s = 0; s < S; ++s) {
        Tensor dr = draw[s].narrow(0, 0, n).reshape({n * B, 3 * H});
        Tensor& gw = res[2 + L.w(s)];
        if (s == 0) {
          if (t0 == 0) {  // step 0's previous state is h0
            gw.addmm_(draw[0][0].t(), h0);
            if (n > 1)
              gw.addmm_(draw[0].narrow(0, 1, n - 1).reshape({(n - 1) * B, 3 * H}).t(),
                        out.narrow(0, 0, n - 1).reshape({(n - 1) * B, H}));
          } else {
            gw.addmm_(dr.t(), out.narrow(0, t0 - 1, n).reshape({n * B, H}));
          }
        } else {
          gw.addmm_(dr.t(), hmid[s - 1].narrow(0, t0, n).reshape({n * B, H}));
        }
        Tensor dys = dy[s].narrow(0, 0, n).reshape({n * B, 3 * H});
        res[2 + L.bhh(s)].add_(dys.sum(0));
        if (s > 0) res[2 + L.bih(s)].add_(dxc[s - 1].narrow(0, 0, n).reshape({n * B, 3 * H}).sum(0));
        if (ln) {
          Tensor xs = xhat[s].narrow(0, t0, n).reshape({n * B, 3 * H});
          res[2 + L.g(s)].add_((dys * xs).sum(0).view({3, H}));
        }
      }
    };
    std::vector<PackedMatrix> wp;  // each stage's W_hh, packed once (cells/packed_gemm.h)
    for (int64_t s = 0; s < S; ++s) wp.emplace_back(P[L.w(s)]);
    AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), "fused_gru_backward", [&] {
      using T_ = scalar_t;
      int64_t t0 = T, t1 = T;  // the current chunk [t0, t1): C steps, the first one (t0 = 0) maybe fewer
      for (int64_t t = T - 1; t >= 0; --t) {
        if (t < t0) t1 = t + 1, t0 = std::max<int64_t>(0, t + 1 - C);
        const int64_t c = t - t0;  // row of the chunk buffers
        dh.add_(gout[t]);
        for (int64_t s = S - 1; s >= 0; --s) {
          Tensor hprev = s > 0 ? hmid[s - 1][t] : (t > 0 ? out[t - 1] : h0);
          T_* dxs = s == 0 ? dx0[t].data_ptr<T_>() : dxc[s - 1][c].data_ptr<T_>();
          const T_* gst = s == 0 ? gates0[t].data_ptr<T_>() : gatesR[s - 1][t].data_ptr<T_>();
          stage_backward<T_>(B, H, dh.data_ptr<T_>(), gst, hn[s][t].data_ptr<T_>(), hprev.data_ptr<T_>(),
                             drop ? masks[s][t].data_ptr<T_>() : nullptr, ln, ln ? xhat[s][t].data_ptr<T_>() : nullptr,
                             ln ? rstd[s][t].data_ptr<T_>() : nullptr, ln ? P[L.g(s)].data_ptr<T_>() : nullptr, dxs,
                             dy[s][c].data_ptr<T_>(), ln ? draw[s][c].data_ptr<T_>() : nullptr, dhz.data_ptr<T_>());
          // dh_prev = dh * z + d(U h) W  (one [B, 3H] x [3H, H] GEMM per stage and step)
          wp[static_cast<size_t>(s)].addmm(dh2, dhz, draw[s][c]);
          std::swap(dh, dh2);
        }
        if (t == t0) flush(t0, t1 - t0);
      }
    });
    res[0] = dx0;
    res[1] = dh;
    if (ln)
      for (int64_t s = 0; s < S; ++s) res[2 + L.b(s)] = res[2 + L.bhh(s)].view({3, H}).clone();
    return res;
  }
};

}  // namespace

GRUTuning& gru_tuning() {
  static GRUTuning t;
  return t;
}

std::pair<Tensor, Tensor> gru_recurrence(const Tensor& xp, const Tensor& h0, const std::vector<GRUStage>& stages,
                                         const GRURecurrenceOptions& opt) {
  TORCH_CHECK(xp.dim() == 3 && h0.dim() == 2 && !stages.empty() && xp.size(0) > 0,
              "fused gru_recurrence: expected xp [T>0, B, 3H], h0 [B, H] and at least one stage");
  const int64_t H = h0.size(1);
  TORCH_CHECK(xp.size(2) == 3 * H && xp.size(1) == h0.size(0), "fused gru_recurrence: xp ", xp.sizes(),
              " does not match h0 ", h0.sizes());
  std::vector<Tensor> params;
  for (size_t s = 0; s < stages.size(); ++s) {
    const auto& st = stages[s];
    params.push_back(st.w_hh);
    params.push_back(st.b_hh);
    if (s > 0) params.push_back(st.b_ih);
    if (opt.layer_norm) {
      params.push_back(st.ln_g);
      params.push_back(st.ln_b);
    }
  }
  auto r =
      torch_compat::autograd_apply<GRURecurrenceFn>(xp, h0, at::TensorList(params), static_cast<int64_t>(stages.size()),
                                                    opt.layer_norm, opt.candidate_dropout, opt.training);
  return {r[0], r[1]};
}

}  // namespace cs::fused
