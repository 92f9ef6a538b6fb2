// Sequence-to-sequence datasets: source/target text pairs per split.
// Formats (dataset.format; documented in datasets/README.md, section "Sequence to sequence"):
//   "parallel"  : a directory with one sentence per line, a source and a target file per split:
//                 <dir>/{train,valid,test}.<src> and .<tgt> (dataset.source_lang / target_lang,
//                 default "de" / "en": IWSLT14 De-En after the usual preprocessing).
//   "gigaword"  : Gigaword's common distribution (Rush et al. 2015 preprocessing): a directory with
//                 {train,valid,test}.article.txt and {train,valid,test}.title.txt (one pair per line).
//   "headlines" : headline generation from the SpamAssassin mails (the bundled spam-assassin.jsonl):
//                 source = the opening of the body, target = the cleaned Subject.
// Bad input: UserError naming file:line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/common_options.h"
#include "config/json.h"
#include "data/tokenizer.h"

namespace cs {

struct TextPair {
  std::string source, target;
};
struct Seq2SeqSplits {
  std::vector<TextPair> train, valid, test;
  std::string description;
};

// The "lead" baseline: the first n words of the source (words = whitespace-separated tokens,
// joined by one space).
std::string lead_baseline(const std::string& source, int64_t n_words);

// ---- additional members (beyond the h3<->h4 contract) ----

// Options of the "headlines" builder.
struct HeadlineOptions {
  int64_t source_words = 40;             // the first N words of the body (dataset.source_words)
  int64_t min_subject_words = 3;         // shorter cleaned subjects are dropped (dataset.min_subject_words)
  int64_t min_source_words = 5;          // shorter bodies are dropped (dataset.min_source_words)
  bool lowercase = true;                 // lower-case source and target (dataset.lowercase)
  Tokenizer tokenizer = Tokenizer::Icu;  // how: icu = NFC + Unicode, legacy = ASCII only (dataset.tokenizer)
  std::string locale;                    // dataset.locale: the language of lower-casing ("" = root)
};
struct Seq2SeqDataOptions {
  DatasetOptions dataset;                // name, path, format, ...
  std::string source_lang = "de";        // parallel: the source files' extension (dataset.source_lang)
  std::string target_lang = "en";        // parallel: the target files' extension (dataset.target_lang)
  bool lowercase = false;                // parallel, gigaword (headlines: HeadlineOptions::lowercase)
  Tokenizer tokenizer = Tokenizer::Icu;  // how dataset.lowercase lower-cases
  std::string locale;                    // in which language's rules ("" = root)
  HeadlineOptions headlines;             // headlines only
};
// Reads a (possibly partial) "dataset" section once: absent keys take their defaults; a key of the
// wrong type or range is a UserError naming dataset.<key>.
Seq2SeqDataOptions read_seq2seq_data_options(const json& dataset_section);

// The pairs the "dataset" section points at (formats: parallel, gigaword, headlines; auto tells
// them apart by the registry's seq2seq patterns). Bad input: UserError naming file:line.
Seq2SeqSplits load_seq2seq_dataset(const Seq2SeqDataOptions& o);

// Clean a Subject line: strips "Re:", "Fwd:", "Fw:", "AW:" prefixes (repeated, any case), list tags
// like "[ILUG]" / "[SAtalk]", and collapses whitespace. "" when nothing is left.
std::string clean_subject(const std::string& subject);
// Builds the headline pairs from a spam-assassin.jsonl file (records {"text", "label", "split"}).
// Keeps the jsonl's split; drops subjects shorter than min_subject_words and identical pairs.
Seq2SeqSplits load_headlines_jsonl(const std::string& jsonl_path, const HeadlineOptions& o);

// Loaders by format, for callers that have the files at hand (tests, the CLI).
Seq2SeqSplits load_parallel_dir(const std::string& dir, const std::string& source_lang, const std::string& target_lang,
                                bool lowercase = false, Tokenizer tokenizer = Tokenizer::Icu,
                                const std::string& locale = "");
Seq2SeqSplits load_gigaword_dir(const std::string& dir, bool lowercase = false, Tokenizer tokenizer = Tokenizer::Icu,
                                const std::string& locale = "");

// The lead baseline's default length: the mean number of whitespace words (whitespace_words,
// data/text_metrics.h) of the targets, rounded, at least 1 (1 for no pairs). One rule for `datasets show`, the seq2seq
// task's logged lead_* metrics and `decode`, so every lead figure is the same baseline.
int64_t default_lead_words(const std::vector<TextPair>& pairs);

}  // namespace cs
