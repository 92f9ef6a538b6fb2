// Data layer: char corpora (text, ptb_char, text8), the vocabulary format,
// error messages for bad inputs, manifest resolution and the paths helpers.
#include <QDir>
#include <QFile>
#include <QObject>
#include <QtTest/QtTest>

#include <fstream>
#include <unistd.h>
#include <string>

#include "data/char_corpus.h"
#include "data/manifest.h"
#include "data/utf8.h"
#include "data/vocab.h"
#include "harness.h"
#include "util/error.h"
#include "util/paths.h"

using cs::CharCorpus;
using cs::json;
using cs::Vocab;

namespace {

std::string tmp(const std::string& name) { return cs::join_path(cstest::temp_dir().toStdString(), name); }

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
  return json{{"name", "moby-dick"}, {"path", path},       {"format", format},
              {"valid_fraction", vf}, {"test_fraction", tf}, {"max_chars", max_chars}};
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Runs f, which must throw cs::UserError whose message contains every needle.
template <typename F>
void expect_user_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
  } catch (const cs::UserError& e) {
    const std::string msg = e.what();
    for (const auto& n : needles)
      QVERIFY2(msg.find(n) != std::string::npos, ("message '" + msg + "' lacks '" + n + "'").c_str());
    return;
  }
  QFAIL("expected cs::UserError");
}

struct EnvGuard {  // sets an environment variable for one test, restores it after
  QByteArray name, old;
  bool had;
  EnvGuard(const char* n, const std::string& v) : name(n), old(qgetenv(n)), had(qEnvironmentVariableIsSet(n)) {
    qputenv(n, QByteArray::fromStdString(v));
  }
  ~EnvGuard() {
    if (had) qputenv(name.constData(), old);
    else qunsetenv(name.constData());
  }
};

}  // namespace

class TestData : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void textSplitSizesAndDeterminism() {
    const std::string body = repeat("the cat sat on the mat\n", 20);  // 460 chars
    const std::string p = write("plain.txt", body);
    CharCorpus a = cs::load_char_corpus(ds_path(p, "text", 0.1, 0.2));
    QCOMPARE(a.format, std::string("text"));
    QCOMPARE(a.source, p);
    QCOMPARE(a.train.size(), size_t(460 - 46 - 92));
    QCOMPARE(a.valid.size(), size_t(46));
    QCOMPARE(a.test.size(), size_t(92));
    // Contiguous: train is the head of the file, test its tail.
    QCOMPARE(a.vocab.decode(a.train), body.substr(0, 322));
    QCOMPARE(a.vocab.decode(a.valid), body.substr(322, 46));
    QCOMPARE(a.vocab.decode(a.test), body.substr(368));
    // Vocabulary: <unk> then the train symbols sorted by code point.
    QCOMPARE(a.vocab.symbol(0), std::string("<unk>"));
    QCOMPARE(a.vocab.symbol(1), std::string("\n"));
    QCOMPARE(a.vocab.symbol(2), std::string(" "));
    QCOMPARE(a.vocab.symbol(3), std::string("a"));
    QCOMPARE(a.vocab.size(), size_t(1 + 11));  // \n space a c e h m n o s t
    CharCorpus b = cs::load_char_corpus(ds_path(p, "text", 0.1, 0.2));
    QVERIFY(a.train == b.train && a.valid == b.valid && a.test == b.test);
    QVERIFY(a.vocab == b.vocab);
    // A zero fraction leaves that split empty (allowed).
    CharCorpus z = cs::load_char_corpus(ds_path(p, "text", 0.0, 0.1));
    QCOMPARE(z.valid.size(), size_t(0));
    QCOMPARE(z.test.size(), size_t(46));
  }

  void unseenSymbolsMapToUnk() {
    const std::string body = repeat("ab", 45) + "abababZZab";  // Z only in the last 10%
    const std::string p = write("unseen.txt", body);
    CharCorpus c = cs::load_char_corpus(ds_path(p, "text", 0.0, 0.1));
    QCOMPARE(c.vocab.size(), size_t(3));
    QVERIFY(!c.vocab.contains("Z"));
    QCOMPARE(c.test[6], 0);
    QCOMPARE(c.test[7], 0);
    QCOMPARE(c.test[0], c.vocab.id("a"));
  }

  void fixedVocabIsUsedAsIs() {
    Vocab v;
    v.add("b");
    v.add("q");
    const std::string p = write("fixed.txt", repeat("abc", 40));
    CharCorpus c = cs::load_char_corpus(ds_path(p, "text"), &v);
    QVERIFY(c.vocab == v);
    QCOMPARE(c.train[0], 0);  // a -> unk
    QCOMPARE(c.train[1], 1);  // b
    QCOMPARE(c.train[2], 0);  // c -> unk
  }

  void utf8MultibyteSymbols() {
    const std::string unit = "h\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93 \xF0\x9D\x84\x9E\n";  // é ö ✓ 𝄞
    const std::string body = "\xEF\xBB\xBF" + repeat(unit, 10);                             // with a BOM
    const std::string p = write("utf8.txt", body);
    CharCorpus c = cs::load_char_corpus(ds_path(p, "text", 0.1, 0.1));
    const size_t chars_per_unit = 16;  // "héllo wörld ✓ 𝄞\n"
    QCOMPARE(c.train.size() + c.valid.size() + c.test.size(), chars_per_unit * 10);
    QVERIFY(c.vocab.contains("\xC3\xA9"));
    QVERIFY(c.vocab.contains("\xF0\x9D\x84\x9E"));
    for (const auto& s : c.vocab.symbols()) QVERIFY(s == "<unk>" || cs::utf8_symbols(s).size() == 1);
    QCOMPARE(c.vocab.decode(c.train) + c.vocab.decode(c.valid) + c.vocab.decode(c.test), repeat(unit, 10));
    // Code-point order: the 4-byte symbol sorts last.
    QCOMPARE(c.vocab.symbol(static_cast<int32_t>(c.vocab.size() - 1)), std::string("\xF0\x9D\x84\x9E"));
  }

  void crlfReadAsNewline() {
    const std::string p = write("crlf.txt", repeat("ab\r\n", 30));
    CharCorpus c = cs::load_char_corpus(ds_path(p, "text", 0.1, 0.1));
    QCOMPARE(c.train.size() + c.valid.size() + c.test.size(), size_t(90));
    QVERIFY(!c.vocab.contains("\r"));
    QVERIFY(c.vocab.contains("\n"));
  }

  void maxCharsCapsTheCorpus() {
    const std::string p = write("cap.txt", repeat("abcd", 100));
    CharCorpus c = cs::load_char_corpus(ds_path(p, "text", 0.1, 0.1, 100));
    QCOMPARE(c.train.size(), size_t(80));
    QCOMPARE(c.valid.size(), size_t(10));
    QCOMPARE(c.test.size(), size_t(10));
  }

  void ptbCharDecoding() {
    write("ptb/ptb.char.train.txt", " a _ b c\n d _ e \n\n f\n");
    write("ptb/ptb.char.valid.txt", "a _ b\nc\n");
    write("ptb/ptb.char.test.txt", "e _ f");  // no final newline
    const std::string dir = tmp("ptb");
    CharCorpus c = cs::load_char_corpus(ds_path(dir));
    QCOMPARE(c.format, std::string("ptb_char"));
    QCOMPARE(c.vocab.decode(c.train), std::string("a bc\nd e\nf\n"));
    QCOMPARE(c.vocab.decode(c.valid), std::string("a b\nc\n"));
    QCOMPARE(c.vocab.decode(c.test), std::string("e f\n"));  // final newline added
    QVERIFY(!c.vocab.contains("_"));
    // One of the files also works, in auto and explicit format.
    CharCorpus d = cs::load_char_corpus(ds_path(tmp("ptb/ptb.char.valid.txt")));
    QVERIFY(d.train == c.train && d.vocab == c.vocab);
    // line_spans over the train split: "a bc", "d e", "f".
    auto spans = cs::line_spans(c.train, c.vocab.id("\n"));
    QCOMPARE(spans.size(), size_t(3));
    QCOMPARE(spans[0], std::make_pair(size_t(0), size_t(4)));
    QCOMPARE(spans[1], std::make_pair(size_t(5), size_t(8)));
    QCOMPARE(spans[2], std::make_pair(size_t(9), size_t(10)));
    // A multi-character token means the file is not ptb_char.
    write("ptbbad/ptb.char.train.txt", "a b\nab c\n");
    write("ptbbad/ptb.char.valid.txt", "a b\n");
    write("ptbbad/ptb.char.test.txt", "a b\n");
    expect_user_error([&] { cs::load_char_corpus(ds_path(tmp("ptbbad"))); },
                      {tmp("ptbbad/ptb.char.train.txt"), "line 2", "'ab'"});
    // A missing sibling is named.
    write("ptbmiss/ptb.char.train.txt", "a b\n");
    expect_user_error([&] { cs::load_char_corpus(ds_path(tmp("ptbmiss"))); },
                      {tmp("ptbmiss/ptb.char.valid.txt"), "does not exist"});
  }

  void text8Proportions() {
    const std::string p = write("text8", repeat("anarchism originated ", 50).substr(0, 1000));
    CharCorpus c = cs::load_char_corpus(ds_path(p, "auto", 0.3, 0.3));  // fractions ignored
    QCOMPARE(c.format, std::string("text8"));
    QCOMPARE(c.train.size(), size_t(900));
    QCOMPARE(c.valid.size(), size_t(50));
    QCOMPARE(c.test.size(), size_t(50));
    const std::string q = write("odd-size.t8", repeat("x y", 339));  // 1017 chars
    CharCorpus d = cs::load_char_corpus(ds_path(q, "text8"));
    QCOMPARE(d.valid.size(), size_t(50));
    QCOMPARE(d.test.size(), size_t(50));
    QCOMPARE(d.train.size(), size_t(917));
    QCOMPARE(cs::detect_char_format("/x/text8"), std::string("text8"));
    QCOMPARE(cs::detect_char_format("/x/book.txt"), std::string("text"));
    QCOMPARE(cs::detect_char_format("/x/ptb.char.test.txt"), std::string("ptb_char"));
  }

  void vocabRoundTrip() {
    Vocab v;
    QCOMPARE(v.size(), size_t(1));
    QCOMPARE(v.add("<unk>"), 0);  // the literal text shares id 0
    const std::vector<std::string> awkward = {"\n", "\t", " ", "\\", "\\n", "\r", "a", "\xC3\xA9",
                                              "\x01", "\x7F", "", "two words", "<unk>x", "#"};
    for (const auto& s : awkward) v.add(s);
    QCOMPARE(v.size(), awkward.size() + 1);
    QCOMPARE(v.add("a"), v.id("a"));  // idempotent
    const std::string text = v.serialize();
    // Every symbol is one visible line: no raw tab/CR/space inside lines.
    QVERIFY(text.find('\t') == std::string::npos);
    QVERIFY(text.find('\r') == std::string::npos);
    QCOMPARE(text.substr(0, text.find('\n')), std::string("cellscope-vocab 1 15"));
    QVERIFY(text.find("\n\\s\n") != std::string::npos);
    QVERIFY(text.find("\n\\\\\n") != std::string::npos);
    QVERIFY(text.find("\n\\\\n\n") != std::string::npos);
    QVERIFY(text.find("\ntwo\\swords\n") != std::string::npos);
    Vocab w = Vocab::deserialize(text, "mem");
    QVERIFY(w == v);
    for (const auto& s : awkward) QCOMPARE(w.id(s), v.id(s));
    QCOMPARE(w.id("never seen"), 0);
    QCOMPARE(w.symbol(0), std::string("<unk>"));
    // File round trip (atomic save).
    const std::string p = tmp("vocab");
    v.save(p);
    QVERIFY(Vocab::load(p) == v);
    QVERIFY(!QFile::exists(QString::fromStdString(p + ".tmp")));
  }

  void vocabMalformed() {
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
    expect_user_error([] { Vocab::load(tmp("no-such-vocab")); }, {tmp("no-such-vocab"), "does not exist"});
  }

  void badInputsNameTheFile() {
    const std::string missing = tmp("missing.txt");
    expect_user_error([&] { cs::load_char_corpus(ds_path(missing, "text")); }, {missing, "does not exist"});
    const std::string empty = write("empty.txt", "");
    expect_user_error([&] { cs::load_char_corpus(ds_path(empty, "text")); }, {empty, "empty"});
    const std::string nul = write("nul.bin", repeat("abc", 100) + std::string("\0\x01\x02", 3) + "abc");
    expect_user_error([&] { cs::load_char_corpus(ds_path(nul, "text")); }, {nul, "binary", "offset 300"});
    std::string ctl = repeat("ab", 100);
    for (size_t i = 0; i < ctl.size(); i += 4) ctl[i] = '\x03';
    const std::string ctlp = write("ctl.bin", ctl);
    expect_user_error([&] { cs::load_char_corpus(ds_path(ctlp, "text")); }, {ctlp, "binary"});
    const std::string bad = write("bad-utf8.txt", repeat("abcd", 25) + "\xC3(" + repeat("x", 50));
    expect_user_error([&] { cs::load_char_corpus(ds_path(bad, "text")); }, {bad, "UTF-8", "byte offset 100"});
    const std::string overlong = write("overlong.txt", repeat("a", 60) + "\xC0\xAF" + repeat("a", 60));
    expect_user_error([&] { cs::load_char_corpus(ds_path(overlong, "text")); }, {overlong, "byte offset 60"});
    const std::string surrogate = write("surrogate.txt", repeat("a", 40) + "\xED\xA0\x80");
    expect_user_error([&] { cs::load_char_corpus(ds_path(surrogate, "text")); }, {surrogate, "byte offset 40"});
    const std::string cut = write("cut.txt", repeat("a", 40) + "\xE2\x9C");
    expect_user_error([&] { cs::load_char_corpus(ds_path(cut, "text")); }, {cut, "byte offset 40"});
    const std::string small = write("small.txt", "abc");
    expect_user_error([&] { cs::load_char_corpus(ds_path(small, "text")); }, {small, "too small"});
    const std::string one = write("one.txt", "a");
    expect_user_error([&] { cs::load_char_corpus(ds_path(one, "text", 0.0, 0.0)); }, {one, "too small", "train"});
    expect_user_error([&] { cs::load_char_corpus(ds_path(tmp("ptb"), "text")); }, {tmp("ptb"), "directory"});
    expect_user_error([&] { cs::load_char_corpus(ds_path(small, "csv")); }, {"csv"});
  }

  void manifestResolution() {
    const std::string cache = tmp("cache");
    cs::make_dirs(cache);
    const json manifest = {
        {"version", 1},
        {"datasets",
         {{{"name", "tiny"}, {"tasks", {"char_lm"}}, {"format", "text"}, {"obtain", "npm"},
           {"source", {{"npm", "@example/tiny"}, {"file", "package/data.txt"}}}, {"path", "tiny.txt"},
           {"files", {"tiny.txt"}}},
          {{"name", "ptb-char"}, {"tasks", {"char_lm"}}, {"format", "ptb_char"}, {"obtain", "user"},
           {"source", {{"url", "https://example.org/ptb"}}}, {"path", "ptb-char"},
           {"files", {"ptb-char/ptb.char.train.txt"}}}}}};
    const std::string mpath = write("manifest.json", manifest.dump(2));
    EnvGuard g1("CELLSCOPE_MANIFEST", mpath);
    EnvGuard g2("CELLSCOPE_DATA_DIR", cache);
    QCOMPARE(cs::datasets_manifest_path(), mpath);
    QCOMPARE(cs::data_cache_dir(), cache);
    const json m = cs::load_manifest();
    QCOMPARE(cs::manifest_names(m), (std::vector<std::string>{"tiny", "ptb-char"}));

    json ds = {{"name", "tiny"}, {"path", nullptr}, {"format", "auto"}, {"valid_fraction", 0.1},
               {"test_fraction", 0.1}, {"max_chars", 0}};
    expect_user_error([&] { cs::load_char_corpus(ds); },
                      {"'tiny'", cs::join_path(cache, "tiny.txt"), "datasets/fetch.sh"});
    write("cache/tiny.txt", repeat("fetched ", 20));
    auto loc = cs::resolve_dataset(ds);
    QCOMPARE(loc.path, cs::join_path(cache, "tiny.txt"));
    QCOMPARE(loc.format, std::string("text"));
    QCOMPARE(loc.name, std::string("tiny"));
    CharCorpus c = cs::load_char_corpus(ds);
    QCOMPARE(c.train.size(), size_t(128));
    QCOMPARE(c.source, cs::join_path(cache, "tiny.txt"));

    ds["name"] = "ptb-char";
    expect_user_error([&] { cs::load_char_corpus(ds); }, {"'ptb-char'", "https://example.org/ptb", "dataset.path"});
    ds["name"] = "nope";
    expect_user_error([&] { cs::resolve_dataset(ds); }, {"'nope'", "tiny, ptb-char", mpath});
    // dataset.path overrides the name.
    ds["path"] = cs::join_path(cache, "tiny.txt");
    QCOMPARE(cs::resolve_dataset(ds).path, cs::join_path(cache, "tiny.txt"));
    QCOMPARE(cs::resolve_dataset(ds).name, std::string());

    const std::string broken = write("broken-manifest.json", "{ not json");
    EnvGuard g3("CELLSCOPE_MANIFEST", broken);
    ds["path"] = nullptr;
    expect_user_error([&] { cs::resolve_dataset(ds); }, {broken, "not valid JSON"});
  }

  void pathsFollowEnvironment() {
    {
      EnvGuard g("CELLSCOPE_RESOURCES", "/some/where");
      QCOMPARE(cs::resources_dir(), std::string("/some/where"));
    }
    {
      EnvGuard g("CELLSCOPE_RESOURCES", "");
      // From a build tree the source tree's resources/ is used when it exists.
      const std::string src_res = cstest::source_dir().toStdString() + "/resources";
      if (cs::dir_exists(src_res))
        QCOMPARE(cs::resources_dir(), src_res);
      else
        QVERIFY(cs::resources_dir() != src_res && !cs::resources_dir().empty());
    }
    {
      EnvGuard g("CELLSCOPE_DATA_DIR", "");
      EnvGuard x("XDG_CACHE_HOME", "/xdg");
      // A writable source tree keeps its cache inside; otherwise the XDG cache is used.
      const std::string src = cstest::source_dir().toStdString();
      if (::access(src.c_str(), W_OK) == 0)
        QCOMPARE(cs::data_cache_dir(), src + "/.cache/datasets");
      else
        QCOMPARE(cs::data_cache_dir(), std::string("/xdg/cellscope/datasets"));
    }
    {
      EnvGuard g("CELLSCOPE_MANIFEST", "");
      QCOMPARE(cs::datasets_manifest_path(), cstest::source_dir().toStdString() + "/datasets/manifest.json");
    }
  }

  void shippedManifestIsValid() {
    EnvGuard g("CELLSCOPE_MANIFEST", "");
    const json m = cs::load_manifest();
    for (const char* n : {"moby-dick", "sotu", "spam-assassin"}) {
      const json* e = cs::find_manifest_entry(m, n);
      QVERIFY2(e, n);
      QCOMPARE((*e)["obtain"].get<std::string>(), std::string("npm"));
    }
    for (const auto& e : m["datasets"]) {
      QVERIFY(e.contains("licence"));
      QVERIFY(e.contains("description"));
      QVERIFY(e.contains("split"));
    }
  }
};

CS_TEST(TestData, "data")
#include "test_data.moc"
