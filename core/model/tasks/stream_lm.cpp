#include "tasks/stream_lm.h"

#include <torch/nn/functional.h>

#include <algorithm>

#include "util/error.h"

namespace cs {

namespace F = torch::nn::functional;

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
                    std::to_string(world) +
                    " processes (the global batch must be divisible by the number of processes)");
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

// ---------------------------------------------------------------- StreamLMTask
void StreamLMTask::start_streams() {
  train_ = batchify(train_tokens(), batch_);
  local_batch_ = batch_;
  state_ = stream_model().initial_state(batch_, torch::TensorOptions().dtype(torch::kFloat32));
}

void StreamLMTask::set_shard(int rank, int world) {
  local_batch_ = stream_shard_size(name(), batch_, rank, world);
  shard_rank_ = rank;
  shard_world_ = world;
  // The same [B, n] batchification as one process; this rank keeps its rows, so the
  // ranks' shards together are exactly the single-process batch of every step.
  train_ = batchify(train_tokens(), batch_).narrow(0, rank * local_batch_, local_batch_).contiguous().to(device_);
  state_ = stream_model().initial_state(local_batch_, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
}

void StreamLMTask::to(const torch::Device& d) {
  device_ = d;
  model()->to(d);
  train_ = train_.to(d);
  state_to(state_, d);
}

double StreamLMTask::epoch() const {
  const int64_t n = train_.size(1) - 1;
  return static_cast<double>(epochs_done_) +
         static_cast<double>(cursor_) / static_cast<double>(std::max<int64_t>(n, 1));
}

std::pair<torch::Tensor, torch::Tensor> StreamLMTask::next_batch() {
  const int64_t n = train_.size(1);
  if (cursor_ >= n - 1) {  // epoch boundary: start the streams again from a zero state
    cursor_ = 0;
    ++epochs_done_;
    state_ = stream_model().initial_state(local_batch_, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  }
  const int64_t L = std::min(bptt_, n - 1 - cursor_);
  auto x = train_.narrow(1, cursor_, L).t();      // [L, B]: input tokens
  auto y = train_.narrow(1, cursor_ + 1, L).t();  // [L, B]: each target is the next token
  cursor_ += L;
  return {x, y};
}

void StreamLMTask::write_streams(torch::serialize::OutputArchive& ar) const {
  TORCH_CHECK(shard_world_ == 1 || !gathered_.empty(), name(),
              ": save_state of a data-parallel shard needs the gathered state (set_gathered_state)");
  write_carried_state(ar, state_, gathered_);
}

void StreamLMTask::read_streams(torch::serialize::InputArchive& ar) {
  read_carried_state(ar, state_, [&](torch::Tensor v) {
    // Checkpoints hold the state of all B streams; a data-parallel rank keeps its rows.
    TORCH_CHECK(v.dim() >= 1 && v.size(0) == batch_, "checkpoint has carried state for ", v.size(0),
                " streams, training.batch is ", batch_, " (the global batch cannot change on resume)");
    if (shard_world_ > 1) v = v.narrow(0, shard_rank_ * local_batch_, local_batch_).contiguous();
    return v.to(device_);
  });
}

double StreamLMTask::stream_nll(const std::vector<int32_t>& ids, int64_t eval_batch, Probe* probe,
                                std::vector<float>* per_pos) {
  torch::NoGradGuard ng;
  const int64_t N = static_cast<int64_t>(ids.size());
  if (per_pos) per_pos->assign(static_cast<size_t>(N), 0.f);
  if (N < 2) return 0.0;
  const int64_t B = std::max<int64_t>(1, std::min<int64_t>(eval_batch, (N - 1) / std::max<int64_t>(bptt_, 1)));
  const int64_t n = (N - 1) / B;
  auto all = torch::from_blob(const_cast<int32_t*>(ids.data()), {N}, torch::kInt32).to(torch::kInt64).to(device_);
  double total = 0;
  // Score rows [R, len] segment by segment with the state carried; row r's
  // position i predicts ids[base + r * stride + i + 1].
  auto score = [&](const torch::Tensor& inp, const torch::Tensor& tgt, std::vector<State>& st, int64_t stride,
                   int64_t base) {
    const int64_t rows = inp.size(0), len = inp.size(1);
    for (int64_t p = 0; p < len; p += bptt_) {
      const int64_t l = std::min(bptt_, len - p);
      StepContext ctx;
      ctx.probe = probe;
      auto logits = stream_model().forward(inp.narrow(1, p, l).t(), st, ctx);
      auto nll = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), tgt.narrow(1, p, l).t().reshape({-1}),
                                  F::CrossEntropyFuncOptions().reduction(torch::kNone));
      total += nll.sum().item<double>();
      if (per_pos) {
        auto v = nll.view({l, rows}).t().contiguous().to(torch::kCPU, torch::kFloat32);
        auto acc = v.accessor<float, 2>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < l; ++i) (*per_pos)[static_cast<size_t>(base + r * stride + p + i + 1)] = acc[r][i];
      }
    }
  };
  std::vector<State> st =
      stream_model().initial_state(B, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  score(all.narrow(0, 0, B * n).view({B, n}), all.narrow(0, 1, B * n).view({B, n}), st, n, 0);
  const int64_t rem = (N - 1) - B * n;
  if (rem > 0) {  // the tail continues the last stream with its carried state, batch 1
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

}  // namespace cs
