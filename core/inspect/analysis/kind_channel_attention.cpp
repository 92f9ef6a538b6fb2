// MC-RNN channel attention with the block structure of each channel (MC-RNN paper Fig. 3).
#include <algorithm>

#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "util/error.h"

namespace cs {

// MC-RNN paper Fig. 3: a_t^k (eq. 5) per token and channel, with m_t^k (eq. 1).
ChannelGrid channel_attention(Task& task, const std::string& text, int layer) {
  auto enc = encode_nonempty(task, text);
  const int64_t T = static_cast<int64_t>(enc.ids.size());
  Probe p = probe_ids(task, enc.ids);
  const std::string pre = layer_of(p, layer);
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

namespace {
AnalysisResult run(const AnalysisKind& kind, const AnalysisRequest& req) {
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
  k.tasks = {"char_lm", "word_lm"};
  k.inputs.text = k.inputs.layer = true;
  k.run = run;
  return k;
}

}  // namespace cs
