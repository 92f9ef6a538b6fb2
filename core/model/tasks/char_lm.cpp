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
  if (dropout > 0) e = F::dropout(e, F::DropoutFuncOptions().p(dropout).training(is_training()));
  auto h = stack->forward(e, states, ctx);
  if (dropout > 0) h = F::dropout(h, F::DropoutFuncOptions().p(dropout).training(is_training()));
  return out->forward(h);
}

torch::Tensor batchify(const std::vector<int32_t>& ids, int64_t batch) {
  const int64_t n = static_cast<int64_t>(ids.size()) / batch;
  auto t = torch::from_blob(const_cast<int32_t*>(ids.data()), {batch * n}, torch::kInt32);
  return t.to(torch::kInt64).view({batch, n});
}

std::unique_ptr<Vocab> saved_run_vocab(const std::string& run_dir) {
  if (run_dir.empty()) return nullptr;
  const std::string path = join_path(run_dir, "vocab");
  return file_exists(path) ? std::make_unique<Vocab>(Vocab::load(path)) : nullptr;
}

void check_stream_splits(const std::string& source, size_t train, size_t valid, int64_t batch,
                         const std::string& unit) {
  const int64_t need = batch * 2;
  if (static_cast<int64_t>(train) < need)
    throw UserError("dataset '" + source + "': the train split has " + std::to_string(train) + " " + unit +
                    ", too few for one batch of " + std::to_string(batch) + " streams (need at least " +
                    std::to_string(need) + ")");
  if (valid < 2)
    throw UserError("dataset '" + source + "': the valid split has " + std::to_string(valid) + " " + unit +
                    " (need at least 2); raise dataset.valid_fraction or use a larger corpus");
}

CharLMTask::CharLMTask(const json& cfg, const std::string& run_dir) : cfg_(cfg) {
  const CharLMOptions o = char_lm_option_table().read(cfg);
  batch_ = resolved_cfg<int64_t>(cfg, "training", "batch");
  bptt_ = o.bptt;
  eval_batch_ = o.eval_batch;
  auto vocab = saved_run_vocab(run_dir);
  corpus_ = load_char_corpus(cfg.at("dataset"), vocab.get());
  check_stream_splits(corpus_.source, corpus_.train.size(), corpus_.valid.size(), batch_, "characters");
  model_ = CharLMModel(cfg.at("model"), static_cast<int64_t>(corpus_.vocab.size()));
  train_ = batchify(corpus_.train, batch_);
  local_batch_ = batch_;
  state_ = model_->stack->initial_state(batch_, torch::TensorOptions().dtype(torch::kFloat32));
}

void CharLMTask::set_shard(int rank, int world) {
  local_batch_ = stream_shard_size("char_lm", batch_, rank, world);
  shard_rank_ = rank;
  shard_world_ = world;
  // The same [B, n] batchification as one process; this rank keeps its rows, so the
  // ranks' shards together are exactly the single-process batch of every step.
  train_ = batchify(corpus_.train, batch_).narrow(0, rank * local_batch_, local_batch_).contiguous().to(device_);
  state_ = model_->stack->initial_state(local_batch_, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
}

std::vector<torch::Tensor> CharLMTask::sharded_state() const { return flatten_state(state_); }

void CharLMTask::to(const torch::Device& d) {
  device_ = d;
  model_->to(d);
  train_ = train_.to(d);
  state_to(state_, d);
}

double CharLMTask::epoch() const {
  const int64_t n = train_.size(1) - 1;
  return static_cast<double>(epochs_done_) + static_cast<double>(cursor_) / static_cast<double>(std::max<int64_t>(n, 1));
}

std::pair<torch::Tensor, torch::Tensor> CharLMTask::next_batch() {
  const int64_t n = train_.size(1);
  if (cursor_ >= n - 1) {  // epoch boundary: start the streams again from a zero state
    cursor_ = 0;
    ++epochs_done_;
    state_ = model_->stack->initial_state(local_batch_, train_.options().dtype(torch::kFloat32));
  }
  const int64_t L = std::min(bptt_, n - 1 - cursor_);
  auto x = train_.narrow(1, cursor_, L).t();      // [L, B]: input characters
  auto y = train_.narrow(1, cursor_ + 1, L).t();  // [L, B]: each target is the next character
  cursor_ += L;
  return {x, y};
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
  r.flops = 3.0 * (model_->stack->flops_per_step() + 2.0 * static_cast<double>(model_->out->weight.numel())) *
            static_cast<double>(r.units);
  r.metrics["bpc"] = r.task_loss / std::log(2.0);
  for (auto& [k, v] : ctx.metrics) r.metrics[k] = v.first / std::max<int64_t>(v.second, 1);
  return r;
}

double CharLMTask::nll_of(const std::vector<int32_t>& ids, int64_t eval_batch, std::vector<float>* per_pos) {
  // B streams of n inputs each cover targets ids[b*n+1 .. b*n+n]; the remainder
  // (inputs ids[B*n .. N-2]) continues stream B-1 with its carried state, batch 1.
  // Every character but the first is predicted exactly once.
  torch::NoGradGuard ng;
  const int64_t N = static_cast<int64_t>(ids.size());
  if (N < 2) return 0.0;
  const int64_t B = std::max<int64_t>(1, std::min<int64_t>(eval_batch, (N - 1) / std::max<int64_t>(bptt_, 1)));
  const int64_t n = (N - 1) / B;
  auto all = torch::from_blob(const_cast<int32_t*>(ids.data()), {N}, torch::kInt32).to(torch::kInt64).to(device_);
  if (per_pos) per_pos->assign(static_cast<size_t>(N), 0.f);
  double total = 0;
  // Score rows [R, len] segment by segment with the state carried; row r's
  // position i predicts ids[base + r * stride + i + 1].
  auto score = [&](const torch::Tensor& inp, const torch::Tensor& tgt, std::vector<State>& st, int64_t stride,
                   int64_t base) {
    const int64_t rows = inp.size(0), len = inp.size(1);
    for (int64_t p = 0; p < len; p += bptt_) {
      const int64_t l = std::min(bptt_, len - p);
      StepContext ctx;
      auto logits = model_->forward(inp.narrow(1, p, l).t(), st, ctx);
      auto lp = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), tgt.narrow(1, p, l).t().reshape({-1}),
                                 F::CrossEntropyFuncOptions().reduction(torch::kNone));
      total += lp.sum().item<double>();
      if (per_pos) {
        auto v = lp.view({l, rows}).t().contiguous().to(torch::kCPU);
        auto acc = v.accessor<float, 2>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < l; ++i) (*per_pos)[static_cast<size_t>(base + r * stride + p + i + 1)] = acc[r][i];
      }
    }
  };
  std::vector<State> st = model_->stack->initial_state(B, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  score(all.narrow(0, 0, B * n).view({B, n}), all.narrow(0, 1, B * n).view({B, n}), st, n, 0);
  const int64_t rem = (N - 1) - B * n;
  if (rem > 0) {
    std::vector<State> last;
    for (auto& s : st) {
      State ls;
      for (auto& t : s) ls.push_back(t.narrow(0, B - 1, 1).contiguous());
      last.push_back(ls);
    }
    score(all.narrow(0, B * n, rem).view({1, rem}), all.narrow(0, B * n + 1, rem).view({1, rem}), last, 0, B * n);
  }
  return total;
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
  // The carried state of all B streams: with data parallelism the trainer has
  // all-gathered the ranks' shards into gathered_ (same order as sharded_state()).
  TORCH_CHECK(shard_world_ == 1 || !gathered_.empty(),
              "char_lm: save_state of a data-parallel shard needs the gathered state (set_gathered_state)");
  write_carried_state(ar, state_, gathered_);
}

void CharLMTask::load_state(torch::serialize::InputArchive& ar) {
  auto I = [&](const std::string& k) {
    torch::Tensor t;  // fresh: reading into a defined tensor would try to resize it
    ar.read(k, t);
    return t.item<int64_t>();
  };
  cursor_ = I("cursor");
  epochs_done_ = I("epochs_done");
  read_carried_state(ar, state_, [&](torch::Tensor v) {
    // Checkpoints hold the state of all B streams; a data-parallel rank keeps its rows.
    TORCH_CHECK(v.dim() >= 1 && v.size(0) == batch_, "checkpoint has carried state for ", v.size(0),
                " streams, training.batch is ", batch_, " (the global batch cannot change on resume)");
    if (shard_world_ > 1) v = v.narrow(0, shard_rank_ * local_batch_, local_batch_).contiguous();
    return v.to(device_);
  });
}

void write_carried_state(torch::serialize::OutputArchive& ar, const std::vector<State>& state,
                         const std::vector<torch::Tensor>& flat) {
  ar.write("n_layers", torch::tensor(static_cast<int64_t>(state.size()), torch::kInt64));
  size_t k = 0;
  for (size_t l = 0; l < state.size(); ++l) {
    ar.write("state_" + std::to_string(l) + "_n", torch::tensor(static_cast<int64_t>(state[l].size()), torch::kInt64));
    for (size_t j = 0; j < state[l].size(); ++j, ++k)
      ar.write("state_" + std::to_string(l) + "_" + std::to_string(j),
               (flat.empty() ? state[l][j] : flat.at(k)).to(torch::kCPU));
  }
}

std::vector<torch::Tensor> flatten_state(const std::vector<State>& state) {
  std::vector<torch::Tensor> out;
  for (auto& s : state)
    for (auto& t : s) out.push_back(t);
  return out;
}

void state_to(std::vector<State>& state, const torch::Device& d) {
  for (auto& s : state)
    for (auto& t : s) t = t.to(d);
}

int64_t stream_shard_size(const std::string& task, int64_t batch, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw UserError(task + ": invalid shard " + std::to_string(rank) + " of " + std::to_string(world));
  if (batch % world != 0)
    throw UserError("training.batch: " + std::to_string(batch) + " streams cannot be split evenly over " +
                    std::to_string(world) + " processes (the global batch must be divisible by the number of processes)");
  return batch / world;
}

void read_carried_state(torch::serialize::InputArchive& ar, std::vector<State>& state,
                        const std::function<torch::Tensor(torch::Tensor)>& adapt) {
  auto I = [&](const std::string& k) {
    torch::Tensor t;  // fresh: reading into a defined tensor would try to resize it
    ar.read(k, t);
    return t.item<int64_t>();
  };
  const int64_t nl = I("n_layers");
  TORCH_CHECK(nl == static_cast<int64_t>(state.size()), "checkpoint has state for ", nl, " layers, model has ",
              state.size());
  for (int64_t l = 0; l < nl; ++l) {
    const int64_t nj = I("state_" + std::to_string(l) + "_n");
    State s;
    for (int64_t j = 0; j < nj; ++j) {
      torch::Tensor v;
      ar.read("state_" + std::to_string(l) + "_" + std::to_string(j), v);
      s.push_back(adapt(v));
    }
    state[static_cast<size_t>(l)] = s;
  }
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
