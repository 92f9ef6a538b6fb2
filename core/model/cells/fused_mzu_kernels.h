// The MZU fast path's per-(M-function, batch row) loops (fused_mzu_kernels.cpp): the zone
// kernels and capsule routing, forward and backward, over float or double tensors laid out
// as the fused MZU's Run keeps them (fused_mzu.cpp). Sums run in double. Internal to the
// fused MZU: included by fused_mzu.cpp and fused_mzu_kernels.cpp only.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace cs::mzu_kernels {

using Tensor = at::Tensor;

// eq. 18's zone disagreement: cosines of Zb [KB, N, dz] into Dneg.
void zone_disagreement_fwd(const Tensor& Zb, const Tensor& Dneg);
void zone_disagreement_bwd(const Tensor& Zb, const Tensor& dDkb, const Tensor& dZ);
// eq. 6's sat attention: q3 (queries, keys, values) -> attn and the output O.
void sat_attention_fwd(const Tensor& q3, const Tensor& attn, const Tensor& O);
void sat_attention_out(const Tensor& attn, const Tensor& q3, const Tensor& O);
void sat_attention_bwd(const Tensor& dO, const Tensor& attn, const Tensor& q3, const Tensor& dqkv);
// eqs. 7-9's gcn adjacency, backward (its forward runs through ATen's products).
void gcn_adjacency_bwd(const Tensor& Zb, const Tensor& cmt, const Tensor& aht, const Tensor& degt, const Tensor& dAZt,
                       const Tensor& dDkb, bool relu_edges, bool abs_degree, const Tensor& dZt);
// eqs. 11-14's capsule routing: u -> the last iteration's o, saving the couplings and s.
void route_fwd(const Tensor& Ut, int64_t iters, const Tensor& Ct, const Tensor& St, const Tensor& Ot);
void route_bwd(const Tensor& Ut, const Tensor& Ct, const Tensor& St, const Tensor& dOt, const Tensor& dUt, int64_t B);

}  // namespace cs::mzu_kernels
