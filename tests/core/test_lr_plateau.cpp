// training.lr_decay with lr_decay_patience and lr_decay_metric (train/LR_DECAY_NOTES.md): a
// scripted task whose validation metrics are given in advance, so which evaluations improve is
// known; the learning rate is read from the optimizer (Trainer::optimizer_lr) and from the
// logged `lr` of the training lines, and a run resumed after a decay keeps the decayed lr.
#include <gtest/gtest.h>

#include <torch/nn/modules/linear.h>
#include <torch/serialize.h>

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/task.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"

namespace test_lr_plateau {  // this file's own names in a unity build (tests/README.md)

using cs::json;

namespace {

// Validation metrics from a script: the k-th evaluation of "valid" returns {"loss": loss[k],
// "bleu": bleu[k]} (the last entries repeat). Its evaluation counter is task state, so a resumed
// run continues the script.
class ScriptedTask : public cs::Task {
 public:
  ScriptedTask(std::vector<double> loss, std::vector<double> bleu) : loss_(std::move(loss)), bleu_(std::move(bleu)) {
    net_ = std::make_shared<torch::nn::LinearImpl>(3, 1);
  }
  std::string name() const override { return "scripted"; }
  std::shared_ptr<torch::nn::Module> model() override { return net_; }
  cs::StepResult train_step() override {
    // A constant loss with a zero gradient: the weights never move, whatever the lr (no divergence).
    auto y = net_->forward(torch::ones({4, 3})).pow(2).mean() * 0.0 + 1.0;
    cs::StepResult r;
    r.loss = y;
    r.task_loss = y.item<double>();
    r.units = 4;
    return r;
  }
  cs::EvalResult evaluate(const std::string& split) override {
    if (split != "valid") return {{{"loss", 1.0}, {"bleu", 0.0}}, 1000};
    const size_t k = static_cast<size_t>(evals_++);
    return {{{"loss", loss_[std::min(k, loss_.size() - 1)]}, {"bleu", bleu_[std::min(k, bleu_.size() - 1)]}}, 1000};
  }
  std::string primary_metric() const override { return "loss"; }
  bool lower_is_better() const override { return true; }
  std::string unit_name() const override { return "items"; }
  double epoch() const override { return 0; }
  void save_state(torch::serialize::OutputArchive& ar) const override { ar.write("evals", torch::tensor(evals_)); }
  void load_state(torch::serialize::InputArchive& ar) override {
    torch::Tensor t;
    ar.read("evals", t);
    evals_ = t.item<int64_t>();
  }

 private:
  std::shared_ptr<torch::nn::LinearImpl> net_;
  std::vector<double> loss_, bleu_;
  int64_t evals_ = 0;
};

// Evaluations every 2 steps, a training line every step.
json config(int steps, double lr_decay, int64_t patience, const std::string& metric = "") {
  const auto path = cstest::write_text_fixture("lr_plateau.txt", 2000);
  return cs::load_and_resolve({{"task", "char_lm"},
                               {"dataset", {{"path", path}}},
                               {"model", {{"cell", "gru"}, {"embed", 4}, {"hidden", 4}}},
                               {"training",
                                {{"optimizer", "sgd"},
                                 {"lr", 0.4},
                                 {"steps", steps},
                                 {"eval_every", 2},
                                 {"log_every", 1},
                                 {"lr_decay", lr_decay},
                                 {"lr_decay_patience", patience},
                                 {"lr_decay_metric", metric},
                                 {"eval_test", false},
                                 {"tensorboard", false},
                                 {"threads", 1}}}});
}

// step -> the lr logged on that step's training line
std::map<int64_t, double> logged_lr(const std::vector<cs::MetricsRecord>& h) {
  std::map<int64_t, double> out;
  for (auto& r : h)
    if (!r.eval && r.values.count("lr")) out[r.step] = r.values.at("lr");
  return out;
}

// valid loss by evaluation: 1.0 best, 0.9 better, then 0.95, 0.96 (2 without improvement), 0.97,
// 0.8 better, 0.85, 0.86 (2 without), ...
const std::vector<double> kLoss = {1.0, 0.9, 0.95, 0.96, 0.97, 0.8, 0.85, 0.86, 0.87};

}  // namespace

TEST(LrPlateau, halves_after_patience_evaluations_without_improvement) {
  cs::Trainer t(config(18, 0.5, 2), std::make_unique<ScriptedTask>(kLoss, std::vector<double>{0}), nullptr);
  t.run();
  // Evaluations at steps 2, 4, ..., 18: the 4th (step 8) is the 2nd in a row without a better loss,
  // the 8th (step 16) too (the count started again after the decay at step 8 and after 0.8 at step 12).
  const auto lr = logged_lr(t.history);
  ASSERT_EQ(lr.size(), 18u);
  for (auto& [step, v] : lr) {
    const double expect = step <= 8 ? 0.4 : step <= 16 ? 0.2 : 0.1;
    EXPECT_DOUBLE_EQ(v, expect) << "step " << step;
  }
  EXPECT_DOUBLE_EQ(t.optimizer_lr(), 0.1);
}

TEST(LrPlateau, patience_one_decays_after_every_evaluation_without_improvement) {
  cs::Trainer t(config(10, 0.5, 1), std::make_unique<ScriptedTask>(kLoss, std::vector<double>{0}), nullptr);
  const auto out = t.run();
  ASSERT_EQ(out.summary.status, "finished") << out.summary.reason;
  const auto lr = logged_lr(t.history);
  // bad evaluations at steps 6, 8, 10
  EXPECT_DOUBLE_EQ(lr.at(6), 0.4);
  EXPECT_DOUBLE_EQ(lr.at(7), 0.2);
  EXPECT_DOUBLE_EQ(lr.at(9), 0.1);
  EXPECT_DOUBLE_EQ(t.optimizer_lr(), 0.05);
}

TEST(LrPlateau, follows_the_named_metric_higher_is_better) {
  // The loss improves at every evaluation; valid.bleu (higher is better) stalls after the 2nd.
  const std::vector<double> loss = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2};
  const std::vector<double> bleu = {10, 12, 12, 11, 11, 11};
  for (const std::string key : {"bleu", "valid.bleu"}) {
    cs::Trainer t(config(12, 0.5, 2, key), std::make_unique<ScriptedTask>(loss, bleu), nullptr);
    t.run();
    const auto lr = logged_lr(t.history);
    // bleu not above 12 at steps 6 and 8 -> decay at 8; at 10 and 12 -> decay at 12
    EXPECT_DOUBLE_EQ(lr.at(8), 0.4) << key;
    EXPECT_DOUBLE_EQ(lr.at(9), 0.2) << key;
    EXPECT_DOUBLE_EQ(lr.at(12), 0.2) << key;
    EXPECT_DOUBLE_EQ(t.optimizer_lr(), 0.1) << key;
  }
  // On the loss itself (the primary metric) nothing decays.
  cs::Trainer p(config(12, 0.5, 2), std::make_unique<ScriptedTask>(loss, bleu), nullptr);
  p.run();
  EXPECT_DOUBLE_EQ(p.optimizer_lr(), 0.4);
  // A metric the evaluation does not have: one UserError naming the option and the keys it has.
  cs::Trainer bad(config(4, 0.5, 2, "rouge9"), std::make_unique<ScriptedTask>(loss, bleu), nullptr);
  try {
    bad.run();
    FAIL() << "no error";
  } catch (const cs::UserError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(cstest::contains(what, "training.lr_decay_metric")) << what;
    EXPECT_TRUE(cstest::contains(what, "'rouge9'")) << what;
    EXPECT_TRUE(cstest::contains(what, "bleu, loss")) << what;
  }
}

TEST(LrPlateau, patience_from_ignores_early_evaluations_for_patience_and_decay) {
  // kLoss at steps 2, 4, ...: bad at 6 and 8 (not counted: before step 9), bad at 10 (decay, 1 of
  // patience 2), better at 12, bad at 14 (decay) and 16 (decay; 2 in a row: early stop at 16).
  json cfg = config(30, 0.5, 1);
  cfg["training"]["patience"] = 2;
  cfg["training"]["patience_from"] = 9;
  cs::Trainer t(cfg, std::make_unique<ScriptedTask>(kLoss, std::vector<double>{0}), nullptr);
  const auto out = t.run();
  EXPECT_EQ(out.summary.reason, "early stop (patience)");
  const auto lr = logged_lr(t.history);
  ASSERT_EQ(lr.rbegin()->first, 16);
  for (auto& [step, v] : lr) {
    const double expect = step <= 10 ? 0.4 : step <= 14 ? 0.2 : 0.1;
    EXPECT_DOUBLE_EQ(v, expect) << "step " << step;
  }
  EXPECT_DOUBLE_EQ(t.optimizer_lr(), 0.05);
  // without it: decays at 6 and 8, and early stop at step 8
  cfg["training"]["patience_from"] = 0;
  cs::Trainer u(cfg, std::make_unique<ScriptedTask>(kLoss, std::vector<double>{0}), nullptr);
  u.run();
  EXPECT_EQ(logged_lr(u.history).rbegin()->first, 8);
  EXPECT_DOUBLE_EQ(u.optimizer_lr(), 0.1);
}

TEST(LrPlateau, default_never_changes_the_lr) {
  json cfg = config(18, 0.5, 2);
  cfg["training"].erase("lr_decay");
  cfg["training"].erase("lr_decay_patience");
  cfg["training"].erase("lr_decay_metric");
  cfg = cs::load_and_resolve(cfg);
  ASSERT_DOUBLE_EQ(cfg["training"]["lr_decay"].get<double>(), 1.0);
  cs::Trainer t(cfg, std::make_unique<ScriptedTask>(kLoss, std::vector<double>{0}), nullptr);
  t.run();
  for (auto& [step, v] : logged_lr(t.history)) EXPECT_DOUBLE_EQ(v, 0.4) << "step " << step;
  EXPECT_DOUBLE_EQ(t.optimizer_lr(), 0.4);
}

TEST(LrPlateau, resume_after_a_decay_keeps_the_decayed_lr) {
  const std::string dir = cstest::temp_dir() + "/lr_plateau_resume";
  const json cfg = config(18, 0.5, 2);
  {
    auto store = std::make_shared<cs::RunStore>(dir);
    store->create();
    store->write_config(cfg);
    cs::Trainer t(cfg, std::make_unique<ScriptedTask>(kLoss, std::vector<double>{0}), store);
    cs::TrainerControl control;
    cs::TrainerCallbacks cb;
    cb.on_progress = [&](const cs::Progress& p) {
      // after the decay at step 8, a better loss at 12 and one evaluation without (14)
      if (p.step == 14) control.stop = true;
    };
    t.run(&control, cb);
    ASSERT_EQ(t.step(), 14);
    ASSERT_DOUBLE_EQ(t.optimizer_lr(), 0.2);
  }
  auto store = std::make_shared<cs::RunStore>(dir);
  cs::Trainer t(cfg, std::make_unique<ScriptedTask>(kLoss, std::vector<double>{0}), store);
  EXPECT_DOUBLE_EQ(t.optimizer_lr(), 0.4);  // before the checkpoint is read: training.lr
  t.resume();
  EXPECT_DOUBLE_EQ(t.optimizer_lr(), 0.2);
  t.run();
  // The same decays as the uninterrupted run: 0.2 until step 16, then 0.1 (the bad-evaluation
  // count since the last decay was carried by the checkpoint).
  const auto lr = logged_lr(t.history);
  EXPECT_DOUBLE_EQ(lr.at(15), 0.2);
  EXPECT_DOUBLE_EQ(lr.at(16), 0.2);
  EXPECT_DOUBLE_EQ(lr.at(17), 0.1);
  EXPECT_DOUBLE_EQ(t.optimizer_lr(), 0.1);
}

}  // namespace test_lr_plateau
