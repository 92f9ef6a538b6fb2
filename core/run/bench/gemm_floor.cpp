#include "bench/gemm_floor.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "cells/packed_gemm.h"
#include "util/error.h"

namespace cs {

bool GemmShape::operator<(const GemmShape& o) const {
  return std::tie(op, a_sizes, a_strides, b_sizes, b_strides, dtype) <
         std::tie(o.op, o.a_sizes, o.a_strides, o.b_sizes, o.b_strides, o.dtype);
}

double GemmShape::flops() const {
  // a [.., M, K] x b [.., K, N]; bmm/addbmm carry a leading batch dimension
  const size_t d = a_sizes.size();
  if (d < 2 || b_sizes.size() != d) return 0;
  double f = 2.0 * static_cast<double>(a_sizes[d - 2]) * static_cast<double>(a_sizes[d - 1]) *
             static_cast<double>(b_sizes[d - 1]);
  if (d == 3) f *= static_cast<double>(a_sizes[0]);
  return f;
}

namespace {

struct Recorder {
  std::mutex mu;
  std::map<GemmShape, int64_t> counts;
};
Recorder* g_rec = nullptr;  // the one recording in progress (measure_gemm_floor is not reentrant)
std::mutex g_rec_mu;

// Which inputs are the two factors: mm/bmm (self, mat2); addmm/baddbmm/addbmm (self, m1, m2, ...).
bool factors(const char* name, const char** op, int* ia) {
  static const struct {
    const char* name;
    const char* op;
    int first;
  } table[] = {{"aten::mm", "mm", 0},         {"aten::addmm", "mm", 1},      {"aten::addmm_", "mm", 1},
               {"aten::bmm", "bmm", 0},       {"aten::baddbmm", "bmm", 1},   {"aten::baddbmm_", "bmm", 1},
               {"aten::addbmm", "addbmm", 1}, {"aten::addbmm_", "addbmm", 1}};
  for (const auto& e : table)
    if (std::strcmp(name, e.name) == 0) {
      *op = e.op;
      *ia = e.first;
      return true;
    }
  return false;
}

// Products nested in a recorded product are not counted again: ATen's CPU baddbmm runs one
// addmm_ per batch entry through the dispatcher, which the observer sees too.
thread_local int tl_depth = 0;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Recorder* rec = g_rec;
  const char* op = nullptr;
  int ia = 0;
  if (!rec || !factors(fn.name(), &op, &ia)) return nullptr;
  if (tl_depth++ > 0) return nullptr;
  const auto in = fn.inputs();
  if (static_cast<int>(in.size()) < ia + 2 || !in[ia].isTensor() || !in[ia + 1].isTensor()) return nullptr;
  const at::Tensor& a = in[ia].toTensor();
  const at::Tensor& b = in[ia + 1].toTensor();
  if (!a.defined() || !b.defined() || a.is_sparse() || b.is_sparse()) return nullptr;
  GemmShape s;
  s.op = op;
  s.a_sizes = a.sizes().vec();
  s.a_strides = a.strides().vec();
  s.b_sizes = b.sizes().vec();
  s.b_strides = b.strides().vec();
  s.dtype = static_cast<int>(a.scalar_type());
  std::lock_guard<std::mutex> g(rec->mu);
  ++rec->counts[s];
  return nullptr;
}

// The fast paths' packed products (cells/packed_gemm.h) bypass the dispatcher: they report here.
void on_packed(int64_t m, int64_t n, int64_t k) {
  Recorder* rec = g_rec;
  if (!rec) return;
  GemmShape s;
  s.op = "packed";
  s.a_sizes = {m, k};
  s.a_strides = {k, 1};
  s.b_sizes = {k, n};
  s.b_strides = {n, 1};
  s.dtype = static_cast<int>(at::kFloat);
  std::lock_guard<std::mutex> g(rec->mu);
  ++rec->counts[s];
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  const char* op = nullptr;
  int ia = 0;
  if (g_rec && factors(fn.name(), &op, &ia) && tl_depth > 0) --tl_depth;
}

// A tensor with these sizes and strides over a buffer of random values (strides may overlap
// or skip, as for a transposed view or a slice of a larger buffer).
at::Tensor operand(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, at::ScalarType dt) {
  int64_t span = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return at::empty(sizes, at::TensorOptions().dtype(dt));
    span += (sizes[i] - 1) * strides[i];
  }
  return at::randn({span}, at::TensorOptions().dtype(dt)).as_strided(sizes, strides);
}

// Best seconds per call of one product at its recorded layout.
double time_shape(const GemmShape& s) {
  using Clock = std::chrono::steady_clock;
  const auto dt = static_cast<at::ScalarType>(s.dtype);
  at::Tensor a = operand(s.a_sizes, s.a_strides, dt), b = operand(s.b_sizes, s.b_strides, dt);
  const size_t d = s.a_sizes.size();
  std::vector<int64_t> osz;
  if (s.op == "bmm") osz.push_back(s.a_sizes[0]);
  osz.push_back(s.a_sizes[d - 2]);
  osz.push_back(s.b_sizes[d - 1]);
  at::Tensor c = at::zeros(osz, at::TensorOptions().dtype(dt));
  fused::PackedMatrix pb;
  if (s.op == "packed") pb = fused::PackedMatrix(b);  // packed once, as a fast path does per sequence
  auto run = [&] {
    if (s.op == "packed") pb.mm(c, a);
    else if (s.op == "mm") at::mm_out(c, a, b);
    else if (s.op == "bmm") at::bmm_out(c, a, b);
    else at::addbmm_out(c, c, a, b, /*beta=*/0.0);
  };
  run();  // warm-up (first touch, BLAS buffers)
  double best = 1e300, total = 0;
  for (int rep = 0; rep < 50; ++rep) {
    const auto t0 = Clock::now();
    run();
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, t);
    total += t;
    if (rep >= 2 && total >= 0.02) break;
    if (rep >= 1 && t >= 0.05) break;
  }
  return best;
}

}  // namespace

GemmFloor measure_gemm_floor(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> once(g_rec_mu);
  Recorder rec;
  g_rec = &rec;
  auto handle = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_start, &on_end).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  fused::set_packed_gemm_observer(&on_packed);
  try {
    fn();
  } catch (...) {
    fused::set_packed_gemm_observer(nullptr);
    at::removeCallback(handle);
    g_rec = nullptr;
    tl_depth = 0;
    throw;
  }
  fused::set_packed_gemm_observer(nullptr);
  at::removeCallback(handle);
  g_rec = nullptr;
  tl_depth = 0;
  GemmFloor f;
  at::NoGradGuard ng;
  for (const auto& kv : rec.counts) {
    const double t = time_shape(kv.first);
    f.by_shape.push_back({kv.first, {kv.second, t}});
    f.seconds += t * static_cast<double>(kv.second);
    f.flops += kv.first.flops() * static_cast<double>(kv.second);
    f.calls += kv.second;
  }
  f.shapes = static_cast<int64_t>(rec.counts.size());
  return f;
}

json GemmFloor::to_json(size_t top) const {
  json r = {{"seconds", seconds}, {"flops", flops}, {"calls", calls}, {"shapes", shapes}};
  auto v = by_shape;
  std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) {
    return x.second.first * x.second.second > y.second.first * y.second.second;
  });
  json t = json::array();
  for (size_t i = 0; i < v.size() && i < top; ++i) {
    const auto& s = v[i].first;
    const double per = v[i].second.second;
    t.push_back({{"op", s.op},
                 {"a", s.a_sizes},
                 {"b", s.b_sizes},
                 {"a_strides", s.a_strides},
                 {"b_strides", s.b_strides},
                 {"calls", v[i].second.first},
                 {"seconds_per_call", per},
                 {"gflops", per > 0 ? s.flops() / per / 1e9 : 0.0}});
  }
  r["top"] = t;
  return r;
}

}  // namespace cs
