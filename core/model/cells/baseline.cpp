#include "cells/baseline.h"

#include <ATen/ATen.h>
#include <torch/nn/functional.h>

#include <cmath>
#include <cstdio>
#include <mutex>

#include "cells/fused_common.h"
#include "cells/fused_gru_dt.h"
#include "cells/registry.h"

namespace cs {

namespace F = torch::nn::functional;

GateCellBase::GateCellBase(const BaselineOptions& o, int gates, const std::string& name)
    : opt_(o), gates_(gates), name_(name) {
  TORCH_CHECK(o.input_size >= 0, name, ": input_size must be >= 0, got ", o.input_size);
  TORCH_CHECK(o.hidden_size > 0, name, ": hidden_size must be > 0, got ", o.hidden_size);
  const int64_t H = o.hidden_size, G = gates * H;
  // Same initialisation as torch::nn::GRU/LSTM: U(-1/sqrt(H), 1/sqrt(H)).
  const double k = 1.0 / std::sqrt(static_cast<double>(H));
  w_ih = register_parameter("w_ih", torch::empty({G, o.input_size}).uniform_(-k, k));
  w_hh = register_parameter("w_hh", torch::empty({G, H}).uniform_(-k, k));
  b_ih = register_parameter("b_ih", torch::empty({G}).uniform_(-k, k));
  b_hh = register_parameter("b_hh", torch::empty({G}).uniform_(-k, k));
  if (o.layer_norm) {
    // No input, no input LN: a GRU+DT transition GRU (input_size 0) is fed b_ih alone, so
    // LN gains on W_ih x would be parameters that never receive a gradient (and would
    // inflate the parameter count the tables print).
    if (o.input_size > 0) {
      ln_x_gain = register_parameter("ln_x_gain", torch::ones({gates, H}));
      ln_x_bias = register_parameter("ln_x_bias", torch::zeros({gates, H}));
    }
    ln_h_gain = register_parameter("ln_h_gain", torch::ones({gates, H}));
    ln_h_bias = register_parameter("ln_h_bias", torch::zeros({gates, H}));
  }
}

const char* gate_cell_fused_refusal(const BaselineOptions& o, bool training) {
  if (o.layer_norm) return "model.layer_norm: LibTorch's fused RNN/GRU/LSTM kernels have no layer normalization";
  if (training && o.candidate_dropout > 0)
    return "model.candidate_dropout > 0 in training: LibTorch's fused RNN/GRU/LSTM kernels have no candidate dropout";
  return nullptr;
}

bool GateCellBase::fused_ok(const StepContext& ctx) const {
  return !ctx.probe && !ctx.stepwise && gate_cell_fused_refusal(opt_, is_training()) == nullptr;
}

// Layer normalization (when enabled) normalises each gate's input and hidden
// pre-activations separately (Ba et al. 2016, LN-GRU/LSTM), per gate chunk of size H.
static torch::Tensor ln_per_gate(const torch::Tensor& a, int gates, const torch::Tensor& g, const torch::Tensor& b) {
  auto shp = a.sizes().vec();
  const int64_t H = shp.back() / gates;
  auto v = a.reshape({-1, gates, H});
  v = torch::layer_norm(v, {H}, torch::Tensor(), torch::Tensor(), 1e-5) * g + b;
  return v.reshape(shp);
}

torch::Tensor GateCellBase::input_projection_tokens(const TokenInput& in) {
  // input_projection() of x = table[tokens] with W_ih x computed as (table W_ih^T)[tokens]
  if (opt_.layer_norm) return ln_per_gate(fold_linear(in, w_ih), gates_, ln_x_gain, ln_x_bias) + b_ih;
  return fold_linear(in, w_ih, b_ih);  // b_ih added in the gather's pass
}

torch::Tensor GateCellBase::input_projection(const torch::Tensor& x) {
  // Hoisted out of the time loop: one [T*B, I] x [I, G] product for the whole sequence.
  if (opt_.layer_norm) {
    auto a = torch::matmul(x, w_ih.t());
    return ln_per_gate(a, gates_, ln_x_gain, ln_x_bias) + b_ih;
  }
  return torch::addmm(b_ih, x.reshape({-1, x.size(-1)}), w_ih.t()).view({x.size(0), x.size(1), -1});
}

bool GateCellBase::begin_weight_drop() {
  if (w_hh_drop_.defined() || weight_drop <= 0 || !is_training()) return false;
  w_hh_drop_ = F::dropout(w_hh, F::DropoutFuncOptions().p(weight_drop).training(true));
  return true;
}

torch::Tensor GateCellBase::hidden_projection(const torch::Tensor& h) {
  if (opt_.layer_norm) return ln_per_gate(torch::mm(h, whh().t()), gates_, ln_h_gain, ln_h_bias) + b_hh;
  return torch::addmm(b_hh, h, whh().t());
}

torch::Tensor GateCellBase::candidate_dropout(const torch::Tensor& n) {
  // Dropout on the candidate activation (MZU paper, training details; Semeniuta et al.
  // 2016): a fresh mask per step, only in training.
  if (opt_.candidate_dropout > 0 && is_training())
    return F::dropout(n, F::DropoutFuncOptions().p(opt_.candidate_dropout).training(true));
  return n;
}

double GateCellBase::flops_per_step() const {
  const double H = opt_.hidden_size, I = opt_.input_size, G = gates_ * H;
  // two matrix-vector products (2 FLOPs per multiply-add) + elementwise (~4 per gate unit)
  return 2.0 * G * I + 2.0 * G * H + 6.0 * G;
}

// ---------------------------------------------------------------- RNN
State RNNCellImpl::step(const torch::Tensor& xp, const State& s, StepContext& ctx) {
  auto n = torch::tanh(xp + hidden_projection(s[0]));
  n = candidate_dropout(n);
  ctx.record("candidate", n);
  ctx.record("h", n);
  return {n};
}

SeqOutput RNNCellImpl::forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  WeightDropScope wd(this);
  if (!fused_ok(ctx)) return run_stepwise(x, s0, ctx);
  ++ctx.fast_path_calls;
  auto r = at::rnn_tanh(x, s0[0].unsqueeze(0), {w_ih, whh(), b_ih, b_hh}, true, 1, 0.0, is_training(), false, false);
  return {std::get<0>(r), {std::get<1>(r).squeeze(0)}};
}

// ---------------------------------------------------------------- GRU
State GRUCellImpl::step(const torch::Tensor& xp, const State& s, StepContext& ctx) {
  const auto& h = s[0];
  auto hp = hidden_projection(h);
  auto xc = xp.chunk(3, 1);
  auto hc = hp.chunk(3, 1);
  auto r = torch::sigmoid(xc[0] + hc[0]);
  auto z = torch::sigmoid(xc[1] + hc[1]);
  auto n = torch::tanh(xc[2] + r * hc[2]);
  n = candidate_dropout(n);
  auto hn = n + z * (h - n);  // (1 - z) * n + z * h
  if (ctx.probe) {
    ctx.record("candidate", n);
    ctx.record("gate", 1 - z);  // the MZU paper's g_t: weight of the candidate
    ctx.record("reset", r);
    ctx.record("h", hn);
  }
  return {hn};
}

SeqOutput GRUCellImpl::forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  WeightDropScope wd(this);
  if (!fused_ok(ctx)) return run_stepwise(x, s0, ctx);
  ++ctx.fast_path_calls;
  // LibTorch's fused GRU kernel (one layer, unidirectional, time-major).
  auto r = at::gru(x, s0[0].unsqueeze(0), {w_ih, whh(), b_ih, b_hh}, true, 1, 0.0, is_training(), false, false);
  return {std::get<0>(r), {std::get<1>(r).squeeze(0)}};
}

// ---------------------------------------------------------------- LSTM
State LSTMCellImpl::initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  return {torch::zeros({batch, hidden_size()}, opts), torch::zeros({batch, hidden_size()}, opts)};
}

State LSTMCellImpl::step(const torch::Tensor& xp, const State& s, StepContext& ctx) {
  auto gates = xp + hidden_projection(s[0]);
  auto c4 = gates.chunk(4, 1);
  auto i = torch::sigmoid(c4[0]);
  auto f = torch::sigmoid(c4[1]);
  auto g = candidate_dropout(torch::tanh(c4[2]));
  auto o = torch::sigmoid(c4[3]);
  auto c = f * s[1] + i * g;
  auto h = o * torch::tanh(c);
  if (ctx.probe) {
    ctx.record("candidate", g);
    ctx.record("gate", i);
    ctx.record("forget", f);
    ctx.record("output_gate", o);
    ctx.record("c", c);
    ctx.record("h", h);
  }
  return {h, c};
}

namespace {
// oneDNN's LSTM under at::lstm. LibTorch 2.x hands a CPU float LSTM to oneDNN (mkldnn_rnn) where its build has
// oneDNN; Debian 13's LibTorch 2.6, built against the system's oneDNN 3.7 rather than the version PyTorch pins,
// gets it wrong without gradients (evaluation, generation, analyses): max |h error| 0.38 on a 16-unit LSTM, at
// T = 1 too, while the path with gradients and the native kernel give the equations' values (seen with
// python3-torch 2.6.0+debian as well: torch.nn.LSTM under torch.no_grad(); docs/PLATFORMS.md). So the first
// LSTM of a process compares at::lstm without gradients against the same call with oneDNN off, on a small LSTM of
// fixed weights (no random numbers are drawn: training stays reproducible), and where they differ every later
// call (with gradients or not) runs with oneDNN off. Other builds (Debian 12's 1.13 has no oneDNN RNN; a sound oneDNN)
// keep their path.
std::mutex g_onednn_flag;  // the switch is process-wide: one LSTM call at a time flips it
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> lstm_call(const torch::Tensor& x, const torch::Tensor& h0,
                                                                  const torch::Tensor& c0, at::TensorList params,
                                                                  bool train, bool onednn_off) {
  if (!onednn_off) return at::lstm(x, {h0, c0}, params, true, 1, 0.0, train, false, false);
  std::lock_guard<std::mutex> lock(g_onednn_flag);
  auto& context = at::globalContext();
  const bool was = context.userEnabledMkldnn();
  context.setUserEnabledMkldnn(false);
  try {
    auto r = at::lstm(x, {h0, c0}, params, true, 1, 0.0, train, false, false);
    context.setUserEnabledMkldnn(was);
    return r;
  } catch (...) {
    context.setUserEnabledMkldnn(was);
    throw;
  }
}

// True when at::lstm without gradients has to run with oneDNN off on this LibTorch (probed once, above).
bool onednn_lstm_unsound() {
  static const bool unsound = [] {
    torch::NoGradGuard no_grad;
    const int64_t T = 3, B = 2, E = 5, H = 6;
    auto fixed = [](int64_t n, double phase) { return torch::sin(torch::arange(n, torch::kFloat) * 0.37 + phase); };
    const auto x = fixed(T * B * E, 0.1).reshape({T, B, E});
    const auto h0 = fixed(B * H, 0.2).reshape({1, B, H}), c0 = fixed(B * H, 0.3).reshape({1, B, H});
    const std::vector<torch::Tensor> params = {fixed(4 * H * E, 0.4).reshape({4 * H, E}) * 0.5,
                                               fixed(4 * H * H, 0.5).reshape({4 * H, H}) * 0.5, fixed(4 * H, 0.6) * 0.1,
                                               fixed(4 * H, 0.7) * 0.1};
    const auto as_is = std::get<0>(lstm_call(x, h0, c0, params, false, false));
    const auto native = std::get<0>(lstm_call(x, h0, c0, params, false, true));
    const double diff = (as_is - native).abs().max().item<double>();
    if (diff > 1e-4) {
      std::fprintf(stderr,
                   "cellscope: this LibTorch's oneDNN LSTM computes wrong values without gradients (max |h| "
                   "difference %.3g on a test LSTM): LSTMs run with oneDNN off (docs/PLATFORMS.md)\n",
                   diff);
      return true;
    }
    return false;
  }();
  return unsound;
}
}  // namespace

SeqOutput LSTMCellImpl::forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  WeightDropScope wd(this);
  if (!fused_ok(ctx)) return run_stepwise(x, s0, ctx);
  ++ctx.fast_path_calls;
  auto r = lstm_call(x, s0[0].unsqueeze(0), s0[1].unsqueeze(0), {w_ih, whh(), b_ih, b_hh}, is_training(),
                     onednn_lstm_unsound());
  return {std::get<0>(r), {std::get<1>(r).squeeze(0), std::get<2>(r).squeeze(0)}};
}

// ---------------------------------------------------------------- GRU+DT
GRUDTCellImpl::GRUDTCellImpl(const BaselineOptions& o) : opt_(o) {
  TORCH_CHECK(o.depth >= 0, "gru_dt: depth must be >= 0, got ", o.depth);
  first = register_module("first", std::make_shared<GRUCellImpl>(o));
  // Transition GRUs see a zero input: W_ih x vanishes and only b_ih remains, so
  // they are built with input size 0 (no input weights) and fed b_ih.
  BaselineOptions t = o;
  t.input_size = 0;
  if (o.share_transition) {
    // Shared across depths as the MZU paper shares its M-functions on PTB (and as the MZUs
    // here do): every transition GRU is the first GRU (w_hh, b_hh, b_ih, LN), fed a zero
    // input, so the parameters are those of one GRU at any depth (BASELINE_NOTES.md).
    for (int64_t l = 0; l < o.depth; ++l) transitions.push_back(first);
  } else {
    for (int64_t l = 0; l < o.depth; ++l)
      transitions.push_back(register_module("transition" + std::to_string(l + 1), std::make_shared<GRUCellImpl>(t)));
  }
}

torch::Tensor GRUDTCellImpl::input_projection(const torch::Tensor& x) { return first->input_projection(x); }

State GRUDTCellImpl::step(const torch::Tensor& xp, const State& s, StepContext& ctx) {
  State h = first->step(xp, s, ctx);
  for (auto& tr : transitions) {
    // zero input: the input projection is just the bias b_ih (eq. 16 with x = 0)
    auto zp = tr->b_ih.unsqueeze(0).expand({h[0].size(0), tr->b_ih.size(0)});
    h = tr->step(zp, h, ctx);
  }
  return h;
}

bool GRUDTCellImpl::fast_ok(const torch::Tensor& x, const StepContext& ctx) const {
  return gru_dt_fast_path_applies(opt_, ctx, first->weight_drop) && fast_path_device_ok(x) && x.dim() == 3 &&
         x.size(0) > 0 && x.size(2) == opt_.input_size &&
         (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
}

SeqOutput GRUDTCellImpl::forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  // Input half (W_ih x + b_ih, with LN when on) for the whole sequence, under autograd.
  if (fast_ok(x, ctx)) {
    ++ctx.fast_path_calls;
    return gru_dt_fast_forward(*this, first->input_projection(x), s0);
  }
  return run_stepwise(x, s0, ctx);
}

SeqOutput GRUDTCellImpl::forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0,
                                        StepContext& ctx) {
  if (fast_ok(x, ctx) && token_fold_applies(in, x, ctx)) {
    // W_ih x folded into the embedding table (cells/token_fold.h); the same recurrence
    ctx.folded_flops += folded_flops(*in, x.size(0) * x.size(1), 2.0 * static_cast<double>(first->w_ih.numel()));
    ++ctx.fast_path_calls;
    return gru_dt_fast_forward(*this, first->input_projection_tokens(*in), s0);
  }
  return forward_sequence(x, s0, ctx);
}

double GRUDTCellImpl::flops_per_step() const {
  const double H = opt_.hidden_size;
  double f = first->flops_per_step();
  f += static_cast<double>(transitions.size()) * (2.0 * 3 * H * H + 6.0 * 3 * H);
  return f;
}

// ---------------------------------------------------------------- registry entries
const OptionTable<BaselineOptions>& baseline_option_table() {
  static const auto t = [] {
    OptionTable<BaselineOptions> t("model");
    using O = BaselineOptions;
    t.field(
         "depth", &O::depth, 0, 16,
         "Deep transition: number L of transition cells with zero input after the first cell, per time step (MZU eqs. 15-17; paper default 1).")
        .cells({"gru_dt"});
    t.field(
         "share_transition", &O::share_transition,
         "Deep transition: the transition GRUs reuse the first GRU's parameters (all but its input weights), so the cell has one GRU's parameters at any depth; the same sharing as the MZUs' model.share_transition. Default on: the MZU paper shares across depths on PTB, where its Table 4 compares GRU+DT with the MZUs.")
        .cells({"gru_dt"});
    return t;
  }();
  return t;
}

BaselineOptions read_baseline_options(const json& m, int64_t input_size, const std::string& name) {
  BaselineOptions o = baseline_option_table().read(m, name);
  o.input_size = input_size;
  o.hidden_size = resolved<int64_t>(m, "model", "hidden");
  o.layer_norm = resolved<bool>(m, "model", "layer_norm");  // common options the baselines opt into
  o.candidate_dropout = resolved<double>(m, "model", "candidate_dropout");
  return o;
}

double model_weight_drop(const json& m) { return m.value("weight_drop", 0.0); }

void register_baseline_cells(std::vector<CellInfo>& out) {
  auto add = [&](const std::string& name, const std::string& desc,
                 std::function<std::shared_ptr<CellImpl>(const BaselineOptions&)> mk) {
    CellInfo c;
    c.name = name;
    c.family = "baseline";
    c.description = desc;
    c.options = baseline_option_table().specs_for_cell(name);
    c.make = [mk, name](const json& m, int64_t in, int) { return mk(read_baseline_options(m, in, name)); };
    c.common_options = {"layer_norm", "candidate_dropout"};
    c.short_name = name == "rnn" ? "RNN" : name == "lstm" ? "LSTM" : "GRU";  // gru and gru_dt: GRU
    if (name == "gru_dt")  // the deep-transition baseline: depth 0 (the default) is a transition of depth 1
      c.short_name_suffix = [](const json& m) {
        const int64_t d = m.contains("depth") && m["depth"].is_number_integer() ? m["depth"].get<int64_t>() : 0;
        return d <= 1 ? std::string("+DT") : "+DT" + std::to_string(d);
      };
    c.fast_path_refusal = [name](const json& m) {
      const BaselineOptions o = read_baseline_options(m, 0, name);
      if (name == "gru_dt") return fast_path_refusal_text(gru_dt_fast_path_refusal(o, model_weight_drop(m)));
      return fast_path_refusal_text(gate_cell_fused_refusal(o, /*training=*/true));
    };
    out.push_back(std::move(c));
  };
  add("rnn", "Vanilla RNN: h = tanh(W x + U h + b)",
      [](const BaselineOptions& o) { return std::make_shared<RNNCellImpl>(o); });
  add("gru", "GRU (Cho et al. 2014); LibTorch's fused kernel on the fast path",
      [](const BaselineOptions& o) { return std::make_shared<GRUCellImpl>(o); });
  add("lstm", "LSTM (Hochreiter & Schmidhuber 1997); LibTorch's fused kernel on the fast path",
      [](const BaselineOptions& o) { return std::make_shared<LSTMCellImpl>(o); });
  add("gru_dt", "GRU+DT: a GRU then L transition GRUs with zero input per step (MZU paper, Table 4 baseline)",
      [](const BaselineOptions& o) { return std::make_shared<GRUDTCellImpl>(o); });
}

}  // namespace cs
