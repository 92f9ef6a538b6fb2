// The attention-over-attention weights of a cloze reader over one question's document
// (Cui et al. 2017; the CRU paper's M-AoA Reader), drawn as a heatmap: document words
// along x, rows s = alpha^T beta and the column-wise attention alpha averaged over the
// query words.
#include <algorithm>
#include <cmath>

#include "analysis/kinds.h"
#include "tasks/cloze.h"
#include "util/error.h"

namespace cs {

namespace {

std::string short_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

AnalysisResult run_aoa(const AnalysisKind& kind, const AnalysisRequest& req) {
  auto t = load_for(kind, req.runs[0], req.checkpoint);
  // The AoA weights are the reader's own (not a Task inspection method; CLOZE_NOTES.md).
  auto* cz = dynamic_cast<ClozeTask*>(t.get());
  if (!cz) throw UserError("the attention-over-attention view needs a cloze run");
  const int64_t q = req.position < 0 ? 0 : req.position;
  const ClozeAttention a = cz->cloze_attention(req.split, q);
  LabeledMatrix m;
  m.row_labels = {"s = alpha^T beta", "mean_t alpha(t)"};
  const std::string& ans = a.candidates[static_cast<size_t>(a.answer)];
  const std::string& pred = a.candidates[static_cast<size_t>(a.predicted)];
  for (auto& w : a.document) {
    // the answer's occurrences are marked [w], the other candidates' *w
    const bool is_ans = w == ans;
    const bool is_cand = std::find(a.candidates.begin(), a.candidates.end(), w) != a.candidates.end();
    m.col_labels.push_back(is_ans ? "[" + w + "]" : is_cand ? "*" + w : w);
  }
  m.values = a.s;
  m.values.insert(m.values.end(), a.alpha_mean.begin(), a.alpha_mean.end());
  std::string query;
  for (auto& w : a.query) query += (query.empty() ? "" : " ") + w;
  std::string probs;
  for (size_t c = 0; c < a.candidates.size(); ++c)
    probs += (c ? ", " : "") + a.candidates[c] + " " + short_num(a.prob[c]);
  m.caption = "Question " + std::to_string(q) + " of the " + req.split + " split (" + a.source + "): \"" + query +
              "\"; answer " + ans + ", predicted " + pred + (a.predicted == a.answer ? " (correct)" : " (wrong)") +
              ". P(candidate) = " + probs + ".";
  HeatmapSet h;
  h.titles = {run_titles(req)[0]};
  h.shared_min = 0;
  h.shared_max = 0;
  for (double v : m.values) h.shared_max = std::max(h.shared_max, v);
  if (h.shared_max <= 0) h.shared_max = 1;
  h.x_label = "document word ([answer], *candidate)";
  h.y_label = "attention";
  h.value_label = "weight";
  h.few_rows = true;
  const std::string cap = m.caption;
  h.matrices.push_back(std::move(m));
  AnalysisResult r;
  r.caption = cap +
              " Rows: the attention over attention s = alpha^T beta over the document (Cui et al. 2017 eq. 10; "
              "P(w) sums s over w's positions, eq. 11), and the column-wise document attention alpha(t) (eq. 6) "
              "averaged over the query words t (s weights them by beta instead).";
  r.data = std::move(h);
  return r;
}

}  // namespace

AnalysisKind aoa_kind() {
  AnalysisKind k;
  k.name = "aoa";
  k.title = "Attention over attention";
  k.help = "a cloze reader's attention-over-attention weights s over one question's document (AoA / M-AoA Reader)";
  k.caption =
      "For one question (--question N of the split, default 0), the attention over attention s = alpha^T beta over the "
      "document words (Cui et al. 2017), and the column-wise attention alpha averaged over the query words; the answer's "
      "occurrences are marked [w], the other candidates' *w.";
  k.tasks = {"cloze"};
  k.inputs.split = k.inputs.position = true;
  k.colour_map = true;
  k.default_split = "valid";
  k.run = run_aoa;
  return k;
}

}  // namespace cs
