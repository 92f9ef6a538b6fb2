// Text generation: determinism with a fixed seed, greedy as temperature -> 0,
// probabilities that agree with a whole-sequence forward pass, word-LM text, CLI.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "tasks/generate.h"
#include "tasks/word_lm.h"
#include "train/trainer.h"
#include "util/error.h"

namespace test_generate {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::string train_run(const std::string& name, const json& cfg) {
  const std::string dir = cstest::temp_dir() + "/" + name;
  const std::string cfgp = cstest::temp_dir() + "/" + name + ".json";
  std::ofstream(cfgp) << cfg.dump();
  std::string out, err;
  const int rc = cstest::run_cli({"train", cfgp, "--run-dir", dir, "--quiet"}, &out, &err);
  if (rc != 0) std::fprintf(stderr, "train failed: %s\n", err.c_str());
  return rc == 0 ? dir : std::string();
}

// The model's logits for a whole id sequence in one forward pass (the reference the
// token-by-token generation must agree with).
torch::Tensor full_logits(Task& task, const std::vector<int32_t>& ids) {
  torch::NoGradGuard ng;
  task.model()->eval();
  auto x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).view({-1, 1});
  StepContext ctx;
  if (auto* c = dynamic_cast<CharLMTask*>(&task)) {
    auto s = c->net()->stack->initial_state(1, torch::TensorOptions());
    return c->net()->forward(x, s, ctx).select(1, 0).to(torch::kFloat64);
  }
  auto* w = dynamic_cast<WordLMTask*>(&task);
  auto s = w->net()->initial_state(1, torch::TensorOptions());
  return w->net()->forward(x, s, ctx).select(1, 0).to(torch::kFloat64);
}

std::vector<int32_t> ids_of(const Generation& g) {
  std::vector<int32_t> v;
  for (auto& t : g.tokens) v.push_back(t.id);
  return v;
}

// Every token after the first agrees with the whole-sequence pass: its probability, and
// (greedy) it is the most probable allowed token.
void check_against_full_pass(Task& task, const Generation& g, bool greedy) {
  auto ids = ids_of(g);
  auto lp = torch::log_softmax(full_logits(task, ids), -1);
  for (size_t i = 1; i < ids.size(); ++i) {
    const double p = std::exp(lp[int64_t(i) - 1][ids[i]].item<double>());
    ASSERT_TRUE(std::abs(p - g.tokens[i].prob) < 1e-4 * std::max(1.0, p))
        << ("token " + std::to_string(i) + ": " + std::to_string(p) + " vs " + std::to_string(g.tokens[i].prob))
               .c_str();
    if (greedy && !g.tokens[i].from_seed) {
      auto row = lp[int64_t(i) - 1].clone();
      row[Vocab::kUnkId] = -1e30;
      ASSERT_EQ(row.argmax().item<int64_t>(), int64_t(ids[i]));
    }
  }
}

}  // namespace

// Qt Test's initTestCase: the two runs are trained once, before the first test of this file.
class Generate : public ::testing::Test {
 protected:
  static std::string charRun_, wordRun_;
  static void SetUpTestSuite();
  void SetUp() override {  // a failed training fails every test, as a failed initTestCase did
    ASSERT_TRUE(!charRun_.empty());
    ASSERT_TRUE(!wordRun_.empty());
  }
};
std::string Generate::charRun_, Generate::wordRun_;

void Generate::SetUpTestSuite() {
  const std::string text = cstest::write_text_fixture("gen.txt", 30000);
  charRun_ = train_run("char", json{{"task", "char_lm"},
                                    {"dataset", {{"path", text}}},
                                    {"model", {{"cell", "gru"}, {"embed", 16}, {"hidden", 32}, {"layers", 1}}},
                                    {"training",
                                     {{"batch", 8},
                                      {"bptt", 32},
                                      {"steps", 80},
                                      {"eval_every", 0},
                                      {"eval_test", false},
                                      {"threads", 1},
                                      {"lr", 0.01}}}});
  wordRun_ = train_run(
      "word",
      json{{"task", "word_lm"},
           {"dataset", {{"path", text}, {"format", "text"}}},
           {"model", {{"cell", "mcrnn"}, {"base", "lstm"}, {"block", 3}, {"embed", 16}, {"hidden", 24}, {"layers", 1}}},
           {"training",
            {{"batch", 8},
             {"bptt", 12},
             {"steps", 40},
             {"eval_every", 0},
             {"eval_test", false},
             {"threads", 1},
             {"lr", 0.01}}}});
  EXPECT_TRUE(!charRun_.empty());
  EXPECT_TRUE(!wordRun_.empty());
}

TEST_F(Generate, charDeterministicWithSeed) {
  auto task = load_run_task(charRun_, "last");
  GenerateOptions o;
  o.seed_text = "The whale";
  o.length = 120;
  o.seed = 5;
  auto a = generate(*task, o), b = generate(*task, o);
  ASSERT_EQ(a.tokens.size(), size_t(9 + 120));
  ASSERT_TRUE(ids_of(a) == ids_of(b));
  ASSERT_EQ(a.text(), b.text());
  ASSERT_TRUE(cstest::starts_with(a.text(), "The whale"));
  o.seed = 6;
  auto c = generate(*task, o);
  ASSERT_TRUE(ids_of(a) != ids_of(c));
  // seed tokens are marked, the first has no probability, the generated ones have both
  ASSERT_TRUE(a.tokens[0].from_seed && std::isnan(a.tokens[0].prob));
  ASSERT_TRUE(a.tokens[8].from_seed && a.tokens[8].prob > 0);
  ASSERT_TRUE(!a.tokens[9].from_seed && a.tokens[9].sample_prob > 0 && a.tokens[9].prob > 0);
  check_against_full_pass(*task, a, false);
}

TEST_F(Generate, charGreedyAtZeroTemperature) {
  auto task = load_run_task(charRun_, "last");
  GenerateOptions o;
  o.seed_text = "The ";
  o.length = 60;
  o.temperature = 0;
  auto g = generate(*task, o);
  check_against_full_pass(*task, g, true);
  // greedy ignores the sampler's seed; a very low temperature samples the same text
  o.seed = 99;
  ASSERT_TRUE(ids_of(generate(*task, o)) == ids_of(g));
  o.temperature = 1e-4;
  ASSERT_TRUE(ids_of(generate(*task, o)) == ids_of(g));
  // top-k 1 is greedy at any temperature
  o.temperature = 2.0;
  o.top_k = 1;
  ASSERT_TRUE(ids_of(generate(*task, o)) == ids_of(g));
  // a trained model is surer of its greedy choices than of a hot sample's
  o.top_k = 0;
  o.temperature = 3.0;
  auto hot = generate(*task, o);
  ASSERT_TRUE(hot.generated_bits_per_token() > g.generated_bits_per_token());
}

TEST_F(Generate, wordGeneration) {
  auto task = load_run_task(wordRun_, "last");
  GenerateOptions o;
  o.seed_text = "The old captain";
  o.length = 30;
  o.seed = 3;
  auto a = generate(*task, o), b = generate(*task, o);
  ASSERT_EQ(a.task, std::string("word_lm"));
  ASSERT_TRUE(ids_of(a) == ids_of(b));
  ASSERT_EQ(a.tokens.size(), size_t(3 + 30));
  ASSERT_EQ(a.tokens[0].text, std::string("the"));  // the corpus is lowercased (dataset.lowercase)
  for (auto& t : a.tokens) ASSERT_TRUE(t.id != Vocab::kUnkId);
  ASSERT_TRUE(cstest::starts_with(a.text(), "the old captain "));
  check_against_full_pass(*task, a, false);
  o.temperature = 0;
  check_against_full_pass(*task, generate(*task, o), true);
  // an unknown seed word is fed as <unk> and reported
  o.seed_text = "zyzzyva whale";
  auto u = generate(*task, o);
  ASSERT_EQ(u.unknown_seed_tokens, int64_t(1));
  // no seed: starts after an <eos>
  o.seed_text.clear();
  ASSERT_EQ(generate(*task, o).tokens.size(), size_t(30));
}

TEST_F(Generate, badOptions) {
  auto task = load_run_task(charRun_, "last");
  GenerateOptions o;
  o.temperature = -1;
  ASSERT_THROW(generate(*task, o), UserError);
  o.temperature = 1;
  o.length = -5;
  ASSERT_THROW(generate(*task, o), UserError);
}

TEST_F(Generate, cli) {
  std::string out, err, out2;
  ASSERT_EQ(cstest::run_cli({"generate", "--run", charRun_, "--seed-text", "The sea", "--length", "40", "--seed", "4",
                             "--json", "--threads", "1"},
                            &out, &err),
            0);
  ASSERT_EQ(cstest::run_cli({"generate", "--run", charRun_, "--seed-text", "The sea", "--length", "40", "--seed", "4",
                             "--json", "--threads", "1"},
                            &out2, &err),
            0);
  ASSERT_EQ(out, out2);
  auto doc = cstest::json_object(out);
  ASSERT_TRUE(cstest::starts_with(doc.value("text", std::string()), "The sea"));
  ASSERT_EQ(int(doc.value("tokens", json::array()).size()), 7 + 40);
  // Colour on a terminal (script(1) gives the command one), none with NO_COLOR set, --color forcing it.
  if (std::system("command -v script >/dev/null 2>&1") == 0) {
    auto on_tty = [&](const std::string& env, const std::string& extra) {
      const std::string log = cstest::temp_dir() + "/tty.txt";
      const std::string cmd = "env " + env + " script -qec \"'" + cstest::cli_path() + "' generate --run '" + charRun_ +
                              "' --seed-text 'The sea' --length 10 --seed 4 --threads 1" + extra + "\" /dev/null > '" +
                              log + "' 2>&1";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
      return cstest::read_text(log);
    };
    const std::string plain = on_tty("-u NO_COLOR", ""), quiet = on_tty("NO_COLOR=1", ""),
                      forced = on_tty("NO_COLOR=1", " --color");
    EXPECT_TRUE(cstest::contains(plain, "\033[")) << plain;
    EXPECT_FALSE(cstest::contains(quiet, "\033[")) << quiet;
    EXPECT_TRUE(cstest::contains(quiet, "The sea")) << quiet;
    EXPECT_TRUE(cstest::contains(forced, "\033[")) << forced;
  } else {
    ADD_FAILURE() << "script(1) (bsdutils, Essential on Debian) is missing: the terminal colour check did not run";
  }
  const std::string html = cstest::temp_dir() + "/sample.html";
  ASSERT_EQ(cstest::run_cli({"generate", "--run", wordRun_, "--length", "20", "--out", html}, &out, &err), 0);
  ASSERT_TRUE(std::filesystem::exists(html));
  const std::string h = cstest::read_text(html);
  ASSERT_TRUE(cstest::starts_with(h, "<!DOCTYPE html>"));
  ASSERT_EQ(cstest::count(h, "<span"), 20);
  // errors: one clear message, exit status 2
  ASSERT_EQ(cstest::run_cli({"generate", "--run", charRun_, "--temperature", "hot"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--temperature"));
  ASSERT_EQ(cstest::run_cli({"generate", "--run", cstest::temp_dir() + "/no-such-run"}, &out, &err), 2);
  ASSERT_EQ(cstest::run_cli({"generate", "--run", charRun_, "--out", cstest::temp_dir() + "/x.png"}, &out, &err), 2);
}

}  // namespace test_generate
