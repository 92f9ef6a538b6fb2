// CRU fast path (cells/cru.h, shallow / deep / deep-enhanced fusion): the convolutions and the
// gates' input terms do not depend on the recurrence and stay one GEMM each over all steps
// under autograd (CRUCellImpl::input_projection); the GRU recurrence runs in
// fused::gru_recurrence (cells/fused_gru.h). See cells/FUSED_NOTES.md.
#pragma once
#include "cells/cru.h"

namespace cs {

// Why the fast path does not run a CRU cell with options `o` and candidate dropout
// `candidate_dropout`; nullptr = it runs: the three fusions, any filter length / channels /
// window / activation, reset_after true (the default; the literal U (r * h) reading runs the
// autograd path), candidate dropout in [0, 1). Asked on every call (cru_fast_path_applies) and by
// the registry's hook (CellInfo::fast_path_refusal).
const char* cru_fast_path_refusal(const CRUOptions& o, double candidate_dropout);
// Fast paths on (CELLSCOPE_FAST != 0), no probe, ctx.stepwise false, and no refusal above.
bool cru_fast_path_applies(const CRUOptions& o, double candidate_dropout, const StepContext& ctx);

// The recurrence over xp = project_convs(x, conv_outputs(x)) [T, B, 3H].
SeqOutput cru_fast_recurrence(CRUCellImpl& cell, const torch::Tensor& xp, const State& s0, double candidate_dropout);

}  // namespace cs
