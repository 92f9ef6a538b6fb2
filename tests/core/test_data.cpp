// Data layer: char corpora (text, ptb_char, text8), the vocabulary format,
// error messages for bad inputs, manifest resolution and the paths helpers.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>

#include "data/char_corpus.h"
#include "data/manifest.h"
#include "data/utf8.h"
#include "data/vocab.h"
#include "core_checks.h"
#include "harness.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_data {  // this file's own names in a unity build (tests/README.md)

using cs::CharCorpus;
using cs::json;
using cs::Vocab;

namespace {

std::string tmp(const std::string& name) { return cs::join_path(cstest::temp_dir(), name); }

std::string write(const std::string& name, const std::string& bytes) {
  const std::string p = tmp(name);
  const auto slash = p.find_last_of('/');
  cs::make_dirs(p.substr(0, slash));
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

json ds_path(const std::string& path, const std::string& format = "auto", double vf = 0.05, double tf = 0.05,
             long max_chars = 0) {
  return json{{"name", "moby-dick"},  {"path", path},        {"format", format},
              {"valid_fraction", vf}, {"test_fraction", tf}, {"max_chars", max_chars}};
}

// A (partial) dataset section as the loaders' options, converted once as a run converts its own.
cs::DatasetOptions options(const json& ds) { return cs::dataset_option_table().read_partial(ds); }

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Runs f, which must throw cs::UserError whose message contains every needle.
using cstest::expect_user_error;

using cstest::EnvGuard;  // sets an environment variable for one test, restores it after

}  // namespace

TEST(Data, textSplitSizesAndDeterminism) {
  const std::string body = repeat("the cat sat on the mat\n", 20);  // 460 chars
  const std::string p = write("plain.txt", body);
  CharCorpus a = cs::load_char_corpus(options(ds_path(p, "text", 0.1, 0.2)));
  ASSERT_EQ(cs::to_string(a.format), std::string("text"));
  ASSERT_EQ(a.source, p);
  ASSERT_EQ(a.train.size(), size_t(460 - 46 - 92));
  ASSERT_EQ(a.valid.size(), size_t(46));
  ASSERT_EQ(a.test.size(), size_t(92));
  // Contiguous: train is the head of the file, test its tail.
  ASSERT_EQ(a.vocab.decode(a.train), body.substr(0, 322));
  ASSERT_EQ(a.vocab.decode(a.valid), body.substr(322, 46));
  ASSERT_EQ(a.vocab.decode(a.test), body.substr(368));
  // Vocabulary: <unk> then the train symbols sorted by code point.
  ASSERT_EQ(a.vocab.symbol(0), std::string("<unk>"));
  ASSERT_EQ(a.vocab.symbol(1), std::string("\n"));
  ASSERT_EQ(a.vocab.symbol(2), std::string(" "));
  ASSERT_EQ(a.vocab.symbol(3), std::string("a"));
  ASSERT_EQ(a.vocab.size(), size_t(1 + 11));  // \n space a c e h m n o s t
  CharCorpus b = cs::load_char_corpus(options(ds_path(p, "text", 0.1, 0.2)));
  ASSERT_TRUE(a.train == b.train && a.valid == b.valid && a.test == b.test);
  ASSERT_TRUE(a.vocab == b.vocab);
  // A zero fraction leaves that split empty (allowed).
  CharCorpus z = cs::load_char_corpus(options(ds_path(p, "text", 0.0, 0.1)));
  ASSERT_EQ(z.valid.size(), size_t(0));
  ASSERT_EQ(z.test.size(), size_t(46));
}

TEST(Data, unseenSymbolsMapToUnk) {
  const std::string body = repeat("ab", 45) + "abababZZab";  // Z only in the last 10%
  const std::string p = write("unseen.txt", body);
  CharCorpus c = cs::load_char_corpus(options(ds_path(p, "text", 0.0, 0.1)));
  ASSERT_EQ(c.vocab.size(), size_t(3));
  ASSERT_TRUE(!c.vocab.contains("Z"));
  ASSERT_EQ(c.test[6], 0);
  ASSERT_EQ(c.test[7], 0);
  ASSERT_EQ(c.test[0], c.vocab.id("a"));
}

TEST(Data, fixedVocabIsUsedAsIs) {
  Vocab v;
  v.add("b");
  v.add("q");
  const std::string p = write("fixed.txt", repeat("abc", 40));
  CharCorpus c = cs::load_char_corpus(options(ds_path(p, "text")), &v);
  ASSERT_TRUE(c.vocab == v);
  ASSERT_EQ(c.train[0], 0);  // a -> unk
  ASSERT_EQ(c.train[1], 1);  // b
  ASSERT_EQ(c.train[2], 0);  // c -> unk
}

TEST(Data, utf8MultibyteSymbols) {
  const std::string unit = "h\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93 \xF0\x9D\x84\x9E\n";  // é ö ✓ 𝄞
  const std::string body = "\xEF\xBB\xBF" + repeat(unit, 10);                            // with a BOM
  const std::string p = write("utf8.txt", body);
  CharCorpus c = cs::load_char_corpus(options(ds_path(p, "text", 0.1, 0.1)));
  const size_t chars_per_unit = 16;  // "héllo wörld ✓ 𝄞\n"
  ASSERT_EQ(c.train.size() + c.valid.size() + c.test.size(), chars_per_unit * 10);
  ASSERT_TRUE(c.vocab.contains("\xC3\xA9"));
  ASSERT_TRUE(c.vocab.contains("\xF0\x9D\x84\x9E"));
  for (const auto& s : c.vocab.symbols()) ASSERT_TRUE(s == "<unk>" || cs::utf8_symbols(s).size() == 1);
  ASSERT_EQ(c.vocab.decode(c.train) + c.vocab.decode(c.valid) + c.vocab.decode(c.test), repeat(unit, 10));
  // Code-point order: the 4-byte symbol sorts last.
  ASSERT_EQ(c.vocab.symbol(static_cast<int32_t>(c.vocab.size() - 1)), std::string("\xF0\x9D\x84\x9E"));
}

TEST(Data, crlfReadAsNewline) {
  const std::string p = write("crlf.txt", repeat("ab\r\n", 30));
  CharCorpus c = cs::load_char_corpus(options(ds_path(p, "text", 0.1, 0.1)));
  ASSERT_EQ(c.train.size() + c.valid.size() + c.test.size(), size_t(90));
  ASSERT_TRUE(!c.vocab.contains("\r"));
  ASSERT_TRUE(c.vocab.contains("\n"));
}

TEST(Data, maxCharsCapsTheCorpus) {
  const std::string p = write("cap.txt", repeat("abcd", 100));
  CharCorpus c = cs::load_char_corpus(options(ds_path(p, "text", 0.1, 0.1, 100)));
  ASSERT_EQ(c.train.size(), size_t(80));
  ASSERT_EQ(c.valid.size(), size_t(10));
  ASSERT_EQ(c.test.size(), size_t(10));
}

TEST(Data, ptbCharDecoding) {
  write("ptb/ptb.char.train.txt", " a _ b c\n d _ e \n\n f\n");
  write("ptb/ptb.char.valid.txt", "a _ b\nc\n");
  write("ptb/ptb.char.test.txt", "e _ f");  // no final newline
  const std::string dir = tmp("ptb");
  CharCorpus c = cs::load_char_corpus(options(ds_path(dir)));
  ASSERT_EQ(cs::to_string(c.format), std::string("ptb_char"));
  ASSERT_EQ(c.vocab.decode(c.train), std::string("a bc\nd e\nf\n"));
  ASSERT_EQ(c.vocab.decode(c.valid), std::string("a b\nc\n"));
  ASSERT_EQ(c.vocab.decode(c.test), std::string("e f\n"));  // final newline added
  ASSERT_TRUE(!c.vocab.contains("_"));
  // One of the files also works, in auto and explicit format.
  CharCorpus d = cs::load_char_corpus(options(ds_path(tmp("ptb/ptb.char.valid.txt"))));
  ASSERT_TRUE(d.train == c.train && d.vocab == c.vocab);
  // line_spans over the train split: "a bc", "d e", "f".
  auto spans = cs::line_spans(c.train, c.vocab.id("\n"));
  ASSERT_EQ(spans.size(), size_t(3));
  ASSERT_EQ(spans[0], std::make_pair(size_t(0), size_t(4)));
  ASSERT_EQ(spans[1], std::make_pair(size_t(5), size_t(8)));
  ASSERT_EQ(spans[2], std::make_pair(size_t(9), size_t(10)));
  // A multi-character token means the file is not ptb_char.
  write("ptbbad/ptb.char.train.txt", "a b\nab c\n");
  write("ptbbad/ptb.char.valid.txt", "a b\n");
  write("ptbbad/ptb.char.test.txt", "a b\n");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(tmp("ptbbad")))); },
                    {tmp("ptbbad/ptb.char.train.txt"), "line 2", "'ab'"});
  // A missing sibling is named.
  write("ptbmiss/ptb.char.train.txt", "a b\n");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(tmp("ptbmiss")))); },
                    {tmp("ptbmiss/ptb.char.valid.txt"), "does not exist"});
}

TEST(Data, text8Proportions) {
  const std::string p = write("text8", repeat("anarchism originated ", 50).substr(0, 1000));
  CharCorpus c = cs::load_char_corpus(options(ds_path(p, "auto", 0.3, 0.3)));  // fractions ignored
  ASSERT_EQ(cs::to_string(c.format), std::string("text8"));
  ASSERT_EQ(c.train.size(), size_t(900));
  ASSERT_EQ(c.valid.size(), size_t(50));
  ASSERT_EQ(c.test.size(), size_t(50));
  const std::string q = write("odd-size.t8", repeat("x y", 339));  // 1017 chars
  CharCorpus d = cs::load_char_corpus(options(ds_path(q, "text8")));
  ASSERT_EQ(d.valid.size(), size_t(50));
  ASSERT_EQ(d.test.size(), size_t(50));
  ASSERT_EQ(d.train.size(), size_t(917));
  ASSERT_EQ(cs::to_string(cs::detect_char_format("/x/text8")), std::string("text8"));
  ASSERT_EQ(cs::to_string(cs::detect_char_format("/x/book.txt")), std::string("text"));
  ASSERT_EQ(cs::to_string(cs::detect_char_format("/x/ptb.char.test.txt")), std::string("ptb_char"));
}

TEST(Data, vocabRoundTrip) {
  Vocab v;
  ASSERT_EQ(v.size(), size_t(1));
  ASSERT_EQ(v.add("<unk>"), 0);  // the literal text shares id 0
  const std::vector<std::string> awkward = {"\n",       "\t",   " ",    "\\", "\\n",       "\r",     "a",
                                            "\xC3\xA9", "\x01", "\x7F", "",   "two words", "<unk>x", "#"};
  for (const auto& s : awkward) v.add(s);
  ASSERT_EQ(v.size(), awkward.size() + 1);
  ASSERT_EQ(v.add("a"), v.id("a"));  // idempotent
  const std::string text = v.serialize();
  // Every symbol is one visible line: no raw tab/CR/space inside lines.
  ASSERT_TRUE(text.find('\t') == std::string::npos);
  ASSERT_TRUE(text.find('\r') == std::string::npos);
  ASSERT_EQ(text.substr(0, text.find('\n')), std::string("cellscope-vocab 1 15"));
  ASSERT_TRUE(text.find("\n\\s\n") != std::string::npos);
  ASSERT_TRUE(text.find("\n\\\\\n") != std::string::npos);
  ASSERT_TRUE(text.find("\n\\\\n\n") != std::string::npos);
  ASSERT_TRUE(text.find("\ntwo\\swords\n") != std::string::npos);
  Vocab w = Vocab::deserialize(text, "mem");
  ASSERT_TRUE(w == v);
  for (const auto& s : awkward) ASSERT_EQ(w.id(s), v.id(s));
  ASSERT_EQ(w.id("never seen"), 0);
  ASSERT_EQ(w.symbol(0), std::string("<unk>"));
  // File round trip (atomic save).
  const std::string p = tmp("vocab");
  v.save(p);
  ASSERT_TRUE(Vocab::load(p) == v);
  ASSERT_TRUE(!std::filesystem::exists(p + ".tmp"));
}

TEST(Data, vocabMalformed) {
  expect_user_error([] { Vocab::deserialize("", "v1"); }, {"'v1'", "empty"});
  expect_user_error([] { Vocab::deserialize("hello\n", "v2"); }, {"'v2'", "line 1"});
  expect_user_error([] { Vocab::deserialize("cellscope-vocab 1 2\n<unk>\n\\q\n", "v3"); },
                    {"'v3'", "line 3", "escape"});
  expect_user_error([] { Vocab::deserialize("cellscope-vocab 1 3\n<unk>\na\na\n", "v4"); },
                    {"'v4'", "line 4", "duplicate"});
  expect_user_error([] { Vocab::deserialize("cellscope-vocab 1 3\n<unk>\na\n", "v5"); }, {"'v5'", "truncated"});
  expect_user_error([] { Vocab::deserialize("cellscope-vocab 1 2\na\n<unk>\n", "v6"); }, {"'v6'", "<unk>"});
  expect_user_error([] { Vocab::deserialize("cellscope-vocab 1 2\n<unk>\n\xFF\n", "v7"); },
                    {"'v7'", "UTF-8", "offset 26"});
  // a count the file cannot hold is refused before anything is reserved (it asked for 7 GB; fuzz_vocab)
  expect_user_error([] { Vocab::deserialize("cellscope-vocab 1 222222222\n<unk>\n", "v8"); },
                    {"'v8'", "line 1", "symbol count 222222222 is larger than the file"});
  expect_user_error([] { Vocab::load(tmp("no-such-vocab")); }, {tmp("no-such-vocab"), "does not exist"});
}

TEST(Data, badInputsNameTheFile) {
  const std::string missing = tmp("missing.txt");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(missing, "text"))); }, {missing, "does not exist"});
  const std::string empty = write("empty.txt", "");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(empty, "text"))); }, {empty, "empty"});
  const std::string nul = write("nul.bin", repeat("abc", 100) + std::string("\0\x01\x02", 3) + "abc");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(nul, "text"))); }, {nul, "binary", "offset 300"});
  std::string ctl = repeat("ab", 100);
  for (size_t i = 0; i < ctl.size(); i += 4) ctl[i] = '\x03';
  const std::string ctlp = write("ctl.bin", ctl);
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(ctlp, "text"))); }, {ctlp, "binary"});
  const std::string bad = write("bad-utf8.txt", repeat("abcd", 25) + "\xC3(" + repeat("x", 50));
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(bad, "text"))); }, {bad, "UTF-8", "byte offset 100"});
  const std::string overlong = write("overlong.txt", repeat("a", 60) + "\xC0\xAF" + repeat("a", 60));
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(overlong, "text"))); }, {overlong, "byte offset 60"});
  const std::string surrogate = write("surrogate.txt", repeat("a", 40) + "\xED\xA0\x80");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(surrogate, "text"))); }, {surrogate, "byte offset 40"});
  const std::string cut = write("cut.txt", repeat("a", 40) + "\xE2\x9C");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(cut, "text"))); }, {cut, "byte offset 40"});
  const std::string small = write("small.txt", "abc");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(small, "text"))); }, {small, "too small"});
  const std::string one = write("one.txt", "a");
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(one, "text", 0.0, 0.0))); },
                    {one, "too small", "train"});
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(tmp("ptb"), "text"))); }, {tmp("ptb"), "directory"});
  expect_user_error([&] { cs::load_char_corpus(options(ds_path(small, "csv"))); }, {"csv"});
}

TEST(Data, manifestResolution) {
  const std::string cache = tmp("cache");
  cs::make_dirs(cache);
  const json manifest = {{"version", 1},
                         {"datasets",
                          {{{"name", "tiny"},
                            {"tasks", {"char_lm"}},
                            {"format", "text"},
                            {"obtain", "npm"},
                            {"source", {{"npm", "@example/tiny"}, {"file", "package/data.txt"}}},
                            {"path", "tiny.txt"},
                            {"files", {"tiny.txt"}}},
                           {{"name", "ptb-char"},
                            {"tasks", {"char_lm"}},
                            {"format", "ptb_char"},
                            {"obtain", "user"},
                            {"source", {{"url", "https://example.org/ptb"}}},
                            {"path", "ptb-char"},
                            {"files", {"ptb-char/ptb.char.train.txt"}}}}}};
  const std::string mpath = write("manifest.json", manifest.dump(2));
  EnvGuard g1("CELLSCOPE_MANIFEST", mpath);
  EnvGuard g2("CELLSCOPE_DATA_DIR", cache);
  ASSERT_EQ(cs::datasets_manifest_path(), mpath);
  ASSERT_EQ(cs::data_cache_dir(), cache);
  const json m = cs::load_manifest();
  ASSERT_EQ(cs::manifest_names(m), (std::vector<std::string>{"tiny", "ptb-char"}));

  json ds = {{"name", "tiny"},        {"path", nullptr},      {"format", "auto"},
             {"valid_fraction", 0.1}, {"test_fraction", 0.1}, {"max_chars", 0}};
  expect_user_error([&] { cs::load_char_corpus(options(ds)); },
                    {"'tiny'", cs::join_path(cache, "tiny.txt"), "datasets/fetch.sh"});
  write("cache/tiny.txt", repeat("fetched ", 20));
  auto loc = cs::resolve_dataset(options(ds));
  ASSERT_EQ(loc.path, cs::join_path(cache, "tiny.txt"));
  ASSERT_EQ(cs::to_string(loc.format), std::string("text"));
  ASSERT_EQ(loc.name, std::string("tiny"));
  CharCorpus c = cs::load_char_corpus(options(ds));
  ASSERT_EQ(c.train.size(), size_t(128));
  ASSERT_EQ(c.source, cs::join_path(cache, "tiny.txt"));

  ds["name"] = "ptb-char";
  expect_user_error([&] { cs::load_char_corpus(options(ds)); },
                    {"'ptb-char'", "https://example.org/ptb", "dataset.path"});
  ds["name"] = "nope";
  expect_user_error([&] { cs::resolve_dataset(options(ds)); }, {"'nope'", "tiny, ptb-char", mpath});
  // dataset.path overrides the name.
  ds["path"] = cs::join_path(cache, "tiny.txt");
  ASSERT_EQ(cs::resolve_dataset(options(ds)).path, cs::join_path(cache, "tiny.txt"));
  ASSERT_EQ(cs::resolve_dataset(options(ds)).name, std::string());

  const std::string broken = write("broken-manifest.json", "{ not json");
  EnvGuard g3("CELLSCOPE_MANIFEST", broken);
  ds["path"] = nullptr;
  expect_user_error([&] { cs::resolve_dataset(options(ds)); }, {broken, "not valid JSON"});
}

TEST(Data, pathsFollowEnvironment) {
  {
    EnvGuard g("CELLSCOPE_RESOURCES", "/some/where");
    ASSERT_EQ(cs::resources_dir(), std::string("/some/where"));
  }
  {
    EnvGuard g("CELLSCOPE_RESOURCES", "");
    // From a build tree the source tree's resources/ is used when it exists.
    const std::string src_res = cstest::source_dir() + "/resources";
    if (cs::dir_exists(src_res)) ASSERT_EQ(cs::resources_dir(), src_res);
    else ASSERT_TRUE(cs::resources_dir() != src_res && !cs::resources_dir().empty());
  }
  {
    EnvGuard g("CELLSCOPE_DATA_DIR", "");
    EnvGuard x("XDG_CACHE_HOME", "/xdg");
    // A writable source tree keeps its cache inside; otherwise the XDG cache is used.
    const std::string src = cstest::source_dir();
    if (::access(src.c_str(), W_OK) == 0) ASSERT_EQ(cs::data_cache_dir(), src + "/.cache/datasets");
    else ASSERT_EQ(cs::data_cache_dir(), std::string("/xdg/cellscope/datasets"));
  }
  {
    EnvGuard g("CELLSCOPE_MANIFEST", "");
    ASSERT_EQ(cs::datasets_manifest_path(), cstest::source_dir() + "/datasets/manifest.json");
  }
}

TEST(Data, shippedManifestIsValid) {
  EnvGuard g("CELLSCOPE_MANIFEST", "");
  const json m = cs::load_manifest();
  for (const char* n : {"moby-dick", "sotu", "spam-assassin"}) {
    const json* e = cs::find_manifest_entry(m, n);
    ASSERT_TRUE(e) << n;
    ASSERT_EQ((*e)["obtain"].get<std::string>(), std::string("npm"));
  }
  for (const auto& e : m["datasets"]) {
    ASSERT_TRUE(e.contains("licence"));
    ASSERT_TRUE(e.contains("description"));
    ASSERT_TRUE(e.contains("split"));
  }
}

}  // namespace test_data
