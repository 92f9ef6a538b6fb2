#include "config/common_options.h"

#include <thread>

namespace cs {

const OptionTable<TaskSection>& task_section_table() {
  static const auto t = [] {
    OptionTable<TaskSection> t("task");
    t.choice("name", &TaskSection::name, {}, "The task: what is predicted and how it is scored.");
    return t;
  }();
  return t;
}

const OptionTable<DatasetOptions>& dataset_option_table() {
  static const auto t = [] {
    OptionTable<DatasetOptions> t("dataset");
    using D = DatasetOptions;
    t.field(
        "name", &D::name,
        "A dataset from the manifest (datasets/manifest.json); `cellscope-cli datasets` lists them. Ignored when dataset.path is set.");
    t.field("path", &D::path, "A file or directory of your own (overrides dataset.name).");
    t.choice("format", &D::format, dataset_format_help());
    t.field(
        "valid_fraction", &D::valid_fraction, 0.0, 0.5,
        "Fraction held out for validation when the corpus has no split of its own (taken from the end, before the test part).");
    t.field("test_fraction", &D::test_fraction, 0.0, 0.5,
            "Fraction held out for test when the corpus has no split of its own (taken from the end).");
    t.field("max_chars", &D::max_chars, 0, 1e300,
            "Use only the first N characters (Unicode code points) of the corpus; 0 = all. For quick runs.");
    return t;
  }();
  return t;
}

const OptionTable<ModelOptions>& model_option_table() {
  static const auto t = [] {
    OptionTable<ModelOptions> t("model");
    using M = ModelOptions;
    t.choice("cell", &M::cell, {}, "The recurrent cell.");
    t.field("embed", &M::embed, 1, 65536, "Embedding size d_x (MZU paper: 256 for char-LM).");
    t.field("hidden", &M::hidden, 1, 65536, "Hidden state size d_h (MZU paper: 800 on PTB, 1536 on text8).");
    t.field("layers", &M::layers, 1, 16, "Number of stacked recurrent layers.");
    t.field("dropout", &M::dropout, 0.0, 0.95,
            "Dropout on the embeddings, between stacked layers and before the output layer.");
    t.field("layer_norm", &M::layer_norm,
            "Layer normalization of the gates' pre-activations (MZU paper, training details). Uses the step-wise path.")
        .opt_in();
    t.field(
         "candidate_dropout", &M::candidate_dropout, 0.0, 0.95,
         "Dropout on the candidate activation (MZU paper: 0.5 on PTB, 0.3 on text8). Uses the step-wise path in training.")
        .opt_in();
    return t;
  }();
  return t;
}

const OptionTable<TrainingOptions>& training_option_table() {
  static const auto t = [] {
    OptionTable<TrainingOptions> t("training");
    using T = TrainingOptions;
    t.choice("optimizer", &T::optimizer,
             "Optimizer (MZU paper: Adam; asgd = SGD with iterate averaging, AWD-LSTM, word_lm).");
    t.field("lr", &T::lr, 0.0, 100.0, "Learning rate (MZU paper: 1e-3 with Adam).");
    t.field("momentum", &T::momentum, 0.0, 1.0, "SGD momentum.");
    t.field("weight_decay", &T::weight_decay, 0.0, 1.0, "L2 weight decay on all parameters.");
    t.field("batch", &T::batch, 1, 65536, "Batch size (MZU paper: 256).");
    t.field("clip", &T::clip, 0.0, 1e6, "Clip gradients to this global norm; 0 = off (MZU paper: 5.0).");
    t.field("steps", &T::steps, 1, 1e12, "Maximum number of training steps (updates).");
    t.field("log_every", &T::log_every, 1, 1e9, "Write a metrics line every N steps.");
    t.field("eval_every", &T::eval_every, 0, 1e12,
            "Evaluate on the validation split every N steps (0 = only at the end).");
    t.field("checkpoint_every", &T::checkpoint_every, 0, 1e12,
            "Write a checkpoint every N steps (0 = at each evaluation).");
    t.field("keep_checkpoints", &T::keep_checkpoints, 1, 1e6,
            "How many step checkpoints to keep besides last and best (for scrubbing through training).");
    t.field("patience", &T::patience, 0, 1e9,
            "Early stop after this many evaluations without improvement of the validation metric (0 = off).");
    t.field("patience_from", &T::patience_from, 0, 1e12,
            "Evaluations before this step never count as 'without improvement': neither early stopping (patience) "
            "nor lr_decay counts them, so a model that learns slowly at first is not stopped, nor its learning "
            "rate cut, on an early plateau (best.pt still follows every evaluation). 0 = count from the start.");
    t.field("lr_decay", &T::lr_decay, 0.01, 1.0,
            "Multiply the learning rate by this factor after lr_decay_patience evaluations in a row that do not "
            "improve the best validation lr_decay_metric (1 = off; 0.5 = halve it, as RNNSearch and the MC-RNN "
            "paper do 'according to validation performance'). Independent of patience (early stopping).");
    t.field("lr_decay_patience", &T::lr_decay_patience, 1, 1e9,
            "With lr_decay: decay after this many evaluations in a row without improvement of "
            "lr_decay_metric (the count starts again after each decay; 1 = after every such evaluation).");
    t.field("lr_decay_metric", &T::lr_decay_metric,
            "With lr_decay: the validation metric it watches, a key of the valid evaluation (e.g. bleu, or "
            "valid.bleu); empty = the task's primary metric (the one early stopping and best.pt follow). "
            "Higher is better for the primary metric of a task that says so and for keys containing acc, bleu, "
            "rouge or f1; lower for the others (loss, ppl, bpc).");
    t.field("seed", &T::seed, 0, 4294967295.0, "Random seed: same seed and config give identical metrics on CPU.");
    t.field("threads", &T::threads, 0, 1024,
            "LibTorch intra-op threads (0 = all cores; the GUI leaves one for itself).");
    t.field("device", &T::device, "Device: cpu, cuda or cuda:N.");
    t.choice("cuda_graph", &T::cuda_graph,
             "On a CUDA device, replay each training step as one captured CUDA graph (the same updates, far "
             "fewer kernel launches): auto = where the task and model allow it (char_lm, Adam, one process; "
             "the log says when and why not); off = never; on = also run the same static-shape step on the CPU "
             "(nothing is captured there).");
    t.field("eval_test", &T::eval_test, "Evaluate the best checkpoint on the test split at the end.");
    t.field("track_test", &T::track_test,
            "Also evaluate the test split at every evaluation (not only the best checkpoint at the end), "
            "for test accuracy over training time as in the CRU paper's Fig. 4 (analysis metric_time). "
            "Never used for model selection.");
    t.field("tensorboard", &T::tensorboard,
            "Also write TensorBoard event files (RUN_DIR/tensorboard/) while training: every metric per step, "
            "the configuration as hparams and text. Bookkeeping only: may change on resume.");
    return t;
  }();
  return t;
}

ModelOptions read_model_options(const json& model) {
  ModelOptions o;
  // The opt-in fields exist in a resolved config only for cells that honour them.
  json m = model;
  for (auto& s : model_option_table().specs())
    if (s.opt_in && !m.contains(s.key)) m[s.key] = s.default_value;
  model_option_table().read(m, o);
  return o;
}

int effective_threads(int64_t requested, std::string* note) {
  const int64_t hw = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  if (requested <= 0) return static_cast<int>(hw);
  if (requested > hw) {
    if (note)
      *note = "training.threads: " + std::to_string(requested) + " threads asked for, but this machine has " +
              std::to_string(hw) + " hardware thread" + (hw == 1 ? "" : "s") + "; using " + std::to_string(hw);
    return static_cast<int>(hw);
  }
  return static_cast<int>(requested);
}

TrainingOptions read_training_options(const json& training) { return training_option_table().read(training); }
DatasetOptions read_dataset_options(const json& dataset) { return dataset_option_table().read(dataset); }

const std::vector<BookkeepingOption>& bookkeeping_options() {
  static const std::vector<BookkeepingOption> list = {
      {"name", "free text"},
      {"description", "free text"},
      {"notes", "free text"},
      {"training.threads", "intra-op threads: the same updates, at another speed (float rounding aside)"},
      {"training.device", "where the same updates run (float rounding aside)"},
      {"training.cuda_graph", "whether the same updates are replayed as one CUDA graph (float rounding aside)"},
      {"training.log_every", "how often a metrics line is written"},
      {"training.checkpoint_every", "how often a checkpoint is written"},
      {"training.keep_checkpoints", "how many step checkpoints are kept"},
      {"training.eval_test", "whether the test split is also scored at the end (never used for selection)"},
      {"training.track_test", "whether the test split is also scored at each evaluation (never used for selection)"},
      {"training.tensorboard", "whether TensorBoard event files are written beside metrics.jsonl"},
  };
  return list;
}

bool is_bookkeeping_option(const std::string& flat_key) {
  for (const BookkeepingOption& o : bookkeeping_options())
    if (flat_key == o.key) return true;
  return false;
}

}  // namespace cs
