#include "cells/hmrnn.h"

#include <cmath>

#include "cells/registry.h"

namespace cs {

namespace {
// The boundary detector's row exists on every level but the top (HMRNN_NOTES.md, "The top level").
int64_t level_rows(int64_t H, bool top) { return 4 * H + (top ? 0 : 1); }
}  // namespace

HmRnnCellImpl::HmRnnCellImpl(const HmRnnOptions& o) : opt_(o) {
  TORCH_CHECK(o.input_size > 0, "hm_rnn: input_size must be > 0, got ", o.input_size);
  TORCH_CHECK(o.hidden_size > 0, "hm_rnn: hidden_size must be > 0, got ", o.hidden_size);
  TORCH_CHECK(o.levels >= 1, "hm_rnn: levels L must be >= 1, got ", o.levels);
  const int64_t H = o.hidden_size, L = o.levels;
  const double k = 1.0 / std::sqrt(static_cast<double>(H));  // torch::nn::LSTM's U(-1/sqrt(H), 1/sqrt(H))
  auto init = [&](torch::nn::Module& m, const std::string& name, std::vector<int64_t> shape) {
    return m.register_parameter(name, torch::empty(shape).uniform_(-k, k));
  };
  for (int64_t l = 0; l < L; ++l) {
    const bool top = l + 1 == L;
    const int64_t rows = level_rows(H, top), in = l == 0 ? o.input_size : H;
    auto lv = std::make_shared<HmRnnLevelImpl>();
    lv->w_bu = init(*lv, "w_bu", {rows, in});
    lv->w_rec = init(*lv, "w_rec", {rows, H});
    if (!top) lv->w_td = init(*lv, "w_td", {rows, H});
    lv->b = init(*lv, "b", {rows});
    lv->w_out = init(*lv, "w_out", {H, H});
    levels.push_back(register_module("level" + std::to_string(l), lv));
  }
  w_gate = init(*this, "w_gate", {L, L * H});
}

State HmRnnCellImpl::initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  const int64_t H = opt_.hidden_size, L = opt_.levels;
  State s{torch::zeros({batch, H}, opts)};
  for (int64_t l = 0; l < 2 * L; ++l) s.push_back(torch::zeros({batch, H}, opts));  // h^1..h^L, c^1..c^L
  for (int64_t l = 0; l < L; ++l) s.push_back(torch::zeros({batch, 1}, opts));      // z^1..z^L
  return s;
}

State HmRnnCellImpl::with_previous_output(State s, const torch::Tensor& h0) const {
  s[0] = h0;
  for (int64_t l = 0; l < opt_.levels; ++l) s[1 + l] = h0;
  return s;
}

// One step of every level, bottom to top (Chung et al. 2017, sec. 3.2, the HM-LSTM), then the output
// module (sec. 3.3). The operation of level l follows from z^l_{t-1} (its own boundary at the last step)
// and z^{l-1}_t (the level below's boundary now; z^0 = 1, the input has a boundary at every step):
//   FLUSH  (z^l_{t-1} = 1):                      c^l_t = i * g
//   UPDATE (z^l_{t-1} = 0, z^{l-1}_t = 1):       c^l_t = f * c^l_{t-1} + i * g
//   COPY   (z^l_{t-1} = 0, z^{l-1}_t = 0):       c^l_t = c^l_{t-1}, h^l_t = h^l_{t-1}
// and h^l_t = o * tanh(c^l_t) unless it copies. The gates and the boundary share one pre-activation,
//   s^l_t = U^l_l h^l_{t-1} + z^l_{t-1} U^l_{l+1} h^{l+1}_{t-1} + z^{l-1}_t W^l_{l-1} h^{l-1}_t + b^l,
// (f, i, o, g) = (sigm, sigm, sigm, tanh)(s^l_t) and z~^l_t = hard_sigm(s^l_t's last row), with
// hard_sigm(x) = max(0, min(1, (a x + 1) / 2)); z^l_t = 1 if z~ > 0.5 else 0, trained with the
// straight-through estimator (the step's gradient taken as 1). The cases are written as products with the
// binary z's, so that the estimator's gradient reaches the boundary detectors.
State HmRnnCellImpl::step(const torch::Tensor& x, const State& s, StepContext& ctx) {
  const int64_t H = opt_.hidden_size, L = opt_.levels;
  TORCH_CHECK(static_cast<int64_t>(s.size()) == 1 + 3 * L, "hm_rnn: expected a state of ", 1 + 3 * L,
              " tensors (h^e, h^1..h^L, c^1..c^L, z^1..z^L), got ", s.size());
  std::vector<torch::Tensor> h(L), c(L), z(L);
  torch::Tensor below = x, z_below;  // z_below undefined: z^0 = 1
  for (int64_t l = 0; l < L; ++l) {
    const bool top = l + 1 == L;
    const torch::Tensor &hp = s[1 + l], &cp = s[1 + L + l], &zp = s[1 + 2 * L + l];
    const HmRnnLevelImpl& lv = *levels[l];
    torch::Tensor bu = torch::matmul(below, lv.w_bu.t());
    if (z_below.defined()) bu = z_below * bu;
    torch::Tensor pre = torch::addmm(lv.b, hp, lv.w_rec.t()) + bu;
    if (!top) pre = pre + zp * torch::matmul(s[2 + l], lv.w_td.t());
    const auto f = torch::sigmoid(pre.narrow(1, 0, H)), i = torch::sigmoid(pre.narrow(1, H, H));
    const auto o = torch::sigmoid(pre.narrow(1, 2 * H, H)), g = torch::tanh(pre.narrow(1, 3 * H, H));
    const auto ig = i * g;
    torch::Tensor cn;
    if (z_below.defined()) {
      cn = zp * ig + (1 - zp) * (z_below * (f * cp + ig) + (1 - z_below) * cp);
    } else {
      cn = zp * ig + (1 - zp) * (f * cp + ig);
    }
    torch::Tensor hn = o * torch::tanh(cn);
    if (z_below.defined()) {
      const auto copy = (1 - zp) * (1 - z_below);
      hn = copy * hp + (1 - copy) * hn;
    }
    if (top) {
      z[l] = torch::zeros_like(zp);
    } else {
      const auto soft = torch::clamp((opt_.slope * pre.narrow(1, 4 * H, 1) + 1) / 2, 0, 1);
      z[l] = soft + ((soft > 0.5).to(soft.scalar_type()) - soft).detach();  // straight-through
    }
    h[l] = hn;
    c[l] = cn;
    below = hn;
    z_below = z[l];
  }
  // The output module: g^l_t = sigm(w^l . [h^1_t; ...; h^L_t]), h^e_t = ReLU(sum_l g^l_t W^e_l h^l_t).
  const auto gates = torch::sigmoid(torch::matmul(torch::cat(h, 1), w_gate.t()));
  torch::Tensor he;
  for (int64_t l = 0; l < L; ++l) {
    const auto term = gates.narrow(1, l, 1) * torch::matmul(h[l], levels[l]->w_out.t());
    he = l == 0 ? term : he + term;
  }
  he = torch::relu(he);
  ctx.record("h", he);
  if (L > 1) ctx.record("boundary", torch::cat(std::vector<torch::Tensor>(z.begin(), z.end() - 1), 1));
  State next{he};
  next.insert(next.end(), h.begin(), h.end());
  next.insert(next.end(), c.begin(), c.end());
  next.insert(next.end(), z.begin(), z.end());
  return next;
}

double HmRnnCellImpl::flops_per_step() const {
  const double H = static_cast<double>(opt_.hidden_size), L = static_cast<double>(opt_.levels);
  double f = 0;
  for (int64_t l = 0; l < opt_.levels; ++l) {
    const bool top = l + 1 == opt_.levels;
    const double rows = static_cast<double>(level_rows(opt_.hidden_size, top));
    const double in = l == 0 ? static_cast<double>(opt_.input_size) : H;
    f += 2.0 * rows * (in + H + (top ? 0.0 : H)) + 12.0 * H;
  }
  return f + 2.0 * L * L * H + 2.0 * L * H * H + 2.0 * L * H;
}

const OptionTable<HmRnnOptions>& hmrnn_option_table() {
  static const auto t = [] {
    OptionTable<HmRnnOptions> t("model");
    t.field("hm_levels", &HmRnnOptions::levels, 1, 8,
            "Levels L of the HM-RNN's hierarchy (Chung et al. 2017), each an LSTM of model.hidden units with a "
            "boundary detector (all but the top); the levels are one Cellscope layer, since each reads the one "
            "above it.")
        .cells({"hm_rnn"});
    t.field("hm_slope", &HmRnnOptions::slope, 0.01, 100.0,
            "Slope a of the boundary detector's hard sigmoid, max(0, min(1, (a x + 1) / 2)) (Chung et al. 2017 "
            "anneal it upwards during training; here it is fixed).")
        .advanced()
        .cells({"hm_rnn"});
    return t;
  }();
  return t;
}

void register_hmrnn_cells(std::vector<CellInfo>& out) {
  CellInfo c;
  c.name = "hm_rnn";
  c.family = "hmrnn";
  c.description =
      "Hierarchical multiscale RNN (Chung, Ahn & Bengio 2017), HM-LSTM: learned boundaries choose COPY, UPDATE "
      "or FLUSH per level (the MC-RNN paper's HM-RNN baseline)";
  c.options = hmrnn_option_table().specs_for_cell("hm_rnn");
  c.make = [](const json& m, int64_t in, int) -> std::shared_ptr<CellImpl> {
    HmRnnOptions o = hmrnn_option_table().read(m, "hm_rnn");
    o.input_size = in;
    o.hidden_size = resolved<int64_t>(m, "model", "hidden");
    return std::make_shared<HmRnnCellImpl>(o);
  };
  c.fast_path_refusal = [](const json&) {
    return std::string("hm_rnn runs step by step: no fused kernel has its boundary-driven COPY/UPDATE/FLUSH");
  };
  c.short_name = "HM-RNN";
  c.mcrnn_base_refusal =
      "an HM-RNN carries its own levels' states; as an MC-RNN's base they would mix with the channel history of "
      "eq. 2 (a model of neither paper): use rnn, gru or lstm";
  out.push_back(std::move(c));
}

}  // namespace cs
