// Char-LM task: TBPTT batching, carried state, whole-split evaluation, learning on the real corpus.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "cells/stack.h"
#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "train/trainer.h"

namespace test_char_lm {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {
json tiny_config(const std::string& path, const std::string& cell = "gru") {
  return load_and_resolve({{"task", "char_lm"},
                           {"dataset", {{"path", path}}},
                           {"model", {{"cell", cell}, {"embed", 8}, {"hidden", 16}}},
                           {"training", {{"batch", 4}, {"bptt", 10}, {"steps", 20}, {"eval_every", 0}, {"seed", 3}}}});
}
}  // namespace

TEST(CharLm, batchifyRowsAreContiguousStreams) {
  std::vector<int32_t> ids(23);
  for (int i = 0; i < 23; ++i) ids[i] = i;
  auto b = batchify(ids, 4);  // 4 rows of 5, the tail of 3 dropped
  ASSERT_EQ(b.sizes().vec(), (std::vector<int64_t>{4, 5}));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) ASSERT_EQ(b[r][c].item<int64_t>(), static_cast<int64_t>(r * 5 + c));
}

TEST(CharLm, targetsAreNextCharactersAndSegmentsContinue) {
  auto path = cstest::write_text_fixture("tbptt.txt", 3000);
  CharLMTask task(tiny_config(path), "");
  auto train = batchify(task.corpus().train, 4);
  const int64_t n = train.size(1);
  int64_t pos = 0;
  torch::Tensor prev_y;
  int wraps = 0;
  for (int k = 0; k < 200; ++k) {
    auto [x, y] = task.next_batch();
    ASSERT_EQ(x.size(1), int64_t(4));
    if (pos >= n - 1) {
      pos = 0;
      ++wraps;
    }
    const int64_t L = x.size(0);
    ASSERT_TRUE(L <= 10 && L >= 1);
    // x is rows' columns [pos, pos+L), y the same shifted by one: each target is the next character
    ASSERT_TRUE(torch::equal(x, train.narrow(1, pos, L).t()));
    ASSERT_TRUE(torch::equal(y, train.narrow(1, pos + 1, L).t()));
    if (prev_y.defined() && pos > 0) {
      ASSERT_TRUE(torch::equal(x[0], prev_y[-1]));
    }  // continues the stream
    prev_y = y;
    pos += L;
  }
  ASSERT_TRUE(wraps >= 1);
  ASSERT_TRUE(task.epoch() >= 1.0);
}

TEST(CharLm, carriedStateEqualsOneLongSequence) {
  auto path = cstest::write_text_fixture("carry.txt", 2000);
  json cfg = tiny_config(path, "lstm");
  CharLMModel net(cfg["model"], 30);
  net->eval();
  auto x = torch::randint(0, 30, {24, 3}, torch::kInt64);
  torch::NoGradGuard ng;
  StepContext c1, c2, c3;
  auto s_full = net->stack->initial_state(3, torch::TensorOptions());
  auto full = net->forward(x, s_full, c1);
  auto s = net->stack->initial_state(3, torch::TensorOptions());
  auto a = net->forward(x.narrow(0, 0, 10), s, c2);
  s = detach_states(s);
  auto b = net->forward(x.narrow(0, 10, 14), s, c3);
  ASSERT_TRUE((torch::cat({a, b}, 0) - full).abs().max().item<double>() < 1e-5);
  // and with a zero state instead, the second segment differs
  auto z = net->stack->initial_state(3, torch::TensorOptions());
  StepContext c4;
  auto b0 = net->forward(x.narrow(0, 10, 14), z, c4);
  ASSERT_TRUE((b0 - b).abs().max().item<double>() > 1e-4);
}

TEST(CharLm, evaluationScoresEveryCharacterOnce) {
  auto path = cstest::write_text_fixture("eval.txt", 5000);
  CharLMTask task(tiny_config(path), "");
  task.net()->eval();
  const auto& v = task.corpus().valid;
  std::vector<float> per_pos;
  // different numbers of streams must score the same number of positions (N-1)
  for (int64_t B : {1, 3, 7}) {
    per_pos.clear();
    double total = task.nll_of(v, B, &per_pos);
    ASSERT_EQ(per_pos.size(), v.size());
    ASSERT_FLOAT_EQ(per_pos[0], 0.f);  // the first character has no prediction
    double s = 0;
    int64_t nonzero = 0;
    for (size_t i = 1; i < per_pos.size(); ++i) {
      s += per_pos[i];
      nonzero += per_pos[i] > 0;
    }
    ASSERT_TRUE(std::abs(s - total) < 1e-3 * std::max(1.0, total));
    ASSERT_EQ(nonzero, static_cast<int64_t>(v.size()) - 1);
  }
  // with one stream the result is the exact sequential NLL: equal to B=1 evaluate()
  auto r = task.evaluate("valid");
  ASSERT_EQ(r.units, static_cast<int64_t>(v.size()) - 1);
  ASSERT_TRUE(r.metrics.at("bpc") > 0);
  ASSERT_TRUE(std::abs(r.metrics.at("bpc") * std::log(2.0) - r.metrics.at("loss")) < 1e-9);
}

TEST(CharLm, learnsTheDefaultCorpus) {
  const std::string corpus = cstest::default_corpus_path();
  ASSERT_TRUE(std::filesystem::exists(corpus)) << "default corpus missing: " + corpus + " (run packaging/setup.sh)";
  const int64_t excerpt = 200000;
  const double unigram = cstest::unigram_entropy_bits(corpus, excerpt);
  ASSERT_TRUE(unigram > 3.5);
  seed_everything(1);
  json cfg = load_and_resolve(
      {{"task", "char_lm"},
       {"dataset", {{"name", "moby-dick"}, {"max_chars", excerpt}}},
       {"model", {{"cell", "gru"}, {"embed", 32}, {"hidden", 128}}},
       {"training",
        {{"batch", 32}, {"bptt", 50}, {"steps", 300}, {"eval_every", 0}, {"lr", 0.005}, {"eval_test", false}}}});
  Trainer t(cfg, make_task(cfg), nullptr);
  auto out = t.run();
  ASSERT_EQ(out.summary.status, std::string("finished"));
  ASSERT_TRUE(out.summary.has_best);
  std::printf("unigram entropy %.3f bits/char, valid BPC after 300 steps %.3f\n", unigram, out.summary.best_valid);
  ASSERT_TRUE(out.summary.best_valid < unigram - 1.0)
      << "valid BPC " << out.summary.best_valid << " vs unigram " << unigram;
}

}  // namespace test_char_lm
