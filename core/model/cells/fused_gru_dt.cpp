#include "cells/fused_gru_dt.h"

#include "cells/fused_common.h"
#include "cells/fused_gru.h"

namespace cs {

const char* gru_dt_fast_path_refusal(const BaselineOptions& o, double weight_drop) {
  if (!(o.candidate_dropout >= 0 && o.candidate_dropout < 1)) return "model.candidate_dropout outside [0, 1)";
  if (weight_drop > 0) return "model.weight_drop > 0: the fused GRU recurrence has no weight drop";
  return nullptr;
}

bool gru_dt_fast_path_applies(const BaselineOptions& o, const StepContext& ctx, double weight_drop) {
  return fast_paths_enabled() && !ctx.probe && !ctx.stepwise && gru_dt_fast_path_refusal(o, weight_drop) == nullptr;
}

SeqOutput gru_dt_fast_forward(GRUDTCellImpl& cell, const torch::Tensor& xp, const State& s0) {
  const auto& o = cell.first->options();
  std::vector<fused::GRUStage> stages;
  stages.push_back({cell.first->w_hh, cell.first->b_hh, torch::Tensor(), cell.first->ln_h_gain, cell.first->ln_h_bias});
  for (auto& tr : cell.transitions) stages.push_back({tr->w_hh, tr->b_hh, tr->b_ih, tr->ln_h_gain, tr->ln_h_bias});
  fused::GRURecurrenceOptions fo;
  fo.layer_norm = o.layer_norm;
  fo.candidate_dropout = o.candidate_dropout;
  fo.training = cell.first->is_training();
  auto r = fused::gru_recurrence(xp, s0[0], stages, fo);
  return {r.first, {r.second}};
}

}  // namespace cs
