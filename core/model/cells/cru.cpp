#include "cells/cru.h"

#include <ATen/ATen.h>
#include <torch/nn/functional.h>

#include <cmath>

#include "cells/fused_common.h"
#include "cells/fused_cru.h"
#include "cells/registry.h"

namespace cs {

namespace F = torch::nn::functional;

torch::Tensor same_length_conv(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               int64_t k, int64_t left_pad) {
  TORCH_CHECK(x.dim() == 3, "same_length_conv: expected x [T, B, I], got ", x.sizes());
  TORCH_CHECK(k >= 1, "same_length_conv: filter length must be >= 1, got ", k);
  const int64_t T = x.size(0), B = x.size(1), I = x.size(2);
  TORCH_CHECK(weight.dim() == 2 && weight.size(1) == k * I, "same_length_conv: expected weight [C, ", k * I,
              "] for k = ", k, " and I = ", I, ", got ", weight.sizes());
  const int64_t left = left_pad < 0 ? same_conv_left_pad(k) : left_pad, right = k - 1 - left;
  TORCH_CHECK(right >= 0, "same_length_conv: left padding must be at most k - 1 = ", k - 1, ", got ", left);
  torch::Tensor win;
  if (k == 1) {
    win = x.reshape({T * B, I});
  } else {
    // Zero padding in time (eq. 8 over "all possible windows" with same length):
    // e_{t-left .. t+right}; positions outside the sequence are zero vectors.
    auto xp = F::pad(x, F::PadFuncOptions({0, 0, 0, 0, left, right}));  // [T+k-1, B, I]
    // Windows e_{t-left:t+right} concatenated (eq. 7): [T, B, I, k] -> [T, B, k, I] -> [T*B, k*I]
    win = xp.unfold(0, k, 1).permute({0, 1, 3, 2}).reshape({T * B, k * I});
  }
  // w . e_{i:i+k-1} + b for all d filters and all windows at once (eq. 8, before f): one GEMM.
  return torch::addmm(bias, win, weight.t()).view({T, B, weight.size(0)});
}

static const char* fusion_name(CRUFusion f) {
  return f == CRUFusion::Shallow ? "cru_shallow" : f == CRUFusion::Deep ? "cru_deep" : "cru_deep_enhanced";
}

std::string CRUCellImpl::type_name() const { return fusion_name(opt_.fusion); }

CRUCellImpl::CRUCellImpl(const CRUOptions& o) : opt_(o) {
  const std::string nm = fusion_name(o.fusion);
  TORCH_CHECK(o.input_size > 0, nm, ": input_size must be > 0, got ", o.input_size);
  TORCH_CHECK(o.hidden_size > 0, nm, ": hidden_size must be > 0, got ", o.hidden_size);
  TORCH_CHECK(o.filter_length >= 1, nm, ": filter_length must be >= 1, got ", o.filter_length);
  const int64_t H = o.hidden_size, I = o.input_size, k = o.filter_length;
  switch (o.fusion) {
    case CRUFusion::Shallow:
      channels_ = o.conv_channels > 0 ? o.conv_channels : I;  // paper: C has the embeddings' size
      n_conv_ = 1;
      break;
    case CRUFusion::Deep:  // eqs. 9-11: phi_g(e~) is added to U_g h, so d = H
      TORCH_CHECK(o.conv_channels == 0 || o.conv_channels == H, nm, ": conv_channels must equal hidden (", H,
                  ") for deep fusion, got ", o.conv_channels);
      channels_ = H;
      n_conv_ = 3;
      break;
    case CRUFusion::DeepEnhanced:  // eqs. 12-14: phi_g(e~) + e_t, so d = I
      TORCH_CHECK(o.conv_channels == 0 || o.conv_channels == I, nm, ": conv_channels must equal the input size (", I,
                  ") for deep-enhanced fusion, got ", o.conv_channels);
      channels_ = I;
      n_conv_ = 3;
      break;
  }
  const int64_t C = n_conv_ * channels_;
  const double kc = 1.0 / std::sqrt(static_cast<double>(k * I));  // torch Conv1d's default bound
  conv_w = register_parameter("conv_w", torch::empty({C, k * I}).uniform_(-kc, kc));
  conv_b = register_parameter("conv_b", torch::empty({C}).uniform_(-kc, kc));
  const double kh = 1.0 / std::sqrt(static_cast<double>(H));  // torch GRU's bound
  if (o.fusion == CRUFusion::Shallow) {
    w_ih = register_parameter("w_ih", torch::empty({3 * H, channels_}).uniform_(-kh, kh));
    b_ih = register_parameter("b_ih", torch::empty({3 * H}).uniform_(-kh, kh));
  } else if (o.fusion == CRUFusion::DeepEnhanced) {
    w_ih = register_parameter("w_ih", torch::empty({3, H, channels_}).uniform_(-kh, kh));
    b_ih = register_parameter("b_ih", torch::empty({3 * H}).uniform_(-kh, kh));
  }
  w_hh = register_parameter("w_hh", torch::empty({3 * H, H}).uniform_(-kh, kh));
  b_hh = register_parameter("b_hh", torch::empty({3 * H}).uniform_(-kh, kh));
}

int64_t CRUCellImpl::conv_left_pad() const {
  // centred (paper) or causal window (a language model must not see t + 1; CRU_NOTES.md)
  const int64_t k = opt_.filter_length;
  switch (opt_.conv_window) {
    case ConvWindow::Causal:
      return k - 1;
    case ConvWindow::Centered:
      return same_conv_left_pad(k);
  }
  return same_conv_left_pad(k);
}

torch::Tensor CRUCellImpl::activate(const torch::Tensor& c) const {
  // f of eq. 8 (paper: ReLU)
  switch (opt_.conv_activation) {
    case ConvActivation::Relu:
      return torch::relu(c);
    case ConvActivation::Tanh:
      return torch::tanh(c);
    case ConvActivation::Identity:
      return c;
  }
  return c;
}

torch::Tensor CRUCellImpl::conv_outputs(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) == opt_.input_size, type_name(), ": expected input [T, B, ", opt_.input_size,
              "], got ", x.sizes());
  return activate(same_length_conv(x, conv_w, conv_b, opt_.filter_length, conv_left_pad()));
}

torch::Tensor CRUCellImpl::conv_outputs_tokens(const TokenInput& in) {
  // eq. 8 with each window's w . e product computed on the table (cells/token_fold.h)
  // (bias and f applied in the gather's own pass)
  GatherAct act = GatherAct::None;
  switch (opt_.conv_activation) {
    case ConvActivation::Relu:
      act = GatherAct::Relu;
      break;
    case ConvActivation::Tanh:
      act = GatherAct::Tanh;
      break;
    case ConvActivation::Identity:
      act = GatherAct::None;
      break;
  }
  return fold_conv(in, conv_w, opt_.filter_length, conv_left_pad(), conv_b, act);
}

torch::Tensor CRUCellImpl::project_convs(const torch::Tensor& x, const torch::Tensor& c) {
  const int64_t T = x.size(0), B = x.size(1), H = opt_.hidden_size, d = channels_;
  switch (opt_.fusion) {
    case CRUFusion::Shallow:
      // eq. 6: GRU(h_{t-1}, c_t): the GRU's input half W_{r,z,n} c_t + b_ih, hoisted
      return torch::addmm(b_ih, c.reshape({T * B, d}), w_ih.t()).view({T, B, 3 * H});
    case CRUFusion::Deep:
      // eqs. 9-11: phi_r(e~_t), phi_z(e~_t), phi(e~_t) are the gates' input terms as is
      return c;
    case CRUFusion::DeepEnhanced: {
      // eqs. 12-14: W_g (phi_g(e~_t) + e_t) + b_g for g = r, z, n: one batched product
      auto u = c.reshape({T * B, 3, d}) + x.reshape({T * B, 1, d});                            // phi_g(e~_t) + e_t
      auto p = torch::baddbmm(b_ih.view({3, 1, H}), u.transpose(0, 1), w_ih.transpose(1, 2));  // [3, TB, H]
      return p.permute({1, 0, 2}).reshape({T, B, 3 * H});
    }
  }
  return c;
}

torch::Tensor CRUCellImpl::input_projection(const torch::Tensor& x) { return project_convs(x, conv_outputs(x)); }

State CRUCellImpl::step(const torch::Tensor& xp, const State& s, StepContext& ctx) {
  // The GRU recurrence (CRU eqs. 1-4 with the input terms replaced as above), gate order (r, z, n).
  const auto& h = s[0];
  const int64_t H = opt_.hidden_size;
  torch::Tensor r, z, n;
  if (opt_.reset_after) {
    auto hp = torch::addmm(b_hh, h, w_hh.t());  // U_{r,z,n} h + b_h
    // r_t, z_t = sigmoid(input term + U h) in one op (eqs. 9-10 / 12-13)
    auto rz = torch::sigmoid(xp.narrow(1, 0, 2 * H) + hp.narrow(1, 0, 2 * H));
    r = rz.narrow(1, 0, H);
    z = rz.narrow(1, H, H);
    // eq. 11/14 with the reset gate applied after U (torch/cuDNN convention)
    n = torch::tanh(xp.narrow(1, 2 * H, H) + r * hp.narrow(1, 2 * H, H));
  } else {
    auto hp = torch::addmm(b_hh.narrow(0, 0, 2 * H), h, w_hh.narrow(0, 0, 2 * H).t());
    auto rz = torch::sigmoid(xp.narrow(1, 0, 2 * H) + hp);
    r = rz.narrow(1, 0, H);
    z = rz.narrow(1, H, H);
    // eq. 11/14 literally: U (r_t * h_{t-1})
    n = torch::tanh(xp.narrow(1, 2 * H, H) +
                    torch::addmm(b_hh.narrow(0, 2 * H, H), r * h, w_hh.narrow(0, 2 * H, H).t()));
  }
  if (candidate_dropout_ > 0 && is_training())
    n = F::dropout(n, F::DropoutFuncOptions().p(candidate_dropout_).training(true));
  auto hn = n + z * (h - n);  // eq. 4: z * h_{t-1} + (1 - z) * h~
  if (ctx.probe) {
    ctx.record("candidate", n);
    ctx.record("gate", 1 - z);  // weight of the candidate, as the GRU baseline records it
    ctx.record("update", z);
    ctx.record("reset", r);
    ctx.record("h", hn);
  }
  return {hn};
}

bool CRUCellImpl::fast_ok(const torch::Tensor& x, const StepContext& ctx) const {
  return cru_fast_path_applies(opt_, candidate_dropout_, ctx) && fast_path_device_ok(x) && x.size(0) > 0 &&
         (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
}

SeqOutput CRUCellImpl::forward_tokens(const torch::Tensor& x, const TokenInput* in, const State& s0, StepContext& ctx) {
  if (x.dim() == 3 && x.size(2) == opt_.input_size && fast_ok(x, ctx) && token_fold_applies(in, x, ctx)) {
    ctx.folded_flops += folded_flops(*in, x.size(0) * x.size(1), 2.0 * static_cast<double>(conv_w.numel()));
    ++ctx.fast_path_calls;
    return cru_fast_recurrence(*this, project_convs(x, conv_outputs_tokens(*in)), s0, candidate_dropout_);
  }
  return forward_sequence(x, s0, ctx);
}

SeqOutput CRUCellImpl::forward_sequence(const torch::Tensor& x, const State& s0, StepContext& ctx) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) == opt_.input_size, type_name(), ": expected input [T, B, ", opt_.input_size,
              "], got ", x.sizes());
  // The whole sequence's convolutions, outside the time loop.
  auto c = conv_outputs(x);
  if (ctx.probe) {
    // Per-token convolution outputs: "conv" (shallow) or "conv_r", "conv_z", "conv_n".
    auto steps = c.unbind(0);
    for (auto& ct : steps) {
      if (n_conv_ == 1) {
        ctx.record("conv", ct);
      } else {
        auto ch = ct.chunk(3, 1);
        ctx.record("conv_r", ch[0]);
        ctx.record("conv_z", ch[1]);
        ctx.record("conv_n", ch[2]);
      }
    }
  }
  if (fast_ok(x, ctx)) {
    ++ctx.fast_path_calls;
    return cru_fast_recurrence(*this, project_convs(x, c), s0, candidate_dropout_);  // fused_cru.h
  }
  if (opt_.fusion == CRUFusion::Shallow && opt_.reset_after && !ctx.probe && !ctx.stepwise &&
      !(candidate_dropout_ > 0 && is_training())) {
    // Shallow fusion is exactly a GRU over c: LibTorch's GRU kernel (eq. 6).
    ++ctx.fast_path_calls;
    auto r = at::gru(c, s0[0].unsqueeze(0), {w_ih, w_hh, b_ih, b_hh}, true, 1, 0.0, is_training(), false, false);
    return {std::get<0>(r), {std::get<1>(r).squeeze(0)}};
  }
  auto xp = project_convs(x, c);
  std::vector<torch::Tensor> steps = xp.unbind(0);  // never xp[t] (O(T) backward)
  std::vector<torch::Tensor> outs;
  outs.reserve(steps.size());
  State s = s0;
  for (auto& xt : steps) {
    s = step(xt, s, ctx);
    outs.push_back(s[0]);
  }
  return {torch::stack(outs, 0), s};
}

double CRUCellImpl::flops_per_step() const {
  const double H = opt_.hidden_size, I = opt_.input_size, k = opt_.filter_length, d = channels_;
  const double C = n_conv_ * d;
  double f = 2.0 * k * I * C + C;  // convolutions (eq. 8) + activation
  if (opt_.fusion == CRUFusion::Shallow) f += 2.0 * 3 * H * d;
  if (opt_.fusion == CRUFusion::DeepEnhanced) f += 2.0 * 3 * H * d + 3 * d;  // W_g(. + e_t)
  f += 2.0 * 3 * H * H + 6.0 * 3 * H;  // U h and the gates' elementwise work (as the GRU)
  return f;
}

// ---------------------------------------------------------------- registry entries

const OptionTable<CRUOptions>& cru_option_table() {
  static const auto t = [] {
    OptionTable<CRUOptions> t("model");
    using O = CRUOptions;
    const std::vector<std::string> all = {"cru_shallow", "cru_deep", "cru_deep_enhanced"};
    t.field("filter_length", &O::filter_length, 1, 63,
            "CRU: convolution filter length k (window of k embeddings, eq. 8; paper default 3, Fig. 3 sweeps it). "
            "Same-length padding: (k-1)/2 zeros before, the rest after (even k: one more after).")
        .cells(all);
    t.field("conv_channels", &O::conv_channels, 0, 65536,
            "CRU shallow fusion: number d of convolution filters (eq. 8); 0 = the input (embedding) size, as in the "
            "paper. Deep fusion uses d = hidden, deep-enhanced d = input size (forced by eqs. 9-14).")
        .cells({"cru_shallow"});
    t.choice("conv_window", &O::conv_window,
             "CRU: where the convolution's window lies around position t. centered: the paper's same-length "
             "windows (classification, cloze: the whole text is read); causal: the k positions up to t, nothing "
             "after it. The language-model tasks require causal (a centred window would see the token to predict).")
        .cells(all);
    t.choice("conv_activation", &O::conv_activation, "CRU: non-linearity f of the convolution (eq. 8; paper: ReLU).")
        .cells(all);
    t.field("reset_after", &O::reset_after,
            "CRU: apply the reset gate after U (r * (U h + b), torch/cuDNN GRU, same as Cellscope's GRU); "
            "false = U (r * h) as written in eqs. 3, 11 and 14.")
        .cells(all)
        .advanced();
    return t;
  }();
  return t;
}

// The options of CRU cell `name` (fusion `f`) from a resolved model section.
static CRUOptions read_cru_options(const json& m, int64_t in, const std::string& name, CRUFusion f) {
  CRUOptions o = cru_option_table().read(m, name);
  o.input_size = in;
  o.hidden_size = resolved<int64_t>(m, "model", "hidden");
  o.fusion = f;
  return o;
}

void register_cru_cells(std::vector<CellInfo>& out) {
  struct V {
    const char* name;
    CRUFusion f;
    const char* desc;
    const char* short_name;
  };
  const V vs[] = {
      {"cru_shallow", CRUFusion::Shallow,
       "CRU shallow fusion: GRU over a same-length CNN of the inputs (CRU paper eqs. 5-8)", "CRU shallow"},
      {"cru_deep", CRUFusion::Deep,
       "CRU deep fusion: three CNNs feed the reset gate, update gate and candidate (CRU paper eqs. 9-11)", "CRU deep"},
      {"cru_deep_enhanced", CRUFusion::DeepEnhanced,
       "CRU deep-enhanced fusion: W_g(phi_g(e~) + e) per gate, the word embedding added back (CRU paper eqs. 12-14)",
       "CRU deep+"},
  };
  bool first = true;
  for (const auto& v : vs) {
    CellInfo c;
    c.name = v.name;
    c.family = "cru";
    c.description = v.desc;
    c.short_name = v.short_name;
    if (first) c.options = cru_option_table().specs();  // declared once, applying to the three cells
    first = false;
    const CRUFusion f = v.f;
    const std::string name = v.name;
    c.make = [f, name](const json& m, int64_t in, int) -> std::shared_ptr<CellImpl> {
      auto cell = std::make_shared<CRUCellImpl>(read_cru_options(m, in, name, f));
      cell->set_candidate_dropout(resolved<double>(m, "model", "candidate_dropout"));  // common option (opt-in)
      return cell;
    };
    c.fast_path_refusal = [f, name](const json& m) {
      return fast_path_refusal_text(
          cru_fast_path_refusal(read_cru_options(m, 0, name, f), resolved<double>(m, "model", "candidate_dropout")));
    };
    c.needs_whole_sequence = true;
    c.mcrnn_base_refusal = "cell '" + name + "' needs the whole sequence and has no per-step form to wrap";
    c.future_reads = [](const json& m, std::vector<ConfigError>& errs) {
      const int64_t k = m.value("filter_length", CRUOptions{}.filter_length);
      const auto window =
          enum_from_name<ConvWindow>(m.value("conv_window", std::string(enum_name(CRUOptions{}.conv_window))));
      // (a name outside the choices: the schema reports it, and it is no causal window either)
      if ((window && *window == ConvWindow::Causal) || k - 1 - same_conv_left_pad(k) <= 0) return;  // none after t
      errs.push_back({"model.conv_window",
                      "a language model predicts the next token, and the CRU's centered window of filter_length " +
                          std::to_string(k) + " includes it; set model.conv_window to causal (the " +
                          std::to_string(k) + " positions up to t)"});
    };
    c.common_options = {"candidate_dropout"};
    out.push_back(std::move(c));
  }
}

}  // namespace cs
