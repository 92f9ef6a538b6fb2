// Evaluation metrics of the seq2seq task: corpus BLEU and ROUGE-1/2/L F1. Both score
// metric_tokens() of each string. BLEU is checked against NLTK (tests/core/test_text_metrics.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cs {

// The tokenisation both metrics use: whitespace-separated tokens, ASCII lower-cased.
// (The texts are compared after the task decodes subwords back to text.)
std::vector<std::string> metric_tokens(const std::string& text);

struct BleuScore { double bleu = 0, brevity_penalty = 0, length_ratio = 0; double precision[4] = {0,0,0,0};
                   int64_t hypothesis_length = 0, reference_length = 0; };
// Corpus BLEU (Papineni et al.), 4-gram, uniform weights, one reference per hypothesis, no smoothing; 0..100.
// precision[n] in 0..1 (clipped n-gram matches / hypothesis n-grams, summed over the corpus).
// Throws std::invalid_argument when the two lists differ in length.
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);

struct RougeScore { double rouge1 = 0, rouge2 = 0, rougeL = 0; };  // F1, mean over pairs, 0..100
RougeScore corpus_rouge(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);

}  // namespace cs
