#include "tasks/char_lm.h"

#include <torch/nn/functional.h>

#include <cmath>

#include "cells/registry.h"
#include "config/common_options.h"
#include "tasks/eval_scope.h"
#include "tasks/task_common.h"
#include "util/error.h"

namespace cs {

namespace F = torch::nn::functional;

CharLMModelImpl::CharLMModelImpl(const json& m, int64_t vocab) {
  const ModelOptions mo = read_model_options(m);
  const int64_t E = mo.embed;
  dropout = mo.dropout;
  embed = register_module("embed", torch::nn::Embedding(vocab, E));
  stack = register_module("stack", CellStack(m, E));
  out = register_module("out", torch::nn::Linear(stack->output_size(), vocab));
}

torch::Tensor CharLMModelImpl::forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx) {
  auto e = embed->forward(x);
  // Without input dropout in this forward, the stack's input is exactly embed->weight[x]: its
  // first layer may fold the lookup into its input map (cells/token_fold.h).
  const bool dropped = dropout > 0 && is_training();
  if (dropout > 0) e = F::dropout(e, F::DropoutFuncOptions().p(dropout).training(is_training()));
  const TokenInput tokens{embed->weight, x};
  auto h = stack->forward(e, states, ctx, dropped ? nullptr : &tokens);
  if (dropout > 0) h = F::dropout(h, F::DropoutFuncOptions().p(dropout).training(is_training()));
  return out->forward(h);
}

CharLMTask::CharLMTask(const json& cfg, const std::string& run_dir) : cfg_(cfg) {
  const CharLMOptions o = char_lm_option_table().read(cfg);
  batch_ = resolved_cfg<int64_t>(cfg, "training", "batch");
  bptt_ = o.bptt;
  eval_batch_ = o.eval_batch;
  auto vocab = saved_run_vocab(run_dir);
  corpus_ = load_char_corpus(read_dataset_options(cfg.at("dataset")), vocab.get());
  check_stream_splits(corpus_.source, corpus_.train.size(), corpus_.valid.size(), batch_, "characters");
  model_ = CharLMModel(cfg.at("model"), static_cast<int64_t>(corpus_.vocab.size()));
  start_streams();
}

StepResult CharLMTask::train_step() {
  model_->train();
  auto [x, y] = next_batch();
  const int64_t L = x.size(0);
  StepContext ctx;
  ctx.step = train_step_index();  // loss_units: the default T x B, the mean NLL's characters
  auto logits = model_->forward(x, state_, ctx);
  state_ = detach_states(state_);  // truncated BPTT: carry the state, cut the graph
  auto nll = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
  StepResult r;
  r.loss = ctx.extra_loss.defined() ? nll + ctx.extra_loss : nll;
  r.task_loss = nll.item<double>();
  r.units = L * local_batch_;  // this rank's characters (the trainer sums over ranks)
  // forward: the stack's cells + the output layer per character; training = 3 x forward
  // (less what a folded embedding did not run, cells/token_fold.h: the products executed)
  r.flops = 3.0 * (model_->stack->flops_per_step() + 2.0 * static_cast<double>(model_->out->weight.numel())) *
                static_cast<double>(r.units) -
            3.0 * ctx.folded_flops;
  r.metrics["bpc"] = r.task_loss / std::log(2.0);
  for (auto& [k, v] : ctx.metrics) r.metrics[k] = v.first / std::max<int64_t>(v.second, 1);
  return r;
}

bool CharLMTask::stage_static_batch() {
  auto [x, y] = next_batch();  // may start a new epoch with a zero state_
  if (!static_x_.defined()) {
    static_x_ = torch::empty(x.sizes(), x.options().memory_format(torch::MemoryFormat::Contiguous));
    static_y_ = torch::empty(y.sizes(), y.options().memory_format(torch::MemoryFormat::Contiguous));
  }
  const bool fixed = x.sizes() == static_x_.sizes();
  if (fixed) {
    static_x_.copy_(x);
    static_y_.copy_(y);
    staged_x_ = static_x_;
    staged_y_ = static_y_;
  } else {
    staged_x_ = x.contiguous();
    staged_y_ = y.contiguous();
  }
  // The carried state lives in fixed buffers: a state that took its place (a new epoch's zero state,
  // a checkpoint's) is copied into them.
  torch::NoGradGuard ng;
  bool same_shapes = static_state_.size() == state_.size();
  for (size_t l = 0; same_shapes && l < state_.size(); ++l) {
    same_shapes = static_state_[l].size() == state_[l].size();
    for (size_t j = 0; same_shapes && j < state_[l].size(); ++j)
      same_shapes =
          static_state_[l][j].sizes() == state_[l][j].sizes() && static_state_[l][j].device() == state_[l][j].device();
  }
  if (!same_shapes) {
    static_state_ = state_;
    for (auto& s : static_state_)
      for (auto& t : s) t = t.detach().clone(torch::MemoryFormat::Contiguous);
  } else {
    for (size_t l = 0; l < state_.size(); ++l)
      for (size_t j = 0; j < state_[l].size(); ++j)
        if (!state_[l][j].is_same(static_state_[l][j])) static_state_[l][j].copy_(state_[l][j]);
  }
  state_ = static_state_;
  return fixed;
}

StaticForward CharLMTask::static_forward() {
  model_->train();
  StepContext ctx;
  ctx.step = train_step_index();
  ctx.tensor_metrics = true;       // no read-back inside the step
  std::vector<State> st = state_;  // the forward rebinds its entries to the new state
  auto logits = model_->forward(staged_x_, st, ctx);
  auto nll = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), staged_y_.reshape({-1}));
  StaticForward r;
  r.loss = ctx.extra_loss.defined() ? nll + ctx.extra_loss : nll;
  r.task_loss = nll.detach();
  r.metrics = std::move(ctx.metric_tensors);
  r.host_schedule = ctx.host_schedule;
  r.loss_metrics = {{"bpc", 1.0 / std::log(2.0)}};  // as train_step's
  r.units = staged_x_.size(0) * local_batch_;
  r.flops = 3.0 * (model_->stack->flops_per_step() + 2.0 * static_cast<double>(model_->out->weight.numel())) *
                static_cast<double>(r.units) -
            3.0 * ctx.folded_flops;
  // Truncated BPTT as train_step's detach: the new state copied into the carried buffers, after
  // the backward that still reads the old one.
  r.commit = [this, st]() {
    torch::NoGradGuard ng;
    for (size_t l = 0; l < state_.size(); ++l)
      for (size_t j = 0; j < state_[l].size(); ++j) state_[l][j].copy_(st[l][j].detach());
  };
  return r;
}

double CharLMTask::nll_of(const std::vector<int32_t>& ids, int64_t eval_batch, std::vector<float>* per_pos) {
  return stream_nll(ids, eval_batch, nullptr, per_pos);
}

EvalResult CharLMTask::evaluate(const std::string& split) {
  const std::vector<int32_t>* ids = &split_named(split, corpus_.train, corpus_.valid, corpus_.test);
  if (ids->size() < 2) throw UserError("the " + split + " split of '" + corpus_.source + "' is empty");
  double total = 0;
  {
    EvalScope es(*model_);
    total = nll_of(*ids, eval_batch_);
  }
  EvalResult r;
  r.units = static_cast<int64_t>(ids->size()) - 1;
  const double loss = total / static_cast<double>(r.units);
  r.metrics["loss"] = loss;
  r.metrics["bpc"] = loss / std::log(2.0);
  return r;
}

void CharLMTask::save_state(torch::serialize::OutputArchive& ar) const {
  ar.write("cursor", torch::tensor(cursor_, torch::kInt64));
  ar.write("epochs_done", torch::tensor(epochs_done_, torch::kInt64));
  write_streams(ar);
}

void CharLMTask::load_state(torch::serialize::InputArchive& ar) {
  auto I = [&](const std::string& k) {
    torch::Tensor t;  // fresh: reading into a defined tensor would try to resize it
    ar.read(k, t);
    return t.item<int64_t>();
  };
  cursor_ = I("cursor");
  epochs_done_ = I("epochs_done");
  read_streams(ar);
}

const OptionTable<CharLMOptions>& char_lm_option_table() {
  static const auto t = [] {
    OptionTable<CharLMOptions> t("");
    t.field("training.bptt", &CharLMOptions::bptt, 1, 100000,
            "Truncated BPTT length: characters per segment; the state is carried across segments (MZU paper: 150).");
    t.field("training.eval_batch", &CharLMOptions::eval_batch, 1, 65536,
            "Streams used to evaluate a split (every character is scored once, state carried).");
    return t;
  }();
  return t;
}

void register_char_lm_task(std::vector<TaskInfo>& out) {
  TaskInfo t;
  t.name = "char_lm";
  t.description = "Character-level language modelling (MZU paper: PTB, text8); metric: bits per character";
  t.unit = "chars";
  t.options = char_lm_option_table().specs();
  // Catch a corpus cut too short for one batch before any data is loaded (the
  // GUI shows this next to dataset.max_chars).
  t.check = [](const json& cfg, std::vector<ConfigError>& errs) {
    check_lm_sees_no_future(cfg, errs);
    const DatasetOptions ds = read_dataset_options(cfg.at("dataset"));
    const int64_t mx = ds.max_chars;
    if (mx <= 0) return;
    const int64_t batch = resolved_cfg<int64_t>(cfg, "training", "batch");
    const double train_frac = 1.0 - ds.valid_fraction - ds.test_fraction;
    const auto train_chars = static_cast<int64_t>(static_cast<double>(mx) * train_frac);
    if (train_chars < 2 * batch)
      errs.push_back({"dataset.max_chars", "keeps about " + std::to_string(train_chars) +
                                               " characters for training, fewer than 2 x training.batch = " +
                                               std::to_string(2 * batch) + "; raise it (or lower training.batch)"});
  };
  t.make = [](const json& cfg, const std::string& run_dir) -> std::unique_ptr<Task> {
    return std::make_unique<CharLMTask>(cfg, run_dir);
  };
  out.push_back(std::move(t));
}

}  // namespace cs
