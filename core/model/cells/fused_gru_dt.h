// GRU+DT fast path (cells/baseline.h, GRUDTCellImpl): the input half (with its layer norm) is
// one GEMM over all steps under autograd; the recurrence of the first GRU and its L transition
// GRUs runs in fused::gru_recurrence (cells/fused_gru.h). See cells/FUSED_NOTES.md.
#pragma once
#include "cells/baseline.h"

namespace cs {

// Why the fast path does not run a GRU+DT cell with options `o` and the weight drop a task set on
// it (GateCellBase::weight_drop); nullptr = it runs: any depth and sharing, layer_norm on or off,
// candidate_dropout in [0, 1), no weight drop. Asked on every call (gru_dt_fast_path_applies)
// and by the registry's hook (CellInfo::fast_path_refusal).
const char* gru_dt_fast_path_refusal(const BaselineOptions& o, double weight_drop);
// Fast paths on (CELLSCOPE_FAST != 0), no probe, ctx.stepwise false, and no refusal above.
bool gru_dt_fast_path_applies(const BaselineOptions& o, const StepContext& ctx, double weight_drop = 0);

// The fast forward of a GRU+DT cell (caller checked gru_dt_fast_path_applies and the input) over
// xp = the first GRU's input_projection() of x (or input_projection_tokens(), cells/token_fold.h).
SeqOutput gru_dt_fast_forward(GRUDTCellImpl& cell, const torch::Tensor& xp, const State& s0);

}  // namespace cs
