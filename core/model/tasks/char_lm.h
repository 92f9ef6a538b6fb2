// Character-level language modelling (MZU paper's PTB/text8 task):
// embedding -> cell stack -> linear -> softmax; truncated BPTT over B contiguous
// streams, state carried across segments and detached; loss in nats, BPC = NLL/ln 2.
#pragma once
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "cells/stack.h"
#include "data/char_corpus.h"
#include "tasks/task.h"

namespace cs {

// char_lm's own options; the members are their only defaults (char_lm_option_table()).
struct CharLMOptions {
  int64_t bptt = 100;       // training.bptt
  int64_t eval_batch = 16;  // training.eval_batch
};
const OptionTable<CharLMOptions>& char_lm_option_table();

class CharLMModelImpl : public torch::nn::Module {
 public:
  CharLMModelImpl(const json& model, int64_t vocab);
  // x [T, B] ids -> logits [T, B, V]
  torch::Tensor forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx);
  torch::nn::Embedding embed{nullptr};
  CellStack stack{nullptr};
  torch::nn::Linear out{nullptr};
  double dropout = 0.0;
};
TORCH_MODULE(CharLMModel);

// Reshape a token stream into B contiguous rows [B, n] (the tail that does not fill a row is dropped).
torch::Tensor batchify(const std::vector<int32_t>& ids, int64_t batch);

// Shared by the stream language-model tasks (char_lm, word_lm):
// the vocabulary saved with a run (run_dir/vocab), or null when there is none (a new run);
std::unique_ptr<Vocab> saved_run_vocab(const std::string& run_dir);
// one clear error when the train split cannot fill one batch of `batch` streams or the
// valid split is empty; `unit` is "characters" or "tokens".
void check_stream_splits(const std::string& source, size_t train, size_t valid, int64_t batch,
                         const std::string& unit);

// The carried state of a stream LM in a checkpoint (keys n_layers, state_<l>_n,
// state_<l>_<j>). write: `flat` (the state gathered from the data-parallel ranks, in
// layer-major order) replaces `state`'s tensors when not empty. read: the layer count
// must match; each tensor read goes through `adapt` (device, a rank's rows).
void write_carried_state(torch::serialize::OutputArchive& ar, const std::vector<State>& state,
                         const std::vector<torch::Tensor>& flat = {});
void read_carried_state(torch::serialize::InputArchive& ar, std::vector<State>& state,
                        const std::function<torch::Tensor(torch::Tensor)>& adapt);
// The carried state's tensors in layer-major order (what the data-parallel ranks gather).
std::vector<torch::Tensor> flatten_state(const std::vector<State>& state);
// Every tensor of the carried state moved to `d`.
void state_to(std::vector<State>& state, const torch::Device& d);
// Data-parallel shard of a stream LM: checks that `batch` streams split evenly over
// `world` ranks (UserError otherwise; `task` names the task) and returns the rank's
// stream count B/W; rank r trains streams [r*B/W, (r+1)*B/W).
int64_t stream_shard_size(const std::string& task, int64_t batch, int rank, int world);

class CharLMTask : public Task {
 public:
  CharLMTask(const json& cfg, const std::string& run_dir);
  std::string name() const override { return "char_lm"; }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  StepResult train_step() override;
  // The next TBPTT segment of the B training streams: inputs x [L, B] and targets
  // y [L, B] (y[t] = the character after x[t]); advances the cursor, wraps at the
  // end of an epoch (the carried state is then reset).
  std::pair<torch::Tensor, torch::Tensor> next_batch();
  const std::vector<State>& carried_state() const { return state_; }
  EvalResult evaluate(const std::string& split) override;
  std::string primary_metric() const override { return "bpc"; }
  bool lower_is_better() const override { return true; }
  std::string unit_name() const override { return "chars"; }
  double epoch() const override;
  void save_state(torch::serialize::OutputArchive& ar) const override;
  void load_state(torch::serialize::InputArchive& ar) override;
  std::string vocab_text() const override { return corpus_.vocab.serialize(); }
  void to(const torch::Device& d) override;
  // Global batch = training.batch streams of the same batchified stream; rank r
  // trains streams [r*B/W, (r+1)*B/W) (B must be divisible by W).
  void set_shard(int rank, int world) override;
  std::vector<torch::Tensor> sharded_state() const override;
  void set_gathered_state(std::vector<torch::Tensor> full) override { gathered_ = std::move(full); }

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
  json cfg_;
  CharCorpus corpus_;
  CharLMModel model_{nullptr};
  torch::Tensor train_;  // [B, n] int64
  int64_t batch_, bptt_, eval_batch_;
  int64_t local_batch_ = 0;              // streams of this rank (= batch_ with one process)
  int shard_rank_ = 0, shard_world_ = 1;
  std::vector<torch::Tensor> gathered_;  // full carried state for save_state (data-parallel)
  int64_t cursor_ = 0;     // position within a row of train_
  int64_t epochs_done_ = 0;
  std::vector<State> state_;
  torch::Device device_{torch::kCPU};
};

}  // namespace cs
