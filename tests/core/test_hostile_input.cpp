// Hostile input for every dataset format Cellscope reads: each format's clean fixture, then the
// same files with a byte-order mark, CR LF line ends, a NUL byte, a byte that is not UTF-8 and a
// 1 MB line; the XML loader also with CDATA, entities and '>' inside an attribute value.
//
// Expected outcomes (the same table is in datasets/README.md, "Encodings"):
//
//   format                   BOM         CR LF       NUL          invalid UTF-8     1 MB line
//   char text / ptb_char /   identical   identical   refused      refused           loaded
//     text8
//   word ptb_word / text     identical   identical   refused      refused           loaded
//   jsonl                    identical   identical   refused      refused           loaded
//   pos_neg_lines, subj      identical   identical   refused      read as Latin-1   loaded
//   aclimdb                  identical   identical   refused      refused           loaded
//   sst_trees                identical   identical   refused      refused           loaded
//   semeval2014_xml          identical   identical   refused      refused           loaded
//   cbt (cloze)              identical   identical   refused      refused           loaded
//   seq2seq parallel text    identical   identical   refused      refused           loaded
//   vocabulary file          identical   identical   refused      refused           loaded
//   dataset manifest         identical   identical   refused      refused           loaded
//
// "identical": the loaded data equals the clean file's, byte for byte. "refused": one
// cs::UserError naming FILE:LINE: (NUL) or FILE:LINE:COLUMN: (invalid UTF-8) of the bad byte.
// "read as Latin-1": MR and SUBJ are Latin-1 by definition, so byte 0xE9 is the character é.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "data/cbt_format.h"
#include "data/char_corpus.h"
#include "data/manifest.h"
#include "data/seq2seq_data.h"
#include "data/subword.h"
#include "data/text_datasets.h"
#include "data/vocab.h"
#include "data/word_corpus.h"
#include "config/schema.h"
#include "harness.h"
#include "train/run_store.h"
#include "util/error.h"

namespace test_hostile_input {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// One format: its files (relative path -> clean content), the file that gets the hostile bytes,
// the marker there the bytes go into, and a loader that dumps what it read (no paths in it).
struct HostileFormat {
  std::string name;
  std::map<std::string, std::string> files;
  std::string main;              // relative path of the file that gets NUL, 0xE9, the long line
  std::string marker = "zebra";  // bad bytes go after its first 2 bytes, the long line after it
  std::string filler = " w";     // repeated to make the 1 MB line
  std::string token_sep;         // after an injected byte (ptb_char: tokens are single characters)
  bool latin1 = false;
  std::function<std::string(const std::string& dir)> load;
};

std::string ids_dump(const Vocab& v, std::initializer_list<const std::vector<int32_t>*> splits) {
  std::string s;
  for (auto& sym : v.symbols()) s += sym + "\x1F";
  for (auto* sp : splits) {
    s += "|";
    for (auto id : *sp) s += std::to_string(id) + " ";
  }
  return s;
}

std::string examples_dump(const std::vector<TextExample>& ex) {
  std::string s;
  for (auto& e : ex) s += e.text + "\x1F" + e.label + "\x1F" + e.split + "\x1F" + e.aspect + "\x1F" + e.group + "\n";
  return s;
}

std::string pairs_dump(const Seq2SeqSplits& sp) {
  std::string s;
  for (auto* v : {&sp.train, &sp.valid, &sp.test})
    for (auto& p : *v) s += p.source + "\x1F" + p.target + "\n";
  return s;
}

std::string cbt_text() {
  std::string s;
  for (int i = 1; i <= 20; ++i)
    s += std::to_string(i) + (i == 2 ? " the zebra ran away .\n" : " Mary had a little lamb .\n");
  return s + "21 the XXXXX was white .\tlamb\t\tlamb|Mary|snow\n";
}

std::vector<HostileFormat> formats() {
  std::vector<HostileFormat> v;
  const std::string prose =
      "The whale swam on.\nA zebra ran past the ship, and the sea was calm.\nThe end of it all.\n";
  v.push_back({"char text", {{"c.txt", prose}}, "c.txt", "zebra", " w", "", false, [](const std::string& d) {
                 auto c = load_char_corpus_file(d + "/c.txt", DatasetFormat::Text, 0.1, 0.1, 0);
                 return ids_dump(c.vocab, {&c.train, &c.valid, &c.test});
               }});
  v.push_back({"char ptb_char",
               {{"ptb.char.train.txt", "t h e _ w h a l e\nz e b r a _ r a n\n"},
                {"ptb.char.valid.txt", "a _ s h i p\n"},
                {"ptb.char.test.txt", "t h e _ s e a\n"}},
               "ptb.char.train.txt",
               "z e b",
               " w",
               " ",
               false,
               [](const std::string& d) {
                 auto c = load_char_corpus_file(d, DatasetFormat::PtbChar, 0, 0, 0);
                 return ids_dump(c.vocab, {&c.train, &c.valid, &c.test});
               }});
  v.push_back({"char text8",
               {{"text8", "the whale swam on and on\nthe zebra ran past the ship and the sea was calm\n"}},
               "text8",
               "zebra",
               " w",
               "",
               false,
               [](const std::string& d) {
                 auto c = load_char_corpus_file(d + "/text8", DatasetFormat::Text8, 0, 0, 0);
                 return ids_dump(c.vocab, {&c.train, &c.valid, &c.test});
               }});
  v.push_back({"word ptb_word",
               {{"ptb.train.txt", " the whale swam \n the zebra ran \n"},
                {"ptb.valid.txt", " the ship \n"},
                {"ptb.test.txt", " the sea \n"}},
               "ptb.train.txt",
               "zebra",
               " w",
               "",
               false,
               [](const std::string& d) {
                 auto wc = load_word_corpus(
                     read_dataset_options(
                         resolve_config(json{{"task", "word_lm"}, {"dataset", {{"path", d}, {"format", "ptb_word"}}}})
                             .at("dataset")),
                     WordCorpusOptions{});
                 return ids_dump(wc.vocab, {&wc.train, &wc.valid, &wc.test});
               }});
  v.push_back({"word text", {{"w.txt", prose}}, "w.txt", "zebra", " w", "", false, [](const std::string& d) {
                 auto wc = load_word_corpus(read_dataset_options(resolve_config(json{{"task", "word_lm"},
                                                                                     {"dataset",
                                                                                      {{"path", d + "/w.txt"},
                                                                                       {"format", "text"},
                                                                                       {"valid_fraction", 0.0},
                                                                                       {"test_fraction", 0.0}}}})
                                                                     .at("dataset")),
                                            WordCorpusOptions{});
                 return ids_dump(wc.vocab, {&wc.train, &wc.valid, &wc.test});
               }});
  v.push_back(
      {"jsonl",
       {{"d.jsonl",
         "{\"text\": \"the whale swam\", \"label\": \"a\"}\n{\"text\": \"the zebra ran\", \"label\": \"b\"}\n"}},
       "d.jsonl",
       "zebra",
       " w",
       "",
       false,
       [](const std::string& d) { return examples_dump(load_jsonl_examples(d + "/d.jsonl")); }});
  v.push_back({"pos_neg_lines",
               {{"rt-polarity.pos", "a fine film .\nthe zebra was great .\n"}, {"rt-polarity.neg", "a dull film .\n"}},
               "rt-polarity.pos",
               "zebra",
               " w",
               "",
               true,
               [](const std::string& d) { return examples_dump(load_pos_neg_lines(d)); }});
  v.push_back(
      {"subj_lines",
       {{"quote.tok.gt9.5000", "i think so .\nthe zebra feels great .\n"}, {"plot.tok.gt9.5000", "a man walks in .\n"}},
       "quote.tok.gt9.5000",
       "zebra",
       " w",
       "",
       true,
       [](const std::string& d) { return examples_dump(load_subj_lines(d)); }});
  v.push_back({"aclimdb",
               {{"train/pos/0_9.txt", "A fine film.<br /><br />\nThe zebra was good."},
                {"train/neg/1_2.txt", "A dull film."},
                {"test/pos/2_8.txt", "Lovely."},
                {"test/neg/3_1.txt", "Awful."}},
               "train/pos/0_9.txt",
               "zebra",
               " w",
               "",
               false,
               [](const std::string& d) { return examples_dump(load_aclimdb(d)); }});
  v.push_back({"sst_trees",
               {{"train.txt", "(3 (2 a) (3 good))\n(1 (2 the) (1 zebra))\n"},
                {"dev.txt", "(4 (2 very) (4 good))\n"},
                {"test.txt", "(0 (2 so) (0 bad))\n"}},
               "train.txt",
               "zebra",
               " w",
               "",
               false,
               [](const std::string& d) { return examples_dump(load_sst_trees(d, 5)); }});
  v.push_back({"semeval2014_xml",
               {{"r.xml",
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sentences>\n"
                 "  <sentence id=\"1\">\n    <text>The zebra &amp; the food were fine.</text>\n"
                 "    <aspectTerms>\n      <aspectTerm term=\"food\" polarity=\"positive\" from=\"20\" to=\"24\"/>\n"
                 "    </aspectTerms>\n  </sentence>\n</sentences>\n"}},
               "r.xml",
               "zebra",
               " w",
               "",
               false,
               [](const std::string& d) { return examples_dump(load_semeval_xml(d + "/r.xml", "train")); }});
  v.push_back({"cbt",
               {{"cbt_NE_train.txt", cbt_text()}},
               "cbt_NE_train.txt",
               "zebra",
               " w",
               "",
               false,
               [](const std::string& d) {
                 std::string s;
                 for (auto& e : load_cbt_file(d + "/cbt_NE_train.txt")) {
                   for (auto& w : e.document) s += w + " ";
                   s += "|";
                   for (auto& w : e.query) s += w + " ";
                   s += "|" + e.answer + "|";
                   for (auto& w : e.candidates) s += w + " ";
                   s += "|" + e.kind + "\n";
                 }
                 return s;
               }});
  v.push_back({"seq2seq parallel",
               {{"train.de", "der wal schwamm\ndas zebra lief\n"},
                {"train.en", "the whale swam\nthe zebra ran\n"},
                {"valid.de", "ein schiff\n"},
                {"valid.en", "a ship\n"},
                {"test.de", "das meer\n"},
                {"test.en", "the sea\n"}},
               "train.de",
               "zebra",
               " w",
               "",
               false,
               [](const std::string& d) { return pairs_dump(load_parallel_dir(d, "de", "en")); }});
  v.push_back({"vocabulary",
               {{"vocab.txt", "cellscope-vocab 1 3\n<unk>\nthe\nzebra\n"}},
               "vocab.txt",
               "zebra",
               "w",
               "",
               false,
               [](const std::string& d) {
                 std::string s;
                 const Vocab vocab = Vocab::load(d + "/vocab.txt");
                 for (auto& sym : vocab.symbols()) s += sym + "\n";
                 return s;
               }});
  v.push_back(
      {"manifest",
       {{"manifest.json",
         "{\n  \"version\": 1,\n  \"datasets\": [\n    {\"name\": \"tiny\", \"format\": \"text\", \"obtain\": \"npm\",\n"
         "     \"path\": \"tiny.txt\", \"files\": [\"tiny.txt\"], \"description\": \"a zebra text\"}\n  ]\n}\n"}},
       "manifest.json",
       "zebra",
       " w",
       "",
       false,
       [](const std::string& d) { return load_manifest(d + "/manifest.json").dump(); }});
  return v;
}

// Writes the format's files under a fresh directory, `all` applied to every file and `main`
// to the main file after it; returns the directory.
std::string write_format(const HostileFormat& f, const std::string& kase,
                         const std::function<std::string(const std::string&)>& all,
                         const std::function<std::string(const std::string&)>& main) {
  std::string name = f.name;
  for (auto& c : name) c = c == ' ' ? '_' : c;
  const std::string dir = cstest::temp_dir() + "/hostile/" + name + "/" + kase;
  for (auto& [rel, text] : f.files) cstest::write_text(dir + "/" + rel, rel == f.main ? main(all(text)) : all(text));
  return dir;
}

std::string same(const std::string& s) { return s; }

// The UserError's message ("" when none; "NOT A UserError: ..." for another exception).
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("NOT A UserError: ") + e.what();
  }
  return "";
}

// The main file's clean text with `bytes` put after the first 2 bytes of the marker, and the
// 1-based line and column (in bytes) where they start.
std::string inject(const HostileFormat& f, const std::string& text, const std::string& bytes, size_t* line,
                   size_t* col) {
  const size_t at = text.find(f.marker) + 2;
  *line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  const size_t nl = text.rfind('\n', at - 1);
  *col = at - (nl == std::string::npos ? 0 : nl + 1) + 1;
  return text.substr(0, at) + bytes + f.token_sep + text.substr(at);
}

std::string clean_dump(const HostileFormat& f) { return f.load(write_format(f, "clean", same, same)); }

}  // namespace

TEST(HostileInput, fixturesLoad) {
  for (auto& f : formats()) {
    std::string d;
    const std::string e = error_of([&] { d = clean_dump(f); });
    EXPECT_EQ(e, "") << f.name;
    // (the char formats' dumps hold single characters)
    EXPECT_TRUE(f.name.rfind("char ", 0) == 0 ? !d.empty() : d.find("zebra") != std::string::npos)
        << f.name << ": " << d.substr(0, 200);
  }
}

TEST(HostileInput, byteOrderMarkIsSkipped) {
  for (auto& f : formats()) {
    const std::string clean = clean_dump(f);
    std::string got;
    const std::string e = error_of([&] {
      got = f.load(write_format(
          f, "bom", [](const std::string& s) { return "\xEF\xBB\xBF" + s; }, same));
    });
    EXPECT_EQ(e, "") << f.name;
    EXPECT_EQ(got, clean) << f.name;
  }
}

TEST(HostileInput, crlfLineEndsReadAsLf) {
  for (auto& f : formats()) {
    const std::string clean = clean_dump(f);
    auto crlf = [](const std::string& s) {
      std::string o;
      for (char c : s) o += c == '\n' ? std::string("\r\n") : std::string(1, c);
      return o;
    };
    std::string got;
    const std::string e = error_of([&] { got = f.load(write_format(f, "crlf", crlf, same)); });
    EXPECT_EQ(e, "") << f.name;
    EXPECT_EQ(got, clean) << f.name;
  }
}

TEST(HostileInput, nulByteRefusedWithFileAndLine) {
  for (auto& f : formats()) {
    size_t line = 0, col = 0;
    const std::string dir = write_format(
        f, "nul", same, [&](const std::string& s) { return inject(f, s, std::string(1, '\0'), &line, &col); });
    const std::string e = error_of([&] { f.load(dir); });
    EXPECT_TRUE(cstest::contains(e, dir + "/" + f.main + ":" + std::to_string(line) + ":")) << f.name << ": " << e;
    EXPECT_FALSE(cstest::contains(e, "NOT A UserError")) << f.name << ": " << e;
  }
}

TEST(HostileInput, invalidUtf8RefusedWithFileLineColumn) {
  for (auto& f : formats()) {
    size_t line = 0, col = 0;
    const std::string dir =
        write_format(f, "latin1", same, [&](const std::string& s) { return inject(f, s, "\xE9", &line, &col); });
    std::string got;
    const std::string e = error_of([&] { got = f.load(dir); });
    if (f.latin1) {  // MR, SUBJ: Latin-1 files, 0xE9 is é
      EXPECT_EQ(e, "") << f.name;
      EXPECT_TRUE(cstest::contains(got,
                                   "ze\xC3\xA9"
                                   "bra"))
          << f.name << ": " << got;
      continue;
    }
    const std::string at =
        dir + "/" + f.main + ":" + std::to_string(line) + ":" + std::to_string(col) + ": invalid UTF-8";
    EXPECT_TRUE(cstest::contains(e, at)) << f.name << ": expected '" << at << "', got: " << e;
  }
}

TEST(HostileInput, oneMegabyteLineLoads) {
  for (auto& f : formats()) {
    const std::string clean = clean_dump(f);
    std::string filler;
    while (filler.size() < (1u << 20)) filler += f.filler;
    const std::string dir = write_format(f, "long", same, [&](const std::string& s) {
      const size_t at = s.find(f.marker) + f.marker.size();
      return s.substr(0, at) + filler + s.substr(at);
    });
    std::string got;
    const std::string e = error_of([&] { got = f.load(dir); });
    EXPECT_EQ(e, "") << f.name;
    EXPECT_GT(got.size(), clean.size() + filler.size() / 4) << f.name;
  }
}

// The XML loader reads XML: CDATA sections are text, entities and character references are
// decoded, '>' may stand in an attribute value, comments and a DOCTYPE are skipped.
TEST(HostileInput, semevalXmlIsXml) {
  const std::string f = cstest::temp_dir() + "/hostile/xml/x.xml";
  auto xml = [](const std::string& text, const std::string& term) {
    return "<?xml version=\"1.0\"?>\n<!DOCTYPE sentences>\n<!-- a > comment -->\n<sentences>\n<sentence id=\"s1\">"
           "<text>" +
           text + "</text>\n<aspectTerms><aspectTerm term=\"" + term +
           "\" polarity=\"negative\" note=\"a > b\"/></aspectTerms></sentence>\n</sentences>\n";
  };
  cstest::write_text(f, xml("<![CDATA[The food <b>& wine</b> were]]> great &lt;3 &#233;", "food > x"));
  std::vector<TextExample> ex;
  ASSERT_EQ(error_of([&] { ex = load_semeval_xml(f, "train"); }), "");
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].text, "The food <b>& wine</b> were great <3 \xC3\xA9");
  EXPECT_EQ(ex[0].aspect, "food > x");
  EXPECT_EQ(ex[0].label, "negative");
  EXPECT_EQ(ex[0].group, "train:s1");
  // A CDATA section alone is the whole text.
  cstest::write_text(f, xml("<![CDATA[Only & only <here>]]>", "a"));
  ASSERT_EQ(error_of([&] { ex = load_semeval_xml(f, ""); }), "");
  EXPECT_EQ(ex.at(0).text, "Only & only <here>");
  // Broken XML: file:line:column and what is wrong, in Cellscope's words.
  cstest::write_text(f,
                     "<sentences>\n<sentence id=\"1\"><text><![CDATA[never closed</text></sentence>\n</sentences>\n");
  std::string e = error_of([&] { load_semeval_xml(f, ""); });
  EXPECT_TRUE(cstest::contains(e, f + ":2:")) << e;
  EXPECT_TRUE(cstest::contains(e, "CDATA")) << e;
  cstest::write_text(
      f,
      "<sentences>\n<sentence id=\"1\"><text>x</text>\n  <aspectTerm term=\"a < b\" polarity=\"positive\"/>"
      "</sentence>\n</sentences>\n");
  e = error_of([&] { load_semeval_xml(f, ""); });
  EXPECT_TRUE(cstest::contains(e, f + ":3:")) << e;
  EXPECT_TRUE(cstest::contains(e, "attribute")) << e;
  cstest::write_text(f, "<sentences>\n<sentence id=\"1\"><text>x</text>\n");
  e = error_of([&] { load_semeval_xml(f, ""); });
  EXPECT_TRUE(cstest::contains(e, f + ":3:1: the file ends before every element is closed")) << e;
  cstest::write_text(f, "<sentences>\n<sentence id=\"1\"><text>x</text>\n</sentences>\n");
  e = error_of([&] { load_semeval_xml(f, ""); });
  EXPECT_TRUE(cstest::contains(e, f + ":3:1: closing tag </sentences> does not match")) << e;
  cstest::write_text(f, "<sentences>\n<sentence id=\"1\"><text>x &nbsp; y</text></sentence>\n</sentences>\n");
  e = error_of([&] { load_semeval_xml(f, ""); });
  EXPECT_TRUE(cstest::contains(e, f + ":2:")) << e;
  EXPECT_TRUE(cstest::contains(e, "&nbsp;")) << e;
}

// Names printed in tables and terminals (run labels, class labels) hold no control characters
// (terminal escapes) and no bidirectional-text controls (they reorder what is shown).
TEST(HostileInput, labelsRefuseControlAndBidiCharacters) {
  const std::string dir = cstest::temp_dir() + "/hostile/labels/run";
  cstest::write_text(dir + "/config.json", "{}");
  const RunStore store(dir);
  store.write_label("caf\xC3\xA9 run 1");
  EXPECT_EQ(store.read_label(), "caf\xC3\xA9 run 1");
  for (const std::string& bad :
       {std::string("a\x1B[31mred"), std::string("tab\there"), std::string("del\x7F"), std::string("c1 \xC2\x9B"),
        std::string("rlo \xE2\x80\xAE evil"), std::string("lri \xE2\x81\xA6 x"), std::string("lrm \xE2\x80\x8E"),
        std::string("alm \xD8\x9C")}) {
    const std::string e = error_of([&] { store.write_label(bad); });
    EXPECT_TRUE(cstest::contains(e, "may not hold U+")) << e;
    EXPECT_EQ(store.read_label(), "caf\xC3\xA9 run 1");  // unchanged
  }
  // A label.txt edited by hand into an escape sequence is not shown.
  cstest::write_text(dir + "/label.txt", "\x1B]0;pwned\x07\n");
  EXPECT_EQ(store.read_label(), "");
  // Class labels of a jsonl dataset: file:line.
  const std::string f = cstest::temp_dir() + "/hostile/labels/d.jsonl";
  cstest::write_text(f, "{\"text\": \"a\", \"label\": \"ok\"}\n{\"text\": \"b\", \"label\": \"x\\u001b[2J\"}\n");
  const std::string e = error_of([&] { load_jsonl_examples(f); });
  EXPECT_TRUE(cstest::contains(e, f + ":2: the label (field 'label') holds U+001B")) << e;
  cstest::write_text(f, "{\"text\": \"a\", \"label\": \"ok\"}\n{\"text\": \"b\", \"label\": \"\\u202Eevil\"}\n");
  EXPECT_TRUE(
      cstest::contains(error_of([&] { load_jsonl_examples(f); }), f + ":2: the label (field 'label') holds U+202E"));
}

// A subword vocabulary smaller than the characters of the text: the option, the value and the
// size needed, not SentencePiece's own words (which name a --character_coverage option).
TEST(HostileInput, subwordVocabularyTooSmall) {
  std::vector<std::string> lines;
  std::string alphabet;
  for (uint32_t cp = 0x3B1; cp < 0x3B1 + 24; ++cp) {  // Greek letters: 24 characters, 2 bytes each
    alphabet += static_cast<char>(0xC0 | (cp >> 6));
    alphabet += static_cast<char>(0x80 | (cp & 0x3F));
  }
  for (int i = 0; i < 20; ++i) lines.push_back(alphabet + " abcdefghijklmnopqrstuvwxyz " + std::to_string(i));
  SubwordOptions o;
  o.vocab_size = 20;
  o.option = "dataset.source_vocab_size";
  for (const char* type : {"unigram", "bpe"}) {
    o.model_type = type;
    const std::string e = error_of([&] { SubwordVocab::train(lines, o); });
    EXPECT_TRUE(cstest::contains(e, "dataset.source_vocab_size 20 is too small")) << type << ": " << e;
    EXPECT_TRUE(cstest::contains(e, "set dataset.source_vocab_size to ")) << type << ": " << e;
    EXPECT_FALSE(cstest::contains(e, "character_coverage")) << type << ": " << e;
  }
}

}  // namespace test_hostile_input
