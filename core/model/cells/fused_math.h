// Vectorised sigmoid and tanh over a row for the fast paths' fused elementwise loops.
//
// ATen's sigmoid_ / tanh_ are vectorised (Sleef) but each is a separate pass over the gate
// buffer and a dispatch per call; inside a loop that already holds a row in cache, these do it
// in place. float on a CPU with AVX2 and FMA: 8 lanes, Cephes' single-precision expf and tanhf
// polynomials (relative error about 2e-7, as the float reference's own); anything else
// (double, which the 1e-10 agreement tests use; another CPU): std::exp / std::tanh per element.
#pragma once

#include <cstdint>

namespace cs::fused {

void sigmoid_inplace(float* x, int64_t n);
void sigmoid_inplace(double* x, int64_t n);
void tanh_inplace(float* x, int64_t n);
void tanh_inplace(double* x, int64_t n);
// y = tanh(x) (x and y may be the same)
void tanh_to(const float* x, float* y, int64_t n);
void tanh_to(const double* x, double* y, int64_t n);

}  // namespace cs::fused
