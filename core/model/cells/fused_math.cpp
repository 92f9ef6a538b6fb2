#include "cells/fused_math.h"

#include <cmath>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CS_MATH_X86 1
#else
#define CS_MATH_X86 0
#endif

namespace cs::fused {

namespace {

#if CS_MATH_X86
bool has_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

// Cephes expf: x = n ln2 + r, |r| <= ln2 / 2, exp(r) by a degree-6 polynomial, times 2^n.
__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
  // Clamped to float's range; the constant first, so a NaN (the unordered case returns the
  // second operand) propagates as ATen's would.
  x = _mm256_min_ps(_mm256_set1_ps(88.3f), _mm256_max_ps(_mm256_set1_ps(-87.3f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln2 split in two for exactness
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// Cephes tanhf: |x| < 0.625: x + x^3 P(x^2); else sign(x) (1 - 2 / (exp(2|x|) + 1)).
__attribute__((target("avx2,fma"))) inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.f));
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.f), x);
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 big =
      _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(exp8(_mm256_add_ps(ax, ax)), one)));
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  const __m256 use_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm256_blendv_ps(_mm256_or_ps(big, sign), small, use_small);
}

template <__m256 (*F)(__m256)>
__attribute__((target("avx2,fma"))) void apply8(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
  if (i < n) {  // the tail through a padded lane buffer
    alignas(32) float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = i; j < n; ++j) t[j - i] = x[j];
    _mm256_store_ps(t, F(_mm256_load_ps(t)));
    for (int64_t j = i; j < n; ++j) y[j] = t[j - i];
  }
}
#endif

template <typename T>
void sigmoid_scalar(T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = T(1) / (T(1) + std::exp(-x[i]));
}
template <typename T>
void tanh_scalar(const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

}  // namespace

void sigmoid_inplace(float* x, int64_t n) {
#if CS_MATH_X86
  if (has_avx2()) return apply8<sigmoid8>(x, x, n);
#endif
  sigmoid_scalar(x, n);
}
void sigmoid_inplace(double* x, int64_t n) { sigmoid_scalar(x, n); }
void tanh_inplace(float* x, int64_t n) { tanh_to(x, x, n); }
void tanh_inplace(double* x, int64_t n) { tanh_scalar(x, x, n); }
void tanh_to(const float* x, float* y, int64_t n) {
#if CS_MATH_X86
  if (has_avx2()) return apply8<tanh8>(x, y, n);
#endif
  tanh_scalar(x, y, n);
}
void tanh_to(const double* x, double* y, int64_t n) { tanh_scalar(x, y, n); }

}  // namespace cs::fused

// A unity batch's next files do not see this file's macros (tests/check_unity.py).
#undef CS_MATH_X86
