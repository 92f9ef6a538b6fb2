// The CBT-style cloze builder (data/cbt_build.h) and its WordNet reader (data/wordnet.h):
// sentence splitting, the word-class rules on a tiny WordNet written here, the construction
// invariants (blank once, answer once among 10 candidates of its class, answer in the
// context, splits without overlap), determinism, the atomic build, the manifest route, and
// the real WordNet + Moby Dick when both are installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "data/cbt_build.h"
#include "data/manifest.h"
#include "data/wordnet.h"
#include "core_checks.h"
#include "harness.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_cbt_build {  // this file's own names in a unity build (tests/README.md)

namespace fs = std::filesystem;
using cs::json;
using cstest::EnvGuard;

namespace {

using cstest::expect_user_error;

std::string tmp(const std::string& name) { return cs::join_path(cstest::temp_dir(), "cbt/" + name); }

const std::vector<std::string> kNouns = {"cat",  "dog",   "bird", "fish", "horse", "cow", "pig",
                                         "goat", "sheep", "duck", "hen",  "fox",   "owl", "goose"};
const std::vector<std::string> kNames = {"Ahab",  "Boston", "Carla", "Dover", "Egon", "Flint", "Gort",
                                         "Hilda", "Ivo",    "Jorn",  "Kato",  "Lund", "London"};

// A WordNet directory with the files and line formats of WordNet 3.0: every noun of kNouns
// (lower case), "white" as a noun and an adjective (SemCor counts 2 vs 50), "london" spelled
// "London" in its synset, "run" as a verb, the exception "geese -> goose".
std::string write_tiny_wordnet(const std::string& dir) {
  std::ostringstream in, dn, iv, dv, ia, da;
  const std::string header = "  1 This software and database is being provided to you, the LICENSEE\n";
  in << header;
  dn << header;
  int off = 100;
  auto noun = [&](const std::string& lemma, const std::string& spelled, int lexfile) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%08d", off);
    in << lemma << " n 1 1 @ 1 0 " << buf << "  \n";
    dn << buf << " " << lexfile << " n 01 " << spelled << " 0 001 @ 00000001 n 0000 | a gloss\n";
    off += 100;
  };
  for (auto& n : kNouns) noun(n, n, 5);  // noun.animal
  noun("white", "white", 7);
  noun("london", "London", 15);
  noun("day", "day", 28);
  iv << header << "run v 1 0 1 0 00000200  \n";
  dv << header << "00000200 38 v 01 run 0 000 00 | move fast\n";
  ia << header << "white a 1 0 1 0 00000300  \n";
  da << header << "00000300 00 a 01 white 0 000 | of the colour of snow\n";
  cstest::write_text(dir + "/index.noun", in.str());
  cstest::write_text(dir + "/data.noun", dn.str());
  cstest::write_text(dir + "/index.verb", iv.str());
  cstest::write_text(dir + "/data.verb", dv.str());
  cstest::write_text(dir + "/index.adj", ia.str());
  cstest::write_text(dir + "/data.adj", da.str());
  cstest::write_text(dir + "/index.adv", header);
  cstest::write_text(dir + "/data.adv", header);
  cstest::write_text(dir + "/noun.exc", "geese goose\n");
  cstest::write_text(dir + "/cntlist.rev", "white%1:07:00:: 1 2\nwhite%3:00:01:: 1 50\ncat%1:05:00:: 1 3\n");
  return dir;
}

// n sentences "The <noun> and the <noun> met <Name> near <Name> on a white day ." in paragraphs
// of five, with a chapter heading that the builder drops.
std::string synthetic_book(int n) {
  std::string t = "CHAPTER 1. Beginnings.\n\n";
  for (int i = 0; i < n; ++i) {
    t += "The " + kNouns[(i * 3) % kNouns.size()] + " and the " + kNouns[(i * 5 + 1) % kNouns.size()] + " met " +
         kNames[(i * 7) % kNames.size()] + " near " + kNames[(i * 2 + 3) % kNames.size()] + " on a white day.";
    t += (i % 5 == 4) ? "\n\n" : " ";
  }
  return t;
}

const cs::WordNet& tiny_wordnet() {
  static const cs::WordNet wn = cs::WordNet::load(write_tiny_wordnet(tmp("wordnet")));
  return wn;
}

// A tiny CBT reader (h2 owns the real loader): the 21-line blocks of a file.
struct ReadQ {
  std::vector<std::string> lines;  // 1..20, without numbers
  std::string query, answer;
  std::vector<std::string> cands;
};
std::vector<ReadQ> read_cbt(const std::string& text) {
  std::vector<ReadQ> out;
  std::istringstream ss(text);
  std::string line;
  ReadQ q;
  int expect = 1;
  while (std::getline(ss, line)) {
    if (line.empty()) {
      EXPECT_EQ(expect, 1) << "blank line inside a question";
      continue;
    }
    const std::string num = std::to_string(expect) + " ";
    EXPECT_TRUE(cstest::starts_with(line, num)) << line;
    const std::string rest = line.substr(num.size());
    if (expect < 21) {
      q.lines.push_back(rest);
      ++expect;
      continue;
    }
    const auto f = cstest::split(rest, '\t');
    EXPECT_EQ(f.size(), 4u) << line;
    if (f.size() == 4) {
      q.query = f[0];
      q.answer = f[1];
      EXPECT_EQ(f[2], "");
      q.cands = cstest::split(f[3], '|');
    }
    out.push_back(q);
    q = ReadQ();
    expect = 1;
  }
  EXPECT_EQ(expect, 1) << "file ends inside a question";
  return out;
}

std::vector<std::string> words(const std::string& s) { return cstest::split(s, ' ', true); }

}  // namespace

TEST(CbtBuild, sentenceSplittingAndTokens) {
  const auto s = cs::cbt_sentences(
      "CHAPTER 3. The Heading.\n\n“Call me Ishmael,” said he. Mr. Smith’s dog\nran! Did it? Yes…\n\n"
      "A second paragraph without an end\n\n— ; —\n");
  ASSERT_EQ(s.size(), 5u);
  ASSERT_EQ(s[0], (std::vector<std::string>{"“", "Call", "me", "Ishmael", ",", "”", "said", "he", "."}));
  ASSERT_EQ(s[1], (std::vector<std::string>{"Mr.", "Smith", "'s", "dog", "ran", "!"}));
  ASSERT_EQ(s[2], (std::vector<std::string>{"Did", "it", "?"}));
  ASSERT_EQ(s[3], (std::vector<std::string>{"Yes", "…"}));
  ASSERT_EQ(s[4], (std::vector<std::string>{"A", "second", "paragraph", "without", "an", "end"}));
  // closing quotes stay with the sentence they close
  const auto q = cs::cbt_sentences("He cried, “Stop!” Then silence.");
  ASSERT_EQ(q.size(), 2u);
  ASSERT_EQ(q[0].back(), "”");
}

TEST(CbtBuild, wordNetRules) {
  const cs::WordNet& wn = tiny_wordnet();
  ASSERT_EQ(wn.morphy("cats", 'n'), std::vector<std::string>{"cat"});
  ASSERT_EQ(wn.morphy("geese", 'n'), std::vector<std::string>{"goose"});
  ASSERT_TRUE(wn.morphy("glass", 'n').empty());  // no detachment of "ss" nouns
  ASSERT_EQ(wn.morphy("runs", 'v'), std::vector<std::string>{"run"});
  ASSERT_EQ(wn.first_lexfile("owls", 'n'), 5);
  ASSERT_EQ(wn.first_lexfile("london", 'n'), 15);
  ASSERT_EQ(wn.tag_count("white", 'a'), 50);
  ASSERT_TRUE(wn.common_noun("cat"));
  ASSERT_TRUE(wn.common_noun("dogs"));
  ASSERT_TRUE(wn.common_noun("geese"));
  ASSERT_FALSE(wn.common_noun("white"));    // tagged 50 times as an adjective, 2 as a noun
  ASSERT_FALSE(wn.common_noun("london"));   // WordNet spells it "London"
  ASSERT_FALSE(wn.common_noun("unicorn"));  // not in this WordNet
  ASSERT_TRUE(wn.common_word("white"));
  ASSERT_TRUE(wn.common_word("runs"));
  ASSERT_FALSE(wn.common_word("london"));
  ASSERT_FALSE(wn.common_word("ahab"));

  const std::vector<std::string> s = {"The", "cats", "of", "London", "met", "Cat",
                                      "and", "Ahab", "'s", "white",  "owl", "."};
  std::string cls;
  for (size_t i = 0; i < s.size(); ++i) cls += cs::cbt_word_class(s, i, wn) ? cs::cbt_word_class(s, i, wn) : '.';
  ASSERT_EQ(cls, std::string(".C.N...N..C."));
  // the first word of a sentence is never a named entity by itself
  const std::vector<std::string> t = {"“", "Ahab", "met", "Ahab", "."};
  ASSERT_EQ(cs::cbt_word_class(t, 1, wn), 0);
  ASSERT_EQ(cs::cbt_word_class(t, 3, wn), 'N');

  expect_user_error([] { cs::WordNet::load(tmp("no-such-wordnet")); },
                    {"no-such-wordnet", "apt-get install wordnet-base"});
  const std::string partial = tmp("partial-wordnet");
  write_tiny_wordnet(partial);
  fs::remove(partial + "/data.verb");
  expect_user_error([&] { cs::WordNet::load(partial); }, {partial + "/data.verb", "wordnet-base"});
}

TEST(CbtBuild, questionsKeepCbtInvariants) {
  const cs::WordNet& wn = tiny_wordnet();
  const auto sents = cs::cbt_sentences(synthetic_book(300));
  ASSERT_EQ(sents.size(), 300u);  // the heading is dropped
  for (const char* wc : {"CN", "NE"}) {
    cs::CbtBuildOptions o;
    o.word_class = wc;
    const char want = o.word_class == "CN" ? 'C' : 'N';
    const cs::CbtBuild b = cs::build_cbt_questions(sents, wn, o);
    ASSERT_EQ(b.train_stats.sentences + b.valid_stats.sentences + b.test_stats.sentences, 300);
    ASSERT_EQ(b.valid_stats.sentences, 30);
    ASSERT_EQ(b.test_stats.sentences, 30);
    ASSERT_GT(b.train.size(), 100u) << wc;
    ASSERT_GT(b.valid.size(), 0u) << wc;
    ASSERT_GT(b.test.size(), 0u) << wc;
    ASSERT_EQ(b.train_stats.windows, 240 - 20);
    const cs::CbtSplitStats& st = b.train_stats;
    ASSERT_EQ(st.questions + st.no_class_word + st.skipped_not_in_context + st.skipped_few_candidates, st.windows);
    // split ranges: [0,240) [240,270) [270,300); a window is sentences [q-20, q]
    const std::pair<const std::vector<cs::CbtQuestion>*, std::pair<int64_t, int64_t>> splits[3] = {
        {&b.train, {0, 240}}, {&b.valid, {240, 270}}, {&b.test, {270, 300}}};
    for (auto& [qs, range] : splits)
      for (const cs::CbtQuestion& q : *qs) {
        ASSERT_GE(q.sentence - 20, range.first);
        ASSERT_LT(q.sentence, range.second);
        ASSERT_EQ(q.context.size(), 20u);
        for (int k = 0; k < 20; ++k) ASSERT_EQ(q.context[k], sents[q.sentence - 20 + k]);
        // the blank exactly once; filling it gives back the sentence; the answer is of the class there
        ASSERT_EQ(std::count(q.query.begin(), q.query.end(), "XXXXX"), 1);
        const size_t pos = std::find(q.query.begin(), q.query.end(), "XXXXX") - q.query.begin();
        std::vector<std::string> filled = q.query;
        filled[pos] = q.answer;
        ASSERT_EQ(filled, sents[q.sentence]);
        ASSERT_EQ(cs::cbt_word_class(sents[q.sentence], pos, wn), want);
        // 10 distinct candidates, sorted, the answer exactly once, each of the class in the context
        ASSERT_EQ(q.candidates.size(), 10u);
        ASSERT_TRUE(std::is_sorted(q.candidates.begin(), q.candidates.end()));
        ASSERT_EQ(std::set<std::string>(q.candidates.begin(), q.candidates.end()).size(), 10u);
        ASSERT_EQ(std::count(q.candidates.begin(), q.candidates.end(), q.answer), 1);
        for (const auto& c : q.candidates) {
          bool found = false;
          for (const auto& s : q.context)
            for (size_t i = 0; i < s.size(); ++i)
              if (s[i] == c && cs::cbt_word_class(s, i, wn) == want) found = true;
          ASSERT_TRUE(found) << c << " is not a " << wc << " of the context";
        }
      }
  }
  // fewer than 10 distinct words of the class in the context: skipped and counted
  cs::CbtBuildOptions sixteen;
  sixteen.candidates = 16;  // the book has 15 common nouns (14 animals and "day")
  const cs::CbtBuild none = cs::build_cbt_questions(sents, wn, sixteen);
  ASSERT_TRUE(none.train.empty());
  ASSERT_GT(none.train_stats.skipped_few_candidates, 0);
}

TEST(CbtBuild, deterministicAndSeeded) {
  const cs::WordNet& wn = tiny_wordnet();
  const auto sents = cs::cbt_sentences(synthetic_book(300));
  cs::CbtBuildOptions o;
  const std::string a = cs::cbt_text(cs::build_cbt_questions(sents, wn, o).train);
  const std::string b = cs::cbt_text(cs::build_cbt_questions(sents, wn, o).train);
  ASSERT_EQ(a, b);
  o.seed = 19;
  const std::string c = cs::cbt_text(cs::build_cbt_questions(sents, wn, o).train);
  ASSERT_NE(a, c);
}

TEST(CbtBuild, filesInCbtFormatAndAtomicBuild) {
  const std::string wndir = tmp("wordnet");
  tiny_wordnet();
  const std::string book = tmp("book.txt");
  cstest::write_text(book, synthetic_book(300));
  const std::string out = tmp("built/cn");
  cs::CbtBuildOptions o;
  const cs::CbtBuild b = cs::build_cbt_dataset(book, wndir, out, o, "synthetic");
  const std::pair<const char*, const std::vector<cs::CbtQuestion>*> splits[3] = {
      {"train", &b.train}, {"valid", &b.valid}, {"test", &b.test}};
  for (auto& [name, qs] : splits) {
    const std::string text = cstest::read_text(out + "/" + cs::cbt_file_name("CN", name));
    const auto rq = read_cbt(text);
    ASSERT_EQ(rq.size(), qs->size()) << name;
    for (size_t i = 0; i < rq.size(); ++i) {
      ASSERT_EQ(rq[i].answer, (*qs)[i].answer);
      ASSERT_EQ(rq[i].cands, (*qs)[i].candidates);
      ASSERT_EQ(words(rq[i].query), (*qs)[i].query);
      ASSERT_EQ(cstest::count(" " + rq[i].query + " ", " XXXXX "), 1);
      bool in_context = false;
      for (auto& l : rq[i].lines)
        for (auto& w : words(l)) in_context = in_context || w == rq[i].answer;
      ASSERT_TRUE(in_context);
    }
  }
  // no window overlaps two splits: the last query sentence of a split precedes the first
  // context sentence of the next
  ASSERT_LT(b.train.back().sentence, b.valid.front().sentence - 20);
  ASSERT_LT(b.valid.back().sentence, b.test.front().sentence - 20);
  const json info = cstest::json_object(cstest::read_text(out + "/build.json"));
  ASSERT_EQ(info["counts"]["train"]["questions"].get<int64_t>(), static_cast<int64_t>(b.train.size()));
  ASSERT_EQ(info["source"].get<std::string>(), "synthetic");

  // a book too short for the valid split fails: nothing is left behind, an old build survives
  const std::string short_book = tmp("short.txt");
  cstest::write_text(short_book, synthetic_book(60));
  const std::string out2 = tmp("built/short");
  expect_user_error([&] { cs::build_cbt_dataset(short_book, wndir, out2, o); }, {"valid", "too short"});
  ASSERT_FALSE(fs::exists(out2));
  const std::string before = cstest::read_text(out + "/cbt_CN_train.txt");
  expect_user_error([&] { cs::build_cbt_dataset(short_book, wndir, out, o); }, {"too short"});
  ASSERT_EQ(cstest::read_text(out + "/cbt_CN_train.txt"), before);
  for (const auto& e : fs::directory_iterator(tmp("built")))
    ASSERT_TRUE(e.path().filename() == "cn") << "left behind: " << e.path();
  // A rebuild replaces only its own earlier build: a folder holding anything else is refused and
  // left as it is, file for file (#52: it was removed whole), and so is a user's ".cn.tmp-PID".
  ASSERT_EQ(cs::not_an_earlier_cbt_build(out), "");
  cs::build_cbt_dataset(book, wndir, out, o, "synthetic");  // its own earlier build: replaced
  ASSERT_EQ(cstest::read_text(out + "/cbt_CN_train.txt"), before);
  const std::string planted_tmp = tmp("built/.cn.tmp-" + std::to_string(::getpid()));
  cstest::write_text(planted_tmp + "/mine.txt", "mine");
  cstest::write_text(out + "/notes.txt", "my notes");
  const std::string why = cs::not_an_earlier_cbt_build(out);
  ASSERT_TRUE(cstest::contains(why, "notes.txt")) << why;
  expect_user_error([&] { cs::build_cbt_dataset(book, wndir, out, o); }, {out, "notes.txt", "left as it is"});
  ASSERT_EQ(cstest::read_text(out + "/notes.txt"), "my notes");
  ASSERT_EQ(cstest::read_text(out + "/cbt_CN_train.txt"), before);
  ASSERT_EQ(cstest::read_text(planted_tmp + "/mine.txt"), "mine");
  const std::string other = tmp("built/other");
  cstest::write_text(other + "/build.json", "{\"builder\": \"someone else\"}");
  expect_user_error([&] { cs::build_cbt_dataset(book, wndir, other, o); }, {"did not write"});
  ASSERT_EQ(cstest::read_text(other + "/build.json"), "{\"builder\": \"someone else\"}");
  for (const auto& e : fs::directory_iterator(tmp("built"))) {
    const std::string n = e.path().filename().string();
    ASSERT_TRUE(n == "cn" || n == "other" || e.path().string() == planted_tmp) << "left behind: " << e.path();
  }
}

TEST(CbtBuild, manifestBuildsOnFirstUse) {
  const std::string cache = tmp("cache");
  cs::make_dirs(cache);
  tiny_wordnet();
  json manifest = {
      {"version", 1},
      {"datasets",
       {{{"name", "book"}, {"format", "text"}, {"obtain", "npm"}, {"path", "book.txt"}, {"files", {"book.txt"}}},
        {{"name", "book-cbt-ne"},
         {"tasks", {"cloze"}},
         {"format", "cbt"},
         {"obtain", "build"},
         {"build", {{"builder", "cbt"}, {"from", "book"}, {"class", "NE"}, {"seed", 18}}},
         {"path", "book-cbt-ne"},
         {"files",
          {"book-cbt-ne/cbt_NE_train.txt", "book-cbt-ne/cbt_NE_valid.txt", "book-cbt-ne/cbt_NE_test.txt",
           "book-cbt-ne/build.json"}}}}}};
  const std::string mpath = tmp("manifest.json");
  cstest::write_text(mpath, manifest.dump(2));
  EnvGuard g1("CELLSCOPE_MANIFEST", mpath);
  EnvGuard g2("CELLSCOPE_DATA_DIR", cache);
  EnvGuard g3("CELLSCOPE_WORDNET_DIR", tmp("wordnet"));
  const json ds = {{"name", "book-cbt-ne"}, {"format", "auto"}};
  // the book is missing: say which command fetches it
  expect_user_error([&] { cs::resolve_dataset(cs::dataset_option_table().read_partial(ds)); },
                    {"'book-cbt-ne'", "'book'", "not fetched", "datasets/fetch.sh"});
  ASSERT_FALSE(fs::exists(cache + "/book-cbt-ne"));
  cstest::write_text(cache + "/book.txt", synthetic_book(300));
  {
    EnvGuard g4("CELLSCOPE_WORDNET_DIR", tmp("nowhere"));
    expect_user_error([&] { cs::resolve_dataset(cs::dataset_option_table().read_partial(ds)); }, {"wordnet-base"});
    ASSERT_FALSE(fs::exists(cache + "/book-cbt-ne"));
  }
  const cs::DatasetLocation loc = cs::resolve_dataset(cs::dataset_option_table().read_partial(ds));
  ASSERT_EQ(loc.path, cache + "/book-cbt-ne");
  ASSERT_EQ(cs::to_string(loc.format), std::string("cbt"));
  ASSERT_FALSE(read_cbt(cstest::read_text(loc.path + "/cbt_NE_train.txt")).empty());
  // the second call finds it built (same files, not rebuilt)
  const auto mtime = fs::last_write_time(loc.path + "/cbt_NE_train.txt");
  ASSERT_EQ(cs::resolve_dataset(cs::dataset_option_table().read_partial(ds)).path, loc.path);
  ASSERT_EQ(fs::last_write_time(loc.path + "/cbt_NE_train.txt"), mtime);
  // another seed in the manifest: the cached build no longer matches and is rebuilt
  const std::string old_text = cstest::read_text(loc.path + "/cbt_NE_train.txt");
  manifest["datasets"][1]["build"]["seed"] = 19;
  cstest::write_text(mpath, manifest.dump(2));
  ASSERT_EQ(cs::resolve_dataset(cs::dataset_option_table().read_partial(ds)).path, loc.path);
  ASSERT_EQ(cstest::json_object(cstest::read_text(loc.path + "/build.json"))["seed"].get<int64_t>(), 19);
  ASSERT_NE(cstest::read_text(loc.path + "/cbt_NE_train.txt"), old_text);
}

TEST(CbtBuild, realWordNetAndMobyDick) {
  const std::string book = cstest::source_dir() + "/.cache/datasets/moby-dick.txt";
  const std::string wndir = "/usr/share/wordnet";
  // packaging/setup.sh installs WordNet and fetches the book before any test runs: a missing
  // one is a broken set-up, reported as a failure rather than a skip.
  if (!cs::file_exists(book) || !cs::file_exists(wndir + "/index.noun"))
    FAIL() << "needs " << book << " (bash datasets/fetch.sh) and " << wndir << " (apt-get install wordnet-base)";
  const cs::WordNet wn = cs::WordNet::load(wndir);
  // the rules on real entries
  ASSERT_TRUE(wn.common_noun("whale"));
  ASSERT_TRUE(wn.common_noun("harpoons"));
  ASSERT_FALSE(wn.common_noun("white"));
  ASSERT_FALSE(wn.common_noun("does"));
  ASSERT_FALSE(wn.common_noun("his"));  // morphy's "hi" is too short
  ASSERT_FALSE(wn.common_word("ahab"));
  ASSERT_TRUE(wn.common_word("flask"));
  const auto sents = cs::cbt_sentences(cs::read_file(book));
  ASSERT_GT(sents.size(), 8000u);
  ASSERT_LT(sents.size(), 12000u);
  cs::CbtBuildOptions o;
  const cs::CbtBuild cn = cs::build_cbt_questions(sents, wn, o);
  std::printf("Moby Dick CN: %zu / %zu / %zu questions\n", cn.train.size(), cn.valid.size(), cn.test.size());
  ASSERT_GT(cn.train.size(), 3000u);
  ASSERT_GT(cn.valid.size(), 300u);
  ASSERT_GT(cn.test.size(), 300u);
  o.word_class = "NE";
  const cs::CbtBuild ne = cs::build_cbt_questions(sents, wn, o);
  std::printf("Moby Dick NE: %zu / %zu / %zu questions\n", ne.train.size(), ne.valid.size(), ne.test.size());
  ASSERT_GT(ne.train.size(), 100u);
  for (const auto& q : ne.train) ASSERT_TRUE(q.answer[0] >= 'A' && q.answer[0] <= 'Z') << q.answer;
}

}  // namespace test_cbt_build
