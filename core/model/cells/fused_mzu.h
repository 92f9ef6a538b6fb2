// Fast path of the MZU cells (FUSED_NOTES.md): one custom autograd function per MZU cell over
// the whole sequence, with backward through time written by hand. See MZU_NOTES.md
// ("Fast path") for what is fused, the buffers it keeps and the options it claims.
//
// MZUCellImpl::forward_sequence selects it automatically (mzu_fast_path_applies) and falls
// back to the step-wise autograd path (the reference; probes always use it) otherwise.
#pragma once
#include <torch/types.h>

#include <string>
#include <vector>

#include "cells/cell.h"
#include "cells/mzu.h"

namespace cs {

// Why the fast path does not run an MZU cell with options `o`; nullptr = it runs. The whitelist of
// option VALUES the fast path implements (and is tested against the autograd path for); anything
// not listed falls back to autograd. Asked on every call (mzu_fast_path_applies) and by the
// registry's hook (CellInfo::fast_path_refusal).
const char* mzu_fast_path_refusal(const MZUOptions& o);
// The context conditions (grad mode on, no probe, ctx.stepwise false, the CELLSCOPE_FAST switch
// not set to 0) and no refusal above.
bool mzu_fast_path_applies(const MZUOptions& o, const StepContext& ctx);

// Keys of mzu_option_table() the fast path does not know (a new option). While there is one,
// mzu_fast_path_refusal() refuses every configuration (fail closed); the test lists them.
std::vector<std::string> mzu_fast_path_unknown_options();

// CELLSCOPE_FAST=0 in the environment (read once, at the first call) forces the fast path
// off, so benchmarks can compare both paths with the same binary.
bool mzu_fast_path_enabled();

// The whole sequence through the fused function: x [T, B, I], s0 = {h0 [B, H]}. Adds the
// zone disagreement metric and (lambda != 0) the loss term of eq. 19 to ctx exactly as
// the step-wise path does. Precondition: mzu_fast_path_applies(cell.options(), ctx).
// `fold`: x is fold->table[fold->tokens] and the input half is folded into the table (token_fold.h).
SeqOutput fused_mzu_forward(MZUCellImpl& cell, const torch::Tensor& x, const State& s0, StepContext& ctx,
                            const TokenInput* fold = nullptr);

// Tuning of the fused function (tests shrink these to exercise chunking, buffer reuse and the
// split of the zone loops over threads at tiny sizes): rows (steps x B x J) per chunk of the backward's weight-gradient
// products. (Buffer reuse: fused::pool_tuning() in fused_common.h.)
struct FusedMZUTuning {
  int64_t chunk_rows = 1024;
  // (k, b) rows per task of the fused zone loops (sat attention, cosines, gcn adjacency
  // backward; at::parallel_for grain); 0 = automatic (about 32k multiply-adds per task).
  int64_t zone_grain = 0;
  // The K M-functions' products (and sat's per-zone maps): -1 = automatic (whole products
  // per thread when 2 <= threads <= K, else in order with OpenBLAS's own threading), 0 = always
  // in order, 1 = per thread whenever threads > 1.
  int k_parallel = -1;
};
FusedMZUTuning& fused_mzu_tuning();

// Counters for tests: how many groups of per-M-function products ran one product per thread
// (an OpenMP region) since the start of the process.
struct FusedMZUStats {
  int64_t parallel_products = 0;
};
FusedMZUStats fused_mzu_stats();

}  // namespace cs
