#include "tasks/classify.h"

#include <torch/nn/functional.h>
#include <torch/nn/init.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "cells/registry.h"
#include "data/utf8.h"
#include "config/common_options.h"
#include "tasks/eval_scope.h"
#include "data/tokenizer.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

// ---------------------------------------------------------------- splits
namespace {

// Groups of examples (same non-empty `group`, else one example each), in first-appearance order.
std::vector<std::vector<size_t>> groups_of(const std::vector<TextExample>& ex, const std::vector<size_t>& which) {
  std::vector<std::vector<size_t>> g;
  std::map<std::string, size_t> idx;
  for (size_t i : which) {
    if (ex[i].group.empty()) {
      g.push_back({i});
      continue;
    }
    auto it = idx.find(ex[i].group);
    if (it == idx.end()) {
      idx[ex[i].group] = g.size();
      g.push_back({i});
    } else {
      g[it->second].push_back(i);
    }
  }
  return g;
}

// Move round(frac * #groups) seeded-random groups of `which` to split `to`.
void carve(std::vector<TextExample>& ex, const std::vector<size_t>& which, double frac, const std::string& to,
           uint64_t seed) {
  auto g = groups_of(ex, which);
  const int64_t n = static_cast<int64_t>(g.size());
  const int64_t k = static_cast<int64_t>(std::llround(frac * static_cast<double>(n)));
  auto p = seeded_permutation(n, seed);
  for (int64_t i = 0; i < k && i < n; ++i)
    for (size_t e : g[static_cast<size_t>(p[static_cast<size_t>(i)])]) ex[e].split = to;
}

}  // namespace

void assign_splits(std::vector<TextExample>& ex, const json& ds) {
  // `ds` may be partial (tests, cv): missing keys take the options' defaults.
  const SentenceOptions so = sentence_option_table(false).read_partial(json{{"dataset", ds}});
  const DatasetOptions dso = dataset_option_table().read_partial(ds);
  const int64_t folds = so.folds;
  const uint64_t seed = static_cast<uint64_t>(so.split_seed);
  const double vf = dso.valid_fraction, tf = dso.test_fraction;
  std::vector<size_t> all(ex.size());
  for (size_t i = 0; i < ex.size(); ++i) all[i] = i;
  if (folds > 0) {
    // k-fold cross-validation over all examples (a given split is ignored): groups are
    // permuted with split_seed and cut into K contiguous folds; fold `fold` is the test
    // part, and valid_fraction of the remaining groups (seeded) the validation part.
    const int64_t fold = so.fold;
    auto g = groups_of(ex, all);
    const int64_t n = static_cast<int64_t>(g.size());
    if (n < folds)
      throw UserError("dataset.folds: " + std::to_string(folds) + " folds but only " + std::to_string(n) + " examples");
    auto p = seeded_permutation(n, seed);
    std::vector<size_t> rest;
    for (int64_t i = 0; i < n; ++i) {
      const bool in_test = i * folds / n == fold;  // fold of position i: floor(i * K / n)
      for (size_t e : g[static_cast<size_t>(p[static_cast<size_t>(i)])]) {
        ex[e].split = in_test ? "test" : "train";
        if (!in_test) rest.push_back(e);
      }
    }
    carve(ex, rest, vf, "valid", seed + 1);
    return;
  }
  size_t tagged = 0;
  for (auto& e : ex) tagged += !e.split.empty();
  if (tagged != 0 && tagged != ex.size())
    throw UserError("dataset: some examples carry a split and others do not (" + std::to_string(tagged) + " of " +
                    std::to_string(ex.size()) + ")");
  if (tagged == 0) {
    // No split of its own: seeded split by groups, test first, then valid from the rest.
    for (auto& e : ex) e.split = "train";
    carve(ex, all, tf, "test", seed);
    std::vector<size_t> rest;
    for (size_t i = 0; i < ex.size(); ++i)
      if (ex[i].split == "train") rest.push_back(i);
    carve(ex, rest, vf / std::max(1e-12, 1.0 - tf), "valid", seed + 1);
    return;
  }
  bool has_valid = false;
  for (auto& e : ex) has_valid |= e.split == "valid";
  if (!has_valid) {  // e.g. IMDB, SemEval: valid carved from train
    std::vector<size_t> tr;
    for (size_t i = 0; i < ex.size(); ++i)
      if (ex[i].split == "train") tr.push_back(i);
    carve(ex, tr, vf, "valid", seed + 1);
  }
}

// ---------------------------------------------------------------- pretrained embeddings
int64_t load_pretrained_embeddings(const std::string& path, const Vocab& vocab, torch::Tensor weight) {
  std::ifstream in(path);
  if (!in) throw UserError("model.pretrained_embeddings: cannot open '" + path + "'");
  const int64_t E = weight.size(1);
  torch::NoGradGuard ng;
  auto acc = weight.accessor<float, 2>();
  std::string line;
  size_t no = 0;
  int64_t found = 0;
  std::vector<bool> seen(vocab.size(), false);
  std::vector<float> v;
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (no == 1) line.erase(0, utf8_bom_size(reinterpret_cast<const unsigned char*>(line.data()), line.size()));
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0)
      throw UserError(path + ":" + std::to_string(no) + ": expected 'word v1 ... v" + std::to_string(E) + "'");
    const std::string word = line.substr(0, sp);
    const char* p = line.c_str() + sp;
    v.clear();
    char* end = nullptr;
    for (;;) {
      while (*p == ' ' || *p == '\t') ++p;
      if (!*p) break;
      const float f = std::strtof(p, &end);
      if (end == p)
        throw UserError(path + ":" + std::to_string(no) + ": not a number near '" + std::string(p).substr(0, 20) + "'");
      v.push_back(f);
      p = end;
    }
    if (no == 1 && v.size() == 1) continue;  // word2vec-style header "N E"
    if (static_cast<int64_t>(v.size()) != E)
      throw UserError(path + ":" + std::to_string(no) + ": " + std::to_string(v.size()) +
                      " values, expected model.embed = " + std::to_string(E));
    const int32_t id = vocab.id(word);
    if (id <= SentenceTask::kPad || seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = true;
    ++found;
    for (int64_t j = 0; j < E; ++j) acc[id][j] = v[static_cast<size_t>(j)];
  }
  return found;
}

// ---------------------------------------------------------------- model
SentenceModelImpl::SentenceModelImpl(const json& m, int64_t vocab, int64_t classes, bool is_absa, int64_t pad) {
  const ModelOptions mo = read_model_options(m);
  const int64_t E = mo.embed;
  absa = is_absa;
  binary = classes == 2 && !is_absa;
  dropout = mo.dropout;
  fc_activation = enum_from_json<FcActivation>(resolved_at(m, "model", "fc_activation"), "model.fc_activation");
  // Keras' default embedding initialisation U(-0.05, 0.05) (the scale the paper's L2 of 1e-4 assumes).
  embed = register_module("embed", padded_embedding(vocab, E, pad));
  encoder = register_module("encoder", Bidirectional(m, E));
  int64_t feat = encoder->output_size() + (absa ? E : 0);
  const int64_t fcn = resolved<int64_t>(m, "model", "fc");
  if (fcn > 0) {
    fc = register_module("fc", torch::nn::Linear(feat, fcn));
    feat = fcn;
  }
  out = register_module("out", torch::nn::Linear(feat, binary ? 1 : classes));
}

torch::Tensor SentenceModelImpl::forward(const SentenceBatch& b, StepContext& ctx) {
  auto drop = [&](const torch::Tensor& t) { return dropout_if(t, dropout, is_training()); };
  auto e = drop(embed->forward(b.tokens));  // dropout on the embedding output (CRU paper, Table 1)
  auto enc = encoder->forward(e, b.lengths, ctx);
  torch::Tensor feat;
  if (absa) {
    // MZU paper: mean pooling over the output states ...
    auto len = b.lengths.to(enc.output.dtype()).unsqueeze(1);
    auto sent = enc.output.sum(0) / len;  // padded positions are zero
    // ... concatenated with the aspect embedding (mean over the aspect's words)
    auto a = embed->forward(b.aspect).sum(0) / b.aspect_len.to(enc.output.dtype()).unsqueeze(1);
    feat = torch::cat({sent, a}, 1);
  } else {
    feat = enc.final;  // CRU paper Fig. 2: concatenated final states of both directions
  }
  if (fc) {
    feat = fc->forward(feat);
    switch (fc_activation) {
      case FcActivation::Relu:
        feat = torch::relu(feat);
        break;
      case FcActivation::Tanh:
        feat = torch::tanh(feat);
        break;
      case FcActivation::None:
        break;
    }
    feat = drop(feat);  // dropout on the fully connected layer's output
  } else if (absa) {
    feat = drop(feat);
  }
  return out->forward(feat);
}

// ---------------------------------------------------------------- task
namespace {

std::vector<std::string> tokens_of(const TextExample& e, const std::string& text, const TokenizerOptions& to) {
  if (e.pretokenized) {
    std::vector<std::string> t;
    for (const std::string& w : split_ascii_words(text)) {
      t.push_back(to.lowercase ? lowercase_word(w, to.rules, to.locale) : w);
      if (to.max_tokens && t.size() >= to.max_tokens) break;
    }
    return t;
  }
  return tokenize(text, to);
}

std::vector<int32_t> encode(const std::vector<std::string>& toks, const Vocab& v) {
  std::vector<int32_t> ids;
  ids.reserve(toks.size() + 1);
  for (auto& t : toks) ids.push_back(v.id(t));
  if (ids.empty()) ids.push_back(0);  // an empty text is one <unk>, so every length is >= 1
  return ids;
}

}  // namespace

SentenceTask::SentenceTask(const json& cfg, const std::string& run_dir, bool absa) : cfg_(cfg), absa_(absa) {
  const auto& ds = cfg.at("dataset");
  const TrainingOptions tr = read_training_options(cfg.at("training"));
  const SentenceOptions o = sentence_option_table(absa).read(cfg);
  batch_ = tr.batch;
  eval_batch_ = o.eval_batch;
  embed_l2_ = o.embed_l2;
  auto loc = resolve_text_dataset(read_dataset_options(ds), name());
  auto ex = load_text_examples(loc, o);
  if (absa_) {
    if (loc.format != DatasetFormat::Semeval2014Xml) {
      for (auto& e : ex)
        if (e.aspect.empty()) throw UserError("dataset: task absa needs aspect terms (format semeval2014_xml)");
    }
    if (o.drop_conflict)
      ex.erase(std::remove_if(ex.begin(), ex.end(), [](const TextExample& e) { return e.label == "conflict"; }),
               ex.end());
    if (o.subset == AbsaSubset::Hds)
      ex.erase(std::remove_if(ex.begin(), ex.end(), [](const TextExample& e) { return !e.hard; }), ex.end());
    if (ex.empty()) throw UserError("dataset '" + loc.path + "': no examples left (dataset.subset / drop_conflict)");
  }
  assign_splits(ex, ds);
  TokenizerOptions to = sentence_tokenizer_options(o);
  to.max_tokens = static_cast<size_t>(o.max_len);
  std::vector<std::vector<std::string>> toks(ex.size()), atoks(ex.size());
  for (size_t i = 0; i < ex.size(); ++i) {
    toks[i] = tokens_of(ex[i], ex[i].text, to);
    if (absa_) {
      TokenizerOptions ao = to;
      ao.max_tokens = 0;
      atoks[i] = tokenize(ex[i].aspect, ao);
    }
  }
  const std::string vocab_path = run_dir.empty() ? "" : join_path(run_dir, "vocab");
  if (auto j = saved_vocab_json(run_dir, "cellscope-sentence-vocab", "sentence-task vocabulary")) {
    for (auto& w : j->at("words")) vocab_.add(w.get<std::string>());
    labels_ = j->at("labels").get<std::vector<std::string>>();
  } else {
    // Vocabulary from the training split: by descending frequency (ties: byte order),
    // at least dataset.min_freq occurrences, at most dataset.max_vocab words (0 = all).
    vocab_.add("<pad>");
    std::map<std::string, int64_t> freq;
    for (size_t i = 0; i < ex.size(); ++i) {
      if (ex[i].split != "train") continue;
      for (auto& t : toks[i]) ++freq[t];
      for (auto& t : atoks[i]) ++freq[t];
    }
    std::vector<std::pair<std::string, int64_t>> fv(freq.begin(), freq.end());
    std::stable_sort(fv.begin(), fv.end(), [](auto& a, auto& b) { return a.second > b.second; });
    const int64_t maxv = o.max_vocab, minf = o.min_freq;
    for (auto& [w, c] : fv) {
      if (c < minf) break;
      if (maxv > 0 && static_cast<int64_t>(vocab_.size()) - 2 >= maxv) break;
      vocab_.add(w);
    }
    if (absa_) {
      labels_ = {"positive", "negative", "neutral", "conflict"};
    } else {
      std::set<std::string> ls;
      for (auto& e : ex) ls.insert(e.label);
      labels_.assign(ls.begin(), ls.end());
    }
  }
  if (vocab_.symbol(kPad) != "<pad>") throw UserError(vocab_path + ": id 1 is not <pad>");
  if (!absa_ && labels_.size() < 2)
    throw UserError("dataset '" + loc.path + "': only " + std::to_string(labels_.size()) +
                    " label(s); classification needs two or more");
  std::map<std::string, int64_t> lid;
  for (size_t i = 0; i < labels_.size(); ++i) lid[labels_[i]] = static_cast<int64_t>(i);
  for (size_t i = 0; i < ex.size(); ++i) {
    auto it = lid.find(ex[i].label);
    if (it == lid.end())
      throw UserError("dataset '" + loc.path + "': label '" + ex[i].label + "' is not among the run's labels");
    Split& s = ex[i].split == "train" ? train_ : ex[i].split == "valid" ? valid_ : test_;
    s.tokens.push_back(encode(toks[i], vocab_));
    if (absa_) s.aspect.push_back(encode(atoks[i], vocab_));
    s.labels.push_back(it->second);
    s.hard.push_back(ex[i].hard);
  }
  if (train_.labels.empty()) throw UserError("dataset '" + loc.path + "': the train split is empty");
  if (valid_.labels.empty())
    throw UserError("dataset '" + loc.path + "': the valid split is empty; raise dataset.valid_fraction");
  model_ = SentenceModel(cfg.at("model"), static_cast<int64_t>(vocab_.size()), static_cast<int64_t>(labels_.size()),
                         absa_, kPad);
  const std::string pre = o.pretrained_embeddings.value_or("");
  if (!pre.empty()) {
    const int64_t found = load_pretrained_embeddings(pre, vocab_, model_->embed->weight);
    coverage_ = static_cast<double>(found) / std::max<double>(1.0, static_cast<double>(vocab_.size()) - 2);
  }
  if (o.freeze_embeddings) model_->embed->weight.set_requires_grad(false);
  order_.start(static_cast<int64_t>(train_.labels.size()), static_cast<uint64_t>(tr.seed), "examples");
}

const SentenceTask::Split& SentenceTask::split(const std::string& n) const {
  return split_named(n, train_, valid_, test_);
}

bool SentenceTask::has_split(const std::string& s) const {
  return (s == "valid" && !valid_.labels.empty()) || (s == "test" && !test_.labels.empty());
}

// ---------------------------------------------------------------- data-parallel shard
void SentenceTask::set_shard(int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw UserError(name() + ": invalid shard " + std::to_string(rank) + " of " + std::to_string(world));
  if (batch_ % world != 0)
    throw UserError("training.batch: " + std::to_string(batch_) + " sentences cannot be split evenly over " +
                    std::to_string(world) +
                    " processes (the global batch must be divisible by the number of processes)");
  shard_rank_ = rank;
  shard_world_ = world;
}

std::vector<int64_t> SentenceTask::shard_of(const std::vector<int64_t>& idx, double* weight) const {
  *weight = 1.0;
  if (shard_world_ == 1) return idx;
  // Rank r: [r*n/W, (r+1)*n/W). A full batch splits evenly; the last batch of an epoch
  // may not, so the local mean loss is weighted by W * n_r / n: the mean over the ranks
  // of the weighted losses is the mean loss of the global batch.
  const int64_t n = static_cast<int64_t>(idx.size()), W = shard_world_;
  const int64_t lo = n * shard_rank_ / W, hi = n * (shard_rank_ + 1) / W;
  *weight = static_cast<double>(W * (hi - lo)) / static_cast<double>(n);
  // A rank with no sentence in a short last batch runs one with weight 0 (its
  // collectives and metric names must match the others').
  if (hi == lo) return {idx.front()};
  return std::vector<int64_t>(idx.begin() + lo, idx.begin() + hi);
}

SentenceBatch SentenceTask::make_batch(const Split& s, const std::vector<int64_t>& idx) const {
  SentenceBatch b;
  b.index = idx;
  const int64_t B = static_cast<int64_t>(idx.size());
  int64_t T = 1, A = 1;
  for (auto i : idx) {
    T = std::max<int64_t>(T, static_cast<int64_t>(s.tokens[static_cast<size_t>(i)].size()));
    if (absa_) A = std::max<int64_t>(A, static_cast<int64_t>(s.aspect[static_cast<size_t>(i)].size()));
  }
  auto tok = torch::full({T, B}, static_cast<int64_t>(kPad), torch::kInt64);
  auto len = torch::empty({B}, torch::kInt64), lab = torch::empty({B}, torch::kInt64);
  auto ta = tok.accessor<int64_t, 2>();
  torch::Tensor asp, alen;
  if (absa_) {
    asp = torch::full({A, B}, static_cast<int64_t>(kPad), torch::kInt64);
    alen = torch::empty({B}, torch::kInt64);
  }
  for (int64_t j = 0; j < B; ++j) {
    const auto& t = s.tokens[static_cast<size_t>(idx[static_cast<size_t>(j)])];
    for (size_t p = 0; p < t.size(); ++p) ta[static_cast<int64_t>(p)][j] = t[p];
    len[j] = static_cast<int64_t>(t.size());
    lab[j] = s.labels[static_cast<size_t>(idx[static_cast<size_t>(j)])];
    if (absa_) {
      const auto& a = s.aspect[static_cast<size_t>(idx[static_cast<size_t>(j)])];
      auto aa = asp.accessor<int64_t, 2>();
      for (size_t p = 0; p < a.size(); ++p) aa[static_cast<int64_t>(p)][j] = a[p];
      alen[j] = static_cast<int64_t>(a.size());
    }
  }
  b.tokens = tok.to(device_);
  b.lengths = len.to(device_);
  b.labels = lab.to(device_);
  if (absa_) {
    b.aspect = asp.to(device_);
    b.aspect_len = alen.to(device_);
  }
  return b;
}

// Loss (mean over the batch) and predictions.
static std::pair<torch::Tensor, torch::Tensor> loss_and_pred(const torch::Tensor& logits, const torch::Tensor& y,
                                                             bool binary, bool sum) {
  const auto red = sum ? torch::Reduction::Sum : torch::Reduction::Mean;
  if (binary) {
    auto z = logits.squeeze(1);
    auto loss = torch::binary_cross_entropy_with_logits(z, y.to(z.dtype()), {}, {}, red);
    return {loss, (z > 0).to(torch::kInt64)};
  }
  auto loss = torch::nll_loss(torch::log_softmax(logits, 1), y, {}, red);
  return {loss, logits.argmax(1)};
}

StepResult SentenceTask::train_step() {
  model_->train();
  std::vector<int64_t> idx = order_.next(batch_);
  const int64_t n = static_cast<int64_t>(idx.size());
  double weight = 1.0;  // data parallel: this rank's share of the global batch (shard_of)
  idx = shard_of(idx, &weight);
  auto b = make_batch(train_, idx);
  StepContext ctx;
  ctx.step = train_step_index();
  // The loss is a mean over the sentences (one label each): a cell's per-token term (MZU
  // eq. 19's sum over the tokens) is summed over each sentence's real tokens and divided by
  // the same number of sentences, so its ratio to the task loss is eq. 19's, as in the LMs.
  ctx.loss_units = static_cast<double>(b.lengths.size(0));
  ctx.token_mask =
      length_mask(b.lengths, b.tokens.size(0), torch::TensorOptions().dtype(torch::kFloat32).device(b.tokens.device()))
          .squeeze(2);
  auto logits = model_->forward(b, ctx);
  auto [loss, pred] = loss_and_pred(logits, b.labels, model_->binary, false);
  StepResult r;
  r.task_loss = loss.item<double>();
  torch::Tensor total = shard_world_ > 1 ? loss * weight : loss;
  total = add_embedding_l2(total, model_->embed->weight, embed_l2_);  // L2 on the embedding layer (CRU paper)
  if (ctx.extra_loss.defined()) total = total + (shard_world_ > 1 ? ctx.extra_loss * weight : ctx.extra_loss);
  r.loss = total;
  r.units = shard_world_ > 1 ? static_cast<int64_t>(std::lround(weight * static_cast<double>(n) / shard_world_)) : n;
  r.metrics["accuracy"] = pred.eq(b.labels).to(torch::kFloat64).mean().item<double>();
  for (auto& [k, v] : ctx.metrics) r.metrics[k] = v.first / std::max<int64_t>(v.second, 1);
  {  // training FLOPs: 3 x (the encoder's cells over the padded [T, B] batch + the head per sentence)
    const double T = static_cast<double>(b.tokens.size(0)), B = static_cast<double>(b.tokens.size(1));
    double head = 2.0 * static_cast<double>(model_->out->weight.numel());
    if (model_->fc) head += 2.0 * static_cast<double>(model_->fc->weight.numel());
    r.flops = 3.0 * (model_->encoder->flops_per_step() * T * B + head * B);
  }
  return r;
}

EvalResult SentenceTask::evaluate(const std::string& name) {
  const Split& s = split(name);
  if (s.labels.empty()) throw UserError("the " + name + " split is empty");
  const int64_t N = static_cast<int64_t>(s.labels.size());
  std::vector<int64_t> pred(static_cast<size_t>(N));
  double loss_sum = 0;
  EvalScope es(*model_);
  // Batches of similar lengths: less padding, same result.
  const auto order = order_by_length(N, [&](int64_t i) { return s.tokens[static_cast<size_t>(i)].size(); });
  for (int64_t p = 0; p < N; p += eval_batch_) {
    std::vector<int64_t> idx(order.begin() + p, order.begin() + std::min(N, p + eval_batch_));
    auto b = make_batch(s, idx);
    StepContext ctx;
    auto logits = model_->forward(b, ctx);
    auto [loss, pr] = loss_and_pred(logits, b.labels, model_->binary, true);
    loss_sum += loss.item<double>();
    auto pc = pr.to(torch::kCPU).contiguous();
    auto pa = pc.accessor<int64_t, 1>();
    for (size_t j = 0; j < idx.size(); ++j) pred[static_cast<size_t>(idx[j])] = pa[static_cast<int64_t>(j)];
  }
  EvalResult r;
  r.units = N;
  const int64_t C = static_cast<int64_t>(labels_.size());
  int64_t correct = 0, hard_n = 0, hard_c = 0;
  std::vector<int64_t> tp(static_cast<size_t>(C)), fp(static_cast<size_t>(C)), fn(static_cast<size_t>(C));
  for (int64_t i = 0; i < N; ++i) {
    const int64_t y = s.labels[static_cast<size_t>(i)], q = pred[static_cast<size_t>(i)];
    correct += y == q;
    if (y == q) ++tp[static_cast<size_t>(y)];
    else {
      ++fp[static_cast<size_t>(q)];
      ++fn[static_cast<size_t>(y)];
    }
    if (s.hard[static_cast<size_t>(i)]) {
      ++hard_n;
      hard_c += y == q;
    }
  }
  r.metrics["loss"] = loss_sum / static_cast<double>(N);
  r.metrics["accuracy"] = static_cast<double>(correct) / static_cast<double>(N);
  if (C > 2) {
    // macro-F1 over the classes present in the split's labels or predictions
    double f1 = 0;
    int present = 0;
    for (int64_t c = 0; c < C; ++c) {
      const auto t = tp[static_cast<size_t>(c)], a = fp[static_cast<size_t>(c)], m = fn[static_cast<size_t>(c)];
      if (t + a + m == 0) continue;
      ++present;
      f1 += 2.0 * static_cast<double>(t) / static_cast<double>(2 * t + a + m);
    }
    r.metrics["macro_f1"] = present ? f1 / present : 0.0;
  }
  if (absa_ && hard_n > 0) r.metrics["accuracy_hds"] = static_cast<double>(hard_c) / static_cast<double>(hard_n);
  if (coverage_ >= 0) r.metrics["pretrained_coverage"] = coverage_;
  return r;
}

std::string SentenceTask::vocab_text() const {
  json j;
  j["format"] = "cellscope-sentence-vocab";
  j["version"] = 1;
  j["labels"] = labels_;
  std::vector<std::string> w;
  for (size_t i = 1; i < vocab_.size(); ++i) w.push_back(vocab_.symbol(static_cast<int32_t>(i)));
  j["words"] = w;  // ids 1.. (id 0 is <unk>)
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace cs
