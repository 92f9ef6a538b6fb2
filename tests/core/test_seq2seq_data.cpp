// Sequence-to-sequence loaders (core/base/data/seq2seq_data.h): "parallel" and "gigaword"
// directories with file:line errors, the "headlines" builder from SpamAssassin-style jsonl
// (subject cleaning, body opening, dedupe, splits), and `cellscope-cli datasets show`.
#include <gtest/gtest.h>

#include "data/seq2seq_data.h"
#include "data/text_metrics.h"
#include "harness.h"
#include "util/error.h"

namespace test_seq2seq_data {  // this file's own names in a unity build (tests/README.md)

namespace {

std::string fresh_dir(const std::string& name) {
  const std::string d = cstest::temp_dir() + "/" + name;
  cs::make_dirs(d);
  return d;
}

void write_parallel(const std::string& d, const std::string& s, const std::string& t) {
  for (const char* split : {"train", "valid", "test"}) {
    cstest::write_text(d + "/" + split + "." + s, std::string(split) + " eins zwei\n" + split + " drei vier\n");
    cstest::write_text(d + "/" + split + "." + t, std::string(split) + " one two\n" + split + " three four\n");
  }
}

std::string load_error(const nlohmann::json& ds) {
  try {
    cs::load_seq2seq_dataset(cs::read_seq2seq_data_options(ds));
  } catch (const cs::UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Seq2seqData, parallelDirectory) {
  const std::string d = fresh_dir("par");
  write_parallel(d, "de", "en");
  const auto s = cs::load_seq2seq_dataset(cs::read_seq2seq_data_options({{"path", d}, {"format", "parallel"}}));
  ASSERT_EQ(s.train.size(), 2u);
  ASSERT_EQ(s.valid.size(), 2u);
  ASSERT_EQ(s.test.size(), 2u);
  ASSERT_EQ(s.train[1].source, "train drei vier");
  ASSERT_EQ(s.train[1].target, "train three four");
  ASSERT_EQ(s.test[0].target, "test one two");
  ASSERT_TRUE(cstest::contains(s.description, "de -> en")) << s.description;
  // Other languages by option; "auto" reads a directory as parallel text.
  const std::string f = fresh_dir("par_fr");
  write_parallel(f, "en", "fr");
  const auto r = cs::load_seq2seq_dataset(
      cs::read_seq2seq_data_options({{"path", f}, {"source_lang", "en"}, {"target_lang", "fr"}}));
  ASSERT_EQ(r.valid[0].source, "valid eins zwei");
  // CR LF and a missing final newline are fine.
  cstest::write_text(f + "/train.en", "a b\r\nc d");
  cstest::write_text(f + "/train.fr", "e f\r\ng h\n");
  const auto q = cs::load_parallel_dir(f, "en", "fr");
  ASSERT_EQ(q.train[1].source, "c d");
  ASSERT_EQ(q.train[0].target, "e f");
}

TEST(Seq2seqData, parallelErrorsNameFileAndLine) {
  const std::string d = fresh_dir("par_bad");
  write_parallel(d, "de", "en");
  const nlohmann::json ds = {{"path", d}, {"format", "parallel"}};
  // Line counts differ: both files and both counts named.
  cstest::write_text(d + "/valid.en", "one\ntwo\nthree\n");
  std::string m = load_error(ds);
  ASSERT_TRUE(cstest::contains(m, d + "/valid.de has 2 lines but " + d + "/valid.en has 3")) << m;
  write_parallel(d, "de", "en");
  // An empty line.
  cstest::write_text(d + "/test.de", "eins\n\nzwei\n");
  m = load_error(ds);
  ASSERT_TRUE(cstest::contains(m, d + "/test.de:2: empty line")) << m;
  write_parallel(d, "de", "en");
  // Invalid UTF-8 (Latin-1 bytes): file:line:column.
  cstest::write_text(d + "/train.de", "gut\nsch\xf6n\n");
  m = load_error(ds);
  ASSERT_TRUE(cstest::contains(m, d + "/train.de:2:4: invalid UTF-8")) << m;
  write_parallel(d, "de", "en");
  // A binary file.
  cstest::write_text(d + "/train.en", std::string("one\ntw\0o\x01\x02", 10));
  m = load_error(ds);
  ASSERT_TRUE(cstest::contains(m, d + "/train.en:2: NUL byte")) << m;
  write_parallel(d, "de", "en");
  // A missing file, and a path that is not a directory.
  std::remove((d + "/test.en").c_str());
  m = load_error(ds);
  ASSERT_TRUE(cstest::contains(m, d + "/test.en: file not found")) << m;
  m = load_error({{"path", d + "/train.de"}, {"format", "parallel"}});
  ASSERT_TRUE(cstest::contains(m, "not a directory")) << m;
  // Bad options.
  m = load_error({{"path", d}, {"format", "parallel"}, {"source_lang", 3}});
  ASSERT_TRUE(cstest::contains(m, "dataset.source_lang")) << m;
  m = load_error({{"path", d}, {"format", "cbt"}});  // a format of another task
  ASSERT_TRUE(cstest::contains(m, "'cbt' is not a seq2seq format")) << m;
  ASSERT_TRUE(cstest::contains(m, "auto, parallel, gigaword or headlines")) << m;
  m = load_error({{"path", d}, {"format", "subtitles"}});  // no format at all
  ASSERT_TRUE(cstest::contains(m, "dataset.format") && cstest::contains(m, "\"subtitles\"")) << m;
}

TEST(Seq2seqData, gigawordDirectory) {
  const std::string d = fresh_dir("giga");
  for (const char* split : {"train", "test"}) {
    cstest::write_text(d + "/" + split + ".article.txt", "australia 's current account deficit shrunk\nsecond\n");
    cstest::write_text(d + "/" + split + ".title.txt", "australian current account deficit narrows\nt2\n");
  }
  // sumdata's validation names
  cstest::write_text(d + "/valid.article.filter.txt", "v1\n");
  cstest::write_text(d + "/valid.title.filter.txt", "vt1\n");
  const auto s =
      cs::load_seq2seq_dataset(cs::read_seq2seq_data_options({{"path", d}}));  // auto: train.article.txt -> gigaword
  ASSERT_EQ(s.train.size(), 2u);
  ASSERT_EQ(s.valid.size(), 1u);
  ASSERT_EQ(s.train[0].target, "australian current account deficit narrows");
  ASSERT_EQ(s.valid[0].source, "v1");
  cstest::write_text(d + "/test.title.txt", "only one\n");
  const std::string m = load_error({{"path", d}, {"format", "gigaword"}});
  ASSERT_TRUE(cstest::contains(m, d + "/test.article.txt has 2 lines but " + d + "/test.title.txt has 1")) << m;
}

TEST(Seq2seqData, cleanSubject) {
  ASSERT_EQ(cs::clean_subject("Re: [ILUG] Re: Fwd:  New   kernel"), "New kernel");
  ASSERT_EQ(cs::clean_subject("RE: [Razor-users] keep submitting known spam?"), "keep submitting known spam?");
  ASSERT_EQ(cs::clean_subject("Re[2]: Selling Wedded Bliss (was Re: Ouch...)"), "Selling Wedded Bliss");
  ASSERT_EQ(cs::clean_subject("[Spambayes] testing results"), "testing results");
  ASSERT_EQ(cs::clean_subject("FW: AW: Meeting"), "Meeting");
  ASSERT_EQ(cs::clean_subject("Re: "), "");
  ASSERT_EQ(cs::clean_subject("[ILUG]"), "");
  // Words that only start like a prefix stay.
  ASSERT_EQ(cs::clean_subject("Report: results"), "Report: results");
  ASSERT_EQ(cs::clean_subject("[not a tag] here"), "[not a tag] here");
}

std::string mail(const std::string& subject, const std::string& body, const std::string& split) {
  return nlohmann::json({{"text", subject + "\n" + body}, {"label", "ham"}, {"split", split}}).dump() + "\n";
}

TEST(Seq2seqData, headlinesFromMails) {
  const std::string f = cstest::temp_dir() + "/mails.jsonl";
  std::string body = "On Mon, Bob wrote:\n> quoted text to skip\nFrom: someone\n-----\n";
  for (int i = 1; i <= 60; ++i) body += "w" + std::to_string(i) + (i % 10 == 0 ? "\n" : " ");
  cstest::write_text(f, mail("Re: [ILUG] The Kernel Build fails", body, "train") +
                            mail("Re: The Kernel Build fails", body, "train") +  // same pair after cleaning
                            mail("Hi", body, "train") +                          // subject too short
                            mail("A valid subject here", "too short body", "train") +
                            mail("Valid headline number two", "alpha beta gamma delta epsilon zeta", "valid") + "\n" +
                            mail("Test headline number three", body, "test"));
  cs::HeadlineOptions o;
  const auto s = cs::load_headlines_jsonl(f, o);
  ASSERT_EQ(s.train.size(), 1u);
  ASSERT_EQ(s.valid.size(), 1u);
  ASSERT_EQ(s.test.size(), 1u);
  ASSERT_EQ(s.train[0].target, "the kernel build fails");
  // The first 40 words of the body, quoted / attribution / pseudo-header / separator lines skipped.
  ASSERT_TRUE(cstest::starts_with(s.train[0].source, "w1 w2 w3")) << s.train[0].source;
  ASSERT_TRUE(cstest::contains(s.train[0].source, " w40")) << s.train[0].source;
  ASSERT_FALSE(cstest::contains(s.train[0].source, "w41")) << s.train[0].source;
  ASSERT_EQ(s.valid[0].source, "alpha beta gamma delta epsilon zeta");
  ASSERT_TRUE(cstest::contains(s.description,
                               "dropped 1 with a subject under 3 words, 1 with a body under 5 words, "
                               "1 duplicate pairs"))
      << s.description;
  // Options through the dataset section: source length and case.
  const auto t = cs::load_seq2seq_dataset(
      cs::read_seq2seq_data_options({{"path", f}, {"format", "headlines"}, {"source_words", 5}, {"lowercase", false}}));
  ASSERT_EQ(t.train[0].source, "w1 w2 w3 w4 w5");
  ASSERT_EQ(t.train[0].target, "The Kernel Build fails");
  // Bad records: file:line.
  cstest::write_text(f, mail("A fine subject line", body, "train") + "{\"text\": 5}\n");
  std::string m;
  try {
    cs::load_headlines_jsonl(f, o);
  } catch (const cs::UserError& e) {
    m = e.what();
  }
  ASSERT_TRUE(cstest::contains(m, f + ":2: expected an object with a string \"text\"")) << m;
  cstest::write_text(f, mail("A fine subject line", body, "holdout"));
  m.clear();
  try {
    cs::load_headlines_jsonl(f, o);
  } catch (const cs::UserError& e) {
    m = e.what();
  }
  ASSERT_TRUE(cstest::contains(m, f + ":1: \"split\" is 'holdout'")) << m;
}

TEST(Seq2seqData, spamHeadlinesManifestEntry) {
  // The shipped manifest's entry resolves to spam-assassin.jsonl in the data cache and builds the
  // headline pairs from it (here a fixture cache; the real counts are in datasets/README.md).
  cstest::EnvGuard m("CELLSCOPE_MANIFEST", "");
  const std::string cache = cstest::temp_dir() + "/cache_headlines";
  cstest::EnvGuard c("CELLSCOPE_DATA_DIR", cache);
  std::string body;
  for (int i = 1; i <= 50; ++i) body += "b" + std::to_string(i) + " ";
  cstest::write_text(cache + "/spam-assassin.jsonl", mail("Re: [ILUG] First headline here", body, "train") +
                                                         mail("Second headline for valid", body, "valid") +
                                                         mail("Third headline for test", body, "test"));
  const auto s = cs::load_seq2seq_dataset(cs::read_seq2seq_data_options({{"name", "spam-headlines"}}));
  ASSERT_EQ(s.train.size(), 1u);
  ASSERT_EQ(s.train[0].target, "first headline here");
  ASSERT_TRUE(cstest::starts_with(s.description, "spam-headlines: headlines from ")) << s.description;
  std::remove((cache + "/spam-assassin.jsonl").c_str());
  const std::string e = load_error({{"name", "spam-headlines"}});
  ASSERT_TRUE(cstest::contains(e, "dataset 'spam-headlines' is not fetched yet")) << e;
}

TEST(Seq2seqData, medianTargetWords) {
  // mean metric tokens (whitespace-separated), rounded: (3 + 1 + 5) / 3 = 3; 7 / 3 -> 2; 4.5 -> 5
  ASSERT_EQ(cs::default_lead_words({{"s", "a b c"}, {"s", "a"}, {"s", "a b c d e"}}), 3);
  ASSERT_EQ(cs::default_lead_words({{"s", "a b"}, {"s", "a  b"}, {"s", "a b c"}}), 2);
  ASSERT_EQ(cs::default_lead_words({{"s", "a b c d"}, {"s", "a b c d e"}}), 5);
  ASSERT_EQ(cs::default_lead_words({{"s", "a b c d e f g"}, {"s", "a"}, {"s", "a"}}), 3);  // not the median (1)
  ASSERT_EQ(cs::default_lead_words({}), 1);
}

TEST(Seq2seqData, cliShowsPairsAndLeadBaseline) {
  const std::string d = fresh_dir("par_cli");
  write_parallel(d, "de", "en");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"datasets", "show", d, "--json", "--pairs", "1", "--lead-words", "2"}, &out, &err), 0)
      << err;
  const auto j = cstest::json_object(out);
  ASSERT_EQ(j["splits"]["train"]["pairs"], 2);
  ASSERT_EQ(j["examples"].size(), 1u);
  ASSERT_EQ(j["examples"][0]["lead"], "valid eins");
  // lead "valid eins" / "valid drei" vs "valid one two" / "valid three four": BLEU 0 (since issue #36
  // sacreBLEU's: 2 of 4 unigrams and 0 of 2 bigrams match, 'exp' smoothing would lift the bigram
  // precision, but no hypothesis has a trigram, so the trigram precision is 0 and so is BLEU),
  // ROUGE-1 per pair: 1 match, P = 1/2, R = 1/3 -> F = 2/5 -> 40.
  ASSERT_NEAR(j["splits"]["valid"]["lead"]["rouge1"].get<double>(), 40.0, 1e-9);
  ASSERT_EQ(j["splits"]["valid"]["lead"]["bleu"].get<double>(), 0.0);
  ASSERT_EQ(j["bleu_signature"], cs::bleu_signature({}));  // how the lead was scored (issue #36)
  ASSERT_EQ(j["rouge_signature"], cs::rouge_signature({}));
  // A bad file: exit 2 and one message naming the file and line.
  cstest::write_text(d + "/valid.de", "eins\n\n");
  ASSERT_EQ(cstest::run_cli({"datasets", "show", d}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, d + "/valid.de:2: empty line")) << err;
  ASSERT_EQ(cstest::run_cli({"datasets", "show", "/nonexistent/xyz"}, &out, &err), 2);
}

}  // namespace

}  // namespace test_seq2seq_data
