#include "cells/fused_cru.h"

#include "cells/fused_common.h"
#include "cells/fused_gru.h"

namespace cs {

const char* cru_fast_path_refusal(const CRUOptions& o, double candidate_dropout) {
  if (!o.reset_after) return "model.reset_after false: the fused GRU recurrence applies the reset gate after U only";
  if (!(candidate_dropout >= 0 && candidate_dropout < 1)) return "model.candidate_dropout outside [0, 1)";
  return nullptr;
}

bool cru_fast_path_applies(const CRUOptions& o, double candidate_dropout, const StepContext& ctx) {
  return fast_paths_enabled() && !ctx.probe && !ctx.stepwise && cru_fast_path_refusal(o, candidate_dropout) == nullptr;
}

SeqOutput cru_fast_recurrence(CRUCellImpl& cell, const torch::Tensor& xp, const State& s0, double candidate_dropout) {
  fused::GRURecurrenceOptions fo;
  fo.candidate_dropout = candidate_dropout;
  fo.training = cell.is_training();
  auto r = fused::gru_recurrence(xp, s0[0], {{cell.w_hh, cell.b_hh, torch::Tensor(), {}, {}}}, fo);
  return {r.first, {r.second}};
}

}  // namespace cs
