// Analyses of trained char-LM runs (MZU paper, Figs. 2-3). Core computes plain
// matrices/tables; widgets draw them; the CLI exports them. See ANALYSIS_NOTES.md.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "config/schema.h"
#include "data/utf8.h"  // utf8_symbols: the char-LM's symbols

namespace cs {

class CharLMTask;

// A dense row-major matrix with row/column labels (NaN = no value).
struct LabeledMatrix {
  std::vector<std::string> row_labels, col_labels;
  std::vector<double> values;  // rows x cols
  int64_t rows() const { return static_cast<int64_t>(row_labels.size()); }
  int64_t cols() const { return static_cast<int64_t>(col_labels.size()); }
  double at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols() + c)]; }
  std::string caption;
  json to_json() const;
  std::string to_csv() const;  // first column: row label; header: "row" + column labels
};

// How a symbol is shown as a tick label: space -> "_", newline -> "\n" shown as "⏎", tab -> "⇥".
std::string display_symbol(const std::string& sym);

// Per-character relevance (MZU paper Fig. 3a/b): for each of the last K characters t of
// `text`, and every character j of the text, cos(candidate activation at t, hidden state
// at j) for j < t (NaN for j >= t). Rows: the last K characters; columns: all characters.
// `layer` -1 = the top layer. The model runs step-wise in eval mode from a zero state.
LabeledMatrix relevance_map(CharLMTask& task, const std::string& text, int64_t last_k, int layer = -1);

// Zone-specific relevance (Fig. 3c; our definition, documented in ANALYSIS_NOTES.md):
// for character t (index into the text; -1 = last), one row per zone i of the candidate's
// M-function: cos(zone i at t, zone i at j) for j < t. Needs a cell that records "zones_h".
LabeledMatrix zone_relevance(CharLMTask& task, const std::string& text, int64_t t = -1, int layer = -1);

// BPC by sequence length (MZU paper Fig. 2).
struct LengthBucket {
  std::string label;       // e.g. "9"
  int64_t lo = 0, hi = 0;  // lengths in (lo, hi]
  int64_t sequences = 0, chars = 0;
  double nll = 0;          // nats, summed
  double bpc() const { return chars > 0 ? nll / static_cast<double>(chars) / 0.6931471805599453 : std::numeric_limits<double>::quiet_NaN(); }
};
// The paper's convention: label b covers (10b, 10(b+1)], the last one "9" = (90, 120].
std::vector<int64_t> default_length_edges();
// Buckets from edges e0 < e1 < ... : bucket i covers (e_i, e_{i+1}], labelled e_i / 10.
std::vector<LengthBucket> make_buckets(const std::vector<int64_t>& edges);
// Pure aggregation: per-position NLL (nats) and sequence spans [begin, end) -> buckets.
// Sequences outside every bucket are ignored.
void accumulate_buckets(const std::vector<float>& per_pos, const std::vector<std::pair<size_t, size_t>>& spans,
                        std::vector<LengthBucket>& buckets);
// Lines of an id sequence: spans between newline symbols (the newline itself excluded;
// empty lines skipped).
std::vector<std::pair<size_t, size_t>> line_spans_of(const std::vector<int32_t>& ids, int32_t newline_id);
// Evaluate a split once (state carried, every character scored once) and bucket its lines.
std::vector<LengthBucket> bpc_by_length(CharLMTask& task, const std::string& split, const std::vector<int64_t>& edges);
json buckets_to_json(const std::vector<LengthBucket>& b);
std::string buckets_to_csv(const std::vector<LengthBucket>& b);

}  // namespace cs
