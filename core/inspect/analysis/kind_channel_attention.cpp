// MC-RNN channel attention with the block structure of each channel (MC-RNN paper Fig. 3).
#include <algorithm>

#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "tasks/seq2seq.h"
#include "util/error.h"

namespace cs {

// MC-RNN paper Fig. 3: a_t^k (eq. 5) per token and channel, with m_t^k (eq. 1).
namespace {
// The grid of the probed sequence `tokens` (one MC-RNN stack's records in `p`).
ChannelGrid channel_grid(const Probe& p, const std::vector<std::string>& tokens, int layer);
}  // namespace

ChannelGrid channel_attention(Task& task, const std::string& text, int layer) {
  auto enc = encode_nonempty(task, text);
  Probe p = probe_ids(task, enc.ids);
  return channel_grid(p, enc.tokens, layer);
}

namespace {
ChannelGrid channel_grid(const Probe& p, const std::vector<std::string>& tokens, int layer) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  const std::string pre = layer_of(p, layer);
  std::string key;
  for (auto& [k, v] : p.series)
    if (k.rfind(pre, 0) == 0 && k.size() >= 17 && k.substr(k.size() - 17) == "channel_attention") key = k;
  if (key.empty())
    throw UserError("layer " + pre.substr(0, pre.size() - 1) + " is not an MC-RNN cell (no channel attention)");
  const std::string base = key.substr(0, key.size() - 17);
  auto a = p.stacked(key).to(torch::kFloat64);  // [T', 1, K]
  auto m = p.stacked(base + "in_degree");       // [T', K]
  if (a.size(0) != T) throw UserError("unexpected channel-attention record (bidirectional encoder?)");
  a = a.reshape({T, -1}).t().contiguous();  // [K, T]
  m = m.reshape({T, -1}).t().contiguous();
  const int64_t K = a.size(0);
  ChannelGrid g;
  g.tokens = tokens;
  g.block_size = K + 1;
  for (int64_t k = 0; k < K; ++k) g.attention.row_labels.push_back("channel " + std::to_string(k + 1));
  g.attention.col_labels = tokens;
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
  g.caption =
      "MC-RNN channel attention a_t^k (eq. 5) for every token t (x) and channel k (y); boxes: the blocks of "
      "each channel, where the in-degree m_t^k (eq. 1) restarts at 1; MC-RNN paper Fig. 3.";
  g.attention.caption = g.caption;
  return g;
}
}  // namespace

// The decoder of a seq2seq run: `text` is "SOURCE ||| TARGET" (the decoder reads TARGET with
// teacher forcing) or a SOURCE alone (it reads its own greedy decode); "" = the first valid pair.
ChannelGrid decoder_channel_attention(Task& task, const std::string& text, int layer) {
  auto* s2s = dynamic_cast<Seq2SeqTask*>(&task);
  if (!s2s) throw UserError("the decoder's channel attention needs a seq2seq run; this run's task is " + task.name());
  std::string source = text, target;
  if (text.empty()) {
    const auto& ex = s2s->examples("valid");
    if (ex.empty()) throw UserError("the run's valid split is empty; give a text");
    source = ex.front().source;
    target = ex.front().target;
  } else if (auto bar = text.find("|||"); bar != std::string::npos) {
    source = text.substr(0, bar);
    target = text.substr(bar + 3);
  }
  Probe p;
  auto toks = s2s->probe_decoder(source, target, p);
  ChannelGrid g = channel_grid(p, toks, layer);
  g.caption = "Decoder: " + g.caption + " Columns: the decoder's input tokens (<s> and the target's pieces).";
  g.attention.caption = g.caption;
  return g;
}

namespace {
AnalysisResult run_channel_attention(const AnalysisKind& kind, const AnalysisRequest& req) {
  auto t = load_for(kind, req.runs[0], req.checkpoint);
  ChannelGrid g = channel_attention(*t, text_or_default(req, *t), req.layer);
  return result_of(std::move(g));
}
}  // namespace

AnalysisKind channel_attention_kind() {
  AnalysisKind k;
  k.name = "channel_attention";
  k.title = "MC-RNN channel attention";
  k.help = "channel attention a_t^k per token and channel with each channel's blocks (MC-RNN Fig. 3)";
  k.caption =
      "MC-RNN channel attention a_t^k (eq. 5) for every token t (x) and channel k (y), the value printed in each cell; "
      "boxes mark each channel's blocks, where the in-degree m_t^k (eq. 1) restarts at 1 (MC-RNN paper Fig. 3).";
  k.tasks = {"char_lm", "word_lm", "seq2seq"};  // seq2seq: the encoder over the text (a source)
  k.cells = {"mcrnn"};
  k.inputs.text = k.inputs.layer = true;
  k.run = run_channel_attention;
  return k;
}

namespace {
AnalysisResult run_decoder(const AnalysisKind& kind, const AnalysisRequest& req) {
  auto t = load_for(kind, req.runs[0], req.checkpoint);
  return result_of(decoder_channel_attention(*t, req.text, req.layer));
}
}  // namespace

AnalysisKind channel_attention_decoder_kind() {
  AnalysisKind k;
  k.name = "channel_attention_decoder";
  k.title = "MC-RNN channel attention (seq2seq decoder)";
  k.help =
      "the decoder's channel attention a_t^k per target token; text 'SOURCE ||| TARGET' or a source (greedy decode)";
  k.caption =
      "MC-RNN channel attention a_t^k (eq. 5) of a seq2seq decoder for every target token t (x) and channel k (y); "
      "text: 'SOURCE ||| TARGET' (teacher forcing) or a source alone (the decoder reads its greedy decode); the "
      "encoder's grid is the channel_attention kind on the source.";
  k.tasks = {"seq2seq"};
  k.cells = {"mcrnn"};
  k.inputs.text = k.inputs.layer = true;
  k.run = run_decoder;
  return k;
}

}  // namespace cs
