// The one word tokenizer (data/tokenizer.h): ICU's NFC, UAX #29 word breaks and Unicode
// lower-casing; where it agrees with the legacy rules and where not; the legacy rules for a run
// written before dataset.tokenizer existed (its vocabulary loads and evaluates the same); a new
// run records icu; both tokenizers on Moby-Dick (throughput printed, token counts compared).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "config/schema.h"
#include "corpus_fixture.h"
#include "data/seq2seq_data.h"
#include "data/text_metrics.h"
#include "data/tokenizer.h"
#include "data/word_corpus.h"
#include "harness.h"
#include "tasks/inspect.h"
#include "tasks/task.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_tokenizer {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& w : v) s += (s.empty() ? "" : "|") + w;
  return s;
}

TokenizerOptions icu(bool lowercase = true) {
  TokenizerOptions o;
  o.rules = kTokenizerIcu;
  o.lowercase = lowercase;
  return o;
}

TokenizerOptions legacy(LegacyRules r, bool lowercase = true) {
  TokenizerOptions o;
  o.rules = kTokenizerLegacy;
  o.legacy_rules = r;
  o.lowercase = lowercase;
  return o;
}

const std::string kUberNfc =
    "\xC3\x9C"
    "ber";  // U+00DC
const std::string kUberNfd =
    "U\xCC\x88"
    "ber";  // U+0055 U+0308
const std::string kUberLower =
    "\xC3\xBC"
    "ber";  // über

}  // namespace

TEST(Tokenizer, unicodeLowerCase) {
  ASSERT_EQ(joined(tokenize(kUberNfc, icu())), kUberLower);
  ASSERT_EQ(joined(tokenize("\xC3\x9C"
                            "BER",
                            icu())),
            kUberLower);  // ÜBER
  // ΟΔΌΣ -> οδός (the final sigma of full lower-casing)
  ASSERT_EQ(joined(tokenize("\xCE\x9F\xCE\x94\xCE\x8C\xCE\xA3", icu())), "\xCE\xBF\xCE\xB4\xCF\x8C\xCF\x82");
  ASSERT_EQ(joined(tokenize(kUberNfc, icu(false))), kUberNfc);  // lowercase off: case kept
  // The legacy rules fold ASCII only: that is the difference a lower-cased German set shows.
  ASSERT_EQ(joined(tokenize(kUberNfc, legacy(LegacyRules::WordLM))), kUberNfc);
  ASSERT_EQ(joined(tokenize("\xC3\x9C"
                            "BER",
                            legacy(LegacyRules::Sentence))),
            "\xC3\x9C"
            "ber");
  ASSERT_EQ(lowercase_word("\xC3\x9C"
                           "BER",
                           kTokenizerIcu),
            kUberLower);
  ASSERT_EQ(lowercase_word("\xC3\x9C"
                           "BER",
                           kTokenizerLegacy),
            "\xC3\x9C"
            "ber");
}

TEST(Tokenizer, nfdEqualsNfc) {
  ASSERT_EQ(tokenize(kUberNfd, icu(false)), tokenize(kUberNfc, icu(false)));
  ASSERT_EQ(joined(tokenize(kUberNfd, icu(false))), kUberNfc);
  ASSERT_EQ(joined(tokenize("Caf"
                            "e\xCC\x81 au lait",
                            icu())),
            "caf\xC3\xA9|au|lait");
  ASSERT_EQ(lowercase_word(kUberNfd, kTokenizerIcu), kUberLower);
  // legacy keeps the bytes: the two spellings are two words
  ASSERT_NE(tokenize(kUberNfd, legacy(LegacyRules::WordLM)), tokenize(kUberNfc, legacy(LegacyRules::WordLM)));
}

TEST(Tokenizer, uax29Words) {
  ASSERT_EQ(joined(tokenize("Don't stop", icu())), "don't|stop");
  ASSERT_EQ(joined(tokenize("don\xE2\x80\x99t", icu())), "don't");  // ’ is the apostrophe
  ASSERT_EQ(joined(tokenize("pi is 3.14, not 1,000.5", icu())), "pi|is|3.14|,|not|1,000.5");
  ASSERT_EQ(joined(tokenize("my e-mail (x--y) ends-", icu())), "my|e-mail|(|x|-|-|y|)|ends|-");
  TokenizerOptions split = icu();
  split.keep_inner = false;
  ASSERT_EQ(joined(tokenize("e-mail", split)), "e|-|mail");
  // CJK: ideographs break from Latin letters, and the dictionary splits a run of them into words
  ASSERT_EQ(joined(tokenize("\xE6\x9D\xB1\xE4\xBA\xAC"
                            "Tokyo",
                            icu())),  // 東京Tokyo
            "\xE6\x9D\xB1\xE4\xBA\xAC|tokyo");
  const auto zh = tokenize("\xE6\x88\x91\xE5\x96\x9C\xE6\xAC\xA2\xE5\x8C\x97\xE4\xBA\xAC", icu());  // 我喜欢北京
  ASSERT_GE(zh.size(), size_t(2));
  ASSERT_EQ(zh.back(), "\xE5\x8C\x97\xE4\xBA\xAC");  // 北京
  // emoji: a skin-tone modifier and a ZWJ family stay one token each, apart from the words
  const std::string thumbs = "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD";  // 👍🏽
  const std::string family =
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7";  // 👨‍👩‍👧
  ASSERT_EQ(joined(tokenize("ok" + thumbs + " " + family + "!", icu())), "ok|" + thumbs + "|" + family + "|!");
  // keep_punctuation = false drops punctuation, keeps symbols and emoji
  TokenizerOptions nop = icu();
  nop.keep_punctuation = false;
  ASSERT_EQ(joined(tokenize("Hi, you " + thumbs + " $5...", nop)), "hi|you|" + thumbs + "|$|5");
  nop.max_tokens = 2;
  ASSERT_EQ(joined(tokenize("a b c d", nop)), "a|b");
  ASSERT_TRUE(tokenize(" \t\r\n\xC2\xA0 ", icu()).empty());  // white space incl. NBSP
  // dataset.tokenizer is a named enum: another name is refused where the config is read.
  ASSERT_EQ(enum_from_name<Tokenizer>("legacy"), Tokenizer::Legacy);
  ASSERT_FALSE(enum_from_name<Tokenizer>("spacy").has_value());
  ASSERT_THROW(enum_from_json<Tokenizer>(json("spacy"), "dataset.tokenizer"), UserError);
}

// Plain ASCII prose: icu gives what both legacy rule sets give. Where the rules differ (each
// checked, so a change is seen): a number with a point or comma is one token ("3.14"), a letter
// '.' letter run is one word ("U.S"), '_' joins words; legacy splits those. The word-LM legacy
// rules also make '_' a punctuation token, the sentence legacy rules keep it inside words.
TEST(Tokenizer, agreesWithLegacyOnPlainAscii) {
  const std::string prose =
      "Call me Ishmael. Some years ago - never mind how long precisely - having little or no money in my purse, "
      "and nothing particular to interest me on shore, I thought I would sail about a little and see the watery "
      "part of the world! It's a way I have of driving off the spleen; and regulating the circulation: "
      "\"whenever\" I find myself (growing grim) about the mouth... whale-ship's bow? 'quoted' x--y #1 $5 50%";
  for (bool lc : {true, false}) {
    const auto want = tokenize(prose, icu(lc));
    ASSERT_EQ(joined(tokenize(prose, legacy(LegacyRules::WordLM, lc))), joined(want)) << "lowercase " << lc;
    ASSERT_EQ(joined(tokenize(prose, legacy(LegacyRules::Sentence, lc))), joined(want)) << "lowercase " << lc;
  }
  ASSERT_EQ(joined(tokenize("3.14", legacy(LegacyRules::WordLM))), "3|.|14");
  ASSERT_EQ(joined(tokenize("3.14", icu())), "3.14");
  ASSERT_EQ(joined(tokenize("U.S.", legacy(LegacyRules::Sentence))), "u|.|s|.");
  ASSERT_EQ(joined(tokenize("U.S.", icu())), "u.s|.");
  ASSERT_EQ(joined(tokenize("snake_case", legacy(LegacyRules::WordLM))), "snake|_|case");
  ASSERT_EQ(joined(tokenize("snake_case", legacy(LegacyRules::Sentence))), "snake_case");
  ASSERT_EQ(joined(tokenize("snake_case", icu())), "snake_case");
}

// A run's config.json read back: a stored config without dataset.tokenizer (a run written before
// the option) reads as legacy; one with the key keeps it; a task without the option is unchanged.
TEST(Tokenizer, oldConfigReadsAsLegacy) {
  const json old_cfg = {{"task", {{"name", "word_lm"}}}, {"model", {{"cell", "lstm"}}}, {"dataset", {{"name", "x"}}}};
  ASSERT_EQ(as_written(old_cfg)["dataset"]["tokenizer"], "legacy");
  json cls = old_cfg;
  cls["task"]["name"] = "classify";
  ASSERT_EQ(as_written(cls)["dataset"]["tokenizer"], "legacy");
  json cloze = old_cfg;  // the cloze task's dataset.tokenizer says how dataset.lowercase folds
  cloze["task"]["name"] = "cloze";
  ASSERT_EQ(as_written(cloze)["dataset"]["tokenizer"], "legacy");
  json kept = old_cfg;
  kept["dataset"]["tokenizer"] = "icu";
  ASSERT_EQ(as_written(kept)["dataset"]["tokenizer"], "icu");
  json chr = old_cfg;
  chr["task"]["name"] = "char_lm";
  ASSERT_FALSE(as_written(chr)["dataset"].contains("tokenizer"));
  ASSERT_EQ(as_written(json::array()), json::array());
  // a new config resolves to icu
  ASSERT_EQ(resolve_config(json{{"task", "word_lm"}})["dataset"]["tokenizer"], "icu");
  ASSERT_EQ(resolve_config(json{{"task", "classify"}})["dataset"]["tokenizer"], "icu");
  ASSERT_EQ(resolve_config(json{{"task", "cloze"}, {"model", {{"cell", "gru"}}}})["dataset"]["tokenizer"], "icu");
}

// model.gcn_degree came after gcn_mzu runs were written: a stored gcn_mzu config without it reads
// as signed_clamped (what those runs computed); new configs resolve to absolute; other cells get
// nothing.
TEST(Tokenizer, asWrittenOldGcnConfigReadsAsSignedClampedDegree) {
  const json old_cfg = {
      {"task", {{"name", "char_lm"}}}, {"model", {{"cell", "gcn_mzu"}}}, {"dataset", {{"name", "x"}}}};
  ASSERT_EQ(as_written(old_cfg)["model"]["gcn_degree"], "signed_clamped");
  json kept = old_cfg;
  kept["model"]["gcn_degree"] = "absolute";
  ASSERT_EQ(as_written(kept)["model"]["gcn_degree"], "absolute");
  json sat = old_cfg;
  sat["model"]["cell"] = "sat_mzu";
  ASSERT_FALSE(as_written(sat)["model"].contains("gcn_degree"));
  ASSERT_EQ(resolve_config(json{{"task", "char_lm"}, {"model", {{"cell", "gcn_mzu"}}}})["model"]["gcn_degree"],
            "absolute");
}

// The seq2seq data's dataset.lowercase lower-cases as dataset.tokenizer says: a lower-cased
// IWSLT-style German side holds "über" (icu), not "Über" (legacy, ASCII only, as before).
TEST(Tokenizer, seq2seqLowercase) {
  const std::string d = cstest::temp_dir() + "/tok_parallel";
  std::filesystem::create_directories(d);
  for (const char* split : {"train", "valid", "test"}) {
    cstest::write_text(d + "/" + std::string(split) + ".de",
                       "\xC3\x9C"
                       "ber ALLES\nU\xCC\x88"
                       "ber Stra\xC3\x9F"
                       "e\n");
    cstest::write_text(d + "/" + std::string(split) + ".en", "ABOUT all\nover STREET\n");
  }
  json ds = {{"path", d}, {"format", "parallel"}, {"lowercase", true}};
  auto s = load_seq2seq_dataset(read_seq2seq_data_options(ds));  // an unresolved section: icu
  ASSERT_EQ(s.train[0].source, kUberLower + " alles");
  ASSERT_EQ(s.train[1].source, kUberLower +
                                   " stra\xC3\x9F"
                                   "e");  // NFD input, ß stays (lower-casing, not folding)
  ASSERT_EQ(s.train[0].target, "about all");
  ds["tokenizer"] = "legacy";
  s = load_seq2seq_dataset(read_seq2seq_data_options(ds));
  ASSERT_EQ(s.train[0].source,
            "\xC3\x9C"
            "ber alles");
  ASSERT_EQ(s.train[1].source,
            "u\xCC\x88"
            "ber stra\xC3\x9F"
            "e");  // ASCII U folded, no NFC
  ds["lowercase"] = false;
  ds["tokenizer"] = "icu";
  ASSERT_EQ(load_seq2seq_dataset(read_seq2seq_data_options(ds)).train[0].source,
            "\xC3\x9C"
            "ber ALLES");  // no lower-casing asked: as written
}

namespace {

// `cfg` trained by the CLI into temp_dir()/name: the run directory, or "" (the CLI's message on stderr).
std::string train_run(const std::string& name, const json& cfg) {
  const std::string dir = cstest::temp_dir() + "/" + name, cfgp = dir + ".json";
  cstest::write_text(cfgp, cfg.dump());
  std::string err;
  if (cstest::run_cli({"train", cfgp, "--run-dir", dir, "--quiet"}, nullptr, &err) == 0) return dir;
  std::fprintf(stderr, "train %s failed: %s\n", name.c_str(), err.c_str());
  return "";
}

json word_cfg(const std::string& text_path) {
  return json{
      {"task", "word_lm"},
      {"dataset", {{"path", text_path}, {"format", "text"}, {"lowercase", true}}},
      {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 8}, {"layers", 1}}},
      {"training", {{"batch", 4}, {"bptt", 8}, {"steps", 3}, {"eval_every", 0}, {"eval_test", false}, {"threads", 1}}}};
}

std::string text_with_umlauts() {
  std::string text = cstest::read_text(cstest::write_text_fixture("tok_fixture.txt", 12000));
  std::string out;
  size_t i = 0;
  for (const std::string& line : split_lines(text))
    out += line +
           (++i % 3 == 0 ? " \xC3\x9C"
                           "ber ALLES"
                         : "") +
           "\n";  // Über ALLES
  const std::string p = cstest::temp_dir() + "/tok_umlauts.txt";
  cstest::write_text(p, out);
  return p;
}

// A text as the run's word LM reads it (its tokenizer), words outside its vocabulary as <unk>.
std::string seed_words(Task& task, const std::string& text) {
  const TokenStepper v = task.token_stepper(text);
  std::vector<std::string> out;
  for (auto& s : v.seed_symbols) out.push_back(v.vocab && v.vocab->contains(s) ? s : std::string(Vocab::kUnk));
  return joined(out);
}

void set_tokenizer(const std::string& run, const json& value) {
  const std::string p = run + "/config.json";
  json cfg = json::parse(cstest::read_text(p));
  if (value.is_null()) cfg["dataset"].erase("tokenizer");
  else cfg["dataset"]["tokenizer"] = value;
  cstest::write_text(p, cfg.dump(2) + "\n");
}

}  // namespace

// A run written with the old rules, its config.json then stripped of the key as an old run's is:
// it loads with legacy, its vocabulary means the same (Über is a word of it, not <unk>) and it
// evaluates to the same perplexity. Read as icu instead, the same run sees other tokens.
TEST(Tokenizer, oldRunLoadsAndEvaluatesTheSame) {
  const std::string text = text_with_umlauts();
  json cfg = word_cfg(text);
  cfg["dataset"]["tokenizer"] = "legacy";
  const std::string run = train_run("tok_old", cfg);
  ASSERT_FALSE(run.empty());
  const auto probe = [&](double* ppl) {
    auto task = load_run_task(run, "last");
    *ppl = task->evaluate("valid").metrics.at("ppl");
    return seed_words(*task,
                      "\xC3\x9C"
                      "ber ALLES");
  };
  double ppl_written = 0, ppl_old = 0, ppl_icu = 0;
  const std::string toks_written = probe(&ppl_written);
  ASSERT_EQ(toks_written,
            "\xC3\x9C"
            "ber|alles");  // the legacy vocabulary: Ü not folded

  set_tokenizer(run, nullptr);  // as a run written before dataset.tokenizer
  ASSERT_EQ(RunStore(run).read_config()["dataset"]["tokenizer"], "legacy");
  ASSERT_EQ(probe(&ppl_old), toks_written);
  ASSERT_DOUBLE_EQ(ppl_old, ppl_written);

  set_tokenizer(run, "icu");                  // what the schema default would have made of it
  ASSERT_EQ(probe(&ppl_icu), "<unk>|alles");  // über is no word of the legacy vocabulary
  ASSERT_NE(ppl_icu, ppl_written);
}

// A new run records icu, and its vocabulary holds the Unicode lower-cased word only.
TEST(Tokenizer, newRunRecordsIcu) {
  const std::string run = train_run("tok_new", word_cfg(text_with_umlauts()));
  ASSERT_FALSE(run.empty());
  ASSERT_EQ(json::parse(cstest::read_text(run + "/config.json"))["dataset"]["tokenizer"], "icu");
  auto task = load_run_task(run, "last");
  ASSERT_EQ(seed_words(*task,
                       "\xC3\x9C"
                       "ber ALLES"),
            kUberLower + "|alles");
  const std::string vocab = task->vocab_text();
  ASSERT_NE(vocab.find("\n" + kUberLower + "\n"), std::string::npos);
  ASSERT_EQ(vocab.find("\n\xC3\x9C"
                       "ber\n"),
            std::string::npos);
}

// One ICU lower-casing (#54): icu_lower is what lowercase_word does after NFC and what the metrics'
// unicode_lower does to each run of valid UTF-8 (root locale, no NFC: Python's str.lower()).
TEST(Tokenizer, icuLowerIsTheOneLowerCasingOfTokenizerAndMetrics) {
  const std::string kSigma = "\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3";     // ΟΔΟΣ
  EXPECT_EQ(icu_lower(kSigma), "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82");  // οδος: final sigma
  EXPECT_EQ(icu_lower("\xC4\xB0I"), "i\xCC\x87i");                   // İI, root
  EXPECT_EQ(icu_lower("\xC4\xB0I", "tr"), "i\xC4\xB1");              // İI, Turkish: iı
  EXPECT_EQ(icu_lower("ABC xyz", "tr"), "abc xyz");
  EXPECT_EQ(icu_lower("U\xCC\x88"), "u\xCC\x88");  // no NFC: U + combining diaeresis stays two
  for (const std::string& t : {std::string("Hello"), kSigma,
                               std::string("\xC3\x9C"
                                           "ber \xE2\x84\xAA")}) {
    EXPECT_EQ(unicode_lower(t), icu_lower(t)) << t;
    EXPECT_EQ(lowercase_word(t, kTokenizerIcu), icu_lower(t)) << t;  // already NFC
  }
  EXPECT_EQ(lowercase_word("U\xCC\x88", kTokenizerIcu), icu_lower("\xC3\x9C"));  // NFC first: ü
  EXPECT_EQ(unicode_lower("A\xFF\xC3\x9C"), "a\xFF\xC3\xBC");                    // an invalid byte passes through
  EXPECT_EQ(lowercase_word("ABC\xC3\x9C", kTokenizerLegacy), "abc\xC3\x9C");     // legacy: ASCII only
}

// dataset.locale (#53): lower-casing in a language's rules. Turkish and Azeri: I -> ı (dotless), İ -> i;
// the root rules give i and i + U+0307. Lithuanian keeps the dot of i above an accent (Ì -> i̇̀). The
// tokenizer, lowercase_word, a word LM run (its vocabulary and its seed text), a seq2seq dataset and the
// configuration check all take it; a tag ICU does not know is refused naming the option.
TEST(Tokenizer, localeLowerCasing) {
  const std::string kIrmak = "IRMAK", kIstanbul =
                                          "\xC4\xB0"
                                          "STANBUL";  // IRMAK, İSTANBUL
  const std::string kTrIrmak =
                        "\xC4\xB1"
                        "rmak",
                    kTrIstanbul = "istanbul";  // ırmak, istanbul
  const std::string kRootIstanbul =
      "i\xCC\x87"
      "stanbul";  // i + U+0307
  TokenizerOptions tr = icu();
  tr.locale = "tr";
  ASSERT_EQ(joined(tokenize(kIrmak + " " + kIstanbul, tr)), kTrIrmak + "|" + kTrIstanbul);
  ASSERT_EQ(joined(tokenize(kIrmak + " " + kIstanbul, icu())), "irmak|" + kRootIstanbul);
  tr.locale = "az";
  ASSERT_EQ(joined(tokenize(kIrmak, tr)), kTrIrmak);
  ASSERT_EQ(lowercase_word(kIrmak, kTokenizerIcu, "tr"), kTrIrmak);
  ASSERT_EQ(lowercase_word(kIrmak, kTokenizerIcu), "irmak");
  ASSERT_EQ(lowercase_word("\xC3\x8C", kTokenizerIcu, "lt"), "i\xCC\x87\xCC\x80");  // Ì -> i̇̀
  ASSERT_EQ(lowercase_word("\xC3\x8C", kTokenizerIcu), "\xC3\xAC");                 // Ì -> ì
  ASSERT_EQ(locale_error(""), "");
  ASSERT_EQ(locale_error("tr-TR"), "");
  ASSERT_NE(locale_error("not a tag!"), "");
  ASSERT_NE(locale_error("qq"), "");
  // The configuration check names the option.
  json bad = word_cfg("x.txt");
  bad["dataset"]["locale"] = "not a tag!";
  const auto errs = validate_config(bad);
  ASSERT_TRUE(std::any_of(errs.begin(), errs.end(), [](const ConfigError& e) { return e.path == "dataset.locale"; }));
  // A word LM in Turkish rules: its vocabulary and its seed text.
  std::string text;
  size_t i = 0;
  for (const std::string& line : split_lines(cstest::read_text(cstest::write_text_fixture("tok_fixture.txt", 12000))))
    text += line + (++i % 3 == 0 ? " " + kIrmak + " " + kIstanbul : "") + "\n";
  const std::string path = cstest::temp_dir() + "/tok_turkish.txt";
  cstest::write_text(path, text);
  json cfg = word_cfg(path);
  cfg["dataset"]["locale"] = "tr";
  const std::string run = train_run("tok_tr", cfg);
  ASSERT_FALSE(run.empty());
  ASSERT_EQ(json::parse(cstest::read_text(run + "/config.json"))["dataset"]["locale"], "tr");
  auto task = load_run_task(run, "last");
  ASSERT_EQ(seed_words(*task, kIrmak + " " + kIstanbul), kTrIrmak + "|" + kTrIstanbul);
  const std::string vocab = task->vocab_text();
  ASSERT_NE(vocab.find("\n" + kTrIrmak + "\n"), std::string::npos);
  ASSERT_EQ(vocab.find("\nirmak\n"), std::string::npos);
  // seq2seq's dataset.lowercase in Turkish rules.
  const std::string d = cstest::temp_dir() + "/tok_parallel_tr";
  std::filesystem::create_directories(d);
  for (const char* split : {"train", "valid", "test"}) {
    cstest::write_text(d + "/" + std::string(split) + ".de", kIrmak + " " + kIstanbul + "\n");
    cstest::write_text(d + "/" + std::string(split) + ".en", "RIVER\n");
  }
  json ds = {{"path", d}, {"format", "parallel"}, {"lowercase", true}, {"locale", "tr"}};
  ASSERT_EQ(load_seq2seq_dataset(read_seq2seq_data_options(ds)).train[0].source, kTrIrmak + " " + kTrIstanbul);
  ds["locale"] = "qq";
  ASSERT_THROW(load_seq2seq_dataset(read_seq2seq_data_options(ds)), UserError);
}

// Both tokenizers over Moby-Dick (the bundled corpus), line by line as the word LM reads it:
// the throughput is printed (MB/s), and the token counts agree within 2% (ICU differs on numbers
// with points, letter.letter runs and '_' only, see agreesWithLegacyOnPlainAscii).
TEST(Tokenizer, mobyDickBothTokenizers) {
  const std::string path = join_path(data_cache_dir(), "moby-dick.txt");
  // The README's commands (and .ci/run) fetch the corpora before the tests: a missing file fails.
  ASSERT_TRUE(file_exists(path)) << path << " is not fetched: run datasets/fetch.sh";
  const std::string text = cstest::read_text(path);
  const auto lines = split_lines(text);
  size_t counts[2] = {0, 0};
  const TokenizerOptions opts[2] = {legacy(LegacyRules::WordLM), icu()};
  for (int k = 0; k < 2; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& line : lines) counts[k] += tokenize(line, opts[k]).size();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ tokenizer ] %-6s %zu tokens, %.2f MB in %.3f s: %.1f MB/s\n", enum_name(opts[k].rules), counts[k],
                static_cast<double>(text.size()) / 1e6, s, static_cast<double>(text.size()) / 1e6 / s);
  }
  ASSERT_GT(counts[0], size_t(200000));
  ASSERT_NEAR(static_cast<double>(counts[1]) / static_cast<double>(counts[0]), 1.0, 0.02);
}

}  // namespace test_tokenizer
