// What the stream language models (char_lm, word_lm) share: the training tokens cut into B
// contiguous streams read by truncated BPTT with the state carried across segments, their
// data-parallel shards, their checkpointed state, and the scoring of a whole id sequence
// (tasks/TASK_COMMON_NOTES.md).
#pragma once
#include <torch/serialize/archive.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "cells/cell.h"
#include "data/vocab.h"
#include "tasks/task.h"

namespace cs {

// Reshape a token stream into B contiguous rows [B, n] (the tail that does not fill a row is dropped).
torch::Tensor batchify(const std::vector<int32_t>& ids, int64_t batch);

// The vocabulary saved with a run (run_dir/vocab), or null when there is none (a new run);
std::unique_ptr<Vocab> saved_run_vocab(const std::string& run_dir);
// one clear error when the train split cannot fill one batch of `batch` streams or the
// valid split is empty; `unit` is "characters" or "tokens".
void check_stream_splits(const std::string& source, size_t train, size_t valid, int64_t batch, const std::string& unit);

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

// The model of a stream LM as StreamLMTask drives it (CharLMModelImpl, WordLMModelImpl).
class StreamModel {
 public:
  virtual ~StreamModel() = default;
  // The zero carried state of `batch` streams.
  virtual std::vector<State> initial_state(int64_t batch, const torch::TensorOptions& opts) const = 0;
  // x [T, B] ids -> logits [T, B, V]; `states` carried (updated in place).
  virtual torch::Tensor forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx) = 0;
};

// Base of char_lm and word_lm. The derived constructor sets batch_, bptt_ and eval_batch_, builds
// its model and then calls start_streams().
class StreamLMTask : public Task {
 public:
  double epoch() const override;
  // Global batch = training.batch streams of the same batchified stream; rank r keeps rows
  // [r*B/W, (r+1)*B/W) (B must be divisible by W) and carries the state of its streams.
  void set_shard(int rank, int world) override;
  std::vector<torch::Tensor> sharded_state() const override { return flatten_state(state_); }
  void set_gathered_state(std::vector<torch::Tensor> full) override { gathered_ = std::move(full); }
  void to(const torch::Device& d) override;
  // The next TBPTT segment of the B training streams: inputs x [L, B] and targets
  // y [L, B] (y[t] = the token after x[t]); advances the cursor, wraps at the
  // end of an epoch (the carried state is then reset).
  std::pair<torch::Tensor, torch::Tensor> next_batch();
  const std::vector<State>& carried_state() const { return state_; }
  // The first validation batch as stream_nll scores it first (tasks/export_reference.cpp).
  std::vector<std::pair<std::string, torch::Tensor>> export_reference() override;

 protected:
  // The training tokens and the model.
  virtual const std::vector<int32_t>& train_tokens() const = 0;
  virtual const std::vector<int32_t>& valid_tokens() const = 0;
  virtual StreamModel& stream_model() = 0;

  // The batchified training streams and their zero state (end of the derived constructor).
  void start_streams();
  // Checkpoint: the carried state of all B streams (with data parallelism the trainer has
  // all-gathered the ranks' shards into gathered_, in the order of sharded_state()); read keeps
  // this rank's rows and refuses a state for another number of streams.
  void write_streams(torch::serialize::OutputArchive& ar) const;
  void read_streams(torch::serialize::InputArchive& ar);
  // NLL sum (nats) of an id sequence, every token but the first scored once: min(eval_batch,
  // (N-1)/bptt) streams of n inputs each cover targets ids[b*n+1 .. b*n+n], the remainder continues
  // the last stream with its carried state. With a probe, the cells' internals are recorded for
  // every segment; with per_pos, (*per_pos)[i] = the NLL of token i given the ones before it
  // (0 for token 0).
  double stream_nll(const std::vector<int32_t>& ids, int64_t eval_batch, Probe* probe, std::vector<float>* per_pos);

  torch::Tensor train_;  // [B, n] int64 (this rank's rows with data parallelism)
  int64_t batch_ = 0, bptt_ = 0, eval_batch_ = 0;
  int64_t local_batch_ = 0;  // streams of this rank (= batch_ with one process)
  int shard_rank_ = 0, shard_world_ = 1;
  std::vector<torch::Tensor> gathered_;  // full carried state for save_state (data-parallel)
  int64_t cursor_ = 0;                   // position within a row of train_
  int64_t epochs_done_ = 0;
  std::vector<State> state_;
  torch::Device device_{torch::kCPU};
};

}  // namespace cs
