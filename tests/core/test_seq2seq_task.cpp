// Task `seq2seq` (tasks/seq2seq.h) on synthetic pairs: padding does not change a pair's loss,
// greedy == beam 1 on the trained model (batched and alone), a few hundred steps learn to
// copy sequences (held-out exact match), resume is exact, and the vocabulary saved with a
// run reloads the same subword ids.

#include <gtest/gtest.h>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "config/schema.h"
#include "core_checks.h"
#include "harness.h"
#include "tasks/seq2seq.h"
#include "train/trainer.h"
#include "util/error.h"

namespace test_seq2seq_task {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// Pairs "w1 w2 ... wn" -> the same words reversed (or copied), n in [3, 6], words "a".."h".
Seq2SeqSplits reverse_pairs(int train, int valid, uint64_t seed, bool reverse = true) {
  std::mt19937_64 rng(seed);
  auto make = [&](int n, std::vector<TextPair>& out) {
    for (int i = 0; i < n; ++i) {
      const int len = 3 + static_cast<int>(rng() % 4);
      std::vector<std::string> w;
      for (int j = 0; j < len; ++j) w.push_back(std::string(1, static_cast<char>('a' + rng() % 8)));
      std::string s, t;
      for (int j = 0; j < len; ++j) {
        s += (j ? " " : "") + w[static_cast<size_t>(j)];
        t += (j ? " " : "") + w[static_cast<size_t>(reverse ? len - 1 - j : j)];
      }
      out.push_back({s, t});
    }
  };
  Seq2SeqSplits sp;
  make(train, sp.train);
  make(valid, sp.valid);
  make(valid, sp.test);
  return sp;
}

json config(const json& model, int64_t steps, int64_t batch = 32) {
  json m = model;
  if (!m.contains("embed")) m["embed"] = 32;
  if (!m.contains("hidden")) m["hidden"] = 64;
  json raw = {{"task", "seq2seq"},
              {"dataset",
               {{"subword", "bpe"},
                {"source_vocab_size", 20},
                {"target_vocab_size", 20},
                {"max_source_len", 16},
                {"max_target_len", 16}}},
              {"model", m},
              {"training",
               {{"batch", batch},
                {"steps", steps},
                {"lr", 0.01},
                {"eval_every", 0},
                {"log_every", 1},
                {"threads", 1},
                {"eval_test", false},
                {"eval_decode", 0},
                {"seed", 3}}}};
  return resolve_config(raw);
}

double exact_match(Seq2SeqTask& task, const std::string& split) {
  const auto& ex = task.examples(split);
  std::vector<std::vector<int32_t>> src;
  for (auto& e : ex) src.push_back(e.src);
  auto out = task.greedy(src, task.default_max_decode());
  int ok = 0;
  for (size_t i = 0; i < ex.size(); ++i) ok += out[i] == ex[i].tgt;
  return static_cast<double>(ok) / static_cast<double>(ex.size());
}

}  // namespace

TEST(Seq2seqTask, padding_does_not_change_a_pairs_loss) {
  for (json m : {json{{"cell", "lstm"}, {"layers", 2}}, json{{"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}}}) {
    torch::manual_seed(1);
    Seq2SeqTask task(config(m, 1), reverse_pairs(40, 8, 1), "");
    task.model()->eval();
    torch::NoGradGuard ng;
    const auto& ex = task.examples("train");
    const Seq2SeqTask::Example* shortest = &ex[0];
    const Seq2SeqTask::Example* longest = &ex[0];
    for (auto& e : ex) {
      if (e.src.size() < shortest->src.size()) shortest = &e;
      if (e.src.size() > longest->src.size()) longest = &e;
    }
    ASSERT_LT(shortest->src.size(), longest->src.size());
    StepContext c1, c2, c3;
    const double a = task.batch_nll(task.make_batch({shortest}), c1).item<double>();
    const double b = task.batch_nll(task.make_batch({longest}), c2).item<double>();
    auto both = task.make_batch({shortest, longest});
    EXPECT_EQ(both.y_mask.sum().item<double>(), static_cast<double>(shortest->tgt.size() + longest->tgt.size() + 2));
    const double ab = task.batch_nll(both, c3).item<double>();
    EXPECT_NEAR(ab, a + b, 1e-4 * (a + b)) << m.dump();
  }
}

TEST(Seq2seqTask, learns_to_copy_and_greedy_equals_beam_one) {
  torch::manual_seed(2);
  const int steps = 800;
  Seq2SeqTask task(config({{"cell", "gru"}}, steps), reverse_pairs(800, 60, 2, /*reverse=*/false), "");
  const double before = exact_match(task, "valid");
  torch::optim::Adam opt(task.model()->parameters(), torch::optim::AdamOptions(0.01));
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    auto r = task.train_step();
    r.loss.backward();
    torch::nn::utils::clip_grad_norm_(task.model()->parameters(), 5.0);
    opt.step();
    if (s == 0) first = r.task_loss;
    last = r.task_loss;
  }
  const double after = exact_match(task, "valid");
  std::printf("copy: valid exact match %.3f -> %.3f, train loss %.3f -> %.3f\n", before, after, first, last);
  EXPECT_LT(before, 0.05);
  EXPECT_GT(after, 0.9);
  auto ev = task.evaluate("valid");
  std::printf("copy: valid ppl %.3f bleu %.2f rougeL %.2f lead_bleu %.2f\n", ev.metrics["ppl"], ev.metrics["bleu"],
              ev.metrics["rougeL"], ev.metrics["lead_bleu"]);
  EXPECT_GT(ev.metrics.at("bleu"), 80.0);
  EXPECT_GT(ev.metrics.at("bleu"), ev.metrics.at("lead_bleu"));
  EXPECT_LT(ev.metrics.at("ppl"), 1.5);
  EXPECT_TRUE(ev.metrics.count("lead_rouge1"));
  EXPECT_FALSE(task.evaluate("valid").metrics.count("lead_bleu"));  // logged once
  // greedy == beam 1 (and batched greedy == greedy alone)
  const auto& ex = task.examples("valid");
  std::vector<std::vector<int32_t>> src;
  for (int i = 0; i < 8; ++i) src.push_back(ex[static_cast<size_t>(i)].src);
  auto batched = task.greedy(src, 12);
  BeamSearchOptions bo;
  bo.beam = 1;
  bo.max_length = 12;
  for (int i = 0; i < 8; ++i) {
    auto alone = task.greedy({src[static_cast<size_t>(i)]}, 12)[0];
    EXPECT_EQ(alone, batched[static_cast<size_t>(i)]);
    auto b1 = task.beam(src[static_cast<size_t>(i)], bo);
    ASSERT_EQ(b1.size(), 1u);
    auto toks = b1[0].tokens;
    if (!toks.empty() && toks.back() == SubwordVocab::eos_id) toks.pop_back();
    EXPECT_EQ(toks, alone);
    bo.beam = 10;
    auto b10 = task.beam(src[static_cast<size_t>(i)], bo);
    EXPECT_LE(b10.size(), 10u);
    for (size_t k = 1; k < b10.size(); ++k) EXPECT_GE(b10[k - 1].score, b10[k].score);
    bo.beam = 1;
  }
}

TEST(Seq2seqTask, resume_is_exact_and_the_saved_vocabulary_reloads) {
  const auto sp = reverse_pairs(100, 10, 4);
  json m = {{"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}, {"embed", 8}, {"hidden", 12}, {"dropout", 0.1}};
  json c12 = config(m, 12, 8), c6 = config(m, 6, 8);
  c12["training"]["eval_every"] = 4;
  c6["training"]["eval_every"] = 4;
  const auto runs = cstest::run_straight_and_resumed(
      c12, c6, [&](const json& c) -> std::unique_ptr<Task> { return std::make_unique<Seq2SeqTask>(c, sp, ""); },
      cstest::temp_dir() + "/s2s_ck.pt");
  ASSERT_GT(runs.straight_loss(), 0);
  EXPECT_DOUBLE_EQ(runs.resumed_loss(), runs.straight_loss());
  // the vocabulary text reloads the same subword models
  Seq2SeqTask a(c6, sp, "");
  const auto dir = cstest::temp_dir() + "/s2s_vocab_run";
  std::filesystem::create_directories(dir);
  cstest::write_text(dir + "/vocab", a.vocab_text());
  Seq2SeqTask b(c6, sp, dir);
  EXPECT_EQ(a.source_vocab().serialized(), b.source_vocab().serialized());
  EXPECT_EQ(a.target_vocab().serialized(), b.target_vocab().serialized());
  EXPECT_EQ(a.examples("valid")[3].src, b.examples("valid")[3].src);
  cstest::write_text(dir + "/vocab",
                     "{\"format\": \"cellscope-seq2seq-subword\", \"source\": \"@@\", \"target\": \"\"}\n");
  EXPECT_THROW(Seq2SeqTask(c6, sp, dir), UserError);
}

// A checkpoint's training order must match the dataset's training pairs: another length is one
// clear UserError (it was a TORCH_CHECK, reported as a corrupted checkpoint), the same loads.
TEST(Seq2seqTask, a_checkpoint_order_of_another_length_is_refused) {
  json m = {{"cell", "gru"}, {"embed", 8}, {"hidden", 8}};
  Seq2SeqTask a(config(m, 1, 8), reverse_pairs(40, 8, 1), "");
  Seq2SeqTask b(config(m, 1, 8), reverse_pairs(30, 8, 1), "");
  auto saved = [&](const Task& t, torch::serialize::InputArchive& in) {
    torch::serialize::OutputArchive out;
    t.save_state(out);
    std::ostringstream os;
    out.save_to(os);
    std::istringstream is(os.str());
    in.load_from(is);
  };
  a.train_step();
  torch::serialize::InputArchive in;
  saved(a, in);
  cstest::expect_user_error([&] { b.load_state(in); }, {"training order has 40 pairs", "the dataset has 30"});
  Seq2SeqTask c(config(m, 1, 8), reverse_pairs(40, 8, 1), "");
  torch::serialize::InputArchive in2;
  saved(a, in2);
  c.load_state(in2);
  EXPECT_DOUBLE_EQ(c.epoch(), a.epoch());
  EXPECT_DOUBLE_EQ(c.epoch(), 8.0 / 40.0);
}

}  // namespace test_seq2seq_task
