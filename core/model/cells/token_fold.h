// Folding an embedding lookup into the first layer's input map (TOKEN_FOLD_NOTES.md).
//
// When a layer's input is an embedding lookup with nothing in between (x = E[tokens]; the
// character LM without input dropout), a product that is linear in x can be computed on the
// table instead of on every position: x W^T = (E W^T)[tokens]. The same holds for the CRU's
// same-length convolution, whose k windows each take one row of E per position. The model, its
// parameters and its gradients are unchanged (exact algebra, rounding aside); the work is V table
// rows instead of T x B positions, which pays for a character vocabulary (V ~ 100) against
// thousands of positions per batch. Backward runs through the same two factors: the gradient of
// E W^T is a scatter-add of the positions' gradients into V rows, then two small products give
// dE and dW.
//
// Only the fast paths fold (never ctx.probe or ctx.stepwise, never with CELLSCOPE_FAST=0): the
// step-wise autograd path stays the reference that the fold is tested against.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace cs {

struct StepContext;

// The input of a layer that is an embedding lookup: x = table[tokens], tokens [T, B] (int64),
// table [V, I].
struct TokenInput {
  at::Tensor table;
  at::Tensor tokens;
};

// False when CELLSCOPE_FOLD is set to "0" (read at every call), or after set_token_fold_enabled(false).
bool token_fold_enabled();
void set_token_fold_enabled(bool on);  // tests: the fold against the unfolded fast path

// Whether a cell whose fast path applies should fold: the switch is on, `in` matches x
// ([T, B] tokens for x [T, B, I], a [V, I] table, CPU, x's dtype) and the table has at most half
// as many rows as there are positions (below that the table's products cost more than they save).
bool token_fold_applies(const TokenInput* in, const at::Tensor& x, const StepContext& ctx);

// The activation applied in the gather's pass (CRU: f of eq. 8).
enum class GatherAct : int64_t { None = 0, Relu = 1, Tanh = 2 };

// x W^T (+ bias) for x = in.table[in.tokens], as (table W^T)[tokens]: [T, B, G]; w [G, I].
at::Tensor fold_linear(const TokenInput& in, const at::Tensor& w, const at::Tensor& bias = {});

// act(same_length_conv(x, w, bias, k, left)) (cells/cru.h; bias undefined: none): w [C, k I],
// window j of position t reads x[t - left + j] (zero outside [0, T)); computed as
// act(sum_j (table W_j^T)[tokens[t - left + j]] + bias) with W_j = w[:, j I : (j + 1) I]: [T, B, C].
at::Tensor fold_conv(const TokenInput& in, const at::Tensor& w, int64_t k, int64_t left, const at::Tensor& bias = {},
                     GatherAct act = GatherAct::None);

// The forward FLOPs a fold skips, net: (positions - table rows) x 2 x (product's inner x outer
// sizes). A cell that folds adds it to StepContext::folded_flops (the bench's executed count).
double folded_flops(const TokenInput& in, int64_t positions, double flops_per_row);

namespace fused {
// act(sum_{j < k, 0 <= t - left + j < T} P[tokens[t - left + j], j, :] + bias) for P [V, k, G],
// bias [G] or undefined: [T, B, G], as one autograd function (backward: the activation's
// derivative, the bias's gradient and the scatter-add into [V, k, G] in one pass, parallel over
// columns).
at::Tensor window_gather(const at::Tensor& P, const at::Tensor& tokens, int64_t left, const at::Tensor& bias = {},
                         GatherAct act = GatherAct::None);
}  // namespace fused

}  // namespace cs
