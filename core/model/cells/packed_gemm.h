// Products with a pre-packed weight for the fast paths' per-step recurrent GEMMs (PACKED_GEMM_NOTES.md).
//
// A recurrence multiplies the same weight by a small batch of rows at every step: h W^T with
// h [32, 512] and W [1536, 512] at batch 32, 150 times forward and 150 times backward. OpenBLAS
// re-packs the weight for every call (sgemm has no packed interface), which at 32 rows costs as
// much as the arithmetic: measured 63-140 GFLOP/s for [32, 512] x [512, 1536] against ~200 for a
// large product on the 2-core machine. As oneDNN's and cuDNN's RNN kernels do, PackedMatrix packs
// the weight once per sequence (16-column panels, K-major) and multiplies with a register-blocked
// 6x16 AVX2/FMA kernel: 190-215 GFLOP/s at 32 rows in the same conditions (PACKED_GEMM_NOTES.md).
//
// Only float32 CPU tensors on a CPU with AVX2 and FMA take the packed kernel; anything else
// (double, which the agreement tests use, CUDA, another CPU, or CELLSCOPE_PACKED_GEMM=0) runs
// at::mm_out / at::addmm_out on the original weight, so results and tests do not depend on it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace cs::fused {

// True when this process can use the packed kernel for float32 (CPU support, switch not "0";
// the switch is read at every call, so a test may change it).
bool packed_gemm_enabled();

// B [K, N] of C = A B, packed (float32 CPU with the kernel available) or kept as given.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  explicit PackedMatrix(const at::Tensor& b);  // b: [K, N], any strides (e.g. W.t())
  bool packed() const { return packed_.defined(); }
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // out [M, N'] = a [M, K'] B[:K', :N'] (K' <= K, N' <= N: a leading block of B, e.g. the first
  // m_k blocks of MC-RNN's eq. 2 weight). out and a need unit stride along their last dimension
  // (else a is copied; out is checked); their rows may be strided views of larger buffers.
  void mm(const at::Tensor& out, const at::Tensor& a) const;
  // out = self + a B: self [N] or [1, N] (a bias row) or [M, N] (may be out itself), as at::addmm_out.
  void addmm(const at::Tensor& out, const at::Tensor& self, const at::Tensor& a) const;

 private:
  at::Tensor b_;       // the original (fallback path)
  at::Tensor packed_;  // [ceil(N / 16), K, 16] float32, zero-padded columns
  int64_t k_ = 0, n_ = 0;
};

// Observer for the GEMM floor of `bench --peer` (bench/gemm_floor.h): called with M, N, K for
// every packed product while set (null: none). Not for general use.
using PackedGemmObserver = void (*)(int64_t m, int64_t n, int64_t k);
void set_packed_gemm_observer(PackedGemmObserver fn);

}  // namespace cs::fused
