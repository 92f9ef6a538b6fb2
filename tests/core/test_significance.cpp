// The paired tests behind every verdict (core/run/sweep/significance.h, issue #51): Student's t
// through the regularized incomplete beta function (known values and closed forms), the paired
// t-test on the per-seed numbers of docs/results/{mcrnn,mzu,cru}.md, the sign test, McNemar and the paired
// bootstrap on hand-made data, and the verdict rule (holds only at p < 0.05 on >= 5 seeds).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sweep/significance.h"
#include "util/error.h"

namespace test_significance {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {
const double kPi = std::acos(-1.0);
}

TEST(Significance, incompleteBetaKnownValues) {
  for (double x : {0.0, 0.1, 0.37, 0.5, 0.9, 1.0}) {
    EXPECT_NEAR(regularized_incomplete_beta(1, 1, x), x, 1e-12) << x;                           // uniform
    EXPECT_NEAR(regularized_incomplete_beta(3, 1, x), std::pow(x, 3), 1e-12) << x;              // I_x(a,1) = x^a
    EXPECT_NEAR(regularized_incomplete_beta(1, 2.5, x), 1 - std::pow(1 - x, 2.5), 1e-12) << x;  // I_x(1,b)
  }
  EXPECT_NEAR(regularized_incomplete_beta(4.5, 4.5, 0.5), 0.5, 1e-12);  // symmetric
  EXPECT_NEAR(regularized_incomplete_beta(2, 3, 0.4), 0.5248, 1e-12);   // 1 - sum_{j<2} C(4,j) .4^j .6^(4-j)
  EXPECT_TRUE(std::isnan(regularized_incomplete_beta(0, 1, 0.5)));
  EXPECT_TRUE(std::isnan(regularized_incomplete_beta(1, 1, 1.5)));
}

TEST(Significance, studentTTwoSidedP) {
  EXPECT_NEAR(student_t_two_sided_p(2.0, 4), 0.1161, 5e-5);    // the brief's value
  EXPECT_NEAR(student_t_two_sided_p(4.303, 2), 0.0500, 2e-4);  // t_{0.975, 2} = 4.303
  EXPECT_NEAR(student_t_two_sided_p(2.776, 4), 0.0500, 2e-4);  // t_{0.975, 4}
  EXPECT_NEAR(student_t_two_sided_p(2.228, 10), 0.0500, 2e-4);
  // closed forms: df 1 (Cauchy) p = 1 - 2 atan|t| / pi; df 2: p = 1 - |t| / sqrt(2 + t^2)
  for (double t : {0.0, 0.3, 1.0, 2.5, 12.7, -3.0}) {
    EXPECT_NEAR(student_t_two_sided_p(t, 1), 1 - 2 * std::atan(std::fabs(t)) / kPi, 1e-12) << t;
    EXPECT_NEAR(student_t_two_sided_p(t, 2), 1 - std::fabs(t) / std::sqrt(2 + t * t), 1e-12) << t;
  }
  EXPECT_NEAR(student_t_two_sided_p(1.959964, 1e7), 0.05, 1e-5);  // the normal limit
  EXPECT_EQ(student_t_two_sided_p(INFINITY, 3), 0.0);
  EXPECT_NEAR(student_t_cdf(0, 5), 0.5, 1e-15);
  EXPECT_NEAR(student_t_cdf(2.0, 4), 1 - 0.1161 / 2, 5e-5);
  EXPECT_NEAR(student_t_cdf(-2.0, 4) + student_t_cdf(2.0, 4), 1.0, 1e-14);
}

// The per-seed differences docs/results/{mcrnn,mzu,cru}.md quote, and the p of the issue (#51).
TEST(Significance, pairedTTestOnTheNotesOwnNumbers) {
  struct Case {
    std::vector<double> d;
    double p;
  };
  const std::vector<Case> cases = {
      {{-1.2, -3.2, -1.6}, 0.0820},     // MC-RNN Table 4: MC-RNN-3 - LSTM
      {{-4.2, -1.3, -2.1}, 0.0994},     // MC-RNN-4 - LSTM
      {{0.010, 0.005, 0.018}, 0.1009},  // MZU Table 3 gcnMZU 8 - 4 zones
      {{0.020, 0.008, 0.015}, 0.0542},  // gcnMZU 16 - 4
      {{0.021, 0.067, 0.059}, 0.0746},  // capMZU 16 - 4
      {{0.017, 0.031, 0.024}, 0.0272},  // CRU Table 3: M-AoA (GRU) - AoA (GRU)
  };
  for (auto& c : cases) {
    const auto r = paired_t_test(c.d);
    EXPECT_EQ(r.n, 3);
    EXPECT_NEAR(r.p, c.p, 1e-4) << r.mean;
    // df 2: the closed form of the two-sided p from t
    EXPECT_NEAR(r.p, 1 - std::fabs(r.t) / std::sqrt(2 + r.t * r.t), 1e-12);
  }
  EXPECT_NEAR(paired_t_test({-1.2, -3.2, -1.6}).t, -3.273, 1e-3);
  // degenerate inputs
  EXPECT_TRUE(std::isnan(paired_t_test({0.4}).p));
  EXPECT_TRUE(std::isnan(paired_t_test({}).p));
  EXPECT_LT(paired_t_test({0.1, 0.1, 0.1}).p, 1e-12);  // the same non-zero difference on every seed
  EXPECT_EQ(paired_t_test({0.5, 0.5, 0.5}).p, 0.0);    // exactly (sd 0): t infinite
  EXPECT_EQ(paired_t_test({0.0, 0.0}).p, 1.0);
}

TEST(Significance, signTestIsExactBinomialWithTiesDropped) {
  EXPECT_DOUBLE_EQ(sign_test({1, 2, 3}).p, 0.25);  // 3 of 3: never below 0.05
  EXPECT_DOUBLE_EQ(sign_test({-1, -2, -3, -4, -5}).p, 0.0625);
  EXPECT_DOUBLE_EQ(sign_test({1, 2, 3, 4, 5, 6}).p, 0.03125);
  const auto t = sign_test({1, 0, -1, 2});
  EXPECT_EQ(t.positive, 2);
  EXPECT_EQ(t.negative, 1);
  EXPECT_EQ(t.ties, 1);
  EXPECT_DOUBLE_EQ(t.p, 1.0);
  EXPECT_TRUE(std::isnan(sign_test({0, 0}).p));
  EXPECT_DOUBLE_EQ(binomial_two_sided_p(0, 10), 2.0 / 1024);
  EXPECT_DOUBLE_EQ(binomial_two_sided_p(2, 10), 2.0 * (1 + 10 + 45) / 1024);
  EXPECT_DOUBLE_EQ(binomial_two_sided_p(5, 10), 1.0);
}

TEST(Significance, mcnemarCountsDiscordantPairs) {
  // 20 examples: both right on 10, both wrong on 2, A alone right on 7, B alone right on 1
  std::vector<uint8_t> a, b;
  auto add = [&](int n, uint8_t x, uint8_t y) {
    for (int i = 0; i < n; ++i) a.push_back(x), b.push_back(y);
  };
  add(10, 1, 1);
  add(2, 0, 0);
  add(7, 1, 0);
  add(1, 0, 1);
  const auto m = mcnemar_test(a, b);
  EXPECT_EQ(m.b, 7);
  EXPECT_EQ(m.c, 1);
  EXPECT_NEAR(m.p, 2.0 * (1 + 8) / 256, 1e-15);  // 2 P(X <= 1), X ~ Bin(8, 1/2)
  EXPECT_DOUBLE_EQ(mcnemar_test({1, 0}, {1, 0}).p, 1.0);
  EXPECT_THROW(mcnemar_test({1, 0}, {1}), UserError);
}

TEST(Significance, pairedBootstrapOverExamples) {
  // 2 seeds x 200 examples of 0/1 correctness; system a is right on 20 more examples than b
  const int n = 200;
  std::vector<std::vector<double>> a(2, std::vector<double>(n, 0.0)), b = a;
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < n; ++i) {
      b[s][i] = (i % 2 == 0) ? 1 : 0;
      a[s][i] = b[s][i] || (i % 10 == 1) ? 1 : 0;  // +20 examples right
    }
  const auto r = paired_bootstrap(a, b, 2000, 7);
  EXPECT_NEAR(r.delta, 0.10, 1e-12);
  EXPECT_EQ(r.examples, n);
  EXPECT_EQ(r.resamples, 2000);
  EXPECT_LT(r.p, 0.001);  // 20 discordant examples, all one way
  // the same inputs and seed give the same p; another seed gives a p of the same size
  EXPECT_EQ(paired_bootstrap(a, b, 2000, 7).p, r.p);
  EXPECT_LT(paired_bootstrap(a, b, 2000, 8).p, 0.001);
  // identical systems: no difference, p = 1
  EXPECT_DOUBLE_EQ(paired_bootstrap(b, b, 500).p, 1.0);
  // a difference of 1 example of 200, against 4 the other way and 5 this way: not significant
  std::vector<std::vector<double>> c = b;
  for (int i = 1; i < 11; i += 2) c[0][i] = c[1][i] = 1;  // 5 more right
  for (int i = 0; i < 8; i += 2) c[0][i] = c[1][i] = 0;   // 4 fewer right
  const auto w = paired_bootstrap(c, b, 4000);
  EXPECT_NEAR(w.delta, 1.0 / n, 1e-12);
  EXPECT_GT(w.p, 0.5);
  // ragged or empty input is refused by name
  std::vector<std::vector<double>> ragged = a;
  ragged[1].pop_back();
  EXPECT_THROW(paired_bootstrap(ragged, b), UserError);
  EXPECT_THROW(paired_bootstrap({}, {}), UserError);
  EXPECT_THROW(paired_bootstrap(a, {b[0]}), UserError);
}

// The bootstrap of a corpus statistic (BLEU: Koehn 2004) draws as paired_bootstrap does: with a mean
// as the metric it gives paired_bootstrap's p; with a ratio of sums it tests the ratio.
TEST(Significance, pairedBootstrapOfACorpusStatistic) {
  const int n = 200;
  std::vector<std::vector<double>> a(2, std::vector<double>(n, 0.0)), b = a;
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < n; ++i) {
      b[s][i] = (i % 2 == 0) ? 1 : 0;
      a[s][i] = b[s][i] || (i % 10 == 1 && (s == 0 || i % 20 == 1)) ? 1 : 0;
    }
  auto mean = [&](int s, bool sys_a, const std::vector<int>* w) {
    const auto& v = sys_a ? a[static_cast<size_t>(s)] : b[static_cast<size_t>(s)];
    double sum = 0, count = 0;
    for (int i = 0; i < n; ++i) {
      const double k = w ? (*w)[static_cast<size_t>(i)] : 1;
      sum += k * v[static_cast<size_t>(i)];
      count += k;
    }
    return sum / count;
  };
  for (uint64_t seed : {7u, 8u}) {
    const auto m = paired_bootstrap(a, b, 3000, seed);
    const auto c = paired_bootstrap_corpus(n, 2, mean, 3000, seed);
    EXPECT_NEAR(c.delta, m.delta, 1e-12);
    EXPECT_NEAR(c.p, m.p, 2.0 / 3001) << seed;  // the same draws; only a sum's order differs
    EXPECT_EQ(c.examples, n);
  }
  // a ratio of sums (hits per token), which a mean of per-example scores does not give: a system
  // with 5 more hits of 400 tokens on one example of 50 is not significantly better; with 120 more
  // spread over every example it is
  const int m = 50;
  std::vector<double> tokens(m, 8), hits_b(m, 4), hits_few = hits_b, hits_many = hits_b;
  hits_few[3] += 5;
  for (int i = 0; i < m; ++i) hits_many[static_cast<size_t>(i)] += 2.4;
  auto ratio = [&](const std::vector<double>& hits) {
    return [&, hits](int, bool sys_a, const std::vector<int>* w) {
      double h = 0, t = 0;
      for (int i = 0; i < m; ++i) {
        const double k = w ? (*w)[static_cast<size_t>(i)] : 1;
        h += k * (sys_a ? hits[static_cast<size_t>(i)] : hits_b[static_cast<size_t>(i)]);
        t += k * tokens[static_cast<size_t>(i)];
      }
      return h / t;
    };
  };
  const auto few = paired_bootstrap_corpus(m, 1, ratio(hits_few), 2000);
  EXPECT_NEAR(few.delta, 5.0 / 400, 1e-12);
  EXPECT_GT(few.p, 0.05);
  EXPECT_LT(paired_bootstrap_corpus(m, 1, ratio(hits_many), 2000).p, 0.001);
  EXPECT_DOUBLE_EQ(paired_bootstrap_corpus(m, 1, ratio(hits_b), 500).p, 1.0);  // no difference
  EXPECT_THROW(paired_bootstrap_corpus(0, 1, mean), UserError);
  EXPECT_THROW(paired_bootstrap_corpus(n, 0, mean), UserError);
}

// The rule of issue #51: "holds" only at p < 0.05 on at least 5 seeds; else "consistent in sign on
// N seeds" when every seed agrees; else "not established".
TEST(Significance, verdictRule) {
  // MC-RNN Table 4's MC-RNN-3 - LSTM: the notes' "holds" becomes "consistent in sign on 3 seeds"
  auto v = assess_paired({-1.2, -3.2, -1.6});
  EXPECT_EQ(v.verdict, "consistent in sign");
  EXPECT_EQ(v.text(), "consistent in sign on 3 seeds (p = 0.082)");
  EXPECT_EQ(v.test(), "paired t-test over 3 seeds");
  // even p = 0.001 on 3 seeds does not hold
  EXPECT_EQ(assess_paired({0.592, 0.556, 0.524}).text(), "consistent in sign on 3 seeds (p = 0.0012)");
  // 5 seeds of one sign, p < 0.05: holds
  auto h = assess_paired({0.5, 0.6, 0.55, 0.52, 0.58});
  EXPECT_EQ(h.verdict, "holds");
  EXPECT_EQ(h.text().rfind("holds (p ", 0), 0u) << h.text();
  // 5 seeds, mixed signs, p < 0.05: holds (the rule reads p and the seed count)
  EXPECT_EQ(assess_paired({1.0, 1.1, 0.9, 1.2, -0.1}).verdict, "holds");
  // 5 seeds of one sign but p >= 0.05: consistent in sign
  auto c = assess_paired({0.01, 0.5, 0.02, 0.9, 0.03});
  EXPECT_GE(c.p, 0.05);
  EXPECT_EQ(c.verdict, "consistent in sign");
  EXPECT_EQ(c.text().rfind("consistent in sign on 5 seeds (p = ", 0), 0u) << c.text();
  // signs differ, p large: not established
  EXPECT_EQ(assess_paired({0.029, 0.031, -0.010}).text(), "not established (p = 0.34)");
  EXPECT_EQ(assess_paired({0.4}).text(), "not established (1 seed: no test)");
  // with a per-example test the larger p decides: the seeds agree but the test set does not separate them
  auto e = assess_paired({0.5, 0.6, 0.55, 0.52, 0.58}, 0.2, "paired bootstrap over 413 test examples");
  EXPECT_DOUBLE_EQ(e.p, 0.2);
  EXPECT_EQ(e.verdict, "consistent in sign");
  EXPECT_EQ(e.test(), "paired t-test over 5 seeds and paired bootstrap over 413 test examples (the larger p)");
}

TEST(Significance, formatP) {
  EXPECT_EQ(format_p(0.0820), "0.082");
  EXPECT_EQ(format_p(0.1161), "0.12");
  EXPECT_EQ(format_p(0.0012), "0.0012");
  EXPECT_EQ(format_p(0.5), "0.50");
  EXPECT_EQ(format_p(0.00001), "< 0.0001");
  EXPECT_EQ(format_p(1.0), "1.0");
  EXPECT_EQ(format_p(NAN), "n/a");
  EXPECT_EQ(assess_paired({0.1, 0.1, 0.1}).text(), "consistent in sign on 3 seeds (p < 0.0001)");
}

}  // namespace test_significance
