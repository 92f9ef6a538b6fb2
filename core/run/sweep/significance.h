// Significance of paired comparisons, where a table or the notes make a verdict (issue #51):
// a two-sided paired t-test over seeds, a sign test, and, for test sets whose per-example results
// are stored, a paired bootstrap over test examples (or McNemar's exact test for accuracies),
// combined as SWEEP_NOTES.md "Significance" documents. Qt-free and LibTorch-free.
//
// The verdict rule: "holds" only at p < kVerdictAlpha on at least kMinSeedsForHolds seeds;
// otherwise "consistent in sign on N seeds" when every seed's difference has the same sign;
// otherwise "not established".
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace cs {

inline constexpr double kVerdictAlpha = 0.05;
inline constexpr int kMinSeedsForHolds = 5;
// The paired bootstrap's resample count and its fixed seed (documented in SWEEP_NOTES.md): the
// same data always gives the same p. With 10000 resamples the Monte-Carlo error of a p near 0.05
// is about sqrt(0.05 * 0.95 / 10000) = 0.002.
inline constexpr int kBootstrapResamples = 10000;
inline constexpr uint64_t kBootstrapSeed = 20261203;

// The regularized incomplete beta function I_x(a, b) (a, b > 0, 0 <= x <= 1), by its continued
// fraction (modified Lentz). NaN outside the domain.
double regularized_incomplete_beta(double a, double b, double x);
// P(T <= t) for Student's t with `df` > 0 degrees of freedom: 1 - I_{df/(df+t^2)}(df/2, 1/2) / 2 for
// t >= 0 (the symmetric value below 0).
double student_t_cdf(double t, double df);
// Two-sided p of a t statistic: P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2).
double student_t_two_sided_p(double t, double df);

// Paired t-test over seeds on the per-seed differences d_s (two-sided): t = mean / (sd / sqrt(n)),
// df = n - 1, sd the sample standard deviation. n < 2: no test (p NaN). sd 0: p 0 when the mean
// is not 0 (every seed gives the same non-zero difference), 1 when it is.
struct PairedTTest {
  int n = 0;
  double mean = 0, sd = 0, t = std::numeric_limits<double>::quiet_NaN();
  double p = std::numeric_limits<double>::quiet_NaN();
};
PairedTTest paired_t_test(const std::vector<double>& diffs);

// Exact two-sided binomial test of k successes in n trials at 1/2: min(1, 2 P(X <= min(k, n-k))).
double binomial_two_sided_p(int k, int n);

// Sign test on the per-seed differences: positives against negatives (ties, d = 0, dropped),
// exact two-sided binomial p. With 3 seeds of one sign p = 0.25: a sign test cannot reach 0.05
// below 6 seeds.
struct SignTest {
  int positive = 0, negative = 0, ties = 0;
  double p = std::numeric_limits<double>::quiet_NaN();  // NaN when every difference is a tie
};
SignTest sign_test(const std::vector<double>& diffs);

// McNemar's exact test for two classifiers' correctness on the same examples: b = examples A got
// right and B wrong, c = the reverse; p = the exact two-sided binomial p of b in b + c (1 when
// b + c = 0). `a` and `b_correct` must have the same length (UserError otherwise).
struct McNemarTest {
  int b = 0, c = 0;
  double p = 1;
};
McNemarTest mcnemar_test(const std::vector<uint8_t>& a_correct, const std::vector<uint8_t>& b_correct);

// Paired bootstrap over test examples: a[s][i], b[s][i] = per-example scores of the two systems on
// test example i for seed s (the same examples for every seed; e.g. 0/1 correctness, or any score
// whose mean over examples is the metric). The statistic is the mean over seeds of
// (mean_i a[s][i] - mean_i b[s][i]). Each resample draws N example indices with replacement (one
// draw shared by every seed, so the seeds stay paired); p = (1 + #{|delta* - delta| >= |delta|})
// / (1 + resamples): the centred two-sided bootstrap test (delta* - delta stands in for the
// statistic's null distribution). std::mt19937_64 seeded with `seed`; indices by rejection
// sampling, so the draws are the same on every platform. UserError on empty or ragged input.
struct BootstrapTest {
  double delta = 0;  // the observed statistic
  double p = 1;
  int resamples = 0;
  int examples = 0;
  uint64_t seed = 0;
};
BootstrapTest paired_bootstrap(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                               int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

// Paired bootstrap of a corpus statistic that is not a mean over examples, such as BLEU (Koehn 2004,
// "Statistical significance tests for machine translation evaluation": paired bootstrap resampling,
// the test of sacreBLEU's --paired-bs), over every seed at once. `metric(s, a, w)` is system A's (a
// true) or B's metric for seed s on the resample that drew example i w[i] times (w null: the test set
// itself, every weight 1). The statistic is the mean over seeds of metric(s, true) - metric(s, false).
// The draws (N indices with replacement per resample, one draw shared by every seed), p and the seed
// are paired_bootstrap's, so a metric that is the mean of per-example scores gives its p (up to the
// order of a floating-point sum).
// UserError when `examples` or `seeds` is below 1.
using CorpusMetric = std::function<double(int seed, bool system_a, const std::vector<int>* weights)>;
BootstrapTest paired_bootstrap_corpus(int examples, int seeds, const CorpusMetric& metric,
                                      int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

// A paired comparison's tests and verdict. `p` is the one the verdict reads: the seeds' t-test p
// alone, or, when a per-example test over the test set is given, the larger of the two (both must
// reject: an intersection-union test at level alpha, so a difference "holds" only when it is
// larger than both the seed-to-seed variation and the test set's own sampling error).
struct Significance {
  int seeds = 0;
  PairedTTest t;
  SignTest sign;
  double p_examples = std::numeric_limits<double>::quiet_NaN();  // NaN: no per-example test
  std::string example_test;                                      // how p_examples was made
  double p = std::numeric_limits<double>::quiet_NaN();
  std::string verdict;  // "holds" | "consistent in sign" | "not established"
  // "paired t-test over 3 seeds" [+ " and <example_test> (the larger p)"]
  std::string test() const;
  // "holds (p = 0.012, 5 seeds)", "consistent in sign on 3 seeds (p = 0.082)",
  // "not established (p = 0.41)", "not established (1 seed: no test)"
  std::string text() const;
};
Significance assess_paired(const std::vector<double>& seed_diffs,
                           double p_examples = std::numeric_limits<double>::quiet_NaN(),
                           const std::string& example_test = "");

// A p-value in words: 2 significant digits ("0.082", "0.0012"), "< 0.0001" below that, "n/a" for NaN.
std::string format_p(double p);
// "p = 0.082", "p < 0.0001", "p = n/a".
std::string p_text(double p);

}  // namespace cs
