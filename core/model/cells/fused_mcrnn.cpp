#include "cells/fused_mcrnn.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include <cstdlib>
#include <cstring>

#include "cells/baseline.h"
#include "cells/fused_common.h"
#include "cells/fused_math.h"
#include "cells/packed_gemm.h"
#include "cells/mcrnn.h"
#include "util/torch_compat.h"

namespace cs {

const char* mcrnn_fast_path_refusal(const McRnnOptions& o, const BaselineOptions* lstm_base, double weight_drop,
                                    bool training) {
  if (!lstm_base) return "model.base is not lstm: the fused MC-RNN recurrence has an LSTM base only";
  if (o.lstm_memory != LstmMemory::Prev) return "model.lstm_memory is not 'prev'";
  if (mcrnn_clamps_state(o.state_clamp, "lstm"))
    return "model.state_clamp is 'on': the fused MC-RNN recurrence has no clamp";
  if (lstm_base->layer_norm) return "model.layer_norm: the fused MC-RNN recurrence has no layer normalization";
  if (weight_drop > 0) return "model.weight_drop > 0: the fused MC-RNN recurrence has no weight drop";
  if (training && lstm_base->candidate_dropout > 0)
    return "model.candidate_dropout > 0 in training: the fused MC-RNN recurrence has no candidate dropout";
  return nullptr;
}

bool mcrnn_fast_path_applies(McRnnCellImpl& cell, const torch::Tensor& x, const StepContext& ctx) {
  if (!fast_paths_enabled() || ctx.probe || ctx.stepwise) return false;
  if (x.scalar_type() != torch::kFloat && x.scalar_type() != torch::kDouble) return false;
  auto* lstm = dynamic_cast<LSTMCellImpl*>(&cell.base());
  if (!lstm) return mcrnn_fast_path_refusal(cell.options(), nullptr, 0, cell.is_training()) == nullptr;
  return mcrnn_fast_path_refusal(cell.options(), &lstm->options(), lstm->weight_drop, lstm->is_training()) == nullptr;
}

namespace fused {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

McRnnTuning& mcrnn_tuning() {
  static McRnnTuning t = [] {
    McRnnTuning d;
    // For benchmarks: CELLSCOPE_MCRNN_SPLIT_MIN_BATCH=N moves the switch between eq. 2's two forms.
    if (const char* v = std::getenv("CELLSCOPE_MCRNN_SPLIT_MIN_BATCH")) d.split_channels_min_batch = std::atoll(v);
    return d;
  }();
  return t;
}

namespace {

// Eq. 1 for the step `t` (0-based within this call; global position t0 + t + 1): m[k] for k < K.
std::vector<int64_t> in_degrees(int64_t t0, int64_t t, int64_t n) {
  std::vector<int64_t> m(static_cast<size_t>(n - 1));
  for (int64_t k = 0; k < n - 1; ++k) m[static_cast<size_t>(k)] = mcrnn_in_degree(t0 + t + 1, k + 1, n);
  return m;
}

// The row [H] of h_{t-j}^k for batch row b: a channel output of this call (step t - j >= 0,
// hall [T, B, K, H]) or of the initial history (hist0 [B, K, n-1, H], distance j - t from the start).
template <typename T>
inline T* hrow(T* hall, T* hist0, int64_t t, int64_t j, int64_t b, int64_t k, int64_t B, int64_t K, int64_t n1,
               int64_t H) {
  if (t - j >= 0) return hall + (((t - j) * B + b) * K + k) * H;
  return hist0 + ((b * K + k) * n1 + (j - t - 1)) * H;
}

// Eq. 2's left operand for step t: U[b, k, j-1, :] = [j <= m_k] / m_k * h_{t-j}^k, so that
// s_{t-1} = U [B K, (n-1) H] x wcat (the step-wise path's (hist * coef) x wcat, same values).
template <typename T>
void build_u(T* U, T* hall, T* hist0, int64_t t, const std::vector<int64_t>& m, int64_t B, int64_t K, int64_t n1,
             int64_t H) {
  at::parallel_for(0, B * K, row_grain(n1 * H), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t b = row / K, k = row % K;
      const int64_t mk = m[static_cast<size_t>(k)];
      const T scale = static_cast<T>(1.0 / static_cast<double>(mk));
      for (int64_t j = 1; j <= n1; ++j) {
        T* dst = U + (row * n1 + (j - 1)) * H;
        if (j > mk) {
          for (int64_t i = 0; i < H; ++i) dst[i] = T(0);
          continue;
        }
        const T* src = hrow(hall, hist0, t, j, b, k, B, K, n1, H);
        for (int64_t i = 0; i < H; ++i) dst[i] = src[i] * scale;
      }
    }
  });
}

// The transpose of build_u: dU [B K, (n-1) H] of step t is added into the gradients of the
// h it was built from: step t - j's slot of the ring dring [n, B, K, H] (slot (t - j) mod n), or
// dhist0 [B, K, n-1, H] for the initial history.
template <typename T>
void scatter_du(const T* dU, T* dring, T* dhist0, int64_t t, const std::vector<int64_t>& m, int64_t B, int64_t K,
                int64_t n1, int64_t H) {
  // Rows (b, k) are disjoint targets for a fixed t: parallel over them is race-free.
  at::parallel_for(0, B * K, row_grain(n1 * H), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t b = row / K, k = row % K;
      const int64_t mk = m[static_cast<size_t>(k)];
      const T scale = static_cast<T>(1.0 / static_cast<double>(mk));
      for (int64_t j = 1; j <= mk; ++j) {
        const T* src = dU + (row * n1 + (j - 1)) * H;
        T* dst = t - j >= 0 ? dring + (((t - j) % (n1 + 1)) * B * K + row) * H
                            : dhist0 + ((b * K + k) * n1 + (j - t - 1)) * H;
        for (int64_t i = 0; i < H; ++i) dst[i] += src[i] * scale;
      }
    }
  });
}

// For the gradient of wcat's block j (W_j^T): the rows (t, b, k) of steps [ta, tb) whose channel
// has block j in its window (j <= m_t^k) are gathered in `rows` order: Hj gets
// [j <= m_t^k] / m_t^k h_{t-j}^k (column block j of build_u's U) and, unless ds_all (block j = 1,
// which every row has), Dj the same rows of dS, so that dW_j^T = sum over chunks of Hj^T Dj
// without the zero rows (U itself is not kept: it is 3x the outputs). Returns the row count.
template <typename T>
int64_t build_hj(T* Hj, T* Dj, const T* dS, int64_t dS_t0, T* hall, T* hist0, int64_t ta, int64_t tb, int64_t j,
                 int64_t t0, int64_t n, int64_t B, int64_t K, int64_t H, std::vector<int64_t>& rows) {
  const int64_t n1 = n - 1, R = B * K;
  rows.clear();
  for (int64_t t = ta; t < tb; ++t)
    for (int64_t row = 0; row < R; ++row)
      if (j <= mcrnn_in_degree(t0 + t + 1, row % K + 1, n)) rows.push_back(t * R + row);
  const int64_t cnt = static_cast<int64_t>(rows.size());
  at::parallel_for(0, cnt, row_grain(2 * H), [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t tr = rows[static_cast<size_t>(q)], t = tr / R, row = tr % R, b = row / K, k = row % K;
      const int64_t mk = mcrnn_in_degree(t0 + t + 1, k + 1, n);
      const T scale = static_cast<T>(1.0 / static_cast<double>(mk));
      const T* src = hrow(hall, hist0, t, j, b, k, B, K, n1, H);
      T* dst = Hj + q * H;
      for (int64_t i = 0; i < H; ++i) dst[i] = src[i] * scale;
      if (Dj) std::memcpy(Dj + q * H, dS + (tr - dS_t0 * R) * H, static_cast<size_t>(H) * sizeof(T));
    }
  });
  return cnt;
}

// LSTM step (eq. 3 with f = LSTM, gates i, f, g, o as torch), one pass per row (b, k): the gate
// pre-activations G [R, 4H] (U s + b_hh) get the shared input half xb [B, 4H] (W_ih x_t + b_ih)
// added and become (sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)) in place; c = f cprev + i g;
// h = o tanh(c). The transcendental functions are fused_math.h's vectorised row functions.
template <typename T>
void lstm_forward(int64_t B, int64_t K, int64_t H, T* G, const T* xb, const T* cprev, T* C, T* Hout) {
  at::parallel_for(0, B * K, row_grain(4 * H), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      T* g = G + row * 4 * H;
      const T* x = xb + (row / K) * 4 * H;
      for (int64_t j = 0; j < 4 * H; ++j) g[j] += x[j];
      sigmoid_inplace(g, 2 * H);
      tanh_inplace(g + 2 * H, H);
      sigmoid_inplace(g + 3 * H, H);
      const T* cp = cprev + row * H;
      T* c = C + row * H;
      T* h = Hout + row * H;
      for (int64_t j = 0; j < H; ++j) c[j] = g[H + j] * cp[j] + g[j] * g[2 * H + j];
      tanh_to(c, h, H);
      for (int64_t j = 0; j < H; ++j) h[j] *= g[3 * H + j];
    }
  });
}

// Eqs. 4-6 for one step, one pass per batch row b over its K channels: TH [B K, A] holds V_h h
// and becomes tanh(V_h h + V_x x) (vx [B, A]); e_k = r^T TH_k; a = softmax_k(e) (Aw [B, K]);
// out [B, H] = sum_k a_k h_k.
template <typename T>
void attention_forward(int64_t B, int64_t K, int64_t A, int64_t H, T* TH, const T* vx, const T* r, const T* Hs, T* Aw,
                       T* out) {
  at::parallel_for(0, B, row_grain(K * (A + H)), [&](int64_t b0, int64_t b1) {
    std::vector<T> e(static_cast<size_t>(K));
    for (int64_t b = b0; b < b1; ++b) {
      const T* v = vx + b * A;
      T emax = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < K; ++k) {
        T* th = TH + (b * K + k) * A;
        for (int64_t i = 0; i < A; ++i) th[i] += v[i];
        tanh_inplace(th, A);
        T d = 0;
        for (int64_t i = 0; i < A; ++i) d += r[i] * th[i];
        e[static_cast<size_t>(k)] = d;
        emax = std::max(emax, d);
      }
      T sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += (e[static_cast<size_t>(k)] = std::exp(e[static_cast<size_t>(k)] - emax));
      T* a = Aw + b * K;
      for (int64_t k = 0; k < K; ++k) a[k] = e[static_cast<size_t>(k)] / sum;
      T* o = out + b * H;
      for (int64_t i = 0; i < H; ++i) o[i] = T(0);
      for (int64_t k = 0; k < K; ++k) {
        const T* h = Hs + (b * K + k) * H;
        for (int64_t i = 0; i < H; ++i) o[i] += a[k] * h[i];
      }
    }
  });
}

// Backward of eqs. 4-6 for one step, per batch row b: go [B, H] the gradient of out; into dH
// [B K, H] (the ring slot of h_t) adds a_k go; de_k = a_k (da_k - sum_j a_j da_j) with
// da_k = h_k . go (eq. 5's softmax), into dE [B K]; dpre_k = de_k r (1 - TH_k^2) into dPre
// [B K, A] (the gradient of V_h h + V_x x); dvx [B, A] = sum_k dpre_k.
template <typename T>
void attention_backward(int64_t B, int64_t K, int64_t A, int64_t H, const T* Hs, const T* go, const T* Aw, const T* TH,
                        const T* r, T* dH, T* dE, T* dPre, T* dvx) {
  at::parallel_for(0, B, row_grain(K * (A + 2 * H)), [&](int64_t b0, int64_t b1) {
    std::vector<T> da(static_cast<size_t>(K));
    for (int64_t b = b0; b < b1; ++b) {
      const T* g = go + b * H;
      const T* a = Aw + b * K;
      T s = 0;
      for (int64_t k = 0; k < K; ++k) {
        const T* h = Hs + (b * K + k) * H;
        T* dh = dH + (b * K + k) * H;
        T d = 0;
        for (int64_t i = 0; i < H; ++i) {
          d += h[i] * g[i];
          dh[i] += a[k] * g[i];
        }
        da[static_cast<size_t>(k)] = d;
        s += a[k] * d;
      }
      T* dv = dvx + b * A;
      for (int64_t i = 0; i < A; ++i) dv[i] = T(0);
      for (int64_t k = 0; k < K; ++k) {
        const T de = a[k] * (da[static_cast<size_t>(k)] - s);
        dE[b * K + k] = de;
        const T* th = TH + (b * K + k) * A;
        T* dp = dPre + (b * K + k) * A;
        for (int64_t i = 0; i < A; ++i) {
          dp[i] = de * r[i] * (T(1) - th[i] * th[i]);
          dv[i] += dp[i];
        }
      }
    }
  });
}

// Backward of the LSTM step, per batch row b over its K channels (tanh(c) recomputed per row):
// dh [B K, H] (gradient of h), dc [B K, H] in: gradient of c from later steps; out: of cprev.
// Writes dG [B K, 4H], the gradient of the gate pre-activations, and dxb [B, 4H] = sum_k dG_k,
// the gradient of the shared input half.
template <typename T>
void lstm_backward(int64_t B, int64_t K, int64_t H, const T* G, const T* C, const T* cprev, const T* dh, T* dc, T* dG,
                   T* dxb) {
  at::parallel_for(0, B, row_grain(K * 6 * H), [&](int64_t b0, int64_t b1) {
    std::vector<T> tcs(static_cast<size_t>(H));
    for (int64_t b = b0; b < b1; ++b) {
      T* dx = dxb + b * 4 * H;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t row = b * K + k;
        const T* g = G + row * 4 * H;
        const T* cp = cprev + row * H;
        const T* d = dh + row * H;
        T* dcr = dc + row * H;
        T* o = dG + row * 4 * H;
        T* tcr = tcs.data();
        tanh_to(C + row * H, tcr, H);
        for (int64_t j = 0; j < H; ++j) {
          const T ig = g[j], fg = g[H + j], gg = g[2 * H + j], og = g[3 * H + j];
          const T tc = tcr[j];
          const T dct = dcr[j] + d[j] * og * (T(1) - tc * tc);
          o[j] = dct * gg * ig * (T(1) - ig);
          o[H + j] = dct * cp[j] * fg * (T(1) - fg);
          o[2 * H + j] = dct * ig * (T(1) - gg * gg);
          o[3 * H + j] = d[j] * tc * og * (T(1) - og);
          dcr[j] = dct * fg;
        }
        if (k == 0) std::memcpy(dx, o, static_cast<size_t>(4 * H) * sizeof(T));
        else
          for (int64_t j = 0; j < 4 * H; ++j) dx[j] += o[j];
      }
    }
  });
}

class McRnnFn : public torch::autograd::Function<McRnnFn> {
 public:
  static variable_list forward(AutogradContext* ctx, Tensor xb, Tensor vx, Tensor hist0, Tensor c0, Tensor wcat,
                               Tensor w_hh, Tensor b_hh, Tensor v_h, Tensor r, int64_t t0, int64_t n) {
    xb = xb.contiguous(), vx = vx.contiguous(), hist0 = hist0.contiguous(), c0 = c0.contiguous();
    wcat = wcat.contiguous(), w_hh = w_hh.contiguous(), b_hh = b_hh.contiguous();
    v_h = v_h.contiguous(), r = r.contiguous();
    const int64_t T = xb.size(0), B = xb.size(1), K = n - 1, n1 = n - 1, H = c0.size(2), A = v_h.size(0);
    const int64_t R = B * K;
    const auto opts = xb.options();
    const bool split = B >= mcrnn_tuning().split_channels_min_batch;
    // Saved for backward (pool_empty: fused_common.h): eq. 2's operands and results, the gates,
    // memories and outputs of every channel, eq. 4's tanh and eq. 5's weights.
    // (eq. 2's left operand U and tanh(c) are rebuilt in backward rather than kept: together 4H
    // values per row, a third of what the autograd path keeps per step.)
    Tensor Ut = pool_empty({R, n1 * H}, opts);   // eq. 2's left operand of the current step
    Tensor S = pool_empty({T, R, H}, opts);      // s_{t-1}^k (eq. 2), the LSTM's incoming state
    Tensor G = pool_empty({T, R, 4 * H}, opts);  // gates i, f, g, o (activated)
    Tensor C = pool_empty({T, R, H}, opts);      // c_t^k
    Tensor Hs = pool_empty({T, R, H}, opts);     // h_t^k (eq. 3)
    Tensor TH = pool_empty({T, R, A}, opts);     // tanh(V_h h + V_x x) (eq. 4)
    Tensor Aw = pool_empty({T, B, K}, opts);     // a_t^k (eq. 5)
    Tensor out = pool_empty({T, B, H}, opts);    // h_t^att (eq. 6)
    // The weights of the per-step products, packed once for the sequence (cells/packed_gemm.h).
    const fused::PackedMatrix pw(wcat), pwhh(w_hh.t()), pvh(v_h.t());
    AT_DISPATCH_FLOATING_TYPES(xb.scalar_type(), "fused_mcrnn_forward", [&] {
      using T_ = scalar_t;
      T_* hall = Hs.data_ptr<T_>();
      T_* h0p = hist0.data_ptr<T_>();
      for (int64_t t = 0; t < T; ++t) {
        const auto m = in_degrees(t0, t, n);
        Tensor St = S[t], Gt = G[t], Ct = C[t], Ht = Hs[t], THt = TH[t];
        build_u<T_>(Ut.data_ptr<T_>(), hall, h0p, t, m, B, K, n1, H);
        if (split) {  // eq. 2 per channel over its m_k predecessors (rows b K + k: strided views)
          for (int64_t k = 0; k < K; ++k) {
            const int64_t mk = m[static_cast<size_t>(k)];
            Tensor Sk = St.view({B, K, H}).select(1, k);
            pw.mm(Sk, Ut.view({B, K, n1 * H}).select(1, k).narrow(1, 0, mk * H));  // wcat's first m_k blocks
          }
        } else {
          pw.mm(St, Ut);  // eq. 2: s_{t-1}^k, all k and j at once (zero-padded window)
        }
        pwhh.addmm(Gt, b_hh, St);                                 // eq. 3: U s + b_hh ...
        const Tensor cprev = t > 0 ? C[t - 1] : c0.view({R, H});  // lstm_memory "prev": c_{t-1}^k
        // ... + W_ih x_t + b_ih (shared by the channels), the gates, c and h (eq. 3)
        lstm_forward<T_>(B, K, H, Gt.data_ptr<T_>(), xb[t].data_ptr<T_>(), cprev.data_ptr<T_>(), Ct.data_ptr<T_>(),
                         Ht.data_ptr<T_>());
        pvh.mm(THt, Ht);  // eq. 4: V_h h_t^k ...
        // ... + V_x x_t, tanh, e = r^T tanh(.), eq. 5's softmax, eq. 6's weighted sum
        attention_forward<T_>(B, K, A, H, THt.data_ptr<T_>(), vx[t].data_ptr<T_>(), r.data_ptr<T_>(), Ht.data_ptr<T_>(),
                              Aw[t].data_ptr<T_>(), out[t].data_ptr<T_>());
      }
    });
    // The final state: the window of the last n-1 channel outputs, the last memories.
    Tensor histT = at::empty({B, K, n1, H}, opts);
    for (int64_t d = 1; d <= n1; ++d)
      histT.select(2, d - 1).copy_(T - d >= 0 ? Hs[T - d].view({B, K, H}) : hist0.select(2, d - T - 1));
    Tensor cT = C[T - 1].view({B, K, H}).clone();
    ctx->save_for_backward({hist0, c0, wcat, w_hh, v_h, r});
    ctx->saved_data["S"] = S;
    ctx->saved_data["G"] = G;
    ctx->saved_data["C"] = C;
    ctx->saved_data["Hs"] = Hs;
    ctx->saved_data["TH"] = TH;
    ctx->saved_data["Aw"] = Aw;
    ctx->saved_data["t0"] = t0;
    ctx->saved_data["n"] = n;
    return {out, histT, cT};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto sv = ctx->get_saved_variables();
    Tensor hist0 = sv[0], c0 = sv[1], wcat = sv[2], w_hh = sv[3], v_h = sv[4], r = sv[5];
    TORCH_CHECK(ctx->saved_data.count("S") && ctx->saved_data["S"].isTensor(),
                "fused mcrnn: backward through the same graph twice is not supported (the buffers are released "
                "after the first backward); run the forward again");
    Tensor S = ctx->saved_data["S"].toTensor();
    Tensor G = ctx->saved_data["G"].toTensor(), C = ctx->saved_data["C"].toTensor();
    Tensor Hs = ctx->saved_data["Hs"].toTensor(), TH = ctx->saved_data["TH"].toTensor();
    Tensor Aw = ctx->saved_data["Aw"].toTensor();
    for (const char* k : {"S", "G", "C", "Hs", "TH", "Aw"}) ctx->saved_data.erase(k);
    const int64_t t0 = ctx->saved_data["t0"].toInt(), n = ctx->saved_data["n"].toInt();
    const int64_t T = Hs.size(0), R = Hs.size(1), H = Hs.size(2), K = n - 1, n1 = n - 1, B = R / K, A = v_h.size(0);
    const auto opts = Hs.options();
    const bool split = B >= mcrnn_tuning().split_channels_min_batch;

    Tensor gout = grads[0].defined() ? grads[0].contiguous() : at::zeros({T, B, H}, opts);
    // Gradient of h_t^k from eq. 6 and from the n-1 later steps whose window holds it (eq. 2): a
    // ring of n slots (step t in slot t mod n, cleared after use), not one slot per step.
    Tensor dring = at::zeros({n, R, H}, opts);
    Tensor dhist0 = at::zeros({B, K, n1, H}, opts);
    if (grads[1].defined())
      for (int64_t d = 1; d <= n1; ++d) {
        Tensor g = grads[1].select(2, d - 1);
        if (T - d >= 0) dring[(T - d) % n].view({B, K, H}).add_(g);
        else dhist0.select(2, d - T - 1).add_(g);
      }
    Tensor dc = grads[2].defined() ? grads[2].reshape({R, H}).clone() : at::zeros({R, H}, opts);
    // The backward runs in chunks of Cn steps (about mcrnn_tuning().chunk_rows rows of Cn B K): the
    // per-row gradients below are chunk buffers, and a chunk's weight gradients are one product
    // over its rows when it is done. (Whole-sequence buffers made the step need 22% more memory
    // than the autograd path at the bench shape.) dxb and dvx are returned: whole.
    const int64_t Cn = std::max<int64_t>(1, std::min<int64_t>(T, mcrnn_tuning().chunk_rows / std::max<int64_t>(1, R)));
    Tensor dG = pool_empty({Cn, R, 4 * H}, opts);  // gate pre-activations
    Tensor dS = pool_empty({Cn, R, H}, opts);      // s_{t-1}^k
    Tensor dPre = pool_empty({Cn, R, A}, opts);    // V_h h + V_x x
    Tensor dE = pool_empty({Cn, R}, opts);         // e_t^k
    Tensor dxb = at::empty({T, B, 4 * H}, opts);
    Tensor dvx = at::empty({T, B, A}, opts);
    Tensor dU = at::empty({R, n1 * H}, opts);
    Tensor Hj = pool_empty({Cn * R, H}, opts);
    Tensor Dj = n1 > 1 ? pool_empty({Cn * R, H}, opts) : Tensor();
    std::vector<int64_t> rows;
    Tensor dwcat = at::zeros({n1 * H, H}, opts);
    Tensor dw_hh = at::zeros({4 * H, H}, opts), db_hh = at::zeros({4 * H}, opts);
    Tensor dv_h = at::zeros({A, H}, opts), dr = at::zeros({A}, opts);
    const fused::PackedMatrix pvhb(v_h), pwhhb(w_hh), pwt(wcat.t());  // packed once (cells/packed_gemm.h)
    AT_DISPATCH_FLOATING_TYPES(Hs.scalar_type(), "fused_mcrnn_backward", [&] {
      using T_ = scalar_t;
      // Weight gradients of the chunk [ta, tb), held in rows 0 .. tb - ta of the chunk buffers.
      // dW_j^T = sum_t U_t[:, block j]^T ds_t over the rows with j <= m_t^k only (build_hj: a
      // third of the padded window's rows are zero for n = 4).
      auto flush = [&](int64_t ta, int64_t tb) {
        const int64_t nt = tb - ta;
        for (int64_t j = 1; j <= n1; ++j) {
          // every row has block 1 (m >= 1): its ds rows are dS's as they are
          const bool all = j == 1;
          const int64_t cnt = build_hj<T_>(Hj.data_ptr<T_>(), all ? nullptr : Dj.data_ptr<T_>(), dS.data_ptr<T_>(), ta,
                                           Hs.data_ptr<T_>(), hist0.data_ptr<T_>(), ta, tb, j, t0, n, B, K, H, rows);
          if (cnt == 0) continue;
          Tensor ds = all ? dS.narrow(0, 0, nt).reshape({cnt, H}) : Dj.narrow(0, 0, cnt);
          dwcat.narrow(0, (j - 1) * H, H).addmm_(Hj.narrow(0, 0, cnt).t(), ds);
        }
        Tensor dg = dG.narrow(0, 0, nt).reshape({nt * R, 4 * H});
        dw_hh.addmm_(dg.t(), S.narrow(0, ta, nt).reshape({nt * R, H}));
        db_hh.add_(dg.sum(0));
        dv_h.addmm_(dPre.narrow(0, 0, nt).reshape({nt * R, A}).t(), Hs.narrow(0, ta, nt).reshape({nt * R, H}));
        dr.addmv_(TH.narrow(0, ta, nt).reshape({nt * R, A}).t(), dE.narrow(0, 0, nt).reshape({nt * R}));
      };
      int64_t ta = T, tb = T;  // the current chunk [ta, tb)
      for (int64_t t = T - 1; t >= 0; --t) {
        if (t < ta) tb = t + 1, ta = std::max<int64_t>(0, t + 1 - Cn);
        const int64_t c = t - ta;  // row of the chunk buffers
        const auto m = in_degrees(t0, t, n);
        Tensor dHt = dring[t % n], dSt = dS[c], dGt = dG[c];
        Tensor dpre = dPre[c];
        // eqs. 6, 5 and 4's tanh (the ring slot of h_t gets a_k go)
        attention_backward<T_>(B, K, A, H, Hs[t].data_ptr<T_>(), gout[t].data_ptr<T_>(), Aw[t].data_ptr<T_>(),
                               TH[t].data_ptr<T_>(), r.data_ptr<T_>(), dHt.data_ptr<T_>(), dE[c].data_ptr<T_>(),
                               dpre.data_ptr<T_>(), dvx[t].data_ptr<T_>());
        pvhb.addmm(dHt, dHt, dpre);  // eq. 4: dh += dpre V_h
        // eq. 3: the LSTM step (memory "prev": c_{t-1}^k of the same channel)
        const Tensor cprev = t > 0 ? C[t - 1] : c0.view({R, H});
        lstm_backward<T_>(B, K, H, G[t].data_ptr<T_>(), C[t].data_ptr<T_>(), cprev.data_ptr<T_>(), dHt.data_ptr<T_>(),
                          dc.data_ptr<T_>(), dGt.data_ptr<T_>(), dxb[t].data_ptr<T_>());
        pwhhb.mm(dSt, dGt);
        // eq. 2: back into the h of the window (earlier steps or the initial history)
        if (split) {  // only the blocks j <= m_k of each channel are read by scatter_du
          for (int64_t k = 0; k < K; ++k) {
            const int64_t mk = m[static_cast<size_t>(k)];
            Tensor dUk = dU.view({B, K, n1 * H}).select(1, k).narrow(1, 0, mk * H);
            pwt.mm(dUk, dSt.view({B, K, H}).select(1, k));  // wcat^T's first m_k blocks of columns
          }
        } else {
          pwt.mm(dU, dSt);
        }
        dHt.zero_();  // slot t mod n is step t - n's next (none of this step's targets)
        scatter_du<T_>(dU.data_ptr<T_>(), dring.data_ptr<T_>(), dhist0.data_ptr<T_>(), t, m, B, K, n1, H);
        if (t == ta) flush(ta, tb);
      }
    });
    return {dxb, dvx, dhist0, dc.view({B, K, H}), dwcat, dw_hh, db_hh, dv_h, dr, Tensor(), Tensor()};
  }
};

}  // namespace

std::vector<Tensor> mcrnn_recurrence(const Tensor& xb, const Tensor& vx, const Tensor& hist0, const Tensor& c0,
                                     const McRnnWeights& w, int64_t t0, int64_t n) {
  TORCH_CHECK(n >= 2, "fused mcrnn: block size n must be >= 2, got ", n);
  TORCH_CHECK(xb.dim() == 3 && xb.size(0) > 0, "fused mcrnn: expected xb [T>0, B, 4H], got ", xb.sizes());
  const int64_t B = xb.size(1), K = n - 1, H = w.w_hh.size(1), A = w.v_h.size(0);
  TORCH_CHECK(xb.size(2) == 4 * H, "fused mcrnn: expected xb [T, B, ", 4 * H, "] (an LSTM base), got ", xb.sizes());
  TORCH_CHECK(vx.dim() == 3 && vx.size(0) == xb.size(0) && vx.size(1) == B && vx.size(2) == A,
              "fused mcrnn: expected vx [", xb.size(0), ", ", B, ", ", A, "], got ", vx.sizes());
  TORCH_CHECK(hist0.sizes() == at::IntArrayRef({B, K, n - 1, H}), "fused mcrnn: expected hist0 [", B, ", ", K, ", ",
              n - 1, ", ", H, "], got ", hist0.sizes());
  TORCH_CHECK(c0.sizes() == at::IntArrayRef({B, K, H}), "fused mcrnn: expected c0 [", B, ", ", K, ", ", H, "], got ",
              c0.sizes());
  return torch_compat::autograd_apply<McRnnFn>(xb, vx, hist0, c0, w.wcat, w.w_hh, w.b_hh, w.v_h, w.r, t0, n);
}

}  // namespace fused
}  // namespace cs
