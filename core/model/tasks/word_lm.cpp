#include "tasks/word_lm.h"

#include <torch/nn/functional.h>

#include <cmath>

#include "cells/baseline.h"
#include "cells/registry.h"
#include "config/common_options.h"
#include "tasks/eval_scope.h"
#include "tasks/task_common.h"
#include "util/error.h"

namespace cs {

namespace F = torch::nn::functional;

WordLMModelImpl::WordLMModelImpl(const json& m, int64_t vocab) {
  const ModelOptions mo = read_model_options(m);
  const WordLMModelOptions wo = word_lm_model_option_table().read(m);
  const int64_t E = mo.embed;
  const int64_t n = mo.layers;
  dropout = mo.dropout;
  dropouth = wo.dropouth.value_or(dropout);  // unset: model.dropout
  dropouti = wo.dropouti.value_or(dropout);
  dropoute = wo.dropoute;
  tied = wo.tie_weights;
  const double wdrop = wo.weight_drop;
  embed = register_module("embed", torch::nn::Embedding(vocab, E));
  {
    torch::NoGradGuard ng;
    embed->weight.uniform_(-0.1, 0.1);  // AWD-LSTM's initialisation
  }
  const auto model_of = [&](int l) {
    json ml = m;
    // with tied weights the last layer's output has the embedding size (AWD-LSTM)
    if (tied && l == n - 1) ml["hidden"] = E;
    return ml;
  };
  for (auto& cells : make_layers(m, E, 1, model_of))
    layers.push_back(register_module("layer" + std::to_string(layers.size()), cells[0]));
  const int64_t in = layers.back()->hidden_size();
  if (!tied) {
    const double k = 1.0 / std::sqrt(static_cast<double>(in));
    out_w = register_parameter("out_w", torch::empty({vocab, in}).uniform_(-k, k));
  }
  out_b = register_parameter("out_b", torch::zeros({vocab}));
  // weight drop: every gate cell's w_hh (also an MC-RNN's base) gets one DropConnect mask per forward
  for (auto& mod : modules(/*include_self=*/false))
    if (auto* g = dynamic_cast<GateCellBase*>(mod.get())) g->weight_drop = wdrop;
}

torch::Tensor WordLMModelImpl::locked_dropout(const torch::Tensor& x, double p) const {
  // variational (locked) dropout: one mask per sequence and unit, shared over time ([1, B, D])
  if (!is_training() || p <= 0) return x;
  auto mask = torch::empty({1, x.size(1), x.size(2)}, x.options()).bernoulli_(1 - p) / (1 - p);
  return x * mask;
}

std::vector<State> WordLMModelImpl::initial_state(int64_t batch, const torch::TensorOptions& opts) const {
  return initial_states(layers, batch, opts);
}

double WordLMModelImpl::flops_per_step() const {
  return cs::flops_per_step(layers) + 2.0 * static_cast<double>(layers.back()->hidden_size() * embed->weight.size(0));
}

torch::Tensor WordLMModelImpl::forward(const torch::Tensor& x, std::vector<State>& states, StepContext& ctx) {
  torch::Tensor w = embed->weight;
  if (is_training() && dropoute > 0) {
    // embedding dropout: drop whole word types (rows of the embedding matrix), AWD-LSTM
    auto mask = torch::empty({w.size(0), 1}, w.options()).bernoulli_(1 - dropoute) / (1 - dropoute);
    w = w * mask;
  }
  auto h = locked_dropout(F::embedding(x, w), dropouti);
  h = run_layers(layers, h, states, ctx, [&](const torch::Tensor& t) { return locked_dropout(t, dropouth); });
  h = locked_dropout(h, dropout);
  return F::linear(h, tied ? embed->weight : out_w, out_b);
}

// ---------------------------------------------------------------- task
WordLMTask::WordLMTask(const json& cfg, const std::string& run_dir) : cfg_(cfg) {
  const TrainingOptions tr = read_training_options(cfg.at("training"));
  const WordLMOptions o = word_lm_option_table().read(cfg);
  batch_ = tr.batch;
  bptt_ = o.bptt;
  eval_batch_ = o.eval_batch;
  asgd_ = tr.optimizer == Optimizer::Asgd;
  asgd_start_ = o.asgd_start;
  asgd_nonmono_ = o.asgd_nonmono;
  auto vocab = saved_run_vocab(run_dir);
  corpus_ = load_word_corpus(read_dataset_options(cfg.at("dataset")), o, vocab.get());
  check_stream_splits(corpus_.source, corpus_.train.size(), corpus_.valid.size(), batch_, "tokens");
  model_ = WordLMModel(cfg.at("model"), static_cast<int64_t>(corpus_.vocab.size()));
  start_streams();
}

void WordLMTask::to(const torch::Device& d) {
  StreamLMTask::to(d);
  for (auto& a : avg_) a = a.to(d);
}

void WordLMTask::update_average() {
  // ASGD (Polyak averaging, as AWD-LSTM's NT-ASGD): avg <- avg + (w - avg) / (n + 1), after each update
  torch::NoGradGuard ng;
  auto params = model_->parameters();
  if (avg_.empty())
    for (auto& p : params) avg_.push_back(p.detach().clone());
  else
    for (size_t i = 0; i < params.size(); ++i)
      avg_[i].add_(params[i].detach() - avg_[i], 1.0 / static_cast<double>(avg_n_ + 1));
  ++avg_n_;
}

StepResult WordLMTask::train_step() {
  model_->train();
  // The trainer applies the optimizer step after train_step(): the parameters seen here
  // are those after the previous update, which is what the average takes in.
  if (asgd_ && !avg_on_ && asgd_start_ > 0 && steps_ >= asgd_start_) avg_on_ = true;
  if (avg_on_ && steps_ > 0) update_average();
  ++steps_;
  auto [x, y] = next_batch();  // at an epoch boundary the streams restart from a zero state
  const int64_t L = x.size(0);
  StepContext ctx;
  ctx.step = train_step_index();
  auto logits = model_->forward(x, state_, ctx);
  state_ = detach_states(state_);  // truncated BPTT (MC-RNN: t and the last n-1 states per channel are carried)
  auto nll = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
  StepResult r;
  r.loss = ctx.extra_loss.defined() ? nll + ctx.extra_loss : nll;
  r.task_loss = nll.item<double>();
  r.units = L * local_batch_;  // this rank's tokens (the trainer sums over ranks)
  r.flops = 3.0 * model_->flops_per_step() * static_cast<double>(r.units);  // recurrent layers + output, per token
  r.metrics["ppl"] = std::exp(r.task_loss);
  if (asgd_) r.metrics["asgd_averaging"] = avg_on_ ? 1.0 : 0.0;
  for (auto& [k, v] : ctx.metrics) r.metrics[k] = v.first / std::max<int64_t>(v.second, 1);
  return r;
}

double WordLMTask::nll_of(const std::vector<int32_t>& ids, int64_t eval_batch, Probe* probe,
                          std::vector<float>* per_pos) {
  return stream_nll(ids, eval_batch, probe, per_pos);
}

EvalResult WordLMTask::evaluate(const std::string& split) {
  const std::vector<int32_t>* ids = &split_named(split, corpus_.train, corpus_.valid, corpus_.test);
  if (ids->size() < 2) throw UserError("the " + split + " split of '" + corpus_.source + "' is empty");
  EvalScope es(*model_);
  // ASGD: evaluate with the averaged parameters, then restore the iterate
  std::vector<torch::Tensor> saved;
  auto params = model_->parameters();
  if (avg_on_ && !avg_.empty()) {
    torch::NoGradGuard ng;
    for (size_t i = 0; i < params.size(); ++i) {
      saved.push_back(params[i].detach().clone());
      params[i].copy_(avg_[i]);
    }
  }
  double total = nll_of(*ids, eval_batch_);
  if (!saved.empty()) {
    torch::NoGradGuard ng;
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(saved[i]);
  }
  EvalResult r;
  r.units = static_cast<int64_t>(ids->size()) - 1;
  const double loss = total / static_cast<double>(r.units);
  r.metrics["loss"] = loss;
  r.metrics["ppl"] = std::exp(loss);
  if (split == "valid" && asgd_) {
    // NT-ASGD trigger (Merity et al. 2018): start averaging when the validation metric is
    // worse than the best of the evaluations more than `nonmono` evaluations ago.
    if (!avg_on_ && asgd_start_ == 0 && static_cast<int64_t>(valid_history_.size()) > asgd_nonmono_) {
      double best = valid_history_.front();
      for (size_t i = 0; i + static_cast<size_t>(asgd_nonmono_) < valid_history_.size(); ++i)
        best = std::min(best, valid_history_[i]);
      if (loss > best) avg_on_ = true;
    }
    valid_history_.push_back(loss);
  }
  return r;
}

void WordLMTask::save_state(torch::serialize::OutputArchive& ar) const {
  auto I = [](int64_t v) { return torch::tensor(v, torch::kInt64); };
  ar.write("cursor", I(cursor_));
  ar.write("epochs_done", I(epochs_done_));
  ar.write("steps", I(steps_));
  ar.write("avg_on", I(avg_on_));
  ar.write("avg_n", I(avg_n_));
  ar.write("n_avg", I(static_cast<int64_t>(avg_.size())));
  for (size_t i = 0; i < avg_.size(); ++i) ar.write("avg_" + std::to_string(i), avg_[i].to(torch::kCPU));
  ar.write("valid_history",
           torch::tensor(valid_history_.empty() ? std::vector<double>{} : valid_history_, torch::kFloat64));
  write_streams(ar);
}

void WordLMTask::load_state(torch::serialize::InputArchive& ar) {
  auto T = [&](const std::string& k) {
    torch::Tensor t;
    ar.read(k, t);
    return t;
  };
  auto I = [&](const std::string& k) { return T(k).item<int64_t>(); };
  cursor_ = I("cursor");
  epochs_done_ = I("epochs_done");
  steps_ = I("steps");
  avg_on_ = I("avg_on") != 0;
  avg_n_ = I("avg_n");
  avg_.clear();
  const int64_t na = I("n_avg");
  for (int64_t i = 0; i < na; ++i) avg_.push_back(T("avg_" + std::to_string(i)).to(device_));
  auto vh = T("valid_history").to(torch::kFloat64).contiguous();
  valid_history_.assign(vh.data_ptr<double>(), vh.data_ptr<double>() + vh.numel());
  read_streams(ar);
}

// ---------------------------------------------------------------- registry entry

namespace {
// A WordCorpusOptions member (the loader's, data/word_corpus.h) as a member of WordLMOptions.
template <class T>
T WordLMOptions::*word_corpus_member(T WordCorpusOptions::*member) {
  return static_cast<T WordLMOptions::*>(member);
}
}  // namespace

const OptionTable<WordLMOptions>& word_lm_option_table() {
  static const auto t = [] {
    OptionTable<WordLMOptions> t("");
    using O = WordLMOptions;
    t.field("training.bptt", &O::bptt, 1, 100000,
            "Truncated BPTT length in tokens; the state is carried across segments (AWD-LSTM / MC-RNN PTB: 70).");
    t.field("training.eval_batch", &O::eval_batch, 1, 65536,
            "Streams used to evaluate a split (every token is scored once, state carried; AWD-LSTM: 10).");
    t.field(
        "training.asgd_start", &O::asgd_start, 0, 1e12,
        "optimizer = asgd: step at which parameter averaging starts; 0 = the non-monotone trigger of NT-ASGD (AWD-LSTM).");
    t.field(
        "training.asgd_nonmono", &O::asgd_nonmono, 1, 1e6,
        "optimizer = asgd with asgd_start = 0: start averaging when the validation loss is worse than the best of the "
        "evaluations more than this many evaluations ago (AWD-LSTM: 5).");
    t.field(
        "dataset.vocab_size", word_corpus_member(&O::vocab_size), 0, 1e9,
        "Keep the most frequent words of the train split, <unk> and <eos> included (0 = all); the rest become <unk>. PTB: 10000.");
    t.field("dataset.min_count", word_corpus_member(&O::min_count), 1, 1e9,
            "Keep only words seen at least this many times in the train split; the rest become <unk>.");
    t.field("dataset.lowercase", word_corpus_member(&O::lowercase),
            "Plain text: lower-case words when tokenising (tokenizer icu: every script; legacy: ASCII letters only).");
    t.choice("dataset.tokenizer", word_corpus_member(&O::tokenizer),
             std::string("Plain text: ") + tokenizer_option_help());
    t.field("dataset.locale", word_corpus_member(&O::locale), std::string("Plain text: ") + locale_option_help());
    t.choice("dataset.eos", word_corpus_member(&O::eos),
             "Plain text: where <eos> tokens go: after each paragraph (blank-line separated), each line, or none. "
             "PTB word format always ends every line with <eos>.");
    return t;
  }();
  return t;
}

const OptionTable<WordLMModelOptions>& word_lm_model_option_table() {
  static const auto t = [] {
    OptionTable<WordLMModelOptions> t("model");
    using O = WordLMModelOptions;
    t.field("dropoute", &O::dropoute, 0.0, 0.95,
            "Embedding dropout: drop whole word types (rows of the embedding matrix) per forward (AWD-LSTM: 0.1).");
    t.field(
        "dropouti", &O::dropouti, 0.0, 0.95,
        "Locked (variational) dropout on the embedded input, one mask per sequence (AWD-LSTM: 0.4 PTB); unset = model.dropout.");
    t.field("dropouth", &O::dropouth, 0.0, 0.95,
            "Locked (variational) dropout between recurrent layers (AWD-LSTM: 0.25 PTB); unset = model.dropout.");
    t.field(
        "weight_drop", &O::weight_drop, 0.0, 0.95,
        "Weight drop (DropConnect) on the hidden-to-hidden matrix w_hh of rnn/gru/lstm cells (also as an MC-RNN base): "
        "one mask per forward in training (AWD-LSTM: 0.5).");
    t.field(
        "tie_weights", &O::tie_weights,
        "Tie the output layer to the embedding matrix (the last layer's size becomes model.embed, as in AWD-LSTM).");
    return t;
  }();
  return t;
}

void register_word_lm_task(std::vector<TaskInfo>& out) {
  TaskInfo t;
  t.name = "word_lm";
  t.description = "Word-level language modelling (MC-RNN paper: PTB, AWD-LSTM setup); metric: perplexity";
  t.unit = "tokens";
  t.options = word_lm_option_table().specs();
  for (auto& o : word_lm_model_option_table().specs()) t.options.push_back(o);
  t.check = [](const json& cfg, std::vector<ConfigError>& errs) {
    check_lm_sees_no_future(cfg, errs);
    const auto& m = cfg.at("model");
    if (word_lm_model_option_table().read(m).weight_drop > 0) {
      const std::string cell = resolved<std::string>(m, "model", "cell");
      const std::string wrapped = cell == "mcrnn" ? resolved<std::string>(m, "model", "base") : cell;
      if (wrapped != "rnn" && wrapped != "gru" && wrapped != "lstm")
        errs.push_back(
            {"model.weight_drop", "weight drop applies to rnn, gru and lstm cells (or an mcrnn over one); cell '" +
                                      cell + "' has no w_hh to drop"});
    }
  };
  t.make = [](const json& cfg, const std::string& run_dir) -> std::unique_ptr<Task> {
    return std::make_unique<WordLMTask>(cfg, run_dir);
  };
  out.push_back(std::move(t));
}

}  // namespace cs
