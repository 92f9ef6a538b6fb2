// The CBT loader (data/cbt_format.h): the format, a dataset directory, the vocabulary,
// and every malformed input named by file:line.
#include <gtest/gtest.h>

#include "cloze_fixture.h"
#include "data/cbt_format.h"
#include "harness.h"
#include "util/error.h"

namespace test_cloze_data {  // this file's own names in a unity build (tests/README.md)

using namespace cs;
using namespace std::string_literals;

namespace {

// 20 context lines and the query line of one example.
std::string example(const std::string& query_line, int first_line = 1) {
  std::string s;
  for (int i = first_line; i <= 20; ++i) s += std::to_string(i) + " Mary had a little lamb .\n";
  return s + query_line + "\n";
}
const std::string kGood = "21 the XXXXX was white .\tlamb\t\tlamb|Mary|snow";

std::string error_of(const std::string& text, const std::string& name = "f.txt") {
  try {
    parse_cbt(text, name);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ClozeData, parsesExamples) {
  const auto ex = parse_cbt(example(kGood) + "\n" + example("21 XXXXX had a lamb .\tMary\t\tlamb|Mary|snow"),
                            "dir/cbtest_NE_train.txt");
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].document.size(), 20u * 6);
  EXPECT_EQ(ex[0].document[0], "Mary");
  EXPECT_EQ(ex[0].query, (std::vector<std::string>{"the", "XXXXX", "was", "white", "."}));
  EXPECT_EQ(ex[0].answer, "lamb");
  EXPECT_EQ(ex[0].candidates, (std::vector<std::string>{"lamb", "Mary", "snow"}));
  EXPECT_EQ(ex[0].kind, "NE");
  EXPECT_EQ(ex[0].source, "dir/cbtest_NE_train.txt:21");
  EXPECT_EQ(ex[1].source, "dir/cbtest_NE_train.txt:43");
  EXPECT_EQ(ex[1].answer, "Mary");
  // CRLF line ends and several blank lines between examples are accepted
  std::string crlf = example(kGood);
  std::string w;
  for (char c : crlf) w += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_EQ(parse_cbt(w + "\r\n\r\n" + example(kGood), "x").size(), 2u);
}

TEST(ClozeData, errorsNameFileAndLine) {
  // wrong numbering: line 3 says 4
  std::string t = example(kGood);
  t.replace(t.find("\n3 ") + 1, 1, "4");
  EXPECT_NE(error_of(t).find("f.txt:3: expected line number 3, got 4"), std::string::npos) << error_of(t);
  // no number at all
  EXPECT_NE(error_of("Mary had a lamb\n").find("f.txt:1: expected line number 1 at the start"), std::string::npos);
  // missing tab fields on line 21
  EXPECT_NE(error_of(example("21 the XXXXX was white .\tlamb")).find("f.txt:21: line 21 needs 4 tab-separated fields"),
            std::string::npos);
  // answer not among the candidates
  EXPECT_NE(error_of(example("21 the XXXXX was white .\twool\t\tlamb|Mary|snow"))
                .find("f.txt:21: the answer 'wool' is not among the candidates"),
            std::string::npos);
  // no XXXXX in the query
  EXPECT_NE(
      error_of(example("21 the lamb was white .\tlamb\t\tlamb|Mary|snow")).find("f.txt:21: the query has no XXXXX"),
      std::string::npos);
  // one candidate only
  EXPECT_NE(
      error_of(example("21 the XXXXX was white .\tlamb\t\tlamb")).find("f.txt:21: expected candidates separated by |"),
      std::string::npos);
  // an example cut short by a blank line, and by the end of the file; the second example's lines count on
  EXPECT_NE(
      error_of(example(kGood) + "\n1 a b\n2 c d\n\n").find("f.txt:25: blank line inside an example after its line 2"),
      std::string::npos);
  EXPECT_NE(error_of(example(kGood) + "\n1 a b\n2 c d\n")
                .find("f.txt:24: the file ends inside an example (after its line 2 of 21)"),
            std::string::npos);
  // empty and binary files
  EXPECT_NE(error_of("").find("f.txt: empty file"), std::string::npos);
  EXPECT_NE(error_of("\n\n  \n").find("f.txt: empty file"), std::string::npos);
  EXPECT_NE(error_of("1 abc\n2 d\0ef\n"s).find("f.txt:2: a NUL byte: this is a binary file"), std::string::npos)
      << error_of("1 abc\n2 d\0ef\n"s);
}

TEST(ClozeData, directoryAndVocabulary) {
  const std::string dir = clozefix::write_cbt_dir(cstest::temp_dir() + "/cbt-data", 5, 3, 2);
  const ClozeSplits s = load_cbt_dir(dir);
  EXPECT_EQ(s.train.size(), 5u);
  EXPECT_EQ(s.valid.size(), 3u);
  EXPECT_EQ(s.test.size(), 2u);
  EXPECT_EQ(s.train[0].kind, "CN");
  EXPECT_EQ(s.train[0].candidates.size(), 10u);
  // a file is refused (a directory is needed); a missing split is named
  try {
    load_cbt_dir(s.train_path);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory holding"), std::string::npos) << e.what();
  }
  const std::string d2 = cstest::temp_dir() + "/cbt-notest";
  cstest::write_text(d2 + "/a_train.txt", clozefix::cbt_text(2, 1));
  cstest::write_text(d2 + "/a_valid.txt", clozefix::cbt_text(2, 2));
  try {
    load_cbt_dir(d2);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(d2 + ": expected one *test*.txt file, found none"), std::string::npos)
        << e.what();
  }
  // an error inside a split names that file and line
  cstest::write_text(d2 + "/a_test.txt", example(kGood) + "\n1 x\n3 y\n");
  try {
    load_cbt_dir(d2);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(d2 + "/a_test.txt:24: expected line number 2, got 3"), std::string::npos)
        << e.what();
  }
  // the vocabulary: <unk>, <pad>, the blank XXXXX (its own id), then by frequency; min count; lower-casing
  const auto ex = parse_cbt(example(kGood), "v.txt");
  Vocab v = cloze_vocab(ex, true, 1, 0);
  EXPECT_EQ(v.symbol(0), "<unk>");
  EXPECT_EQ(v.symbol(1), "<pad>");
  EXPECT_EQ(v.symbol(kClozeBlankId), "XXXXX");
  EXPECT_TRUE(v.contains("mary") && !v.contains("Mary") && v.contains("snow") && !v.contains("xxxxx"));
  // "Mary had a little lamb ." x 20 + query/answer/candidates: "lamb" is the most frequent (20 + 1 answer + 1
  // candidate)
  EXPECT_EQ(v.symbol(3), "lamb");
  Vocab v2 = cloze_vocab(ex, false, 2, 0);  // "snow", "white", "the", "was" occur once
  EXPECT_TRUE(v2.contains("Mary") && !v2.contains("snow") && !v2.contains("white") && v2.contains("XXXXX"));
  Vocab v3 = cloze_vocab(ex, true, 1, 3);  // 3 words besides <unk>, <pad> and XXXXX
  EXPECT_EQ(v3.size(), 6u);
  // without the blank token (dataset.blank = unk, and every run made before it): XXXXX is <unk>
  Vocab v4 = cloze_vocab(ex, true, 1, 0, /*blank_token=*/false);
  EXPECT_FALSE(v4.contains("XXXXX"));
  EXPECT_EQ(v4.symbol(2), "lamb");
  EXPECT_EQ(v4.id("XXXXX"), Vocab::kUnkId);
  EXPECT_EQ(cloze_vocab(ex, true, 1, 3, false).size(), 5u);
}

TEST(ClozeData, lowercaseFollowsTheRunsTokenizer) {
  // dataset.tokenizer icu (new runs): full Unicode lower case and NFC; legacy (runs made before the
  // option, whose stored config has no dataset.tokenizer): ASCII letters only. XXXXX stays.
  EXPECT_EQ(cloze_lower("\xC3\x9c"
                        "BER",
                        kTokenizerIcu),
            "\xC3\xbc"
            "ber");  // ÜBER -> über
  EXPECT_EQ(cloze_lower("\xC3\x9c"
                        "BER",
                        kTokenizerLegacy),
            "\xC3\x9c"
            "ber");  // ÜBER -> Über
  EXPECT_EQ(cloze_lower("U\xCC\x88"
                        "ber",
                        kTokenizerIcu),
            "\xC3\xbc"
            "ber");  // U + combining diaeresis, NFC
  EXPECT_EQ(cloze_lower(kClozeBlank, kTokenizerIcu), kClozeBlank);
  std::string text = example(kGood);
  for (std::string::size_type at = 0; (at = text.find("Mary", at)) != std::string::npos;)
    text.replace(at, 4,
                 "\xC3\x89"
                 "MILE");
  const auto ex = parse_cbt(text, "u.txt");
  const Vocab icu = cloze_vocab(ex, true, 1, 0, true, kTokenizerIcu);
  const Vocab legacy = cloze_vocab(ex, true, 1, 0, true, kTokenizerLegacy);
  EXPECT_TRUE(
      icu.contains("\xC3\xa9"
                   "mile"))
      << "emile, lower-cased";
  EXPECT_TRUE(legacy.contains("\xC3\x89"
                              "mile") &&
              !legacy.contains("\xC3\xa9"
                               "mile"));
}

}  // namespace test_cloze_data
