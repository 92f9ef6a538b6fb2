#include "cells/packed_gemm.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CS_PACKED_X86 1
#else
#define CS_PACKED_X86 0
#endif

namespace cs::fused {

namespace {

constexpr int64_t kNR = 16;  // panel width: two 8-float AVX registers
constexpr int64_t kMR = 6;   // rows per micro-tile: 12 accumulators + 2 B registers + 1 broadcast

std::atomic<PackedGemmObserver> g_observer{nullptr};

bool cpu_has_kernel() {
#if CS_PACKED_X86
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

enum class Init { Zero, Bias, Add };

#if CS_PACKED_X86
// One micro-tile: rows [0, MR) of a (row stride lda) times one packed panel bp [K][16] into c
// (row stride ldc), nv <= 16 valid columns. Init: zero, the bias row `src` (16 padded values),
// or the matrix `src` (row stride lds, nv valid columns per row).
// The six rows are written out rather than looped over an array of accumulators: with an array,
// GCC 12 kept the accumulators on the stack (a store per FMA, 42 instead of ~105 GFLOP/s on one core).
template <int MR>
__attribute__((target("avx2,fma"))) void tile(int64_t K, const float* a, int64_t lda, const float* bp, float* c,
                                              int64_t ldc, int64_t nv, Init init, const float* src, int64_t lds) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float* a0 = a;
  const float* a1 = a + (MR > 1 ? lda : 0);
  const float* a2 = a + (MR > 2 ? 2 * lda : 0);
  const float* a3 = a + (MR > 3 ? 3 * lda : 0);
  const float* a4 = a + (MR > 4 ? 4 * lda : 0);
  const float* a5 = a + (MR > 5 ? 5 * lda : 0);
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_load_ps(bp + k * kNR), b1 = _mm256_load_ps(bp + k * kNR + 8);
    __m256 v = _mm256_broadcast_ss(a0 + k);
    c00 = _mm256_fmadd_ps(v, b0, c00);
    c01 = _mm256_fmadd_ps(v, b1, c01);
    if constexpr (MR > 1) {
      v = _mm256_broadcast_ss(a1 + k);
      c10 = _mm256_fmadd_ps(v, b0, c10);
      c11 = _mm256_fmadd_ps(v, b1, c11);
    }
    if constexpr (MR > 2) {
      v = _mm256_broadcast_ss(a2 + k);
      c20 = _mm256_fmadd_ps(v, b0, c20);
      c21 = _mm256_fmadd_ps(v, b1, c21);
    }
    if constexpr (MR > 3) {
      v = _mm256_broadcast_ss(a3 + k);
      c30 = _mm256_fmadd_ps(v, b0, c30);
      c31 = _mm256_fmadd_ps(v, b1, c31);
    }
    if constexpr (MR > 4) {
      v = _mm256_broadcast_ss(a4 + k);
      c40 = _mm256_fmadd_ps(v, b0, c40);
      c41 = _mm256_fmadd_ps(v, b1, c41);
    }
    if constexpr (MR > 5) {
      v = _mm256_broadcast_ss(a5 + k);
      c50 = _mm256_fmadd_ps(v, b0, c50);
      c51 = _mm256_fmadd_ps(v, b1, c51);
    }
  }
  const __m256 acc[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
  alignas(32) float t[kNR];
  alignas(32) float s[kNR];
  for (int i = 0; i < MR; ++i) {
    __m256 lo = acc[2 * i], hi = acc[2 * i + 1];
    // The initial term is added after the products (as at::addmm_out adds self to the product).
    if (init == Init::Bias) {
      lo = _mm256_add_ps(lo, _mm256_load_ps(src));
      hi = _mm256_add_ps(hi, _mm256_load_ps(src + 8));
    } else if (init == Init::Add) {
      const float* r = src + i * lds;
      if (nv == kNR) {
        lo = _mm256_add_ps(lo, _mm256_loadu_ps(r));
        hi = _mm256_add_ps(hi, _mm256_loadu_ps(r + 8));
      } else {
        std::memset(s, 0, sizeof s);
        std::memcpy(s, r, static_cast<size_t>(nv) * sizeof(float));
        lo = _mm256_add_ps(lo, _mm256_load_ps(s));
        hi = _mm256_add_ps(hi, _mm256_load_ps(s + 8));
      }
    }
    float* o = c + i * ldc;
    if (nv == kNR) {
      _mm256_storeu_ps(o, lo);
      _mm256_storeu_ps(o + 8, hi);
    } else {
      _mm256_store_ps(t, lo);
      _mm256_store_ps(t + 8, hi);
      std::memcpy(o, t, static_cast<size_t>(nv) * sizeof(float));
    }
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t, Init, const float*,
                        int64_t);
const TileFn kTiles[kMR + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};
#endif

// C [M, N] (ldc) = init + A [M, K] (lda) x packed B.
// (B's first K rows and N columns; kfull: the packed K, the panels' length.)
void run_packed(int64_t M, int64_t N, int64_t K, int64_t kfull, const float* a, int64_t lda, const float* bp, float* c,
                int64_t ldc, Init init, const float* src, int64_t lds) {
#if CS_PACKED_X86
  const int64_t panels = (N + kNR - 1) / kNR;
  // Panels are split over the threads; small products stay on the calling thread (ATen's grain:
  // about 32768 multiply-adds per chunk at least, i.e. no fork/join for a tiny test model).
  const int64_t per_panel = std::max<int64_t>(1, M * K * kNR);
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 17) / per_panel);
  at::parallel_for(0, panels, grain, [&](int64_t p0, int64_t p1) {
    alignas(32) float bias[kNR];
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n0 = p * kNR, nv = std::min<int64_t>(kNR, N - n0);
      const float* panel = bp + p * kfull * kNR;
      const float* s = nullptr;
      if (init == Init::Bias) {
        std::memset(bias, 0, sizeof bias);
        std::memcpy(bias, src + n0, static_cast<size_t>(nv) * sizeof(float));
        s = bias;
      }
      for (int64_t i = 0; i < M; i += kMR) {
        const int64_t mr = std::min<int64_t>(kMR, M - i);
        if (init == Init::Add) s = src + i * lds + n0;
        kTiles[mr](K, a + i * lda, lda, panel, c + i * ldc + n0, ldc, nv, init, s, lds);
      }
    }
  });
#else
  (void)M, (void)N, (void)K, (void)kfull, (void)a, (void)lda, (void)bp, (void)c, (void)ldc, (void)init, (void)src,
      (void)lds;
  TORCH_CHECK(false, "packed GEMM: no kernel for this CPU");
#endif
}

}  // namespace

bool packed_gemm_enabled() {
  const char* e = std::getenv("CELLSCOPE_PACKED_GEMM");
  if (e && std::string(e) == "0") return false;
  return cpu_has_kernel();
}

void set_packed_gemm_observer(PackedGemmObserver fn) { g_observer.store(fn); }

PackedMatrix::PackedMatrix(const at::Tensor& b) : b_(b) {
  TORCH_CHECK(b.dim() == 2, "PackedMatrix: expected a [K, N] matrix, got ", b.sizes());
  k_ = b.size(0);
  n_ = b.size(1);
  if (b.scalar_type() != at::kFloat || !b.device().is_cpu() || !packed_gemm_enabled() || k_ == 0 || n_ == 0) return;
  const int64_t panels = (n_ + kNR - 1) / kNR;
  packed_ = at::empty({panels, k_, kNR}, b.options());
  const at::Tensor bc = b.detach();
  float* dst = packed_.data_ptr<float>();
  const float* src = bc.data_ptr<float>();
  const int64_t sk = bc.stride(0), sn = bc.stride(1);
  const int64_t K = k_, N = n_;
  at::parallel_for(0, panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* d = dst + p * K * kNR;
      const int64_t n0 = p * kNR, nv = std::min<int64_t>(kNR, N - n0);
      for (int64_t k = 0; k < K; ++k) {
        const float* s = src + k * sk + n0 * sn;
        int64_t j = 0;
        for (; j < nv; ++j) d[k * kNR + j] = s[j * sn];
        for (; j < kNR; ++j) d[k * kNR + j] = 0.f;
      }
    }
  });
}

void PackedMatrix::mm(const at::Tensor& out, const at::Tensor& a) const { addmm(out, at::Tensor(), a); }

void PackedMatrix::addmm(const at::Tensor& out, const at::Tensor& self, const at::Tensor& a) const {
  TORCH_CHECK(a.dim() == 2 && a.size(1) <= k_ && out.dim() == 2 && out.size(0) == a.size(0) && out.size(1) <= n_,
              "PackedMatrix: expected a [M, K <= ", k_, "] left factor and an [M, N <= ", n_, "] output, got ",
              a.sizes(), " and ", out.sizes());
  const int64_t M = a.size(0), Ku = a.size(1), Nu = out.size(1);
  if (!packed()) {
    const at::Tensor b = (Ku == k_ && Nu == n_) ? b_ : b_.narrow(0, 0, Ku).narrow(1, 0, Nu);
    if (self.defined()) at::addmm_out(const_cast<at::Tensor&>(out), self, a, b);
    else at::mm_out(const_cast<at::Tensor&>(out), a, b);
    return;
  }
  TORCH_CHECK(a.scalar_type() == at::kFloat && out.scalar_type() == at::kFloat && out.stride(1) == 1,
              "PackedMatrix: expected float factors and an output with unit column stride, got ", a.scalar_type(), ", ",
              out.scalar_type(), " strides ", out.strides());
  const at::Tensor ac = a.stride(1) == 1 ? a : a.contiguous();
  Init init = Init::Zero;
  at::Tensor s;
  if (self.defined()) {
    if (self.dim() == 1 || (self.dim() == 2 && self.size(0) == 1 && M != 1)) {  // a bias row ([N] or [1, N])
      TORCH_CHECK(self.size(-1) == Nu, "PackedMatrix::addmm: bias of ", self.size(-1), " values for ", Nu, " columns");
      init = Init::Bias;
      s = self.reshape({Nu}).contiguous();
    } else {
      TORCH_CHECK(self.dim() == 2 && self.size(0) == M && self.size(1) == Nu, "PackedMatrix::addmm: expected self [", M,
                  ", ", Nu, "], got ", self.sizes());
      init = Init::Add;
      s = self.stride(1) == 1 ? self : self.contiguous();
    }
    TORCH_CHECK(s.scalar_type() == at::kFloat, "PackedMatrix::addmm: self must be float");
  }
  if (M == 0 || Nu == 0) return;
  if (Ku == 0) {  // an empty sum: out = self (or 0)
    if (init == Init::Zero) const_cast<at::Tensor&>(out).zero_();
    else const_cast<at::Tensor&>(out).copy_(init == Init::Bias ? s.expand({M, Nu}) : s);
    return;
  }
  if (auto obs = g_observer.load()) obs(M, Nu, Ku);
  run_packed(M, Nu, Ku, k_, ac.data_ptr<float>(), ac.stride(0), packed_.data_ptr<float>(), out.data_ptr<float>(),
             out.stride(0), init, s.defined() ? s.data_ptr<float>() : nullptr,
             s.defined() && s.dim() == 2 ? s.stride(0) : 0);
}

}  // namespace cs::fused

// A unity batch's next files do not see this file's macros (tests/check_unity.py).
#undef CS_PACKED_X86
