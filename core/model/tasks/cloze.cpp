#include "tasks/cloze.h"

#include <torch/nn/functional.h>
#include <torch/nn/init.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cells/registry.h"
#include "config/common_options.h"
#include "data/manifest.h"
#include "tasks/eval_scope.h"
#include "tasks/stream_lm.h"
#include "util/error.h"

namespace cs {

// ---------------------------------------------------------------- features and encoding
void cloze_document_features(const std::vector<std::string>& doc, const std::vector<std::string>& query,
                             std::vector<float>& freq, std::vector<float>& coq) {
  std::map<std::string, int64_t> in_doc, in_query;
  for (auto& w : doc) ++in_doc[w];
  for (auto& w : query) ++in_query[w];
  const double len = static_cast<double>(std::max<size_t>(doc.size(), 1));
  freq.resize(doc.size());
  coq.resize(doc.size());
  for (size_t i = 0; i < doc.size(); ++i) {
    // CRU paper eq. 15: freq(d) = word_count(d) / length(D), d in D
    freq[i] = static_cast<float>(static_cast<double>(in_doc[doc[i]]) / len);
    // CRU paper, "Count of query word": CoQ(d) = how many times d appears in the query
    auto it = in_query.find(doc[i]);
    coq[i] = static_cast<float>(it == in_query.end() ? 0 : it->second);
  }
}

int64_t cloze_frequency_baseline(const std::vector<std::string>& doc, const std::vector<std::string>& candidates) {
  std::map<std::string, int64_t> in_doc;
  for (auto& w : doc) ++in_doc[w];
  int64_t best = 0, best_n = -1;
  for (size_t c = 0; c < candidates.size(); ++c) {
    auto it = in_doc.find(candidates[c]);
    const int64_t n = it == in_doc.end() ? 0 : it->second;
    if (n > best_n) best = static_cast<int64_t>(c), best_n = n;
  }
  return best;
}

ClozeItem encode_cloze(const ClozeExample& e, const Vocab& vocab, bool lowercase, Tokenizer rules,
                       const std::string& locale) {
  auto norm = [&](const std::vector<std::string>& ws) {
    std::vector<std::string> o;
    o.reserve(ws.size());
    for (auto& w : ws) o.push_back(lowercase ? cloze_lower(w, rules, locale) : w);
    return o;
  };
  const auto doc = norm(e.document), query = norm(e.query), cands = norm(e.candidates);
  ClozeItem it;
  for (auto& w : doc) it.doc.push_back(vocab.id(w));
  for (auto& w : query) it.query.push_back(vocab.id(w));
  cloze_document_features(doc, query, it.freq, it.coq);
  it.cand_pos.resize(cands.size());
  for (size_t i = 0; i < doc.size(); ++i)
    for (size_t c = 0; c < cands.size(); ++c)
      if (doc[i] == cands[c]) it.cand_pos[c].push_back(static_cast<int64_t>(i));
  const std::string ans = lowercase ? cloze_lower(e.answer, rules, locale) : e.answer;
  it.answer = static_cast<int64_t>(std::find(cands.begin(), cands.end(), ans) - cands.begin());
  it.freq_baseline = cloze_frequency_baseline(doc, cands);
  return it;
}

ClozeBatch make_cloze_batch(const std::vector<const ClozeItem*>& items, int32_t pad, const torch::Device& device) {
  const int64_t B = static_cast<int64_t>(items.size());
  int64_t Td = 1, Tq = 1, C = 1;
  for (auto* it : items) {
    Td = std::max<int64_t>(Td, static_cast<int64_t>(it->doc.size()));
    Tq = std::max<int64_t>(Tq, static_cast<int64_t>(it->query.size()));
    C = std::max<int64_t>(C, static_cast<int64_t>(it->cand_pos.size()));
  }
  auto doc = torch::full({Td, B}, static_cast<int64_t>(pad), torch::kInt64);
  auto query = torch::full({Tq, B}, static_cast<int64_t>(pad), torch::kInt64);
  auto dl = torch::empty({B}, torch::kInt64), ql = torch::empty({B}, torch::kInt64),
       ans = torch::empty({B}, torch::kInt64);
  auto feat = torch::zeros({Td, B, 2}, torch::kFloat32);
  auto cm = torch::zeros({B, C, Td}, torch::kFloat32);
  auto cv = torch::zeros({B, C}, torch::kBool);
  auto da = doc.accessor<int64_t, 2>(), qa = query.accessor<int64_t, 2>();
  auto fa = feat.accessor<float, 3>(), ca = cm.accessor<float, 3>();
  auto va = cv.accessor<bool, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const ClozeItem& it = *items[static_cast<size_t>(b)];
    for (size_t i = 0; i < it.doc.size(); ++i) {
      da[static_cast<int64_t>(i)][b] = it.doc[i];
      fa[static_cast<int64_t>(i)][b][0] = it.freq[i];
      fa[static_cast<int64_t>(i)][b][1] = it.coq[i];
    }
    for (size_t j = 0; j < it.query.size(); ++j) qa[static_cast<int64_t>(j)][b] = it.query[j];
    for (size_t c = 0; c < it.cand_pos.size(); ++c) {
      va[b][static_cast<int64_t>(c)] = true;
      for (auto p : it.cand_pos[c]) ca[b][static_cast<int64_t>(c)][p] = 1.0f;
    }
    dl[b] = static_cast<int64_t>(it.doc.size());
    ql[b] = static_cast<int64_t>(it.query.size());
    ans[b] = it.answer;
  }
  ClozeBatch r;
  r.doc = doc.to(device);
  r.doc_len = dl.to(device);
  r.query = query.to(device);
  r.query_len = ql.to(device);
  r.features = feat.to(device);
  r.cand_mask = cm.to(device);
  r.cand_valid = cv.to(device);
  r.answer = ans.to(device);
  return r;
}

// ---------------------------------------------------------------- attention over attention
AoAOutput attention_over_attention(const torch::Tensor& h_doc, const torch::Tensor& h_query,
                                   const torch::Tensor& doc_len, const torch::Tensor& query_len) {
  const int64_t Td = h_doc.size(1), Tq = h_query.size(1);
  auto opts = torch::TensorOptions().dtype(torch::kInt64).device(h_doc.device());
  // [B, Td] and [B, Tq]: true at real positions
  auto dmask = torch::arange(Td, opts).unsqueeze(0) < doc_len.unsqueeze(1);
  auto qmask = torch::arange(Tq, opts).unsqueeze(0) < query_len.unsqueeze(1);
  AoAOutput o;
  // Cui et al. 2017 eq. 5: pair-wise matching score M(i, j) = h_doc(i)^T h_query(j)
  o.M = torch::bmm(h_doc, h_query.transpose(1, 2));
  const double neg = -std::numeric_limits<double>::infinity();
  // eq. 6: column-wise softmax alpha(t) = softmax(M(1), ..., M(|D|), t): over the document, per query word
  o.alpha = torch::softmax(o.M.masked_fill(dmask.logical_not().unsqueeze(2), neg), 1);
  // eq. 8: row-wise softmax beta(t) = softmax(M(t, 1), ..., M(t, |Q|)): over the query, per document word
  o.beta_t = torch::softmax(o.M.masked_fill(qmask.logical_not().unsqueeze(1), neg), 2);
  // eq. 9: beta = 1/n sum_{t=1..|D|} beta(t), over the real document words only
  auto dm = dmask.to(h_doc.dtype());
  o.beta = (o.beta_t * dm.unsqueeze(2)).sum(1) / doc_len.to(h_doc.dtype()).unsqueeze(1);
  // eq. 10: attention over attention s = alpha^T beta (padded document positions have alpha = 0)
  o.s = torch::bmm(o.alpha, o.beta.unsqueeze(2)).squeeze(2);
  return o;
}

torch::Tensor sum_attention(const torch::Tensor& s, const torch::Tensor& cand_mask) {
  // Cui et al. 2017 eq. 11: P(w | D, Q) = sum_{i in I(w, D)} s_i, I(w, D) = the positions of w in D
  return torch::bmm(cand_mask, s.unsqueeze(2)).squeeze(2);
}

// ---------------------------------------------------------------- model
int64_t orthogonal_recurrent_init(torch::nn::Module& cell, const std::string& cell_name) {
  torch::NoGradGuard ng;
  int64_t blocks = 0;
  for (auto& p : cell.named_parameters(/*recurse=*/true)) {
    const std::string& n = p.key();
    if (n != "w_hh" && (n.size() < 5 || n.compare(n.size() - 5, 5, ".w_hh") != 0)) continue;
    torch::Tensor w = p.value();
    const int64_t H = w.dim() == 2 ? w.size(1) : 0;
    if (H == 0 || w.size(0) % H != 0)
      throw UserError("model.recurrent_init = orthogonal: the recurrent matrix " + n + " of cell '" + cell_name +
                      "' is not [gates x hidden, hidden]; set model.recurrent_init to \"cell\"");
    // Cui et al. 2017 (AoA Reader), section 4.2 "Experimental Setups", hidden layer: the GRUs'
    // internal (recurrent) weights are random orthogonal matrices (Saxe et al. 2013); one per
    // gate block U_r, U_z, U_n (LSTM: U_i, U_f, U_g, U_o).
    for (int64_t g = 0; g < w.size(0) / H; ++g) {
      torch::Tensor block = w.narrow(0, g * H, H);
      torch::nn::init::orthogonal_(block);
      ++blocks;
    }
  }
  if (blocks == 0)
    throw UserError("model.recurrent_init = orthogonal: cell '" + cell_name +
                    "' has no recurrent matrix w_hh to initialise (the AoA Reader's orthogonal initialisation is "
                    "defined for GRU-like cells); set model.recurrent_init to \"cell\"");
  return blocks;
}

ClozeReaderImpl::ClozeReaderImpl(const json& m, int64_t vocab, int64_t pad, bool is_modified) {
  const ModelOptions mo = read_model_options(m);
  const int64_t E = mo.embed;
  modified = is_modified;
  dropout = mo.dropout;
  // One embedding shared by document and query (Cui et al. 2017).
  embed = register_module("embed", padded_embedding(vocab, E, pad));
  // CRU paper eq. 16: e(x) = concat[W_e x, freq(x), CoQ(x)], x in D (document side only):
  // the document encoder reads E + 2 inputs with the M-AoA Reader; the query side is unchanged.
  doc_encoder = register_module("doc_encoder", Bidirectional(m, E + (modified ? 2 : 0)));
  query_encoder = register_module("query_encoder", Bidirectional(m, E));
  const RecurrentInit init = m.contains("recurrent_init")
                                 ? enum_from_json<RecurrentInit>(m.at("recurrent_init"), "model.recurrent_init")
                                 : ClozeOptions{}.recurrent_init;
  if (init == RecurrentInit::Orthogonal) {
    const std::string cell = m.value("cell", std::string("?"));
    for (auto* enc : {&doc_encoder, &query_encoder})
      for (auto* dir : {&(*enc)->fwd, &(*enc)->bwd})
        for (auto& c : *dir) orthogonal_recurrent_init(*c, cell);
  }
}

ClozeReaderImpl::Output ClozeReaderImpl::forward(const ClozeBatch& b, StepContext& ctx) {
  auto drop = [&](const torch::Tensor& t) { return dropout_if(t, dropout, is_training()); };
  auto ed = drop(embed->forward(b.doc));  // [Td, B, E]
  auto eq = drop(embed->forward(b.query));
  if (modified) ed = torch::cat({ed, b.features.to(ed.dtype())}, 2);  // eq. 16
  auto fopts = torch::TensorOptions().dtype(torch::kFloat32).device(b.doc.device());
  // eqs. 17-18: h_s(x) = [forward RNN(e(x)); backward RNN(e(x))], any registered cell
  ctx.token_mask = length_mask(b.doc_len, b.doc.size(0), fopts).squeeze(2);
  auto hd = doc_encoder->forward(ed, b.doc_len, ctx).output.transpose(0, 1);  // [B, Td, 2H]
  ctx.token_mask = length_mask(b.query_len, b.query.size(0), fopts).squeeze(2);
  auto hq = query_encoder->forward(eq, b.query_len, ctx).output.transpose(0, 1);  // [B, Tq, 2H]
  ctx.token_mask = torch::Tensor();
  Output o;
  o.aoa = attention_over_attention(hd, hq, b.doc_len, b.query_len);
  o.prob = sum_attention(o.aoa.s, b.cand_mask.to(o.aoa.s.dtype()));
  return o;
}

// ---------------------------------------------------------------- task
namespace {

// -log P(answer), summed or averaged; a probability of 0 (the answer absent from the
// document) is clamped to 1e-12 instead of giving an infinite loss.
torch::Tensor nll_of(const torch::Tensor& prob, const torch::Tensor& answer, bool sum) {
  auto p = prob.gather(1, answer.unsqueeze(1)).squeeze(1).clamp_min(1e-12);
  auto l = -torch::log(p);
  return sum ? l.sum() : l.mean();
}

// argmax over the real candidates
torch::Tensor predict(const torch::Tensor& prob, const torch::Tensor& valid) {
  return prob.masked_fill(valid.logical_not(), -1.0).argmax(1);
}

}  // namespace

ClozeTask::ClozeTask(const json& cfg, const std::string& run_dir) : cfg_(cfg) {
  const TrainingOptions tr = read_training_options(cfg.at("training"));
  o_ = cloze_option_table().read(cfg);
  batch_ = tr.batch;
  const DatasetLocation loc = resolve_dataset(read_dataset_options(cfg.at("dataset")));
  if (const std::string why = format_task_error(loc.format, "cloze"); !why.empty())
    throw UserError("dataset '" + loc.path + "': " + why);
  data_ = load_cbt_dir(loc.path);
  if (auto saved = saved_run_vocab(run_dir)) {
    vocab_ = *saved;
    if (vocab_.size() < 2 || vocab_.symbol(kPad) != "<pad>")
      throw UserError(join_path(run_dir, "vocab") + ": not a cloze vocabulary (id 1 is not <pad>)");
  } else {
    vocab_ = cloze_vocab(data_.train, o_.lowercase, o_.min_freq, o_.max_vocab, o_.blank == ClozeBlank::Token,
                         o_.tokenizer, o_.locale);
  }
  for (auto& e : data_.train) train_.push_back(encode_cloze(e, vocab_, o_.lowercase, o_.tokenizer, o_.locale));
  for (auto& e : data_.valid) valid_.push_back(encode_cloze(e, vocab_, o_.lowercase, o_.tokenizer, o_.locale));
  for (auto& e : data_.test) test_.push_back(encode_cloze(e, vocab_, o_.lowercase, o_.tokenizer, o_.locale));
  model_ = ClozeReader(cfg.at("model"), static_cast<int64_t>(vocab_.size()), kPad, o_.reader == ClozeReaderKind::MAoa);
  order_.start(static_cast<int64_t>(train_.size()), static_cast<uint64_t>(tr.seed), "questions");
}

const std::vector<ClozeExample>& ClozeTask::examples(const std::string& n) const {
  return split_named(n, data_.train, data_.valid, data_.test);
}

const std::vector<ClozeItem>& ClozeTask::items(const std::string& n) const {
  return split_named(n, train_, valid_, test_);
}

bool ClozeTask::has_split(const std::string& s) const {
  return (s == "valid" && !valid_.empty()) || (s == "test" && !test_.empty());
}

std::string ClozeTask::cell_name() const { return resolved<std::string>(cfg_.at("model"), "model", "cell"); }

StepResult ClozeTask::train_step() {
  model_->train();
  const std::vector<int64_t> idx = order_.next(batch_);
  const int64_t n = static_cast<int64_t>(idx.size());
  std::vector<const ClozeItem*> its;
  for (int64_t i : idx) its.push_back(&train_[static_cast<size_t>(i)]);
  auto b = make_cloze_batch(its, kPad, device_);
  b.index = idx;
  StepContext ctx;
  ctx.step = train_step_index();
  ctx.loss_units = static_cast<double>(n);
  auto out = model_->forward(b, ctx);
  auto loss = nll_of(out.prob, b.answer, false);
  StepResult r;
  r.task_loss = loss.item<double>();
  torch::Tensor total = add_embedding_l2(loss, model_->embed->weight, o_.embed_l2);
  if (ctx.extra_loss.defined()) total = total + ctx.extra_loss;
  r.loss = total;
  r.units = n;
  r.metrics["accuracy"] = predict(out.prob, b.cand_valid).eq(b.answer).to(torch::kFloat64).mean().item<double>();
  for (auto& [k, v] : ctx.metrics) r.metrics[k] = v.first / std::max<int64_t>(v.second, 1);
  {  // 3 x (both encoders over their padded batches + M, the softmaxes and s: ~4 Td Tq 2H per question)
    const double Td = static_cast<double>(b.doc.size(0)), Tq = static_cast<double>(b.query.size(0));
    const double B = static_cast<double>(n), H2 = static_cast<double>(model_->doc_encoder->output_size());
    r.flops = 3.0 * (model_->doc_encoder->flops_per_step() * Td * B + model_->query_encoder->flops_per_step() * Tq * B +
                     4.0 * Td * Tq * H2 * B);
  }
  return r;
}

EvalResult ClozeTask::evaluate(const std::string& split) {
  const auto& its = items(split);
  if (its.empty()) throw UserError("the " + split + " split is empty");
  const int64_t N = static_cast<int64_t>(its.size());
  EvalScope es(*model_);
  // batches of similar document lengths: less padding, the same result (masks)
  const auto order = order_by_length(N, [&](int64_t i) { return its[static_cast<size_t>(i)].doc.size(); });
  double loss_sum = 0;
  int64_t correct = 0, base = 0;
  for (int64_t p = 0; p < N; p += o_.eval_batch) {
    std::vector<const ClozeItem*> bi;
    for (int64_t k = p; k < std::min(N, p + o_.eval_batch); ++k)
      bi.push_back(&its[static_cast<size_t>(order[static_cast<size_t>(k)])]);
    auto b = make_cloze_batch(bi, kPad, device_);
    StepContext ctx;
    auto out = model_->forward(b, ctx);
    loss_sum += nll_of(out.prob, b.answer, true).item<double>();
    correct += predict(out.prob, b.cand_valid).eq(b.answer).sum().item<int64_t>();
    for (auto* it : bi) base += it->freq_baseline == it->answer;
  }
  EvalResult r;
  r.units = N;
  r.metrics["loss"] = loss_sum / static_cast<double>(N);
  r.metrics["accuracy"] = static_cast<double>(correct) / static_cast<double>(N);
  r.metrics["freq_baseline_accuracy"] = static_cast<double>(base) / static_cast<double>(N);
  return r;
}

}  // namespace cs
