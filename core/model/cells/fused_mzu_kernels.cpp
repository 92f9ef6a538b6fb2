// The MZU fast path's loops over (M-function, batch row): the zone kernels (eq. 6's sat
// attention, eqs. 7-9's gcn adjacency, eq. 18's zone disagreement) and capsule routing (eqs.
// 11-14), forward and backward. Called by the fused MZU's Run (fused_mzu.cpp); the layout of
// each tensor argument is described where its function is defined. FUSED_NOTES.md.
#include "cells/fused_mzu_kernels.h"

#include <ATen/ATen.h>
#include <torch/types.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cells/fused_mzu.h"

namespace cs::mzu_kernels {

// ------------------------------------------------------------------ per-(M-function, batch row) zone kernels
// The zone-level work of one step is N x N (zones) per (k, b): cosines (eq. 7 / eq. 18), the
// sat attention (eq. 6) and the gcn adjacency (eqs. 7-9). As bmm over K B matrices of N x d_z
// it is K B tiny GEMM calls each (ATen 1.13 loops over the batch), several thousand serial
// calls per step with their dispatch; here each is one loop over (k, b), parallel over rows.
// Sums run in double (float tensors too); see FUSED_NOTES.md ("MZU fast path at 2 threads").
template <typename S>
struct ZoneKernels {
  // norms of the zones (clamped as F::normalize / the step-wise path: max(||z||, 1e-12)). The
  // forward quantities are computed in the tensor's type and order of operations of the
  // step-wise path (normalise, then dot products): the gcn degree clamp makes the gradient
  // discontinuous, and in float a differently rounded degree can fall on the other side of it.
  static void norms(const S* Z, int64_t N, int64_t dz, double* nc) {
    for (int64_t i = 0; i < N; ++i) {
      S s = 0;
      const S* zi = Z + i * dz;
      for (int64_t e = 0; e < dz; ++e) s += zi[e] * zi[e];
      nc[i] = static_cast<double>(std::max<S>(std::sqrt(s), static_cast<S>(1e-12)));
    }
  }
  // cm[i, j] = cos(z_i, z_j) = zn_i . zn_j; returns their mean
  static double cosines(const S* Z, int64_t N, int64_t dz, const double* nc, double* cm) {
    double mean = 0;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = i; j < N; ++j) {
        S s = 0;
        const S *zi = Z + i * dz, *zj = Z + j * dz;
        const S ni = static_cast<S>(nc[i]), nj = static_cast<S>(nc[j]);
        for (int64_t e = 0; e < dz; ++e) s += (zi[e] / ni) * (zj[e] / nj);
        cm[i * N + j] = cm[j * N + i] = static_cast<double>(s);
        mean += i == j ? s : 2 * static_cast<double>(s);
      }
    return mean / static_cast<double>(N * N);
  }
  // dZ += d/dZ of sum_ij dcos_ij cos_ij (dcos [N, N], symmetrised)
  static void cos_backward(const S* Z, int64_t N, int64_t dz, const double* nc, const double* dcos, S* dZ,
                           double* dzn) {
    for (int64_t i = 0; i < N; ++i) {
      // dzn_i = sum_j (dcos_ij + dcos_ji) zn_j ; dZ_i += (dzn_i - zn_i (dzn_i . zn_i)) / nc_i
      for (int64_t e = 0; e < dz; ++e) dzn[e] = 0;
      for (int64_t j = 0; j < N; ++j) {
        const double c = (dcos[i * N + j] + dcos[j * N + i]) / nc[j];
        if (c == 0) continue;
        const S* zj = Z + j * dz;
        for (int64_t e = 0; e < dz; ++e) dzn[e] += c * zj[e];
      }
      const S* zi = Z + i * dz;
      double dot = 0;
      for (int64_t e = 0; e < dz; ++e) dot += dzn[e] * zi[e];
      dot /= nc[i];
      S* di = dZ + i * dz;
      for (int64_t e = 0; e < dz; ++e) di[e] += static_cast<S>((dzn[e] - zi[e] / nc[i] * dot) / nc[i]);
    }
  }
};

// Grain of the (k, b) loops: about 32k multiply-adds per task.
inline int64_t zone_grain(int64_t N, int64_t dz) {
  if (fused_mzu_tuning().zone_grain > 0) return fused_mzu_tuning().zone_grain;
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, 4 * N * N * dz));
}

// Forward of the cosines only (sat, cap: the D metric / eq. 18): D[kb] = -mean cos.
void zone_disagreement_fwd(const Tensor& Zb, const Tensor& Dneg) {
  const int64_t KB = Zb.size(0), N = Zb.size(1), dz = Zb.size(2);
  AT_DISPATCH_FLOATING_TYPES(Zb.scalar_type(), "zone_disagreement_fwd", [&] {
    const scalar_t* Z = Zb.data_ptr<scalar_t>();
    scalar_t* D = Dneg.data_ptr<scalar_t>();
    at::parallel_for(0, KB, zone_grain(N, dz), [&](int64_t b0, int64_t b1) {
      std::vector<double> nc(static_cast<size_t>(N)), cm(static_cast<size_t>(N * N));
      for (int64_t kb = b0; kb < b1; ++kb) {
        const scalar_t* z = Z + kb * N * dz;
        ZoneKernels<scalar_t>::norms(z, N, dz, nc.data());
        D[kb] = static_cast<scalar_t>(-ZoneKernels<scalar_t>::cosines(z, N, dz, nc.data(), cm.data()));
      }
    });
  });
}

// sat forward: q3 [KB, N, 3 d_z] -> attn [KB, N, N], O [KB, N, d_z]
void sat_attention_fwd(const Tensor& q3, const Tensor& attn, const Tensor& O) {
  const int64_t KB = q3.size(0), N = q3.size(1), dz = q3.size(2) / 3;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dz));
  AT_DISPATCH_FLOATING_TYPES(q3.scalar_type(), "sat_attention_fwd", [&] {
    const scalar_t* Q = q3.data_ptr<scalar_t>();
    scalar_t* A = attn.data_ptr<scalar_t>();
    scalar_t* Op = O.data_ptr<scalar_t>();
    at::parallel_for(0, KB, zone_grain(N, dz), [&](int64_t b0, int64_t b1) {
      std::vector<double> s(static_cast<size_t>(N)), o(static_cast<size_t>(dz));
      for (int64_t kb = b0; kb < b1; ++kb) {
        const scalar_t* base = Q + kb * N * 3 * dz;
        for (int64_t i = 0; i < N; ++i) {
          const scalar_t* q = base + i * 3 * dz;
          double mx = -INFINITY;
          for (int64_t j = 0; j < N; ++j) {
            const scalar_t* k = base + j * 3 * dz + dz;
            double acc = 0;
            for (int64_t e = 0; e < dz; ++e) acc += static_cast<double>(q[e]) * k[e];
            s[static_cast<size_t>(j)] = acc * scale;
            mx = std::max(mx, s[static_cast<size_t>(j)]);
          }
          double sum = 0;
          for (int64_t j = 0; j < N; ++j) sum += (s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - mx));
          scalar_t* a = A + (kb * N + i) * N;
          for (int64_t e = 0; e < dz; ++e) o[static_cast<size_t>(e)] = 0;
          for (int64_t j = 0; j < N; ++j) {
            const scalar_t aij = static_cast<scalar_t>(s[static_cast<size_t>(j)] / sum);
            a[j] = aij;
            const scalar_t* v = base + j * 3 * dz + 2 * dz;
            for (int64_t e = 0; e < dz; ++e) o[static_cast<size_t>(e)] += static_cast<double>(aij) * v[e];
          }
          scalar_t* op = Op + (kb * N + i) * dz;
          for (int64_t e = 0; e < dz; ++e) op[e] = static_cast<scalar_t>(o[static_cast<size_t>(e)]);
        }
      }
    });
  });
}

// eq. 6's output again, O = A V, from the saved attention A [KB, N, N] and q3 (its V third): the
// same sums in the same order as sat_attention_fwd (bitwise its O). O is [K, B N, d_z] with any
// stride between the K blocks (a chunk buffer), each block contiguous. Backward uses it instead
// of keeping every step's O (as much memory as the zones) for the weight gradient of eq. 5's W_1.
void sat_attention_out(const Tensor& attn, const Tensor& q3, const Tensor& O) {
  const int64_t KB = q3.size(0), N = q3.size(1), dz = q3.size(2) / 3, K = O.size(0), B = KB / K;
  TORCH_CHECK(O.size(1) == B * N && O.size(2) == dz && O.stride(1) == dz && O.stride(2) == 1,
              "sat_attention_out: expected O [", K, ", ", B * N, ", ", dz, "] with contiguous blocks, got ", O.sizes(),
              " strides ", O.strides());
  AT_DISPATCH_FLOATING_TYPES(q3.scalar_type(), "sat_attention_out", [&] {
    const scalar_t* Q = q3.data_ptr<scalar_t>();
    const scalar_t* A = attn.data_ptr<scalar_t>();
    scalar_t* Op = O.data_ptr<scalar_t>();
    const int64_t kstride = O.stride(0);
    at::parallel_for(0, KB, zone_grain(N, dz), [&](int64_t b0, int64_t b1) {
      std::vector<double> o(static_cast<size_t>(dz));
      for (int64_t kb = b0; kb < b1; ++kb) {
        const scalar_t* base = Q + kb * N * 3 * dz;
        scalar_t* ob = Op + (kb / B) * kstride + (kb % B) * N * dz;
        for (int64_t i = 0; i < N; ++i) {
          const scalar_t* a = A + (kb * N + i) * N;
          for (int64_t e = 0; e < dz; ++e) o[static_cast<size_t>(e)] = 0;
          for (int64_t j = 0; j < N; ++j) {
            const scalar_t* v = base + j * 3 * dz + 2 * dz;
            for (int64_t e = 0; e < dz; ++e) o[static_cast<size_t>(e)] += static_cast<double>(a[j]) * v[e];
          }
          for (int64_t e = 0; e < dz; ++e) ob[i * dz + e] = static_cast<scalar_t>(o[static_cast<size_t>(e)]);
        }
      }
    });
  });
}

// sat backward: dO [KB, N, d_z] -> dqkv [KB, N, 3 d_z]; plus (dD defined) the eq. 18 term
// through the cosines of Zb into dZ (accumulated).
void sat_attention_bwd(const Tensor& dO, const Tensor& attn, const Tensor& q3, const Tensor& dqkv) {
  const int64_t KB = q3.size(0), N = q3.size(1), dz = q3.size(2) / 3;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dz));
  AT_DISPATCH_FLOATING_TYPES(q3.scalar_type(), "sat_attention_bwd", [&] {
    const scalar_t* Q = q3.data_ptr<scalar_t>();
    const scalar_t* A = attn.data_ptr<scalar_t>();
    const scalar_t* G = dO.data_ptr<scalar_t>();
    scalar_t* D = dqkv.data_ptr<scalar_t>();
    at::parallel_for(0, KB, zone_grain(N, dz), [&](int64_t b0, int64_t b1) {
      std::vector<double> ds(static_cast<size_t>(N * N)), acc(static_cast<size_t>(dz));
      for (int64_t kb = b0; kb < b1; ++kb) {
        const scalar_t* base = Q + kb * N * 3 * dz;
        const scalar_t* a = A + kb * N * N;
        const scalar_t* g = G + kb * N * dz;
        scalar_t* d = D + kb * N * 3 * dz;
        // dat_ij = dO_i . v_j ; dS = softmax backward, times the scale
        for (int64_t i = 0; i < N; ++i) {
          double dot = 0;
          for (int64_t j = 0; j < N; ++j) {
            const scalar_t* v = base + j * 3 * dz + 2 * dz;
            double s = 0;
            for (int64_t e = 0; e < dz; ++e) s += static_cast<double>(g[i * dz + e]) * v[e];
            ds[static_cast<size_t>(i * N + j)] = s;
            dot += s * a[i * N + j];
          }
          for (int64_t j = 0; j < N; ++j)
            ds[static_cast<size_t>(i * N + j)] = a[i * N + j] * (ds[static_cast<size_t>(i * N + j)] - dot) * scale;
        }
        for (int64_t i = 0; i < N; ++i) {
          // dq_i = sum_j dS_ij k_j
          for (int64_t e = 0; e < dz; ++e) acc[static_cast<size_t>(e)] = 0;
          for (int64_t j = 0; j < N; ++j) {
            const double c = ds[static_cast<size_t>(i * N + j)];
            const scalar_t* k = base + j * 3 * dz + dz;
            for (int64_t e = 0; e < dz; ++e) acc[static_cast<size_t>(e)] += c * k[e];
          }
          for (int64_t e = 0; e < dz; ++e) d[i * 3 * dz + e] = static_cast<scalar_t>(acc[static_cast<size_t>(e)]);
          // dk_i = sum_j dS_ji q_j
          for (int64_t e = 0; e < dz; ++e) acc[static_cast<size_t>(e)] = 0;
          for (int64_t j = 0; j < N; ++j) {
            const double c = ds[static_cast<size_t>(j * N + i)];
            const scalar_t* q = base + j * 3 * dz;
            for (int64_t e = 0; e < dz; ++e) acc[static_cast<size_t>(e)] += c * q[e];
          }
          for (int64_t e = 0; e < dz; ++e) d[i * 3 * dz + dz + e] = static_cast<scalar_t>(acc[static_cast<size_t>(e)]);
          // dv_i = sum_j attn_ji dO_j
          for (int64_t e = 0; e < dz; ++e) acc[static_cast<size_t>(e)] = 0;
          for (int64_t j = 0; j < N; ++j) {
            const double c = a[j * N + i];
            for (int64_t e = 0; e < dz; ++e) acc[static_cast<size_t>(e)] += c * g[j * dz + e];
          }
          for (int64_t e = 0; e < dz; ++e)
            d[i * 3 * dz + 2 * dz + e] = static_cast<scalar_t>(acc[static_cast<size_t>(e)]);
        }
      }
    });
  });
}

// eq. 18's term alone (sat, cap): dZ += d/dZ of sum_ij c_kb cos_ij with c_kb = -dD_kb / N^2
// (dDkb [KB], contiguous).
void zone_disagreement_bwd(const Tensor& Zb, const Tensor& dDkb, const Tensor& dZ) {
  const int64_t KB = Zb.size(0), N = Zb.size(1), dz = Zb.size(2);
  AT_DISPATCH_FLOATING_TYPES(Zb.scalar_type(), "zone_disagreement_bwd", [&] {
    const scalar_t* Z = Zb.data_ptr<scalar_t>();
    const scalar_t* dD = dDkb.data_ptr<scalar_t>();
    scalar_t* dz_ = dZ.data_ptr<scalar_t>();
    at::parallel_for(0, KB, zone_grain(N, dz), [&](int64_t b0, int64_t b1) {
      std::vector<double> nc(static_cast<size_t>(N)), dc(static_cast<size_t>(N * N)), dzn(static_cast<size_t>(dz));
      for (int64_t kb = b0; kb < b1; ++kb) {
        const double c = -static_cast<double>(dD[kb]) / static_cast<double>(N * N);
        if (c == 0) continue;
        const scalar_t* z = Z + kb * N * dz;
        ZoneKernels<scalar_t>::norms(z, N, dz, nc.data());
        std::fill(dc.begin(), dc.end(), c);
        ZoneKernels<scalar_t>::cos_backward(z, N, dz, nc.data(), dc.data(), dz_ + kb * N * dz, dzn.data());
      }
    });
  });
}

// gcn backward: dAZ [KB, N, d_z] (and dDkb [KB] of eq. 18, or undefined) -> dZ [KB, N, d_z]
// (written): through A^ Z, the normalisation (degree clamp, on the forward's side: deg [KB, N]
// as forward computed it), the edges and the cosines. cm, A^: the forward's [KB, N, N].
void gcn_adjacency_bwd(const Tensor& Zb, const Tensor& cmt, const Tensor& aht, const Tensor& degt, const Tensor& dAZt,
                       const Tensor& dDkb, bool relu_edges, bool abs_degree, const Tensor& dZt) {
  const int64_t KB = Zb.size(0), N = Zb.size(1), dz = Zb.size(2);
  AT_DISPATCH_FLOATING_TYPES(Zb.scalar_type(), "gcn_adjacency_bwd", [&] {
    const scalar_t *Z = Zb.data_ptr<scalar_t>(), *CM = cmt.data_ptr<scalar_t>(), *AH = aht.data_ptr<scalar_t>(),
                   *G = dAZt.data_ptr<scalar_t>(), *DEG = degt.data_ptr<scalar_t>();
    const scalar_t* dD = dDkb.defined() ? dDkb.data_ptr<scalar_t>() : nullptr;
    scalar_t* DZ = dZt.data_ptr<scalar_t>();
    at::parallel_for(0, KB, zone_grain(N, dz), [&](int64_t b0, int64_t b1) {
      const size_t NN = static_cast<size_t>(N * N);
      std::vector<double> nc(static_cast<size_t>(N)), dAh(NN), A(NN), dA(NN), deg(static_cast<size_t>(N)),
          dinv(static_cast<size_t>(N)), ddeg(static_cast<size_t>(N)), acc(static_cast<size_t>(dz));
      for (int64_t kb = b0; kb < b1; ++kb) {
        const scalar_t* z = Z + kb * N * dz;
        const scalar_t* g = G + kb * N * dz;
        const scalar_t* cm = CM + kb * N * N;
        const scalar_t* ah = AH + kb * N * N;
        scalar_t* dzo = DZ + kb * N * dz;
        // through A^ Z: dAh_ij = dAZ_i . z_j ; dZ_j = sum_i Ah_ij dAZ_i
        for (int64_t i = 0; i < N; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double s = 0;
            for (int64_t e = 0; e < dz; ++e) s += static_cast<double>(g[i * dz + e]) * z[j * dz + e];
            dAh[static_cast<size_t>(i * N + j)] = s;
          }
        for (int64_t j = 0; j < N; ++j) {
          for (int64_t e = 0; e < dz; ++e) acc[static_cast<size_t>(e)] = 0;
          for (int64_t i = 0; i < N; ++i) {
            const double c = ah[i * N + j];
            for (int64_t e = 0; e < dz; ++e) acc[static_cast<size_t>(e)] += c * g[i * dz + e];
          }
          for (int64_t e = 0; e < dz; ++e) dzo[j * dz + e] = static_cast<scalar_t>(acc[static_cast<size_t>(e)]);
        }
        // through A^ = D^-1/2 A D^-1/2 (degree clamped at 1e-2; with abs_degree D_ii = sum_j |A_ij|,
        // whose derivative in A_ij is sign(A_ij), 0 at 0 as autograd's abs)
        for (int64_t i = 0; i < N; ++i) {
          for (int64_t j = 0; j < N; ++j) {
            const scalar_t c = cm[i * N + j];
            A[static_cast<size_t>(i * N + j)] =
                static_cast<double>((relu_edges ? std::max<scalar_t>(0, c) : c) + (i == j ? 1 : 0));
          }
          // the forward's degree (its side of the clamp) and D^-1/2
          const scalar_t d = DEG[kb * N + i];
          deg[static_cast<size_t>(i)] = static_cast<double>(d);
          dinv[static_cast<size_t>(i)] =
              static_cast<double>(1 / std::sqrt(std::max<scalar_t>(d, static_cast<scalar_t>(1e-2))));
        }
        for (int64_t k = 0; k < N; ++k) {
          double s = 0;  // ((M + M^T) dinv)_k, M = dAh * A
          for (int64_t j = 0; j < N; ++j)
            s += (dAh[static_cast<size_t>(k * N + j)] * A[static_cast<size_t>(k * N + j)] +
                  dAh[static_cast<size_t>(j * N + k)] * A[static_cast<size_t>(j * N + k)]) *
                 dinv[static_cast<size_t>(j)];
          const double dk = dinv[static_cast<size_t>(k)];
          ddeg[static_cast<size_t>(k)] =
              static_cast<scalar_t>(deg[static_cast<size_t>(k)]) >= static_cast<scalar_t>(1e-2)
                  ? s * dk * dk * dk * (-0.5)
                  : 0.0;
        }
        const double c18 = dD ? -static_cast<double>(dD[kb]) / static_cast<double>(N * N) : 0.0;
        for (int64_t i = 0; i < N; ++i)
          for (int64_t j = 0; j < N; ++j) {
            const double a = A[static_cast<size_t>(i * N + j)];
            const double sgn = !abs_degree ? 1.0 : a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0;
            double v =
                dAh[static_cast<size_t>(i * N + j)] * dinv[static_cast<size_t>(i)] * dinv[static_cast<size_t>(j)] +
                ddeg[static_cast<size_t>(i)] * sgn;
            if (relu_edges && !(cm[i * N + j] > 0)) v = 0;  // threshold_backward(dA, w, 0)
            dA[static_cast<size_t>(i * N + j)] = v + c18;
          }
        ZoneKernels<scalar_t>::norms(z, N, dz, nc.data());
        ZoneKernels<scalar_t>::cos_backward(z, N, dz, nc.data(), dA.data(), dzo, acc.data());
      }
    });
  });
}

// ------------------------------------------------------------------ capsule routing (eqs. 11-14)
// Per (k, b) (kb = k B + b), one loop over the routing iterations instead of ~10 ATen calls
// per iteration on [K, B, N, J, d_o] temporaries (and ~15 per iteration in backward). Sums in
// double. Forward: u [KB, N, J, d_o] -> o of the last iteration into O [KB, J, d_o]; saves the
// coupling c [iters, KB, N, J] and s [iters, KB, J, d_o] (o is recomputed from s in backward).
inline int64_t route_grain(int64_t N, int64_t J, int64_t Do, int64_t iters) {
  if (fused_mzu_tuning().zone_grain > 0) return fused_mzu_tuning().zone_grain;
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, 3 * iters * N * J * Do));
}

// squash (eq. 13 as MZU's squash): o = s r, r = sqrt(|s|^2 + 1e-12) / (1 + |s|^2)
template <typename S>
inline double squash_ratio(const S* s, int64_t Do, double* n2out) {
  double n2 = 0;
  for (int64_t e = 0; e < Do; ++e) n2 += static_cast<double>(s[e]) * s[e];
  *n2out = n2;
  return std::sqrt(n2 + 1e-12) / (1 + n2);
}

void route_fwd(const Tensor& Ut, int64_t iters, const Tensor& Ct, const Tensor& St, const Tensor& Ot) {
  const int64_t KB = Ut.size(0), N = Ut.size(1), J = Ut.size(2), Do = Ut.size(3);
  AT_DISPATCH_FLOATING_TYPES(Ut.scalar_type(), "route_fwd", [&] {
    const scalar_t* U = Ut.data_ptr<scalar_t>();
    scalar_t *C = Ct.data_ptr<scalar_t>(), *Sv = St.data_ptr<scalar_t>(), *O = Ot.data_ptr<scalar_t>();
    at::parallel_for(0, KB, route_grain(N, J, Do, iters), [&](int64_t b0, int64_t b1) {
      std::vector<scalar_t> bl(static_cast<size_t>(N * J)), c(static_cast<size_t>(N * J)),
          s(static_cast<size_t>(J * Do)), o(static_cast<size_t>(J * Do));
      std::vector<double> ex(static_cast<size_t>(J));
      for (int64_t kb = b0; kb < b1; ++kb) {
        const scalar_t* u = U + kb * N * J * Do;
        std::fill(bl.begin(), bl.end(), scalar_t(0));
        for (int64_t it = 0; it < iters; ++it) {
          scalar_t* cst = C + (it * KB + kb) * N * J;
          scalar_t* sst = Sv + (it * KB + kb) * J * Do;
          for (int64_t i = 0; i < N; ++i) {  // eq. 11: c_i = softmax_j(b_i)
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < J; ++j) mx = std::max<double>(mx, bl[static_cast<size_t>(i * J + j)]);
            for (int64_t j = 0; j < J; ++j)
              sum += (ex[static_cast<size_t>(j)] = std::exp(bl[static_cast<size_t>(i * J + j)] - mx));
            for (int64_t j = 0; j < J; ++j) {
              const scalar_t cij = static_cast<scalar_t>(ex[static_cast<size_t>(j)] / sum);
              cst[i * J + j] = cij;
              c[static_cast<size_t>(i * J + j)] = cij;
            }
          }
          std::fill(s.begin(), s.end(), scalar_t(0));  // eq. 12: s_j = sum_i c_ij u_ij
          for (int64_t i = 0; i < N; ++i)
            for (int64_t j = 0; j < J; ++j) {
              const scalar_t cij = c[static_cast<size_t>(i * J + j)];
              const scalar_t* uij = u + (i * J + j) * Do;
              scalar_t* sj = s.data() + j * Do;
              for (int64_t e = 0; e < Do; ++e) sj[e] += cij * uij[e];
            }
          for (int64_t j = 0; j < J; ++j) {  // eq. 13: o_j = squash(s_j)
            scalar_t* sj = sst + j * Do;
            for (int64_t e = 0; e < Do; ++e) sj[e] = static_cast<scalar_t>(s[static_cast<size_t>(j * Do + e)]);
            double n2;
            const scalar_t r = static_cast<scalar_t>(squash_ratio(sj, Do, &n2));
            for (int64_t e = 0; e < Do; ++e) o[static_cast<size_t>(j * Do + e)] = sj[e] * r;
          }
          if (it + 1 < iters) {  // eq. 14: b_ij += u_ij . o_j
            for (int64_t i = 0; i < N; ++i)
              for (int64_t j = 0; j < J; ++j) {
                const scalar_t* uij = u + (i * J + j) * Do;
                const scalar_t* oj = o.data() + j * Do;
                scalar_t acc = 0;
                for (int64_t e = 0; e < Do; ++e) acc += uij[e] * oj[e];
                bl[static_cast<size_t>(i * J + j)] += acc;
              }
          } else {
            scalar_t* ok = O + kb * J * Do;
            for (int64_t e = 0; e < J * Do; ++e) ok[e] = static_cast<scalar_t>(o[static_cast<size_t>(e)]);
          }
        }
      }
    });
  });
}

// Backward of the routing: dO [KB, J, d_o] (contiguous) -> dU, written at
// dUt.data + k dUt.stride(0) + b N J d_o (dUt: [K, B N, J d_o], each k contiguous).
void route_bwd(const Tensor& Ut, const Tensor& Ct, const Tensor& St, const Tensor& dOt, const Tensor& dUt, int64_t B) {
  const int64_t KB = Ut.size(0), N = Ut.size(1), J = Ut.size(2), Do = Ut.size(3), iters = Ct.size(0);
  const int64_t kstride = dUt.stride(0);
  AT_DISPATCH_FLOATING_TYPES(Ut.scalar_type(), "route_bwd", [&] {
    const scalar_t *U = Ut.data_ptr<scalar_t>(), *C = Ct.data_ptr<scalar_t>(), *Sv = St.data_ptr<scalar_t>(),
                   *G = dOt.data_ptr<scalar_t>();
    scalar_t* DU = dUt.data_ptr<scalar_t>();
    at::parallel_for(0, KB, route_grain(N, J, Do, iters), [&](int64_t b0, int64_t b1) {
      const size_t NJ = static_cast<size_t>(N * J), JD = static_cast<size_t>(J * Do);
      std::vector<scalar_t> du(NJ * static_cast<size_t>(Do)), db(NJ), dc(NJ), dov(JD), ds(JD), o(JD);
      for (int64_t kb = b0; kb < b1; ++kb) {
        const scalar_t* u = U + kb * N * J * Do;
        std::fill(du.begin(), du.end(), scalar_t(0));
        std::fill(db.begin(), db.end(), scalar_t(0));
        for (int64_t it = iters - 1; it >= 0; --it) {
          const scalar_t* c = C + (it * KB + kb) * N * J;
          const scalar_t* s = Sv + (it * KB + kb) * J * Do;
          if (it == iters - 1) {
            const scalar_t* g = G + kb * J * Do;
            for (size_t e = 0; e < JD; ++e) dov[e] = static_cast<double>(g[e]);
          } else {  // b_{it+1} = b_it + u . o_it: into o_it (dov) and u (du)
            for (int64_t j = 0; j < J; ++j) {
              double n2;
              const scalar_t r = static_cast<scalar_t>(squash_ratio(s + j * Do, Do, &n2));
              for (int64_t e = 0; e < Do; ++e) o[static_cast<size_t>(j * Do + e)] = s[j * Do + e] * r;
            }
            std::fill(dov.begin(), dov.end(), scalar_t(0));
            for (int64_t i = 0; i < N; ++i)
              for (int64_t j = 0; j < J; ++j) {
                const scalar_t bij = db[static_cast<size_t>(i * J + j)];
                const scalar_t* uij = u + (i * J + j) * Do;
                scalar_t* duij = du.data() + (i * J + j) * Do;
                scalar_t* dj = dov.data() + j * Do;
                const scalar_t* oj = o.data() + j * Do;
                for (int64_t e = 0; e < Do; ++e) {
                  dj[e] += bij * uij[e];
                  duij[e] += bij * oj[e];
                }
              }
          }
          for (int64_t j = 0; j < J; ++j) {  // squash backward
            const scalar_t* sj = s + j * Do;
            double n2;
            const double r = squash_ratio(sj, Do, &n2);
            const double sq = std::sqrt(n2 + 1e-12);
            const double dr = 0.5 / (sq * (1 + n2)) - sq / ((1 + n2) * (1 + n2));
            scalar_t dot = 0;
            for (int64_t e = 0; e < Do; ++e) dot += dov[static_cast<size_t>(j * Do + e)] * sj[e];
            const scalar_t rr = static_cast<scalar_t>(r), k2 = static_cast<scalar_t>(dot * dr * 2);
            for (int64_t e = 0; e < Do; ++e)
              ds[static_cast<size_t>(j * Do + e)] = dov[static_cast<size_t>(j * Do + e)] * rr + sj[e] * k2;
          }
          for (int64_t i = 0; i < N; ++i)  // s_j = sum_i c_ij u_ij
            for (int64_t j = 0; j < J; ++j) {
              const scalar_t cij = c[i * J + j];
              const scalar_t* uij = u + (i * J + j) * Do;
              scalar_t* duij = du.data() + (i * J + j) * Do;
              const scalar_t* dsj = ds.data() + j * Do;
              scalar_t acc = 0;
              for (int64_t e = 0; e < Do; ++e) {
                acc += dsj[e] * uij[e];
                duij[e] += cij * dsj[e];
              }
              dc[static_cast<size_t>(i * J + j)] = acc;
            }
          for (int64_t i = 0; i < N; ++i) {  // softmax backward over j, into the logits
            scalar_t sd = 0;
            for (int64_t j = 0; j < J; ++j) sd += dc[static_cast<size_t>(i * J + j)] * c[i * J + j];
            for (int64_t j = 0; j < J; ++j)
              db[static_cast<size_t>(i * J + j)] += c[i * J + j] * (dc[static_cast<size_t>(i * J + j)] - sd);
          }
        }
        const int64_t k = kb / B, b = kb % B;
        scalar_t* out = DU + k * kstride + b * N * J * Do;
        for (size_t e = 0; e < du.size(); ++e) out[e] = static_cast<scalar_t>(du[e]);
      }
    });
  });
}

}  // namespace cs::mzu_kernels
