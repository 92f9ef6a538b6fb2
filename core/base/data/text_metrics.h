// Evaluation metrics of the seq2seq task, computed as the tools papers report them with:
//  - BLEU as sacreBLEU 2.6.0 computes it by default (tokenize_13a, case-sensitive, smoothing 'exp',
//    no effective order), with sacreBLEU's signature string;
//  - ROUGE-1/2/L F1 as google-research's rouge-score (its tokenizer; optional Porter stemming with
//    Snowball's "porter" from libstemmer), the corpus figure the mean of the per-pair F1.
// Ports of the rules, not copies; what is ported from which version and the known differences:
// core/model/tasks/SEQ2SEQ_NOTES.md, "Metrics". Checked against the tools' published test vectors,
// NLTK and Python (tests/core/test_text_metrics.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cs {

// The sacreBLEU version whose BLEU rules are ported; the signature's version field says
// "cellscope-port-2.6.0" so that nobody mistakes our number for the Python tool's output.
extern const char* const kSacrebleuPortedVersion;

// Whitespace-separated words (Python's str.split(): ASCII and Unicode white space), unchanged.
// For word counts (lead-baseline length), not for scoring.
std::vector<std::string> whitespace_words(const std::string& text);

// One line of a plain-text file for outside scorers (decode --hyp-out / --ref-out): the text with
// every CR and LF replaced by a space, so that line i of the file is pair i.
std::string scorer_line(const std::string& text);

// Python's str.lower() of a UTF-8 string: Unicode's full default lower-casing through ICU (the root
// locale), as the word tokenizer lower-cases: U+0130 -> "i" U+0307, and the Final_Sigma rule (a capital
// sigma ending a word lower-cases to U+03C2: "ΟΔΟΣ" -> "οδος", as sacreBLEU's -lc and rouge-score have it).
// Invalid UTF-8 bytes pass through.
std::string unicode_lower(const std::string& text);

// sacreBLEU's "13a" tokenizer (mteval-v13a.pl): drops "<skipped>", joins "-\n", unescapes
// &quot; &amp; &lt; &gt;, splits punctuation and symbols off, '.' and ',' unless between digits,
// '-' after a digit; tokens joined by single spaces.
std::string tokenize_13a(const std::string& line);

struct BleuOptions {
  bool lowercase = false;             // sacreBLEU -lc (signature case:lc); default case:mixed
  std::string tokenize = "13a";       // "13a" | "none" (split on white space only)
  std::string smooth_method = "exp";  // "exp" | "none" | "floor" | "add-k"
  double smooth_value = -1;           // floor / add-k value; < 0: sacreBLEU's default (0.1 / 1)
  bool effective_order = false;       // sacreBLEU's effective_order (for sentence BLEU)
  int max_ngram_order = 4;
};

struct BleuScore {
  double bleu = 0;  // 0..100
  double brevity_penalty = 0, length_ratio = 0;
  std::vector<double> precision;        // per order, 0..1 (after smoothing, as sacreBLEU reports them / 100)
  std::vector<int64_t> counts, totals;  // clipped matches and hypothesis n-grams per order, corpus sums
  int64_t hypothesis_length = 0, reference_length = 0;  // tokens; reference: the closest per segment
  std::string signature;  // e.g. nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:cellscope-port-2.6.0
};

// The signature sacreBLEU 2.x prints for these options and `nrefs` references per segment.
std::string bleu_signature(const BleuOptions& o, int nrefs = 1);

// BLEU from corpus statistics (sacreBLEU's BLEU.compute_bleu): correct/total per n-gram order.
BleuScore bleu_from_counts(std::vector<int64_t> correct, std::vector<int64_t> total, int64_t sys_len, int64_t ref_len,
                           const BleuOptions& o = {});

// One segment's statistics, as sacreBLEU's BLEU._extract_corpus_statistics gives them per segment:
// clipped n-gram matches and hypothesis n-grams per order, the hypothesis's length and the closest
// reference length. Corpus BLEU is bleu_from_counts of their sums, so a resample of the segments (the
// paired bootstrap of sweep tables, SWEEP_NOTES.md "Significance") is scored by summing its segments.
struct BleuSegmentStats {
  std::vector<int64_t> correct, total;  // per order 1..max_ngram_order
  int64_t hypothesis_length = 0, reference_length = 0;
};
// The statistics of every segment (the same arguments and errors as corpus_bleu_multi).
std::vector<BleuSegmentStats> bleu_segment_stats(const std::vector<std::string>& hypotheses,
                                                 const std::vector<std::vector<std::string>>& reference_streams,
                                                 const BleuOptions& o = {});

// Corpus BLEU of detokenised hypotheses against one or more reference streams (reference_streams[k][i]
// is the k-th reference of hypothesis i). Throws std::invalid_argument when a stream's length differs
// from the hypotheses' or an option is unknown.
// (A name of its own: with one overload, a braced list of two strings would also fit the vector of
// vectors through its iterator-pair constructor.)
BleuScore corpus_bleu_multi(const std::vector<std::string>& hypotheses,
                            const std::vector<std::vector<std::string>>& reference_streams, const BleuOptions& o = {});
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                      const BleuOptions& o = {});

// ---- ROUGE (rouge-score) ----

// Snowball's "porter" stemmer (libstemmer) of one lower-case ASCII word.
std::string porter_stem(const std::string& word);

// rouge-score's tokenizer: lower-case, every run of characters outside [a-z0-9] a separator, tokens
// longer than 3 characters Porter-stemmed when `stem`.
std::vector<std::string> rouge_tokens(const std::string& text, bool stem);

struct RougeOptions {
  bool stem = false;
};  // rouge-score's use_stemmer (default off, as there)

struct Prf {
  double precision = 0, recall = 0, f1 = 0;
};  // 0..1
struct RougePairScore {
  Prf rouge1, rouge2, rougeL;
};
// rouge-score's RougeScorer.score(target, prediction) for rouge1, rouge2, rougeL (sentence-level LCS).
RougePairScore rouge_pair(const std::string& target, const std::string& prediction, const RougeOptions& o = {});

struct RougeScore {
  double rouge1 = 0, rouge2 = 0, rougeL = 0;  // F1, mean over pairs, 0..100
  std::string signature;                      // e.g. tok:rouge-score|stem:no|agg:mean|version:cellscope-port-...
};
std::string rouge_signature(const RougeOptions& o);
RougeScore corpus_rouge(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                        const RougeOptions& o = {});

}  // namespace cs
