#include "cells/hornn.h"

#include <cmath>

#include "cells/registry.h"

namespace cs {

HoRnnCellImpl::HoRnnCellImpl(const HoRnnOptions& o) : opt_(o) {
  TORCH_CHECK(o.input_size > 0, "ho_rnn: input_size must be > 0, got ", o.input_size);
  TORCH_CHECK(o.hidden_size > 0, "ho_rnn: hidden_size must be > 0, got ", o.hidden_size);
  TORCH_CHECK(o.order >= 1, "ho_rnn: order N must be >= 1, got ", o.order);
  const int64_t H = o.hidden_size, N = o.order;
  // torch::nn::RNN's initialisation, U(-1/sqrt(H), 1/sqrt(H)), for every W_hn as for W_h1.
  const double k = 1.0 / std::sqrt(static_cast<double>(H));
  w_ih = register_parameter("w_ih", torch::empty({H, o.input_size}).uniform_(-k, k));
  w_hh = register_parameter("w_hh", torch::empty({H, N * H}).uniform_(-k, k));
  b_ih = register_parameter("b_ih", torch::empty({H}).uniform_(-k, k));
  b_hh = register_parameter("b_hh", torch::empty({H}).uniform_(-k, k));
}

State HoRnnCellImpl::initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  State s;
  for (int64_t n = 0; n < opt_.order; ++n) s.push_back(torch::zeros({batch, opt_.hidden_size}, opts));
  return s;
}

State HoRnnCellImpl::with_previous_output(State s, const torch::Tensor& h0) const {
  for (auto& h : s) h = h0;
  return s;
}

torch::Tensor HoRnnCellImpl::input_projection(const torch::Tensor& x) { return torch::matmul(x, w_ih.t()) + b_ih; }

State HoRnnCellImpl::step(const torch::Tensor& xp, const State& s, StepContext& ctx) {
  TORCH_CHECK(static_cast<int64_t>(s.size()) == opt_.order, "ho_rnn: expected a state of ", opt_.order,
              " tensors (h_{t-1} ... h_{t-N}), got ", s.size());
  // HORNN's recurrence: h_t = f(W_in x_t + sum_{n=1}^{N} W_hn h_{t-n}) (Soltani and Jiang 2016, sec. 3;
  // HORNN_NOTES.md), the N paths as one product [h_{t-1}; ...; h_{t-N}] -> [W_h1 | ... | W_hN].
  const torch::Tensor past = opt_.order == 1 ? s[0] : torch::cat(s, 1);
  const torch::Tensor pre = torch::addmm(xp + b_hh, past, w_hh.t());
  torch::Tensor h = opt_.activation == HoActivation::Tanh ? torch::tanh(pre) : torch::sigmoid(pre);
  ctx.record("candidate", h);
  ctx.record("h", h);
  State next;
  next.reserve(s.size());
  next.push_back(h);
  for (size_t n = 0; n + 1 < s.size(); ++n) next.push_back(s[n]);  // h_{t-N} drops out
  return next;
}

double HoRnnCellImpl::flops_per_step() const {
  const double H = static_cast<double>(opt_.hidden_size), I = static_cast<double>(opt_.input_size);
  return 2.0 * H * I + 2.0 * H * H * static_cast<double>(opt_.order) + 3.0 * H;
}

const OptionTable<HoRnnOptions>& hornn_option_table() {
  static const auto t = [] {
    OptionTable<HoRnnOptions> t("model");
    t.field("ho_order", &HoRnnOptions::order, 1, 16,
            "Order N of the HORNN (Soltani and Jiang 2016): h_t reads h_{t-1} ... h_{t-N}, each through its own "
            "matrix W_hn. 1 is the plain tanh RNN (model.cell = rnn).")
        .cells({"ho_rnn"});
    t.choice("ho_activation", &HoRnnOptions::activation,
             "The HORNN's nonlinearity f in h_t = f(W_in x_t + sum_n W_hn h_{t-n}).")
        .cells({"ho_rnn"});
    return t;
  }();
  return t;
}

void register_hornn_cells(std::vector<CellInfo>& out) {
  CellInfo c;
  c.name = "ho_rnn";
  c.family = "hornn";
  c.description =
      "Higher-order RNN (Soltani & Jiang 2016): h_t reads the N preceding states, each through its own matrix "
      "(the MC-RNN paper's HO-RNN baseline)";
  c.options = hornn_option_table().specs_for_cell("ho_rnn");
  c.make = [](const json& m, int64_t in, int) -> std::shared_ptr<CellImpl> {
    HoRnnOptions o = hornn_option_table().read(m, "ho_rnn");
    o.input_size = in;
    o.hidden_size = resolved<int64_t>(m, "model", "hidden");
    return std::make_shared<HoRnnCellImpl>(o);
  };
  c.fast_path_refusal = [](const json&) {
    return std::string("ho_rnn runs step by step: no fused kernel reads N preceding states");
  };
  c.short_name = "HO-RNN";
  c.short_name_suffix = [](const json& m) {  // its order: HO-RNN-3
    return m.contains("ho_order") && m["ho_order"].is_number_integer()
               ? "-" + std::to_string(m["ho_order"].get<int64_t>())
               : std::string();
  };
  c.mcrnn_base_refusal =
      "a HO-RNN reads its own N preceding states; as an MC-RNN's base they would mix with the channel history of "
      "eq. 2 (a model of neither paper): use rnn, gru or lstm";
  out.push_back(std::move(c));
}

}  // namespace cs
