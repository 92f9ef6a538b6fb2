// The Children's Book Test text format ("cbt"; Hill et al. 2015) for the cloze task
// (tasks/cloze.h). A file holds examples separated by blank lines; each example is 21
// lines numbered "1 " .. "21 ": lines 1-20 are context sentences (space-tokenised words),
// line 21 is "21 <query with XXXXX>\t<answer>\t\t<cand1>|...|<candN>" (CBT has an empty
// field between the answer and the candidates). A dataset is a directory with one file
// each whose name contains "train", "valid" and "test" (and ends in .txt), e.g. CBT's
// cbtest_CN_train.txt, cbtest_CN_valid_2000ex.txt, cbtest_CN_test_2500ex.txt.
// Malformed input: UserError naming file:line. Choices: core/base/data/CBT_NOTES.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "data/vocab.h"

namespace cs {

struct ClozeExample {
  std::vector<std::string> document;    // the 20 context sentences' words, in order (line numbers dropped)
  std::vector<std::string> query;       // the query's words, one of them "XXXXX"
  std::string answer;                   // one of the candidates
  std::vector<std::string> candidates;  // CBT: 10
  std::string kind;                     // "NE", "CN", "V", "P" from the file name (cbtest_<KIND>_...), else ""
  std::string source;                   // "file:line" of the query line (line 21)
};

// The placeholder of the blank in a query.
inline constexpr const char* kClozeBlank = "XXXXX";

// Every example of one file. Errors (UserError, "path:line: ..."): a line not numbered as
// expected (1..21 in order), an example cut short, a query line without the tab-separated
// fields, a query without XXXXX, no candidates, an answer not among the candidates, a
// binary file (a NUL byte), an empty file (no example).
std::vector<ClozeExample> load_cbt_file(const std::string& path);
// The same, parsing `text` as if it were the file `name` (tests, fuzzing).
std::vector<ClozeExample> parse_cbt(const std::string& text, const std::string& name);

struct ClozeSplits {
  std::vector<ClozeExample> train, valid, test;
  std::string train_path, valid_path, test_path;
};
// A directory with one *train*.txt, *valid*.txt and *test*.txt file each (a word of the name
// starting with train / valid / test, words split at _ - . and space: CBT's cbtest_CN_test_2500ex.txt is test) (a
// missing or ambiguous one: UserError naming the directory and the files found). A path that is a file is refused with
// a message saying a directory is needed.
ClozeSplits load_cbt_dir(const std::string& dir);

// The words a reader's vocabulary is built from: the training documents, queries (without
// XXXXX), answers and candidates, lower-cased when `lowercase`. Ids: 0 <unk>, 1 <pad>, 2 the
// blank XXXXX (its own embedding, never <unk>'s; only with `blank_token`), then words seen at
// least `min_count` times by descending frequency (ties: byte order), at most `max_vocab` words
// (0 = all; the special symbols not counted). A vocabulary without XXXXX (`blank_token` false,
// or saved by a run made before the blank had its own id) maps the blank to <unk> (id 0):
// encoding follows the saved vocabulary, so such runs evaluate as they trained.
inline constexpr int32_t kClozeBlankId = 2;
// With `lowercase`, words are folded as `rules` says (cloze_lower).
Vocab cloze_vocab(const std::vector<ClozeExample>& train, bool lowercase, int64_t min_count, int64_t max_vocab,
                  bool blank_token = true, Tokenizer rules = Tokenizer::Icu, const std::string& locale = "");

// A word lower-cased as the cloze task's dataset.tokenizer `rules` says (data/tokenizer.h
// lowercase_word: icu = NFC + full Unicode lower case, legacy = ASCII letters only); XXXXX stays.
std::string cloze_lower(const std::string& w, Tokenizer rules, const std::string& locale = "");

}  // namespace cs
