#include "cells/token_fold.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cells/cell.h"
#include "cells/fused_common.h"

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
  if (in->tokens.size(0) != x.size(0) || in->tokens.size(1) != x.size(1) || in->table.size(1) != x.size(2)) return false;
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
  static variable_list forward(AutogradContext* ctx, Tensor P, Tensor tokens, int64_t left) {
    P = P.contiguous();
    tokens = tokens.contiguous();
    const int64_t V = P.size(0), k = P.size(1), G = P.size(2), T = tokens.size(0), B = tokens.size(1);
    // Every token must index a table row: checked once here, so the loops below need not.
    if (tokens.numel() > 0) {
      const int64_t lo = tokens.min().item<int64_t>(), hi = tokens.max().item<int64_t>();
      TORCH_CHECK(lo >= 0 && hi < V, "window_gather: tokens must lie in [0, ", V, "), got [", lo, ", ", hi, "]");
    }
    Tensor out = pool_empty({T, B, G}, P.options());  // fused_common.h: reused from step to step
    const int64_t* tok = tokens.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(P.scalar_type(), "window_gather", [&] {
      const scalar_t* p = P.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      const int64_t grain = std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(1, k * G));
      at::parallel_for(0, T * B, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t t = r / B, b = r % B;
          scalar_t* dst = o + r * G;
          bool first = true;
          for (int64_t j = 0; j < k; ++j) {
            const int64_t s = t - left + j;  // window j of position t reads position s
            if (s < 0 || s >= T) continue;   // zero padding contributes nothing
            const scalar_t* src = p + (tok[s * B + b] * k + j) * G;
            if (first) {
              std::memcpy(dst, src, sizeof(scalar_t) * static_cast<size_t>(G));
              first = false;
            } else {
              for (int64_t c = 0; c < G; ++c) dst[c] += src[c];
            }
          }
          if (first) std::memset(dst, 0, sizeof(scalar_t) * static_cast<size_t>(G));
        }
      });
    });
    ctx->save_for_backward({tokens});
    ctx->saved_data["V"] = V;
    ctx->saved_data["k"] = k;
    ctx->saved_data["left"] = left;
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Tensor tokens = ctx->get_saved_variables()[0];
    const int64_t V = ctx->saved_data["V"].toInt(), k = ctx->saved_data["k"].toInt(),
                  left = ctx->saved_data["left"].toInt();
    Tensor g = grads[0].contiguous();
    const int64_t T = g.size(0), B = g.size(1), G = g.size(2);
    Tensor dP = at::zeros({V, k, G}, g.options());
    const int64_t* tok = tokens.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "window_gather_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* d = dP.data_ptr<scalar_t>();
      // Each thread owns a block of columns of dP and adds every position's gradient into it:
      // no two threads write the same element, and each position's row is read once per window.
      const int64_t grain = std::max<int64_t>(16, G / std::max<int64_t>(1, at::get_num_threads()));
      at::parallel_for(0, G, grain, [&](int64_t c0, int64_t c1) {
        const int64_t n = c1 - c0;
        for (int64_t t = 0; t < T; ++t)
          for (int64_t b = 0; b < B; ++b) {
            const scalar_t* src = gp + (t * B + b) * G + c0;
            for (int64_t j = 0; j < k; ++j) {
              const int64_t s = t - left + j;
              if (s < 0 || s >= T) continue;
              scalar_t* dst = d + (tok[s * B + b] * k + j) * G + c0;
              for (int64_t c = 0; c < n; ++c) dst[c] += src[c];
            }
          }
      });
    });
    return {dP, Tensor(), Tensor()};
  }
};

}  // namespace

Tensor window_gather(const Tensor& P, const Tensor& tokens, int64_t left) {
  TORCH_CHECK(P.dim() == 3, "window_gather: expected P [V, k, G], got ", P.sizes());
  TORCH_CHECK(tokens.dim() == 2 && tokens.scalar_type() == at::kLong, "window_gather: expected int64 tokens [T, B], got ",
              tokens.sizes(), " ", tokens.scalar_type());
  TORCH_CHECK(left >= 0 && left < P.size(1), "window_gather: left padding must lie in [0, k = ", P.size(1), "), got ", left);
  return WindowGatherFn::apply(P, tokens, left)[0];
}

}  // namespace fused

at::Tensor fold_conv(const TokenInput& in, const at::Tensor& w, int64_t k, int64_t left) {
  const int64_t I = in.table.size(1);
  TORCH_CHECK(w.dim() == 2 && w.size(1) == k * I, "fold_conv: expected weight [C, ", k * I, "] for k = ", k,
              " and I = ", I, ", got ", w.sizes());
  const int64_t C = w.size(0), V = in.table.size(0);
  // W_j^T for every window j side by side: w [C, k, I] -> [I, k, C]; one [V, I] x [I, k C]
  // product for the whole table (the positions' k [T B, I] x [I, C] products, folded).
  auto wt = w.view({C, k, I}).permute({2, 1, 0}).reshape({I, k * C});
  auto P = in.table.mm(wt).view({V, k, C});
  return fused::window_gather(P, in.tokens, left);
}

at::Tensor fold_linear(const TokenInput& in, const at::Tensor& w) { return fold_conv(in, w, 1, 0); }

}  // namespace cs
