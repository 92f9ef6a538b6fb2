// Character-level language modelling (MZU paper's PTB/text8 task):
// embedding -> cell stack -> linear -> softmax; truncated BPTT over B contiguous
// streams, state carried across segments and detached; loss in nats, BPC = NLL/ln 2.
#pragma once
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "cells/stack.h"
#include "data/char_corpus.h"
#include "tasks/stream_lm.h"

namespace cs {

// char_lm's own options; the members are their only defaults (char_lm_option_table()).
struct CharLMOptions {
  int64_t bptt = 100;       // training.bptt
  int64_t eval_batch = 16;  // training.eval_batch
};
const OptionTable<CharLMOptions>& char_lm_option_table();

class CharLMModelImpl : public torch::nn::Module, public StreamModel {
 public:
  CharLMModelImpl(const json& model, int64_t vocab);
  // x [T, B] ids -> logits [T, B, V]
  torch::Tensor forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx) override;
  std::vector<State> initial_state(int64_t batch, const torch::TensorOptions& opts) const override {
    return stack->initial_state(batch, opts);
  }
  torch::nn::Embedding embed{nullptr};
  CellStack stack{nullptr};
  torch::nn::Linear out{nullptr};
  double dropout = 0.0;
};
TORCH_MODULE(CharLMModel);

// The stream-LM pieces shared with word_lm (batchify, saved_run_vocab, the carried state in
// checkpoints, data-parallel shards): tasks/stream_lm.h.
class CharLMTask : public StreamLMTask {
 public:
  CharLMTask(const json& cfg, const std::string& run_dir);
  std::string name() const override { return "char_lm"; }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  StepResult train_step() override;  // next_batch() (StreamLMTask): y[t] = the character after x[t]
  // The same step on fixed buffers (Task::stage_static_batch, run/train/GRAPH_NOTES.md).
  bool has_static_step() const override { return true; }
  bool stage_static_batch() override;
  StaticForward static_forward() override;
  EvalResult evaluate(const std::string& split) override;
  std::string primary_metric() const override { return "bpc"; }
  bool lower_is_better() const override { return true; }
  std::string unit_name() const override { return "chars"; }
  void save_state(torch::serialize::OutputArchive& ar) const override;
  void load_state(torch::serialize::InputArchive& ar) override;
  std::string vocab_text() const override { return corpus_.vocab.serialize(); }

  // Evaluate an arbitrary id sequence (whole, state carried), with an optional probe.
  // Returns the NLL sum in nats and fills per-position NLL if requested.
  double nll_of(const std::vector<int32_t>& ids, int64_t eval_batch, std::vector<float>* per_pos = nullptr);
  const CharCorpus& corpus() const { return corpus_; }
  CharLMModel& net() { return model_; }
  const json& config() const { return cfg_; }

  // Inspection (tasks/task.h; implemented in char_lm_inspect.cpp).
  EncodedText encode_text(const std::string& text) const override;
  void probe_sequence(const std::vector<int32_t>& ids, Probe& probe) override;
  std::string split_text(const std::string& split, int64_t max_tokens) const override;
  std::string default_analysis_text() const override;
  SequenceScores sequence_scores(const std::string& split) override;
  std::string cell_name() const override;
  TokenStepper token_stepper(const std::string& seed_text) override;

 private:
  const std::vector<int32_t>& train_tokens() const override { return corpus_.train; }
  const std::vector<int32_t>& valid_tokens() const override { return corpus_.valid; }
  StreamModel& stream_model() override { return *model_; }
  json cfg_;
  CharCorpus corpus_;
  CharLMModel model_{nullptr};
  // The static step's buffers: the full window's x, y, and the carried state (state_ shares them
  // while the static step is used); staged_*: the batch static_forward() runs.
  torch::Tensor static_x_, static_y_, staged_x_, staged_y_;
  std::vector<State> static_state_;
};

}  // namespace cs
