// A metric per sequence-length bucket (MZU paper Fig. 2, MC-RNN paper Fig. 4).
#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "tasks/task.h"
#include "util/error.h"

namespace cs {

LengthBuckets metric_by_length(Task& task, const std::string& split, const std::vector<int64_t>& edges_in) {
  if (split != "train" && split != "valid" && split != "test") throw UserError("unknown split '" + split + "' (train, valid, test)");
  LengthBuckets out = make_length_buckets(edges_in.empty() ? default_edges_for(task.name()) : edges_in);
  out.split = split;
  // char_lm: lines by characters (BPC); word_lm: sentences by words (perplexity of their
  // tokens incl. <eos>); classify/absa: examples by tokens (accuracy). See Task::sequence_scores.
  const SequenceScores scores = task.sequence_scores(split);
  out.metric = scores.metric;
  out.length_unit = scores.length_unit;
  for (const auto& s : scores.sequences) add_sequence(out, s.length, s.units, s.sum);
  finish_buckets(out);
  return out;
}

namespace {
AnalysisResult run(const AnalysisKind& kind, const AnalysisRequest& req) {
  BucketSet set;
  for (auto& d : req.runs) {
    auto t = load_for(kind, d, req.checkpoint);
    auto b = metric_by_length(*t, req.split, req.edges);
    b.run = run_name(d);
    set.runs.push_back(b);
  }
  const auto& b0 = set.runs[0];
  const std::string what = b0.metric == "bpc"   ? "BPC of its lines (newline excluded), by length in characters"
                           : b0.metric == "ppl" ? "perplexity of its sentences (tokens incl. <eos>), by length in words"
                                                : "accuracy of its examples, by length in tokens";
  std::string edges;
  for (auto& k : b0.buckets) edges += (edges.empty() ? "" : ", ") + k.label + " = (" + std::to_string(k.lo) + "," + std::to_string(k.hi) + "]";
  AnalysisResult r;
  r.caption = "The " + b0.split + " split evaluated once: " + what + "; buckets " + edges +
              "; n = sequences per bucket (MZU paper Fig. 2" + (b0.metric == "bpc" ? "" : ", MC-RNN paper Fig. 4") + ").";
  r.data = std::move(set);
  return r;
}
}  // namespace

AnalysisKind length_kind() {
  AnalysisKind k;
  k.name = "length";
  k.title = "Metric by sequence length";
  k.help = "BPC / perplexity / accuracy per sequence-length bucket with sequence counts (MZU Fig. 2, MC-RNN Fig. 4)";
  k.caption =
      "The split evaluated once and its sequences bucketed by length (char_lm: lines by characters, bucket b = (10b, "
      "10(b+1)] and 9 = (90,120] as in MZU Fig. 2; word_lm: sentences by words, perplexity of their tokens incl. <eos>; "
      "classify/absa: examples by tokens, accuracy). Bucket edges are editable.";
  k.tasks = {"char_lm", "word_lm", "classify", "absa"};
  k.inputs.split = k.inputs.edges = true;
  k.multi_run = true;
  k.run = run;
  return k;
}

}  // namespace cs
