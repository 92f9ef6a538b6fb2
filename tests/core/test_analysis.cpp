// Analyses on tiny models where the answer is known.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "analysis/computations.h"
#include "cells/baseline.h"
#include "corpus_fixture.h"
#include "data/utf8.h"
#include "harness.h"
#include "tasks/char_lm.h"

namespace test_analysis {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {
json cfg_for(const std::string& path, const std::string& cell) {
  return load_and_resolve({{"task", "char_lm"},
                           {"dataset", {{"path", path}, {"valid_fraction", 0.2}, {"test_fraction", 0.2}}},
                           {"model", {{"cell", cell}, {"embed", 6}, {"hidden", 8}}},
                           {"training", {{"batch", 2}, {"bptt", 8}}}});
}
// Lines of a CSV (as QString::trimmed().split('\n').size()).
int csv_lines(const std::string& csv) {
  const auto b = csv.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return 1;
  const auto e = csv.find_last_not_of(" \t\n\r\f\v");
  return static_cast<int>(cstest::split(csv.substr(b, e - b + 1), '\n').size());
}
}  // namespace

TEST(Analysis, identicalHiddenStatesGiveRelevanceOne) {
  auto path = cstest::write_text_fixture("rel.txt", 3000);
  CharLMTask task(cfg_for(path, "rnn"), "");
  // vanilla RNN with no recurrence: h_t = tanh(W x_t + b) = candidate; a text of one
  // repeated character gives identical states everywhere -> relevance 1 for every j < t
  auto cell = std::dynamic_pointer_cast<GateCellBase>(task.net()->stack->layers[0]);
  ASSERT_TRUE(cell);
  {
    torch::NoGradGuard ng;
    cell->w_hh.zero_();
  }
  auto m = relevance_map(task, "eeeeeeeee", 3);
  ASSERT_EQ(m.rows(), int64_t(3));
  ASSERT_EQ(m.cols(), int64_t(9));
  for (int64_t r = 0; r < 3; ++r) {
    const int64_t t = 6 + r;
    for (int64_t j = 0; j < 9; ++j) {
      if (j < t) ASSERT_TRUE(std::abs(m.at(r, j) - 1.0) < 1e-9) << m.at(r, j);
      else ASSERT_TRUE(std::isnan(m.at(r, j)));
    }
  }
  // labels: spaces are shown as '_'
  auto m2 = relevance_map(task, "e e", 1);
  ASSERT_EQ(m2.col_labels[1], std::string("_"));
  // the CSV has a header row plus one row per character t
  ASSERT_EQ(csv_lines(m.to_csv()), 4);
}

TEST(Analysis, relevanceMatchesHandComputedCosines) {
  auto path = cstest::write_text_fixture("rel2.txt", 3000);
  CharLMTask task(cfg_for(path, "gru"), "");
  const std::string text = "the whale";
  auto m = relevance_map(task, text, 2);
  // recompute with a probe by hand
  task.net()->eval();
  torch::NoGradGuard ng;
  std::vector<int64_t> ids;
  for (auto& s : utf8_symbols(text)) ids.push_back(task.corpus().vocab.id(s));
  auto x = torch::tensor(ids).view({-1, 1});
  auto st = task.net()->stack->initial_state(1, torch::TensorOptions());
  Probe p;
  StepContext ctx;
  ctx.probe = &p;
  task.net()->forward(x, st, ctx);
  auto cand = p.stacked("l0/candidate").squeeze(1).to(torch::kFloat64);
  auto h = p.stacked("l0/h").squeeze(1).to(torch::kFloat64);
  const int64_t T = static_cast<int64_t>(ids.size());
  for (int64_t r = 0; r < 2; ++r) {
    const int64_t t = T - 2 + r;
    for (int64_t j = 0; j < t; ++j) {
      const double c =
          (cand[t] * h[j]).sum().item<double>() / (cand[t].norm().item<double>() * h[j].norm().item<double>());
      ASSERT_TRUE(std::abs(c - m.at(r, j)) < 1e-6);
    }
  }
}

TEST(Analysis, bucketAggregationByHand) {
  // lengths 3 and 12 with NLL 1 and 2 nats per character
  auto b = make_length_buckets(default_edges_for("char_lm"));
  b.metric = "bpc";
  ASSERT_EQ(static_cast<int>(b.buckets.size()), 10);
  ASSERT_EQ(b.buckets.back().label, std::string("9"));
  ASSERT_EQ(b.buckets.back().lo, int64_t(90));
  ASSERT_EQ(b.buckets.back().hi, int64_t(120));
  add_sequence(b, 3, 3, 3 * 1.0);
  add_sequence(b, 12, 12, 12 * 2.0);
  add_sequence(b, 121, 121, 1.0);  // outside every bucket: ignored
  finish_buckets(b);
  ASSERT_EQ(b.buckets[0].sequences, int64_t(1));
  ASSERT_EQ(b.buckets[0].units, int64_t(3));
  ASSERT_TRUE(std::abs(b.buckets[0].value - 1.0 / std::log(2.0)) < 1e-9);
  ASSERT_EQ(b.buckets[1].sequences, int64_t(1));
  ASSERT_TRUE(std::abs(b.buckets[1].value - 2.0 / std::log(2.0)) < 1e-9);
  ASSERT_TRUE(std::isnan(b.buckets[5].value));
  int64_t seqs = 0;
  for (auto& k : b.buckets) seqs += k.sequences;
  ASSERT_EQ(seqs, int64_t(2));
}

TEST(Analysis, bpcByLengthOfAUniformModel) {
  // a corpus of lines of exactly 5 and 15 characters; a model with a zero output
  // layer predicts uniformly: every line's BPC is log2(V), in its own bucket
  std::string text;
  for (int i = 0; i < 60; ++i) text += (i % 2 ? std::string("abcdeabcdeabcde\n") : std::string("edcba\n"));
  const std::string path = cstest::temp_dir() + "/two_lengths.txt";
  cstest::write_text(path, text);
  CharLMTask task(cfg_for(path, "gru"), "");
  {
    torch::NoGradGuard ng;
    task.net()->out->weight.zero_();
    task.net()->out->bias.zero_();
  }
  auto lb = metric_by_length(task, "test", default_edges_for("char_lm"));
  ASSERT_EQ(lb.metric, std::string("bpc"));
  ASSERT_EQ(lb.length_unit, std::string("characters"));
  const auto& b = lb.buckets;
  const double V = static_cast<double>(task.corpus().vocab.size());
  ASSERT_TRUE(b[0].sequences > 0 && b[1].sequences > 0);
  ASSERT_TRUE(std::abs(b[0].value - std::log2(V)) < 1e-5);
  ASSERT_TRUE(std::abs(b[1].value - std::log2(V)) < 1e-5);
  int64_t seqs = 0;
  for (auto& k : b) seqs += k.sequences;
  ASSERT_EQ(seqs, b[0].sequences + b[1].sequences);
  ASSERT_TRUE(b[0].units % 5 == 0 || b[0].units % 5 == 4);  // the split's first line may lose its first character
  ASSERT_EQ(b[1].units % 15 == 0 || b[1].units % 15 == 14, true);
}

}  // namespace test_analysis
