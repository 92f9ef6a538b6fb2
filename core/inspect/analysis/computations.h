// The computations behind the analysis kinds (kinds.h), callable directly on a loaded
// task or a run directory: tests, the bench, and any caller that wants one plain result
// without an AnalysisRequest. Each is defined in its kind's file, kind_<name>.cpp.
// Every probe runs the model in eval mode, no grad, from a zero state, batch 1.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/results.h"

namespace cs {

class Task;

// Per-character relevance (MZU paper Fig. 3a/b): for each of the last K characters t of
// `text`, and every character j of the text, cos(candidate activation at t, hidden state
// at j) for j < t (NaN for j >= t). Rows: the last K characters; columns: all characters.
// `layer` -1 = the top layer. (kind_relevance.cpp)
LabeledMatrix relevance_map(Task& task, const std::string& text, int64_t last_k, int layer = -1);

// Zone-specific relevance (Fig. 3c; our definition, documented in ANALYSIS_NOTES.md):
// for character t (index into the text; -1 = last), one row per zone i of the candidate's
// M-function: cos(zone i at t, zone i at j) for j < t. Needs a cell that records "zones_h".
// (kind_zone_relevance.cpp)
LabeledMatrix zone_relevance(Task& task, const std::string& text, int64_t t = -1, int layer = -1);

// Composition weights for character `position` (-1 = last) of `text` (MZU char-LM runs):
// sat attention matrices (zones x zones), gcn normalised adjacency D^-1/2 (W+I) D^-1/2,
// cap coupling coefficients c_ij (input zones x output capsules) for every routing
// iteration. (kind_composition.cpp)
MatrixSet composition_weights(Task& task, const std::string& text, int64_t position = -1, int layer = -1);

// MC-RNN channel-attention grid of `text` (char_lm: characters; word_lm: words
// separated by spaces, unknown words -> <unk>). The layer must be an MC-RNN cell.
// (kind_channel_attention.cpp)
ChannelGrid channel_attention(Task& task, const std::string& text, int layer = -1);
// The same for the decoder of a seq2seq run: text "SOURCE ||| TARGET" or a source alone.
ChannelGrid decoder_channel_attention(Task& task, const std::string& text, int layer = -1);

// Metric per length bucket of a split (char_lm: lines; word_lm: sentences = <eos>-ended
// lines; classify/absa: examples by token count); empty edges = default_edges_for(task).
// (kind_length.cpp)
LengthBuckets metric_by_length(Task& task, const std::string& split, const std::vector<int64_t>& edges);

// Gate statistics on `text` (LMs) or the first sentences of a split (classify/absa,
// text = split name): one histogram over [0,1] per gate series the cells record
// (GRU/CRU "gate" = 1 - z, "reset"; LSTM "gate" = input, "forget", "output_gate";
// MZU "gate"). y = fraction of values per bin. Caption lists the saturation fractions.
// (kind_gate_histogram.cpp)
SeriesSet gate_histograms(Task& task, const std::string& text, int bins = 20);
struct GateSaturation {
  std::string key;              // probe key, e.g. "l0/gate"
  double below = 0, above = 0;  // fraction of values < 0.1 and > 0.9
  int64_t count = 0;
};
// (kind_gate_saturation.cpp)
std::vector<GateSaturation> gate_saturation(Task& task, const std::string& text);
// Gate saturation (fraction < 0.1 and > 0.9 per gate key) at every checkpoint (x = step).
SeriesSet gate_saturation_over_training(const std::string& run_dir, const std::string& text);

// Mean zone disagreement D_zone (MZU eq. 18) per M-function on `text`: key -> mean.
// (kind_dzone.cpp)
std::map<std::string, double> mean_dzone(Task& task, const std::string& text);
// Mean D_zone per M-function at every checkpoint of the run (x = step), on `text`.
SeriesSet dzone_over_training(const std::string& run_dir, const std::string& text);

// CRU Fig. 4: eval accuracy (metric) vs elapsed training seconds, one series per run
// (named after the run's cell and directory), from metrics.jsonl. (kind_metric_time.cpp)
SeriesSet metric_vs_time(const std::vector<std::string>& run_dirs, const std::string& split = "test",
                         const std::string& metric = "");  // "" = the run's primary metric

// CRU Table 5: for every prefix w_1..w_i of `sentence`, the predicted label and its
// probability (a classify run). (kind_prefix_table.cpp)
TextTable prefix_predictions(Task& task, const std::string& sentence);

}  // namespace cs
