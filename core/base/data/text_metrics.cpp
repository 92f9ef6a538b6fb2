#include "data/text_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace cs {

std::vector<std::string> metric_tokens(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      cur.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : ch);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

namespace {

using Gram = std::vector<std::string>;

std::map<Gram, int64_t> ngram_counts(const std::vector<std::string>& toks, size_t n) {
  std::map<Gram, int64_t> m;
  if (toks.size() < n) return m;
  for (size_t i = 0; i + n <= toks.size(); ++i) ++m[Gram(toks.begin() + i, toks.begin() + i + n)];
  return m;
}

// Clipped matches: sum over hypothesis n-grams of min(count in hyp, count in ref).
int64_t clipped_overlap(const std::map<Gram, int64_t>& hyp, const std::map<Gram, int64_t>& ref) {
  int64_t k = 0;
  for (const auto& [g, c] : hyp) {
    auto it = ref.find(g);
    if (it != ref.end()) k += std::min(c, it->second);
  }
  return k;
}

void check_sizes(size_t h, size_t r, const char* what) {
  if (h != r)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(h) + " hypotheses but " +
                                std::to_string(r) + " references");
}

double f1(int64_t overlap, int64_t hyp_total, int64_t ref_total) {
  if (overlap == 0 || hyp_total == 0 || ref_total == 0) return 0.0;
  const double p = double(overlap) / double(hyp_total), r = double(overlap) / double(ref_total);
  return 2.0 * p * r / (p + r);
}

int64_t lcs_length(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<int64_t> prev(b.size() + 1, 0), cur(b.size() + 1, 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references) {
  check_sizes(hypotheses.size(), references.size(), "corpus_bleu");
  int64_t match[4] = {0, 0, 0, 0}, total[4] = {0, 0, 0, 0};
  BleuScore s;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const auto h = metric_tokens(hypotheses[i]), r = metric_tokens(references[i]);
    s.hypothesis_length += static_cast<int64_t>(h.size());
    s.reference_length += static_cast<int64_t>(r.size());
    for (size_t n = 1; n <= 4; ++n) {
      const auto hc = ngram_counts(h, n);
      match[n - 1] += clipped_overlap(hc, ngram_counts(r, n));
      total[n - 1] += h.size() >= n ? static_cast<int64_t>(h.size() - n + 1) : 0;
    }
  }
  for (int n = 0; n < 4; ++n) s.precision[n] = total[n] > 0 ? double(match[n]) / double(total[n]) : 0.0;
  const double c = double(s.hypothesis_length), r = double(s.reference_length);
  s.length_ratio = r > 0 ? c / r : 0.0;
  s.brevity_penalty = c == 0 ? 0.0 : (c > r ? 1.0 : std::exp(1.0 - r / c));
  bool any_zero = false;
  double log_sum = 0;
  for (int n = 0; n < 4; ++n) {
    if (match[n] == 0) { any_zero = true; break; }
    log_sum += 0.25 * std::log(s.precision[n]);
  }
  s.bleu = any_zero ? 0.0 : 100.0 * s.brevity_penalty * std::exp(log_sum);
  return s;
}

RougeScore corpus_rouge(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references) {
  check_sizes(hypotheses.size(), references.size(), "corpus_rouge");
  RougeScore s;
  if (hypotheses.empty()) return s;
  double r1 = 0, r2 = 0, rl = 0;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const auto h = metric_tokens(hypotheses[i]), r = metric_tokens(references[i]);
    const int64_t hn = static_cast<int64_t>(h.size()), rn = static_cast<int64_t>(r.size());
    r1 += f1(clipped_overlap(ngram_counts(h, 1), ngram_counts(r, 1)), hn, rn);
    r2 += f1(clipped_overlap(ngram_counts(h, 2), ngram_counts(r, 2)), std::max<int64_t>(hn - 1, 0),
             std::max<int64_t>(rn - 1, 0));
    rl += f1(lcs_length(h, r), hn, rn);
  }
  const double n = double(hypotheses.size());
  s.rouge1 = 100.0 * r1 / n;
  s.rouge2 = 100.0 * r2 / n;
  s.rougeL = 100.0 * rl / n;
  return s;
}

}  // namespace cs
