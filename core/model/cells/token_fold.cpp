#include "cells/token_fold.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cells/cell.h"
#include "cells/fused_common.h"
#include "util/loop_hints.h"
#include "util/torch_compat.h"

namespace cs {

namespace {
std::atomic<bool> g_fold_on{true};
}

bool token_fold_enabled() {
  if (!g_fold_on.load()) return false;
  const char* e = std::getenv("CELLSCOPE_FOLD");
  return !(e && std::strcmp(e, "0") == 0);
}

void set_token_fold_enabled(bool on) { g_fold_on.store(on); }

bool token_fold_applies(const TokenInput* in, const at::Tensor& x, const StepContext& ctx) {
  if (!in || !in->table.defined() || !in->tokens.defined()) return false;
  if (!token_fold_enabled() || !fast_paths_enabled() || ctx.probe || ctx.stepwise) return false;
  if (x.dim() != 3 || in->tokens.dim() != 2 || in->table.dim() != 2) return false;
  if (in->tokens.size(0) != x.size(0) || in->tokens.size(1) != x.size(1) || in->table.size(1) != x.size(2))
    return false;
  if (in->tokens.scalar_type() != at::kLong || in->table.scalar_type() != x.scalar_type()) return false;
  if (!fast_path_device_ok(x) || !fast_path_device_ok(in->table) || !fast_path_device_ok(in->tokens)) return false;
  // Each folded product costs V rows instead of T x B (three times: forward, dE, dW), plus a
  // gather forward and a scatter-add backward per position: fold only where the table is at
  // most half the positions (a character vocabulary against a batch of sequences).
  return 2 * in->table.size(0) <= x.size(0) * x.size(1);
}

double folded_flops(const TokenInput& in, int64_t positions, double flops_per_row) {
  return (static_cast<double>(positions) - static_cast<double>(in.table.size(0))) * flops_per_row;
}

namespace fused {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class WindowGatherFn : public torch::autograd::Function<WindowGatherFn> {
 public:
  // out = act(sum of the windows' rows + bias): bias and activation in the same pass as the
  // gather (a separate add and activation were two more passes over [T, B, G] each way; at batch
  // 256 CRU deep's is 236 MB).
  static variable_list forward(AutogradContext* ctx, Tensor P, Tensor bias, Tensor tokens, int64_t left, int64_t act) {
    P = P.contiguous();
    tokens = tokens.contiguous();
    const int64_t V = P.size(0), k = P.size(1), G = P.size(2), T = tokens.size(0), B = tokens.size(1);
    const bool has_bias = bias.numel() > 0;  // none: an empty tensor (apply() wants defined inputs)
    if (has_bias) bias = bias.contiguous();
    // Every token must index a table row: checked once here, so the loops below need not.
    if (tokens.numel() > 0) {
      const int64_t lo = tokens.min().item<int64_t>(), hi = tokens.max().item<int64_t>();
      TORCH_CHECK(lo >= 0 && hi < V, "window_gather: tokens must lie in [0, ", V, "), got [", lo, ", ", hi, "]");
    }
    Tensor out = pool_empty({T, B, G}, P.options());  // fused_common.h: reused from step to step
    const int64_t* tok = tokens.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(P.scalar_type(), "window_gather", [&] {
      const scalar_t* p = P.data_ptr<scalar_t>();
      const scalar_t* bp = has_bias ? bias.data_ptr<scalar_t>() : nullptr;
      scalar_t* o = out.data_ptr<scalar_t>();
      const int64_t grain = fused::row_grain(k * G);
      at::parallel_for(0, T * B, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t t = r / B, b = r % B;
          scalar_t* dst = o + r * G;
          if (bp) std::memcpy(dst, bp, sizeof(scalar_t) * static_cast<size_t>(G));
          else std::memset(dst, 0, sizeof(scalar_t) * static_cast<size_t>(G));
          for (int64_t j = 0; j < k; ++j) {
            const int64_t s = t - left + j;  // window j of position t reads position s
            if (s < 0 || s >= T) continue;   // zero padding contributes nothing
            const scalar_t* src = p + (tok[s * B + b] * k + j) * G;
            CS_IVDEP
            for (int64_t c = 0; c < G; ++c) dst[c] += src[c];
          }
          if (act == static_cast<int64_t>(GatherAct::Relu)) {
            CS_IVDEP
            for (int64_t c = 0; c < G; ++c) {
              const scalar_t v = dst[c];
              dst[c] = v < scalar_t(0) ? scalar_t(0) : v;  // NaN stays NaN, as torch::relu
            }
          } else if (act == static_cast<int64_t>(GatherAct::Tanh)) {
            for (int64_t c = 0; c < G; ++c) dst[c] = std::tanh(dst[c]);
          }
        }
      });
    });
    // the activation's derivative is read off its output (relu: > 0; tanh: 1 - out^2)
    if (act != static_cast<int64_t>(GatherAct::None)) ctx->save_for_backward({tokens, out});
    else ctx->save_for_backward({tokens});
    ctx->saved_data["V"] = V;
    ctx->saved_data["k"] = k;
    ctx->saved_data["left"] = left;
    ctx->saved_data["act"] = act;
    ctx->saved_data["bias"] = has_bias;
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    Tensor tokens = saved[0];
    const int64_t V = ctx->saved_data["V"].toInt(), k = ctx->saved_data["k"].toInt(),
                  left = ctx->saved_data["left"].toInt(), act = ctx->saved_data["act"].toInt();
    const bool has_bias = ctx->saved_data["bias"].toBool();
    Tensor out = act != static_cast<int64_t>(GatherAct::None) ? saved[1] : Tensor();
    Tensor g = grads[0].contiguous();
    const int64_t T = g.size(0), B = g.size(1), G = g.size(2);
    Tensor dP = at::zeros({V, k, G}, g.options());
    Tensor db = has_bias ? at::zeros({G}, g.options()) : Tensor();
    const int64_t* tok = tokens.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "window_gather_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      const scalar_t* op = out.defined() ? out.data_ptr<scalar_t>() : nullptr;
      scalar_t* d = dP.data_ptr<scalar_t>();
      scalar_t* dbp = has_bias ? db.data_ptr<scalar_t>() : nullptr;
      // Each thread owns a block of columns of dP (and of the bias's gradient) and adds every
      // position's gradient into it: no two threads write the same element, and each position's
      // row is read once (the activation's derivative applied then, into a per-thread row).
      const int64_t grain = std::max<int64_t>(16, G / std::max<int64_t>(1, at::get_num_threads()));
      at::parallel_for(0, G, grain, [&](int64_t c0, int64_t c1) {
        const int64_t n = c1 - c0;
        std::vector<scalar_t> row_buf(static_cast<size_t>(n));
        scalar_t* row = row_buf.data();
        scalar_t* dbc = dbp ? dbp + c0 : nullptr;
        // The loops below have no dependence between iterations and the rows never overlap (the
        // gradient, the output, the per-thread row, the bias's and the table's gradients are
        // distinct buffers): ivdep lets GCC vectorise them without runtime overlap checks, which
        // it otherwise gave up on here (without it this pass took 5x its vectorised time).
        for (int64_t t = 0; t < T; ++t)
          for (int64_t b = 0; b < B; ++b) {
            const int64_t r = t * B + b;
            const scalar_t* src = gp + r * G + c0;
            if (op) {
              const scalar_t* o = op + r * G + c0;
              if (act == static_cast<int64_t>(GatherAct::Relu)) {
                CS_IVDEP
                for (int64_t c = 0; c < n; ++c) {
                  const scalar_t v = src[c];                       // read unconditionally, or GCC keeps the loop scalar
                  row[c] = o[c] <= scalar_t(0) ? scalar_t(0) : v;  // as ATen's threshold_backward
                }
              } else {
                CS_IVDEP
                for (int64_t c = 0; c < n; ++c) row[c] = src[c] * (scalar_t(1) - o[c] * o[c]);
              }
              src = row;
            }
            if (dbc) {
              CS_IVDEP
              for (int64_t c = 0; c < n; ++c) dbc[c] += src[c];
            }
            for (int64_t j = 0; j < k; ++j) {
              const int64_t s = t - left + j;
              if (s < 0 || s >= T) continue;
              scalar_t* dst = d + (tok[s * B + b] * k + j) * G + c0;
              CS_IVDEP
              for (int64_t c = 0; c < n; ++c) dst[c] += src[c];
            }
          }
      });
    });
    return {dP, db, Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

Tensor window_gather(const Tensor& P, const Tensor& tokens, int64_t left, const Tensor& bias, GatherAct act) {
  TORCH_CHECK(P.dim() == 3, "window_gather: expected P [V, k, G], got ", P.sizes());
  TORCH_CHECK(tokens.dim() == 2 && tokens.scalar_type() == at::kLong,
              "window_gather: expected int64 tokens [T, B], got ", tokens.sizes(), " ", tokens.scalar_type());
  TORCH_CHECK(left >= 0 && left < P.size(1), "window_gather: left padding must lie in [0, k = ", P.size(1), "), got ",
              left);
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == P.size(2)), "window_gather: expected bias [",
              P.size(2), "], got ", bias.sizes());
  return torch_compat::autograd_apply<WindowGatherFn>(P, bias.defined() ? bias : at::empty({0}, P.options()), tokens,
                                                      left, static_cast<int64_t>(act))[0];
}

}  // namespace fused

at::Tensor fold_conv(const TokenInput& in, const at::Tensor& w, int64_t k, int64_t left, const at::Tensor& bias,
                     GatherAct act) {
  const int64_t I = in.table.size(1);
  TORCH_CHECK(w.dim() == 2 && w.size(1) == k * I, "fold_conv: expected weight [C, ", k * I, "] for k = ", k,
              " and I = ", I, ", got ", w.sizes());
  const int64_t C = w.size(0), V = in.table.size(0);
  // W_j^T for every window j side by side: w [C, k, I] -> [I, k, C]; one [V, I] x [I, k C]
  // product for the whole table (the positions' k [T B, I] x [I, C] products, folded).
  auto wt = w.view({C, k, I}).permute({2, 1, 0}).reshape({I, k * C});
  auto P = in.table.mm(wt).view({V, k, C});
  return fused::window_gather(P, in.tokens, left, bias, act);
}

at::Tensor fold_linear(const TokenInput& in, const at::Tensor& w, const at::Tensor& bias) {
  return fold_conv(in, w, 1, 0, bias);
}

}  // namespace cs
