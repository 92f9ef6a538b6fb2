// Histograms of the gate values the cells record, with saturation fractions.
#include <cmath>
#include <limits>

#include "analysis/computations.h"
#include "analysis/csv_text.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "util/error.h"

namespace cs {

using analysis_text::num;

SeriesSet gate_histograms(Task& task, const std::string& text, int bins) {
  if (bins < 2 || bins > 1000) throw UserError("bins must be between 2 and 1000");
  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  Probe p = probe_text_or_split(task, text);
  SeriesSet s;
  s.title = "Gate value histograms";
  s.x_label = "gate value";
  s.y_label = "fraction of values";
  s.style = "bars";
  s.bin_width = 1.0 / bins;
  std::string sat;
  for (auto& k : keys_named(p, gate_names())) {
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
    const double lo = n > 0 ? (v < 0.1).sum().item<double>() / n : kNaN;
    const double hi = n > 0 ? (v > 0.9).sum().item<double>() / n : kNaN;
    sat += (sat.empty() ? "" : "; ") + k + ": " + num(std::round(lo * 1000) / 10) + "% < 0.1, " +
           num(std::round(hi * 1000) / 10) + "% > 0.9";
  }
  if (s.series.empty()) throw UserError("this run's cells record no gates (RNN?)");
  s.caption = "Histogram over [0,1] (" + std::to_string(bins) +
              " bins) of every gate value the cells record on the text (GRU/CRU: candidate weight 1-z and reset r; "
              "LSTM: input, forget, output; MZU: gate g). Saturation: " +
              sat + ".";
  return s;
}

namespace {
AnalysisResult run_gate_histogram(const AnalysisKind& kind, const AnalysisRequest& req) {
  auto t = load_for(kind, req.runs[0], req.checkpoint);
  SeriesSet s = gate_histograms(*t, text_or_default(req, *t), req.bins);
  return result_of(std::move(s));
}
}  // namespace

AnalysisKind gate_histogram_kind() {
  AnalysisKind k;
  k.name = "gate_histogram";
  k.title = "Gate histograms";
  k.help = "histogram over [0,1] of every gate value on a text, with saturation fractions";
  k.caption =
      "Histogram over [0,1] of the gate values the cells record on the text (GRU/CRU: 1-z and r; LSTM: i, f, o; MZU: g); "
      "saturation = fraction below 0.1 / above 0.9.";
  k.tasks = {"char_lm", "word_lm", "classify", "absa"};
  k.inputs.text = k.inputs.bins = true;
  k.run = run_gate_histogram;
  return k;
}

}  // namespace cs
