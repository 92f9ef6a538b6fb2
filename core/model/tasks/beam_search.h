// Beam search with length normalisation, over any step function (tasks/SEQ2SEQ_NOTES.md).
//
// The search keeps `beam` live hypotheses. Each step scores every live hypothesis's next
// token (step() returns log-probabilities [K, V]), takes the 2K best extensions by summed
// log-probability, finishes those ending in </s> that rank among the first K (fairseq's rule:
// with beam 1 this is exactly greedy decoding), and keeps the first K others alive. The search
// stops when `beam` hypotheses have finished or at max_length, where the live ones finish as
// they are. Finished hypotheses are ranked by the length-normalised score
//     score(Y) = log P(Y | X) / lp(|Y|),   lp(L) = ((5 + L) / 6)^alpha   (GNMT, Wu et al. 2016)
// with |Y| the generated tokens, </s> included; alpha = 0 ranks by log P (no normalisation).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace cs {

struct BeamSearchOptions {
  int64_t beam = 10;        // 1 = greedy
  double alpha = 1.0;       // length penalty exponent (0 = none)
  int64_t max_length = 50;  // generated tokens at most (</s> included)
  int32_t bos = 2, eos = 3;
};

struct BeamHypothesis {
  std::vector<int32_t> tokens;  // generated tokens, without <s>; ends with </s> unless cut at max_length
  double logprob = 0;           // log P(tokens | source)
  double score = 0;             // logprob / lp(|tokens|)
};

// GNMT's length penalty lp(L) = ((5 + L) / 6)^alpha.
double length_penalty(int64_t length, double alpha);

// step(prev, parent): `prev` [K] int64 are the live hypotheses' last tokens (<s> at the first
// call, K = 1), `parent` [K] int64 the row of the previous call's output each of them extends
// (the caller reorders its decoder state with index_select(0, parent) before stepping; empty at
// the first call). Returns log-probabilities [K, V] (float or double, any device).
using BeamStepFn = std::function<torch::Tensor(const torch::Tensor& prev, const torch::Tensor& parent)>;

// The finished hypotheses, best score first (at most `beam`).
std::vector<BeamHypothesis> beam_search(const BeamStepFn& step, const BeamSearchOptions& o);

}  // namespace cs
