// MC-RNN fast path (cells/mcrnn.h, FUSED_NOTES.md): the recurrence of an MC-RNN over an LSTM base as
// one custom autograd function with a hand-written backward through time. The inputs that do
// not depend on the recurrence (the LSTM's W_ih x + b_ih and eq. 4's V_x x, hoisted for all
// channels) and eq. 2's [W_1^T; ...; W_{n-1}^T] (built from the parameter D_j under autograd)
// stay outside, so autograd differentiates them. See cells/FUSED_NOTES.md ("MC-RNN").
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "cells/cell.h"

namespace cs {

class McRnnCellImpl;
struct McRnnOptions;
struct BaselineOptions;

// Why the fast path does not run an MC-RNN with options `o` over a base whose options are
// `lstm_base` (null: the base is not an LSTM), with the weight drop a task set on the base
// (GateCellBase::weight_drop), in training mode when `training`; nullptr = it runs: an LSTM base
// without layer norm and without weight drop, candidate dropout 0 (or evaluation), lstm_memory
// "prev". Asked on every call (mcrnn_fast_path_applies) and by the registry's hook
// (CellInfo::fast_path_refusal).
const char* mcrnn_fast_path_refusal(const McRnnOptions& o, const BaselineOptions* lstm_base, double weight_drop,
                                    bool training);
// Fast paths on (CELLSCOPE_FAST != 0), no probe, ctx.stepwise false, float or double input, and no
// refusal above (the step-wise autograd path runs otherwise).
bool mcrnn_fast_path_applies(McRnnCellImpl& cell, const torch::Tensor& x, const StepContext& ctx);

namespace fused {

struct McRnnWeights {
  at::Tensor wcat;  // [(n-1) H, H] = [W_1^T; ...; W_{n-1}^T]  (eq. 2)
  at::Tensor w_hh;  // [4H, H]  the LSTM's recurrent weights (gates i, f, g, o)
  at::Tensor b_hh;  // [4H]
  at::Tensor v_h;   // [A, H]   eq. 4's V_h
  at::Tensor r;     // [A]      eq. 4's r
};

// Tuning (tests set it to exercise both forms). Eq. 2 per step is either one GEMM
// [B K, (n-1) H] x [(n-1) H, H] over the zero-padded window, or, from this batch size on, one GEMM
// per channel over its m_t^k actual predecessors only ([B, m H] x [m H, H], rows strided): 6 of 9
// products for n = 4, but K GEMMs of B rows instead of one of B K rows. Since the per-step
// products run on packed weights, the split form is faster at batch 32 too
// (FUSED_NOTES.md), so it is the default at every batch size.
struct McRnnTuning {
  int64_t split_channels_min_batch = 1;
  // Rows (steps x B K) per chunk of the backward: the per-row gradients of a chunk live in chunk
  // buffers and its weight gradients are one product over its rows (FUSED_NOTES.md).
  int64_t chunk_rows = 4096;
};
McRnnTuning& mcrnn_tuning();

// xb [T, B, 4H] (W_ih x_t + b_ih), vx [T, B, A] (V_x x_t), hist0 [B, K, n-1, H] (h_{t0-j}^k at
// [:, k-1, j-1]), c0 [B, K, H] (the LSTM memory of each channel), t0 = steps already taken, n = the
// block size (K = n - 1 channels). Returns {h_att [T, B, H], hist_T [B, K, n-1, H], c_T [B, K, H]}:
// eqs. 1-6 exactly as McRnnCellImpl::step_at computes them, differentiable w.r.t. every tensor.
std::vector<at::Tensor> mcrnn_recurrence(const at::Tensor& xb, const at::Tensor& vx, const at::Tensor& hist0,
                                         const at::Tensor& c0, const McRnnWeights& w, int64_t t0, int64_t n);

}  // namespace fused
}  // namespace cs
