// Princeton WordNet 3.0 as Debian's `wordnet-base` installs it (/usr/share/wordnet):
// the word classes of the CBT-style cloze builder (data/cbt_build.h) and the word-class
// LM of the cloze re-ranker (tasks/cloze_rerank.h). Only the database files are read
// (index.*, data.*, *.exc, cntlist.rev); the rules built on them are documented in
// datasets/README.md ("Cloze") and below.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cs {

// Lookups are memoised (common_noun, common_word): one WordNet per thread.
class WordNet {
 public:
  // $CELLSCOPE_WORDNET_DIR, else /usr/share/wordnet.
  static std::string default_dir();
  // Reads index.{noun,verb,adj,adv}, data.{noun,verb,adj,adv}, {noun,verb,adj,adv}.exc and
  // cntlist.rev from `dir` (the *.exc files and cntlist.rev may be absent: no exceptions,
  // no tag counts). A missing index/data file: UserError naming it and saying that
  // `apt-get install wordnet-base` installs WordNet (or set CELLSCOPE_WORDNET_DIR).
  static WordNet load(const std::string& dir);

  // WordNet's morphy for one part of speech ('n', 'v', 'a', 'r'): the base forms of the
  // lower-case `word` that are in index.<pos>: the word itself, its exception-list bases
  // (<pos>.exc) and, when it has no exception entry, the detachment rules (nouns: -s, -ses,
  // -xes, -zes, -ches, -shes, -men, -ies; verbs: -s, -ies, -es, -ed, -ing; adjectives: -er,
  // -est). As in WordNet's morph.c, no detachment for nouns ending in "ss" or of <= 2 letters.
  std::vector<std::string> morphy(const std::string& word, char pos) const;
  // The same forms before the index filter (what the tag-count test sums over: cntlist.rev
  // has senses, e.g. "must" as a verb, whose lemma index.verb does not list).
  std::vector<std::string> base_forms(const std::string& word, char pos) const;

  // The lemma is written in lower case in at least one synset of data.<pos> (so "whale" yes,
  // "ahab" no: WordNet spells that synset's word "Ahab").
  bool lowercase_lemma(const std::string& lemma, char pos) const;
  // SemCor tag count of the lemma as `pos` (sum over its senses in cntlist.rev; 0 if none).
  int64_t tag_count(const std::string& lemma, char pos) const;
  // Lexicographer file number (0..44, see lexnames(5WN)) of the first, most frequent sense
  // of the first base form of `word` as `pos`; -1 when `word` has no base form as `pos`.
  int first_lexfile(const std::string& word, char pos) const;

  // Cellscope's common-noun rule for a lower-case word form (see datasets/README.md):
  //   * only a-z letters, inner hyphens allowed, >= 3 letters;
  //   * a noun base form (morphy) of >= 3 letters written in lower case in a noun synset;
  //   * WordNet's sense-tagged corpus (cntlist.rev) does not tag its other-POS base forms
  //     (verb, adjective, adverb; the largest of the three) more often than its noun base
  //     forms: "white", "does", "being", "back" are not nouns here; 0 against 0 is a noun.
  bool common_noun(const std::string& lower) const;
  // Any base form of the lower-case word, in any part of speech, written in lower case in
  // some synset: the "common word" of the named-entity rule ("flask", "whale", "sir" yes;
  // "ahab", "queequeg" no).
  bool common_word(const std::string& lower) const;

 private:
  struct Pos {
    std::unordered_map<std::string, uint32_t> first_offset;         // index.<pos>: lemma -> first synset offset
    std::unordered_set<std::string> lower_lemmas;                   // written in lower case in data.<pos>
    std::unordered_map<uint32_t, int> lexfile;                      // data.<pos>: offset -> lexicographer file
    std::unordered_map<std::string, std::vector<std::string>> exc;  // <pos>.exc: inflected -> bases
    std::unordered_map<std::string, int64_t> tags;                  // cntlist.rev: lemma -> tag count
  };
  static int pos_index(char pos);  // n 0, v 1, a 2, r 3; UserError otherwise
  Pos pos_[4];
  mutable std::unordered_map<std::string, bool> noun_cache_, word_cache_;
};

}  // namespace cs
