// A metric per sequence-length bucket (MZU paper Fig. 2, MC-RNN paper Fig. 4).
#include <cmath>
#include <set>

#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "analysis/run_names.h"
#include "data/text_metrics.h"
#include "data/vocab.h"
#include "tasks/task.h"
#include "util/error.h"

namespace cs {

LengthBuckets metric_by_length(Task& task, const std::string& split, const std::vector<int64_t>& edges_in) {
  if (split != "train" && split != "valid" && split != "test")
    throw UserError("unknown split '" + split + "' (train, valid, test)");
  LengthBuckets out = make_length_buckets(edges_in.empty() ? default_edges_for(task.name()) : edges_in);
  out.split = split;
  // char_lm: lines by characters (BPC); word_lm: sentences by words (perplexity of their
  // tokens incl. <eos>); classify/absa: examples by tokens (accuracy). See Task::sequence_scores.
  // seq2seq: pairs by source words, BLEU of each bucket's decodes as one corpus (sacreBLEU's statistic is a
  // corpus sum, not a mean of sentence scores; MC-RNN paper Fig. 4).
  const SequenceScores scores = task.sequence_scores(split);
  out.metric = scores.metric;
  out.length_unit = scores.length_unit;
  if (scores.metric == "bleu") {
    std::vector<std::vector<std::string>> hyps(out.buckets.size()), refs(out.buckets.size());
    for (const auto& s : scores.sequences)
      for (size_t k = 0; k < out.buckets.size(); ++k)
        if (s.length > out.buckets[k].lo && s.length <= out.buckets[k].hi) {
          hyps[k].push_back(s.hypothesis);
          refs[k].push_back(s.reference);
          break;
        }
    for (size_t k = 0; k < out.buckets.size(); ++k) {
      auto& b = out.buckets[k];
      b.sequences = b.units = static_cast<int64_t>(hyps[k].size());
      b.value = hyps[k].empty() ? std::nan("") : corpus_bleu(hyps[k], refs[k]).bleu;
    }
    return out;
  }
  for (const auto& s : scores.sequences) add_sequence(out, s.length, s.units, s.sum);
  finish_buckets(out);
  return out;
}

namespace {
json section_of(const json& cfg, const char* name) {
  return cfg.is_object() && cfg.contains(name) ? cfg[name] : json();
}

// "max_chars 0 (A) vs 300000 (B)" for the keys whose values differ.
std::string dataset_difference(const json& a, const json& b, const std::string& na, const std::string& nb) {
  std::string out;
  std::set<std::string> keys;
  if (a.is_object())
    for (auto& [k, v] : a.items()) keys.insert(k);
  if (b.is_object())
    for (auto& [k, v] : b.items()) keys.insert(k);
  for (auto& k : keys) {
    const json va = a.is_object() && a.contains(k) ? a[k] : json("-");
    const json vb = b.is_object() && b.contains(k) ? b[k] : json("-");
    if (va == vb) continue;
    auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    out += (out.empty() ? "" : ", ") + k + " " + text(va) + " (" + na + ") vs " + text(vb) + " (" + nb + ")";
  }
  return out;
}

// "moby-dick, first 300k characters" / "corpus.txt".
std::string dataset_description(const json& d) {
  if (!d.is_object()) return "its dataset";
  std::string s = d.contains("name") && d["name"].is_string()   ? d["name"].get<std::string>()
                  : d.contains("path") && d["path"].is_string() ? basename_of(d["path"].get<std::string>())
                                                                : std::string("its dataset");
  if (d.contains("max_chars") && d["max_chars"].is_number_integer() && d["max_chars"].get<int64_t>() > 0)
    s += ", first " + std::to_string(d["max_chars"].get<int64_t>()) + " characters";
  return s;
}

// Symbols of run a's vocabulary that run b's lacks (b reads them as <unk>).
std::vector<std::string> vocabulary_gap(const std::string& run_a, const std::string& run_b) {
  const std::string pa = join_path(run_a, "vocab"), pb = join_path(run_b, "vocab");
  if (!file_exists(pa) || !file_exists(pb)) return {};
  const Vocab va = Vocab::load(pa), vb = Vocab::load(pb);
  std::vector<std::string> out;
  for (auto& s : va.symbols())
    if (s != Vocab::kUnk && !vb.contains(s)) out.push_back(display_symbol(s));
  return out;
}

// How a seq2seq run decodes a split in its evaluations (Seq2SeqTask::decode_label), for the caption.
std::string decode_of(const json& cfg, const std::string& split) {
  const json t = section_of(cfg, "task");
  if (split == "test" && t.is_object() && t.value("test_decode", std::string("greedy")) == "beam")
    return "beam-" + std::to_string(t.value("beam", 10)) + " (length penalty " +
           std::to_string(t.value("length_penalty", 1.0)).substr(0, 4) + ")";
  return "greedy";
}

AnalysisResult run_length(const AnalysisKind& kind, const AnalysisRequest& req) {
  // The same evaluation data for every run: a run whose dataset section differs from the
  // first run's is evaluated on the first run's data with its own vocabulary and weights.
  // Where that is impossible (another task, data its batch does not fit), its own data,
  // with a warning.
  BucketSet set;
  const auto names = run_titles(req);
  std::vector<RunIdentity> ids;
  for (auto& d : req.runs) ids.push_back(read_run_identity(d));
  const json data0 = section_of(ids[0].config, "dataset");
  const json task0 = section_of(ids[0].config, "task");
  std::vector<std::string> notes, warnings;
  for (size_t i = 0; i < req.runs.size(); ++i) {
    const std::string& d = req.runs[i];
    const std::string ck = checkpoint_of(req, i);
    const json di = section_of(ids[i].config, "dataset");
    std::unique_ptr<Task> t;
    if (i == 0 || di == data0) {
      t = load_for(kind, d, ck);
    } else {
      const std::string diff = dataset_difference(data0, di, names[0], names[i]);
      if (section_of(ids[i].config, "task") == task0) {
        std::string why;
        try {
          t = load_checkpoint_task_on(d, ck, data0);  // the same task as the first run's
        } catch (const std::exception& e) {
          why = e.what();
          t.reset();
        }
        if (t) {
          std::string note =
              names[i] + " (trained on other data: " + diff + ") is evaluated on the data of " + names[0];
          const auto gap = vocabulary_gap(req.runs[0], d);
          if (!gap.empty()) {
            std::string list;
            for (size_t k = 0; k < gap.size() && k < 12; ++k) list += (k ? " " : "") + gap[k];
            if (gap.size() > 12) list += " ... (" + std::to_string(gap.size()) + " in all)";
            warnings.push_back(names[i] + " does not know the symbols " + list +
                               " of the evaluation data (read as <unk>).");
          }
          notes.push_back(note + ".");
        } else {
          t = load_for(kind, d, ck);
          warnings.push_back("the runs are evaluated on different data (" + diff + "; " + names[i] +
                             " cannot read the first run's data: " + why +
                             "): their buckets hold different sequences.");
        }
      } else {
        t = load_for(kind, d, ck);
        warnings.push_back("the runs are evaluated on different data (" + diff +
                           "): their buckets hold different sequences; compare the counts n.");
      }
    }
    auto b = metric_by_length(*t, req.split, req.edges);
    b.run = run_name(d);
    b.name = names[i];
    set.runs.push_back(b);
  }
  const auto& b0 = set.runs[0];
  const std::string what = b0.metric == "bpc"   ? "BPC of its lines (newline excluded), by length in characters"
                           : b0.metric == "ppl" ? "perplexity of its sentences (tokens incl. <eos>), by length in words"
                           : b0.metric == "bleu"
                               ? "BLEU (sacreBLEU's, each bucket's pairs as one corpus) of its pairs' " +
                                     decode_of(ids[0].config, b0.split) + " decodes, by source length in words"
                           : task0.is_object() && task0.value("name", std::string()) == "cloze"
                               ? "accuracy of its questions, by document length in words"
                               : "accuracy of its examples, by length in tokens";
  std::string edges;
  for (auto& k : b0.buckets)
    edges += (edges.empty() ? "" : ", ") + k.label + " = (" + std::to_string(k.lo) + "," + std::to_string(k.hi) + "]";
  AnalysisResult r;
  r.caption = "The " + b0.split + " split evaluated once: " + what + "; buckets " + edges +
              "; n = sequences per bucket (MZU paper Fig. 2" + (b0.metric == "bpc" ? "" : ", MC-RNN paper Fig. 4") +
              ").";
  if (set.runs.size() > 1) {
    r.caption += warnings.empty() ? " Every run is evaluated on the same data: the " + b0.split + " split of " +
                                        dataset_description(data0) + "."
                                  : std::string();
    for (auto& n : notes) r.caption += " " + n;
    // n per bucket for each run when the counts differ (they cannot when the data is the same)
    bool same_counts = true;
    for (auto& b : set.runs)
      for (size_t k = 0; k < b.buckets.size() && k < b0.buckets.size(); ++k)
        same_counts = same_counts && b.buckets[k].sequences == b0.buckets[k].sequences;
    r.caption += same_counts ? " n is the same for every run." : " n is given per run (in legend order).";
  }
  r.warnings = warnings;
  r.data = std::move(set);
  return r;
}
}  // namespace

AnalysisKind length_kind() {
  AnalysisKind k;
  k.name = "length";
  k.title = "Metric by sequence length";
  k.help =
      "BPC / perplexity / accuracy / BLEU per sequence-length bucket with sequence counts (MZU Fig. 2, MC-RNN Fig. 4)";
  k.caption =
      "The split evaluated once and its sequences bucketed by length (char_lm: lines by characters, bucket b = (10b, "
      "10(b+1)] and 9 = (90,120] as in MZU Fig. 2; word_lm: sentences by words, perplexity of their tokens incl. <eos>; "
      "classify/absa: examples by tokens, accuracy; cloze: questions by document length in words, accuracy; seq2seq: "
      "pairs by source length in words, BLEU of each bucket's decodes as one corpus, MC-RNN Fig. 4). Bucket edges "
      "are editable.";
  k.tasks = {"char_lm", "word_lm", "classify", "absa", "cloze", "seq2seq"};
  k.inputs.split = k.inputs.edges = true;
  k.multi_run = true;
  k.run = run_length;
  return k;
}

}  // namespace cs
