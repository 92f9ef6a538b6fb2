// The options every config has, whatever its cell and task: one struct per section,
// whose member initialisers are the defaults, and one field table each (see
// config/option_spec.h). config/schema.cpp turns the tables into the schema; the
// trainer, the tasks and the cell stacks read resolved sections through them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/option_spec.h"
#include "data/dataset_formats.h"

namespace cs {

struct TaskSection {
  std::string name = "char_lm";  // the task (choices: the task registry)
};

struct DatasetOptions {
  std::string name = "moby-dick";
  std::optional<std::string> path;             // unset: use `name`
  DatasetFormat format = DatasetFormat::Auto;  // choices: the registry (data/dataset_formats.h)
  double valid_fraction = 0.05;
  double test_fraction = 0.05;
  int64_t max_chars = 0;
};

struct ModelOptions {
  std::string cell = "gru";  // the recurrent cell (choices: the cell registry)
  int64_t embed = 128;
  int64_t hidden = 256;
  int64_t layers = 1;
  double dropout = 0.0;
  bool layer_norm = false;         // opt-in (CellInfo::common_options)
  double candidate_dropout = 0.0;  // opt-in
};

// training.optimizer: Adam, SGD (with training.momentum), or SGD whose parameters the word_lm
// task averages (AWD-LSTM's ASGD; the averaging lives in the task).
enum class Optimizer { Adam, Sgd, Asgd };
constexpr EnumNames<Optimizer, 3> enum_names(Optimizer) {
  return {{{Optimizer::Adam, "adam"}, {Optimizer::Sgd, "sgd"}, {Optimizer::Asgd, "asgd"}}};
}

// training.cuda_graph: the training step replayed as one CUDA graph (run/train/GRAPH_NOTES.md).
// auto: on a CUDA device where the task and model allow it; off: never; on: the same static-shape
// step on every device (on the CPU nothing is captured: the path the CPU tests check), and a
// CUDA step that cannot be captured says why in the log, as auto does.
enum class CudaGraph { Auto, Off, On };
constexpr EnumNames<CudaGraph, 3> enum_names(CudaGraph) {
  return {{{CudaGraph::Auto, "auto"}, {CudaGraph::Off, "off"}, {CudaGraph::On, "on"}}};
}

struct TrainingOptions {
  Optimizer optimizer = Optimizer::Adam;
  double lr = 1e-3;
  double momentum = 0.0;
  double weight_decay = 0.0;
  int64_t batch = 32;
  double clip = 5.0;
  int64_t steps = 1000;
  int64_t log_every = 10;
  int64_t eval_every = 200;
  int64_t checkpoint_every = 0;
  int64_t keep_checkpoints = 3;
  int64_t patience = 0;
  int64_t patience_from = 0;      // evaluations before this step count toward neither patience nor lr_decay
  double lr_decay = 1.0;          // factor applied to lr after each evaluation without improvement (1 = off)
  int64_t lr_decay_patience = 1;  // evaluations in a row without improvement before each decay
  std::string lr_decay_metric;    // the valid metric the decay watches ("" = the task's primary metric)
  int64_t seed = 1;
  int64_t threads = 0;
  std::string device = "cpu";
  CudaGraph cuda_graph = CudaGraph::Auto;
  bool eval_test = true;
  bool track_test = false;
  bool tensorboard = true;  // RUN_DIR/tensorboard/ event files, written live (train/TENSORBOARD_NOTES.md)
};

// The tables. task.name and model.cell are Enum fields whose choices (the registries)
// config/schema.cpp fills in.
const OptionTable<TaskSection>& task_section_table();
const OptionTable<DatasetOptions>& dataset_option_table();
const OptionTable<ModelOptions>& model_option_table();
const OptionTable<TrainingOptions>& training_option_table();

// Bindings of resolved sections: read_model_options(cfg.at("model")), ...
// Opt-in model options (layer_norm, candidate_dropout) are read only when present,
// i.e. when the config's cell honours them; otherwise they keep their defaults.
ModelOptions read_model_options(const json& model);
TrainingOptions read_training_options(const json& training);
DatasetOptions read_dataset_options(const json& dataset);

// The intra-op thread count a process uses for a requested training.threads / --threads value:
// 0 (or less) = every hardware thread; more threads than the machine has hardware threads are
// clamped to that number (oversubscribed threads only slow LibTorch down: 64 threads on 2 cores
// ran several times slower than 2), and `note` (when given) receives a one-line warning saying
// so. A config stays valid on any machine (a run moved to a smaller one still resumes).
int effective_threads(int64_t requested, std::string* note = nullptr);

// Bookkeeping options: those that change neither what a run learns (its sequence of updates,
// up to float rounding) nor the numbers it reports. This is the one list: seed groups, the run
// table's Differs column, run names in legends and the Compare tab's config diff look only at
// the other options, and show these apart ("bookkeeping"). Keys are flattened
// ("training.threads"); each entry says why it is bookkeeping. Anything not listed counts as
// changing the results (eval_every and eval_batch do: they move early stopping, lr decay
// and the evaluation's batching).
struct BookkeepingOption {
  const char* key;
  const char* why;
};
const std::vector<BookkeepingOption>& bookkeeping_options();
bool is_bookkeeping_option(const std::string& flat_key);

}  // namespace cs
