#include "cells/fused_mzu.h"
#include "cells/fused_mzu_kernels.h"

#include "cells/fused_common.h"
#include "cells/packed_gemm.h"
#include "util/torch_compat.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace cs {

// ------------------------------------------------------------------ selection
bool mzu_fast_path_enabled() { return fast_paths_enabled(); }  // CELLSCOPE_FAST=0: off (cells/fused_common.h)

namespace {
// The values of each choice that this file implements: one switch per option, no default, so a
// value added to an option's enum warns here (-Wswitch) until it is implemented (true) or
// refused (false); a value outside the enum (a cast) is refused.
bool implemented(MZUComposition v) {
  switch (v) {
    case MZUComposition::Sat:
    case MZUComposition::Gcn:
    case MZUComposition::Cap:
      return true;
  }
  return false;
}
bool implemented(LnPosition v) {
  switch (v) {
    case LnPosition::Preact:
    case LnPosition::Zones:
      return true;
  }
  return false;
}
bool implemented(DisagreementScale v) {
  switch (v) {
    case DisagreementScale::Mean:
    case DisagreementScale::Sum:
      return true;
  }
  return false;
}
bool implemented(GcnActivation v) {
  switch (v) {
    case GcnActivation::Relu:
    case GcnActivation::Tanh:
    case GcnActivation::Sigmoid:
    case GcnActivation::Identity:
      return true;
  }
  return false;
}
bool implemented(GcnEdges v) {
  switch (v) {
    case GcnEdges::Cosine:
    case GcnEdges::ReluCosine:
      return true;
  }
  return false;
}
bool implemented(GcnDegree v) {
  switch (v) {
    case GcnDegree::Absolute:
    case GcnDegree::SignedClamped:
      return true;
  }
  return false;
}
bool implemented(SatQkv v) {
  switch (v) {
    case SatQkv::Shared:
    case SatQkv::PerZone:
      return true;
  }
  return false;
}
bool implemented(DisagreementPairs v) {
  switch (v) {
    case DisagreementPairs::All:
      return true;
    case DisagreementPairs::Distinct:
      return false;
  }
  return false;
}
bool implemented(DisagreementForm v) {
  switch (v) {
    case DisagreementForm::Cosine:
      return true;
    case DisagreementForm::SquaredCosine:
      return false;
  }
  return false;
}
bool implemented(GcnAdjacency v) {
  switch (v) {
    case GcnAdjacency::CosinePlusIdentity:
      return true;
    case GcnAdjacency::Cosine:
      return false;
  }
  return false;
}
}  // namespace

// The model.* options of the MZU cells (mzu_option_table) this file knows. Fail closed: while
// the table has a key not listed here (a new option), the fast path is off everywhere, so a new
// option can never be silently ignored by it; add the key here and its values below.
static const char* const kKnownOptionKeys[] = {"zones",
                                               "filter",
                                               "depth",
                                               "share_transition",
                                               "capsules",
                                               "routing_iters",
                                               "zone_disagreement",
                                               "disagreement_scale",
                                               "regular_gate",
                                               "regular_trans",
                                               "ln_position",
                                               "ffn_residual",
                                               "gcn_activation",
                                               "gcn_edges",
                                               "sat_qkv",
                                               "disagreement_pairs",
                                               "disagreement_form",
                                               "disagreement_warmup",
                                               "gcn_adjacency",
                                               "gcn_degree"};

std::vector<std::string> mzu_fast_path_unknown_options() {
  std::vector<std::string> unknown;
  for (const auto& spec : mzu_option_table().specs()) {
    bool known = false;
    for (const char* k : kKnownOptionKeys) known = known || spec.key == k;
    if (!known) unknown.push_back(spec.key);
  }
  return unknown;
}

const char* mzu_fast_path_refusal(const MZUOptions& o) {
  static const bool all_known = mzu_fast_path_unknown_options().empty();
  if (!all_known) return "an MZU option the fast path does not know (mzu_fast_path_unknown_options)";
  // The whitelist: one line per option whose value changes the computation, listing the values
  // fused_mzu.cpp implements AND tests/core/test_fused_mzu.cpp compares against the autograd
  // path. A new option: implement it in Run::step_forward / step_backward, add its key above,
  // its line here (its default value only, if that is all that is implemented) and a variant
  // to the test's list. (zones, filter, capsules, routing_iters, ffn_residual, share_transition,
  // zone_disagreement, disagreement_warmup (in the loss), layer_norm: any value.)
  if (!implemented(o.composition)) return "the composition is not gcn, sat or cap";
  if (o.depth < 0) return "model.depth < 0";  // any L, shared or not
  if (!implemented(o.ln_position)) return "model.ln_position is not preact or zones";
  if (!implemented(o.disagreement_scale)) return "model.disagreement_scale is not mean or sum";
  if (!implemented(o.gcn_activation)) return "model.gcn_activation is not relu, tanh, sigmoid or identity";
  if (!implemented(o.gcn_edges)) return "model.gcn_edges is not cosine or relu_cosine";
  if (!implemented(o.gcn_degree)) return "model.gcn_degree is not absolute or signed_clamped";
  if (!implemented(o.sat_qkv)) return "model.sat_qkv is not per_zone or shared";
  if (!implemented(o.disagreement_pairs)) return "model.disagreement_pairs is not 'all' (eq. 18 as written)";
  if (!implemented(o.disagreement_form)) return "model.disagreement_form is not 'cosine' (eq. 18 as written)";
  if (!implemented(o.gcn_adjacency)) return "model.gcn_adjacency is not 'cosine_plus_identity' (eqs. 7-8 plus I)";
  if (o.regular_gate && o.regular_trans)
    return "model.regular_gate and model.regular_trans together (one ablation at a time)";
  if (!(o.candidate_dropout >= 0 && o.candidate_dropout < 1)) return "model.candidate_dropout outside [0, 1)";
  return nullptr;
}

bool mzu_fast_path_applies(const MZUOptions& o, const StepContext& ctx) {
  if (!mzu_fast_path_enabled() || ctx.probe != nullptr || ctx.stepwise || !at::GradMode::is_enabled()) return false;
  return mzu_fast_path_refusal(o) == nullptr;
}

namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

}  // namespace

FusedMZUTuning& fused_mzu_tuning() {
  static FusedMZUTuning t = [] {
    FusedMZUTuning d;
    // For benchmarks: CELLSCOPE_MZU_K_PARALLEL=-1|0|1 sets k_parallel (fused_mzu.h).
    if (const char* v = std::getenv("CELLSCOPE_MZU_K_PARALLEL")) d.k_parallel = std::atoi(v);
    return d;
  }();
  return t;
}

namespace {
std::atomic<int64_t> g_parallel_products{0};
}  // namespace

FusedMZUStats fused_mzu_stats() {
  FusedMZUStats st;
  st.parallel_products = g_parallel_products.load();
  return st;
}

namespace {

// Buffers come from the per-thread workspace pool (fused_common.h, pool_empty): a buffer is
// reused by the next call once its Run has released it and nothing else views its storage.
Tensor take(at::IntArrayRef shape, const at::TensorOptions& opt) { return fused::pool_empty(shape, opt); }

void give(Tensor& t) { t = Tensor(); }

// The zone kernels (eqs. 6-9, 18) and capsule routing (eqs. 11-14) are in fused_mzu_kernels.cpp
// (mzu_kernels::, named at each call: a using-directive here would reach the next files of a unity batch).

// ------------------------------------------------------------------ per-M-function products
// The K M-functions (and sat's per-zone maps) are independent products of the same shape. As
// bmm they are K serial GEMM calls, each split by OpenBLAS over the threads (at batch 32 the
// rows are few: 32-128, so each call's split and barrier cost a sizable share, and a
// descheduled thread stalls the other). With 2 <= threads <= K each thread runs whole
// products instead (OpenBLAS runs single-threaded inside an OpenMP region), and a chain of
// products of one M-function (the FFN and aggregation) is one parallel region. Otherwise (one
// thread, more threads than products, or fused_mzu_tuning().k_parallel = 0) the same calls
// run in order on the calling thread. See FUSED_NOTES.md (the cap/sat section).
// out = a b / out = self + a b (out= variants taking views), with b packed once per sequence
// (cells/packed_gemm.h): the weights are the same at every step, forward and backward. Keyed by
// b's data pointer, sizes and strides (a weight and its transpose are two entries); built on
// first use under a lock, since per_k runs products on several threads. Off (ATen's products on
// the weights as given) for anything PackedMatrix does not pack (double). gcn uses it too, so its
// forward is not bitwise the step-wise path's (step_forward and FUSED_NOTES.md "gcn through the
// packed products").
using fused::PackedMatrix;
class PackCache {
 public:
  bool on = true;
  Tensor mm(Tensor out, const Tensor& a, const Tensor& b) {
    if (!on) return at::mm_out(out, a, b);
    get(b).mm(out, a);
    return out;
  }
  Tensor addmm(Tensor out, const Tensor& self, const Tensor& a, const Tensor& b) {
    if (!on) return at::addmm_out(out, self, a, b);
    get(b).addmm(out, self, a);
    return out;
  }
  void clear() {
    std::lock_guard<std::mutex> g(mu_);
    m_.clear();
  }

 private:
  using Key = std::tuple<const void*, int64_t, int64_t, int64_t, int64_t>;
  const PackedMatrix& get(const Tensor& b) {
    const Key k{b.data_ptr(), b.size(0), b.size(1), b.stride(0), b.stride(1)};
    std::lock_guard<std::mutex> g(mu_);
    auto it = m_.find(k);
    if (it == m_.end()) it = m_.emplace(k, PackedMatrix(b)).first;
    return it->second;
  }
  std::mutex mu_;
  std::map<Key, PackedMatrix> m_;
};

template <class Fn>
void per_k(int64_t K, Fn&& fn) {
  const int threads = at::get_num_threads();
  const int mode = fused_mzu_tuning().k_parallel;
  const bool par = K > 1 && threads > 1 && !at::in_parallel_region() && (mode > 0 || (mode < 0 && threads <= K));
  if (!par) {
    for (int64_t k = 0; k < K; ++k) fn(k);
    return;
  }
  g_parallel_products.fetch_add(1, std::memory_order_relaxed);
  at::parallel_for(0, K, 1, [&](int64_t k0, int64_t k1) {
    c10::AutoGradMode no_grad(false);  // OpenMP workers do not inherit the caller's grad mode
    for (int64_t k = k0; k < k1; ++k) fn(k);
  });
}

// out [K, M, N] += A[k]^T B[k] for every k: A [K, rows, M], B [K, rows, N] (the M-functions'
// weight gradients over a chunk's rows), one whole product per thread where per_k splits (a
// K-batched baddbmm is K serial calls, each split by OpenBLAS over the threads: measured alone,
// 2 threads, [1000, 128] over 1024-4096 rows, 112-161 GFLOP/s as baddbmm, 164-172 per thread).
inline void wgrad(Tensor& out, const Tensor& A, const Tensor& B) {
  per_k(out.size(0), [&](int64_t k) {
    auto o = out.select(0, k);
    at::addmm_out(o, o, A.select(0, k).t(), B.select(0, k));
  });
}

// The parameters of one MZUBlock the fused function uses (w_x stays in input_projection).
enum Param { W_H, B_REG, W_QKV, W_G, W_C, W1, B1, W2, B2, WO, BO, LNCG, LNCB, LNGG, LNGB, LNZG, LNZB, NPARAM };

struct Block {
  Tensor p[NPARAM];
  int index[NPARAM];        // position in the function's flat parameter list (-1: absent)
  std::vector<int> depths;  // depths d (0 = the MZU with input, 1..L = t-MZUs) using this block
};

// Everything one sequence needs between forward and backward (kept by the autograd node).
struct Run : torch::CustomClassHolder {
  // sizes and flags
  int64_t T = 0, B = 0, H = 0, N = 0, dz = 0, J = 0, Do = 0, F = 0, K = 0, R = 0, G = 0, Dp = 0, iters = 0;
  bool m_h = true, m_g = true, gcn = false, sat = false, cap = false, qkv_shared = false, relu_edges = false,
       abs_degree = false, residual = false, training = false;
  int act = 0;  // gcn sigma: 0 relu, 1 tanh, 2 sigmoid, 3 identity
  double p_drop = 0;
  std::vector<Block> blocks;
  std::vector<int> block_of;  // depth -> block

  // Saved by forward. Buffers allocated once for the sequence; [K*, Dp, T, rows, cols]
  // ("K-major") when a weight gradient is later one batched product over all steps.
  Tensor Hin;  // [Dp, T, B, H]    the state entering each depth
  Tensor Zs;   // [K, Dp, T, B N, d_z] zones (after zone LN)
  Tensor AZ;   // gcn: [K, Dp, T, B N, d_z]  A^ Z
  Tensor Os;   // gcn, cap: [K, Dp, T, B J, d_o] composition output = FFN input (sat: rebuilt
               // per chunk from attn and qkv, sat_attention_out)
  Tensor H1;   // [K, Dp, T, B J, d_f] FFN hidden (after ReLU)
  Tensor Fs;   // [K, Dp, T, B, J d_o] FFN output (aggregation input)
  // cap: [Dp, T, K, B N, J d_o] predictions, [Dp, T, iters, K B, N, J] coupling and
  // [Dp, T, iters, K B, J, d_o] s of every routing iteration (route_fwd); pooled like the
  // others (per-step tensors of this size were page-faulted anew at every step)
  Tensor Ub, RC, RS;
  // per (depth, step) tensors, index d * T + t
  std::vector<Tensor> cosm, ahat, gdeg, qkv, attn, cp, cmean, crstd, gp, gmean, grstd, tc, g, mask, z0, zmean, zrstd;

  // Backward buffers (allocated in backward): DA0 [T, B, G] (depth 0: it is the gradient of the
  // input projection, returned) and DAt [Dp - 1, T, B, G] (t-MZUs) for the whole sequence; the K-major ones [K*, Dp, C,
  // rows, cols] hold a chunk of C steps [t0, t0 + C): their weight-gradient products run once per chunk (C B J rows),
  // which keeps the backward's extra memory small (see flush_chunk).
  Tensor DA0, DAt, DPRE, DF, DH1, DP, DQKV, DU;
  PackCache packs;  // the weights of the per-step products, packed once (on unless gcn)
  int64_t C = 0, t0 = 0, t1 = 0;

  static Tensor at2(const Tensor& buf, int64_t d, int64_t t) { return buf.select(1, d).select(1, t); }
  static Tensor at1(const Tensor& buf, int64_t d, int64_t t) { return buf.select(0, d).select(0, t); }
  void allocate(const at::TensorOptions& opt) {
    const size_t n = static_cast<size_t>(Dp * T);
    Hin = take({Dp, T, B, H}, opt);
    if (K > 0) {
      Zs = take({K, Dp, T, B * N, dz}, opt);
      if (gcn) AZ = take({K, Dp, T, B * N, dz}, opt);
      if (!sat) Os = take({K, Dp, T, B * J, Do}, opt);
      H1 = take({K, Dp, T, B * J, F}, opt);
      Fs = take({K, Dp, T, B, J * Do}, opt);
    }
    for (auto* v : {&cosm, &ahat, &gdeg, &qkv, &attn, &cp, &cmean, &crstd, &gp, &gmean, &grstd, &tc, &g, &mask, &z0,
                    &zmean, &zrstd})
      v->assign(n, Tensor());
    if (cap && K > 0) {
      Ub = take({Dp, T, K, B * N, J * Do}, opt);
      RC = take({Dp, T, iters, K * B, N, J}, opt);
      RS = take({Dp, T, iters, K * B, J, Do}, opt);
    }
  }

  // Weight gradients of the M-functions for the chunk of n steps starting at t: per depth,
  // one product per M-function over the chunk's n B J rows (wgrad), accumulated into gr.
  void flush_chunk(int64_t t, int64_t n, std::vector<Tensor>& gr) {
    for (int64_t d = 0; d < Dp; ++d) {
      Tensor* gb = &gr[static_cast<size_t>(block_of[static_cast<size_t>(d)]) * NPARAM];
      auto fw = [&](const Tensor& x) {  // forward buffer [K*, Dp, T, r, c] -> [K*, n r, c]
        return x.select(1, d).narrow(1, t, n).reshape({x.size(0), -1, x.size(-1)});
      };
      auto bw = [&](const Tensor& x) {  // chunk buffer [K*, Dp, C, r, c] -> [K*, n r, c]
        return x.select(1, d).narrow(1, 0, n).reshape({x.size(0), -1, x.size(-1)});
      };
      wgrad(gb[WO], fw(Fs), bw(DPRE));
      gb[BO].add_(bw(DPRE).sum(1, true));
      wgrad(gb[W2], fw(H1), bw(DF));
      gb[B2].add_(bw(DF).sum(1, true));
      if (sat) {  // the chunk's eq. 6 outputs, rebuilt (bitwise the forward's)
        auto oc = take({K, n, B * J, Do}, Zs.options());
        for (int64_t s = 0; s < n; ++s)
          mzu_kernels::sat_attention_out(attn[static_cast<size_t>(d * T + t + s)],
                                         qkv[static_cast<size_t>(d * T + t + s)], oc.select(1, s));
        wgrad(gb[W1], oc.view({K, n * B * J, Do}), bw(DH1));
      } else {
        wgrad(gb[W1], fw(Os), bw(DH1));
      }
      gb[B1].add_(bw(DH1).sum(1, true));
      if (gcn) wgrad(gb[W_G], fw(AZ), bw(DP));
      if (sat && qkv_shared) wgrad(gb[W_QKV], fw(Zs), bw(DQKV));
      if (sat && !qkv_shared) {
        // per-zone projections: the chunk's zones regrouped zone-major [K N, n B, d_z], a copy of
        // n steps only (a whole-sequence copy saved by forward cost as much memory as Zs itself)
        auto zn = Zs.select(1, d)
                      .narrow(1, t, n)
                      .reshape({K, n, B, N, dz})
                      .permute({0, 3, 1, 2, 4})
                      .reshape({K * N, n * B, dz});
        wgrad(gb[W_QKV], zn, bw(DQKV));
      }
      if (cap) wgrad(gb[W_C], fw(Zs), bw(DU));
    }
  }

  void release() {
    for (auto* x : {&Hin, &Zs, &AZ, &Os, &H1, &Fs, &Ub, &RC, &RS, &DA0, &DAt, &DPRE, &DF, &DH1, &DP, &DQKV, &DU})
      give(*x);
    for (auto* v : {&cosm, &ahat, &gdeg, &qkv, &attn, &cp, &cmean, &crstd, &gp, &gmean, &grstd, &tc, &g, &mask, &z0,
                    &zmean, &zrstd})
      v->clear();
  }

  // ---------------------------------------------------------------- forward of one depth at one step
  Tensor step_forward(int64_t d, int64_t t, const Tensor& xpt, const Tensor& h, const Tensor& Dz) {
    const Block& bk = blocks[static_cast<size_t>(block_of[static_cast<size_t>(d)])];
    const size_t i = static_cast<size_t>(d * T + t);
    at1(Hin, d, t).copy_(h);
    Tensor a;
    if (xpt.defined()) {
      a = packs.addmm(at::empty({B, xpt.size(1)}, h.options()), xpt, h, bk.p[W_H].t());
    } else {  // t-MZU: zero input (eqs. 16-17); the regular maps keep their bias
      a = packs.mm(at::empty({B, bk.p[W_H].size(0)}, h.options()), h, bk.p[W_H].t());
      if (R > 0) a.narrow(1, K * H, R * H).add_(bk.p[B_REG]);
    }
    Tensor pre;
    if (K > 0) {
      auto Z = a.narrow(1, 0, K * H).view({B, K, N, dz}).transpose(0, 1).contiguous();  // [K, B, N, d_z]
      if (bk.p[LNZG].defined()) {
        auto r = at::native_layer_norm(Z, {dz}, {}, {}, 1e-5);
        z0[i] = Z;
        zmean[i] = std::get<1>(r);
        zrstd[i] = std::get<2>(r);
        // the normalised zones are not saved: backward recomputes them from z0, mean and 1/std
        Z = std::get<0>(r) * bk.p[LNZG].unsqueeze(1) + bk.p[LNZB].unsqueeze(1);
      }
      at2(Zs, d, t).copy_(Z.view({K, B * N, dz}));
      auto Zb = Z.view({K * B, N, dz});             // contiguous
      auto Dneg = at::empty({K * B}, Z.options());  // eq. 18's D per (k, b)
      Tensor O;
      if (gcn) {
        // eqs. 7-9 by the step-wise path's ATen calls (the degree rounded as there). The forward
        // is not bitwise the step-wise path's, since the FFN below runs through the packed
        // products: in float, rounding differences reach the next step's degrees,
        // and where a degree sits near eq. 9's clamp both float paths are equally far from the
        // exact result (FUSED_NOTES.md "gcn through the packed products"). Backward is one loop.
        auto zn = Zb / Zb.norm(2, {-1}, true).clamp_min(1e-12);
        auto cm = at::bmm(zn, zn.transpose(1, 2));  // cosines (eq. 7 / eq. 18)
        Dneg.copy_(cm.mean({1, 2}).neg_());
        auto w = relu_edges ? at::relu(cm) : cm;
        auto A = w + at::eye(N, w.options());
        auto deg = abs_degree ? A.abs().sum(-1) : A.sum(-1);  // model.gcn_degree (mzu.cpp)
        auto dinv = deg.clamp_min(1e-2).rsqrt();
        auto Ah = A * dinv.unsqueeze(-1) * dinv.unsqueeze(-2);
        cosm[i] = cm;
        ahat[i] = Ah;
        gdeg[i] = deg;
        auto az = at::bmm(Ah, Zb).view({K, B * N, dz});
        at2(AZ, d, t).copy_(az);
        auto P = at::bmm(az, bk.p[W_G]);
        O = act == 0 ? at::relu(P) : act == 1 ? at::tanh(P) : act == 2 ? at::sigmoid(P) : P;
      } else if (sat) {
        mzu_kernels::zone_disagreement_fwd(Zb, Dneg);
        Tensor q3;
        if (qkv_shared) {
          auto Zk = Z.view({K, B * N, dz});
          q3 = at::empty({K, B * N, 3 * dz}, Z.options());
          per_k(K, [&](int64_t k) { packs.mm(q3.select(0, k), Zk.select(0, k), bk.p[W_QKV].select(0, k)); });
          q3 = q3.view({K * B, N, 3 * dz});
        } else {
          auto zn2 = Z.transpose(1, 2).reshape({K * N, B, dz});
          auto qn = at::empty({K * N, B, 3 * dz}, Z.options());
          per_k(K * N, [&](int64_t k) { packs.mm(qn.select(0, k), zn2.select(0, k), bk.p[W_QKV].select(0, k)); });
          q3 = qn.view({K, N, B, 3 * dz}).transpose(1, 2).reshape({K * B, N, 3 * dz});
        }
        q3 = q3.contiguous();
        auto at_ = at::empty({K * B, N, N}, Z.options());
        O = at::empty({K, B * N, dz}, Z.options());
        mzu_kernels::sat_attention_fwd(q3, at_, O);  // eq. 6: softmax(Q K^T / sqrt(d_z)) V
        qkv[i] = q3;
        attn[i] = at_;
      } else {
        mzu_kernels::zone_disagreement_fwd(Zb, Dneg);
        auto Zk = Z.view({K, B * N, dz});
        auto uu = at1(Ub, d, t);  // [K, B N, J d_o] eq. 10: predictions z^_{j|i}
        per_k(K, [&](int64_t k) { packs.mm(uu.select(0, k), Zk.select(0, k), bk.p[W_C].select(0, k)); });
        O = at::empty({K, B * J, Do}, Z.options());
        mzu_kernels::route_fwd(uu.view({K * B, N, J, Do}), iters, at1(RC, d, t), at1(RS, d, t),
                               O.view({K * B, J, Do}));  // eqs. 11-14
      }
      Dz.select(0, t).narrow(1, d * K, K).copy_(Dneg.view({K, B}).t());
      if (!sat) at2(Os, d, t).copy_(O);
      // eq. 5 and the aggregation, per M-function one chain written into the saved buffers
      auto h1 = at2(H1, d, t);  // [K, B J, d_f]
      auto fs = at2(Fs, d, t);  // [K, B, J d_o]
      {
        pre = at::empty({K, B, H}, O.options());
        per_k(K, [&](int64_t k) {
          auto hk = h1.select(0, k);
          packs.addmm(hk, bk.p[B1].select(0, k), O.select(0, k), bk.p[W1].select(0, k)).relu_();
          auto fk = fs.select(0, k).view({B * J, Do});
          packs.addmm(fk, bk.p[B2].select(0, k), hk, bk.p[W2].select(0, k));
          if (residual) fk.add_(O.select(0, k));
          packs.addmm(pre.select(0, k), bk.p[BO].select(0, k), fs.select(0, k), bk.p[WO].select(0, k));
        });
      }
    }
    Tensor c = m_h ? pre.select(0, 0) : a.narrow(1, K * H, H);
    Tensor gg = m_g ? pre.select(0, K - 1) : a.narrow(1, K * H + (R - 1) * H, H);
    if (bk.p[LNCG].defined()) {
      c = c.contiguous();
      auto r = at::native_layer_norm(c, {H}, bk.p[LNCG], bk.p[LNCB], 1e-5);
      cp[i] = c;
      cmean[i] = std::get<1>(r);
      crstd[i] = std::get<2>(r);
      c = std::get<0>(r);
    }
    if (bk.p[LNGG].defined()) {
      gg = gg.contiguous();
      auto r = at::native_layer_norm(gg, {H}, bk.p[LNGG], bk.p[LNGB], 1e-5);
      gp[i] = gg;
      gmean[i] = std::get<1>(r);
      grstd[i] = std::get<2>(r);
      gg = std::get<0>(r);
    }
    auto th = at::tanh(c);  // eq. 2 / eq. 16
    Tensor cand = th;
    if (training && p_drop > 0) {
      // the same draw as F::dropout on CPU (ATen's _dropout_impl): bernoulli_(1 - p) / (1 - p)
      auto m = at::empty_like(th).bernoulli_(1 - p_drop).div_(1 - p_drop);
      mask[i] = m;
      cand = th * m;
    }
    auto sg = at::sigmoid(gg);  // eq. 3 / eq. 17
    // with layer norm on a path, backward rebuilds these from the saved LN input (bitwise: the
    // same kernels on the same values) instead of keeping two more [B, H] per step and depth
    if (!bk.p[LNCG].defined()) tc[i] = th;
    if (!bk.p[LNGG].defined()) g[i] = sg;
    return at::addcmul(h, sg, cand - h);  // eq. 1 / eq. 15
  }

  // ---------------------------------------------------------------- backward of one depth at one step
  // dhn: gradient of this depth's output; dD [B, K] (or undefined): of its D_zone.
  // Writes the gradient of a (eq. 4 / regular maps, [B, G]) into DA and returns that of h.
  Tensor step_backward(int64_t d, int64_t t, const Tensor& dhn, const Tensor& dD, std::vector<Tensor>& gr) {
    const Block& bk = blocks[static_cast<size_t>(block_of[static_cast<size_t>(d)])];
    Tensor* gb = &gr[static_cast<size_t>(block_of[static_cast<size_t>(d)]) * NPARAM];
    const size_t i = static_cast<size_t>(d * T + t);
    auto h = at1(Hin, d, t);
    const Tensor th = tc[i].defined()
                          ? tc[i]
                          : at::tanh(std::get<0>(at::native_layer_norm(cp[i], {H}, bk.p[LNCG], bk.p[LNCB], 1e-5)));
    const Tensor sg = g[i].defined()
                          ? g[i]
                          : at::sigmoid(std::get<0>(at::native_layer_norm(gp[i], {H}, bk.p[LNGG], bk.p[LNGB], 1e-5)));
    Tensor cand = mask[i].defined() ? th * mask[i] : th;
    auto dg = dhn * (cand - h);
    auto dcand = dhn * sg;
    auto dh = dhn - dcand;
    auto dth = mask[i].defined() ? dcand * mask[i] : dcand;
    auto dc = at::tanh_backward(dth, th);
    auto dgg = at::sigmoid_backward(dg, sg);
    if (bk.p[LNCG].defined()) {
      auto r = at::native_layer_norm_backward(dc, cp[i], {H}, cmean[i], crstd[i], bk.p[LNCG], bk.p[LNCB],
                                              {true, true, true});
      dc = std::get<0>(r);
      gb[LNCG].add_(std::get<1>(r));
      gb[LNCB].add_(std::get<2>(r));
    }
    if (bk.p[LNGG].defined()) {
      auto r = at::native_layer_norm_backward(dgg, gp[i], {H}, gmean[i], grstd[i], bk.p[LNGG], bk.p[LNGB],
                                              {true, true, true});
      dgg = std::get<0>(r);
      gb[LNGG].add_(std::get<1>(r));
      gb[LNGB].add_(std::get<2>(r));
    }
    auto da = d == 0 ? DA0.select(0, t) : at1(DAt, d - 1, t);  // [B, G]
    if (!m_h) da.narrow(1, K * H, H).copy_(dc);
    if (!m_g) da.narrow(1, K * H + (R - 1) * H, H).copy_(dgg);
    if (K > 0) {
      auto dpre = at2(DPRE, d, t - t0);  // [K, B, H]
      if (m_h) dpre.select(0, 0).copy_(dc);
      if (m_g) dpre.select(0, K - 1).copy_(dgg);
      auto df = at2(DF, d, t - t0);    // [K, B J, d_o]
      auto dh1 = at2(DH1, d, t - t0);  // [K, B J, d_f]
      auto h1 = at2(H1, d, t);
      Tensor dO;
      {
        dO = at::empty({K, B * J, Do}, dhn.options());
        per_k(K, [&](int64_t k) {  // the aggregation and eq. 5 backward, per M-function
          auto dfk = df.select(0, k);
          packs.mm(dfk.view({B, J * Do}), dpre.select(0, k), bk.p[WO].select(0, k).t());
          auto dhk = dh1.select(0, k);
          packs.mm(dhk, dfk, bk.p[W2].select(0, k).t());
          at::threshold_backward_out(dhk, dhk, h1.select(0, k), 0);
          auto dOk = dO.select(0, k);
          packs.mm(dOk, dhk, bk.p[W1].select(0, k).t());
          if (residual) dOk.add_(dfk);
        });
      }
      auto Zb = at2(Zs, d, t).contiguous().view({K * B, N, dz});
      Tensor dZ;
      const Tensor dDkb = dD.defined() ? dD.t().contiguous() : Tensor();  // [K, B] -> (k, b) order
      if (gcn) {
        auto O = at2(Os, d, t);
        Tensor dP = act == 0   ? at::threshold_backward(dO, O, 0)
                    : act == 1 ? at::tanh_backward(dO, O)
                    : act == 2 ? at::sigmoid_backward(dO, O)
                               : dO;
        at2(DP, d, t - t0).copy_(dP);
        auto dAZ = at::bmm(dP, bk.p[W_G].transpose(1, 2)).view({K * B, N, dz}).contiguous();
        dZ = at::empty({K * B, N, dz}, dhn.options());
        // A^ Z, the normalisation, the edges, the cosines and eq. 18's term: one loop
        mzu_kernels::gcn_adjacency_bwd(Zb, cosm[i], ahat[i], gdeg[i], dAZ, dDkb, relu_edges, abs_degree, dZ);
      } else {
        if (sat) {
          const auto& q3 = qkv[i];
          auto dqkv = at::empty({K * B, N, 3 * dz}, dhn.options());  // [K B, N, 3 d_z]
          mzu_kernels::sat_attention_bwd(dO.view({K * B, N, dz}).contiguous(), attn[i], q3, dqkv);
          if (qkv_shared) {
            auto d3 = dqkv.view({K, B * N, 3 * dz});
            at2(DQKV, d, t - t0).copy_(d3);
            dZ = at::empty({K, B * N, dz}, dhn.options());
            per_k(K, [&](int64_t k) { packs.mm(dZ.select(0, k), d3.select(0, k), bk.p[W_QKV].select(0, k).t()); });
            dZ = dZ.view({K * B, N, dz});
          } else {
            auto dn = dqkv.view({K, B, N, 3 * dz}).transpose(1, 2).reshape({K * N, B, 3 * dz});
            at2(DQKV, d, t - t0).copy_(dn);
            auto dzn = at::empty({K * N, B, dz}, dhn.options());
            per_k(K * N, [&](int64_t k) { packs.mm(dzn.select(0, k), dn.select(0, k), bk.p[W_QKV].select(0, k).t()); });
            dZ = dzn.view({K, N, B, dz}).transpose(1, 2).reshape({K * B, N, dz});
          }
        } else {
          auto du = at2(DU, d, t - t0);  // [K, B N, J d_o]
          mzu_kernels::route_bwd(at1(Ub, d, t).view({K * B, N, J, Do}), at1(RC, d, t), at1(RS, d, t),
                                 dO.view({K * B, J, Do}), du, B);
          dZ = at::empty({K, B * N, dz}, dhn.options());
          per_k(K, [&](int64_t k) { packs.mm(dZ.select(0, k), du.select(0, k), bk.p[W_C].select(0, k).t()); });
          dZ = dZ.view({K * B, N, dz});
        }
        dZ = dZ.contiguous();
        if (dDkb.defined()) mzu_kernels::zone_disagreement_bwd(Zb, dDkb, dZ);  // eq. 18: D = -(1/N^2) sum_ij cos_ij
      }
      if (bk.p[LNZG].defined()) {
        auto dZ4 = dZ.view({K, B, N, dz});
        gb[LNZG].add_((dZ4 * ((z0[i] - zmean[i]) * zrstd[i])).sum(1));  // the forward's normalised zones
        gb[LNZB].add_(dZ4.sum(1));
        auto r = at::native_layer_norm_backward(dZ4 * bk.p[LNZG].unsqueeze(1), z0[i], {dz}, zmean[i], zrstd[i], {}, {},
                                                {true, false, false});
        dZ = std::get<0>(r);
      }
      da.narrow(1, 0, K * H).view({B, K, N, dz}).copy_(dZ.view({K, B, N, dz}).transpose(0, 1));
    }
    return packs.addmm(at::empty_like(dh), dh, da, bk.p[W_H]);
  }
};

// Rows (steps x B J) per chunk of the backward's weight-gradient products: 8 steps at the
// papers' batch 32 and 4 zones, 1 at batch 256; large enough to run near the large-GEMM rate,
// small enough that the chunk buffers stay a fraction of what forward saves.
// (fused_mzu_tuning().chunk_rows, default 1024.)

struct FusedMZUFunction : torch::autograd::Function<FusedMZUFunction> {
  static variable_list forward(AutogradContext* ctx, Tensor xp, Tensor h0, at::TensorList params,
                               c10::intrusive_ptr<Run> run) {
    (void)params;  // the same tensors are in run->blocks
    Run& r = *run;
    const auto opt = xp.options();
    r.allocate(opt);
    auto out = at::empty({r.T, r.B, r.H}, opt);
    auto Dz = at::empty({r.T, r.B, r.Dp * r.K}, opt);
    auto steps = xp.unbind(0);
    Tensor h = h0;
    for (int64_t t = 0; t < r.T; ++t) {
      h = r.step_forward(0, t, steps[static_cast<size_t>(t)], h, Dz);
      for (int64_t d = 1; d < r.Dp; ++d) h = r.step_forward(d, t, Tensor(), h, Dz);
      out.select(0, t).copy_(h);
    }
    r.packs.clear();  // the forward's packed weights are not used by backward (its are the transposes)
    ctx->set_materialize_grads(false);
    ctx->saved_data["run"] = c10::IValue::make_capsule(c10::intrusive_ptr<torch::CustomClassHolder>(run));
    return {out, Dz};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto run = c10::static_intrusive_pointer_cast<Run>(ctx->saved_data["run"].toCapsule());
    Run& r = *run;
    TORCH_CHECK(r.Hin.defined(), "fused MZU: backward through the same graph twice is not supported (retain_graph)");
    const auto opt = r.Hin.options();
    const int64_t K = r.K, Dp = r.Dp, T = r.T;
    r.DA0 = at::zeros({T, r.B, r.G}, opt);
    if (Dp > 1) r.DAt = take({Dp - 1, T, r.B, r.G}, opt).zero_();
    // steps per chunk: about kChunkRows rows (C B J) per weight-gradient product
    const int64_t C = r.C =
        std::max<int64_t>(1, std::min<int64_t>(T, (fused_mzu_tuning().chunk_rows + r.B * r.J - 1) / (r.B * r.J)));
    if (K > 0) {
      r.DPRE = take({K, Dp, C, r.B, r.H}, opt);
      r.DF = take({K, Dp, C, r.B * r.J, r.Do}, opt);
      r.DH1 = take({K, Dp, C, r.B * r.J, r.F}, opt);
      if (r.gcn) r.DP = take({K, Dp, C, r.B * r.N, r.dz}, opt);
      if (r.sat) {
        r.DQKV = r.qkv_shared ? take({K, Dp, C, r.B * r.N, 3 * r.dz}, opt) : take({K * r.N, Dp, C, r.B, 3 * r.dz}, opt);
      }
      if (r.cap) r.DU = take({K, Dp, C, r.B * r.N, r.J * r.Do}, opt);
    }
    // gradient accumulators of the parameters that are summed step by step (LN gains)
    std::vector<Tensor> gr(r.blocks.size() * NPARAM);
    for (size_t b = 0; b < r.blocks.size(); ++b)
      for (int p : {LNCG, LNCB, LNGG, LNGB, LNZG, LNZB, W1, B1, W2, B2, WO, BO, W_G, W_QKV, W_C})
        if (r.blocks[b].p[p].defined()) gr[b * NPARAM + static_cast<size_t>(p)] = at::zeros_like(r.blocks[b].p[p]);

    const Tensor& dout = grads[0];
    const Tensor& dDz = grads[1];
    Tensor dh = at::zeros({r.B, r.H}, opt);
    for (int64_t t = T - 1; t >= 0; --t) {
      if (t == T - 1 || t < r.t0) {  // a new chunk [t0, t1)
        r.t1 = t + 1;
        r.t0 = std::max<int64_t>(0, t + 1 - C);
      }
      if (dout.defined()) dh = dh + dout.select(0, t);
      for (int64_t d = Dp - 1; d >= 0; --d) {
        Tensor dD = (dDz.defined() && K > 0) ? dDz.select(0, t).narrow(1, d * K, K) : Tensor();
        dh = r.step_backward(d, t, dh, dD, gr);
      }
      if (t == r.t0 && K > 0) r.flush_chunk(r.t0, r.t1 - r.t0, gr);
    }
    r.packs.clear();
    // weight gradients: one (batched) product over all steps and depths of each block
    for (size_t b = 0; b < r.blocks.size(); ++b) {
      const Block& bk = r.blocks[b];
      Tensor* gb = &gr[b * NPARAM];
      // W_h: one product over all steps of depth 0 and one over all steps of the block's t-MZUs
      gb[W_H] = at::zeros_like(bk.p[W_H]);
      const bool has0 = bk.depths.front() == 0;
      const int64_t nt = static_cast<int64_t>(bk.depths.size()) - (has0 ? 1 : 0);  // t-MZU depths, consecutive
      if (has0) gb[W_H].addmm_(r.DA0.view({-1, r.G}).t(), r.Hin.select(0, 0).view({-1, r.H}));
      if (nt > 0) {
        const int64_t d1 = has0 ? 1 : bk.depths.front();
        auto da = r.DAt.narrow(0, d1 - 1, nt).reshape({-1, r.G});
        gb[W_H].addmm_(da.t(), r.Hin.narrow(0, d1, nt).reshape({-1, r.H}));
        if (r.R > 0) gb[B_REG] = da.narrow(1, K * r.H, r.R * r.H).sum(0);  // t-MZUs' regular-map bias
      }
      if (r.R > 0 && !gb[B_REG].defined()) gb[B_REG] = at::zeros_like(bk.p[B_REG]);  // depth 0's: in input_projection
    }
    Tensor dxp = r.DA0;
    r.release();  // the node (and its Run) may outlive backward; the grads keep what they view
    variable_list res;
    res.push_back(dxp);
    res.push_back(dh);
    for (size_t b = 0; b < r.blocks.size(); ++b)
      for (int p = 0; p < NPARAM; ++p)
        if (r.blocks[b].index[p] >= 0) res.push_back(gr[b * NPARAM + static_cast<size_t>(p)]);
    res.emplace_back();  // the Run argument
    return res;
  }
};

Block block_of(const MZUBlock& m) {
  Block b;
  const Tensor src[NPARAM] = {m->w_h,       m->b_reg,     m->w_qkv,     m->w_g,       m->w_c,      m->w1,
                              m->b1,        m->w2,        m->b2,        m->wo,        m->bo,       m->ln_c_gain,
                              m->ln_c_bias, m->ln_g_gain, m->ln_g_bias, m->ln_z_gain, m->ln_z_bias};
  for (int p = 0; p < NPARAM; ++p) {
    b.p[p] = src[p];
    b.index[p] = -1;
  }
  return b;
}

}  // namespace

SeqOutput fused_mzu_forward(MZUCellImpl& cell, const torch::Tensor& x, const State& s0, StepContext& ctx,
                            const TokenInput* fold) {
  const MZUOptions& o = cell.options();
  TORCH_CHECK(x.dim() == 3 && x.size(2) == o.input_size, cell.type_name(), ": expected input [T, B, ", o.input_size,
              "], got ", x.sizes());
  auto run = c10::make_intrusive<Run>();
  Run& r = *run;
  r.T = x.size(0);
  r.B = x.size(1);
  r.H = o.hidden_size;
  r.N = o.zones;
  r.dz = r.H / r.N;
  r.m_h = !o.regular_trans;
  r.m_g = !o.regular_gate;
  r.K = static_cast<int64_t>(r.m_h) + static_cast<int64_t>(r.m_g);
  r.R = 2 - r.K;
  r.G = 2 * r.H;
  r.Dp = o.depth + 1;
  r.gcn = o.composition == MZUComposition::Gcn;
  r.sat = o.composition == MZUComposition::Sat;
  r.cap = o.composition == MZUComposition::Cap;
  r.J = r.cap ? o.capsules : r.N;
  r.Do = r.H / r.J;
  r.F = o.filter;
  r.iters = o.routing_iters;
  r.qkv_shared = o.sat_qkv == SatQkv::Shared;
  r.relu_edges = o.gcn_edges == GcnEdges::ReluCosine;
  r.abs_degree = o.gcn_degree == GcnDegree::Absolute;
  r.residual = o.ffn_residual;
  switch (o.gcn_activation) {  // Run::act
    case GcnActivation::Relu:
      r.act = 0;
      break;
    case GcnActivation::Tanh:
      r.act = 1;
      break;
    case GcnActivation::Sigmoid:
      r.act = 2;
      break;
    case GcnActivation::Identity:
      r.act = 3;
      break;
  }
  r.training = cell.is_training();
  r.p_drop = o.candidate_dropout;
  // blocks: `first`, then one per unshared transition
  r.blocks.push_back(block_of(cell.first));
  r.block_of.push_back(0);
  for (size_t l = 0; l < cell.transitions.size(); ++l) {
    if (cell.transitions[l].ptr() == cell.first.ptr()) {
      r.block_of.push_back(0);
    } else {
      r.blocks.push_back(block_of(cell.transitions[l]));
      r.block_of.push_back(static_cast<int>(r.blocks.size() - 1));
    }
  }
  for (int d = 0; d < static_cast<int>(r.Dp); ++d)
    r.blocks[static_cast<size_t>(r.block_of[static_cast<size_t>(d)])].depths.push_back(d);
  std::vector<Tensor> params;
  for (auto& b : r.blocks) {
    for (int p = 0; p < NPARAM; ++p)
      if (b.p[p].defined()) {
        b.index[p] = static_cast<int>(params.size());
        params.push_back(b.p[p]);
      }
  }
  auto xp = fold ? cell.input_projection_tokens(*fold) : cell.input_projection(x);
  auto outs = torch_compat::autograd_apply<FusedMZUFunction>(xp, s0.at(0), at::TensorList(params), run);
  auto out = outs[0];
  // eq. 19's term (lambda, warm-up, scale, token mask, loss units) and the zone metrics exactly
  // as the step-wise path adds them (MZUCellImpl::add_disagreement)
  if (r.K > 0) cell.add_disagreement(outs[1], ctx);
  return {out, {out.select(0, r.T - 1)}};
}

}  // namespace cs
