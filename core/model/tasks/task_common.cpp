#include "tasks/task_common.h"

#include <torch/nn/functional.h>

#include <random>

#include "cells/registry.h"
#include "config/json.h"

namespace cs {

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

// ---------------------------------------------------------------- EpochOrder
void EpochOrder::start(int64_t n, uint64_t seed, std::string examples) {
  n_ = n;
  seed_ = seed;
  examples_ = std::move(examples);
  cursor_ = 0;
  epochs_done_ = 0;
  perm_ = permutation(0);
}

std::vector<int64_t> EpochOrder::permutation(int64_t epoch) const {
  // The order of epoch e depends only on (training.seed, e): resume needs just the cursor.
  return seeded_permutation(n_, seed_ * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epoch) + 1);
}

std::vector<int64_t> EpochOrder::next(int64_t batch) {
  if (cursor_ >= static_cast<int64_t>(perm_.size())) {
    ++epochs_done_;
    cursor_ = 0;
    perm_ = permutation(epochs_done_);
  }
  const int64_t n = std::min<int64_t>(batch, static_cast<int64_t>(perm_.size()) - cursor_);
  std::vector<int64_t> idx(perm_.begin() + cursor_, perm_.begin() + cursor_ + n);
  cursor_ += n;
  return idx;
}

double EpochOrder::epoch() const {
  return static_cast<double>(epochs_done_) +
         static_cast<double>(cursor_) / std::max<double>(1.0, static_cast<double>(perm_.size()));
}

void EpochOrder::save(torch::serialize::OutputArchive& ar) const {
  ar.write("cursor", torch::tensor(cursor_, torch::kInt64));
  ar.write("epochs_done", torch::tensor(epochs_done_, torch::kInt64));
  ar.write("perm", torch::tensor(perm_, torch::kInt64));
}

void EpochOrder::load(torch::serialize::InputArchive& ar) {
  auto read = [&](const std::string& k) {
    torch::Tensor t;  // fresh: reading into a defined tensor would try to resize it
    ar.read(k, t);
    return t;
  };
  const int64_t cursor = read("cursor").item<int64_t>();
  const int64_t epochs_done = read("epochs_done").item<int64_t>();
  auto p = read("perm").contiguous();
  if (p.numel() != n_)
    throw UserError("the checkpoint's training order has " + std::to_string(p.numel()) + " " + examples_ +
                    ", the dataset has " + std::to_string(n_));
  cursor_ = cursor;
  epochs_done_ = epochs_done;
  perm_.assign(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + p.numel());
}

void ExampleTask::to(const torch::Device& d) {
  device_ = d;
  model()->to(d);
}

// ---------------------------------------------------------------- vocabulary, model pieces
std::optional<json> saved_vocab_json(const std::string& run_dir, const std::string& format, const std::string& what) {
  if (run_dir.empty()) return std::nullopt;
  const std::string path = join_path(run_dir, "vocab");
  if (!file_exists(path)) return std::nullopt;
  json j;
  try {
    j = parse_json(read_file(path), path);
  } catch (const std::exception& e) {
    throw UserError(path + ": not a " + what + " (" + e.what() + ")");
  }
  if (j.value("format", "") != format) throw UserError(path + ": not a " + what);
  return j;
}

torch::nn::Embedding padded_embedding(int64_t vocab, int64_t dim, int64_t pad) {
  torch::nn::Embedding e(torch::nn::EmbeddingOptions(vocab, dim).padding_idx(pad));
  torch::NoGradGuard ng;
  e->weight.uniform_(-0.05, 0.05);
  e->weight[pad].zero_();
  return e;
}

torch::Tensor dropout_if(const torch::Tensor& t, double p, bool training) {
  namespace F = torch::nn::functional;
  return p > 0 ? F::dropout(t, F::DropoutFuncOptions().p(p).training(training)) : t;
}

torch::Tensor add_embedding_l2(const torch::Tensor& total, const torch::Tensor& weight, double coeff) {
  if (coeff > 0 && weight.requires_grad()) return total + coeff * weight.pow(2).sum();
  return total;
}

void check_lm_sees_no_future(const json& cfg, std::vector<ConfigError>& errs) {
  if (!cfg.contains("model") || !cfg.at("model").is_object()) return;
  const json& m = cfg.at("model");
  const CellInfo* c = find_cell_info(m.value("cell", std::string()));
  if (c && c->future_reads) c->future_reads(m, errs);  // an unknown cell is the schema's error, not this one
}

}  // namespace cs
