// Word-level language modelling (the MC-RNN paper's PTB task, AWD-LSTM setup):
// embedding (+ embedding dropout) -> locked dropout -> recurrent layers with locked
// dropout between them (weight drop on the base cells' w_hh) -> locked dropout ->
// linear (optionally tied to the embedding) -> softmax. Truncated BPTT over B
// contiguous streams, state carried; metric: perplexity ("ppl", lower is better).
// Optimizers: Adam, SGD, and ASGD (SGD + iterate averaging done here, see
// tasks/WORD_LM_NOTES.md). The layers are built from the cell registry.
#pragma once
#include <torch/nn/modules/embedding.h>

#include "cells/stack.h"
#include "data/word_corpus.h"
#include "tasks/stream_lm.h"

namespace cs {

// word_lm's own options; the members are their only defaults (word_lm_option_table()).
// The dataset.* members (vocab_size, min_count, lowercase, tokenizer, locale, eos) are
// data/word_corpus.h's WordCorpusOptions, which the loader reads.
struct WordLMOptions : WordCorpusOptions {
  int64_t bptt = 70;         // training.bptt
  int64_t eval_batch = 10;   // training.eval_batch
  int64_t asgd_start = 0;    // training.asgd_start
  int64_t asgd_nonmono = 5;  // training.asgd_nonmono
};
const OptionTable<WordLMOptions>& word_lm_option_table();

// word_lm's model.* options (AWD-LSTM regularisation); word_lm_model_option_table().
struct WordLMModelOptions {
  double dropoute = 0.0;
  std::optional<double> dropouti;  // unset: model.dropout
  std::optional<double> dropouth;  // unset: model.dropout
  double weight_drop = 0.0;
  bool tie_weights = false;
};
const OptionTable<WordLMModelOptions>& word_lm_model_option_table();

class WordLMModelImpl : public torch::nn::Module, public StreamModel {
 public:
  WordLMModelImpl(const json& model, int64_t vocab);
  // x [T, B] ids -> logits [T, B, V]
  torch::Tensor forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx) override;
  std::vector<State> initial_state(int64_t batch, const torch::TensorOptions& opts) const override;
  double flops_per_step() const;  // recurrent layers + output layer, per token
  torch::nn::Embedding embed{nullptr};
  std::vector<std::shared_ptr<CellImpl>> layers;
  torch::Tensor out_w, out_b;  // out_w undefined when tied to embed->weight
  double dropout = 0, dropouth = 0, dropouti = 0, dropoute = 0;
  bool tied = false;

 private:
  torch::Tensor locked_dropout(const torch::Tensor& x, double p) const;
};
TORCH_MODULE(WordLMModel);

class WordLMTask : public StreamLMTask {
 public:
  WordLMTask(const json& cfg, const std::string& run_dir);
  std::string name() const override { return "word_lm"; }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  StepResult train_step() override;
  EvalResult evaluate(const std::string& split) override;
  std::string primary_metric() const override { return "ppl"; }
  bool lower_is_better() const override { return true; }
  std::string unit_name() const override { return "tokens"; }
  void save_state(torch::serialize::OutputArchive& ar) const override;
  void load_state(torch::serialize::InputArchive& ar) override;
  std::string vocab_text() const override { return corpus_.vocab.serialize(); }
  void to(const torch::Device& d) override;  // also the ASGD average

  // NLL sum (nats) of an id sequence, every token but the first scored once, state carried.
  // With a probe, the cells' internals are recorded for every scored segment (analyses, Fig. 3).
  // With per_pos, (*per_pos)[i] = the NLL of token i given the ones before it (0 for token 0).
  double nll_of(const std::vector<int32_t>& ids, int64_t eval_batch, Probe* probe = nullptr,
                std::vector<float>* per_pos = nullptr);
  const WordCorpus& corpus() const { return corpus_; }
  const json& config() const { return cfg_; }
  WordLMModel& net() { return model_; }
  bool averaging() const { return avg_on_; }

  // Inspection (tasks/task.h; implemented in word_lm_inspect.cpp).
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
  void update_average();
  json cfg_;
  WordCorpus corpus_;
  WordLMModel model_{nullptr};
  int64_t steps_ = 0;
  // ASGD (training.optimizer = asgd): running average of the parameters
  bool asgd_ = false, avg_on_ = false;
  int64_t asgd_start_ = 0, asgd_nonmono_ = 5, avg_n_ = 0;
  std::vector<torch::Tensor> avg_;
  std::vector<double> valid_history_;
};

void register_word_lm_task(std::vector<TaskInfo>& out);

}  // namespace cs
