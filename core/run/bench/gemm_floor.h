// The GEMM floor of a training step: every matrix product a step runs, recorded
// through ATen's RecordFunction observers (aten::mm, addmm, bmm, baddbmm, addbmm and their
// out / in-place forms, whoever calls them: a cell's fast path, autograd's backward, the
// output layer) and the fast paths' products with a pre-packed weight (cells/packed_gemm.h,
// which report to it), then each distinct product replayed alone at its own sizes, strides and
// dtype (a packed one through the packed kernel) and timed (best of several calls). Their sum is
// a lower bound on the step's time for any code that runs the same products through the same
// kernels: the elementwise work, the
// embedding, Adam and all overheads count as zero in it. See bench/peers/README.md, "GEMM floor".
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/json.h"

namespace cs {

struct GemmShape {
  std::string op;  // "mm" (also addmm/addmm_), "bmm" (also baddbmm/baddbmm_), "addbmm", or "packed"
                   // (a fast path's product with a pre-packed weight, cells/packed_gemm.h)
  std::vector<int64_t> a_sizes, a_strides, b_sizes, b_strides;
  int dtype = 0;  // c10::ScalarType as int
  bool operator<(const GemmShape& o) const;
  double flops() const;  // 2 * batch * M * N * K
};

struct GemmFloor {
  double seconds = 0;  // sum over the recorded calls of their shape's best time
  double flops = 0;    // sum of 2*M*N*K over the recorded calls
  int64_t calls = 0;   // products recorded
  int64_t shapes = 0;  // distinct (op, sizes, strides, dtype)
  std::vector<std::pair<GemmShape, std::pair<int64_t, double>>> by_shape;  // shape -> (calls, best seconds per call)
  json to_json(size_t top = 8) const;                                      // totals and the `top` shapes by total time
};

// Records the products of one call of `fn` (on every thread), then times them.
GemmFloor measure_gemm_floor(const std::function<void()>& fn);

}  // namespace cs
