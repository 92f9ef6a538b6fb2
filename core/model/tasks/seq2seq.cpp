#include "tasks/seq2seq.h"

#include <torch/nn/functional.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cells/registry.h"
#include "config/common_options.h"
#include "data/seq2seq_data.h"
#include "data/tokenizer.h"
#include "data/text_metrics.h"
#include "tasks/eval_scope.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace F = torch::nn::functional;

namespace {

constexpr int32_t kPad = SubwordVocab::pad_id, kBos = SubwordVocab::bos_id, kEos = SubwordVocab::eos_id;

// ---- base64 (RFC 4648), for the SentencePiece model protos in run_dir/vocab (a JSON file)
const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
std::string b64_encode(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kB64[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}
std::string b64_decode(const std::string& in, const std::string& what) {
  int val[256];
  std::fill(val, val + 256, -1);
  for (int i = 0; i < 64; ++i) val[uint8_t(kB64[i])] = i;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    if (ch == '=') break;
    const int v = val[uint8_t(ch)];
    if (v < 0) throw UserError(what + ": not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

std::vector<int32_t> cut(std::vector<int32_t> v, int64_t n) {
  if (static_cast<int64_t>(v.size()) > n) v.resize(static_cast<size_t>(n));
  return v;
}

// Every tensor of every state, rows picked by `idx` (beam reordering).
void select_rows(std::vector<State>& states, const torch::Tensor& idx) {
  for (auto& s : states)
    for (auto& t : s)
      if (t.defined() && t.dim() > 0) t = t.index_select(0, idx.to(t.device()));
}

}  // namespace

std::map<std::string, double> text_metrics(const std::vector<std::string>& hyps, const std::vector<std::string>& refs,
                                           const std::string& prefix) {
  std::map<std::string, double> m;
  if (hyps.empty()) return m;
  const BleuScore b = corpus_bleu(hyps, refs);
  const RougeScore r = corpus_rouge(hyps, refs);
  m[prefix + "bleu"] = b.bleu;
  m[prefix + "rouge1"] = r.rouge1;
  m[prefix + "rouge2"] = r.rouge2;
  m[prefix + "rougeL"] = r.rougeL;
  return m;
}

Seq2SeqTask::Seq2SeqTask(const json& cfg, const std::string& run_dir)
    : Seq2SeqTask(cfg, load_seq2seq_dataset(read_seq2seq_data_options(cfg.at("dataset"))), run_dir) {}

Seq2SeqTask::Seq2SeqTask(const json& cfg, Seq2SeqSplits sp, const std::string& run_dir) : cfg_(cfg) {
  o_ = seq2seq_option_table().read(cfg);
  const TrainingOptions tr = read_training_options(cfg.at("training"));
  batch_ = tr.batch;
  const std::string what = "dataset '" + cfg.at("dataset").value("name", std::string("?")) + "'";
  if (sp.train.empty()) throw UserError(what + ": the train split has no pairs");
  if (sp.valid.empty()) throw UserError(what + ": the valid split has no pairs");

  if (auto j = saved_vocab_json(run_dir, "cellscope-seq2seq-subword", "seq2seq vocabulary")) {
    const std::string vocab_path = join_path(run_dir, "vocab");
    src_vocab_ = std::make_unique<SubwordVocab>(
        SubwordVocab::from_serialized(b64_decode(j->at("source").get<std::string>(), vocab_path)));
    tgt_vocab_ = std::make_unique<SubwordVocab>(
        SubwordVocab::from_serialized(b64_decode(j->at("target").get<std::string>(), vocab_path)));
  } else {
    // SentencePiece vocabularies trained on the training split only.
    SubwordOptions so;
    so.model_type = to_string(o_.subword);
    std::vector<std::string> src, tgt;
    for (auto& p : sp.train) {
      src.push_back(p.source);
      tgt.push_back(p.target);
    }
    if (o_.shared_vocab) {
      std::vector<std::string> both = src;
      both.insert(both.end(), tgt.begin(), tgt.end());
      so.vocab_size = o_.source_vocab_size;
      so.option = "dataset.source_vocab_size";
      src_vocab_ = std::make_unique<SubwordVocab>(SubwordVocab::train(both, so));
      tgt_vocab_ = std::make_unique<SubwordVocab>(*src_vocab_);
    } else {
      so.vocab_size = o_.source_vocab_size;
      so.option = "dataset.source_vocab_size";
      src_vocab_ = std::make_unique<SubwordVocab>(SubwordVocab::train(src, so));
      so.vocab_size = o_.target_vocab_size;
      so.option = "dataset.target_vocab_size";
      tgt_vocab_ = std::make_unique<SubwordVocab>(SubwordVocab::train(tgt, so));
    }
  }
  auto convert = [&](const std::vector<TextPair>& in, std::vector<Example>& out) {
    out.reserve(in.size());
    for (auto& p : in) {
      Example e;
      e.source = p.source;
      e.target = p.target;
      e.src = cut(src_vocab_->encode(p.source), o_.max_source_len);
      if (e.src.empty()) e.src.push_back(kEos);  // an empty source still has one position to attend to
      e.tgt = cut(tgt_vocab_->encode(p.target), o_.max_target_len);
      out.push_back(std::move(e));
    }
  };
  convert(sp.train, train_);
  convert(sp.valid, valid_);
  convert(sp.test, test_);
  if (o_.lead_words > 0) {
    lead_words_ = o_.lead_words;
  } else {  // the mean reference length of the training split, in metric tokens
    lead_words_ = default_lead_words(sp.train);
  }
  model_ = Seq2SeqModel(cfg.at("model"), src_vocab_->size(), tgt_vocab_->size(), kPad);
  order_.start(static_cast<int64_t>(train_.size()), static_cast<uint64_t>(tr.seed), "pairs");
}

const std::vector<Seq2SeqTask::Example>& Seq2SeqTask::examples(const std::string& n) const {
  return split_named(n, train_, valid_, test_);
}

bool Seq2SeqTask::has_split(const std::string& s) const {
  return (s == "valid" && !valid_.empty()) || (s == "test" && !test_.empty());
}

int64_t Seq2SeqTask::default_max_decode() const { return o_.max_decode > 0 ? o_.max_decode : o_.max_target_len + 1; }

std::string Seq2SeqTask::cell_name() const { return cfg_.at("model").value("cell", std::string()); }

Seq2SeqTask::Batch Seq2SeqTask::make_batch(const std::vector<const Example*>& ex) const {
  const int64_t B = static_cast<int64_t>(ex.size());
  int64_t S = 1, T = 1;
  for (auto* e : ex) {
    S = std::max<int64_t>(S, static_cast<int64_t>(e->src.size()));
    T = std::max<int64_t>(T, static_cast<int64_t>(e->tgt.size()) + 1);
  }
  auto src = torch::full({S, B}, static_cast<int64_t>(kPad), torch::kInt64);
  auto yin = torch::full({T, B}, static_cast<int64_t>(kPad), torch::kInt64);
  auto yout = torch::full({T, B}, static_cast<int64_t>(kPad), torch::kInt64);
  auto ymask = torch::zeros({T, B}, torch::kFloat32);
  auto len = torch::zeros({B}, torch::kInt64);
  auto sa = src.accessor<int64_t, 2>();
  auto ia = yin.accessor<int64_t, 2>();
  auto oa = yout.accessor<int64_t, 2>();
  auto ma = ymask.accessor<float, 2>();
  auto la = len.accessor<int64_t, 1>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& e = *ex[static_cast<size_t>(b)];
    la[b] = static_cast<int64_t>(e.src.size());
    for (size_t s = 0; s < e.src.size(); ++s) sa[static_cast<int64_t>(s)][b] = e.src[s];
    const int64_t n = static_cast<int64_t>(e.tgt.size());
    ia[0][b] = kBos;
    for (int64_t t = 0; t < n; ++t) {
      ia[t + 1][b] = e.tgt[static_cast<size_t>(t)];
      oa[t][b] = e.tgt[static_cast<size_t>(t)];
    }
    oa[n][b] = kEos;
    for (int64_t t = 0; t <= n; ++t) ma[t][b] = 1.f;
  }
  Batch r;
  r.src = src.to(device_);
  r.src_len = len.to(device_);
  r.y_in = yin.to(device_);
  r.y_out = yout.to(device_);
  r.y_mask = ymask.to(device_);
  return r;
}

torch::Tensor Seq2SeqTask::batch_nll(const Batch& b, StepContext& ctx) {
  // The encoder and decoder see their own token masks (a cell's per-token terms, e.g. MZU eq. 19).
  StepContext ectx;
  ectx.probe = ctx.probe;
  ectx.step = ctx.step;
  ectx.loss_units = ctx.loss_units;
  ectx.token_mask =
      (torch::arange(b.src.size(0), b.src_len.options()).unsqueeze(1) < b.src_len.unsqueeze(0)).to(torch::kFloat32);
  auto enc = model_->encode(b.src, b.src_len, ectx);
  ctx.token_mask = b.y_mask;
  auto st = model_->decoder_initial_state(enc);
  auto logits = model_->decode(b.y_in, enc, st, ctx);
  auto nll = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), b.y_out.reshape({-1}),
                              F::CrossEntropyFuncOptions().reduction(torch::kNone));
  if (ectx.extra_loss.defined()) ctx.add_loss(ectx.extra_loss);
  for (auto& [k, v] : ectx.metrics) ctx.add_metric("encoder/" + k, v.first, v.second);
  return (nll * b.y_mask.reshape({-1})).sum();
}

StepResult Seq2SeqTask::train_step() {
  model_->train();
  const std::vector<int64_t> idx = order_.next(batch_);
  const int64_t n = static_cast<int64_t>(idx.size());
  std::vector<const Example*> ex;
  for (int64_t i : idx) ex.push_back(&train_[static_cast<size_t>(i)]);
  auto b = make_batch(ex);
  const double tokens = b.y_mask.sum().item<double>();
  StepContext ctx;
  ctx.step = train_step_index();
  ctx.loss_units = tokens;
  auto nll = batch_nll(b, ctx) / tokens;  // mean NLL per real target token (</s> included)
  StepResult r;
  r.task_loss = nll.item<double>();
  r.loss = ctx.extra_loss.defined() ? nll + ctx.extra_loss : nll;
  r.units = static_cast<int64_t>(tokens);
  r.metrics["ppl"] = std::exp(r.task_loss);
  for (auto& [k, v] : ctx.metrics) r.metrics[k] = v.first / std::max<int64_t>(v.second, 1);
  {
    const double S = static_cast<double>(b.src.size(0)), T = static_cast<double>(b.y_in.size(0)),
                 B = static_cast<double>(n);
    r.flops =
        3.0 * (model_->encoder_flops_per_token() * S * B + model_->decoder_flops_per_token(b.src.size(0)) * T * B);
  }
  return r;
}

std::vector<std::vector<int32_t>> Seq2SeqTask::greedy(const std::vector<std::vector<int32_t>>& sources,
                                                      int64_t max_len) {
  torch::NoGradGuard ng;
  EvalScope es(*model_);
  std::vector<Example> tmp(sources.size());
  std::vector<const Example*> ex;
  for (size_t i = 0; i < sources.size(); ++i) {
    tmp[i].src = sources[i].empty() ? std::vector<int32_t>{kEos} : sources[i];
    ex.push_back(&tmp[i]);
  }
  auto b = make_batch(ex);
  StepContext ctx;
  auto enc = model_->encode(b.src, b.src_len, ctx);
  const int64_t B = b.src.size(1);
  auto st = model_->decoder_initial_state(enc);
  auto prev =
      torch::full({1, B}, static_cast<int64_t>(kBos), torch::TensorOptions().dtype(torch::kInt64).device(device_));
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(B));
  std::vector<bool> done(static_cast<size_t>(B), false);
  int64_t left = B;
  for (int64_t t = 0; t < max_len && left > 0; ++t) {
    StepContext c;
    auto logits = model_->decode(prev, enc, st, c);  // [1, B, V]
    auto next = logits.argmax(-1);                   // [1, B]
    auto cpu = next.to(torch::kCPU).contiguous();
    const int64_t* p = cpu.data_ptr<int64_t>();
    for (int64_t i = 0; i < B; ++i) {
      if (done[static_cast<size_t>(i)]) continue;
      if (p[i] == kEos) {
        done[static_cast<size_t>(i)] = true;
        --left;
      } else {
        out[static_cast<size_t>(i)].push_back(static_cast<int32_t>(p[i]));
      }
    }
    prev = next;
  }
  return out;
}

std::vector<BeamHypothesis> Seq2SeqTask::beam(const std::vector<int32_t>& source, const BeamSearchOptions& bo) {
  torch::NoGradGuard ng;
  EvalScope es(*model_);
  Example e;
  e.src = source.empty() ? std::vector<int32_t>{kEos} : source;
  auto b = make_batch({&e});
  StepContext ctx;
  auto enc = model_->encode(b.src, b.src_len, ctx);
  auto st = model_->decoder_initial_state(enc);
  BeamSearchOptions o = bo;
  o.bos = kBos;
  o.eos = kEos;
  auto step = [&](const torch::Tensor& prev, const torch::Tensor& parent) {
    if (parent.numel() > 0) select_rows(st, parent);
    const int64_t K = prev.size(0);
    const Seq2SeqEncoded ek = enc.repeat_rows(K);
    StepContext c;
    auto logits = model_->decode(prev.to(device_).unsqueeze(0), ek, st, c);  // [1, K, V]
    return torch::log_softmax(logits[0].to(torch::kFloat64), -1);
  };
  return beam_search(step, o);
}

std::string Seq2SeqTask::beam_text(const std::vector<int32_t>& source, const BeamSearchOptions& bo, double* score) {
  auto hyps = beam(source, bo);
  if (score) *score = hyps.empty() ? 0.0 : hyps.front().score;
  if (hyps.empty()) return "";
  auto toks = hyps.front().tokens;
  if (!toks.empty() && toks.back() == kEos) toks.pop_back();
  return tgt_vocab_->decode(toks);
}

std::string Seq2SeqTask::decode_label(const std::string& split) const {
  if (!beam_decodes(split)) return "greedy";
  char lp[32];
  const double a = o_.length_penalty;
  std::snprintf(lp, sizeof lp, a == std::floor(a) ? "%.1f" : "%g", a);
  return "beam " + std::to_string(o_.beam) + ", lp " + lp;
}

std::map<std::string, double> Seq2SeqTask::lead_metrics(const std::string& split, int64_t max_examples) const {
  const auto& ex = examples(split);
  const size_t n = max_examples > 0 ? std::min(ex.size(), static_cast<size_t>(max_examples)) : ex.size();
  std::vector<std::string> hyps, refs;
  for (size_t i = 0; i < n; ++i) {
    hyps.push_back(lead_baseline(ex[i].source, lead_words_));
    refs.push_back(ex[i].target);
  }
  return text_metrics(hyps, refs, "lead_");
}

EvalResult Seq2SeqTask::evaluate(const std::string& split) {
  const auto& ex = examples(split);
  if (ex.empty()) throw UserError("the " + split + " split is empty");
  torch::NoGradGuard ng;
  EvalScope es(*model_);
  const int64_t N = static_cast<int64_t>(ex.size());
  // Batches of similar source lengths: less padding, the same sums.
  const auto order = order_by_length(N, [&](int64_t i) { return ex[static_cast<size_t>(i)].src.size(); });
  double nll = 0, tokens = 0;
  for (int64_t p = 0; p < N; p += o_.eval_batch) {
    std::vector<const Example*> bx;
    for (int64_t i = p; i < std::min(N, p + o_.eval_batch); ++i)
      bx.push_back(&ex[static_cast<size_t>(order[static_cast<size_t>(i)])]);
    auto b = make_batch(bx);
    StepContext ctx;
    nll += batch_nll(b, ctx).item<double>();
    tokens += b.y_mask.sum().item<double>();
  }
  EvalResult r;
  r.units = static_cast<int64_t>(tokens);
  r.metrics["loss"] = nll / tokens;
  r.metrics["ppl"] = std::exp(nll / tokens);
  // BLEU / ROUGE of greedy decodes of the first training.eval_decode examples (0 = all); of beam
  // decodes (task.beam, task.length_penalty) on the test split with task.test_decode = beam, each
  // pair decoded exactly as `decode` decodes it (beam_text), so the two give the same hypotheses.
  const int64_t D = o_.eval_decode > 0 ? std::min(N, o_.eval_decode) : N;
  r.labels["decode"] = decode_label(split);
  const std::vector<std::string> hyps = decode_texts(split, D);
  std::vector<std::string> refs(static_cast<size_t>(D));
  for (int64_t i = 0; i < D; ++i) refs[static_cast<size_t>(i)] = ex[static_cast<size_t>(i)].target;
  for (auto& [k, v] : text_metrics(hyps, refs)) r.metrics[k] = v;
  ++decodes_[split];
  // The test split's decodes of every pair, for the trainer's test_examples.json (its one reader).
  if (D == N && split == "test") r.sequences = std::make_shared<const SequenceScores>(scored_pairs(split, hyps));
  else if (D < N)
    r.partial = "BLEU and ROUGE of the first " + std::to_string(D) + " of " + std::to_string(N) + " " + split +
                " pairs (training.eval_decode)";
  // The lead baseline on the same examples, logged once per split (the first evaluation).
  bool& logged = split == "test" ? lead_logged_test_ : lead_logged_valid_;
  if (!logged && split != "train") {
    for (auto& [k, v] : lead_metrics(split, D)) r.metrics[k] = v;
    logged = true;
  }
  return r;
}

std::vector<std::string> Seq2SeqTask::decode_texts(const std::string& split, int64_t D) {
  const auto& ex = examples(split);
  D = std::min<int64_t>(D, static_cast<int64_t>(ex.size()));
  torch::NoGradGuard ng;
  EvalScope es(*model_);
  std::vector<std::string> hyps(static_cast<size_t>(std::max<int64_t>(D, 0)));
  if (beam_decodes(split)) {
    BeamSearchOptions bo;
    bo.beam = o_.beam;
    bo.alpha = o_.length_penalty;
    bo.max_length = default_max_decode();
    for (int64_t i = 0; i < D; ++i) hyps[static_cast<size_t>(i)] = beam_text(ex[static_cast<size_t>(i)].src, bo);
    return hyps;
  }
  // Batches of similar source lengths: less padding, the same decodes.
  const auto order = order_by_length(D, [&](int64_t i) { return ex[static_cast<size_t>(i)].src.size(); });
  for (int64_t p = 0; p < D; p += o_.eval_batch) {
    std::vector<std::vector<int32_t>> srcs;
    std::vector<int64_t> idx;
    for (int64_t i = p; i < std::min(D, p + o_.eval_batch); ++i) {
      idx.push_back(order[static_cast<size_t>(i)]);
      srcs.push_back(ex[static_cast<size_t>(idx.back())].src);
    }
    auto outs = greedy(srcs, default_max_decode());
    for (size_t j = 0; j < idx.size(); ++j) hyps[static_cast<size_t>(idx[j])] = tgt_vocab_->decode(outs[j]);
  }
  return hyps;
}

SequenceScores Seq2SeqTask::sequence_scores(const std::string& split) {
  const auto& ex = examples(split);
  if (ex.empty()) throw UserError("the " + split + " split is empty");
  ++decodes_[split];
  return scored_pairs(split, decode_texts(split, static_cast<int64_t>(ex.size())));
}

SequenceScores Seq2SeqTask::scored_pairs(const std::string& split, const std::vector<std::string>& hyps) const {
  const auto& ex = examples(split);
  TORCH_CHECK(hyps.size() == ex.size(), "scored_pairs: expected a hypothesis for each of the ", ex.size(), " ", split,
              " pairs, got ", hyps.size());
  SequenceScores s;
  s.metric = "bleu";
  s.length_unit = "words";
  for (size_t i = 0; i < ex.size(); ++i) {
    ScoredSequence q;
    q.length = static_cast<int64_t>(split_ascii_words(ex[i].source).size());
    q.units = 1;
    q.hypothesis = hyps[i];
    q.reference = ex[i].target;
    s.sequences.push_back(std::move(q));
  }
  return s;
}

void Seq2SeqTask::save_state(torch::serialize::OutputArchive& ar) const {
  ExampleTask::save_state(ar);
  ar.write("lead_logged", torch::tensor(std::vector<int64_t>{lead_logged_valid_, lead_logged_test_}, torch::kInt64));
}

void Seq2SeqTask::load_state(torch::serialize::InputArchive& ar) {
  ExampleTask::load_state(ar);
  torch::Tensor l;
  ar.read("lead_logged", l);
  l = l.contiguous();
  lead_logged_valid_ = l.data_ptr<int64_t>()[0] != 0;
  lead_logged_test_ = l.data_ptr<int64_t>()[1] != 0;
}

std::string Seq2SeqTask::vocab_text() const {
  json j;
  j["format"] = "cellscope-seq2seq-subword";
  j["version"] = 1;
  j["shared"] = o_.shared_vocab;
  j["source"] = b64_encode(src_vocab_->serialized());  // SentencePiece ModelProto bytes
  j["target"] = b64_encode(tgt_vocab_->serialized());
  return j.dump() + "\n";
}

// ---------------------------------------------------------------- inspection (the encoder side)
EncodedText Seq2SeqTask::encode_text(const std::string& text) const {
  EncodedText e;
  e.ids = cut(src_vocab_->encode(text), o_.max_source_len);
  e.tokens = src_vocab_->pieces(e.ids);
  return e;
}

void Seq2SeqTask::probe_sequence(const std::vector<int32_t>& ids, Probe& probe) {
  torch::NoGradGuard ng;
  EvalScope es(*model_);
  Example e;
  e.src = ids;
  auto b = make_batch({&e});
  StepContext ctx;
  ctx.probe = &probe;
  ctx.stepwise = true;
  model_->encode(b.src, b.src_len, ctx);
}

std::vector<std::string> Seq2SeqTask::probe_decoder(const std::string& source, const std::string& target,
                                                    Probe& probe) {
  torch::NoGradGuard ng;
  EvalScope es(*model_);
  Example e;
  e.src = encode_text(source).ids;
  if (e.src.empty()) throw UserError("the source text is empty");
  e.tgt =
      target.empty() ? greedy({e.src}, default_max_decode())[0] : cut(tgt_vocab_->encode(target), o_.max_target_len);
  auto b = make_batch({&e});
  StepContext c0;
  auto enc = model_->encode(b.src, b.src_len, c0);
  auto st = model_->decoder_initial_state(enc);
  StepContext ctx;
  ctx.probe = &probe;
  ctx.stepwise = true;
  model_->decode(b.y_in, enc, st, ctx);
  std::vector<std::string> toks{"<s>"};
  for (auto& p : tgt_vocab_->pieces(e.tgt)) toks.push_back(p);
  return toks;
}

std::string Seq2SeqTask::split_text(const std::string& split, int64_t) const {
  const auto& ex = examples(split);
  if (ex.empty()) throw UserError("the " + split + " split is empty");
  return ex.front().source;
}

std::string Seq2SeqTask::default_analysis_text() const { return valid_.empty() ? "" : valid_.front().source; }

// ---------------------------------------------------------------- registry entry
const OptionTable<Seq2SeqOptions>& seq2seq_option_table() {
  static const auto t = [] {
    OptionTable<Seq2SeqOptions> t("");
    using O = Seq2SeqOptions;
    t.choice("dataset.subword", &O::subword,
             "SentencePiece model type of the subword vocabularies trained on the train split (MC-RNN paper: BPE).");
    t.field(
        "dataset.source_vocab_size", &O::source_vocab_size, 8, 1e6,
        "Source subword vocabulary size, <pad> <unk> <s> </s> included (paper: about 25k joint BPE for IWSLT De-En, 30k Gigaword).");
    t.field("dataset.target_vocab_size", &O::target_vocab_size, 8, 1e6,
            "Target subword vocabulary size (ignored with dataset.shared_vocab).");
    t.field(
        "dataset.shared_vocab", &O::shared_vocab,
        "One vocabulary trained on the sources and targets together (size dataset.source_vocab_size) for both sides.");
    t.field("dataset.max_source_len", &O::max_source_len, 1, 100000,
            "Source subword tokens kept (the rest are cut), in training, evaluation and decoding.");
    t.field(
        "dataset.max_target_len", &O::max_target_len, 1, 100000,
        "Target subword tokens kept in training and evaluation (before </s>); decoding stops at this + 1 unless task.max_decode.");
    t.field("dataset.source_lang", &O::source_lang,
            "Format parallel: the source files' suffix, <split>.<source_lang> (default de).");
    t.field("dataset.target_lang", &O::target_lang, "Format parallel: the target files' suffix (default en).");
    t.field("dataset.source_words", &O::source_words, 1, 100000,
            "Format headlines: the first N words of the body are the source (default 40).");
    t.field("dataset.min_subject_words", &O::min_subject_words, 1, 1000,
            "Format headlines: drop pairs whose cleaned subject is shorter (default 3).");
    t.field("dataset.min_source_words", &O::min_source_words, 1, 100000,
            "Format headlines: drop pairs whose body opening is shorter (default 5).");
    t.field("dataset.lowercase", &O::lowercase,
            "Lower-case sources and targets (default: true for headlines, false for parallel and gigaword).");
    t.choice("dataset.tokenizer", &O::tokenizer,
             std::string("How dataset.lowercase lower-cases: icu = NFC and full Unicode lower-casing (German \u00dcber "
                         "-> \u00fcber), legacy = ASCII letters only, as runs written before this option did (a run "
                         "whose config lacks the key is read as legacy)."));
    t.field("dataset.locale", &O::locale, locale_option_help());
    t.choice(
        "model.architecture", &O::architecture,
        "rnnsearch: Bahdanau et al. (2015), the MC-RNN paper's baseline: bidirectional encoder, additive attention "
        "e_ij = v^T tanh(W s_{i-1} + U h_j), the context c_i fed into the decoder's input, s_0 = tanh(W_s <-h_1), "
        "maxout output; the decoder steps token by token. luong: Luong et al. (2015) general attention after the "
        "decoder (one-directional encoder, zero initial state; the whole target at once in training). The default "
        "stays luong so that runs made before this option load as they were; the paper presets set rnnsearch.");
    t.choice("model.bridge", &O::bridge,
             "rnnsearch: where s_0 = tanh(W_s <-h_1) goes. recurrence: the decoder's output before the first step, "
             "where its recurrence reads it (h_0 of GRU/LSTM/RNN/MZU; for an MC-RNN every node before the sequence, "
             "h_t^k = s_0 for t <= 0, as the paper builds MC-RNN 'following the settings of Baseline-RNN'). output: "
             "only the state's first tensor (an MC-RNN decoder then sees s_0 only as the first attention query), as "
             "runs written before this option. The same for every cell but mcrnn; unused by luong.");
    t.field(
        "model.copy", &O::copy,
        "Pointer-generator (See et al. 2017): mix the output distribution with the attention over the source's "
        "pieces, so that source words can be copied; needs dataset.shared_vocab. Not in the MC-RNN paper (default off).");
    t.field("training.eval_batch", &O::eval_batch, 1, 65536, "Pairs per batch when evaluating and decoding a split.");
    t.field("training.eval_decode", &O::eval_decode, 0, 1e9,
            "Evaluation: BLEU and ROUGE of the decodes of the split's first N pairs (0 = all): greedy, or beam search "
            "on the test split with task.test_decode = beam.");
    t.field("task.beam", &O::beam, 1, 1000,
            "Beam width of `cellscope-cli decode` when --beam is not given, and of the test evaluation with "
            "task.test_decode = beam (MC-RNN paper: 10 for Gigaword, 5 for IWSLT).");
    t.choice("task.test_decode", &O::test_decode,
             "How evaluations of the test split decode for BLEU/ROUGE: greedy (batched, fast), or beam search with "
             "task.beam and task.length_penalty as `cellscope-cli decode` does (the MC-RNN paper's tables: beam 5 "
             "IWSLT, 10 Gigaword). Validation stays greedy. The evaluation line records it as \"decode\".");
    t.field("task.length_penalty", &O::length_penalty, 0, 10,
            "alpha of the length normalisation score = log P / ((5 + |Y|) / 6)^alpha (GNMT); 0 = none.");
    t.field("task.max_decode", &O::max_decode, 0, 100000,
            "Most tokens a decode generates, </s> included (0 = dataset.max_target_len + 1).");
    t.field(
        "task.lead_words", &O::lead_words, 0, 100000,
        "Words of the lead baseline (the first words of the source); 0 = the mean target length of the train split.");
    return t;
  }();
  return t;
}

void register_seq2seq_task(std::vector<TaskInfo>& out) {
  TaskInfo t;
  t.name = "seq2seq";
  t.description =
      "Encoder-decoder with attention (MC-RNN paper: IWSLT De-En BLEU, Gigaword ROUGE); metric: target perplexity";
  t.unit = "tokens";
  t.options = seq2seq_option_table().specs();
  t.check = [](const json& cfg, std::vector<ConfigError>& errs) {
    const std::string cell = resolved<std::string>(cfg.at("model"), "model", "cell");
    if (cell_info(cell).needs_whole_sequence)
      errs.push_back({"model.cell", "the seq2seq decoder runs token by token; cell '" + cell +
                                        "' needs the whole sequence (choose a step-wise cell)"});
    const auto o = seq2seq_option_table().read(cfg);
    if (o.max_decode > 0 && o.max_decode < 2)
      errs.push_back({"task.max_decode", "must be at least 2 (one token and </s>)"});
    if (o.copy && !o.shared_vocab)
      errs.push_back({"model.copy",
                      "the pointer-generator copies source pieces into the output, so it needs one vocabulary "
                      "for both sides: set dataset.shared_vocab to true"});
  };
  t.make = [](const json& cfg, const std::string& run_dir) -> std::unique_ptr<Task> {
    return std::make_unique<Seq2SeqTask>(cfg, run_dir);
  };
  out.push_back(std::move(t));
}

}  // namespace cs
