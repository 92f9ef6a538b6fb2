// The pieces the tasks share (tasks/task_common.h): the seeded training order (batches, epochs,
// save/load), the split lookup, the evaluation order by length, the JSON vocabulary of a run
// and the padded embedding.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "core_checks.h"
#include "harness.h"
#include "tasks/task_common.h"

namespace test_task_common {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// An archive written by `save` read back as an InputArchive.
template <class Save>
void round_trip(Save save, torch::serialize::InputArchive& in) {
  torch::serialize::OutputArchive out;
  save(out);
  std::ostringstream os;
  out.save_to(os);
  std::istringstream is(os.str());
  in.load_from(is);
}

}  // namespace

TEST(TaskCommon, seeded_permutation_is_a_deterministic_permutation) {
  const auto a = seeded_permutation(50, 7), b = seeded_permutation(50, 7), c = seeded_permutation(50, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 50u);
  EXPECT_EQ(*std::min_element(a.begin(), a.end()), 0);
  EXPECT_EQ(*std::max_element(a.begin(), a.end()), 49);
  EXPECT_TRUE(seeded_permutation(0, 1).empty());
}

TEST(TaskCommon, epoch_order_walks_each_epochs_permutation_in_batches) {
  EpochOrder o;
  o.start(10, 3, "examples");
  EXPECT_DOUBLE_EQ(o.epoch(), 0.0);
  std::vector<int64_t> e0;
  for (size_t want : {4u, 4u, 2u}) {  // the last batch of an epoch is short
    auto b = o.next(4);
    ASSERT_EQ(b.size(), want);
    e0.insert(e0.end(), b.begin(), b.end());
  }
  EXPECT_DOUBLE_EQ(o.epoch(), 1.0);
  EXPECT_EQ(std::set<int64_t>(e0.begin(), e0.end()).size(), 10u);  // every example once
  // epoch 0 is the permutation of (seed, 0) the tasks have always used
  EXPECT_EQ(e0, seeded_permutation(10, 3 * 0x9E3779B97F4A7C15ULL + 1));
  auto b = o.next(4);  // epoch 1: a new permutation
  EXPECT_DOUBLE_EQ(o.epoch(), 1.4);
  const auto e1 = seeded_permutation(10, 3 * 0x9E3779B97F4A7C15ULL + 2);
  EXPECT_EQ(b, std::vector<int64_t>(e1.begin(), e1.begin() + 4));
  EXPECT_NE(e0, e1);
}

TEST(TaskCommon, epoch_order_resumes_exactly_and_refuses_another_length) {
  EpochOrder a;
  a.start(7, 11, "questions");
  for (int i = 0; i < 5; ++i) a.next(3);  // batches 3, 3, 1, then 3, 3: into the second epoch
  torch::serialize::InputArchive in;
  round_trip([&](torch::serialize::OutputArchive& ar) { a.save(ar); }, in);
  EpochOrder b;
  b.start(7, 11, "questions");
  b.load(in);
  EXPECT_DOUBLE_EQ(b.epoch(), a.epoch());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(b.next(3), a.next(3)) << i;

  torch::serialize::InputArchive in2;
  round_trip([&](torch::serialize::OutputArchive& ar) { a.save(ar); }, in2);
  EpochOrder c;
  c.start(8, 11, "questions");
  const double before = c.epoch();
  cstest::expect_user_error([&] { c.load(in2); }, {"training order has 7 questions", "the dataset has 8"});
  EXPECT_DOUBLE_EQ(c.epoch(), before);  // a refused checkpoint leaves the order as it was
}

TEST(TaskCommon, split_named_and_order_by_length) {
  const std::vector<int> tr{1}, va{2}, te{3};
  EXPECT_EQ(&split_named("train", tr, va, te), &tr);
  EXPECT_EQ(&split_named("valid", tr, va, te), &va);
  EXPECT_EQ(&split_named("test", tr, va, te), &te);
  cstest::expect_user_error([&] { split_named("dev", tr, va, te); },
                            {"unknown split 'dev'", "expected train, valid or test"});
  const std::vector<size_t> len{3, 1, 2, 1, 3};
  EXPECT_EQ(order_by_length(5, [&](int64_t i) { return len[static_cast<size_t>(i)]; }),
            (std::vector<int64_t>{1, 3, 2, 0, 4}));  // stable: ties keep their order
}

TEST(TaskCommon, saved_vocab_json_reads_only_its_format) {
  const std::string dir = cstest::temp_dir() + "/task_common_vocab";
  EXPECT_FALSE(saved_vocab_json("", "fmt-a", "A vocabulary").has_value());
  EXPECT_FALSE(saved_vocab_json(dir, "fmt-a", "A vocabulary").has_value());  // a new run: no file yet
  cstest::write_text(dir + "/vocab", R"({"format": "fmt-a", "words": ["x"]})");
  auto j = saved_vocab_json(dir, "fmt-a", "A vocabulary");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ((*j)["words"][0], "x");
  cstest::expect_user_error([&] { saved_vocab_json(dir, "fmt-b", "B vocabulary"); },
                            {dir + "/vocab: not a B vocabulary"});
  cstest::write_text(dir + "/vocab", "not json");
  cstest::expect_user_error([&] { saved_vocab_json(dir, "fmt-a", "A vocabulary"); },
                            {dir + "/vocab: not a A vocabulary ("});
}

TEST(TaskCommon, padded_embedding_and_l2) {
  torch::manual_seed(1);
  auto e = padded_embedding(20, 6, 1);
  EXPECT_EQ(e->weight.sizes().vec(), (std::vector<int64_t>{20, 6}));
  EXPECT_EQ(e->weight[1].abs().sum().item<float>(), 0.f);
  EXPECT_LE(e->weight.abs().max().item<float>(), 0.05f);
  EXPECT_GT(e->weight.abs().max().item<float>(), 0.f);
  EXPECT_TRUE(e->weight.requires_grad());
  auto zero = torch::tensor(0.0f);
  const double sq = e->weight.pow(2).sum().item<double>();
  EXPECT_NEAR(add_embedding_l2(zero, e->weight, 0.5).item<double>(), 0.5 * sq, 1e-6);
  EXPECT_EQ(add_embedding_l2(zero, e->weight, 0.0).item<double>(), 0.0);
  e->weight.set_requires_grad(false);  // frozen embeddings take no penalty
  EXPECT_EQ(add_embedding_l2(zero, e->weight, 0.5).item<double>(), 0.0);
  auto t = torch::ones({100});
  EXPECT_TRUE(dropout_if(t, 0.0, true).equal(t));
  EXPECT_TRUE(dropout_if(t, 0.5, false).equal(t));
  EXPECT_FALSE(dropout_if(t, 0.5, true).equal(t));
}

}  // namespace test_task_common
