// Checks shared by several core test files (GoogleTest, Qt-free):
//  * expect_user_error: f() must throw cs::UserError with every needle in its message
//    (test_cbt_build, test_cloze_rerank, test_data);
//  * ResumeRuns: the exact-resume check of the example tasks (test_classify, test_cloze_train,
//    test_seq2seq_task): `full` steps straight against `half` steps, a checkpoint and a second
//    trainer that loads it (the RNG scrambled in between) and runs on to `full`.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "train/trainer.h"
#include "util/error.h"

namespace cstest {

template <class F>
void expect_user_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
  } catch (const cs::UserError& e) {
    const std::string msg = e.what();
    for (const auto& n : needles) ASSERT_TRUE(msg.find(n) != std::string::npos) << "message '" << msg << "' lacks '" << n << "'";
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
