// Fast path of the GRU recurrence shared by GRU+DT (cells/baseline.h) and the three CRUs
// (cells/cru.h): one custom autograd function (torch::autograd::Function) over the whole
// sequence, with a hand-written backward through time. See cells/FUSED_NOTES.md.
//
// The recurrence, per time step t, runs S stages (S = 1 + L for GRU+DT with depth L; S = 1
// for a plain GRU and the CRUs). Stage 0's input term is xp[t] (the hoisted input half,
// [T, B, 3H], gate order r, z, n, computed by the caller under autograd as one big GEMM or
// convolution); a later stage's input term is the constant b_ih of that stage (zero input,
// MZU eqs. 15-17). Each stage is torch's GRU with the reset gate after U:
//   hp = U h + b_hh           (with layer_norm: LN per gate of U h, * g + b, then + b_hh)
//   r = s(x_r + hp_r), z = s(x_z + hp_z), n = tanh(x_n + r * hp_n), n <- dropout(n),
//   h' = n + z (h - n).
#pragma once
#include <torch/types.h>

#include <utility>
#include <vector>

namespace cs::fused {

struct GRUStage {
  torch::Tensor w_hh, b_hh;  // [3H, H], [3H]
  torch::Tensor b_ih;        // stages after the first: the constant input term [3H]; stage 0: undefined
  torch::Tensor ln_g, ln_b;  // [3, H] layer norm on U h (only with layer_norm)
};

struct GRURecurrenceOptions {
  bool layer_norm = false;
  double candidate_dropout = 0.0;  // applied only when training; masks drawn like F::dropout, in step order
  bool training = false;
};

// Rows (steps x B) per chunk of the backward: the per-row gradients of a chunk are held in chunk
// buffers and its weight gradients are one product over its rows (FUSED_NOTES.md).
struct GRUTuning {
  int64_t chunk_rows = 1024;
};
GRUTuning& gru_tuning();  // process-wide; tests set small chunks

// xp [T, B, 3H] (stage 0's input term), h0 [B, H]. Returns {outputs [T, B, H] of the last stage,
// final state [B, H]}. Differentiable w.r.t. xp, h0 and every stage parameter.
std::pair<torch::Tensor, torch::Tensor> gru_recurrence(const torch::Tensor& xp, const torch::Tensor& h0,
                                                       const std::vector<GRUStage>& stages,
                                                       const GRURecurrenceOptions& opt);

}  // namespace cs::fused
