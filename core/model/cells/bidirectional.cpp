#include "cells/bidirectional.h"

#include <torch/nn/functional.h>

#include "cells/registry.h"
#include "cells/stack.h"
#include "config/common_options.h"

namespace cs {

torch::Tensor length_mask(const torch::Tensor& lengths, int64_t T, const torch::TensorOptions& opts) {
  auto t = torch::arange(T, lengths.options()).unsqueeze(1);  // [T, 1]
  return (t < lengths.unsqueeze(0)).to(opts).unsqueeze(2);    // [T, B, 1]
}

torch::Tensor reverse_padded(const torch::Tensor& x, const torch::Tensor& lengths) {
  TORCH_CHECK(x.dim() >= 2 && lengths.dim() == 1 && lengths.size(0) == x.size(1),
              "reverse_padded: expected x [T, B, ...] and lengths [B], got ", x.sizes(), " and ", lengths.sizes());
  const int64_t T = x.size(0), B = x.size(1);
  auto t = torch::arange(T, lengths.options()).unsqueeze(1);  // [T, 1]
  auto len = lengths.unsqueeze(0);                            // [1, B]
  auto src = torch::where(t < len, len - 1 - t, t);           // [T, B]
  auto flat = (src * B + torch::arange(B, lengths.options()).unsqueeze(0)).reshape({-1});
  auto shp = x.sizes().vec();
  return x.reshape({T * B, -1}).index_select(0, flat).view(shp);
}

BidirectionalImpl::BidirectionalImpl(const json& model, int64_t input_size) {
  dropout_ = read_model_options(model).dropout;
  for (auto& cells : make_layers(model, input_size, /*directions=*/2)) {  // the next layer reads both directions
    const std::string l = std::to_string(fwd.size());
    fwd.push_back(register_module("fwd" + l, cells[0]));
    bwd.push_back(register_module("bwd" + l, cells[1]));
  }
}

BiOutput BidirectionalImpl::forward(const torch::Tensor& x, const torch::Tensor& lengths_in, StepContext& ctx) {
  TORCH_CHECK(x.dim() == 3, "bidirectional: expected x [T, B, I], got ", x.sizes());
  const int64_t T = x.size(0), B = x.size(1);
  auto lengths = lengths_in.to(x.device(), torch::kInt64);
  TORCH_CHECK(lengths.dim() == 1 && lengths.size(0) == B, "bidirectional: expected lengths [", B, "], got ",
              lengths.sizes());
  auto mask = length_mask(lengths, T, x.options());
  const std::string saved_prefix = ctx.probe ? ctx.probe->prefix : std::string();
  torch::Tensor h = x;
  for (size_t l = 0; l < fwd.size(); ++l) {
    if (l > 0 && dropout_ > 0)
      h = torch::nn::functional::dropout(
          h, torch::nn::functional::DropoutFuncOptions().p(dropout_).training(is_training()));
    h = h * mask;  // zeros past each sentence's end
    const std::string ls = "l" + std::to_string(l) + "/";
    if (ctx.probe) ctx.probe->prefix = saved_prefix + "fwd/" + ls;
    auto of = fwd[l]->forward_sequence(h, fwd[l]->initial_state(B, h.options()), ctx).output;
    if (ctx.probe) ctx.probe->prefix = saved_prefix + "bwd/" + ls;
    auto ob = bwd[l]->forward_sequence(reverse_padded(h, lengths), bwd[l]->initial_state(B, h.options()), ctx).output;
    h = torch::cat({of, reverse_padded(ob, lengths)}, 2) * mask;
  }
  if (ctx.probe) ctx.probe->prefix = saved_prefix;
  const int64_t H2 = h.size(2), H = H2 / 2;
  // Forward final state: output at t = len_b - 1; backward: output at t = 0 (its last step).
  auto last = (lengths - 1).clamp_min(0).view({1, B, 1}).expand({1, B, H});
  auto f_last = h.narrow(2, 0, H).gather(0, last).squeeze(0);
  auto b_first = h.narrow(2, H, H).select(0, 0);
  return {h, torch::cat({f_last, b_first}, 1)};
}

double BidirectionalImpl::flops_per_step() const { return cs::flops_per_step(fwd) + cs::flops_per_step(bwd); }

}  // namespace cs
