// The CRU paper's L2 of 1e-4 on the embedding layer (issue #36): the classify task's training
// step adds training.embed_l2 * sum(E^2), so the embedding's gradient gains exactly 2 * l2 * E
// (and no other parameter's changes); the bundled CRU Table 2 sweep uses the paper's 1e-4.
#include <gtest/gtest.h>

#include "config/schema.h"
#include "harness.h"
#include "tasks/task.h"
#include "train/trainer.h"

namespace test_cru_embed_l2 {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::string fixture() {
  std::string s;
  const char* words[] = {"great", "fine", "awful", "poor", "long", "short"};
  for (int i = 0; i < 40; ++i)
    s += json{{"text", std::string("the film was ") + words[i % 6] + " and " + words[(i * 5) % 6]},
              {"label", i % 3 ? "pos" : "neg"}}
             .dump() +
         "\n";
  const std::string path = cstest::temp_dir() + "/cru_embed_l2.jsonl";
  cstest::write_text(path, s);
  return path;
}

// Gradients of every parameter after one training step of a fresh, identically seeded task.
std::map<std::string, torch::Tensor> step_grads(double l2, torch::Tensor* embedding) {
  json cfg = load_and_resolve(
      {{"task", "classify"},
       {"dataset", {{"path", fixture()}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
       {"model", {{"cell", "cru_deep_enhanced"}, {"embed", 8}, {"hidden", 8}, {"fc", 8}, {"dropout", 0.0}}},
       {"training", {{"batch", 8}, {"steps", 1}, {"threads", 1}, {"seed", 5}, {"embed_l2", l2}}}});
  seed_everything(5);
  auto task = make_task(cfg);
  auto r = task->train_step();
  r.loss.backward();
  std::map<std::string, torch::Tensor> g;
  for (auto& p : task->model()->named_parameters()) {
    g[p.key()] = p.value().grad().clone();
    if (p.key().find("embed") != std::string::npos && p.value().dim() == 2 && embedding)
      *embedding = p.value().detach().clone();
  }
  return g;
}

}  // namespace

TEST(CruEmbedL2, embedding_gradient_gains_two_l2_e) {
  const double l2 = 0.01;
  torch::Tensor e0, e1;
  const auto g0 = step_grads(0.0, &e0), g1 = step_grads(l2, &e1);
  ASSERT_TRUE(e0.defined());
  ASSERT_TRUE(torch::equal(e0, e1));  // the same initial weights
  int embeddings = 0;
  for (auto& [name, a] : g0) {
    const auto& b = g1.at(name);
    if (name.find("embed") != std::string::npos && a.dim() == 2) {
      ++embeddings;
      const auto expect = a + 2.0 * l2 * e0;
      EXPECT_TRUE(torch::allclose(b, expect, 1e-5, 1e-7))
          << name << ": max |diff| " << (b - expect).abs().max().item<double>();
      EXPECT_GT((b - a).abs().max().item<double>(), 1e-5) << "the penalty changed nothing";
    } else {
      EXPECT_TRUE(torch::allclose(a, b, 1e-6, 1e-8)) << name << " changed with the embedding L2";
    }
  }
  EXPECT_EQ(embeddings, 1);
}

TEST(CruEmbedL2, table2_sweep_uses_the_papers_l2) {
  const json spec =
      json::parse(cstest::read_text(cstest::source_dir() + "/resources/sweeps/reproduce-cru-table2.json"));
  EXPECT_DOUBLE_EQ(spec.at("base").at("training").at("embed_l2").get<double>(), 1e-4);  // CRU paper, setup
}

}  // namespace test_cru_embed_l2
