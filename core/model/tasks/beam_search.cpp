#include "tasks/beam_search.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace cs {

double length_penalty(int64_t length, double alpha) {
  if (alpha == 0) return 1.0;
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

std::vector<BeamHypothesis> beam_search(const BeamStepFn& step, const BeamSearchOptions& o) {
  if (o.beam < 1) throw UserError("beam width must be at least 1 (got " + std::to_string(o.beam) + ")");
  if (o.max_length < 1)
    throw UserError("maximum decode length must be at least 1 (got " + std::to_string(o.max_length) + ")");
  torch::NoGradGuard ng;
  struct Live {
    std::vector<int32_t> tokens;
    double logprob;
  };
  std::vector<Live> live{{{}, 0.0}};
  std::vector<BeamHypothesis> done;
  auto finish = [&](std::vector<int32_t> toks, double lp) {
    BeamHypothesis h;
    h.score = lp / length_penalty(static_cast<int64_t>(toks.size()), o.alpha);
    h.tokens = std::move(toks);
    h.logprob = lp;
    done.push_back(std::move(h));
  };
  torch::Tensor prev = torch::full({1}, static_cast<int64_t>(o.bos), torch::kInt64);
  torch::Tensor parent = torch::empty({0}, torch::kInt64);
  const int64_t K = o.beam;
  for (int64_t len = 1; len <= o.max_length && !live.empty(); ++len) {
    auto lp = step(prev, parent).to(torch::kCPU, torch::kFloat64).contiguous();
    const int64_t k = lp.size(0), V = lp.size(1);
    TORCH_CHECK(k == static_cast<int64_t>(live.size()), "beam step returned ", k, " rows for ", live.size(),
                " hypotheses");
    std::vector<double> base(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) base[static_cast<size_t>(i)] = live[static_cast<size_t>(i)].logprob;
    auto total = (lp + torch::tensor(base, torch::kFloat64).unsqueeze(1)).view({-1});
    const int64_t n = std::min<int64_t>(2 * K, total.numel());
    // topk is sorted; ties keep the lower flat index first (stable order for the tests)
    auto sorted = total.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true);
    auto vals = std::get<0>(sorted).narrow(0, 0, n).contiguous();
    auto idx = std::get<1>(sorted).narrow(0, 0, n).contiguous();
    const double* va = vals.data_ptr<double>();
    const int64_t* ia = idx.data_ptr<int64_t>();
    std::vector<Live> next;
    std::vector<int64_t> next_parent, next_tok;
    for (int64_t c = 0; c < n && static_cast<int64_t>(next.size()) < K; ++c) {
      const int64_t row = ia[c] / V, tok = ia[c] % V;
      if (!std::isfinite(va[c])) break;  // -inf: impossible continuations
      std::vector<int32_t> toks = live[static_cast<size_t>(row)].tokens;
      toks.push_back(static_cast<int32_t>(tok));
      if (tok == o.eos) {
        if (c < K) finish(std::move(toks), va[c]);  // only </s> among the K best finishes
        continue;
      }
      if (len == o.max_length) {  // cut at max_length: finishes without </s>
        finish(std::move(toks), va[c]);
        next.push_back({{}, 0});  // counts towards K so that the cut keeps the K best
        continue;
      }
      next.push_back({std::move(toks), va[c]});
      next_parent.push_back(row);
      next_tok.push_back(tok);
    }
    if (static_cast<int64_t>(done.size()) >= K || len == o.max_length) break;
    live = std::move(next);
    prev = torch::tensor(next_tok, torch::kInt64);
    parent = torch::tensor(next_parent, torch::kInt64);
  }
  std::stable_sort(done.begin(), done.end(),
                   [](const BeamHypothesis& a, const BeamHypothesis& b) { return a.score > b.score; });
  if (static_cast<int64_t>(done.size()) > K) done.resize(static_cast<size_t>(K));
  return done;
}

}  // namespace cs
