// Issue #7 analyses (see analyses.h, ANALYSIS_NOTES.md).
#include "analysis/analyses.h"

#include <torch/nn/functional.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "cells/cell.h"
#include "data/text_tokenize.h"
#include "data/utf8.h"
#include "tasks/char_lm.h"
#include "tasks/classify.h"
#include "tasks/word_lm.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "analysis/csv_text.h"
#include "util/error.h"

namespace cs {

namespace {
namespace F = torch::nn::functional;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

using analysis_text::num;
using analysis_text::csv_field;

json jnum(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string run_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return basename_of(d);
}

// Scoped eval mode + no grad.
struct EvalScope {
  torch::nn::Module& m;
  bool was;
  torch::NoGradGuard ng;
  explicit EvalScope(torch::nn::Module& mod) : m(mod), was(mod.is_training()) { m.eval(); }
  ~EvalScope() {
    if (was) m.train();
  }
};

// The text as the task's tokens (display form) and ids.
struct Encoded {
  std::vector<std::string> tokens;  // display labels
  std::vector<int32_t> ids;
};

Encoded encode_text(Task& task, const std::string& text) {
  Encoded e;
  if (auto* c = dynamic_cast<CharLMTask*>(&task)) {
    for (auto& s : utf8_symbols(text)) {
      e.ids.push_back(c->corpus().vocab.id(s));
      e.tokens.push_back(display_symbol(s));
    }
  } else if (auto* w = dynamic_cast<WordLMTask*>(&task)) {
    std::istringstream ss(text);
    for (std::string t; ss >> t;) {
      const int32_t id = w->corpus().vocab.id(t);
      e.ids.push_back(id);
      e.tokens.push_back(id == Vocab::kUnkId ? std::string(Vocab::kUnk) : t);
    }
  } else if (auto* s = dynamic_cast<SentenceTask*>(&task)) {
    // the run's tokenizer rules; a word the vocabulary lacks is tried lower-cased (runs
    // with dataset.lowercase = true only hold lower-case words)
    TextTokenizeOptions to;
    to.lowercase = false;
    for (auto& t : tokenize_words(text, to)) {
      int32_t id = s->vocab().id(t);
      std::string shown = t;
      if (id == Vocab::kUnkId) {
        std::string l = t;
        for (auto& ch : l) ch = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
        id = s->vocab().id(l);
        shown = l;
      }
      e.ids.push_back(id);
      e.tokens.push_back(id == Vocab::kUnkId ? std::string(Vocab::kUnk) : shown);
    }
  } else {
    throw UserError("task '" + task.name() + "' is not supported by this analysis");
  }
  if (e.ids.empty()) throw UserError("the text is empty");
  return e;
}

// Sentence task: a batch of token-id sequences (label 0) as the model's input.
SentenceBatch sentence_batch(SentenceTask& s, const std::vector<std::vector<int32_t>>& seqs) {
  SentenceTask::Split sp;
  std::vector<int64_t> idx;
  for (size_t i = 0; i < seqs.size(); ++i) {
    sp.tokens.push_back(seqs[i].empty() ? std::vector<int32_t>{0} : seqs[i]);
    sp.aspect.push_back({0});
    sp.labels.push_back(0);
    sp.hard.push_back(0);
    idx.push_back(static_cast<int64_t>(i));
  }
  return s.make_batch(sp, idx);
}

// Run the task's model over `ids` (batch 1, eval mode, zero state) with a probe.
Probe probe_ids(Task& task, const std::vector<int32_t>& ids) {
  Probe probe;
  StepContext ctx;
  ctx.probe = &probe;
  ctx.stepwise = true;
  auto x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).view({-1, 1});
  if (auto* c = dynamic_cast<CharLMTask*>(&task)) {
    auto& net = c->net();
    EvalScope es(*net);
    auto states = net->stack->initial_state(1, torch::TensorOptions());
    net->forward(x, states, ctx);
  } else if (auto* w = dynamic_cast<WordLMTask*>(&task)) {
    auto& net = w->net();
    EvalScope es(*net);
    auto states = net->initial_state(1, torch::TensorOptions());
    net->forward(x, states, ctx);
  } else if (auto* s = dynamic_cast<SentenceTask*>(&task)) {
    auto& net = s->net();
    EvalScope es(*net);
    auto b = sentence_batch(*s, {ids});
    net->forward(b, ctx);
  } else {
    throw UserError("task '" + task.name() + "' is not supported by this analysis");
  }
  return probe;
}

// Keys of a probe whose name (the last path component) is in `names`.
std::vector<std::string> keys_named(const Probe& p, const std::set<std::string>& names) {
  std::vector<std::string> out;
  for (auto& [k, v] : p.series) {
    auto slash = k.rfind('/');
    if (names.count(slash == std::string::npos ? k : k.substr(slash + 1))) out.push_back(k);
  }
  return out;
}

// "l<N>/" prefix of the requested layer (layer < 0 counts from the top), from the probe's keys.
std::string layer_of(const Probe& p, int layer, const std::string& needs) {
  int n = 0;
  std::regex re("^l([0-9]+)/");
  for (auto& [k, v] : p.series) {
    std::smatch m;
    if (std::regex_search(k, m, re)) n = std::max(n, std::stoi(m[1].str()) + 1);
  }
  if (n == 0) throw UserError("the model records nothing for this analysis");
  int l = layer < 0 ? n + layer : layer;
  if (l < 0 || l >= n)
    throw UserError("layer " + std::to_string(layer) + " out of range (the model has " + std::to_string(n) + " layers)");
  (void)needs;
  return "l" + std::to_string(l) + "/";
}

// "task" of a config: {"name": ...} when resolved, a plain string in a hand-written one.
std::string task_name_of(const json& cfg) {
  if (!cfg.contains("task")) return "";
  const auto& t = cfg["task"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("name") && t["name"].is_string()) return t["name"].get<std::string>();
  return "";
}

std::string primary_metric_of(const json& cfg) {
  const std::string tn = task_name_of(cfg);
  return tn == "char_lm" ? "bpc" : tn == "word_lm" ? "ppl" : "accuracy";
}

std::string task_cell(Task& task) {
  if (auto* c = dynamic_cast<CharLMTask*>(&task)) return c->config()["model"].value("cell", "");
  return "";
}

}  // namespace

// ------------------------------------------------------------------ result types
json SeriesSet::to_json() const {
  json s = json::array();
  for (auto& e : series) {
    json xs = json::array(), ys = json::array(), es = json::array();
    for (double v : e.x) xs.push_back(jnum(v));
    for (double v : e.y) ys.push_back(jnum(v));
    for (double v : e.yerr) es.push_back(jnum(v));
    json o = {{"name", e.name}, {"x", xs}, {"y", ys}};
    if (!e.yerr.empty()) o["yerr"] = es;
    s.push_back(o);
  }
  json j = {{"title", title}, {"x_label", x_label}, {"y_label", y_label}, {"caption", caption},
            {"style", style}, {"series", s}};
  if (bin_width > 0) j["bin_width"] = bin_width;
  if (marker_step >= 0) j["marker_step"] = marker_step;
  return j;
}

std::string SeriesSet::to_csv() const {
  bool err = false;
  for (auto& s : series) err = err || !s.yerr.empty();
  std::string o = "series," + csv_field(x_label.empty() ? "x" : x_label) + "," + csv_field(y_label.empty() ? "y" : y_label) +
                  (err ? ",yerr" : "") + "\n";
  for (auto& s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      o += csv_field(s.name) + "," + num(s.x[i]) + "," + num(s.y[i]);
      if (err) o += "," + (i < s.yerr.size() ? num(s.yerr[i]) : std::string());
      o += "\n";
    }
  return o;
}

json TextTable::to_json() const {
  return {{"title", title}, {"caption", caption}, {"columns", columns}, {"rows", rows}};
}

std::string TextTable::to_csv() const {
  std::string o;
  for (size_t i = 0; i < columns.size(); ++i) o += (i ? "," : "") + csv_field(columns[i]);
  o += "\n";
  for (auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) o += (i ? "," : "") + csv_field(r[i]);
    o += "\n";
  }
  return o;
}

json MatrixSet::to_json() const {
  json ps = json::array();
  for (auto& p : panels) {
    json j = p.matrix.to_json();
    j["title"] = p.title;
    j["m_function"] = p.m_function;
    j["depth"] = p.depth;
    if (p.iteration >= 0) j["iteration"] = p.iteration;
    ps.push_back(j);
  }
  return {{"title", title},       {"caption", caption},   {"composition", composition}, {"character", character},
          {"position", position}, {"iterations", iterations}, {"panels", ps}};
}

std::string MatrixSet::to_csv() const {
  std::string o = "panel,m_function,depth,iteration,row,column,value\n";
  for (auto& p : panels)
    for (int64_t r = 0; r < p.matrix.rows(); ++r)
      for (int64_t c = 0; c < p.matrix.cols(); ++c)
        o += csv_field(p.title) + "," + p.m_function + "," + std::to_string(p.depth) + "," +
             (p.iteration >= 0 ? std::to_string(p.iteration) : std::string()) + "," +
             csv_field(p.matrix.row_labels[static_cast<size_t>(r)]) + "," + csv_field(p.matrix.col_labels[static_cast<size_t>(c)]) +
             "," + num(p.matrix.at(r, c)) + "\n";
  return o;
}

json ChannelGrid::to_json() const {
  json bl = json::array();
  for (auto& ch : blocks) {
    json a = json::array();
    for (auto& [b, e] : ch) a.push_back({b, e});
    bl.push_back(a);
  }
  return {{"tokens", tokens}, {"attention", attention.to_json()}, {"in_degree", in_degree},
          {"blocks", bl},     {"block_size", block_size},         {"caption", caption}};
}

std::string ChannelGrid::to_csv() const {
  std::string o = "channel,token_index,token,attention,in_degree,block\n";
  for (int64_t k = 0; k < attention.rows(); ++k) {
    const auto& bl = blocks[static_cast<size_t>(k)];
    for (int64_t t = 0; t < attention.cols(); ++t) {
      int64_t blk = -1;
      for (size_t b = 0; b < bl.size(); ++b)
        if (t >= bl[b].first && t < bl[b].second) blk = static_cast<int64_t>(b);
      o += std::to_string(k + 1) + "," + std::to_string(t) + "," + csv_field(tokens[static_cast<size_t>(t)]) + "," +
           num(attention.at(k, t)) + "," + std::to_string(in_degree[static_cast<size_t>(k)][static_cast<size_t>(t)]) + "," +
           std::to_string(blk) + "\n";
    }
  }
  return o;
}

json LengthBuckets::to_json() const {
  json a = json::array();
  for (auto& k : buckets)
    a.push_back({{"label", k.label}, {"lo", k.lo}, {"hi", k.hi}, {"sequences", k.sequences}, {"units", k.units},
                 {metric, jnum(k.value)}});
  return {{"run", run}, {"metric", metric}, {"length_unit", length_unit}, {"split", split}, {"buckets", a}};
}

std::string LengthBuckets::to_csv() const {
  std::string o = "run,bucket,lo,hi,sequences,units," + metric + "\n";
  for (auto& k : buckets)
    o += csv_field(run) + "," + csv_field(k.label) + "," + std::to_string(k.lo) + "," + std::to_string(k.hi) + "," +
         std::to_string(k.sequences) + "," + std::to_string(k.units) + "," + num(k.value) + "\n";
  return o;
}

void finish_buckets(LengthBuckets& b) {
  for (auto& k : b.buckets) {
    if (b.metric == "accuracy") k.value = k.sequences > 0 ? k.sum / static_cast<double>(k.sequences) : kNaN;
    else if (k.units <= 0) k.value = kNaN;
    else if (b.metric == "ppl") k.value = std::exp(k.sum / static_cast<double>(k.units));
    else k.value = k.sum / static_cast<double>(k.units) / std::log(2.0);
  }
}

std::vector<int64_t> default_edges_for(const std::string& task) {
  if (task == "char_lm") return default_length_edges();
  return {0, 10, 20, 30, 40, 50, 60, 80};
}

// ------------------------------------------------------------------ checkpoints
std::vector<CheckpointInfo> list_checkpoints(const std::string& run_dir) {
  RunStore store(run_dir);
  std::vector<CheckpointInfo> out;
  for (auto s : store.checkpoint_steps()) {
    CheckpointInfo c;
    c.id = "step_" + std::to_string(s);
    c.step = s;
    c.label = "step " + std::to_string(s);
    out.push_back(c);
  }
  RunSummary sum;
  bool has_sum = file_exists(store.path("summary.json"));
  if (has_sum) sum = store.read_summary();
  const std::string cdir = store.checkpoint_dir();
  if (file_exists(join_path(cdir, "last.pt"))) {
    CheckpointInfo c;
    c.id = "last";
    c.is_last = true;
    c.step = has_sum ? sum.step : -1;
    c.label = "last" + (c.step >= 0 ? " (step " + std::to_string(c.step) + ")" : std::string());
    for (auto& o : out)
      if (o.step == c.step) o.is_last = true;
    out.push_back(c);
  }
  if (file_exists(join_path(cdir, "best.pt"))) {
    CheckpointInfo c;
    c.id = "best";
    c.is_best = true;
    c.step = has_sum && sum.has_best ? sum.best_step : -1;
    c.label = "best" + (c.step >= 0 ? " (step " + std::to_string(c.step) + ")" : std::string());
    for (auto& o : out)
      if (o.step == c.step && o.step >= 0 && !o.is_best && o.id.rfind("step_", 0) == 0) {
        o.is_best = true;
        o.label += " (best)";
      }
    out.push_back(c);
  }
  return out;
}

std::unique_ptr<Task> load_checkpoint_task(const std::string& run_dir, const std::string& id) {
  std::string which = id.empty() ? "best" : id;
  if (which.rfind("step_", 0) == 0) which = which.substr(5);
  if (which != "best" && which != "last" &&
      (which.empty() || which.find_first_not_of("0123456789") != std::string::npos))
    throw UserError("checkpoint must be best, last, a step number or step_N; got '" + id + "'");
  return load_run_task(run_dir, which);
}

// ------------------------------------------------------------------ composition weights
// MZU paper eqs. 6 (sat), 7-9 (gcn), 11-14 (cap): the weights the cell records.
MatrixSet composition_weights(CharLMTask& task, const std::string& text, int64_t position, int layer) {
  auto enc = encode_text(task, text);
  const int64_t T = static_cast<int64_t>(enc.ids.size());
  if (position < 0) position = T + position;
  if (position < 0 || position >= T) throw UserError("character index out of range (the text has " + std::to_string(T) + ")");
  Probe p = probe_ids(task, enc.ids);
  const std::string pre = layer_of(p, layer, "composition");
  std::regex re("^" + pre + "(dt([0-9]+)/)?(attn|adj|coupling)_(h|g)$");
  MatrixSet ms;
  ms.position = position;
  ms.character = enc.tokens[static_cast<size_t>(position)];
  for (auto& [k, v] : p.series) {
    std::smatch m;
    if (!std::regex_match(k, m, re)) continue;
    const int depth = m[2].matched ? std::stoi(m[2].str()) : 0;
    const std::string what = m[3], mf = m[4];
    ms.composition = what == "attn" ? "sat" : what == "adj" ? "gcn" : "cap";
    const int64_t D = static_cast<int64_t>(v.size()) / T;  // records per step (shared transitions)
    auto w = v[static_cast<size_t>(position * D + D - 1)].to(torch::kFloat64);
    std::string mname = mf == "h" ? "M_h (candidate)" : "M_g (gate)";
    auto make = [&](const torch::Tensor& mat, const std::string& rowp, const std::string& colp) {
      auto a = mat.contiguous();
      LabeledMatrix lm;
      for (int64_t r = 0; r < a.size(0); ++r) lm.row_labels.push_back(rowp + std::to_string(r + 1));
      for (int64_t c = 0; c < a.size(1); ++c) lm.col_labels.push_back(colp + std::to_string(c + 1));
      lm.values.assign(a.data_ptr<double>(), a.data_ptr<double>() + a.numel());
      return lm;
    };
    if (what == "coupling") {
      auto c = w.select(1, 0);  // [iters, N, J]
      ms.iterations = static_cast<int>(c.size(0));
      for (int64_t it = 0; it < c.size(0); ++it) {
        MatrixPanel pn;
        pn.m_function = mf;
        pn.depth = depth;
        pn.iteration = static_cast<int>(it);
        pn.title = mname + (depth ? ", depth " + std::to_string(depth) : std::string()) + ", routing iteration " +
                   std::to_string(it + 1);
        pn.matrix = make(c.select(0, it), "zone ", "capsule ");
        pn.matrix.caption = pn.title;
        ms.panels.push_back(pn);
      }
    } else {
      MatrixPanel pn;
      pn.m_function = mf;
      pn.depth = depth;
      pn.title = mname + (depth ? ", depth " + std::to_string(depth) : std::string());
      pn.matrix = make(w.select(0, 0), "zone ", "zone ");
      pn.matrix.caption = pn.title;
      ms.panels.push_back(pn);
    }
  }
  if (ms.panels.empty())
    throw UserError("this run's cell records no composition weights (needs an MZU cell with M-functions)");
  std::stable_sort(ms.panels.begin(), ms.panels.end(), [](const MatrixPanel& a, const MatrixPanel& b) {
    if (a.depth != b.depth) return a.depth < b.depth;
    if (a.m_function != b.m_function) return a.m_function == "h";
    return a.iteration < b.iteration;
  });
  const std::string kind = ms.composition == "sat"   ? "self-attention matrix softmax(QK^T/sqrt(d_z)) (eq. 6; row i attends to column j)"
                           : ms.composition == "gcn" ? "normalised adjacency D^-1/2 (W + I) D^-1/2 (eqs. 7-9)"
                                                     : "coupling coefficients c_ij = softmax_j(b_ij) of input zone i to output capsule j, per routing iteration (eqs. 11-14)";
  ms.title = "Composition weights at character " + std::to_string(position) + " ('" + ms.character + "')";
  ms.caption = "MZU composition (" + ms.composition + "): " + kind + " of each M-function at character " +
               std::to_string(position) + " ('" + ms.character + "').";
  return ms;
}

// ------------------------------------------------------------------ MC-RNN channel attention
// MC-RNN paper Fig. 3: a_t^k (eq. 5) per token and channel, with m_t^k (eq. 1).
ChannelGrid channel_attention(Task& task, const std::string& text, int layer) {
  auto enc = encode_text(task, text);
  const int64_t T = static_cast<int64_t>(enc.ids.size());
  Probe p = probe_ids(task, enc.ids);
  const std::string pre = layer_of(p, layer, "channel_attention");
  std::string key;
  for (auto& [k, v] : p.series)
    if (k.rfind(pre, 0) == 0 && k.size() >= 17 && k.substr(k.size() - 17) == "channel_attention") key = k;
  if (key.empty()) throw UserError("layer " + pre.substr(0, pre.size() - 1) + " is not an MC-RNN cell (no channel attention)");
  const std::string base = key.substr(0, key.size() - 17);
  auto a = p.stacked(key).to(torch::kFloat64);  // [T', 1, K]
  auto m = p.stacked(base + "in_degree");       // [T', K]
  if (a.size(0) != T) throw UserError("unexpected channel-attention record (bidirectional encoder?)");
  a = a.reshape({T, -1}).t().contiguous();  // [K, T]
  m = m.reshape({T, -1}).t().contiguous();
  const int64_t K = a.size(0);
  ChannelGrid g;
  g.tokens = enc.tokens;
  g.block_size = K + 1;
  for (int64_t k = 0; k < K; ++k) g.attention.row_labels.push_back("channel " + std::to_string(k + 1));
  g.attention.col_labels = enc.tokens;
  g.attention.values.assign(a.data_ptr<double>(), a.data_ptr<double>() + a.numel());
  auto ma = m.accessor<int64_t, 2>();
  for (int64_t k = 0; k < K; ++k) {
    std::vector<int64_t> row;
    std::vector<std::pair<int64_t, int64_t>> bl;
    for (int64_t t = 0; t < T; ++t) {
      row.push_back(ma[k][t]);
      if (t == 0 || ma[k][t] == 1) bl.push_back({t, t + 1});
      else bl.back().second = t + 1;
    }
    g.in_degree.push_back(row);
    g.blocks.push_back(bl);
  }
  g.caption = "MC-RNN channel attention a_t^k (eq. 5) for every token t (x) and channel k (y); boxes: the blocks of "
              "each channel, where the in-degree m_t^k (eq. 1) restarts at 1; MC-RNN paper Fig. 3.";
  g.attention.caption = g.caption;
  return g;
}

// ------------------------------------------------------------------ length buckets
namespace {

void check_split_name(const std::string& split) {
  if (split != "train" && split != "valid" && split != "test") throw UserError("unknown split '" + split + "' (train, valid, test)");
}

}  // namespace

LengthBuckets metric_by_length(Task& task, const std::string& split, const std::vector<int64_t>& edges_in) {
  check_split_name(split);
  auto edges = edges_in.empty() ? default_edges_for(task.name()) : edges_in;
  auto mk = make_buckets(edges);
  LengthBuckets out;
  out.split = split;
  for (auto& k : mk) {
    MetricBucket b;
    b.label = k.label;
    b.lo = k.lo;
    b.hi = k.hi;
    out.buckets.push_back(b);
  }
  auto bucket_of = [&](int64_t len) -> MetricBucket* {
    for (auto& b : out.buckets)
      if (len > b.lo && len <= b.hi) return &b;
    return nullptr;
  };
  if (auto* c = dynamic_cast<CharLMTask*>(&task)) {
    // MZU paper Fig. 2: lines of the split by character count
    auto bs = bpc_by_length(*c, split, edges);
    out.metric = "bpc";
    out.length_unit = "characters";
    for (size_t i = 0; i < bs.size(); ++i) {
      out.buckets[i].sequences = bs[i].sequences;
      out.buckets[i].units = bs[i].chars;
      out.buckets[i].sum = bs[i].nll;
    }
  } else if (auto* w = dynamic_cast<WordLMTask*>(&task)) {
    // MC-RNN paper Fig. 4 (language model): sentences = the tokens up to and including each
    // <eos>; bucketed by their word count (without <eos>); every token of the span is scored.
    const auto& co = w->corpus();
    const auto& ids = split == "valid" ? co.valid : split == "test" ? co.test : co.train;
    // streams of 70 tokens, 10 in parallel (the stream layout changes only the carried state)
    std::vector<float> per;
    {
      EvalScope es(*w->net());
      w->nll_of(ids, 10, nullptr, &per);
    }
    const int32_t eos = co.vocab.id("<eos>");
    out.metric = "ppl";
    out.length_unit = "tokens";
    size_t start = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] != eos) continue;
      const size_t b = std::max<size_t>(start, 1);  // position 0 has no prediction
      const int64_t words = static_cast<int64_t>(i - start);
      if (words > 0) {
        if (auto* k = bucket_of(words)) {
          for (size_t j = b; j <= i; ++j) k->sum += per[j];
          k->units += static_cast<int64_t>(i + 1 - b);
          k->sequences += 1;
        }
      }
      start = i + 1;
    }
  } else if (auto* s = dynamic_cast<SentenceTask*>(&task)) {
    // MC-RNN paper Fig. 4 / CRU: accuracy per sentence length (tokens)
    if (!s->has_split(split)) throw UserError("this run has no '" + split + "' split");
    const auto& sp = s->split(split);
    out.metric = "accuracy";
    out.length_unit = "tokens";
    auto& net = s->net();
    EvalScope es(*net);
    const int64_t n = static_cast<int64_t>(sp.tokens.size());
    for (int64_t i0 = 0; i0 < n; i0 += 64) {
      std::vector<int64_t> idx;
      for (int64_t i = i0; i < std::min(n, i0 + 64); ++i) idx.push_back(i);
      auto b = s->make_batch(sp, idx);
      StepContext ctx;
      auto logits = net->forward(b, ctx);
      auto pred = logits.size(1) == 1 ? (logits.squeeze(1) > 0).to(torch::kInt64) : logits.argmax(1);
      auto pa = pred.contiguous();
      for (size_t j = 0; j < idx.size(); ++j) {
        const auto ex = static_cast<size_t>(idx[j]);
        if (auto* k = bucket_of(static_cast<int64_t>(sp.tokens[ex].size()))) {
          k->sequences += 1;
          k->units += 1;
          k->sum += pa[static_cast<int64_t>(j)].item<int64_t>() == sp.labels[ex] ? 1.0 : 0.0;
        }
      }
    }
  } else {
    throw UserError("length buckets need a char_lm, word_lm, classify or absa run");
  }
  finish_buckets(out);
  return out;
}

// ------------------------------------------------------------------ gates and zones
namespace {
const std::set<std::string> kGateNames = {"gate", "reset", "forget", "output_gate"};

Probe probe_for_stats(Task& task, const std::string& text) {
  if (auto* s = dynamic_cast<SentenceTask*>(&task)) {
    if (text == "train" || text == "valid" || text == "test") {
      // the first 64 sentences of the split, as one batch
      const auto& sp = s->split(text);
      std::vector<std::vector<int32_t>> seqs(sp.tokens.begin(), sp.tokens.begin() + static_cast<long>(std::min<size_t>(64, sp.tokens.size())));
      if (seqs.empty()) throw UserError("split '" + text + "' is empty");
      Probe probe;
      StepContext ctx;
      ctx.probe = &probe;
      ctx.stepwise = true;
      auto& net = s->net();
      EvalScope es(*net);
      net->forward(sentence_batch(*s, seqs), ctx);
      return probe;
    }
  }
  return probe_ids(task, encode_text(task, text).ids);
}
}  // namespace

std::vector<GateSaturation> gate_saturation(Task& task, const std::string& text) {
  Probe p = probe_for_stats(task, text);
  std::vector<GateSaturation> out;
  for (auto& k : keys_named(p, kGateNames)) {
    auto v = p.stacked(k).to(torch::kFloat64).reshape({-1});
    GateSaturation g;
    g.key = k;
    g.count = v.numel();
    if (g.count > 0) {
      g.below = (v < 0.1).sum().item<double>() / static_cast<double>(g.count);
      g.above = (v > 0.9).sum().item<double>() / static_cast<double>(g.count);
    }
    out.push_back(g);
  }
  if (out.empty()) throw UserError("this run's cells record no gates (RNN?)");
  return out;
}

SeriesSet gate_histograms(Task& task, const std::string& text, int bins) {
  if (bins < 2 || bins > 1000) throw UserError("bins must be between 2 and 1000");
  Probe p = probe_for_stats(task, text);
  SeriesSet s;
  s.title = "Gate value histograms";
  s.x_label = "gate value";
  s.y_label = "fraction of values";
  s.style = "bars";
  s.bin_width = 1.0 / bins;
  std::string sat;
  for (auto& k : keys_named(p, kGateNames)) {
    auto v = p.stacked(k).to(torch::kFloat64).reshape({-1});
    auto h = torch::histc(v, bins, 0.0, 1.0).to(torch::kFloat64);
    const double n = static_cast<double>(v.numel());
    Series e;
    e.name = k;
    for (int b = 0; b < bins; ++b) {
      e.x.push_back((b + 0.5) / bins);
      e.y.push_back(n > 0 ? h[b].item<double>() / n : kNaN);
    }
    s.series.push_back(e);
    const double lo = n > 0 ? (v < 0.1).sum().item<double>() / n : kNaN, hi = n > 0 ? (v > 0.9).sum().item<double>() / n : kNaN;
    sat += (sat.empty() ? "" : "; ") + k + ": " + num(std::round(lo * 1000) / 10) + "% < 0.1, " +
           num(std::round(hi * 1000) / 10) + "% > 0.9";
  }
  if (s.series.empty()) throw UserError("this run's cells record no gates (RNN?)");
  s.caption = "Histogram over [0,1] (" + std::to_string(bins) +
              " bins) of every gate value the cells record on the text (GRU/CRU: candidate weight 1-z and reset r; "
              "LSTM: input, forget, output; MZU: gate g). Saturation: " + sat + ".";
  return s;
}

std::map<std::string, double> mean_dzone(Task& task, const std::string& text) {
  Probe p = probe_for_stats(task, text);
  std::map<std::string, double> out;
  for (auto& k : keys_named(p, {"dzone"})) {
    auto d = p.stacked(k).to(torch::kFloat64);  // [T, B, M]
    const int64_t M = d.size(-1);
    auto mean = d.reshape({-1, M}).mean(0);
    const std::string pre = k.substr(0, k.size() - 5);  // "l0/" (or "l0/base/", "fwd/l0/")
    // M-functions in recording order: per depth, M_h then M_g (those the cell has)
    std::vector<std::string> names;
    bool mh = p.has(pre + "zones_h"), mg = p.has(pre + "zones_g");
    const int per_depth = (mh ? 1 : 0) + (mg ? 1 : 0);
    for (int64_t i = 0; i < M; ++i) {
      std::string nm = per_depth == 2 ? (i % 2 == 0 ? "M_h" : "M_g") : (mh ? "M_h" : "M_g");
      const int64_t depth = per_depth > 0 ? i / per_depth : i;
      out[pre + nm + (depth > 0 ? " depth " + std::to_string(depth) : std::string())] = mean[i].item<double>();
    }
  }
  if (out.empty()) throw UserError("this run's cells record no zone disagreement (needs an MZU cell with M-functions)");
  return out;
}

// ------------------------------------------------------------------ CRU Table 5
TextTable prefix_predictions(SentenceTask& task, const std::string& sentence) {
  if (task.name() != "classify") throw UserError("the prefix table needs a classify run");
  auto enc = encode_text(task, sentence);
  std::vector<std::vector<int32_t>> prefixes;
  for (size_t i = 1; i <= enc.ids.size(); ++i) prefixes.emplace_back(enc.ids.begin(), enc.ids.begin() + static_cast<long>(i));
  auto& net = task.net();
  EvalScope es(*net);
  StepContext ctx;
  auto logits = net->forward(sentence_batch(task, prefixes), ctx).to(torch::kFloat64);
  torch::Tensor prob;
  if (logits.size(1) == 1) {
    auto p1 = torch::sigmoid(logits.squeeze(1));
    prob = torch::stack({1 - p1, p1}, 1);
  } else {
    prob = torch::softmax(logits, 1);
  }
  const auto& labels = task.labels();
  TextTable t;
  t.title = "Predictions for every prefix";
  t.columns = {"prefix", "words", "prediction", "probability"};
  for (size_t i = 0; i < prefixes.size(); ++i) {
    auto row = prob[static_cast<int64_t>(i)];
    const int64_t c = row.argmax().item<int64_t>();
    std::string pre;
    for (size_t j = 0; j <= i; ++j) pre += (j ? " " : "") + enc.tokens[j];
    t.rows.push_back({pre, std::to_string(i + 1), c < static_cast<int64_t>(labels.size()) ? labels[static_cast<size_t>(c)] : std::to_string(c),
                      num(std::round(row[c].item<double>() * 10000) / 10000)});
  }
  t.caption = "CRU paper Table 5: the class the model predicts for each prefix w_1..w_i of the sentence, with its "
              "probability (tokens as the run's tokenizer splits them; unknown words are <unk> to the model).";
  return t;
}

// ------------------------------------------------------------------ over training
namespace {
std::vector<CheckpointInfo> history_checkpoints(const std::string& run_dir) {
  std::vector<CheckpointInfo> out;
  for (auto& c : list_checkpoints(run_dir))
    if (c.id.rfind("step_", 0) == 0) out.push_back(c);
  if (out.empty())
    for (auto& c : list_checkpoints(run_dir))
      if (c.id == "last") out.push_back(c);
  if (out.empty()) throw UserError("run '" + run_dir + "' has no checkpoints");
  return out;
}
}  // namespace

namespace {
// One series per key of values(task, text), evaluated at every saved checkpoint (x = step).
std::vector<Series> over_checkpoints(const std::string& run_dir, const std::string& text,
                                     const std::function<std::map<std::string, double>(Task&, const std::string&)>& values) {
  std::map<std::string, Series> by;
  for (auto& c : history_checkpoints(run_dir)) {
    auto task = load_checkpoint_task(run_dir, c.id);
    const std::string t = text.empty() ? default_text(*task) : text;
    for (auto& [k, v] : values(*task, t)) {
      by[k].name = k;
      by[k].x.push_back(static_cast<double>(c.step));
      by[k].y.push_back(v);
    }
  }
  std::vector<Series> out;
  for (auto& [k, v] : by) out.push_back(v);
  return out;
}
}  // namespace

SeriesSet dzone_over_training(const std::string& run_dir, const std::string& text) {
  SeriesSet s;
  s.title = "Zone disagreement over training";
  s.x_label = "step";
  s.y_label = "mean D_zone";
  s.series = over_checkpoints(run_dir, text, [](Task& task, const std::string& t) { return mean_dzone(task, t); });
  s.caption = "Mean zone disagreement D_zone = -mean_ij cos(z_i, z_j) (MZU eq. 18) of each M-function on the text, at "
              "every saved checkpoint (higher = zones more different).";
  return s;
}

SeriesSet gate_saturation_over_training(const std::string& run_dir, const std::string& text) {
  SeriesSet s;
  s.title = "Gate saturation over training";
  s.x_label = "step";
  s.y_label = "fraction of gate values";
  s.series = over_checkpoints(run_dir, text, [](Task& task, const std::string& t) {
    std::map<std::string, double> v;
    for (auto& g : gate_saturation(task, t)) {
      v[g.key + " < 0.1"] = g.below;
      v[g.key + " > 0.9"] = g.above;
    }
    return v;
  });
  s.caption = "Fraction of gate values below 0.1 and above 0.9 (saturated) on the text, at every saved checkpoint.";
  return s;
}

SeriesSet metric_vs_time(const std::vector<std::string>& run_dirs, const std::string& split, const std::string& metric_in) {
  SeriesSet s;
  s.title = "Evaluation metric over training time";
  s.x_label = "training time (s)";
  s.style = "line";
  std::string metric_used;
  for (auto& d : run_dirs) {
    RunStore st(d);
    if (!file_exists(st.path("config.json"))) throw UserError("'" + d + "' is not a run directory (no config.json)");
    const json cfg = st.read_config();
    std::string metric = metric_in;
    if (metric.empty()) metric = primary_metric_of(cfg);
    metric_used = metric;
    Series e;
    const json model = cfg.contains("model") && cfg["model"].is_object() ? cfg["model"] : json::object();
    e.name = model.value("cell", "") + " (" + run_name(d) + ")";
    for (auto& line : st.read_metrics()) {
      auto r = MetricsRecord::from_json(line);
      if (!r.eval || r.split != split) continue;
      auto it = r.values.find(metric);
      if (it == r.values.end()) continue;
      e.x.push_back(r.elapsed);
      e.y.push_back(it->second);
    }
    if (e.x.empty())
      throw UserError("run '" + d + "' has no '" + split + "' evaluations of " + metric +
                      " in metrics.jsonl (the trainer evaluates test only at the end unless training.track_test is set: "
                      "use --split valid, or train with --set training.track_test=true)");
    s.series.push_back(e);
  }
  s.y_label = split + " " + metric_used;
  s.caption = "CRU paper Fig. 4: " + split + " " + metric_used +
              " against elapsed training seconds (metrics.jsonl eval lines), one curve per run.";
  return s;
}

SeriesSet training_curve(const std::string& run_dir, int64_t step) {
  auto s = metric_vs_time({run_dir}, "valid");
  RunStore st(run_dir);
  const json cfg = st.read_config();
  const std::string metric = primary_metric_of(cfg);
  s.series[0].x.clear();
  s.series[0].y.clear();
  for (auto& line : st.read_metrics()) {
    auto r = MetricsRecord::from_json(line);
    auto it = r.values.find(metric);
    if (!r.eval || r.split != "valid" || it == r.values.end()) continue;
    s.series[0].x.push_back(static_cast<double>(r.step));
    s.series[0].y.push_back(it->second);
  }
  s.title = "Training curve";
  s.x_label = "step";
  s.y_label = "valid " + metric;
  s.marker_step = step;
  s.caption = "Validation " + metric + " against training step; the marker is the checkpoint being viewed.";
  return s;
}

// ------------------------------------------------------------------ registry
const std::vector<AnalysisKind>& analysis_kinds() {
  static const std::vector<AnalysisKind> k = {
      {"relevance", "Per-character relevance", "cosine between the candidate at each of the last K characters and every earlier hidden state (MZU Fig. 3a/b)",
       "Relevance r(t, j) = cos(h~_t, h_j): the cosine between the candidate activation at character t (rows: the last K "
       "characters) and the hidden state at every earlier character j (columns) of the same layer, the model run from a "
       "zero state in eval mode (MZU paper Fig. 3a/b). Two runs share one colour scale.",
       "matrix_pair", {"char_lm"}, true, true, false},
      {"zone_relevance", "Zone-specific relevance", "per zone: cosine between zone i at character t and zone i at every earlier character (MZU Fig. 3c)",
       "Zone-specific relevance (Cellscope's definition of MZU paper Fig. 3c, which the paper leaves open): for the chosen "
       "character t and every zone i of the candidate's M-function M_h, cos(z_i at t, z_i at j) for every earlier "
       "character j, where z_i is zone i of eq. 4 (before composition). One row per zone.",
       "matrix", {"char_lm"}, true, false, false},
      {"composition", "Composition weights", "sat attention / gcn adjacency / cap coupling per routing iteration at a character (MZU eqs. 6-14)",
       "Composition weights of each M-function at the chosen character: sat: softmax(QK^T/sqrt(d_z)) (eq. 6); gcn: the "
       "normalised adjacency D^-1/2 (W+I) D^-1/2 (eqs. 7-9); cap: coupling coefficients c_ij of input zone i to output "
       "capsule j at every routing iteration (eqs. 11-14).",
       "matrices", {"char_lm"}, true, false, false},
      {"channel_attention", "MC-RNN channel attention", "channel attention a_t^k per token and channel with each channel's blocks (MC-RNN Fig. 3)",
       "MC-RNN channel attention a_t^k (eq. 5) for every token t (x) and channel k (y), the value printed in each cell; "
       "boxes mark each channel's blocks, where the in-degree m_t^k (eq. 1) restarts at 1 (MC-RNN paper Fig. 3).",
       "grid", {"char_lm", "word_lm"}, true, false, false},
      {"length", "Metric by sequence length", "BPC / perplexity / accuracy per sequence-length bucket with sequence counts (MZU Fig. 2, MC-RNN Fig. 4)",
       "The split evaluated once and its sequences bucketed by length (char_lm: lines by characters, bucket b = (10b, "
       "10(b+1)] and 9 = (90,120] as in MZU Fig. 2; word_lm: sentences by words, perplexity of their tokens incl. <eos>; "
       "classify/absa: examples by tokens, accuracy). Bucket edges are editable.",
       "buckets", {"char_lm", "word_lm", "classify", "absa"}, false, true, false},
      {"gate_histogram", "Gate histograms", "histogram over [0,1] of every gate value on a text, with saturation fractions",
       "Histogram over [0,1] of the gate values the cells record on the text (GRU/CRU: 1-z and r; LSTM: i, f, o; MZU: g); "
       "saturation = fraction below 0.1 / above 0.9.",
       "series", {"char_lm", "word_lm", "classify", "absa"}, true, false, false},
      {"gate_saturation", "Gate saturation over training", "fraction of gate values < 0.1 and > 0.9 at every checkpoint",
       "Fraction of gate values below 0.1 and above 0.9 on the text at every saved checkpoint (step_N).",
       "series", {"char_lm", "word_lm", "classify", "absa"}, true, false, true},
      {"dzone", "Zone disagreement over training", "mean D_zone per M-function at every checkpoint (MZU eq. 18)",
       "Mean zone disagreement D_zone = -mean_ij cos(z_i, z_j) (MZU eq. 18) of every M-function on the text at every "
       "saved checkpoint (step_N).",
       "series", {"char_lm", "word_lm", "classify", "absa"}, true, false, true},
      {"metric_time", "Metric over training time", "evaluation metric vs elapsed training seconds for several runs (CRU Fig. 4)",
       "Evaluation metric (default: the primary metric on the split; the test split needs runs trained with "
       "training.track_test, on in the CRU paper presets, since otherwise test is evaluated only at the end) against "
       "elapsed training seconds, from metrics.jsonl; one curve per run (CRU paper Fig. 4).",
       "series", {"char_lm", "word_lm", "classify", "absa"}, false, true, true},
      {"prefix_table", "Prefix predictions", "predicted label and probability for every prefix of a sentence (CRU Table 5)",
       "The class a classify run predicts for every prefix w_1..w_i of the sentence, with its probability (CRU paper Table 5).",
       "table", {"classify"}, true, false, false},
  };
  return k;
}

const AnalysisKind& analysis_kind(const std::string& name) {
  std::string names;
  for (auto& k : analysis_kinds()) {
    if (k.name == name || (name == "bpc_length" && k.name == "length")) return k;
    names += (names.empty() ? "" : ", ") + k.name;
  }
  throw UserError("unknown analysis '" + name + "' (" + names + ")");
}

json AnalysisResult::to_json() const {
  json j = {{"kind", kind}, {"caption", caption}};
  if (!matrices.empty()) {
    json a = json::array();
    for (size_t i = 0; i < matrices.size(); ++i) {
      json m = matrices[i].to_json();
      m["title"] = i < matrix_titles.size() ? matrix_titles[i] : "";
      a.push_back(m);
    }
    j["matrices"] = a;
    j["scale"] = {shared_min, shared_max};
  }
  if (!matrix_set.panels.empty()) j["composition"] = matrix_set.to_json();
  if (grid.attention.rows() > 0) j["grid"] = grid.to_json();
  if (!buckets.empty()) {
    json a = json::array();
    for (auto& b : buckets) a.push_back(b.to_json());
    j["buckets"] = a;
  }
  if (!series.series.empty()) j["series"] = series.to_json();
  if (!table.columns.empty()) j["table"] = table.to_json();
  return j;
}

std::string AnalysisResult::to_csv() const {
  if (!matrices.empty()) {
    if (matrices.size() == 1) return matrices[0].to_csv();
    // several runs: a "run" column before each block's rows
    std::string o;
    for (size_t i = 0; i < matrices.size(); ++i) {
      std::istringstream ss(matrices[i].to_csv());
      std::string line;
      bool head = true;
      while (std::getline(ss, line)) {
        if (head && i > 0) {
          head = false;
          continue;
        }
        o += (head ? std::string("run") : csv_field(i < matrix_titles.size() ? matrix_titles[i] : std::to_string(i))) + "," + line + "\n";
        head = false;
      }
    }
    return o;
  }
  if (!matrix_set.panels.empty()) return matrix_set.to_csv();
  if (grid.attention.rows() > 0) return grid.to_csv();
  if (!buckets.empty()) {
    std::string o;
    for (size_t i = 0; i < buckets.size(); ++i) {
      auto c = buckets[i].to_csv();
      o += i == 0 ? c : c.substr(c.find('\n') + 1);
    }
    return o;
  }
  if (!series.series.empty()) return series.to_csv();
  if (!table.columns.empty()) return table.to_csv();
  return "";
}

std::string default_text(Task& task) {
  if (auto* c = dynamic_cast<CharLMTask*>(&task)) {
    std::string t;
    const auto& v = c->corpus().valid;
    for (size_t i = 0; i < v.size() && i < 120; ++i) t += c->corpus().vocab.symbol(v[i]);
    return t;
  }
  if (auto* w = dynamic_cast<WordLMTask*>(&task)) {
    std::string t;
    const auto& v = w->corpus().valid;
    for (size_t i = 0; i < v.size() && i < 30; ++i) t += (i ? " " : "") + w->corpus().vocab.symbol(v[i]);
    return t;
  }
  if (auto* s = dynamic_cast<SentenceTask*>(&task)) {
    const auto& sp = s->split(s->has_split("valid") ? "valid" : "test");
    if (sp.tokens.empty()) return "";
    std::string t;
    for (size_t i = 0; i < sp.tokens[0].size(); ++i) t += (i ? " " : "") + s->vocab().symbol(sp.tokens[0][i]);
    return t;
  }
  return "";
}

AnalysisResult run_analysis(const AnalysisRequest& req) {
  const auto& kind = analysis_kind(req.kind);
  if (req.runs.empty()) throw UserError("an analysis needs a run (--run DIR)");
  if (req.runs.size() > 1 && !kind.multi_run) throw UserError("analysis '" + kind.name + "' takes one run");
  AnalysisResult r;
  r.kind = kind.name;
  r.caption = kind.caption;
  auto check_task = [&](Task& t, const std::string& dir) {
    if (std::find(kind.tasks.begin(), kind.tasks.end(), t.name()) == kind.tasks.end()) {
      std::string ts;
      for (auto& n : kind.tasks) ts += (ts.empty() ? "" : ", ") + n;
      throw UserError("analysis '" + kind.name + "' needs a " + ts + " run; '" + dir + "' is a " + t.name() + " run");
    }
  };
  auto load = [&](const std::string& dir) {
    auto t = load_checkpoint_task(dir, req.checkpoint);
    check_task(*t, dir);
    return t;
  };
  if (kind.name == "relevance") {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    std::string text = req.text;
    for (auto& d : req.runs) {
      auto t = load(d);
      if (text.empty()) text = default_text(*t);
      auto m = relevance_map(static_cast<CharLMTask&>(*t), text, req.last_k, req.layer);
      for (double v : m.values)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      r.matrices.push_back(m);
      r.matrix_titles.push_back(task_cell(*t) + " (" + run_name(d) + ")");
    }
    if (std::isfinite(lo)) r.shared_min = lo, r.shared_max = hi;
    r.caption = r.matrices[0].caption;
  } else if (kind.name == "zone_relevance") {
    auto t = load(req.runs[0]);
    auto m = zone_relevance(static_cast<CharLMTask&>(*t), req.text.empty() ? default_text(*t) : req.text, req.position, req.layer);
    r.matrix_titles.push_back(task_cell(*t) + " (" + run_name(req.runs[0]) + ")");
    r.caption = m.caption;
    r.shared_min = -1;
    r.shared_max = 1;
    r.matrices.push_back(m);
  } else if (kind.name == "composition") {
    auto t = load(req.runs[0]);
    r.matrix_set = composition_weights(static_cast<CharLMTask&>(*t), req.text.empty() ? default_text(*t) : req.text,
                                       req.position, req.layer);
    r.caption = r.matrix_set.caption;
  } else if (kind.name == "channel_attention") {
    auto t = load(req.runs[0]);
    r.grid = channel_attention(*t, req.text.empty() ? default_text(*t) : req.text, req.layer);
    r.caption = r.grid.caption;
  } else if (kind.name == "length") {
    for (auto& d : req.runs) {
      auto t = load(d);
      auto b = metric_by_length(*t, req.split, req.edges);
      b.run = run_name(d);
      r.buckets.push_back(b);
    }
    const auto& b0 = r.buckets[0];
    const std::string what = b0.metric == "bpc" ? "BPC of its lines (newline excluded), by length in characters"
                             : b0.metric == "ppl" ? "perplexity of its sentences (tokens incl. <eos>), by length in words"
                                                  : "accuracy of its examples, by length in tokens";
    std::string edges;
    for (auto& k : b0.buckets) edges += (edges.empty() ? "" : ", ") + k.label + " = (" + std::to_string(k.lo) + "," + std::to_string(k.hi) + "]";
    r.caption = "The " + b0.split + " split evaluated once: " + what + "; buckets " + edges +
                "; n = sequences per bucket (MZU paper Fig. 2" + (b0.metric == "bpc" ? "" : ", MC-RNN paper Fig. 4") + ").";
  } else if (kind.name == "gate_histogram") {
    auto t = load(req.runs[0]);
    r.series = gate_histograms(*t, req.text.empty() ? default_text(*t) : req.text, req.bins);
    r.caption = r.series.caption;
  } else if (kind.name == "gate_saturation" || kind.name == "dzone") {
    {
      auto t = load(req.runs[0]);  // checks the task (and that a checkpoint exists)
    }
    r.series = kind.name == "dzone" ? dzone_over_training(req.runs[0], req.text)
                                    : gate_saturation_over_training(req.runs[0], req.text);
    r.caption = r.series.caption;
  } else if (kind.name == "metric_time") {
    r.series = metric_vs_time(req.runs, req.split, req.metric);
    r.caption = r.series.caption;
  } else if (kind.name == "prefix_table") {
    auto t = load(req.runs[0]);
    r.table = prefix_predictions(static_cast<SentenceTask&>(*t), req.text.empty() ? default_text(*t) : req.text);
    r.caption = r.table.caption;
  }
  return r;
}

}  // namespace cs
