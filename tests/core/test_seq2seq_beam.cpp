// Beam search (tasks/beam_search.h) on toy models whose next-token distribution is a fixed
// function of the prefix: against exhaustive search when the beam covers every sequence,
// greedy == beam 1, and a case where the length normalisation changes the choice.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "tasks/beam_search.h"

namespace test_seq2seq_beam {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

constexpr int32_t kEos = 3, kBos = 2;

// A toy "decoder": log P(next | prefix) from `table`; the step function keeps one prefix per
// live row and reorders them by `parent`, as a real decoder reorders its state.
struct Toy {
  std::function<std::vector<double>(const std::vector<int32_t>&)> table;  // prefix -> log-probs [V]
  std::vector<std::vector<int32_t>> rows{};
  int64_t calls = 0;
  BeamStepFn fn() {
    rows = {{}};
    return [this](const torch::Tensor& prev, const torch::Tensor& parent) {
      ++calls;
      std::vector<std::vector<int32_t>> next;
      if (parent.numel() == 0) {
        next = {{}};
        EXPECT_EQ(prev.item<int64_t>(), kBos);
      } else {
        for (int64_t i = 0; i < parent.numel(); ++i) {
          auto p = rows[static_cast<size_t>(parent[i].item<int64_t>())];
          p.push_back(static_cast<int32_t>(prev[i].item<int64_t>()));
          next.push_back(p);
        }
      }
      rows = next;
      std::vector<torch::Tensor> out;
      for (auto& r : rows) out.push_back(torch::tensor(table(r), torch::kFloat64));
      return torch::stack(out);
    };
  }
};

// log-softmax of pseudo-random logits determined by the prefix
std::vector<double> random_table(const std::vector<int32_t>& prefix, int V, uint64_t seed) {
  uint64_t h = seed * 1469598103934665603ULL;
  for (auto t : prefix) h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ULL;
  std::vector<double> z(static_cast<size_t>(V));
  double mx = -1e9;
  for (int v = 0; v < V; ++v) {
    h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    z[static_cast<size_t>(v)] = 3.0 * static_cast<double>((h >> 11) % 100000) / 100000.0;
    mx = std::max(mx, z[static_cast<size_t>(v)]);
  }
  double s = 0;
  for (auto x : z) s += std::exp(x - mx);
  for (auto& x : z) x = x - mx - std::log(s);
  return z;
}

// Every sequence: ends with </s> at length <= L, or is cut at length L without </s>.
void exhaustive(const std::function<std::vector<double>(const std::vector<int32_t>&)>& table, int V, int L,
                double alpha, std::vector<int32_t>& prefix, double lp, std::vector<int32_t>& best, double& best_score) {
  auto p = table(prefix);
  for (int v = 0; v < V; ++v) {
    prefix.push_back(v);
    const double l = lp + p[static_cast<size_t>(v)];
    if (v == kEos || static_cast<int>(prefix.size()) == L) {
      const double s = l / length_penalty(static_cast<int64_t>(prefix.size()), alpha);
      if (s > best_score) {
        best_score = s;
        best = prefix;
      }
    } else {
      exhaustive(table, V, L, alpha, prefix, l, best, best_score);
    }
    prefix.pop_back();
  }
}

}  // namespace

TEST(Seq2seqBeam, matches_exhaustive_search_when_the_beam_covers_everything) {
  const int V = 4, L = 4;  // 4^4 = 256 sequences at most: a beam of 300 prunes nothing
  for (uint64_t seed : {1u, 2u, 3u, 7u})
    for (double alpha : {0.0, 0.6, 1.0, 2.0}) {
      auto table = [&](const std::vector<int32_t>& p) { return random_table(p, V, seed); };
      std::vector<int32_t> prefix, best;
      double best_score = -1e300;
      exhaustive(table, V, L, alpha, prefix, 0.0, best, best_score);
      Toy toy{table};
      BeamSearchOptions o;
      o.beam = 300;
      o.alpha = alpha;
      o.max_length = L;
      auto hyps = beam_search(toy.fn(), o);
      ASSERT_FALSE(hyps.empty());
      EXPECT_EQ(hyps.front().tokens, best) << "seed " << seed << " alpha " << alpha;
      EXPECT_NEAR(hyps.front().score, best_score, 1e-9);
      // sorted by score, each score = logprob / lp(len)
      for (size_t i = 0; i < hyps.size(); ++i) {
        EXPECT_NEAR(hyps[i].score, hyps[i].logprob / length_penalty(static_cast<int64_t>(hyps[i].tokens.size()), alpha),
                    1e-12);
        if (i) {
          EXPECT_GE(hyps[i - 1].score, hyps[i].score);
        }
      }
    }
}

TEST(Seq2seqBeam, greedy_equals_beam_one) {
  const int V = 6, L = 12;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto table = [&](const std::vector<int32_t>& p) { return random_table(p, V, seed); };
    std::vector<int32_t> greedy;
    double lp = 0;
    while (static_cast<int>(greedy.size()) < L) {
      auto p = table(greedy);
      const int a = static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin());
      greedy.push_back(a);
      lp += p[static_cast<size_t>(a)];
      if (a == kEos) break;
    }
    Toy toy{table};
    BeamSearchOptions o;
    o.beam = 1;
    o.alpha = 1.0;
    o.max_length = L;
    auto hyps = beam_search(toy.fn(), o);
    ASSERT_EQ(hyps.size(), 1u);
    EXPECT_EQ(hyps[0].tokens, greedy) << "seed " << seed;
    EXPECT_NEAR(hyps[0].logprob, lp, 1e-9);
  }
}

TEST(Seq2seqBeam, length_normalisation_changes_the_choice) {
  // "</s>" at once: log 0.4 = -0.916. "a </s>": log 0.6 + log 0.6 = -1.022, better once divided
  // by lp(2) = 7/6 (alpha = 1): -0.876 > -0.916 / lp(1) = -0.916.
  auto table = [](const std::vector<int32_t>& p) {
    const double lo = std::log(1e-6);
    std::vector<double> v(5, lo);
    if (p.empty()) {
      v[kEos] = std::log(0.4);
      v[0] = std::log(0.6 - 3e-6);
    } else {
      v[kEos] = std::log(0.6);
      v[1] = std::log(0.4 - 3e-6);
    }
    return v;
  };
  BeamSearchOptions o;
  o.beam = 10;
  o.max_length = 6;
  o.alpha = 0.0;
  Toy t0{table};
  auto raw = beam_search(t0.fn(), o);
  ASSERT_FALSE(raw.empty());
  EXPECT_EQ(raw.front().tokens, (std::vector<int32_t>{kEos}));
  o.alpha = 1.0;
  Toy t1{table};
  auto norm = beam_search(t1.fn(), o);
  ASSERT_FALSE(norm.empty());
  EXPECT_EQ(norm.front().tokens, (std::vector<int32_t>{0, kEos}));
  EXPECT_NEAR(norm.front().score, (std::log(0.6 - 3e-6) + std::log(0.6)) / (7.0 / 6.0), 1e-9);
}

TEST(Seq2seqBeam, stops_at_max_length_and_rejects_bad_options) {
  auto table = [](const std::vector<int32_t>&) {
    return std::vector<double>{std::log(0.7), std::log(0.1), std::log(0.1), std::log(0.1)};
  };
  Toy toy{table};
  BeamSearchOptions o;
  o.beam = 2;
  o.max_length = 5;
  auto h = beam_search(toy.fn(), o);
  ASSERT_FALSE(h.empty());
  for (auto& x : h) EXPECT_LE(x.tokens.size(), 5u);
  EXPECT_LE(toy.calls, 5);
  o.beam = 0;
  EXPECT_ANY_THROW(beam_search(toy.fn(), o));
}

}  // namespace test_seq2seq_beam
