// The one CSV rule (core/base/util/csv.h, RFC 4180) that every CSV writer and the figure's
// reader use: what is quoted, and that the reader gives back the fields written, quoted line
// breaks, CRLF records and doubled quotes included.

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "util/csv.h"
#include "util/text.h"

namespace test_csv_text {  // this file's own names in a unity build (tests/README.md)

using Records = std::vector<std::vector<std::string>>;

TEST(CsvText, fieldsAreQuotedOnlyWhenTheyMustBe) {
  EXPECT_EQ(cs::csv_field("plain text"), "plain text");
  EXPECT_EQ(cs::csv_field(""), "");
  EXPECT_EQ(cs::csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(cs::csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(cs::csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(cs::csv_field("carriage\rreturn"), "\"carriage\rreturn\"");  // a bare CR ends a record for many readers
  EXPECT_EQ(cs::csv_field("tab\there"), "tab\there");
}

TEST(CsvText, recordsReadBackWhatWasWritten) {
  const std::vector<std::string> fields = {"plain",      "",       "a,b", "say \"hi\"", "two\nlines",
                                           "cr\rlf\r\n", "ü ∑ 字", ",",   "\""};
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + cs::csv_field(fields[i]);
  const std::string text = "h1,h2\n" + line + "\n" + line + "\r\n" + "last,row";
  const Records r = cs::csv_records(text);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(r[1], fields);
  EXPECT_EQ(r[2], fields);
  EXPECT_EQ(r[3], (std::vector<std::string>{"last", "row"}));
}

TEST(CsvText, recordEndsAndEmptyFields) {
  EXPECT_EQ(cs::csv_records(""), Records{});
  EXPECT_EQ(cs::csv_records("a\n"), (Records{{"a"}}));
  EXPECT_EQ(cs::csv_records("a\r\nb\r\n"), (Records{{"a"}, {"b"}}));
  EXPECT_EQ(cs::csv_records(",\n"), (Records{{"", ""}}));
  EXPECT_EQ(cs::csv_records("a,\n,b"), (Records{{"a", ""}, {"", "b"}}));
  EXPECT_EQ(cs::csv_records("\n"), (Records{{""}}));
  EXPECT_EQ(cs::csv_records("\"\"\n"), (Records{{""}}));
  // a quote inside an unquoted field is a character; an unterminated quoted field runs to the end
  EXPECT_EQ(cs::csv_records("5\" disk,x\n"), (Records{{"5\" disk", "x"}}));
  EXPECT_EQ(cs::csv_records("\"open,end"), (Records{{"open,end"}}));
}

// The loaders' one line rule (util/text.h LineReader): LF ends a line, a CR before it or at the
// very end is dropped, a last line without LF counts, empty lines count, an empty text has none.
TEST(CsvText, linesOfATextAsEveryLoaderReadsThem) {
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    cs::LineReader r(text);
    std::string line;
    while (r.next(line)) {
      out.push_back(line);
      EXPECT_EQ(r.number(), out.size());
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(lines(""), V{});
  EXPECT_EQ(lines("\n"), V{""});
  EXPECT_EQ(lines("a"), V{"a"});
  EXPECT_EQ(lines("a\n"), V{"a"});
  EXPECT_EQ(lines("a\r\nb\r\n"), (V{"a", "b"}));
  EXPECT_EQ(lines("a\n\nb"), (V{"a", "", "b"}));
  EXPECT_EQ(lines("a\rb\r"), V{"a\rb"});  // a bare CR inside a line stays; one at the very end goes
  EXPECT_EQ(lines("x\r\r\n"), V{"x\r"});  // only one CR before the LF is part of the line end
}

// The small text helpers of util/text.h that the loaders share (#54): one home each.
TEST(CsvText, joinLowerTrimAndSplitAsTheLoadersDid) {
  using V = std::vector<std::string>;
  EXPECT_EQ(cs::join({}, ", "), "");
  EXPECT_EQ(cs::join({"a"}, ", "), "a");
  EXPECT_EQ(cs::join({"a", "", "c"}, ", "), "a, , c");
  EXPECT_EQ(cs::join({"a", "b", "c"}, " ", 2), "a b");  // the first n only (seq2seq's lead baseline)
  EXPECT_EQ(cs::join({"a"}, " ", 0), "");
  EXPECT_EQ(cs::first_line("one\ntwo\n"), "one");
  EXPECT_EQ(cs::first_line("only"), "only");
  EXPECT_EQ(cs::shape_text(std::vector<int64_t>{2, 3}), "[2, 3]");
  EXPECT_EQ(cs::shape_text(std::vector<int64_t>{}), "[]");  // a scalar's

  // ASCII only, in every locale: UTF-8 bytes (É, İ) pass through unchanged.
  EXPECT_EQ(cs::ascii_lower("Hello WORLD 42_Z@["), "hello world 42_z@[");
  EXPECT_EQ(cs::ascii_lower("\xC3\x89t\xC3\xA9 \xC4\xB0"), "\xC3\x89t\xC3\xA9 \xC4\xB0");

  EXPECT_EQ(cs::trim_ascii(" \t\r\n\f\vx y\v\f\n\r\t "), "x y");
  EXPECT_EQ(cs::trim_ascii(" \t\n"), "");
  EXPECT_EQ(cs::trim_ascii("\xC2\xA0x\xC2\xA0"), "\xC2\xA0x\xC2\xA0");  // U+00A0 is not ASCII white space
  // trim_chars: only the bytes named (cbt_format trims blanks and tabs, a run label also CR and LF).
  EXPECT_EQ(cs::trim_chars(" \tx\r\t ", " \t"), "x\r");
  EXPECT_EQ(cs::trim_chars("\r\n x \n", " \t\r\n"), "x");
  EXPECT_EQ(cs::trim_chars("\fx\f", " \t\r\n"), "\fx\f");
  EXPECT_EQ(cs::trim_chars("   ", " "), "");
  EXPECT_EQ(cs::trim_chars("", " "), "");

  EXPECT_EQ(cs::split_ascii_words(""), V{});
  EXPECT_EQ(cs::split_ascii_words(" \t\n"), V{});
  EXPECT_EQ(cs::split_ascii_words("a"), V{"a"});
  EXPECT_EQ(cs::split_ascii_words("\va\f\fb \r\nc\t"), (V{"a", "b", "c"}));
  const std::string nbsp = "\xC2\xA0", ideographic = "\xE3\x80\x80";  // U+00A0, U+3000: they stay in a word
  EXPECT_EQ(cs::split_ascii_words("a" + nbsp + "b " + ideographic + "c"), (V{"a" + nbsp + "b", ideographic + "c"}));
  // The same words as `istream >> word` (the classic locale) gave the loaders that used it.
  for (const std::string text : {"", " ", "one", " two  words ", "\ta\vb\fc\rd\ne", "x\xC2\xA0y z", "\x01\x7F q"}) {
    std::istringstream ss(text);
    V words;
    for (std::string w; ss >> w;) words.push_back(w);
    EXPECT_EQ(cs::split_ascii_words(text), words) << text;
  }
}

}  // namespace test_csv_text
