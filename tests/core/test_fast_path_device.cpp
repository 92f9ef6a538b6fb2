// The fast paths (cells/fused_*.cpp) run hand-written loops over raw CPU pointers and
// CPU GEMMs. A model on another device (training.device: cuda) must take the step-wise autograd
// path instead (fused_common.h, fast_path_device_ok), which runs there through ATen's kernels.
// Without the check a fast path reads device memory as if it were host memory.
//
// A CPU-only LibTorch has no other device whose tensors hold data (and Module::to(kMeta) is
// refused by 1.13's set_data), so the test turns the check around: with the accepted device type
// set to another one (fast_path_device_type), CPU tensors stand for another device's, and every
// cell of the papers, in its papers' configuration, must then run through the reference path's
// nodes and give the fast path's result. With the default, the same cells take their fast paths
// (so the check cannot pass by never taking one). The predicate itself is checked on a meta
// tensor. See cells/FUSED_NOTES.md, "Devices".

#include <gtest/gtest.h>

#include <torch/csrc/autograd/function.h>

#include <set>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "bench/bench_peer.h"
#include "cells/fused_common.h"
#include "cells/registry.h"
#include "config/schema.h"

namespace test_fast_path_device {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;

namespace {

// The grad_fn names of the fast paths' custom autograd functions (fused_gru.cpp, fused_mzu.cpp,
// fused_mcrnn.cpp).
bool is_fast_node(const std::string& name) {
  return name.find("GRURecurrenceFn") != std::string::npos || name.find("FusedMZUFunction") != std::string::npos ||
         name.find("McRnnFn") != std::string::npos;
}

// Every autograd node reachable from `t`'s grad_fn: true when one of them is a fast path's.
bool reaches_fast_node(const torch::Tensor& t) {
  std::vector<torch::autograd::Node*> todo;
  std::set<torch::autograd::Node*> seen;
  if (t.grad_fn()) todo.push_back(t.grad_fn().get());
  while (!todo.empty()) {
    auto* n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    if (is_fast_node(n->name())) return true;
    for (const auto& e : n->next_edges())
      if (e.function) todo.push_back(e.function.get());
  }
  return false;
}

struct Ran {
  torch::Tensor out, grad_x;
  bool fast = false;
};

Ran run_cell(const std::string& cell) {
  json m = cs::paper_model(cell, /*embed=*/8, /*hidden=*/16);
  if (m.contains("filter")) m["filter"] = 12;
  const json resolved =
      cs::load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", m}}, "device test")["model"];
  torch::manual_seed(3);
  auto c = cs::cell_info(cell).make(resolved, /*input_size=*/8, /*layer=*/0);
  c->to(torch::kDouble);
  c->eval();  // no dropout masks (same result on both paths); grad mode stays on
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  auto x = torch::randn({5, 3, 8}, opts).requires_grad_(true);
  cs::StepContext ctx;
  auto so = c->forward_sequence(x, c->initial_state(3, opts), ctx);
  Ran r{so.output.detach(), {}, reaches_fast_node(so.output)};
  so.output.sum().backward();
  r.grad_x = x.grad();
  return r;
}

struct DeviceTypeGuard {
  c10::DeviceType saved = cs::fast_path_device_type();
  explicit DeviceTypeGuard(c10::DeviceType t) { cs::fast_path_device_type() = t; }
  ~DeviceTypeGuard() { cs::fast_path_device_type() = saved; }
};

}  // namespace

TEST(FastPathDevice, onlyCpuTensorsAreAccepted) {
  EXPECT_TRUE(cs::fast_path_device_ok(torch::zeros({1})));
  EXPECT_FALSE(cs::fast_path_device_ok(torch::zeros({1}, torch::TensorOptions().device(torch::kMeta))));
  EXPECT_FALSE(cs::fast_path_device_ok(torch::Tensor()));
}

TEST(FastPathDevice, everyCellConsultsTheCheck) {
  ASSERT_TRUE(cs::fast_paths_enabled());
  for (const std::string& cell : cs::peer_cells()) {
    const Ran fast = run_cell(cell);
    EXPECT_TRUE(fast.fast) << cell << ": expected its fast path on CPU";
    Ran other;
    {
      DeviceTypeGuard g(c10::DeviceType::Meta);  // CPU tensors now stand for another device's
      other = run_cell(cell);
    }
    EXPECT_FALSE(other.fast) << cell << ": a fast path ran on a device it does not accept";
    EXPECT_TRUE(torch::allclose(fast.out, other.out, 1e-10, 1e-12)) << cell;
    EXPECT_TRUE(torch::allclose(fast.grad_x, other.grad_x, 1e-10, 1e-12)) << cell;
  }
}

}  // namespace test_fast_path_device
