// Corpus BLEU and ROUGE-1/2/L F1 (core/base/data/text_metrics.h): hand-computed cases (the
// arithmetic is written beside each check) and BLEU against an independent implementation,
// NLTK's corpus_bleu (Debian's python3-nltk, installed by packaging/setup.sh). The NLTK check
// fails, it does not skip, when /usr/bin/python3 cannot import nltk.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "data/seq2seq_data.h"
#include "data/text_metrics.h"
#include "harness.h"

namespace test_text_metrics {  // this file's own names in a unity build (tests/README.md)

namespace {

using cs::corpus_bleu;
using cs::corpus_rouge;

TEST(TextMetrics, tokensAreWhitespaceWordsLowerCased) {
  const std::vector<std::string> want = {"the", "cat,", "sat", "é"};
  ASSERT_EQ(cs::metric_tokens("  The\tCAT,\n sat  é "), want);
  ASSERT_TRUE(cs::metric_tokens(" \t\n").empty());
}

TEST(TextMetrics, bleuIdenticalIs100) {
  const auto b = corpus_bleu({"the cat sat on the mat"}, {"the cat sat on the mat"});
  ASSERT_NEAR(b.bleu, 100.0, 1e-9);
  ASSERT_NEAR(b.brevity_penalty, 1.0, 1e-12);
  ASSERT_EQ(b.hypothesis_length, 6);
  ASSERT_EQ(b.reference_length, 6);
}

TEST(TextMetrics, bleuBrevityPenalty) {
  // hyp "the cat sat on" (c = 4), ref "the cat sat on the mat" (r = 6):
  // p1 = 4/4, p2 = 3/3, p3 = 2/2, p4 = 1/1 -> geometric mean 1; BP = exp(1 - 6/4) = exp(-0.5).
  const auto b = corpus_bleu({"the cat sat on"}, {"the cat sat on the mat"});
  ASSERT_NEAR(b.brevity_penalty, std::exp(-0.5), 1e-12);
  ASSERT_NEAR(b.bleu, 100.0 * std::exp(-0.5), 1e-9);  // 60.653...
  ASSERT_NEAR(b.length_ratio, 4.0 / 6.0, 1e-12);
}

TEST(TextMetrics, bleuCorpusSumsCountsBeforeDividing) {
  // pair 1: hyp "a b c d e", ref "a b c d f": matches 4/5, 3/4, 2/3, 1/2.
  // pair 2: hyp "x y z w",   ref "x y z w":   matches 4/4, 3/3, 2/2, 1/1.
  // corpus: p1 = 8/9, p2 = 6/7, p3 = 4/5, p4 = 2/3; c = r = 9 -> BP = 1;
  // BLEU = (8/9 * 6/7 * 4/5 * 2/3)^(1/4) = (384/945)^(1/4) = 0.79841...
  const auto b = corpus_bleu({"a b c d e", "x y z w"}, {"a b c d f", "x y z w"});
  ASSERT_NEAR(b.precision[0], 8.0 / 9, 1e-12);
  ASSERT_NEAR(b.precision[1], 6.0 / 7, 1e-12);
  ASSERT_NEAR(b.precision[2], 4.0 / 5, 1e-12);
  ASSERT_NEAR(b.precision[3], 2.0 / 3, 1e-12);
  ASSERT_NEAR(b.brevity_penalty, 1.0, 1e-12);
  ASSERT_NEAR(b.bleu, 100.0 * std::pow(384.0 / 945.0, 0.25), 1e-9);
  // The mean of the sentence BLEUs would differ: pair 1 alone is (4/5*3/4*2/3*1/2)^(1/4) = 0.5623.
  ASSERT_GT(std::fabs(b.bleu - 100.0 * (std::pow(0.2, 0.25) + 1.0) / 2), 1.0);
}

TEST(TextMetrics, bleuClipsRepeatedWords) {
  // hyp "the the the the", ref "the cat": "the" counts at most once -> p1 = 1/4;
  // no bigram matches -> BLEU 0 (no smoothing).
  const auto b = corpus_bleu({"the the the the"}, {"the cat"});
  ASSERT_NEAR(b.precision[0], 0.25, 1e-12);
  ASSERT_EQ(b.precision[1], 0.0);
  ASSERT_EQ(b.bleu, 0.0);
}

TEST(TextMetrics, bleuEdgeCases) {
  ASSERT_EQ(corpus_bleu({}, {}).bleu, 0.0);
  ASSERT_EQ(corpus_bleu({""}, {"a b c d"}).bleu, 0.0);
  ASSERT_EQ(corpus_bleu({""}, {"a b c d"}).brevity_penalty, 0.0);
  ASSERT_THROW(corpus_bleu({"a"}, {}), std::invalid_argument);
  // Longer hypothesis than reference: BP = 1 (the precisions pay instead).
  const auto b = corpus_bleu({"a b c d e"}, {"a b c d"});
  ASSERT_EQ(b.brevity_penalty, 1.0);
  // p1 = 4/5, p2 = 3/4, p3 = 2/3, p4 = 1/2 -> (4/5*3/4*2/3*1/2)^(1/4) = 0.2^(1/4).
  ASSERT_NEAR(b.bleu, 100.0 * std::pow(0.2, 0.25), 1e-9);
}

TEST(TextMetrics, rougeHandComputed) {
  // Pair 1: hyp "the cat was found under the bed" (7 tokens), ref "the cat was under the bed" (6).
  //  ROUGE-1: overlap the x2, cat, was, under, bed = 6; P = 6/7, R = 6/6; F = 2PR/(P+R) = 12/13.
  //  ROUGE-2: hyp bigrams 6, ref bigrams 5, common {the cat, cat was, under the, the bed} = 4;
  //           P = 4/6, R = 4/5; F = 2*(2/3)*(4/5)/(2/3+4/5) = 16/22.
  //  ROUGE-L: LCS "the cat was under the bed" = 6; P = 6/7, R = 1; F = 12/13.
  // Pair 2: hyp "a b", ref "c d": all 0.  Means over the 2 pairs, times 100.
  const auto r = corpus_rouge({"the cat was found under the bed", "a b"}, {"the cat was under the bed", "c d"});
  ASSERT_NEAR(r.rouge1, 100.0 * (12.0 / 13) / 2, 1e-9);
  ASSERT_NEAR(r.rouge2, 100.0 * (16.0 / 22) / 2, 1e-9);
  ASSERT_NEAR(r.rougeL, 100.0 * (12.0 / 13) / 2, 1e-9);
}

TEST(TextMetrics, rougeLUsesTheLongestCommonSubsequence) {
  // hyp "a b c d e", ref "a x c y e z": LCS = "a c e" = 3 (not contiguous); P = 3/5, R = 3/6,
  // F = 2*(3/5)*(1/2)/(3/5+1/2) = 0.6/1.1 = 6/11. ROUGE-1 has the same 3 matches: 6/11 too.
  // ROUGE-2: no common bigram -> 0.
  const auto r = corpus_rouge({"a b c d e"}, {"a x c y e z"});
  ASSERT_NEAR(r.rougeL, 100.0 * 6 / 11, 1e-9);
  ASSERT_NEAR(r.rouge1, 100.0 * 6 / 11, 1e-9);
  ASSERT_EQ(r.rouge2, 0.0);
  // Order matters for L but not for 1: hyp "e d c b a" vs ref "a b c d e": LCS 1 -> F = 1/5;
  // ROUGE-1 = 1.
  const auto q = corpus_rouge({"e d c b a"}, {"a b c d e"});
  ASSERT_NEAR(q.rougeL, 20.0, 1e-9);
  ASSERT_NEAR(q.rouge1, 100.0, 1e-9);
  ASSERT_EQ(corpus_rouge({""}, {"a"}).rouge1, 0.0);
  ASSERT_THROW(corpus_rouge({"a", "b"}, {"a"}), std::invalid_argument);
}

TEST(TextMetrics, leadBaselineTakesTheFirstWords) {
  ASSERT_EQ(cs::lead_baseline("  one two\tthree\nfour  ", 3), "one two three");
  ASSERT_EQ(cs::lead_baseline("one two", 5), "one two");
  ASSERT_EQ(cs::lead_baseline("one two", 0), "");
}

TEST(TextMetrics, bleuShortHypothesesCountNoNgrams) {
  // hyp 1 "a b c d" / ref "a b c d": 4/3/2/1 n-grams, all matching.
  // hyp 2 "x y" / ref "x y z w": 2 unigrams (2 match), 1 bigram (matches), no 3- or 4-gram.
  // p1 = 6/6, p2 = 4/4, p3 = 2/2, p4 = 1/1; c = 6, r = 8 -> BP = exp(1 - 8/6) = exp(-1/3).
  // (NLTK would divide p3 by 2 + 1 and p4 by 1 + 1: the max(1, count) of each short sentence.)
  const auto b = corpus_bleu({"a b c d", "x y"}, {"a b c d", "x y z w"});
  ASSERT_NEAR(b.precision[2], 1.0, 1e-12);
  ASSERT_NEAR(b.precision[3], 1.0, 1e-12);
  ASSERT_NEAR(b.bleu, 100.0 * std::exp(-1.0 / 3), 1e-9);
}

// ---- BLEU against NLTK ----

std::string json_lists(const std::vector<std::string>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : v) a.push_back(cs::metric_tokens(s));
  return a.dump();
}

// NLTK's corpus_bleu (4-gram, uniform weights, no smoothing; one reference each) * 100.
double nltk_bleu(const std::vector<std::string>& hyp, const std::vector<std::string>& ref) {
  const std::string dir = cstest::temp_dir();
  static int n = 0;
  const std::string in = dir + "/nltk_in_" + std::to_string(++n) + ".json";
  const std::string out = in + ".out";
  cstest::write_text(in, "{\"hyp\": " + json_lists(hyp) + ", \"ref\": " + json_lists(ref) + "}");
  const std::string script =
      "import json, sys, warnings\n"
      "warnings.simplefilter('ignore')\n"
      "from nltk.translate.bleu_score import corpus_bleu\n"
      "d = json.load(open(sys.argv[1]))\n"
      "print(repr(100.0 * corpus_bleu([[r] for r in d['ref']], d['hyp'])))\n";
  cstest::write_text(dir + "/nltk_bleu.py", script);
  const std::string cmd = "/usr/bin/python3 " + dir + "/nltk_bleu.py " + in + " > " + out + " 2> " + out + ".err";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << "running NLTK failed (python3-nltk is required; packaging/setup.sh installs it): "
                   << cstest::read_text(out + ".err");
  if (rc != 0) return -1;
  return std::stod(cstest::read_text(out));
}

TEST(TextMetrics, bleuMatchesNltk) {
  // Random corpora over a small vocabulary, so that every n-gram order has some but not all
  // matches, with hypotheses shorter overall (a brevity penalty) or longer.
  static const char* words[] = {"the", "a", "cat", "dog", "sat", "on", "mat", "and", "ran", "away"};
  for (unsigned seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    std::vector<std::string> hyp, ref;
    for (int i = 0; i < 40; ++i) {
      std::string r, h;
      const int rn = 4 + static_cast<int>(rng() % 10);
      std::vector<std::string> rw;
      for (int k = 0; k < rn; ++k) rw.push_back(words[rng() % 10]);
      // The hypothesis: the reference with words dropped or replaced, sometimes extended.
      std::vector<std::string> hw;
      for (const auto& w : rw) {
        const unsigned u = rng() % 10;
        if (u == 0 && seed != 3) continue;      // drop (seed 1, 2: shorter, BP < 1)
        hw.push_back(u < 3 ? words[rng() % 10] : w);
      }
      if (seed == 3) hw.push_back("extra");  // seed 3: longer, BP = 1
      // At least 4 tokens: NLTK divides by max(1, hypothesis n-grams) per sentence, so a hypothesis
      // under n tokens adds 1 to its n-gram denominator; Papineni / multi-bleu.perl / sacrebleu (and
      // we) add 0 (see bleuShortHypothesesCountNoNgrams).
      if (hw.size() < 4) hw = rw;
      for (const auto& w : rw) r += (r.empty() ? "" : " ") + w;
      for (const auto& w : hw) h += (h.empty() ? "" : " ") + w;
      ref.push_back(r);
      hyp.push_back(h);
    }
    const auto ours = corpus_bleu(hyp, ref);
    ASSERT_GT(ours.bleu, 0.0);
    if (seed != 3) { ASSERT_LT(ours.brevity_penalty, 1.0) << "seed " << seed; }
    ASSERT_NEAR(ours.bleu, nltk_bleu(hyp, ref), 1e-9) << "seed " << seed;
  }
  // The hand-computed cases, through NLTK as well: brevity penalty, corpus sums, clipping.
  ASSERT_NEAR(corpus_bleu({"the cat sat on"}, {"the cat sat on the mat"}).bleu,
              nltk_bleu({"the cat sat on"}, {"the cat sat on the mat"}), 1e-9);
  ASSERT_NEAR(corpus_bleu({"a b c d e", "x y z w"}, {"a b c d f", "x y z w"}).bleu,
              nltk_bleu({"a b c d e", "x y z w"}, {"a b c d f", "x y z w"}), 1e-9);
  // No 4-gram match anywhere: 0 (no smoothing). NLTK 3.8 replaces the zero precision by the
  // smallest double and returns ~1e-76 (with a warning): 0 within any tolerance.
  const std::vector<std::string> h0 = {"a b c x d e f", "p q r"}, r0 = {"a b c y d e f", "p q s"};
  ASSERT_GT(corpus_bleu(h0, r0).precision[2], 0.0);
  ASSERT_EQ(corpus_bleu(h0, r0).precision[3], 0.0);
  ASSERT_EQ(corpus_bleu(h0, r0).bleu, 0.0);
  ASSERT_NEAR(nltk_bleu(h0, r0), 0.0, 1e-9);
}

}  // namespace

}  // namespace test_text_metrics
