// A Children's-Book-Test-style cloze set built from a plain-text book by CBT's own
// construction rule (Hill et al. 2015): 20 consecutive sentences of context, the 21st
// sentence with one word replaced by XXXXX, and 10 candidates of the answer's word class
// drawn from the context. Word classes from WordNet (data/wordnet.h): common nouns (CN)
// and named entities (NE). Sentence splitting, tokenisation, the class rules, the split
// and the limits are documented in datasets/README.md ("Cloze: CBT-style sets").
//
// Output: the CBT text format (the format the cloze loader, data/cbt_format.cpp, reads): one directory
// with cbt_<CLS>_train.txt, cbt_<CLS>_valid.txt, cbt_<CLS>_test.txt and build.json (the
// options and counts), written atomically (a temporary directory renamed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/json.h"

namespace cs {

class WordNet;

struct CbtBuildOptions {
  std::string word_class = "CN";  // "CN" (common nouns) | "NE" (named entities)
  uint64_t seed = 18;             // which word is blanked and which candidates are drawn
  double valid_fraction = 0.1;    // of the book's sentences, contiguous: train, valid, test
  double test_fraction = 0.1;
  int64_t context_sentences = 20;
  int64_t candidates = 10;  // answer included
};

// Counts per split. A "window" = a query sentence with its full context inside the split.
struct CbtSplitStats {
  int64_t sentences = 0;  // sentences of the split
  int64_t windows = 0;
  int64_t questions = 0;
  int64_t no_class_word = 0;           // the query sentence has no word of the class
  int64_t skipped_not_in_context = 0;  // it has some, but none occurs (as the class) in the context
  int64_t skipped_few_candidates = 0;  // fewer than `candidates` distinct words of the class in the context
  json to_json() const;
};

struct CbtQuestion {
  std::vector<std::vector<std::string>> context;  // 20 tokenised sentences
  std::vector<std::string> query;                 // with exactly one "XXXXX"
  std::string answer;
  std::vector<std::string> candidates;  // sorted; the answer exactly once
  int64_t sentence = 0;                 // index of the query sentence in the book
};

struct CbtBuild {
  std::vector<CbtQuestion> train, valid, test;
  CbtSplitStats train_stats, valid_stats, test_stats;
  int64_t sentences = 0, tokens = 0;
  json stats_json() const;  // {"sentences", "tokens", "train": {...}, "valid": ..., "test": ...}
};

// The book as tokenised sentences (rules in datasets/README.md): paragraphs at blank lines,
// "CHAPTER ..." heading paragraphs dropped, cs::tokenize with the legacy word-LM rules (case
// kept, punctuation tokens, inner ' and - kept), a possessive "'s" split off ("Ahab's" -> "Ahab" "'s"), the titles
// Mr. Mrs. Dr. St. kept as one token, a sentence ending after . ! ? (and any closing quotes
// or brackets right after it) or at a paragraph end. Sentences without a word are dropped.
std::vector<std::vector<std::string>> cbt_sentences(const std::string& text);

// The word-class of token i of a sentence: 'C' common noun, 'N' named entity, 0 neither.
// CN: a lower-case token that is WordNet::common_noun. NE: a token written Xxxx (one upper-
// case letter, then >= 1 lower-case letters) that is not the sentence's first word and whose
// lower-case form is not WordNet::common_word.
char cbt_word_class(const std::vector<std::string>& sentence, size_t i, const WordNet& wn);

// The questions of every split (deterministic for given sentences, WordNet and options).
CbtBuild build_cbt_questions(const std::vector<std::vector<std::string>>& sentences, const WordNet& wn,
                             const CbtBuildOptions& o);

// The CBT text of questions: 21 numbered lines each, a blank line after each question.
std::string cbt_text(const std::vector<CbtQuestion>& questions);

// Builds the set from the book at `book_path` into `out_dir`, atomically: everything is
// written into a temporary sibling directory that is renamed to `out_dir` at the end; on
// any error the temporary directory is removed and `out_dir` is left as it was. A split
// without a single question is an error (the book is too short). `source_name` is recorded
// in build.json. Returns the counts.
CbtBuild build_cbt_dataset(const std::string& book_path, const std::string& wordnet_dir, const std::string& out_dir,
                           const CbtBuildOptions& o, const std::string& source_name = "");

// The file names inside a built directory.
std::string cbt_file_name(const std::string& word_class, const std::string& split);

// "" when `dir` is absent, empty, or an earlier build of this builder (only build.json, written by
// a "cellscope cbt" builder, and cbt_<class>_<split>.txt files): what build_cbt_dataset may replace.
// Otherwise why not ("holds 'notes.txt', which no build of Cellscope's makes").
std::string not_an_earlier_cbt_build(const std::string& dir);

// A manifest entry with "obtain": "build" (datasets/manifest.json: its "build" object names
// the builder "cbt", the book "from" (a manifest dataset), "class", "seed", fractions):
// builds it into data_cache_dir()/<path> unless already complete with the same builder version
// and options (build.json; `force`: rebuild).
// Errors name what is missing and the command that fetches/installs it.
json build_manifest_dataset(const json& manifest, const json& entry, bool force = false);

}  // namespace cs
