// Word-level corpora for word_lm: PTB word format (ptb.{train,valid,test}.txt,
// one sentence per line, <unk> already in the data, each line end becomes <eos>)
// and plain text tokenised with data/tokenizer.h (dataset.tokenizer). The vocabulary is built from the
// train split, ordered by frequency, truncated by dataset.vocab_size / min_count;
// id 0 is <unk> (cs::Vocab), every dropped word maps to it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/common_options.h"
#include "config/json.h"
#include "data/tokenizer.h"
#include "data/vocab.h"

namespace cs {

// dataset.eos of plain text: where <eos> tokens go.
enum class WordEos { Paragraph, Line, None };
constexpr EnumNames<WordEos, 3> enum_names(WordEos) {
  return {{{WordEos::Paragraph, "paragraph"}, {WordEos::Line, "line"}, {WordEos::None, "none"}}};
}

// How word_lm reads a corpus: its dataset.* options beyond the common ones. The member
// initialisers are the only defaults; tasks/word_lm.h's WordLMOptions derives from this struct
// and its table binds the keys.
struct WordCorpusOptions {
  int64_t vocab_size = 0;                // dataset.vocab_size
  int64_t min_count = 1;                 // dataset.min_count
  bool lowercase = true;                 // dataset.lowercase
  Tokenizer tokenizer = Tokenizer::Icu;  // dataset.tokenizer (data/tokenizer.h); old runs: legacy
  std::string locale;                    // dataset.locale: the language of lower-casing ("" = root)
  WordEos eos = WordEos::Paragraph;      // dataset.eos
};

struct WordCorpus {
  std::vector<int32_t> train, valid, test;
  Vocab vocab;
  std::vector<int64_t> train_counts;  // per id, occurrences in the train split (after mapping to <unk>)
  std::string source;
  DatasetFormat format = DatasetFormat::Text;  // ptb_word or text
};

// `ds`: the common "dataset" options (read_dataset_options); `wo`: word_lm's (WordLMOptions of a
// resolved config). The format is ptb_word, text or auto (the registry's word_lm patterns).
// With `fixed_vocab` (a resumed run) its ids are used. Text must be UTF-8: a file that is not
// (e.g. Latin-1) is refused with "<file>:<line>:<column>: invalid UTF-8 ..." before anything is
// trained (its vocabulary could not be written as UTF-8 and read back).
WordCorpus load_word_corpus(const DatasetOptions& ds, const WordCorpusOptions& wo, const Vocab* fixed_vocab = nullptr);

// The word LM's tokenizer: dataset.tokenizer's `rules` (legacy: the word-LM rule set) and
// dataset.lowercase.
TokenizerOptions word_tokenizer_options(Tokenizer rules, bool lowercase, const std::string& locale = "");

// Tokens of a plain text as the word LM reads it: data/tokenizer.h words (word_tokenizer_options)
// and "<eos>" where `eos` says: "paragraph" (after each run of non-empty lines), "line" (after
// each non-empty line) or "none". With `seed` (a generation seed, text still being written) the
// <eos> that would close the last line or paragraph is added only when the text ends with a line
// break ("line") or never ("paragraph": a blank line inside the seed still ends one).
std::vector<std::string> word_text_tokens(const std::string& text, const TokenizerOptions& to, WordEos eos,
                                          bool seed = false);

// Tokens of one PTB-format text: whitespace-separated words, "<eos>" after every line.
std::vector<std::string> ptb_tokens(const std::string& text);

}  // namespace cs
