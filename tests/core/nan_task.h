// A tiny Task whose loss becomes NaN from its `nan_step`-th training step on: tests how the
// trainer (one process or data-parallel) handles a non-finite loss. Its step counter is
// saved in checkpoints, so a resumed run continues counting.
#pragma once
#include <torch/nn/modules/linear.h>
#include <torch/serialize.h>

#include <limits>
#include <memory>
#include <string>

#include "tasks/task.h"

namespace cstest {

class NanTask : public cs::Task {
 public:
  explicit NanTask(int nan_step) : nan_step_(nan_step) { net_ = std::make_shared<torch::nn::LinearImpl>(3, 1); }
  std::string name() const override { return "nan_task"; }
  std::shared_ptr<torch::nn::Module> model() override { return net_; }
  cs::StepResult train_step() override {
    ++calls_;
    auto y = net_->forward(torch::ones({4, 3})).pow(2).mean();
    if (calls_ >= nan_step_) y = y * std::numeric_limits<double>::quiet_NaN();
    cs::StepResult r;
    r.loss = y;
    r.task_loss = y.item<double>();
    r.units = 4;
    return r;
  }
  cs::EvalResult evaluate(const std::string&) override { return {{{"loss", 1.0}}, 1}; }
  std::string primary_metric() const override { return "loss"; }
  bool lower_is_better() const override { return true; }
  std::string unit_name() const override { return "items"; }
  double epoch() const override { return 0; }
  void set_shard(int, int) override {}  // every rank trains the same fixed batch
  void save_state(torch::serialize::OutputArchive& ar) const override {
    ar.write("calls", torch::tensor(static_cast<int64_t>(calls_)));
  }
  void load_state(torch::serialize::InputArchive& ar) override {
    torch::Tensor t;
    ar.read("calls", t);
    calls_ = static_cast<int>(t.item<int64_t>());
  }

 private:
  std::shared_ptr<torch::nn::LinearImpl> net_;
  int nan_step_, calls_ = 0;
};

}  // namespace cstest
