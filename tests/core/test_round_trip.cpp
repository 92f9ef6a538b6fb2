// What training writes, loading must accept: for every task and every
// dataset loader, a run is trained for a few steps through the CLI on a fixture full of odd
// bytes (tabs, empty lines, control characters, non-ASCII UTF-8, Latin-1 where the format is
// Latin-1), and then every command that reads the run back does: eval, train --resume and (for
// the language models) generate. A corpus that training refuses (Latin-1 for the word LM) is
// refused up front with <file>:<line>:<column>, before any run directory exists.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/utf8.h"
#include "data/vocab.h"
#include "harness.h"
#include "util/error.h"

namespace test_round_trip {  // this file's own names in a unity build (tests/README.md)

using nlohmann::json;

namespace {

std::string tmp(const std::string& rel) { return cstest::temp_dir() + "/rt/" + rel; }

// Words with odd bytes: UTF-8 letters (2, 3 and 4 bytes), a tab, a control character (U+0001),
// a backslash (the vocabulary's escape character), and words the vocabulary spells specially.
const char* kOdd[] = {"caf\xC3\xA9",
                      "\xE4\xB8\xAD\xE6\x96\x87",
                      "\xF0\x9F\x90\xB3",
                      "na\xC3\xAFve",
                      "back\\slash",
                      "<unk>",
                      "ctl\x01x",
                      "\\e",
                      "\\x41",
                      "tab\there"};

std::string odd_text(int lines) {
  std::string s;
  const char* words[] = {"the", "whale", "sea", "ship", "old", "captain", "white", "deep"};
  for (int i = 0; i < lines; ++i) {
    for (int w = 0; w < 7; ++w) s += std::string(w ? " " : "") + words[(i * 3 + w * 5) % 8];
    s += std::string(" ") + kOdd[i % 10] + ".";
    s += i % 4 == 3 ? "\n\n" : i % 5 == 2 ? "\r\n" : "\n";  // empty lines, CRLF
  }
  return s;
}

// Train, then read the run back with every command. `gen`: the task generates text.
void round_trip(const std::string& name, const json& cfg, bool gen) {
  SCOPED_TRACE(name);
  const std::string cfgp = tmp(name + "/cfg.json"), run = tmp(name + "/run");
  cstest::write_text(cfgp, cfg.dump());
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err), 0) << err;
  ASSERT_TRUE(std::filesystem::exists(run + "/vocab"));
  ASSERT_EQ(cstest::run_cli({"eval", run, "--split", "valid", "--checkpoint", "last", "--json"}, &out, &err), 0) << err;
  ASSERT_FALSE(cstest::json_object(out).empty()) << out;
  const int steps = cfg["training"]["steps"].get<int>();
  ASSERT_EQ(cstest::run_cli({"train", "--resume", run, "--steps", std::to_string(steps + 2), "--quiet"}, &out, &err), 0)
      << err;
  const auto summary = cstest::json_object(cstest::read_text(run + "/summary.json"));
  ASSERT_EQ(summary.value("status", std::string()), std::string("finished")) << summary.dump();
  ASSERT_EQ(cstest::run_cli({"eval", run, "--split", "test", "--json"}, &out, &err), 0) << err;
  if (gen) {
    ASSERT_EQ(cstest::run_cli({"generate", "--run", run, "--checkpoint", "last", "--seed-text", "the caf\xC3\xA9\t",
                               "--length", "12", "--json"},
                              &out, &err),
              0)
        << err;
    ASSERT_TRUE(cstest::json_object(out).contains("tokens")) << out;
  }
}

json training(const json& extra = json::object()) {
  json t = {{"batch", 4}, {"steps", 3}, {"eval_every", 0}, {"log_every", 1}, {"threads", 1}};
  t.update(extra);
  return t;
}
json lm_model() { return {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}; }
json sentence_model() { return {{"cell", "gru"}, {"embed", 8}, {"hidden", 8}, {"fc", 8}}; }

}  // namespace

TEST(RoundTrip, vocabularyOfAnyBytes) {
  // Symbols that are not UTF-8 (Latin-1 bytes, a cut sequence, a lone continuation byte) were
  // written as raw bytes that the loader then refused ("invalid UTF-8"): the run was bricked.
  cs::Vocab v;
  const std::vector<std::string> syms = {
      "caf\xE9", "\xC3",  "\xE2\x82", "\x80x", "ok\xC3\xA9", "\xF0\x9F\x90\xB3", std::string("nul\0z", 5),
      "tab\t",   "\\xE9", "",         " "};
  for (auto& s : syms) v.add(s);
  const std::string text = v.serialize();
  ASSERT_EQ(cs::Vocab::deserialize(text, "mem"), v);
  // the file itself is UTF-8 and one line per symbol
  ASSERT_EQ(cs::utf8_validate(reinterpret_cast<const unsigned char*>(text.data()), text.size(), nullptr),
            std::string::npos);
  ASSERT_EQ(cstest::count(text, "\n"), int(syms.size()) + 2);
  const std::string p = tmp("vocab/v");
  std::filesystem::create_directories(tmp("vocab"));
  v.save(p);
  ASSERT_EQ(cs::Vocab::load(p), v);
}

TEST(RoundTrip, charLmText) {
  const std::string p = tmp("char_text/corpus.txt");
  cstest::write_text(p, "\xEF\xBB\xBF" + odd_text(80));  // with a byte-order mark
  round_trip("char_text",
             {{"task", "char_lm"},
              {"dataset", {{"path", p}, {"format", "text"}, {"valid_fraction", 0.1}, {"test_fraction", 0.1}}},
              {"model", lm_model()},
              {"training", training({{"bptt", 16}})}},
             true);
}

TEST(RoundTrip, charLmPtbChar) {
  const std::string dir = tmp("char_ptb/data");
  auto chars = [](int lines) {
    std::string s;
    const char* sym[] = {"a", "b", "\xC3\xA9", "_", "\xE4\xB8\xAD", "c", "\\", "d"};
    for (int i = 0; i < lines; ++i) {
      for (int k = 0; k < 12; ++k) s += std::string(k ? " " : "") + sym[(i + k * 3) % 8];
      s += i % 6 == 5 ? "\n\n" : "\n";
    }
    return s;
  };
  cstest::write_text(dir + "/ptb.char.train.txt", chars(60));
  cstest::write_text(dir + "/ptb.char.valid.txt", chars(12));
  cstest::write_text(dir + "/ptb.char.test.txt", chars(12));
  round_trip("char_ptb",
             {{"task", "char_lm"},
              {"dataset", {{"path", dir}, {"format", "ptb_char"}}},
              {"model", lm_model()},
              {"training", training({{"bptt", 16}})}},
             true);
}

TEST(RoundTrip, charLmText8) {
  std::string s;
  const char* words[] = {"anarchism", "originated", "as", "a", "term", "of", "abuse", "first", "used"};
  for (int i = 0; s.size() < 6000; ++i) s += std::string(i ? " " : "") + words[(i * 7) % 9];
  const std::string p = tmp("char_text8/text8");
  cstest::write_text(p, s);
  round_trip("char_text8",
             {{"task", "char_lm"},
              {"dataset", {{"path", p}, {"format", "text8"}}},
              {"model", lm_model()},
              {"training", training({{"bptt", 16}})}},
             true);
}

TEST(RoundTrip, wordLmText) {
  const std::string p = tmp("word_text/corpus.txt");
  cstest::write_text(p, odd_text(120));
  for (std::string eos : {"paragraph", "line", "none"})
    round_trip(
        "word_text_" + eos,
        {{"task", "word_lm"},
         {"dataset", {{"path", p}, {"format", "text"}, {"eos", eos}, {"valid_fraction", 0.1}, {"test_fraction", 0.1}}},
         {"model", lm_model()},
         {"training", training({{"bptt", 8}})}},
        true);
}

TEST(RoundTrip, wordLmPtbWord) {
  const std::string dir = tmp("word_ptb/data");
  auto text = [](int lines) {
    std::string s;
    const char* words[] = {"the", "<unk>", "caf\xC3\xA9", "N", "stock", "\xE4\xB8\xAD", "fell", "back\\slash"};
    for (int i = 0; i < lines; ++i) {
      s += " ";
      for (int k = 0; k < 9; ++k) s += std::string(k ? "\t" : "") + words[(i * 5 + k) % 8];
      s += i % 7 == 6 ? " \n\n" : " \n";
    }
    return s;
  };
  cstest::write_text(dir + "/ptb.train.txt", text(80));
  cstest::write_text(dir + "/ptb.valid.txt", text(15));
  cstest::write_text(dir + "/ptb.test.txt", text(15));
  round_trip("word_ptb",
             {{"task", "word_lm"},
              {"dataset", {{"path", dir}, {"format", "ptb_word"}}},
              {"model", lm_model()},
              {"training", training({{"bptt", 8}})}},
             true);
}

TEST(RoundTrip, wordLmRefusesLatin1UpFront) {
  // A Latin-1 corpus trained and exited 0, but its vocabulary (raw Latin-1 bytes) failed to load
  // in every later eval, --resume and generate. Now refused before anything is written.
  const std::string p = tmp("word_latin1/corpus.txt");
  cstest::write_text(p, "the whale\nthe sea\nun caf\xE9 noir\nthe ship\n");
  const std::string cfgp = tmp("word_latin1/cfg.json"), run = tmp("word_latin1/run");
  cstest::write_text(cfgp, json{{"task", "word_lm"},
                                {"dataset", {{"path", p}, {"format", "text"}}},
                                {"model", lm_model()},
                                {"training", training()}}
                               .dump());
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, p + ":3:7: invalid UTF-8 (byte 0xE9")) << err;
  ASSERT_TRUE(cstest::contains(err, "iconv")) << err;
  ASSERT_EQ(cstest::count(err, "\n"), 1) << err;  // one message
  ASSERT_FALSE(std::filesystem::exists(run));
  // the PTB word format likewise, naming the split's file
  const std::string dir = tmp("word_latin1/ptb");
  cstest::write_text(dir + "/ptb.train.txt", "a b c\n");
  cstest::write_text(dir + "/ptb.valid.txt", "a b\n\xFF c\n");
  cstest::write_text(dir + "/ptb.test.txt", "a b\n");
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", run, "--quiet", "--set", "dataset.path=" + dir, "--set",
                             "dataset.format=ptb_word"},
                            &out, &err),
            2);
  ASSERT_TRUE(cstest::contains(err, dir + "/ptb.valid.txt:2:1: invalid UTF-8")) << err;
  ASSERT_FALSE(std::filesystem::exists(run));
}

namespace {
std::string lines_of(int n, int flavour, bool latin1) {
  std::string s;
  const char* good[] = {"great", "fine", "lovely"};
  const char* bad[] = {"awful", "poor", "nasty"};
  for (int i = 0; i < n; ++i) {
    s += std::string("the film\twas ") + (flavour ? good[i % 3] : bad[i % 3]) + " " +
         (latin1 ? "caf\xE9 na\xEFve \xA0" : "caf\xC3\xA9 \xF0\x9F\x90\xB3") + " ctl\x01 " + std::to_string(i % 4) +
         "\n";
    if (i % 9 == 4) s += "\n \t\n";  // blank lines are skipped
  }
  return s;
}
json classify_cfg(const std::string& path, const std::string& format) {
  return {{"task", "classify"},
          {"dataset", {{"path", path}, {"format", format}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
          {"model", sentence_model()},
          {"training", training()}};
}
}  // namespace

TEST(RoundTrip, classifyMrLatin1) {
  const std::string dir = tmp("mr/data");
  cstest::write_text(dir + "/rt-polarity.pos", lines_of(30, 1, true));
  cstest::write_text(dir + "/rt-polarity.neg", lines_of(30, 0, true));
  round_trip("mr", classify_cfg(dir, "pos_neg_lines"), false);
  // Latin-1 is read as such: the vocabulary holds the UTF-8 of é, not the byte 0xE9
  const std::string v = cstest::read_text(tmp("mr/run/vocab"));
  ASSERT_TRUE(cstest::contains(v, "caf\xC3\xA9")) << v;
}

TEST(RoundTrip, classifySubjLatin1) {
  const std::string dir = tmp("subj/data");
  cstest::write_text(dir + "/quote.tok.gt9.5000", lines_of(30, 1, true));
  cstest::write_text(dir + "/plot.tok.gt9.5000", lines_of(30, 0, true));
  round_trip("subj", classify_cfg(dir, "subj_lines"), false);
}

TEST(RoundTrip, classifyImdb) {
  const std::string dir = tmp("imdb/aclImdb");
  for (std::string split : {"train", "test"})
    for (int lab = 0; lab < 2; ++lab)
      for (int i = 0; i < (split == "train" ? 16 : 6); ++i)
        cstest::write_text(dir + "/" + split + (lab ? "/pos/" : "/neg/") + std::to_string(i) + "_" +
                               std::to_string(lab ? 8 : 2) + ".txt",
                           lines_of(2, lab, false) + "<br /><br />\xE2\x80\x9Cquoted\xE2\x80\x9D\t end");
  json cfg = classify_cfg(dir, "aclimdb");
  cfg["dataset"].erase("test_fraction");
  round_trip("imdb", cfg, false);
}

TEST(RoundTrip, classifySst) {
  const std::string dir = tmp("sst/data");
  auto trees = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) {
      const int lab = i % 5;
      s += "(" + std::to_string(lab) + " (2 caf\xC3\xA9) (" + std::to_string(lab) + " (" + std::to_string(lab) + " " +
           (lab > 2 ? "good" : "bad") + ") (2 \xE4\xB8\xAD\\/x)))\n";
      if (i % 7 == 3) s += "\n";
    }
    return s;
  };
  cstest::write_text(dir + "/train.txt", trees(40));
  cstest::write_text(dir + "/dev.txt", trees(10));
  cstest::write_text(dir + "/test.txt", trees(10));
  json cfg = classify_cfg(dir, "sst_trees");
  cfg["dataset"].erase("valid_fraction");
  cfg["dataset"].erase("test_fraction");
  round_trip("sst", cfg, false);
}

TEST(RoundTrip, classifyJsonl) {
  std::string s;
  for (int i = 0; i < 60; ++i) {
    s += json{{"text", std::string("the movie\twas ") + (i % 2 ? "great" : "awful") +
                           " caf\xC3\xA9 \\u0001 \xF0\x9F\x90\xB3 \x01 " + kOdd[i % 10]},
              {"label", i % 2 ? "pos" : "neg \xE2\x9C\x93"}}
             .dump() +
         (i % 10 == 3 ? "\n\n" : "\n");
  }
  const std::string p = tmp("jsonl/data.jsonl");
  cstest::write_text(p, s);
  round_trip("jsonl", classify_cfg(p, "jsonl"), false);
}

TEST(RoundTrip, absaSemevalXml) {
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sentences>\n";
  const char* pol[] = {"positive", "negative", "neutral"};
  for (int i = 0; i < 50; ++i)
    xml += "<sentence id=\"" + std::to_string(i) + "\">\n\t<text>the caf\xC3\xA9 &#233;&#x4E2D; &amp; food\twas " +
           std::string(i % 2 ? "bad" : "good") +
           " &lt;but&gt; the staff</text>\n<aspectTerms><aspectTerm term=\"caf&#xE9;\" polarity=\"" + pol[i % 2] +
           "\"/><aspectTerm term=\"the staff\" polarity=\"" + pol[(i + 1) % 3] + "\"/></aspectTerms></sentence>\n\n";
  const std::string p = tmp("absa/data.xml");
  cstest::write_text(p, xml + "</sentences>\n");
  json cfg = {{"task", "absa"},
              {"dataset", {{"path", p}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
              {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 8}}},
              {"training", training()}};
  round_trip("absa", cfg, false);
}

}  // namespace test_round_trip
