// Checks shared by several core test files (GoogleTest, Qt-free):
//  * expect_user_error: f() must throw cs::UserError with every needle in its message
//    (test_cbt_build, test_cloze_rerank, test_data);
//  * ResumeRuns: the exact-resume check of the example tasks (test_classify, test_cloze_train,
//    test_seq2seq_task): `full` steps straight against `half` steps, a checkpoint and a second
//    trainer that loads it (the RNG scrambled in between) and runs on to `full`;
//  * default_corpus_ids: the start of the default corpus as character ids (test_fused_mzu,
//    test_fused_mcrnn: the same training on both paths).
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/trainer.h"
#include "util/error.h"
#include "util/paths.h"

namespace cstest {

// The first `chars` characters of the default corpus (moby-dick.txt in the data cache) as ids
// (kLong, [chars]) over its sorted character set, whose size goes to *V. Undefined (and the test
// marked failed) when the corpus is missing.
inline torch::Tensor default_corpus_ids(size_t chars, int64_t* V) {
  const std::string corpus = cs::data_cache_dir() + "/moby-dick.txt";
  if (!std::filesystem::exists(corpus)) {
    ADD_FAILURE() << "default corpus missing: " << corpus << " (run bash datasets/fetch.sh)";
    return torch::Tensor();
  }
  std::ifstream in(corpus, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text = text.substr(0, chars);
  std::map<unsigned char, int64_t> ids;
  for (unsigned char c : text) ids.emplace(c, 0);
  *V = 0;
  for (auto& [c, id] : ids) id = (*V)++;
  std::vector<int64_t> seq;
  for (unsigned char c : text) seq.push_back(ids[c]);
  return torch::tensor(seq, torch::kLong);
}

template <class F>
void expect_user_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
  } catch (const cs::UserError& e) {
    const std::string msg = e.what();
    for (const auto& n : needles)
      ASSERT_TRUE(msg.find(n) != std::string::npos) << "message '" << msg << "' lacks '" << n << "'";
    return;
  }
  FAIL() << "expected cs::UserError";
}

// The loss of the last training (not evaluation) record of a history; -1 when there is none.
inline double last_train_loss(const std::vector<cs::MetricsRecord>& h) {
  for (auto it = h.rbegin(); it != h.rend(); ++it)
    if (!it->eval) return it->values.at("loss");
  return -1.0;
}

struct ResumeRuns {
  std::unique_ptr<cs::Trainer> straight, resumed;
  double straight_loss() const { return last_train_loss(straight->history); }
  double resumed_loss() const { return last_train_loss(resumed->history); }
};

// Trains `full` straight from seed 5; trains `half` from seed 5 and saves a checkpoint at
// `checkpoint`; a trainer on `full` loads it after seed 99 (the checkpoint restores the RNG)
// and runs to the end. `make` builds a config's task.
inline ResumeRuns run_straight_and_resumed(const cs::json& full, const cs::json& half,
                                           const std::function<std::unique_ptr<cs::Task>(const cs::json&)>& make,
                                           const std::string& checkpoint) {
  ResumeRuns r;
  cs::seed_everything(5);
  r.straight = std::make_unique<cs::Trainer>(full, make(full), nullptr);
  r.straight->run();
  cs::seed_everything(5);
  cs::Trainer first(half, make(half), nullptr);
  first.run();
  first.save_checkpoint(checkpoint);
  cs::seed_everything(99);
  r.resumed = std::make_unique<cs::Trainer>(full, make(full), nullptr);
  r.resumed->load_checkpoint(checkpoint);
  r.resumed->run();
  return r;
}

}  // namespace cstest
