// The cloze re-ranking step (tasks/cloze_rerank.h): the n-gram LM's probabilities computed by
// hand, each feature on a small question by hand, the weight tuning on a constructed set where
// the better weighting is known, the JSONL reader's errors with line numbers, and the CLI.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "corpus_fixture.h"
#include "data/vocab.h"
#include "data/wordnet.h"
#include "core_checks.h"
#include "harness.h"
#include "tasks/cloze_rerank.h"
#include "tasks/word_lm.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_cloze_rerank {  // this file's own names in a unity build (tests/README.md)

using cs::json;

namespace {

using cstest::expect_user_error;

std::string tmp(const std::string& name) { return cs::join_path(cstest::temp_dir(), "rerank/" + name); }

// Document "the cat sat on the cat", query "the XXXXX", candidates cat (the answer) and sat;
// the reader prefers sat (0.75 against 0.25).
cs::ClozeScored cat_question() {
  cs::ClozeScored q;
  q.document = {"The", "cat", "sat", "on", "the", "cat"};
  q.query = {"the", "XXXXX"};
  q.candidates = {"cat", "sat"};
  q.prob = {0.25, 0.75};
  q.answer = 0;
  return q;
}

json to_json(const cs::ClozeScored& q) {
  return {{"document", q.document},
          {"query", q.query},
          {"candidates", q.candidates},
          {"prob", q.prob},
          {"answer", q.answer}};
}

}  // namespace

TEST(ClozeRerank, ngramProbabilitiesByHand) {
  // order 2, D = 0.5, one sentence "a b": tokens <s> a b </s>; N = 3, V = 3, P1(w) = (c + 1) / 7
  cs::NgramLM bi(2, 0.5);
  bi.add_sentence({"a", "b"});
  ASSERT_NEAR(bi.prob({}, "a"), 2.0 / 7, 1e-12);
  ASSERT_NEAR(bi.prob({}, "zzz"), 1.0 / 7, 1e-12);
  ASSERT_NEAR(bi.prob({"a"}, "b"), 0.5 + 0.5 * 2.0 / 7, 1e-12);  // (1 - D + D * 1 * P1(b)) / 1 = 9/14
  ASSERT_NEAR(bi.prob({"b"}, "a"), 0.5 * 2.0 / 7, 1e-12);        // unseen bigram: D * N1+ * P1 / c(h) = 1/7
  ASSERT_NEAR(bi.prob({"a"}, "zzz"), 0.5 * 1.0 / 7, 1e-12);      // 1/14
  ASSERT_NEAR(bi.prob({"q"}, "b"), 2.0 / 7, 1e-12);              // unseen history: the unigram
  ASSERT_NEAR(bi.sentence_logprob({"a", "b"}), 3 * std::log(9.0 / 14), 1e-12);
  // order 3, sentence "a b a": N = 4, V = 3: P1(a) = 3/8, P1(b) = 2/8
  cs::NgramLM tri(3, 0.5);
  tri.add_sentence({"a", "b", "a"});
  // P2(b | a) = (1 - .5 + .5 * 2 * 2/8) / 2 = 0.375; P3(b | <s> a) = 1 - .5 + .5 * 1 * 0.375
  ASSERT_NEAR(tri.prob({"a"}, "b"), 0.375, 1e-12);
  ASSERT_NEAR(tri.prob({"<s>", "a"}, "b"), 0.6875, 1e-12);
  ASSERT_NEAR(tri.prob({"x", "<s>", "a"}, "b"), 0.6875, 1e-12);  // only the last two words count
  // P2(a | b) = .5 + .5 * 3/8 = 0.6875; P3(a | a b) = .5 + .5 * 0.6875
  ASSERT_NEAR(tri.prob({"a", "b"}, "a"), 0.84375, 1e-12);
  // a proper distribution over the known words, </s> and the unknown-word class
  double sum = 0;
  for (const char* w : {"a", "b", "</s>", "unknown-word"}) sum += tri.prob({"<s>", "a"}, w);
  ASSERT_NEAR(sum, 1.0, 1e-12);
}

TEST(ClozeRerank, localLmAndReaderFeaturesByHand) {
  cs::RerankModels m;
  m.order = 2;
  m.discount = 0.5;
  const cs::FeatureTable f = cs::rerank_features({cat_question()}, m);
  ASSERT_EQ(m.feature_names(), (std::vector<std::string>{"reader", "local_lm"}));
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(f[0].size(), 2u);
  ASSERT_NEAR(f[0][0][0], std::log(0.25), 1e-12);
  ASSERT_NEAR(f[0][1][0], std::log(0.75), 1e-12);
  // document (lower-cased) <s> the cat sat on the cat </s>: N = 7, V = 5; P1(the) = P1(cat) = 3/13,
  // P1(sat) = P1(</s>) = 2/13. "the cat": P(the|<s>) = .5 + .5*3/13 = 8/13; P(cat|the) = (2 - .5 + .5*3/13)/2
  // = 21/26; P(</s>|cat) = (1 - .5 + .5*2*2/13)/2 = 17/52. "the sat": 8/13, (.5*2/13)/2 = 1/26, .5*2/13 = 1/13.
  ASSERT_NEAR(f[0][0][1], std::log(8.0 / 13) + std::log(21.0 / 26) + std::log(17.0 / 52), 1e-12);
  ASSERT_NEAR(f[0][1][1], std::log(8.0 / 13) + std::log(1.0 / 26) + std::log(1.0 / 13), 1e-12);
  // the tuned weight is the smallest grid value that turns the question around:
  // w * (L_cat - L_sat) > log 3 needs w > 0.2447: 0.3 of the default grid
  const cs::TunedWeights tw = cs::tune_weights(f, {0}, cs::RerankOptions().grid);
  ASSERT_DOUBLE_EQ(tw.weights[1], 0.3);
  ASSERT_DOUBLE_EQ(tw.accuracy, 1.0);
}

TEST(ClozeRerank, globalLmThroughTokenStepper) {
  // A stepper whose model predicts <unk> .1, a .2, b .3, <eos> .4 at every step.
  cs::Vocab vocab;
  vocab.add("a");
  vocab.add("b");
  vocab.add("<eos>");
  cs::TokenStepper v;
  v.vocab = &vocab;
  v.words = true;
  v.start_symbol = "<eos>";
  int64_t fed = 0;
  v.forward = [&fed](const torch::Tensor& x) {
    fed = x.size(0);
    auto row = torch::log(torch::tensor({0.1, 0.2, 0.3, 0.4}, torch::kFloat32));
    return row.view({1, 1, 4}).expand({x.size(0), 1, 4}).clone();
  };
  ASSERT_NEAR(cs::stepper_logprob(v, {"a", "b", "<eos>"}), std::log(0.2) + std::log(0.3) + std::log(0.4), 1e-6);
  ASSERT_EQ(fed, 4);                                                    // the start symbol first
  ASSERT_NEAR(cs::stepper_logprob(v, {"whale"}), std::log(0.1), 1e-6);  // not in the vocabulary: <unk>
  // as a feature: the filled-in query goes to the scorer
  std::vector<std::vector<std::string>> seen;
  cs::RerankModels m;
  m.global_lm = [&](const std::vector<std::string>& w) {
    seen.push_back(w);
    return w[1] == "cat" ? -1.0 : -5.0;
  };
  const cs::FeatureTable f = cs::rerank_features({cat_question()}, m);
  ASSERT_EQ(m.feature_names(), (std::vector<std::string>{"reader", "local_lm", "global_lm"}));
  ASSERT_EQ(seen, (std::vector<std::vector<std::string>>{{"the", "cat"}, {"the", "sat"}}));
  ASSERT_DOUBLE_EQ(f[0][0][2], -1.0);
  ASSERT_DOUBLE_EQ(f[0][1][2], -5.0);
}

TEST(ClozeRerank, wordClassLmByHand) {
  // A WordNet with "cat" (noun.animal, 05), "mat" (noun.artifact, 06) and "run" (verb.motion, 38).
  const std::string dir = tmp("wordnet");
  const std::string h = "  1 licence header\n";
  cstest::write_text(dir + "/index.noun", h + "cat n 1 0 1 0 00000100  \nmat n 1 0 1 0 00000200  \n");
  cstest::write_text(dir + "/data.noun", h + "00000100 05 n 01 cat 0 000 | feline\n00000200 06 n 01 mat 0 000 | rug\n");
  cstest::write_text(dir + "/index.verb", h + "run v 1 0 1 0 00000300  \n");
  cstest::write_text(dir + "/data.verb", h + "00000300 38 v 01 run 0 000 00 | move fast\n");
  for (const char* p : {"adj", "adv"}) {
    cstest::write_text(dir + "/index." + p, h);
    cstest::write_text(dir + "/data." + p, h);
  }
  const cs::WordNet wn = cs::WordNet::load(dir);
  const std::vector<std::vector<std::string>> text = {{"the", "cat", "runs"}, {"The", "mat", ",", "the", "cats"}};
  const auto freq = cs::WordClasses::most_frequent(text, 1);
  ASSERT_EQ(freq, (std::unordered_set<std::string>{"the"}));
  const cs::WordClasses wc(&wn, freq);
  ASSERT_EQ(wc.of("The"), "the");
  ASSERT_EQ(wc.of("cats"), "n05");
  ASSERT_EQ(wc.of("mat"), "n06");
  ASSERT_EQ(wc.of("runs"), "v38");
  ASSERT_EQ(wc.of(","), ",");
  ASSERT_EQ(wc.of("Ahab"), "Cap");
  ASSERT_EQ(wc.of("zzz"), "w");
  // a class bigram LM (D = .5) on "the n05" twice: <s> the n05 </s> x2; N = 6, V = 3, P1 = (2 + 1)/10 each;
  // P(the|<s>) = (2 - .5 + .5*1*.3)/2 = .825, P(n05|the) = .825, P(</s>|n05) = .825;
  // "the n06": P(n06|the) = (.5*1*1/10)/2 = .025 (n06 unseen), P(</s>|n06) = P1(</s>) = .3
  cs::NgramLM lm(2, 0.5);
  lm.add_sentence({"the", "n05"});
  lm.add_sentence({"the", "n05"});
  cs::ClozeScored q;
  q.document = {"a", "mat"};
  q.query = {"the", "XXXXX"};
  q.candidates = {"cat", "mat"};
  q.prob = {0.5, 0.5};
  cs::RerankModels m;
  m.order = 2;
  m.discount = 0.5;
  m.classes = &wc;
  m.class_lm = &lm;
  const cs::FeatureTable f = cs::rerank_features({q}, m);
  ASSERT_EQ(m.feature_names().back(), "word_class_lm");
  ASSERT_NEAR(f[0][0][2], 3 * std::log(0.825), 1e-12);
  ASSERT_NEAR(f[0][1][2], std::log(0.825) + std::log(0.025) + std::log(0.3), 1e-12);
}

TEST(ClozeRerank, tuningPicksTheKnownBetterWeighting) {
  // 20 questions, 3 candidates, features (reader, good, noise). The reader is right on the first 10
  // (answer .8 against .1) and wrong on the others (answer .3 against .6: a margin of log 2 = .69).
  // "good" gives the answer 0 and the others -1: any weight above .69 makes all 20 right, and the
  // grid's smallest such weight is .75. "noise" only hurts: its best weight is 0.
  cs::FeatureTable f;
  std::vector<int64_t> answers;
  for (int q = 0; q < 20; ++q) {
    const int64_t ans = q % 3;
    std::vector<std::vector<double>> cf(3);
    for (int64_t c = 0; c < 3; ++c) {
      const double p = q < 10 ? (c == ans ? 0.8 : 0.1) : (c == ans ? 0.3 : (c == (ans + 1) % 3 ? 0.6 : 0.1));
      const double noise = c == (ans + 2) % 3 ? 5.0 : 0.0;
      cf[c] = {std::log(p), c == ans ? 0.0 : -1.0, noise};
    }
    f.push_back(cf);
    answers.push_back(ans);
  }
  const std::vector<double> grid = {0, 0.25, 0.5, 0.75, 1, 2};
  ASSERT_DOUBLE_EQ(cs::rerank_accuracy(f, answers, {1, 0, 0}), 0.5);
  const cs::TunedWeights tw = cs::tune_weights(f, answers, grid);
  ASSERT_EQ(tw.weights, (std::vector<double>{1, 0.75, 0}));
  ASSERT_DOUBLE_EQ(tw.accuracy, 1.0);
  ASSERT_EQ(tw.evaluated, 36);
  // a grid without a large enough weight cannot fix the wrong half; tuning then keeps the reader alone
  const cs::TunedWeights small = cs::tune_weights(f, answers, {0, 0.25, 0.5});
  ASSERT_EQ(small.weights, (std::vector<double>{1, 0, 0}));
  ASSERT_DOUBLE_EQ(small.accuracy, 0.5);
}

TEST(ClozeRerank, malformedJsonlNamesTheLine) {
  const std::string good = to_json(cat_question()).dump();
  struct Case {
    std::string line;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"{not json", {"not valid JSON"}},
      {"[1, 2]", {"JSON object"}},
      {R"({"query": ["XXXXX"], "candidates": ["a", "b"], "prob": [0.5, 0.5], "answer": 0})", {"\"document\""}},
      {R"({"document": ["a", 3], "query": ["XXXXX"], "candidates": ["a", "b"], "prob": [0.5, 0.5], "answer": 0})",
       {"\"document\"[1]"}},
      {R"({"document": [], "query": ["XXXXX", "XXXXX"], "candidates": ["a", "b"], "prob": [0.5, 0.5], "answer": 0})",
       {"exactly one \"XXXXX\"", "holds 2"}},
      {R"({"document": [], "query": ["XXXXX"], "candidates": ["a", "b"], "prob": [0.5], "answer": 0})",
       {"1 numbers for 2"}},
      {R"({"document": [], "query": ["XXXXX"], "candidates": ["a", "b"], "prob": [0.5, 1.5], "answer": 0})",
       {"\"prob\"[1]", "[0, 1]"}},
      {R"({"document": [], "query": ["XXXXX"], "candidates": ["a", "b"], "prob": [0.5, 0.5], "answer": 2})",
       {"\"answer\" = 2", "0..1"}},
      {R"({"document": [], "query": ["XXXXX"], "candidates": ["a", "b"], "prob": [0.5, 0.5], "answer": "a"})",
       {"\"answer\""}},
      {R"({"document": [], "query": ["XXXXX"], "candidates": ["a", "a"], "prob": [0.5, 0.5], "answer": 0})", {"twice"}},
  };
  for (const auto& c : cases) {
    // line 1 good, line 2 blank (skipped), line 3 the bad one
    const std::string text = good + "\n\n" + c.line + "\n" + good + "\n";
    std::vector<std::string> needles = {"scores.jsonl:3: "};
    needles.insert(needles.end(), c.needles.begin(), c.needles.end());
    SCOPED_TRACE(c.line);
    try {
      cs::parse_cloze_scores(text, "scores.jsonl");
      ADD_FAILURE() << "no error for " << c.line;
    } catch (const cs::UserError& e) {
      const std::string msg = e.what();
      for (auto& n : needles) EXPECT_TRUE(cstest::contains(msg, n)) << "'" << msg << "' lacks '" << n << "'";
      EXPECT_EQ(cstest::count(msg, "\n"), 0) << msg;
    }
  }
  expect_user_error([] { cs::parse_cloze_scores("\n\n", "empty.jsonl"); }, {"empty.jsonl", "no questions"});
  ASSERT_EQ(cs::parse_cloze_scores(good + "\n" + good, "x").size(), 2u);
  expect_user_error([] { cs::read_cloze_scores(tmp("missing.jsonl")); }, {"missing.jsonl"});
}

TEST(ClozeRerank, cliReportsBeforeAndAfter) {
  const std::string v = tmp("valid.jsonl"), t = tmp("test.jsonl");
  std::string vt;
  for (int i = 0; i < 3; ++i) vt += to_json(cat_question()).dump() + "\n";
  cstest::write_text(v, vt);
  cs::ClozeScored right = cat_question();
  right.prob = {0.9, 0.1};
  cstest::write_text(t, to_json(cat_question()).dump() + "\n" + to_json(right).dump() + "\n");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"cloze", "rerank", "--valid", v, "--test", t, "--no-word-class", "--json"}, &out, &err), 0)
      << err;
  const json j = cstest::json_object(out);
  ASSERT_EQ(j["features"], json({"reader", "local_lm"}));
  ASSERT_DOUBLE_EQ(j["weights"]["local_lm"].get<double>(), 0.3);
  ASSERT_EQ(j["valid"]["questions"].get<int64_t>(), 3);
  ASSERT_DOUBLE_EQ(j["valid"]["accuracy_before"].get<double>(), 0.0);
  ASSERT_DOUBLE_EQ(j["valid"]["accuracy_after"].get<double>(), 1.0);
  ASSERT_DOUBLE_EQ(j["test"]["accuracy_before"].get<double>(), 0.5);
  ASSERT_DOUBLE_EQ(j["test"]["accuracy_after"].get<double>(), 1.0);
  // the text report
  ASSERT_EQ(cstest::run_cli({"cloze", "rerank", "--valid", v, "--test", t, "--no-word-class"}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(out, "local_lm")) << out;
  ASSERT_TRUE(cstest::contains(out, "100.00%")) << out;
  // a malformed line: exit 2, one message naming file and line
  cstest::write_text(t, to_json(cat_question()).dump() + "\n{\"document\": 1}\n");
  ASSERT_EQ(cstest::run_cli({"cloze", "rerank", "--valid", v, "--test", t, "--no-word-class"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, t + ":2: ")) << err;
  ASSERT_EQ(cstest::count(err, "\n"), 1) << err;
  ASSERT_EQ(cstest::run_cli({"cloze", "rerank", "--valid", v}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--test")) << err;
}

TEST(ClozeRerank, globalLmFromAWordLmRun) {
  // a tiny word_lm run on the fixture text (as test_generate trains one)
  const std::string text = cstest::write_text_fixture("rerank-lm.txt", 20000);
  const std::string dir = tmp("lm-run"), cfgp = tmp("lm.json");
  const json cfg = {{"task", "word_lm"},
                    {"dataset", {{"path", text}, {"format", "text"}}},
                    {"model", {{"cell", "gru"}, {"embed", 16}, {"hidden", 24}, {"layers", 1}}},
                    {"training",
                     {{"batch", 8},
                      {"bptt", 12},
                      {"steps", 30},
                      {"eval_every", 0},
                      {"eval_test", false},
                      {"threads", 1},
                      {"lr", 0.01}}}};
  cstest::write_text(cfgp, cfg.dump());
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", dir, "--quiet"}, &out, &err), 0) << err;
  auto task = cs::load_run_task(dir, "last");
  auto* w = dynamic_cast<cs::WordLMTask*>(task.get());
  ASSERT_TRUE(w);
  const std::vector<std::string> words = {"the", "whale", "and", "the", "sea"};
  const auto scorer = cs::task_lm_scorer(*task);
  const double got = scorer(words);
  // the reference: one forward pass over <eos> + the words from a zero state
  const cs::EncodedText enc = task->encode_text("<eos> the whale and the sea");
  ASSERT_EQ(enc.ids.size(), 6u);
  torch::NoGradGuard ng;
  task->model()->eval();
  auto x = torch::tensor(std::vector<int64_t>(enc.ids.begin(), enc.ids.end()), torch::kInt64).view({-1, 1});
  cs::StepContext ctx;
  auto s = w->net()->initial_state(1, torch::TensorOptions());
  auto lp = torch::log_softmax(w->net()->forward(x, s, ctx).select(1, 0).to(torch::kFloat64), -1);
  double want = 0;
  for (size_t i = 1; i < enc.ids.size(); ++i) want += lp[int64_t(i) - 1][enc.ids[i]].item<double>();
  ASSERT_NEAR(got, want, 1e-4 * std::abs(want));
  ASSERT_DOUBLE_EQ(scorer(words), got);  // a fresh zero state each call
  // through the CLI: a global_lm feature
  const std::string v = tmp("lm-valid.jsonl");
  cstest::write_text(v, to_json(cat_question()).dump() + "\n");
  ASSERT_EQ(cstest::run_cli({"cloze", "rerank", "--valid", v, "--test", v, "--lm", dir, "--checkpoint", "last",
                             "--no-word-class", "--json"},
                            &out, &err),
            0)
      << err;
  ASSERT_EQ(cstest::json_object(out)["features"], json({"reader", "local_lm", "global_lm"})) << out;
}

TEST(ClozeRerank, warnsWhenTheGlobalLmHasSeenTheTestSplit) {
  // A corpus of 600 sentences of 8 words from a 30-word vocabulary (one sentence per line, a
  // blank line after each), and a word_lm trained on its first 80% (valid 10%, test 10%).
  const std::vector<std::string> words = {"ship", "whale", "sea",  "boat", "mast", "sail", "rope", "deck",
                                          "crew", "oar",   "wave", "wind", "salt", "fish", "hook", "line",
                                          "net",  "tide",  "sun",  "moon", "star", "map",  "bell", "gull",
                                          "keel", "helm",  "bow",  "port", "cask", "fog"};
  std::vector<std::vector<std::string>> sentences;
  uint64_t x = 12345;
  std::string text;
  for (int i = 0; i < 600; ++i) {
    std::vector<std::string> s;
    for (int k = 0; k < 8; ++k) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      s.push_back(words[(x >> 33) % words.size()]);
      text += s.back() + " ";
    }
    text += ".\n\n";
    s.push_back(".");
    sentences.push_back(s);
  }
  const std::string corpus = tmp("overlap-corpus.txt"), dir = tmp("overlap-lm"), cfgp = tmp("overlap-lm.json");
  cstest::write_text(corpus, text);
  const json cfg = {
      {"task", "word_lm"},
      {"dataset", {{"path", corpus}, {"format", "text"}, {"valid_fraction", 0.1}, {"test_fraction", 0.1}}},
      {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 8}, {"layers", 1}}},
      {"training", {{"batch", 4}, {"bptt", 8}, {"steps", 3}, {"eval_every", 0}, {"eval_test", false}, {"threads", 1}}}};
  cstest::write_text(cfgp, cfg.dump());
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfgp, "--run-dir", dir, "--quiet"}, &out, &err), 0) << err;
  // questions whose query is sentence i with word 3 blanked (the answer), 2 candidates
  auto questions = [&](int from, int to) {
    std::vector<cs::ClozeScored> qs;
    for (int i = from; i < to; ++i) {
      cs::ClozeScored q;
      q.document = sentences[static_cast<size_t>(i - 1)];
      q.query = sentences[static_cast<size_t>(i)];
      const std::string answer = q.query[3];
      q.query[3] = "XXXXX";
      q.candidates = {answer, answer == "fog" ? "sun" : "fog"};
      q.prob = {0.5, 0.5};
      q.answer = 0;
      qs.push_back(q);
    }
    return qs;
  };
  const auto seen = questions(100, 130), unseen = questions(560, 590);  // LM train split / LM test split
  auto task = cs::load_run_task(dir, "last");
  const auto train_tokens = cs::lm_training_symbols(*task);
  ASSERT_GT(train_tokens.size(), 3000u);
  const cs::LmOverlap a = cs::lm_overlap(seen, train_tokens, cs::task_lm_tokenizer(*task));
  const cs::LmOverlap b = cs::lm_overlap(unseen, train_tokens, cs::task_lm_tokenizer(*task));
  EXPECT_EQ(a.questions, 30);
  EXPECT_EQ(a.checked, 30);  // 9 tokens: 5 five-grams each
  EXPECT_EQ(a.found, 30);
  EXPECT_TRUE(a.overlaps());
  EXPECT_EQ(b.checked, 30);
  EXPECT_EQ(b.found, 0);
  EXPECT_FALSE(b.overlaps());
  EXPECT_EQ(b.warning(dir, "test"), "");
  // the CLI: a warning on stderr and in the JSON when the LM has seen the test questions, none otherwise
  const std::string sv = tmp("overlap-seen.jsonl"), uv = tmp("overlap-unseen.jsonl");
  auto write = [](const std::string& path, const std::vector<cs::ClozeScored>& qs) {
    std::string t;
    for (auto& q : qs) t += to_json(q).dump() + "\n";
    cstest::write_text(path, t);
  };
  write(sv, seen);
  write(uv, unseen);
  ASSERT_EQ(cstest::run_cli({"cloze", "rerank", "--valid", uv, "--test", sv, "--lm", dir, "--checkpoint", "last",
                             "--no-word-class", "--json"},
                            &out, &err),
            0)
      << err;
  EXPECT_TRUE(cstest::contains(err, "warning: the Global LM " + dir)) << err;
  EXPECT_TRUE(cstest::contains(err, "holds 30 of the 30 checked test questions")) << err;
  json j = cstest::json_object(out);
  ASSERT_EQ(j["warnings"].size(), 1u) << out;
  EXPECT_TRUE(cstest::contains(j["warnings"][0].get<std::string>(), "has seen the test split")) << out;
  EXPECT_TRUE(j["lm_test_overlap"]["overlaps"].get<bool>()) << out;
  EXPECT_EQ(j["lm_test_overlap"]["found"], 30) << out;
  ASSERT_EQ(cstest::run_cli({"cloze", "rerank", "--valid", sv, "--test", uv, "--lm", dir, "--checkpoint", "last",
                             "--no-word-class"},
                            &out, &err),
            0)
      << err;
  EXPECT_FALSE(cstest::contains(err, "warning")) << err;
  EXPECT_TRUE(cstest::contains(err, "-grams in its training split): test 0 of 30, valid 30 of 30\n")) << err;
  // valid (here the seen questions) only tunes the weights: a note
  EXPECT_TRUE(cstest::contains(err, "note: the Global LM's training split holds 30 of the 30 checked valid")) << err;
  ASSERT_EQ(cstest::run_cli({"cloze", "rerank", "--valid", sv, "--test", uv, "--lm", dir, "--checkpoint", "last",
                             "--no-word-class", "--json"},
                            &out, &err),
            0)
      << err;
  j = cstest::json_object(out);
  EXPECT_TRUE(j["warnings"].empty()) << out;
  EXPECT_FALSE(j["lm_test_overlap"]["overlaps"].get<bool>()) << out;
  EXPECT_EQ(j["lm_test_overlap"]["checked"], 30) << out;
  EXPECT_EQ(j["lm_valid_overlap"]["found"], 30) << out;
}

}  // namespace test_cloze_rerank
