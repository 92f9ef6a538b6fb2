// Paired tests for the tables' verdicts (significance.h; SWEEP_NOTES.md "Significance").
#include "sweep/significance.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <random>
#include <sstream>

#include "util/error.h"

namespace cs {

namespace {

// The continued fraction of I_x(a, b) (Numerical Recipes' betacf, modified Lentz's method).
double beta_continued_fraction(double a, double b, double x) {
  const double tiny = 1e-300, eps = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < eps) break;
  }
  return h;
}

// A uniform index in [0, n) from a 64-bit generator, by rejection (no modulo bias, and the same
// numbers on every standard library, unlike std::uniform_int_distribution).
size_t uniform_index(std::mt19937_64& g, size_t n) {
  const uint64_t range = static_cast<uint64_t>(n);
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % range;
  uint64_t v = g();
  while (v >= limit) v = g();
  return static_cast<size_t>(v % range);
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return 0;
  if (x == 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  // the fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) above
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0) || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return 0;
  return regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double student_t_cdf(double t, double df) {
  const double p = student_t_two_sided_p(t, df);
  if (std::isnan(p)) return p;
  return t >= 0 ? 1 - p / 2 : p / 2;
}

PairedTTest paired_t_test(const std::vector<double>& d) {
  PairedTTest r;
  r.n = static_cast<int>(d.size());
  if (r.n == 0) return r;
  double s = 0;
  for (double v : d) s += v;
  r.mean = s / r.n;
  if (r.n < 2) return r;
  double ss = 0;
  for (double v : d) ss += (v - r.mean) * (v - r.mean);
  r.sd = std::sqrt(ss / (r.n - 1));
  if (r.sd == 0) {
    r.t = r.mean == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), r.mean);
    r.p = r.mean == 0 ? 1 : 0;
    return r;
  }
  r.t = r.mean / (r.sd / std::sqrt(static_cast<double>(r.n)));
  r.p = student_t_two_sided_p(r.t, r.n - 1);
  return r;
}

double binomial_two_sided_p(int k, int n) {
  if (n <= 0) return 1;
  const int m = std::min(k, n - k);
  // P(X <= m) for X ~ Binomial(n, 1/2): C(n, i) / 2^n by the recurrence C(n, i+1) = C(n, i) (n - i) / (i + 1),
  // from 2^-n (exact in a double up to n = 1074); in log space beyond (McNemar on many examples)
  double tail = 0;
  if (n <= 1000) {
    double term = std::ldexp(1.0, -n);
    for (int i = 0; i <= m; ++i) {
      tail += term;
      term = term * (n - i) / (i + 1);
    }
  } else {
    for (int i = 0; i <= m; ++i)
      tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
  }
  return std::min(1.0, 2 * tail);
}

SignTest sign_test(const std::vector<double>& d) {
  SignTest r;
  for (double v : d) (v > 0 ? r.positive : v < 0 ? r.negative : r.ties)++;
  const int n = r.positive + r.negative;
  if (n > 0) r.p = binomial_two_sided_p(r.positive, n);
  return r;
}

McNemarTest mcnemar_test(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size())
    throw UserError("McNemar: the two systems were scored on " + std::to_string(a.size()) + " and " +
                    std::to_string(b.size()) + " examples; they must be the same examples");
  McNemarTest r;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] && !b[i]) ++r.b;
    if (!a[i] && b[i]) ++r.c;
  }
  r.p = binomial_two_sided_p(r.b, r.b + r.c);
  return r;
}

BootstrapTest paired_bootstrap(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                               int resamples, uint64_t seed) {
  if (a.empty() || a.size() != b.size())
    throw UserError("paired bootstrap: expected per-example scores of both systems for the same seeds (" +
                    std::to_string(a.size()) + " and " + std::to_string(b.size()) + " seeds given)");
  const size_t n = a[0].size();
  if (n == 0) throw UserError("paired bootstrap: no test examples");
  for (size_t s = 0; s < a.size(); ++s)
    if (a[s].size() != n || b[s].size() != n)
      throw UserError("paired bootstrap: seed " + std::to_string(s) + " scores " + std::to_string(a[s].size()) +
                      " and " + std::to_string(b[s].size()) + " examples, not " + std::to_string(n) +
                      " (every seed must score the same test examples)");
  if (resamples < 1) throw UserError("paired bootstrap: resamples must be at least 1");
  // the per-example difference, averaged over seeds: the statistic of a resample is its mean
  std::vector<double> diff(n, 0.0);
  for (size_t s = 0; s < a.size(); ++s)
    for (size_t i = 0; i < n; ++i) diff[i] += (a[s][i] - b[s][i]) / static_cast<double>(a.size());
  BootstrapTest r;
  r.resamples = resamples;
  r.examples = static_cast<int>(n);
  r.seed = seed;
  double total = 0;
  for (double v : diff) total += v;
  r.delta = total / static_cast<double>(n);
  std::mt19937_64 g(seed);
  int extreme = 0;
  const double tol = 1e-12 * std::max(1.0, std::fabs(r.delta));  // |delta* - delta| >= |delta| up to rounding
  for (int k = 0; k < resamples; ++k) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += diff[uniform_index(g, n)];
    const double star = sum / static_cast<double>(n);
    if (std::fabs(star - r.delta) >= std::fabs(r.delta) - tol) ++extreme;
  }
  r.p = (1.0 + extreme) / (1.0 + resamples);
  return r;
}

BootstrapTest paired_bootstrap_corpus(int examples, int seeds, const CorpusMetric& metric, int resamples,
                                      uint64_t seed) {
  if (examples < 1 || seeds < 1)
    throw UserError("paired bootstrap: expected at least 1 test example and 1 seed (" + std::to_string(examples) +
                    " examples, " + std::to_string(seeds) + " seeds given)");
  if (resamples < 1) throw UserError("paired bootstrap: resamples must be at least 1");
  const size_t n = static_cast<size_t>(examples);
  auto statistic = [&](const std::vector<int>* w) {
    double d = 0;
    for (int s = 0; s < seeds; ++s) d += metric(s, true, w) - metric(s, false, w);
    return d / seeds;
  };
  BootstrapTest r;
  r.resamples = resamples;
  r.examples = examples;
  r.seed = seed;
  r.delta = statistic(nullptr);
  std::mt19937_64 g(seed);
  int extreme = 0;
  const double tol = 1e-12 * std::max(1.0, std::fabs(r.delta));  // as paired_bootstrap
  std::vector<int> w(n);
  for (int k = 0; k < resamples; ++k) {
    std::fill(w.begin(), w.end(), 0);
    for (size_t i = 0; i < n; ++i) ++w[uniform_index(g, n)];
    if (std::fabs(statistic(&w) - r.delta) >= std::fabs(r.delta) - tol) ++extreme;
  }
  r.p = (1.0 + extreme) / (1.0 + resamples);
  return r;
}

std::string format_p(double p) {
  if (std::isnan(p)) return "n/a";
  if (p < 1e-4) return "< 0.0001";
  std::ostringstream o;
  if (p >= 0.995) return "1.0";
  // two significant digits
  const int digits = std::max(2, 1 - static_cast<int>(std::floor(std::log10(p))));
  o << std::fixed << std::setprecision(digits) << p;
  return o.str();
}

std::string p_text(double p) {
  const std::string f = format_p(p);
  return f[0] == '<' ? "p " + f : "p = " + f;
}

Significance assess_paired(const std::vector<double>& d, double p_examples, const std::string& example_test) {
  Significance s;
  s.seeds = static_cast<int>(d.size());
  s.t = paired_t_test(d);
  s.sign = sign_test(d);
  s.p_examples = p_examples;
  s.example_test = example_test;
  s.p = std::isnan(p_examples) || std::isnan(s.t.p) ? s.t.p : std::max(s.t.p, p_examples);
  const bool one_sign = s.seeds >= 2 && (s.sign.positive == s.seeds || s.sign.negative == s.seeds);
  if (!std::isnan(s.p) && s.p < kVerdictAlpha && s.seeds >= kMinSeedsForHolds) s.verdict = "holds";
  else if (one_sign) s.verdict = "consistent in sign";
  else s.verdict = "not established";
  return s;
}

std::string Significance::test() const {
  std::string o = "paired t-test over " + std::to_string(seeds) + (seeds == 1 ? " seed" : " seeds");
  if (!std::isnan(p_examples)) o += " and " + example_test + " (the larger p)";
  return o;
}

std::string Significance::text() const {
  const std::string n = std::to_string(seeds) + (seeds == 1 ? " seed" : " seeds");
  if (seeds < 2) return "not established (" + n + ": no test)";
  const std::string pt = p_text(p);
  if (verdict == "holds") return "holds (" + pt + ", " + n + ")";
  if (verdict == "consistent in sign") return "consistent in sign on " + n + " (" + pt + ")";
  return "not established (" + pt + ")";
}

}  // namespace cs
