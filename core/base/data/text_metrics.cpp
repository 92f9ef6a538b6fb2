#include "data/text_metrics.h"

#include "data/tokenizer.h"
#include "data/utf8.h"

#include <libstemmer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>

namespace cs {

const char* const kSacrebleuPortedVersion = "2.6.0";

namespace {

// ---- UTF-8 ----

// The code point starting at s[i] and its length in bytes; an invalid or truncated sequence is one
// byte with code point -1 (passed through unchanged by the callers).
int32_t decode_at(const std::string& s, size_t i, size_t* len) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  *len = 1;
  if (c < 0x80) return c;
  int n = 0;
  int32_t cp = 0;
  if ((c & 0xE0) == 0xC0) n = 1, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 2, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 3, cp = c & 0x07;
  else return -1;
  if (i + static_cast<size_t>(n) >= s.size()) return -1;  // truncated
  for (int k = 1; k <= n; ++k) {
    const unsigned char d = b(i + static_cast<size_t>(k));
    if ((d & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (d & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid (Python refuses them too).
  static const int32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
  if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return -1;
  *len = static_cast<size_t>(n) + 1;
  return cp;
}

// Python's str.isspace(): the characters str.split() and str.rstrip() treat as white space.
bool py_space(int32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.split() with no argument.
std::vector<std::string> py_split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    const int32_t c = decode_at(s, i, &len);
    if (c >= 0 && py_space(c)) {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      cur.append(s, i, len);
    }
    i += len;
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// Python's str.rstrip() with no argument.
std::string py_rstrip(const std::string& s) {
  size_t keep = 0;  // bytes up to the end of the last non-space character
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    const int32_t c = decode_at(s, i, &len);
    i += len;
    if (!(c >= 0 && py_space(c))) keep = i;
  }
  return s.substr(0, keep);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size())
    out.append(s, pos, hit - pos) += to;
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// One pass of a two-character regular expression substitution as Python's re.sub makes it: scan left
// to right, a match consumes both characters, the scan resumes after it. Working on bytes gives the
// code-point result here: every pattern has an ASCII character on the side that decides where a match
// starts or ends ('.', ',', '-', a digit), so a match never starts or ends inside a multi-byte
// character except by taking its last byte as [^0-9] (written back unchanged), or its first byte
// as [^0-9] after '.' / ',' (the rest of the character follows unchanged, and a continuation byte
// cannot start a match).
template <class Match, class Emit>
std::string sub2(const std::string& s, Match match, Emit emit) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && match(s[i], s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// sacreBLEU's TokenizerRegexp (the language-dependent part of 13a).
std::string regexp_tokenize(const std::string& line) {
  // 1. ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 ": ASCII symbols and punctuation except ' , - .
  std::string s;
  s.reserve(line.size() * 2);
  for (char ch : line) {
    const unsigned char c = static_cast<unsigned char>(ch);
    const bool sym = (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
                     (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
    if (sym) {
      s += ' ';
      s += ch;
      s += ' ';
    } else {
      s += ch;
    }
  }
  // 2. ([^0-9])([\.,]) -> "\1 \2 "
  s = sub2(
      s, [](char a, char b) { return !is_digit(a) && (b == '.' || b == ','); },
      [](std::string& o, char a, char b) {
        o += {a, ' ', b, ' '};
      });
  // 3. ([\.,])([^0-9]) -> " \1 \2"
  s = sub2(
      s, [](char a, char b) { return (a == '.' || a == ',') && !is_digit(b); },
      [](std::string& o, char a, char b) {
        o += {' ', a, ' ', b};
      });
  // 4. ([0-9])(-) -> "\1 \2 "
  s = sub2(
      s, [](char a, char b) { return is_digit(a) && b == '-'; },
      [](std::string& o, char a, char b) {
        o += {a, ' ', b, ' '};
      });
  // One space between tokens, none at the ends.
  std::string out;
  for (const auto& w : py_split(s)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

// ---- n-grams ----

using Gram = std::vector<std::string>;
using Counts = std::map<Gram, int64_t>;

Counts ngram_counts(const std::vector<std::string>& toks, size_t n) {
  Counts m;
  for (size_t i = 0; i + n <= toks.size(); ++i)
    ++m[Gram(toks.begin() + static_cast<std::ptrdiff_t>(i), toks.begin() + static_cast<std::ptrdiff_t>(i + n))];
  return m;
}

double my_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }  // sacreBLEU's utils.my_log

void check_bleu_options(const BleuOptions& o) {
  if (o.tokenize != "13a" && o.tokenize != "none")
    throw std::invalid_argument("BLEU tokenize '" + o.tokenize + "': expected 13a or none");
  if (o.smooth_method != "exp" && o.smooth_method != "none" && o.smooth_method != "floor" && o.smooth_method != "add-k")
    throw std::invalid_argument("BLEU smooth_method '" + o.smooth_method + "': expected exp, none, floor or add-k");
  if (o.max_ngram_order < 1) throw std::invalid_argument("BLEU max_ngram_order must be >= 1");
}

double smooth_value_of(const BleuOptions& o) {
  if (o.smooth_value >= 0) return o.smooth_value;
  return o.smooth_method == "floor" ? 0.1 : o.smooth_method == "add-k" ? 1.0 : 0.0;
}

std::string preprocess(const std::string& s, const BleuOptions& o) {
  const std::string t = py_rstrip(o.lowercase ? unicode_lower(s) : s);
  return o.tokenize == "13a" ? tokenize_13a(t) : t;
}

}  // namespace

std::vector<std::string> whitespace_words(const std::string& text) { return py_split(text); }

std::string scorer_line(const std::string& text) {
  std::string s = text;
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string unicode_lower(const std::string& text) {
  // ICU's full lower-casing of the root locale: Unicode's default case mapping, as Python's str.lower()
  // (SpecialCasing's unconditional mappings such as U+0130 -> "i" U+0307, and the Final_Sigma context:
  // "ΟΔΟΣ" -> "οδος"). Each run of valid UTF-8 is mapped; an invalid byte passes through as it is.
  std::string out;
  out.reserve(text.size());
  size_t run = 0;
  auto flush = [&](size_t end) {
    if (end <= run) return;
    out += icu_lower(std::string_view(text.data() + run, end - run));  // root locale, no NFC
  };
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    const int32_t c = decode_at(text, i, &len);
    if (c < 0) {
      flush(i);
      out += text[i];
      run = i + len;
    }
    i += len;
  }
  flush(text.size());
  return out;
}

std::string tokenize_13a(const std::string& line_in) {
  std::string line = line_in;
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  return regexp_tokenize(" " + line + " ");
}

std::string bleu_signature(const BleuOptions& o, int nrefs) {
  check_bleu_options(o);
  std::string smooth = o.smooth_method;
  if (o.smooth_method == "floor" || o.smooth_method == "add-k") {
    char buf[64];
    std::snprintf(buf, sizeof buf, "[%.2f]", smooth_value_of(o));
    smooth += buf;
  }
  return "nrefs:" + std::to_string(nrefs) + "|case:" + (o.lowercase ? "lc" : "mixed") +
         "|eff:" + (o.effective_order ? "yes" : "no") + "|tok:" + o.tokenize + "|smooth:" + smooth +
         "|version:cellscope-port-" + kSacrebleuPortedVersion;
}

BleuScore bleu_from_counts(std::vector<int64_t> correct_in, std::vector<int64_t> total_in, int64_t sys_len,
                           int64_t ref_len, const BleuOptions& o) {
  check_bleu_options(o);
  const size_t N = static_cast<size_t>(o.max_ngram_order);
  if (correct_in.size() != N || total_in.size() != N)
    throw std::invalid_argument("bleu_from_counts: expected " + std::to_string(N) + " counts per list");
  BleuScore s;
  s.counts = correct_in;
  s.totals = total_in;
  s.hypothesis_length = sys_len;
  s.reference_length = ref_len;
  s.length_ratio = ref_len > 0 ? double(sys_len) / double(ref_len) : 0.0;
  s.precision.assign(N, 0.0);
  s.brevity_penalty = 1.0;
  if (sys_len < ref_len) s.brevity_penalty = sys_len > 0 ? std::exp(1.0 - double(ref_len) / double(sys_len)) : 0.0;
  // No match at all: 0 (sacreBLEU #141), whatever the smoothing.
  if (std::all_of(correct_in.begin(), correct_in.end(), [](int64_t c) { return c == 0; })) return s;
  const double sv = smooth_value_of(o);
  std::vector<double> correct(correct_in.begin(), correct_in.end()), total(total_in.begin(), total_in.end());
  std::vector<double> prec(N, 0.0);  // percent, as sacreBLEU
  double smooth_mteval = 1.0;
  size_t eff_order = N;
  for (size_t n = 1; n <= N; ++n) {
    if (o.smooth_method == "add-k" && n > 1) {
      correct[n - 1] += sv;
      total[n - 1] += sv;
    }
    if (total[n - 1] == 0) break;
    if (o.effective_order) eff_order = n;
    if (correct[n - 1] == 0) {
      if (o.smooth_method == "exp") {
        smooth_mteval *= 2;
        prec[n - 1] = 100.0 / (smooth_mteval * total[n - 1]);
      } else if (o.smooth_method == "floor") {
        prec[n - 1] = 100.0 * sv / total[n - 1];
      }
    } else {
      prec[n - 1] = 100.0 * correct[n - 1] / total[n - 1];
    }
  }
  double log_sum = 0;
  for (size_t n = 0; n < eff_order; ++n) log_sum += my_log(prec[n]);
  s.bleu = s.brevity_penalty * std::exp(log_sum / double(eff_order));
  for (size_t n = 0; n < N; ++n) s.precision[n] = prec[n] / 100.0;
  return s;
}

std::vector<BleuSegmentStats> bleu_segment_stats(const std::vector<std::string>& hypotheses,
                                                 const std::vector<std::vector<std::string>>& reference_streams,
                                                 const BleuOptions& o) {
  check_bleu_options(o);
  if (reference_streams.empty()) throw std::invalid_argument("corpus_bleu: no reference stream");
  for (const auto& refs : reference_streams)
    if (refs.size() != hypotheses.size())
      throw std::invalid_argument("corpus_bleu: " + std::to_string(hypotheses.size()) + " hypotheses but " +
                                  std::to_string(refs.size()) + " references");
  const size_t N = static_cast<size_t>(o.max_ngram_order);
  std::vector<BleuSegmentStats> out(hypotheses.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    BleuSegmentStats& st = out[i];
    st.correct.assign(N, 0);
    st.total.assign(N, 0);
    // The references: n-gram counts merged by maximum, the length closest to the hypothesis's
    // (the shorter one on a tie), as sacreBLEU's _extract_reference_info / _get_closest_ref_len.
    std::vector<Counts> ref_counts(N);
    std::vector<int64_t> ref_lens;
    for (const auto& refs : reference_streams) {
      const auto toks = py_split(preprocess(refs[i], o));
      ref_lens.push_back(static_cast<int64_t>(toks.size()));
      for (size_t n = 1; n <= N; ++n)
        for (const auto& [g, c] : ngram_counts(toks, n)) {
          int64_t& m = ref_counts[n - 1][g];
          m = std::max(m, c);
        }
    }
    const auto hyp = py_split(preprocess(hypotheses[i], o));
    const auto hyp_len = static_cast<int64_t>(hyp.size());
    int64_t closest_diff = -1, closest_len = -1;
    for (int64_t rl : ref_lens) {
      const int64_t diff = std::llabs(hyp_len - rl);
      if (closest_diff == -1 || diff < closest_diff) closest_diff = diff, closest_len = rl;
      else if (diff == closest_diff && rl < closest_len) closest_len = rl;
    }
    st.hypothesis_length = hyp_len;
    st.reference_length = closest_len;
    for (size_t n = 1; n <= N; ++n)
      for (const auto& [g, c] : ngram_counts(hyp, n)) {
        st.total[n - 1] += c;
        auto it = ref_counts[n - 1].find(g);
        if (it != ref_counts[n - 1].end()) st.correct[n - 1] += std::min(c, it->second);
      }
  }
  return out;
}

BleuScore corpus_bleu_multi(const std::vector<std::string>& hypotheses,
                            const std::vector<std::vector<std::string>>& reference_streams, const BleuOptions& o) {
  const size_t N = static_cast<size_t>(std::max(o.max_ngram_order, 0));
  std::vector<int64_t> correct(N, 0), total(N, 0);
  int64_t sys_len = 0, ref_len = 0;
  for (const auto& st : bleu_segment_stats(hypotheses, reference_streams, o)) {
    sys_len += st.hypothesis_length;
    ref_len += st.reference_length;
    for (size_t n = 0; n < N; ++n) {
      correct[n] += st.correct[n];
      total[n] += st.total[n];
    }
  }
  BleuScore s = bleu_from_counts(correct, total, sys_len, ref_len, o);
  s.signature = bleu_signature(o, static_cast<int>(reference_streams.size()));
  return s;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                      const BleuOptions& o) {
  return corpus_bleu_multi(hypotheses, std::vector<std::vector<std::string>>{references}, o);
}

// ---- ROUGE ----

std::string porter_stem(const std::string& word) {
  // A stemmer object is not thread-safe: one per thread.
  struct Free {
    void operator()(sb_stemmer* p) const { sb_stemmer_delete(p); }
  };
  thread_local std::unique_ptr<sb_stemmer, Free> st(sb_stemmer_new("porter", "UTF_8"));
  if (!st) throw std::runtime_error("porter_stem: libstemmer has no 'porter' algorithm");
  const sb_symbol* out =
      sb_stemmer_stem(st.get(), reinterpret_cast<const sb_symbol*>(word.data()), static_cast<int>(word.size()));
  if (!out) throw std::runtime_error("porter_stem: out of memory");
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(sb_stemmer_length(st.get())));
}

std::vector<std::string> rouge_tokens(const std::string& text, bool stem) {
  // text.lower(), then [^a-z0-9]+ -> " ". Python's lower() maps exactly two non-ASCII characters to
  // ASCII letters: U+0130 -> "i" U+0307 and U+212A (KELVIN SIGN) -> "k" (tested over every code point).
  std::vector<std::string> toks;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    toks.push_back(stem && cur.size() > 3 ? porter_stem(cur) : cur);
    cur.clear();
  };
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    const int32_t c = decode_at(text, i, &len);
    i += len;
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      cur += static_cast<char>(c);
    } else if (c >= 'A' && c <= 'Z') {
      cur += static_cast<char>(c - 'A' + 'a');
    } else if (c == 0x130) {
      cur += 'i';
      flush();  // the U+0307 that follows is a separator
    } else if (c == 0x212A) {
      cur += 'k';
    } else {
      flush();
    }
  }
  flush();
  // rouge-score keeps only tokens matching ^[a-z0-9]+$ after stemming. A Porter stemmer only removes
  // or rewrites suffixes of an [a-z0-9] word, so this should remove nothing; kept as a guard.
  toks.erase(std::remove_if(toks.begin(), toks.end(),
                            [](const std::string& t) {
                              return t.empty() || !std::all_of(t.begin(), t.end(), [](char c) {
                                       return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                                     });
                            }),
             toks.end());
  return toks;
}

namespace {

Prf prf(int64_t overlap, int64_t pred_total, int64_t target_total) {
  Prf s;
  s.precision = double(overlap) / double(std::max<int64_t>(pred_total, 1));
  s.recall = double(overlap) / double(std::max<int64_t>(target_total, 1));
  s.f1 = s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0.0;
  return s;
}

Prf rouge_n(const std::vector<std::string>& target, const std::vector<std::string>& pred, size_t n) {
  const Counts t = ngram_counts(target, n), p = ngram_counts(pred, n);
  int64_t inter = 0, tn = 0, pn = 0;
  for (const auto& [g, c] : t) {
    tn += c;
    auto it = p.find(g);
    if (it != p.end()) inter += std::min(c, it->second);
  }
  for (const auto& [g, c] : p) pn += c;
  return prf(inter, pn, tn);
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

RougePairScore rouge_pair(const std::string& target, const std::string& prediction, const RougeOptions& o) {
  const auto t = rouge_tokens(target, o.stem), p = rouge_tokens(prediction, o.stem);
  RougePairScore s;
  s.rouge1 = rouge_n(t, p, 1);
  s.rouge2 = rouge_n(t, p, 2);
  if (!t.empty() && !p.empty()) {
    const int64_t l = lcs_length(t, p);
    s.rougeL.precision = double(l) / double(p.size());
    s.rougeL.recall = double(l) / double(t.size());
    const double pr = s.rougeL.precision, rc = s.rougeL.recall;
    s.rougeL.f1 = pr + rc > 0 ? 2 * pr * rc / (pr + rc) : 0.0;
  }
  return s;
}

std::string rouge_signature(const RougeOptions& o) {
  return std::string("tok:rouge-score|stem:") + (o.stem ? "porter" : "no") +
         "|rougeL:sentence|agg:mean|version:cellscope-port-rouge-score";
}

RougeScore corpus_rouge(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                        const RougeOptions& o) {
  if (hypotheses.size() != references.size())
    throw std::invalid_argument("corpus_rouge: " + std::to_string(hypotheses.size()) + " hypotheses but " +
                                std::to_string(references.size()) + " references");
  RougeScore s;
  s.signature = rouge_signature(o);
  if (hypotheses.empty()) return s;
  double r1 = 0, r2 = 0, rl = 0;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const RougePairScore p = rouge_pair(references[i], hypotheses[i], o);
    r1 += p.rouge1.f1;
    r2 += p.rouge2.f1;
    rl += p.rougeL.f1;
  }
  const double n = double(hypotheses.size());
  s.rouge1 = 100.0 * r1 / n;
  s.rouge2 = 100.0 * r2 / n;
  s.rougeL = 100.0 * rl / n;
  return s;
}

}  // namespace cs
