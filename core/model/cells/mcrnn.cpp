#include "cells/mcrnn.h"

#include <torch/nn/functional.h>

#include <algorithm>
#include <cmath>

#include "cells/baseline.h"
#include "cells/fused_common.h"
#include "cells/fused_mcrnn.h"
#include "cells/registry.h"
#include "util/error.h"

namespace cs {

int64_t mcrnn_in_degree(int64_t t, int64_t k, int64_t n) {
  // eq. 1 with a non-negative mod: m_t^k = ((t - k - 1) mod (n - 1)) + 1
  const int64_t q = n - 1;
  int64_t r = (t - k - 1) % q;
  if (r < 0) r += q;
  return r + 1;
}

bool mcrnn_clamps_state(StateClamp c, const std::string& base) {
  return c == StateClamp::On || (c == StateClamp::Auto && base != "lstm");
}

McRnnCellImpl::McRnnCellImpl(const McRnnOptions& o, std::shared_ptr<CellImpl> base) : opt_(o), base_(std::move(base)) {
  TORCH_CHECK(o.block >= 2, "mcrnn: block size n must be >= 2 (n - 1 channels), got ", o.block);
  TORCH_CHECK(o.hidden_size > 0, "mcrnn: hidden_size must be > 0, got ", o.hidden_size);
  TORCH_CHECK(base_, "mcrnn: no base cell");
  TORCH_CHECK(base_->hidden_size() == o.hidden_size, "mcrnn: base cell hidden size ", base_->hidden_size(),
              " != ", o.hidden_size);
  TORCH_CHECK(base_->input_size() == o.input_size, "mcrnn: base cell input size ", base_->input_size(),
              " != ", o.input_size);
  if (opt_.attention <= 0) opt_.attention = o.hidden_size;
  register_module("base", base_);
  clamp_state_ = mcrnn_clamps_state(opt_.state_clamp, base_->type_name());
  const int64_t H = o.hidden_size, I = o.input_size, A = opt_.attention, n1 = o.block - 1;
  // W_j = I + alpha D_j with D_j ~ U(-k/2, k/2): at initialisation s is close to the plain
  // block average of the predecessors. alpha scales how fast an adaptive optimiser moves W_j
  // away from I (Adam moves every entry of D_j by ~lr per step whatever its gradient's
  // scale); see MCRNN_NOTES.md "Parametrisation of W_j". alpha = 1 is W_j as a plain parameter.
  TORCH_CHECK(opt_.dist_scale > 0, "mcrnn: dist_scale must be > 0, got ", opt_.dist_scale);
  const double k = 1.0 / std::sqrt(static_cast<double>(H));
  w_dist = register_parameter("w_dist", torch::empty({n1, H, H}).uniform_(-k, k) * 0.5);
  const double kv = 1.0 / std::sqrt(static_cast<double>(H + I));
  v_h = register_parameter("v_h", torch::empty({A, H}).uniform_(-kv, kv));
  v_x = register_parameter("v_x", torch::empty({A, I}).uniform_(-kv, kv));
  r = register_parameter("r", torch::empty({A}).uniform_(-1.0 / std::sqrt(double(A)), 1.0 / std::sqrt(double(A))));
  {
    torch::NoGradGuard ng;
    auto probe_x = torch::zeros({1, 1, std::max<int64_t>(I, 0)});
    auto p = base_->input_projection(probe_x);
    base_proj_ = p.size(-1);
    // identity projection (cells that hoist nothing) costs nothing
    base_input_flops_ = p.data_ptr() == probe_x.data_ptr() ? 0.0 : 2.0 * static_cast<double>(base_proj_) * I;
    base_state_size_ = base_->initial_state(1, torch::TensorOptions()).size();
  }
}

State McRnnCellImpl::initial_state(int64_t B, const torch::TensorOptions& opts) const {
  const int64_t K = channels(), n1 = opt_.block - 1, H = opt_.hidden_size;
  State s;
  s.push_back(torch::zeros({B, H}, opts));
  s.push_back(torch::zeros({B}, opts.dtype(torch::kInt64)));  // t = 0: nothing seen yet
  s.push_back(torch::zeros({B, K, n1, H}, opts));             // h_t^k = 0 for t <= 0 (sec. 3.1)
  State b = base_->initial_state(1, opts);
  for (size_t i = 1; i < b.size(); ++i) {
    auto shp = b[i].sizes().vec();
    shp.erase(shp.begin());  // drop the batch dim of the probe state
    std::vector<int64_t> full = {B, K};
    if (opt_.lstm_memory == LstmMemory::Average) full.push_back(n1);
    full.insert(full.end(), shp.begin(), shp.end());
    s.push_back(torch::zeros(full, opts));
  }
  return s;
}

torch::Tensor McRnnCellImpl::dist_weights() const {
  // eq. 2's W_j, reparametrised: W_j = I + alpha D_j (alpha = model.dist_scale)
  auto eye = torch::eye(opt_.hidden_size, w_dist.options()).unsqueeze(0);
  return opt_.dist_scale == 1.0 ? eye + w_dist : eye + opt_.dist_scale * w_dist;
}

torch::Tensor McRnnCellImpl::input_projection(const torch::Tensor& x) {
  // Everything that depends only on x_t is computed once for all channels and the whole sequence:
  // the base cell's input half of eq. 3, and V_x x_t, the input half of V [h; x] in eq. 4.
  auto xb = base_->input_projection(x);
  auto vx = torch::matmul(x, v_x.t());
  return torch::cat({xb, vx}, -1);
}

torch::Tensor McRnnCellImpl::coefficients(int64_t t, const torch::TensorOptions& opts) const {
  // c[k][j] = [j <= m_t^k] / m_t^k: the masked average of eq. 2 applied to h before W_j (linear).
  const int64_t K = channels(), n1 = opt_.block - 1;
  std::vector<double> c(static_cast<size_t>(K * n1), 0.0);  // double: 1/3 must be exact in double models
  for (int64_t k = 1; k <= K; ++k) {
    const int64_t m = mcrnn_in_degree(t, k, opt_.block);  // eq. 1
    for (int64_t j = 1; j <= m; ++j) c[static_cast<size_t>((k - 1) * n1 + j - 1)] = 1.0 / static_cast<double>(m);
  }
  return torch::from_blob(c.data(), {1, K, n1, 1}, torch::kFloat64).to(opts).clone();  // clone: c is local
}

State McRnnCellImpl::step_at(int64_t t, const torch::Tensor& xp, const State& s, const torch::Tensor& wcat,
                             const torch::Tensor& coef, StepContext& ctx) {
  const int64_t B = xp.size(0), K = channels(), n1 = opt_.block - 1, H = opt_.hidden_size, A = opt_.attention;
  TORCH_CHECK(s.size() == 2 + base_state_size_, "mcrnn: expected a state of ", 2 + base_state_size_, " tensors, got ",
              s.size());
  const auto& hist = s[2];  // [B, K, n-1, H]: h_{t-j}^k at [:, k-1, j-1]
  // eq. 2: s_{t-1}^k = (1/m) sum_{j<=m} W_j h_{t-j}^k, all channels (batch-folded) and distances in one GEMM
  auto sv = (hist * coef).reshape({B * K, n1 * H}).mm(wcat);
  // model.state_clamp (a choice, MCRNN_NOTES.md "GRU and RNN bases"): s enters eq. 3 in place of the base's
  // h_{t-1}, whose range is [-1, 1]; a GRU passes it on as z * s, so an unclamped s with ||W_j|| > 1 grows
  // geometrically along the channel once the update gates close. The clamp is the identity inside [-1, 1].
  if (clamp_state_) sv = sv.clamp(-1.0, 1.0);
  auto xb = xp.narrow(1, 0, base_proj_);
  auto vx = xp.narrow(1, base_proj_, A);
  // x_t is the same for every channel: broadcast its projection over the folded channel dim
  auto xrep = xb.unsqueeze(1).expand({B, K, base_proj_}).reshape({B * K, base_proj_});
  State bs{sv};
  for (size_t i = 1; i < base_state_size_; ++i) {
    const auto& e = s[2 + i];
    if (opt_.lstm_memory == LstmMemory::Average) {
      // LSTM memory (choice, MCRNN_NOTES.md): the same in-block average as eq. 2, without W_j
      auto cavg = (e * coef).sum(2);
      bs.push_back(cavg.reshape({B * K, -1}));
    } else {
      // LSTM memory (default choice): the immediate predecessor's c_{t-1}^k in the same channel
      bs.push_back(e.reshape({B * K, -1}));
    }
  }
  // eq. 3: h_t^k = f(s_{t-1}^k, x_t), the base cell's step with its state replaced by s
  State ns;
  if (ctx.probe) {
    const std::string saved = ctx.probe->prefix;
    ctx.probe->prefix = saved + "base/";
    ns = base_->step(xrep, bs, ctx);
    ctx.probe->prefix = saved;
  } else {
    ns = base_->step(xrep, bs, ctx);
  }
  auto h = base_->output_of(ns);  // [B*K, H]
  auto h3 = h.view({B, K, H});
  // eq. 4: e_t^k = r^T tanh(V_h h_t^k + V_x x_t)
  auto e = torch::tanh(h.mm(v_h.t()).view({B, K, A}) + vx.unsqueeze(1)).matmul(r);  // [B, K]
  auto a = torch::softmax(e, 1);                                                    // eq. 5
  auto hatt = a.unsqueeze(1).bmm(h3).squeeze(1);                                    // eq. 6: sum_k a^k h^k
  State out;
  out.push_back(hatt);
  out.push_back(s[1] + 1);
  // shift the window: h_t^k becomes distance 1 at step t+1
  out.push_back(n1 == 1 ? h3.unsqueeze(2) : torch::cat({h3.unsqueeze(2), hist.narrow(2, 0, n1 - 1)}, 2));
  for (size_t i = 1; i < base_state_size_; ++i) {
    auto ci = ns[i].reshape({B, K, -1});
    if (opt_.lstm_memory == LstmMemory::Average) {
      const auto& prev = s[2 + i];
      out.push_back(n1 == 1 ? ci.unsqueeze(2) : torch::cat({ci.unsqueeze(2), prev.narrow(2, 0, n1 - 1)}, 2));
    } else {
      out.push_back(ci);
    }
  }
  if (ctx.probe) {
    std::vector<int64_t> m(static_cast<size_t>(K));
    for (int64_t k = 1; k <= K; ++k) m[static_cast<size_t>(k - 1)] = mcrnn_in_degree(t, k, opt_.block);
    ctx.record("channel_attention", a);                        // a_t^k [B, K] (Fig. 3)
    ctx.record("in_degree", torch::tensor(m, torch::kInt64));  // m_t^k [K]
    ctx.record("channel_h", h3);                               // h_t^k [B, K, H]
    ctx.record("h", hatt);
  }
  return out;
}

State McRnnCellImpl::with_previous_output(State s, const torch::Tensor& h0) const {
  TORCH_CHECK(s.size() >= 3, "mcrnn: state has ", s.size(), " tensors, expected at least 3");
  TORCH_CHECK(h0.dim() == 2 && h0.size(1) == opt_.hidden_size, "mcrnn: expected an output [B, ", opt_.hidden_size,
              "], got ", h0.sizes());
  s[0] = h0;
  s[2] = h0.unsqueeze(1).unsqueeze(2).expand_as(s[2]).contiguous();  // [B, K, n-1, H]: every distance, every channel
  return s;
}

static int64_t state_time(const State& s) {
  TORCH_CHECK(s.size() >= 3, "mcrnn: state has ", s.size(), " tensors, expected at least 3");
  return s[1].numel() > 0 ? s[1].reshape({-1})[0].item<int64_t>() : 0;
}

State McRnnCellImpl::step(const torch::Tensor& xp, const State& s, StepContext& ctx) {
  const int64_t H = opt_.hidden_size, n1 = opt_.block - 1;
  auto wcat = dist_weights().transpose(1, 2).reshape({n1 * H, H});
  const int64_t t = state_time(s) + 1;
  return step_at(t, xp, s, wcat, coefficients(t, s[2].options()), ctx);
}

SeqOutput McRnnCellImpl::forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  return forward_impl(x, nullptr, s0, ctx);
}

SeqOutput McRnnCellImpl::forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0,
                                        StepContext& ctx) {
  return forward_impl(x, in, s0, ctx);
}

SeqOutput McRnnCellImpl::forward_impl(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx) {
  TORCH_CHECK(x.dim() == 3, "mcrnn: expected input [T, B, I], got ", x.sizes());
  TORCH_CHECK(x.size(2) == input_size(), "mcrnn: expected input size ", input_size(), ", got ", x.size(2));
  const int64_t H = opt_.hidden_size, n1 = opt_.block - 1;
  WeightDropScope wd(base_.get());  // one DropConnect mask of the base's w_hh per forward (AWD-LSTM)
  // [W_1^T; ...; W_{n-1}^T]: built once per sequence, so each step is a single GEMM (eq. 2)
  auto wcat = dist_weights().transpose(1, 2).reshape({n1 * H, H});
  int64_t t = state_time(s0);
  if (mcrnn_fast_path_applies(*this, x, ctx) && fast_path_device_ok(x)) {
    ++ctx.fast_path_calls;
    // The recurrence as one autograd function with a hand-written backward (cells/fused_mcrnn.h);
    // the hoisted input halves and wcat stay under autograd. Same equations, same state layout.
    TORCH_CHECK(s0.size() == 4, "mcrnn: expected a state of 4 tensors with an LSTM base, got ", s0.size());
    // input_projection's two halves as they are: concatenating them only to narrow them apart
    // again cost a copy forward and two zero-filled [T, B, 4H + A] gradients backward.
    auto* lstm = dynamic_cast<LSTMCellImpl*>(base_.get());
    torch::Tensor xb, vx;
    if (lstm && token_fold_applies(in, x, ctx)) {
      // both products of x_t folded into the embedding table (cells/token_fold.h)
      ctx.folded_flops +=
          folded_flops(*in, x.size(0) * x.size(1), 2.0 * static_cast<double>(lstm->w_ih.numel() + v_x.numel()));
      xb = lstm->input_projection_tokens(*in);
      vx = fold_linear(*in, v_x);
    } else {
      xb = base_->input_projection(x);
      vx = torch::matmul(x, v_x.t());
    }
    auto r3 = fused::mcrnn_recurrence(xb, vx, s0[2], s0[3], {wcat, lstm->w_hh, lstm->b_hh, v_h, r}, t, opt_.block);
    const int64_t T = x.size(0);
    return {r3[0], {r3[0][T - 1], s0[1] + T, r3[1], r3[2]}};
  }
  std::vector<torch::Tensor> steps = input_projection(x).unbind(0);  // never xp[t]
  // the in-degree pattern has period n-1: one coefficient tensor per phase
  std::vector<torch::Tensor> coef;
  for (int64_t p = 0; p < n1; ++p) coef.push_back(coefficients(t + 1 + p, s0[2].options()));
  std::vector<torch::Tensor> outs;
  outs.reserve(steps.size());
  State s = s0;
  // A sentence task's padding mask [T, B] reaches the base cell one step at a time, as the
  // batch-folded rows it sees ([1, B K], batch-major like xrep in step_at): an MZU base masks
  // its zone-disagreement term (eq. 19) with it.
  const torch::Tensor mask = ctx.token_mask;
  const bool per_step_mask =
      mask.defined() && mask.dim() == 2 && mask.size(0) == x.size(0) && mask.size(1) == x.size(1);
  struct MaskRestore {
    StepContext& ctx;
    torch::Tensor mask;
    ~MaskRestore() { ctx.token_mask = mask; }
  } restore{ctx, mask};
  for (size_t i = 0; i < steps.size(); ++i) {
    ++t;
    if (per_step_mask) ctx.token_mask = mask.narrow(0, static_cast<int64_t>(i), 1).repeat_interleave(channels(), 1);
    s = step_at(t, steps[i], s, wcat, coef[i % static_cast<size_t>(n1)], ctx);
    outs.push_back(s[0]);
  }
  return {torch::stack(outs, 0), s};
}

double McRnnCellImpl::flops_per_step() const {
  // FLOPs executed per step and batch element (multiply-add = 2).
  const double K = static_cast<double>(channels()), n1 = static_cast<double>(opt_.block - 1);
  const double H = static_cast<double>(opt_.hidden_size), I = static_cast<double>(opt_.input_size);
  const double A = static_cast<double>(opt_.attention);
  double f = base_input_flops_ + 2.0 * A * I;              // hoisted: base input half + V_x x (once)
  f += K * (base_->flops_per_step() - base_input_flops_);  // eq. 3: f's recurrent half per channel
  f += K * n1 * H + 2.0 * K * n1 * H * H;                  // eq. 2: mask/scale + GEMM over all n-1 distances
  f += K * (2.0 * A * H + 4.0 * A);                        // eq. 4: V_h h, add, tanh, r^T
  f += 4.0 * K + 2.0 * K * H;                              // eqs. 5-6: softmax, weighted sum
  if (clamp_state_) f += K * H;                            // model.state_clamp on s
  if (opt_.lstm_memory == LstmMemory::Average) f += 2.0 * K * n1 * H * std::max<size_t>(base_state_size_ - 1, 0);
  return f;
}

// ---------------------------------------------------------------- registry entry
const OptionTable<McRnnOptions>& mcrnn_option_table() {
  static const auto t = [] {
    OptionTable<McRnnOptions> t("model");
    using O = McRnnOptions;
    t.field("block", &O::block, 2, 32,
            "Block size n (MC-RNN eq. 1); the layer has n-1 channels, i.e. the paper's MC-RNN-(n-1). "
            "n = 2 is one channel (a base cell with s = W_1 h_{t-1}); paper best: n = 4 (MC-RNN-3).");
    t.field(
        "base", &O::base,
        "Base recurrent function f of eq. 3: a step-wise Cellscope cell (rnn, gru, lstm, ...). The paper uses lstm.");
    t.field("attention", &O::attention, 0, 65536,
            "Rows of the attention matrix V (eq. 4); 0 = hidden size (the paper's choice).");
    t.choice("lstm_memory", &O::lstm_memory,
             "What the base's extra state (the LSTM memory cell c) is at each node, which the paper leaves open: "
             "'prev' = c of the immediate predecessor in the same channel; 'average' = the in-block average "
             "(1/m) sum_{j<=m} c_{t-j} (eq. 2 without W_j).");
    t.field("dist_scale", &O::dist_scale, 1e-4, 1.0,
            "alpha in W_j = I + alpha D_j, the parametrisation of eq. 2's distance weights (D_j is the "
            "trained parameter). Small alpha keeps Adam from moving W_j away from I faster than the base "
            "cell learns (with alpha = 1 an LSTM base stalls near the unigram perplexity); 1 = W_j trained "
            "directly. See MCRNN_NOTES.md.");
    t.choice("state_clamp", &O::state_clamp,
             "Clamp s of eq. 2 to [-1, 1], the range of the base's own h, before f of eq. 3 reads it: "
             "'auto' = on for every base but lstm (the paper's base, kept as written); 'off' = eq. 3 as "
             "written. A GRU base passes s on as z * s, so without the clamp ||W_j|| > 1 makes h grow "
             "geometrically once the update gates close (the loss reached 1e6 in 7 Adam steps at lr 3e-3). "
             "See MCRNN_NOTES.md.");
    return t;
  }();
  return t;
}

json mcrnn_base_model(const json& m) {
  const std::string base = resolved<std::string>(m, "model", "base");
  const CellInfo* bi = nullptr;
  for (auto& ci : cell_registry())
    if (ci.name == base && base != "mcrnn") bi = &ci;
  if (!bi) throw UserError("model.base: unknown base cell '" + base + "'");
  json bm = m;
  bm["cell"] = base;
  // A gcn_mzu base keeps eq. 9's degree as MC-RNN runs have always computed it (model.gcn_degree
  // came later and the base's options are not settable here, so a stored config cannot say).
  if (base == "gcn_mzu" && !bm.contains("gcn_degree")) bm["gcn_degree"] = "signed_clamped";
  for (auto& o : bi->options)  // the base's own options at their defaults
    if (!bm.contains(o.key) && !o.default_value.is_null()) bm[o.key] = o.default_value;
  return bm;
}

void register_mcrnn_cells(std::vector<CellInfo>& out) {
  CellInfo c;
  c.name = "mcrnn";
  c.family = "mcrnn";
  c.description =
      "Multi-Channel RNN (Xu et al. AAAI 2019): n-1 staggered block channels over a base cell, attention over channels";
  c.options = mcrnn_option_table().specs();
  c.common_options = {"layer_norm", "candidate_dropout"};  // passed on to the base cell
  c.short_name = "MC-RNN";
  c.short_name_suffix = [](const json& m) {  // MC-RNN-<n-1 channels>/<its base's short name>
    std::string s;
    if (m.contains("block") && m["block"].is_number_integer()) s += "-" + std::to_string(m["block"].get<int64_t>() - 1);
    if (m.contains("base") && m["base"].is_string()) {
      const std::string base = m["base"].get<std::string>();
      const CellInfo* b = find_cell_info(base);
      s += "/" + (b && !b->short_name.empty() ? b->short_name : base);
    }
    return s;
  };
  c.mcrnn_base_refusal = "an MC-RNN cannot be its own base cell (expected rnn, gru, lstm, ...)";
  c.check = [](const json& cfg, std::vector<ConfigError>& errs) {
    const McRnnOptions o = mcrnn_option_table().read(cfg.at("model"));
    const std::string& base = o.base;
    const auto& reg = cell_registry();
    auto it = std::find_if(reg.begin(), reg.end(), [&](const CellInfo& ci) { return ci.name == base; });
    if (it == reg.end()) {
      std::string known;
      for (auto& ci : reg)
        if (ci.name != "mcrnn" && ci.mcrnn_base_refusal.empty()) known += (known.empty() ? "" : ", ") + ci.name;
      errs.push_back({"model.base", "unknown base cell '" + base + "' (known: " + known + ")"});
    } else if (!it->mcrnn_base_refusal.empty()) {  // each cell says why it cannot be a base (CellInfo)
      errs.push_back({"model.base", it->mcrnn_base_refusal});
    }
    if (o.block < 2)
      errs.push_back({"model.block", "block size n must be >= 2 (n - 1 channels), got " + std::to_string(o.block)});
  };
  c.fast_path_refusal = [](const json& m) {
    const McRnnOptions o = mcrnn_option_table().read(m);
    if (o.base != "lstm") return fast_path_refusal_text(mcrnn_fast_path_refusal(o, nullptr, 0, /*training=*/true));
    const BaselineOptions bo = read_baseline_options(m, 0, o.base);  // the options make() gives the base
    return fast_path_refusal_text(mcrnn_fast_path_refusal(o, &bo, model_weight_drop(m), /*training=*/true));
  };
  c.make = [](const json& m, int64_t in, int layer) -> std::shared_ptr<CellImpl> {
    const std::string base = resolved<std::string>(m, "model", "base");
    const CellInfo* bi = nullptr;
    for (auto& ci : cell_registry())
      if (ci.name == base && base != "mcrnn") bi = &ci;
    if (!bi) throw UserError("model.base: unknown base cell '" + base + "'");
    const json bm = mcrnn_base_model(m);
    McRnnOptions o = mcrnn_option_table().read(m);
    o.input_size = in;
    o.hidden_size = resolved<int64_t>(m, "model", "hidden");
    if (o.block < 2) throw UserError("model.block: block size n must be >= 2, got " + std::to_string(o.block));
    return std::make_shared<McRnnCellImpl>(o, bi->make(bm, in, layer));
  };
  out.push_back(std::move(c));
}

}  // namespace cs
