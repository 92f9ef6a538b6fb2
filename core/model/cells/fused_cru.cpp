#include "cells/fused_cru.h"

#include "cells/fused_common.h"
#include "cells/fused_gru.h"

namespace cs {

bool cru_fast_path_applies(const CRUOptions& o, double candidate_dropout, const StepContext& ctx) {
  return fast_paths_enabled() && !ctx.probe && !ctx.stepwise && o.reset_after && candidate_dropout >= 0 &&
         candidate_dropout < 1;
}

SeqOutput cru_fast_recurrence(CRUCellImpl& cell, const torch::Tensor& xp, const State& s0, double candidate_dropout) {
  fused::GRURecurrenceOptions fo;
  fo.candidate_dropout = candidate_dropout;
  fo.training = cell.is_training();
  auto r = fused::gru_recurrence(xp, s0[0], {{cell.w_hh, cell.b_hh, torch::Tensor(), {}, {}}}, fo);
  return {r.first, {r.second}};
}

}  // namespace cs
