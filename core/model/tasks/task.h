// A task = data + model + loss + evaluation. The trainer (train/trainer.h) is
// generic over tasks; char-LM, word-LM, classification and ABSA implement this.
#pragma once
#include <torch/nn/module.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/option_spec.h"
#include "tasks/inspect.h"

namespace cs {

struct Probe;

struct StepResult {
  torch::Tensor loss;    // scalar to backpropagate (task loss + cells' extra terms)
  double task_loss = 0;  // the task loss alone (nats per unit), for logging
  int64_t units = 0;     // characters / tokens / sentences consumed by this step
  // Training FLOPs of this step on this rank: 3 x the analytic forward FLOPs (the cells'
  // flops_per_step() per token + embedding-free output/task head), as core/run/bench counts
  // them; 0 when the task does not know (the trainer then records none).
  double flops = 0;
  std::map<std::string, double> metrics;  // e.g. "bpc", "zone_disagreement"
};

struct EvalResult {
  std::map<std::string, double> metrics;  // e.g. {"loss": nats, "bpc": ..} or {"accuracy": ..}
  int64_t units = 0;
  std::map<std::string, std::string> labels = {};  // text facts of the evaluation (seq2seq: "decode")
  // The test evaluation's own per-sequence scores, as sequence_scores("test") gives them, when it scored
  // every sequence of the split anyway (seq2seq: its decodes of every pair); null otherwise. The trainer's
  // test_examples.json takes them instead of decoding the test split a second time.
  std::shared_ptr<const SequenceScores> sequences = nullptr;
  // Non-empty when some of the metrics cover only part of the split, saying which part (seq2seq with
  // training.eval_decode: "BLEU and ROUGE of the first 200 of 1000 test pairs (training.eval_decode)").
  std::string partial = "";
};

// One training forward on buffers that keep their shapes from step to step (a stream LM's full BPTT
// window), for a step the trainer captures as a CUDA graph (run/train/graph_step.h, GRAPH_NOTES.md).
// Nothing in it is read back to the host: the losses and metrics are tensors.
struct StaticForward {
  torch::Tensor loss;       // to backpropagate: the task loss + the cells' terms
  torch::Tensor task_loss;  // 0-dim: the task loss alone (nats per unit)
  std::map<std::string, std::pair<torch::Tensor, int64_t>> metrics;  // the cells' (sum, count)
  // After backward: the carried state written into its buffers in place.
  std::function<void()> commit;
  bool host_schedule = false;  // StepContext::host_schedule of the forward
  // Logged metrics that are the task loss times a factor (char_lm: bpc = loss / ln 2).
  std::vector<std::pair<std::string, double>> loss_metrics;
  int64_t units = 0;
  double flops = 0;  // as StepResult::flops
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  virtual std::shared_ptr<torch::nn::Module> model() = 0;
  // Forward on the next training batch (advances the data cursor). Model is in train mode.
  virtual StepResult train_step() = 0;
  // The trainer's step index of the next train_step() (0 = the first update); tasks pass it
  // to the cells through StepContext::step (e.g. the MZU's lambda warm-up). -1 = unknown.
  void set_train_step(int64_t step) { train_step_index_ = step; }
  int64_t train_step_index() const { return train_step_index_; }
  // The static-shape step (StaticForward): tasks that have one say so. stage_static_batch() takes the
  // next training batch as train_step() would (advancing the cursor) and returns true when it sits in
  // the fixed buffers (the same shape as the first batch staged), false for a batch of another shape
  // (an epoch's shorter last window), which the trainer runs eagerly. static_forward() is the
  // forward and loss of the staged batch. The defaults: none (false, and static_forward throws).
  virtual bool has_static_step() const { return false; }
  virtual bool stage_static_batch();
  virtual StaticForward static_forward();
  // Whole split ("valid" or "test"), no grad, eval mode; restores train mode after.
  virtual EvalResult evaluate(const std::string& split) = 0;
  virtual std::string primary_metric() const = 0;  // "bpc", "ppl", "accuracy"
  virtual bool lower_is_better() const = 0;
  virtual std::string unit_name() const = 0;  // "chars", "tokens", "sentences"
  virtual double epoch() const = 0;           // fractional epochs of training data seen
  virtual bool has_split(const std::string& split) const { return split == "valid" || split == "test"; }
  // Data cursor, carried hidden state, etc.: everything needed so that a resumed run
  // continues exactly as the uninterrupted one would.
  virtual void save_state(torch::serialize::OutputArchive& ar) const = 0;
  virtual void load_state(torch::serialize::InputArchive& ar) = 0;
  // Text of the vocabulary saved with the run (run_dir/vocab); empty if none.
  virtual std::string vocab_text() const { return ""; }
  // Parameter count by top-level module name.
  std::vector<std::pair<std::string, int64_t>> parameter_breakdown();
  int64_t parameter_count();
  // Move the model and every tensor the task keeps (data, carried state) to `device`;
  // tensors the task creates later must follow it.
  virtual void to(const torch::Device& device) { model()->to(device); }

  // Data-parallel training (core/run/dist, docs/DISTRIBUTED.md): this process trains on
  // shard `rank` of `world` of every global batch; the trainer averages the gradients,
  // so a step is equivalent to one step of a single process on the global batch.
  // Called once, before to(). The default throws "task X does not support data-parallel training".
  virtual void set_shard(int rank, int world);
  // Task state split across the ranks along dim 0 (e.g. char-LM: the carried hidden
  // state of this rank's streams). Before rank 0 saves a checkpoint the trainer
  // all-gathers them in rank order and passes the full tensors to set_gathered_state,
  // so that save_state writes the state in global (rank-independent) terms; an empty
  // vector clears them again. load_state reads global state and keeps this rank's shard.
  virtual std::vector<torch::Tensor> sharded_state() const { return {}; }
  virtual void set_gathered_state(std::vector<torch::Tensor> full) {}

  // ---- Inspection: what the analyses (core/inspect/analysis) and generation (tasks/generate.cpp)
  // read from a trained task without knowing its class (types: tasks/inspect.h). The
  // defaults (task.cpp) throw a UserError saying the task does not support it.
  // `text` as the model's tokens: char_lm characters; word_lm whitespace-separated words;
  // classify/absa the run's tokenizer, a word the vocabulary lacks tried lower-cased.
  virtual EncodedText encode_text(const std::string& text) const;
  // Runs the model over one sequence with `probe` attached: batch 1, eval mode, no grad,
  // zero state, step-wise (fused kernels fall back to the path that records internals).
  virtual void probe_sequence(const std::vector<int32_t>& ids, Probe& probe);
  // Sentence tasks: when `split` is "train", "valid" or "test", runs its first `max`
  // sentences as one batch with `probe` and returns true; false (nothing run) otherwise.
  virtual bool probe_split_sentences(const std::string& split, int64_t max, Probe& probe) { return false; }
  // The start of a split as text (LMs: its first `max_tokens` tokens; sentence tasks: its first sentence).
  virtual std::string split_text(const std::string& split, int64_t max_tokens) const;
  // The text an analysis uses when it is given none (char_lm: the first 120 characters of
  // the valid split; word_lm: its first 30 tokens; classify/absa: the first valid sentence).
  virtual std::string default_analysis_text() const;
  // Every sequence of `split` scored once, for metrics by sequence length (char_lm: lines,
  // word_lm: <eos>-ended sentences, classify/absa: examples).
  virtual SequenceScores sequence_scores(const std::string& split);
  // Whether the trainer scores the test split per example after training (RUN_DIR/test_examples.json,
  // run/train/test_examples.h): every task that has a test split (seq2seq's test evaluation hands over
  // its decodes, EvalResult::sequences, so that the split is not decoded twice).
  virtual bool scores_test_examples() const { return true; }
  // Classifiers: class probabilities [N, C] (float64) of token-id sequences run as one
  // padded batch, and the names of the classes.
  virtual torch::Tensor class_probabilities(const std::vector<std::vector<int32_t>>& seqs);
  virtual std::vector<std::string> class_names() const { return {}; }
  // The model's recurrent cell (model.cell of the run's config; "" when unknown).
  virtual std::string cell_name() const { return ""; }
  // Language models: the model stepped token by token for generation, `seed_text`
  // tokenised as the corpus is. Other tasks: "generation needs a char_lm or word_lm run".
  virtual TokenStepper token_stepper(const std::string& seed_text);

  // ---- Export (run/export/torch_export.h): the reference batch written beside an export for plain
  // PyTorch (reference.pt): one validation batch's inputs and this model's logits and loss on it,
  // eval mode, no grad, under the names cellscope_torch reads (packaging/python/cellscope_torch/README.md,
  // "reference.pt"). Each task builds its own (tasks/export_reference.cpp); empty: the task has none.
  virtual std::vector<std::pair<std::string, torch::Tensor>> export_reference() { return {}; }

 private:
  int64_t train_step_index_ = -1;
};

// Parameter count of a module grouped by the first two path components, e.g. "stack.layer0".
std::vector<std::pair<std::string, int64_t>> parameter_breakdown_of(const torch::nn::Module& model);

struct TaskInfo {
  std::string name;  // config value of "task"
  std::string description;
  std::string unit;                 // what throughput counts
  std::vector<OptionSpec> options;  // task-specific options (tasks = {name} implied)
  ConfigCheck check;
  // Build from a resolved config. `run_dir` may be empty (params, bench); when a
  // run is resumed, the task reads its vocabulary from run_dir/vocab.
  std::function<std::unique_ptr<Task>(const json& cfg, const std::string& run_dir)> make;
};

const std::vector<TaskInfo>& task_registry();
const TaskInfo& task_info(const std::string& name);  // throws UserError listing known tasks
std::unique_ptr<Task> make_task(const json& resolved_cfg, const std::string& run_dir = "");

}  // namespace cs
