// Pieces shared by the tasks (tasks/TASK_COMMON_NOTES.md; the stream LMs: tasks/stream_lm.h): the seeded training order
// of the example tasks (classify/absa, cloze, seq2seq) and their base class, the split lookup by name (every task),
// evaluation order by length, the JSON vocabulary saved with a run, and the embedding and dropout pieces of the
// classify and cloze models.
#pragma once
#include <torch/nn/modules/embedding.h>
#include <torch/serialize/archive.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tasks/task.h"
#include "util/error.h"

namespace cs {

// 0..n-1 in a deterministic Fisher-Yates order drawn with a 64-bit Mersenne twister (the same
// order on every platform).
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);

// The training order of a task over a list of n examples: epoch e visits them in the seeded
// permutation of (training.seed, e), so a resumed run needs only the cursor; batches are
// consecutive runs of that order (the last batch of an epoch may be short).
class EpochOrder {
 public:
  // n training examples, `seed` = training.seed; starts at epoch 0. `examples` names them in
  // errors ("sentences", "questions", "pairs").
  void start(int64_t n, uint64_t seed, std::string examples);
  // The next at most `batch` example indices; a used-up epoch first moves on to the next.
  std::vector<int64_t> next(int64_t batch);
  // Fractional epochs seen.
  double epoch() const;
  // Checkpoint keys "cursor", "epochs_done", "perm" (int64); load refuses an order of another
  // length than the dataset's training split (UserError).
  void save(torch::serialize::OutputArchive& ar) const;
  void load(torch::serialize::InputArchive& ar);

 private:
  std::vector<int64_t> permutation(int64_t epoch) const;
  int64_t n_ = 0;
  uint64_t seed_ = 1;
  std::string examples_ = "examples";
  std::vector<int64_t> perm_;
  int64_t cursor_ = 0, epochs_done_ = 0;
};

// Base of the tasks that train on a list of examples in an EpochOrder (classify/absa, cloze,
// seq2seq): the order is their whole resumable state (save_state / load_state; a task with more
// calls these first), and to() moves the model and records the device for the batches.
class ExampleTask : public Task {
 public:
  double epoch() const override { return order_.epoch(); }
  void save_state(torch::serialize::OutputArchive& ar) const override { order_.save(ar); }
  void load_state(torch::serialize::InputArchive& ar) override { order_.load(ar); }
  void to(const torch::Device& d) override;

 protected:
  EpochOrder order_;
  torch::Device device_{torch::kCPU};
};

// The part of train/valid/test called `name`; UserError "unknown split" otherwise.
template <class T>
const T& split_named(const std::string& name, const T& train, const T& valid, const T& test) {
  if (name == "train") return train;
  if (name == "valid") return valid;
  if (name == "test") return test;
  throw UserError("unknown split '" + name + "' (expected train, valid or test)");
}

// 0..n-1 stably sorted by length(i): evaluation batches of similar lengths have less padding
// and give the same sums (the models mask the padding).
template <class Length>
std::vector<int64_t> order_by_length(int64_t n, Length length) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return length(a) < length(b); });
  return order;
}

// The JSON vocabulary saved with a run (run_dir/vocab), or nullopt when there is none (a new run
// or an empty run_dir). A file that is not JSON or whose "format" is not `format` is refused:
// "<path>: not a <what>".
std::optional<json> saved_vocab_json(const std::string& run_dir, const std::string& format, const std::string& what);

// An embedding [vocab, dim] with padding row `pad`, initialised as Keras does, U(-0.05, 0.05) (the
// scale an L2 of 1e-4 on the embedding assumes), with a zero padding row (a padded position is a
// zero input). classify/absa and the cloze readers.
torch::nn::Embedding padded_embedding(int64_t vocab, int64_t dim, int64_t pad);

// Dropout with probability p in training mode; `t` itself when p = 0 or not training.
torch::Tensor dropout_if(const torch::Tensor& t, double p, bool training);

// total + coeff * sum(weight^2) (the L2 on an embedding matrix), or total when coeff = 0 or the
// weight is frozen.
torch::Tensor add_embedding_l2(const torch::Tensor& total, const torch::Tensor& weight, double coeff);

// For the language-model tasks (they predict token t + 1 from position t): a CRU cell whose
// convolution window reaches past t (model.conv_window centered with filter_length >= 2) would
// be fed the very token it must predict. Adds one error naming model.conv_window.
void check_lm_sees_no_future(const json& cfg, std::vector<ConfigError>& errs);

}  // namespace cs
