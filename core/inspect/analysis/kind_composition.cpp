// Composition weights of the MZU M-functions (MZU paper eqs. 6-14).
#include <algorithm>
#include <regex>

#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "util/error.h"

namespace cs {

// MZU paper eqs. 6 (sat), 7-9 (gcn), 11-14 (cap): the weights the cell records.
MatrixSet composition_weights(Task& task, const std::string& text, int64_t position, int layer) {
  auto enc = encode_nonempty(task, text);
  const int64_t T = static_cast<int64_t>(enc.ids.size());
  if (position < 0) position = T + position;
  if (position < 0 || position >= T)
    throw UserError("character index out of range (the text has " + std::to_string(T) + ")");
  Probe p = probe_ids(task, enc.ids);
  const std::string pre = layer_of(p, layer);
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
  const std::string kind =
      ms.composition == "sat" ? "self-attention matrix softmax(QK^T/sqrt(d_z)) (eq. 6; row i attends to column j)"
      : ms.composition == "gcn"
          ? "normalised adjacency D^-1/2 (W + I) D^-1/2 (eqs. 7-9)"
          : "coupling coefficients c_ij = softmax_j(b_ij) of input zone i to output capsule j, per routing iteration (eqs. 11-14)";
  ms.title = "Composition weights at character " + std::to_string(position) + " ('" + ms.character + "')";
  ms.caption = "MZU composition (" + ms.composition + "): " + kind + " of each M-function at character " +
               std::to_string(position) + " ('" + ms.character + "').";
  return ms;
}

namespace {
AnalysisResult run_composition(const AnalysisKind& kind, const AnalysisRequest& req) {
  auto t = load_for(kind, req.runs[0], req.checkpoint);
  MatrixSet ms = composition_weights(*t, text_or_default(req, *t), req.position, req.layer);
  return result_of(std::move(ms));
}
}  // namespace

AnalysisKind composition_kind() {
  AnalysisKind k;
  k.name = "composition";
  k.title = "Composition weights";
  k.help = "sat attention / gcn adjacency / cap coupling per routing iteration at a character (MZU eqs. 6-14)";
  k.caption =
      "Composition weights of each M-function at the chosen character: sat: softmax(QK^T/sqrt(d_z)) (eq. 6); gcn: the "
      "normalised adjacency D^-1/2 (W+I) D^-1/2 (eqs. 7-9); cap: coupling coefficients c_ij of input zone i to output "
      "capsule j at every routing iteration (eqs. 11-14).";
  k.tasks = {"char_lm"};
  k.cells = {"sat_mzu", "gcn_mzu", "cap_mzu"};
  k.inputs.text = k.inputs.position = k.inputs.layer = true;
  k.run = run_composition;
  return k;
}

}  // namespace cs
