// The class predicted for every prefix of a sentence (CRU paper Table 5).
#include <cmath>

#include "analysis/computations.h"
#include "analysis/csv_text.h"
#include "analysis/kinds.h"
#include "analysis/probing.h"
#include "util/error.h"

namespace cs {

using analysis_text::num;

TextTable prefix_predictions(Task& task, const std::string& sentence) {
  if (task.name() != "classify") throw UserError("the prefix table needs a classify run");
  auto enc = encode_nonempty(task, sentence);
  std::vector<std::vector<int32_t>> prefixes;
  for (size_t i = 1; i <= enc.ids.size(); ++i)
    prefixes.emplace_back(enc.ids.begin(), enc.ids.begin() + static_cast<long>(i));
  const torch::Tensor prob = task.class_probabilities(prefixes);  // [prefixes, classes]
  const auto labels = task.class_names();
  TextTable t;
  t.title = "Predictions for every prefix";
  t.columns = {"prefix", "words", "prediction", "probability"};
  for (size_t i = 0; i < prefixes.size(); ++i) {
    auto row = prob[static_cast<int64_t>(i)];
    const int64_t c = row.argmax().item<int64_t>();
    std::string pre;
    for (size_t j = 0; j <= i; ++j) pre += (j ? " " : "") + enc.tokens[j];
    t.rows.push_back({pre, std::to_string(i + 1),
                      c < static_cast<int64_t>(labels.size()) ? labels[static_cast<size_t>(c)] : std::to_string(c),
                      num(std::round(row[c].item<double>() * 10000) / 10000)});
  }
  t.caption =
      "CRU paper Table 5: the class the model predicts for each prefix w_1..w_i of the sentence, with its "
      "probability (tokens as the run's tokenizer splits them; unknown words are <unk> to the model).";
  return t;
}

namespace {
AnalysisResult run_prefix_table(const AnalysisKind& kind, const AnalysisRequest& req) {
  auto t = load_for(kind, req.runs[0], req.checkpoint);
  TextTable table = prefix_predictions(*t, text_or_default(req, *t));
  return result_of(std::move(table));
}
}  // namespace

AnalysisKind prefix_table_kind() {
  AnalysisKind k;
  k.name = "prefix_table";
  k.title = "Prefix predictions";
  k.help = "predicted label and probability for every prefix of a sentence (CRU Table 5)";
  k.caption =
      "The class a classify run predicts for every prefix w_1..w_i of the sentence, with its probability (CRU paper Table 5).";
  k.tasks = {"classify"};
  k.inputs.text = true;
  k.run = run_prefix_table;
  return k;
}

}  // namespace cs
