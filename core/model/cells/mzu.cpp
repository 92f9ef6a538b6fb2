#include "cells/mzu.h"

#include <ATen/core/grad_mode.h>
#include <torch/nn/functional.h>

#include <cmath>

#include "cells/fused_common.h"
#include "cells/fused_mzu.h"
#include "cells/registry.h"

namespace cs {

namespace F = torch::nn::functional;

// ------------------------------------------------------------------ helpers
torch::Tensor zone_disagreement_of_cosines(const torch::Tensor& cosm, DisagreementPairs pairs, DisagreementForm form) {
  // eq. 18: D_zone = -(1/N^2) sum_i sum_j cos(z_i, z_j), i = j included as written ("all").
  // "squared_cosine" puts cos^2 in its place: maximised by orthogonal zones instead of by
  // zones whose unit vectors sum to zero (anti-correlated). See MZU_NOTES.md.
  auto v = form == DisagreementForm::SquaredCosine ? cosm * cosm : cosm;
  if (pairs == DisagreementPairs::All) return -v.mean({-1, -2});
  // "distinct": the mean over the N(N-1) pairs i != j (the i = j terms of eq. 18 are the
  // constant 1 and carry no gradient: this reading only rescales and shifts "all").
  const int64_t N = cosm.size(-1);
  if (N < 2) return torch::zeros_like(v.select(-1, 0).select(-1, 0));
  auto off = v.sum({-1, -2}) - v.diagonal(0, -2, -1).sum(-1);
  return off * (-1.0 / static_cast<double>(N * (N - 1)));
}

torch::Tensor zone_disagreement(const torch::Tensor& Z, DisagreementPairs pairs, DisagreementForm form) {
  // eq. 18 from the zones: cos(z_i, z_j) = z_i.z_j / (|z_i| |z_j|)
  auto zn = Z / Z.norm(2, {-1}, true).clamp_min(1e-12);
  auto cosm = torch::matmul(zn, zn.transpose(-1, -2));
  return zone_disagreement_of_cosines(cosm, pairs, form);
}

torch::Tensor squash(const torch::Tensor& s) {
  // eq. 13: |s|^2/(1+|s|^2) * s/|s| = s * |s| / (1 + |s|^2); |s| = sqrt(|s|^2 + eps) keeps
  // the gradient finite at s = 0 (the function value differs from eq. 13 by O(eps)).
  auto n2 = (s * s).sum(-1, true);
  return s * (torch::sqrt(n2 + 1e-12) / (1 + n2));
}

static torch::Tensor uniform(at::IntArrayRef shape, int64_t fan_in) {
  const double k = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fan_in, 1)));
  return torch::empty(shape).uniform_(-k, k);
}

// ------------------------------------------------------------------ one depth
MZUBlockImpl::MZUBlockImpl(const MZUOptions& o, int64_t input_size) : o_(o) {
  I_ = input_size;
  H_ = o.hidden_size;
  N_ = o.zones;
  TORCH_CHECK(H_ > 0, "mzu: hidden_size must be > 0, got ", H_);
  TORCH_CHECK(N_ > 0, "mzu: zones must be > 0, got ", N_);
  TORCH_CHECK(H_ % N_ == 0, "mzu: hidden_size (", H_, ") must be divisible by zones (", N_, ")");
  TORCH_CHECK(o.filter > 0, "mzu: filter must be > 0, got ", o.filter);
  dz_ = H_ / N_;
  m_h_ = !o.regular_trans;
  m_g_ = !o.regular_gate;
  K_ = static_cast<int64_t>(m_h_) + static_cast<int64_t>(m_g_);
  R_ = 2 - K_;
  if (o.composition == MZUComposition::Cap) {
    J_ = o.capsules;
    TORCH_CHECK(J_ > 0 && H_ % J_ == 0, "mzu: hidden_size (", H_, ") must be divisible by capsules (", J_, ")");
    TORCH_CHECK(o.routing_iters >= 1, "mzu: routing_iters must be >= 1, got ", o.routing_iters);
    do_ = H_ / J_;
  } else {
    J_ = N_;  // sat, gcn: J = N output zones of size d_z
    do_ = dz_;
  }
  const int64_t G = (K_ + R_) * H_, D = o.filter;
  // eq. 4 (zone generation, no bias) and the regular maps W [x, h] + b, rows [M-functions | regular].
  if (I_ > 0) w_x = register_parameter("w_x", uniform({G, I_}, I_ + H_));
  w_h = register_parameter("w_h", uniform({G, H_}, I_ + H_));
  if (R_ > 0) b_reg = register_parameter("b_reg", uniform({R_ * H_}, I_ + H_));
  if (K_ > 0) {
    switch (o.composition) {
      case MZUComposition::Sat: {
        const int64_t nq = o.sat_qkv == SatQkv::Shared ? K_ : K_ * N_;
        w_qkv = register_parameter("w_qkv", uniform({nq, dz_, 3 * dz_}, dz_));  // eq. 6: Q, K, V
        break;
      }
      case MZUComposition::Gcn:
        w_g = register_parameter("w_g", uniform({K_, dz_, dz_}, dz_));  // eq. 9: W_g, d_g = d_z
        break;
      case MZUComposition::Cap:
        w_c = register_parameter("w_c", uniform({K_, dz_, J_ * do_}, dz_));  // eq. 10: W^c_j, shared over i
        break;
    }
    w1 = register_parameter("w1", uniform({K_, do_, D}, do_));  // eq. 5
    b1 = register_parameter("b1", uniform({K_, 1, D}, do_));
    w2 = register_parameter("w2", uniform({K_, D, do_}, D));
    b2 = register_parameter("b2", uniform({K_, 1, do_}, D));
    wo = register_parameter("wo", uniform({K_, J_ * do_, H_}, J_ * do_));  // aggregation linear to d_h
    bo = register_parameter("bo", uniform({K_, 1, H_}, J_ * do_));
    if (o.layer_norm && o.ln_position == LnPosition::Zones) {
      ln_z_gain = register_parameter("ln_z_gain", torch::ones({K_, N_, dz_}));
      ln_z_bias = register_parameter("ln_z_bias", torch::zeros({K_, N_, dz_}));
    }
  }
  if (o.layer_norm) {
    const bool pre = o.ln_position == LnPosition::Preact;
    if (pre || !m_h_) {
      ln_c_gain = register_parameter("ln_c_gain", torch::ones({H_}));
      ln_c_bias = register_parameter("ln_c_bias", torch::zeros({H_}));
    }
    if (pre || !m_g_) {
      ln_g_gain = register_parameter("ln_g_gain", torch::ones({H_}));
      ln_g_bias = register_parameter("ln_g_bias", torch::zeros({H_}));
    }
  }
}

torch::Tensor MZUBlockImpl::input_projection(const torch::Tensor& x) {
  TORCH_CHECK(I_ > 0, "mzu: this block has no input (t-MZU)");
  TORCH_CHECK(x.dim() == 3 && x.size(2) == I_, "mzu: expected input [T, B, ", I_, "], got ", x.sizes());
  auto x2 = x.reshape({-1, I_});
  torch::Tensor a;
  if (R_ > 0) {
    // bias only on the regular maps' rows (zone generation, eq. 4, has none)
    auto bias = torch::cat({torch::zeros({K_ * H_}, b_reg.options()), b_reg});
    a = torch::addmm(bias, x2, w_x.t());
  } else {
    a = torch::mm(x2, w_x.t());
  }
  return a.view({x.size(0), x.size(1), -1});
}

torch::Tensor MZUBlockImpl::input_projection_tokens(const TokenInput& in) {
  TORCH_CHECK(I_ > 0, "mzu: this block has no input (t-MZU)");
  // x W_x^T as (table W_x^T)[tokens], with the regular maps' bias as input_projection adds it
  if (R_ > 0) return fold_linear(in, w_x, torch::cat({torch::zeros({K_ * H_}, b_reg.options()), b_reg}));
  return fold_linear(in, w_x);
}

torch::Tensor MZUBlockImpl::compose(const torch::Tensor& Zk, const torch::Tensor& cosm, StepContext& ctx,
                                    const std::string& pfx) {
  const int64_t K = K_, B = Zk.size(1), N = N_, dz = dz_;
  auto mname = [&](int64_t k) { return (m_h_ && k == 0) ? std::string("_h") : std::string("_g"); };
  if (o_.composition == MZUComposition::Sat) {
    torch::Tensor qkv;  // [K B, N, 3 d_z]
    if (o_.sat_qkv == SatQkv::Shared) {
      qkv = torch::bmm(Zk.view({K, B * N, dz}), w_qkv).view({K * B, N, 3 * dz});
    } else {
      // per-zone projections: a batch of K N products [B, d_z] x [d_z, 3 d_z]
      auto Zn = Zk.transpose(1, 2).reshape({K * N, B, dz});
      qkv = torch::bmm(Zn, w_qkv).view({K, N, B, 3 * dz}).transpose(1, 2).reshape({K * B, N, 3 * dz});
    }
    auto parts = qkv.chunk(3, -1);
    // eq. 6: softmax(Q K^T / sqrt(d_z)) V
    auto scores = torch::bmm(parts[0], parts[1].transpose(1, 2)).mul_(1.0 / std::sqrt(static_cast<double>(dz)));
    auto attn = torch::softmax(scores, -1);
    if (ctx.probe) {
      auto a4 = attn.view({K, B, N, N});
      for (int64_t k = 0; k < K; ++k) ctx.record(pfx + "attn" + mname(k), a4[k]);
    }
    return torch::bmm(attn, parts[2]).view({K, B * N, dz});
  }
  if (o_.composition == MZUComposition::Gcn) {
    // eqs. 7-8: w_ij = cos(z_i, z_j). "cosine_plus_identity": self-connections added on top,
    // A~ = W + I (diagonal 2); "cosine": eq. 8 as written, A~ = [w_ij] (diagonal cos(z_i, z_i) = 1).
    auto w = o_.gcn_edges == GcnEdges::ReluCosine ? torch::relu(cosm) : cosm;
    auto A = o_.gcn_adjacency == GcnAdjacency::Cosine ? w : w + torch::eye(N, w.options());
    // eq. 9's D~_ii = sum_j A~_ij. Cosine edges can be negative: gcn_degree "absolute" sums |A~_ij|
    // (the same degree when no edge is negative, and |A^_ij| <= 1 always); "signed_clamped" is eq. 9
    // as written with the degree clamped at 1e-2 (older runs; see notes). The clamp stays for both:
    // with "absolute" it only matters for an all-zero zone under gcn_adjacency "cosine".
    auto deg = o_.gcn_degree == GcnDegree::Absolute ? A.abs().sum(-1) : A.sum(-1);
    auto dinv = deg.clamp_min(1e-2).rsqrt();                  // [K B, N]
    auto Ahat = A * dinv.unsqueeze(-1) * dinv.unsqueeze(-2);  // eq. 9: D~^-1/2 A~ D~^-1/2
    if (ctx.probe) {
      auto a4 = Ahat.view({K, B, N, N});
      for (int64_t k = 0; k < K; ++k) ctx.record(pfx + "adj" + mname(k), a4[k]);
    }
    auto AZ = torch::bmm(Ahat, Zk.view({K * B, N, dz})).view({K, B * N, dz});
    auto O = torch::bmm(AZ, w_g);  // eq. 9: (... Z) W_g
    switch (o_.gcn_activation) {   // sigma of eq. 9
      case GcnActivation::Relu:
        return torch::relu(O);
      case GcnActivation::Tanh:
        return torch::tanh(O);
      case GcnActivation::Sigmoid:
        return torch::sigmoid(O);
      case GcnActivation::Identity:
        return O;
    }
    return O;
  }
  // cap: eq. 10 prediction vectors z^_{j|i} = z_i W^c_j  -> u [K, B, N, J, d_o]
  const int64_t J = J_, Do = do_;
  auto u = torch::bmm(Zk.view({K, B * N, dz}), w_c).view({K, B, N, J, Do});
  auto b = torch::zeros({K, B, N, J}, u.options());  // logits b_ij = 0
  torch::Tensor o;
  std::vector<torch::Tensor> cs;
  for (int64_t it = 0; it < o_.routing_iters; ++it) {
    auto c = torch::softmax(b, -1);         // eq. 11: softmax over output capsules j
    auto s = (c.unsqueeze(-1) * u).sum(2);  // eq. 12: s_j = sum_i c_ij z^_{j|i}  [K, B, J, d_o]
    o = squash(s);                          // eq. 13
    if (it + 1 < o_.routing_iters) b = b + (u * o.unsqueeze(2)).sum(-1);  // eq. 14: b_ij += z^_{j|i} . o_j
    if (ctx.probe) cs.push_back(c);
  }
  if (ctx.probe) {
    auto c5 = torch::stack(cs, 0);  // [T, K, B, N, J]
    for (int64_t k = 0; k < K; ++k) {
      ctx.record(pfx + "coupling" + mname(k), c5.select(1, k));
      ctx.record(pfx + "capsules" + mname(k), o.select(0, k));
    }
  }
  return o.reshape({K, B * J, Do});
}

torch::Tensor MZUBlockImpl::transition(const torch::Tensor& xp, const torch::Tensor& h, StepContext& ctx,
                                       const std::string& pfx, torch::Tensor* dzone_out, bool want_dzone, bool training,
                                       torch::Tensor* cos_out) {
  const int64_t B = h.size(0), K = K_, R = R_, H = H_;
  // eq. 4 (hidden half; the input half is xp) and the regular maps' W [x, h] + b
  torch::Tensor a;
  if (xp.defined()) {
    a = torch::addmm(xp, h, w_h.t());
  } else {  // t-MZU: zero input (eqs. 16-17)
    a = torch::mm(h, w_h.t());
    if (R > 0) a = a + torch::cat({torch::zeros({K * H}, b_reg.options()), b_reg});
  }
  std::vector<torch::Tensor> mout, regs;
  if (R > 0) regs = a.narrow(1, K * H, R * H).chunk(R, 1);
  if (K > 0) {
    // zones Z [K, B, N, d_z]: M-function-major so that every later stage is a plain bmm
    auto Zk = a.narrow(1, 0, K * H).view({B, K, N_, dz_}).transpose(0, 1).contiguous();
    if (ln_z_gain.defined())
      Zk = torch::layer_norm(Zk, {dz_}, {}, {}, 1e-5) * ln_z_gain.unsqueeze(1) + ln_z_bias.unsqueeze(1);
    torch::Tensor cosm;  // [K B, N, N] cosine similarities between zones (eq. 7 / eq. 18)
    auto cosine = [&] {
      auto Zb = Zk.view({K * B, N_, dz_});
      auto zn = Zb / Zb.norm(2, {-1}, true).clamp_min(1e-12);
      return torch::bmm(zn, zn.transpose(1, 2));
    };
    const bool gcn = o_.composition == MZUComposition::Gcn;
    if (gcn || (want_dzone && at::GradMode::is_enabled() && o_.zone_disagreement != 0)) {
      cosm = cosine();
    } else if (dzone_out) {
      at::NoGradGuard ng;  // metric only
      cosm = cosine();
    }
    if (dzone_out && cosm.defined()) {
      // eq. 18 per M-function, [B, K], in the configured reading (disagreement_pairs / _form)
      auto D = zone_disagreement_of_cosines(cosm, o_.disagreement_pairs, o_.disagreement_form).view({K, B}).t();
      *dzone_out = want_dzone ? D : D.detach();
    }
    if (cos_out && cosm.defined()) {
      // metric: mean cosine over the distinct zone pairs, whatever the reading (0 = orthogonal)
      at::NoGradGuard ng;
      *cos_out = -zone_disagreement_of_cosines(cosm.detach(), DisagreementPairs::Distinct, DisagreementForm::Cosine)
                      .view({K, B})
                      .t();
    }
    if (ctx.probe)
      for (int64_t k = 0; k < K; ++k) ctx.record(pfx + ((m_h_ && k == 0) ? "zones_h" : "zones_g"), Zk[k]);
    auto O = compose(Zk, cosm, ctx, pfx);  // [K, B J, d_o]
    // eq. 5: position-wise FFN shared across the J zones (one per M-function)
    auto f = torch::baddbmm(b2, torch::baddbmm(b1, O, w1).relu_(), w2);
    if (o_.ffn_residual) f = f + O;
    // concatenate f_1..f_J and one linear layer to d_h
    auto pre = torch::baddbmm(bo, f.view({K, B, J_ * do_}), wo);  // [K, B, H]
    mout = pre.unbind(0);
  }
  auto cand_pre = m_h_ ? mout[0] : regs[0];
  auto gate_pre = m_g_ ? mout[static_cast<size_t>(K - 1)] : regs[static_cast<size_t>(R - 1)];
  if (ln_c_gain.defined()) cand_pre = torch::layer_norm(cand_pre, {H}, ln_c_gain, ln_c_bias, 1e-5);
  if (ln_g_gain.defined()) gate_pre = torch::layer_norm(gate_pre, {H}, ln_g_gain, ln_g_bias, 1e-5);
  auto cand = torch::tanh(cand_pre);  // eq. 2 / eq. 16
  if (training && o_.candidate_dropout > 0)
    cand = F::dropout(cand, F::DropoutFuncOptions().p(o_.candidate_dropout).training(true));
  auto g = torch::sigmoid(gate_pre);         // eq. 3 / eq. 17
  auto hn = torch::addcmul(h, g, cand - h);  // eq. 1 / eq. 15: (1 - g) h + g h~
  if (ctx.probe) {
    ctx.record(pfx + "candidate", cand);
    ctx.record(pfx + "gate", g);
  }
  return hn;
}

double MZUBlockImpl::flops(bool with_input, bool with_dzone) const {
  const double H = H_, I = I_, N = N_, dz = dz_, J = J_, Do = do_, D = o_.filter, K = K_, R = R_;
  const double G = (K + R) * H;
  double f = 2.0 * G * H + (with_input ? 2.0 * G * I + G : 0.0) + R * H;  // eq. 4 + regular maps
  double m = 0;                                                           // one M-function
  const bool cos = o_.composition == MZUComposition::Gcn || with_dzone;
  if (cos) m += 4.0 * N * dz + 2.0 * N * N * dz + N * N;  // norms, Gram matrix, mean
  if (ln_z_gain.defined()) m += 8.0 * N * dz;
  switch (o_.composition) {
    case MZUComposition::Sat:
      m += 2.0 * N * dz * 3 * dz;                                      // Q, K, V
      m += 2.0 * N * N * dz + N * N + 5.0 * N * N + 2.0 * N * N * dz;  // scores, scale, softmax, attn V
      break;
    case MZUComposition::Gcn:
      m += 6.0 * N * N + N;                                // + I, degree, D^-1/2 A D^-1/2
      m += 2.0 * N * N * dz + 2.0 * N * dz * dz + N * dz;  // A Z, W_g, activation
      break;
    case MZUComposition::Cap: {
      const double T = o_.routing_iters;
      m += 2.0 * N * dz * J * Do;  // prediction vectors
      m += T * (5.0 * N * J + 2.0 * N * J * Do + 6.0 * J * Do) + (T - 1) * (2.0 * N * J * Do + N * J);
      break;
    }
  }
  m += 2.0 * J * Do * D + 2.0 * J * D + 2.0 * J * D * Do + J * Do;  // FFN (eq. 5), biases, ReLU
  if (o_.ffn_residual) m += J * Do;
  m += 2.0 * J * Do * H + H;  // aggregation linear
  f += K * m;
  if (ln_c_gain.defined()) f += 8.0 * H;
  if (ln_g_gain.defined()) f += 8.0 * H;
  f += 2.0 * H + 3.0 * H;  // tanh, sigmoid, gating (eq. 1)
  if (o_.candidate_dropout > 0) f += H;
  return f;
}

// ------------------------------------------------------------------ the cell
MZUCellImpl::MZUCellImpl(const MZUOptions& o) : o_(o) {
  TORCH_CHECK(o.depth >= 0, "mzu: depth must be >= 0, got ", o.depth);
  TORCH_CHECK(o.input_size > 0, "mzu: input_size must be > 0, got ", o.input_size);
  first = register_module("first", MZUBlock(o, o.input_size));
  for (int64_t l = 0; l < o.depth; ++l) {
    if (o.share_transition) {
      transitions.push_back(first);  // same M-functions at every depth (input half unused)
    } else {
      transitions.push_back(register_module("transition" + std::to_string(l + 1), MZUBlock(o, 0)));
    }
  }
}

torch::Tensor MZUCellImpl::input_projection(const torch::Tensor& x) { return first->input_projection(x); }
torch::Tensor MZUCellImpl::input_projection_tokens(const TokenInput& in) { return first->input_projection_tokens(in); }

State MZUCellImpl::step(const torch::Tensor& xp, const State& s, StepContext& ctx) {
  const bool reg = o_.zone_disagreement != 0 && at::GradMode::is_enabled();
  const bool any_m = first->num_mfunctions() > 0;
  std::vector<torch::Tensor> ds, cs;
  torch::Tensor d, c;
  torch::Tensor h =
      first->transition(xp, s[0], ctx, "", any_m ? &d : nullptr, reg, is_training(), any_m ? &c : nullptr);
  if (any_m) ds.push_back(d), cs.push_back(c);
  for (size_t l = 0; l < transitions.size(); ++l) {
    // t-MZU at depth l+1: zero input (eqs. 15-17)
    h = transitions[l]->transition(torch::Tensor(), h, ctx, "dt" + std::to_string(l + 1) + "/", any_m ? &d : nullptr,
                                   reg, is_training(), any_m ? &c : nullptr);
    if (any_m) ds.push_back(d), cs.push_back(c);
  }
  if (any_m) {
    auto D = ds.size() == 1 ? ds[0] : torch::cat(ds, 1);  // [B, M]: every M-function of every depth
    if (ctx.probe) ctx.record("dzone", D);
    dz_steps_.push_back(reg ? D : D.detach());
    cos_steps_.push_back((cs.size() == 1 ? cs[0] : torch::cat(cs, 1)).mean(1));
    if (!in_sequence_) finish_disagreement(ctx);  // a step taken on its own: a sequence of length 1
  }
  ctx.record("h", h);
  return {h};
}

double MZUCellImpl::lambda_at(int64_t step) const {
  const double lam = o_.zone_disagreement;
  if (o_.disagreement_warmup <= 0 || step < 0) return lam;
  // linear warm-up: lambda (s + 1) / W at trainer step s (0-based), full lambda from s = W - 1 on
  return lam * std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(o_.disagreement_warmup));
}

torch::Tensor MZUCellImpl::disagreement_loss(const torch::Tensor& D, const StepContext& ctx) const {
  TORCH_CHECK(D.dim() == 3, "mzu: expected D_zone [T, B, M], got ", D.sizes());
  const int64_t T = D.size(0), B = D.size(1);
  // eq. 19: maximise L + lambda sum_tokens sum_m D_zone, i.e. add -lambda * that sum to the
  // loss. The task loss is a mean over its units (char LM: the T B characters; sentence
  // tasks: the B sentences, each one label); "mean" divides the sum over the (real) tokens by
  // the same units, so the ratio of the two sums of eq. 19 is the same in every task.
  auto per_token = D.sum(2);  // [T, B]: sum over the M-functions of every depth
  if (ctx.token_mask.defined()) {
    TORCH_CHECK(ctx.token_mask.dim() == 2 && ctx.token_mask.size(0) == T && ctx.token_mask.size(1) == B,
                "mzu: token_mask must be [", T, ", ", B, "], got ", ctx.token_mask.sizes());
    per_token = per_token * ctx.token_mask.to(per_token.dtype());
  }
  const double units = o_.disagreement_scale == DisagreementScale::Sum ? 1.0
                       : ctx.loss_units > 0                            ? ctx.loss_units
                                                                       : static_cast<double>(T * B);
  return per_token.sum() * (-lambda_at(ctx.step) / units);
}

void MZUCellImpl::finish_disagreement(StepContext& ctx) {
  if (dz_steps_.empty()) return;
  auto D = torch::stack(dz_steps_, 0);   // [T, B, M]
  auto C = torch::stack(cos_steps_, 0);  // [T, B]
  dz_steps_.clear();
  cos_steps_.clear();
  add_disagreement(D, C, ctx);
}

void MZUCellImpl::add_disagreement(const torch::Tensor& D, StepContext& ctx) {
  // The fast path (cells/fused_mzu.cpp) returns eq. 18's D_zone [T, B, M] of the reading it
  // claims (all pairs, cosine); the mean cosine over distinct zone pairs follows from it:
  // D_m = -(N + sum_{i != j} cos_ij) / N^2, so mean_{i != j} cos = (-N D_m - 1) / (N - 1).
  TORCH_CHECK(o_.disagreement_pairs == DisagreementPairs::All && o_.disagreement_form == DisagreementForm::Cosine,
              "mzu: add_disagreement(D) expects eq. 18 over all pairs with cosines, got pairs '",
              enum_name(o_.disagreement_pairs), "', form '", enum_name(o_.disagreement_form), "'");
  const double N = static_cast<double>(o_.zones);
  auto C = N > 1 ? ((-N * D.detach() - 1.0) / (N - 1.0)).mean(2) : torch::zeros({D.size(0), D.size(1)}, D.options());
  const bool reg = o_.zone_disagreement != 0 && at::GradMode::is_enabled();
  add_disagreement(reg ? D : D.detach(), C, ctx);
}

void MZUCellImpl::add_disagreement(const torch::Tensor& D, const torch::Tensor& C, StepContext& ctx) {
  const int64_t T = D.size(0);
  // metrics: mean over the (real) tokens, logged as (value x T, T) like one value per step
  auto Dm = D.detach().mean(2);
  // As tensors (no read-back: StepContext::tensor_metrics), then logged as (value x T, T).
  torch::Tensor dval, cval;
  if (ctx.token_mask.defined() && ctx.token_mask.dim() == 2 && ctx.token_mask.size(0) == T &&
      ctx.token_mask.size(1) == D.size(1)) {
    auto m = ctx.token_mask.to(Dm.dtype());
    const auto n = m.sum().clamp_min(1.0);
    dval = (Dm * m).sum() / n;
    cval = (C * m).sum() / n;
  } else {
    dval = Dm.mean();
    cval = C.mean();
  }
  ctx.add_metric("zone_disagreement", dval * static_cast<double>(T), T);
  ctx.add_metric("zone_cosine", cval * static_cast<double>(T), T);
  if (D.requires_grad()) {
    // During the warm-up eq. 19's weight is a host value that changes every step (StepContext::host_schedule).
    if (o_.disagreement_warmup > 0 && ctx.step >= 0 && ctx.step + 1 < o_.disagreement_warmup) ctx.host_schedule = true;
    ctx.add_loss(disagreement_loss(D, ctx));
  }
}

SeqOutput MZUCellImpl::forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx) {
  if (mzu_fast_path_applies(o_, ctx) && fast_path_device_ok(x) && token_fold_applies(in, x, ctx)) {
    // zone generation's and the regular maps' input half folded into the table (token_fold.h)
    ctx.folded_flops += folded_flops(*in, x.size(0) * x.size(1), 2.0 * static_cast<double>(first->w_x.numel()));
    ++ctx.fast_path_calls;
    return fused_mzu_forward(*this, x, s0, ctx, in);
  }
  return forward_sequence(x, s0, ctx);
}

SeqOutput MZUCellImpl::forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  // fast path (cells/fused_mzu.h): one fused autograd function over the sequence where it applies
  if (mzu_fast_path_applies(o_, ctx) && fast_path_device_ok(x)) {
    ++ctx.fast_path_calls;
    return fused_mzu_forward(*this, x, s0, ctx);
  }
  dz_steps_.clear();
  cos_steps_.clear();
  in_sequence_ = true;
  SeqOutput out;
  try {
    out = run_stepwise(x, s0, ctx);
  } catch (...) {
    in_sequence_ = false;
    dz_steps_.clear();
    cos_steps_.clear();
    throw;
  }
  in_sequence_ = false;
  finish_disagreement(ctx);
  return out;
}

double MZUCellImpl::flops_per_step() const {
  double f = first->flops(true, true);
  for (auto& t : transitions) f += t->flops(false, true);
  return f;
}

// ------------------------------------------------------------------ registry
const OptionTable<MZUOptions>& mzu_option_table() {
  static const auto t = [] {
    OptionTable<MZUOptions> t("model");
    using O = MZUOptions;
    t.field(
        "zones", &O::zones, 1, 1024,
        "Number of zones N of each M-function; zone size d_z = hidden / N (MZU eq. 4; paper: 4, Table 3 sweeps 2-16).");
    t.field("filter", &O::filter, 1, 1 << 20,
            "Filter size d_f of the zone-wise FFN (MZU eq. 5; paper: 1000 on PTB, 3072 on text8).");
    t.field(
        "depth", &O::depth, 0, 16,
        "Deep transition: number L of t-MZU cells (zero input) after the MZU per time step (MZU eqs. 15-17); 0 = no DT. Default 1: the paper's \"DT\" setting, used for every model of its tables.");
    t.field(
        "share_transition", &O::share_transition,
        "Deep transition: the t-MZUs reuse the first MZU's M-functions (all but the input weights), so parameters do not grow with depth. Default on: the paper shares them on PTB (text8 presets turn it off).");
    t.field("capsules", &O::capsules, 1, 1024,
            "Number J of output capsules of the dynamic routing, capsule size hidden / J (MZU eqs. 10-14; paper: 2).")
        .cells({"cap_mzu"});
    t.field("routing_iters", &O::routing_iters, 1, 100,
            "Routing iterations T of the dynamic routing (MZU eqs. 11-14; paper: 3).")
        .cells({"cap_mzu"});
    t.field(
        "zone_disagreement", &O::zone_disagreement, -100, 100,
        "Weight lambda of the zone disagreement regularisation (MZU eqs. 18-19); default 1.0 as in the paper (0 = off; negative values promote similar zones).");
    t.choice(
         "disagreement_scale", &O::disagreement_scale,
         "How eq. 19's sum over tokens is scaled: 'mean' divides it by the units the task loss is averaged over (characters in a language model, sentences in classification/ABSA), which keeps eq. 19's balance the same in every task; 'sum' adds the raw sum.")
        .advanced();
    t.choice(
         "disagreement_pairs", &O::disagreement_pairs,
         "Which zone pairs eq. 18 averages: 'all' = the N^2 pairs, i = j included, as written (the i = j terms are constant: D ranges from -1 to 0 and orthogonal zones give -1/N); 'distinct' = the N(N-1) pairs i != j (orthogonal zones give 0; the same gradient scaled by N/(N-1)).")
        .advanced();
    t.choice(
         "disagreement_form", &O::disagreement_form,
         "What eq. 18 averages: 'cosine' = cos(z_i, z_j) as written, maximised when the zones' unit vectors sum to zero (anti-correlated zones); 'squared_cosine' = cos^2, maximised by orthogonal zones (a reading, not the paper's formula).")
        .advanced();
    t.field(
         "disagreement_warmup", &O::disagreement_warmup, 0, 1e9,
         "Linear warm-up of lambda (eq. 19) over this many training steps: lambda x (step + 1) / N, full lambda afterwards; 0 = none (the paper states none).")
        .advanced();
    t.field(
        "regular_gate", &O::regular_gate,
        "Ablation 'Regular-Gate' (MZU Table 4): the gate uses a plain linear map of [x, h] instead of an M-function.");
    t.field(
        "regular_trans", &O::regular_trans,
        "Ablation 'Regular-Trans.' (MZU Table 4): the candidate uses a plain linear map of [x, h] instead of an M-function.");
    t.choice(
         "ln_position", &O::ln_position,
         "What layer normalization (model.layer_norm) normalises: 'preact' = the outputs of M_h and M_g before tanh/sigmoid; 'zones' = each zone after generation (regular maps keep 'preact').")
        .advanced();
    t.field("ffn_residual", &O::ffn_residual,
            "Add a residual connection around the zone-wise FFN (f_j = o_j + FFN(o_j)); eq. 5 has none.")
        .advanced();
    t.choice(
         "gcn_activation", &O::gcn_activation,
         "The activation sigma of the graph convolution (MZU eq. 9; unspecified in the paper; ReLU as in Kipf & Welling).")
        .advanced()
        .cells({"gcn_mzu"});
    t.choice(
         "gcn_edges", &O::gcn_edges,
         "Edge weights: 'cosine' = cos(z_i, z_j) as in eq. 7 (may be negative; see model.gcn_degree), 'relu_cosine' = max(cos, 0).")
        .advanced()
        .cells({"gcn_mzu"});
    t.choice(
         "gcn_degree", &O::gcn_degree,
         "Degree D~ of eq. 9's D~^-1/2 A~ D~^-1/2: 'absolute' = sum_j |A~_ij| (the default: eq. 9's degree whenever no edge is negative, and bounded when cosine edges are; see MZU_NOTES.md); 'signed_clamped' = eq. 9 as written, sum_j A~_ij clamped at 0.01 (runs written before this option read as it; overflows with many small zones).")
        .advanced()
        .cells({"gcn_mzu"});
    t.choice(
         "gcn_adjacency", &O::gcn_adjacency,
         "Adjacency A~ of eq. 9: 'cosine_plus_identity' = cosines + I, so self-loops weigh 2 (footnote 1 read as adding self-connections; the default, see MZU_NOTES.md); 'cosine' = eq. 8 as written, A~ = [cos(z_i, z_j)] with self-loops cos(z_i, z_i) = 1.")
        .advanced()
        .cells({"gcn_mzu"});
    t.choice(
         "sat_qkv", &O::sat_qkv,
         "Query/key/value maps of eq. 6: 'shared' = one W^Q, W^K, W^V for all zones (the default: the reading whose parameter counts match the paper's Tables 1-2, see MZU_NOTES.md); 'per_zone' = different W^Q_i, W^K_i, W^V_i for each zone.")
        .advanced()
        .cells({"sat_mzu"});
    return t;
  }();
  return t;
}

// The options of cell `comp`_mzu from a resolved model section.
static MZUOptions mzu_options(const json& m, int64_t in, MZUComposition comp) {
  MZUOptions o = mzu_option_table().read(m, to_string(comp) + "_mzu");
  o.composition = comp;
  o.input_size = in;
  o.hidden_size = resolved<int64_t>(m, "model", "hidden");
  o.layer_norm = resolved<bool>(m, "model", "layer_norm");  // common options the MZUs opt into
  o.candidate_dropout = resolved<double>(m, "model", "candidate_dropout");
  return o;
}

void register_mzu_cells(std::vector<CellInfo>& out) {
  struct Def {
    MZUComposition comp;
    std::string desc;
  };
  const std::vector<Def> defs = {
      {MZUComposition::Sat,
       "satMZU: Multi-Zone Unit with self-attention zone composition (Meng et al. AAAI 2020, eq. 6)"},
      {MZUComposition::Gcn,
       "gcnMZU: Multi-Zone Unit with graph-convolutional zone composition (Meng et al. AAAI 2020, eqs. 7-9)"},
      {MZUComposition::Cap,
       "capMZU: Multi-Zone Unit with capsule dynamic-routing zone composition (Meng et al. AAAI 2020, eqs. 10-14)"},
  };
  for (const auto& d : defs) {
    CellInfo c;
    c.name = to_string(d.comp) + "_mzu";
    c.family = "mzu";
    c.description = d.desc;
    c.short_name = to_string(d.comp) + "MZU";
    c.options = mzu_option_table().specs_for_cell(c.name);
    c.common_options = {"layer_norm", "candidate_dropout"};
    c.common_defaults = {{"layer_norm", true}};  // the paper applies layer normalization to every MZU
    const MZUComposition comp = d.comp;
    c.make = [comp](const json& m, int64_t in, int) -> std::shared_ptr<CellImpl> {
      return std::make_shared<MZUCellImpl>(mzu_options(m, in, comp));
    };
    c.fast_path_refusal = [comp](const json& m) {
      return fast_path_refusal_text(mzu_fast_path_refusal(mzu_options(m, 0, comp)));
    };
    c.check = [comp](const json& cfg, std::vector<ConfigError>& errs) {
      const MZUOptions o = mzu_option_table().read(cfg.at("model"), to_string(comp) + "_mzu");
      const int64_t H = resolved_cfg<int64_t>(cfg, "model", "hidden"), N = o.zones, L = o.depth;
      if (N <= 0) {
        errs.push_back({"model.zones", "the number of zones N must be >= 1, got " + std::to_string(N)});
      } else if (H % N != 0) {
        errs.push_back({"model.zones", "model.hidden (" + std::to_string(H) + ") must be divisible by model.zones (" +
                                           std::to_string(N) + "): each zone has d_h / N units (MZU eq. 4)"});
      }
      if (L < 0) errs.push_back({"model.depth", "the transition depth L must be >= 0, got " + std::to_string(L)});
      if (comp == MZUComposition::Cap) {
        const int64_t J = o.capsules, T = o.routing_iters;
        if (J <= 0) {
          errs.push_back({"model.capsules", "the number of output capsules J must be >= 1, got " + std::to_string(J)});
        } else if (H % J != 0) {
          errs.push_back({"model.capsules", "model.hidden (" + std::to_string(H) +
                                                ") must be divisible by model.capsules (" + std::to_string(J) +
                                                "): each output capsule has d_h / J units (MZU eq. 10)"});
        }
        if (T < 1)
          errs.push_back({"model.routing_iters", "at least one routing iteration is needed, got " + std::to_string(T)});
      }
      if (o.disagreement_pairs == DisagreementPairs::Distinct && N == 1 && o.zone_disagreement != 0)
        errs.push_back({"model.disagreement_pairs",
                        "'distinct' averages over pairs of different zones, and with model.zones = 1 there are none "
                        "(use 'all', more zones, or model.zone_disagreement = 0)"});
    };
    out.push_back(std::move(c));
  }
}

}  // namespace cs
