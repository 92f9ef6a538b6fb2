// cellscope-cli decode: a seq2seq run's decodes of a split (beam search with length
// normalisation, tasks/seq2seq_decode.h), the samples and BLEU / ROUGE against the lead baseline.
#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "data/seq2seq_data.h"
#include "data/text_metrics.h"
#include "tasks/inspect.h"
#include "tasks/seq2seq_decode.h"
#include "train/metrics.h"
#include "train/test_examples.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/sysinfo.h"

namespace cli {

namespace {

double number_arg(const Args& a, const std::string& k, double def) {
  if (!a.has(k)) return def;
  try {
    size_t used = 0;
    const std::string v = a.get(k);
    const double x = std::stod(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    throw UsageError("--" + k + " expects a number, got '" + a.get(k) + "'");
  }
}

// Fails before decoding (minutes) when an output file cannot be written where asked.
void check_output_path(const std::string& opt, const std::string& path) {
  if (path.empty()) throw UsageError("--" + opt + " expects a file name");
  if (cs::dir_exists(path)) throw cs::UserError("--" + opt + " '" + path + "' is a directory");
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (!cs::dir_exists(dir))
    throw cs::UserError("--" + opt + " '" + path + "': the directory '" + dir + "' does not exist");
}

// The BLEU of the run's last test evaluation (metrics.jsonl), which --test-examples must reproduce.
double recorded_test_bleu(const std::string& run) {
  const auto recs = cs::read_metrics(cs::join_path(run, "metrics.jsonl"));
  for (auto it = recs.rbegin(); it != recs.rend(); ++it)
    if (it->eval && it->split == "test" && it->values.count("bleu")) return it->values.at("bleu");
  throw cs::UserError("'" + run + "' has no test evaluation with BLEU in metrics.jsonl (a run that has not " +
                      "finished, or one trained without a test split): --test-examples reproduces that evaluation");
}

// --test-examples: RUN/test_examples.json from the decodes of every test pair, written only when they
// give the run's recorded test BLEU (the same hypotheses as its test evaluation).
int store_test_examples(const std::string& run, const cs::DecodeReport& r) {
  const double recorded = recorded_test_bleu(run);
  cs::SequenceScores sc;
  sc.metric = "bleu";
  for (const auto& s : r.samples) {
    cs::ScoredSequence q;
    q.units = 1;
    q.hypothesis = s.hypothesis;
    q.reference = s.reference;
    sc.sequences.push_back(std::move(q));
  }
  const auto e = cs::test_examples_of(sc);
  const double again = e->metric_value();
  if (!cs::same_metric(again, recorded))
    throw cs::UserError("the decodes of the " + std::to_string(e->count()) + " test pairs give BLEU " +
                        std::to_string(again) + ", but the run's test evaluation recorded " + std::to_string(recorded) +
                        " (a run whose test decode is greedy or limited by training.eval_decode, or a checkpoint "
                        "other than its best): " +
                        cs::kTestExamplesFile + " not written");
  cs::write_test_examples(run, *e);
  std::cout << "wrote " << cs::join_path(run, cs::kTestExamplesFile) << ": " << e->count() << " test pairs, BLEU "
            << std::fixed << std::setprecision(2) << again << " (the run's test evaluation: the same)\n";
  return 0;
}

// decode_run scores with the default options: the model's and the lead baseline's metrics again,
// on the same pairs, with these (--lowercase, --rouge-stem).
void rescore(cs::DecodeReport& r, const cs::BleuOptions& bo, const cs::RougeOptions& ro) {
  std::vector<std::string> hyps, leads, refs;
  const int64_t lead_words = static_cast<int64_t>(r.metrics.at("lead_words"));
  for (const auto& s : r.samples) {
    hyps.push_back(s.hypothesis);
    leads.push_back(cs::lead_baseline(s.source, lead_words));
    refs.push_back(s.reference);
  }
  for (const bool lead : {false, true}) {
    const std::string pre = lead ? "lead_" : "";
    const auto b = cs::corpus_bleu(lead ? leads : hyps, refs, bo);
    const auto g = cs::corpus_rouge(lead ? leads : hyps, refs, ro);
    r.metrics[pre + "bleu"] = b.bleu;
    r.metrics[pre + "rouge1"] = g.rouge1;
    r.metrics[pre + "rouge2"] = g.rouge2;
    r.metrics[pre + "rougeL"] = g.rougeL;
  }
}

}  // namespace

int cmd_decode(const std::vector<std::string>& a) {
  auto args = parse(a, "decode");
  if (args.positional.size() != 1) throw UsageError("expected one RUN directory");
  apply_script_option(args);
  if (args.has("json") && args.has("csv")) throw UsageError("--json and --csv exclude each other");
  const std::string run = args.positional[0];
  cs::set_threads(static_cast<int>(args.get_int("threads", 0)));
  const std::string cfg_path = cs::join_path(run, "config.json");
  if (!cs::file_exists(cfg_path)) throw cs::UserError("'" + run + "' is not a run directory (no config.json)");
  const cs::json cfg = cs::parse_json(cs::read_file(cfg_path), cfg_path);
  const cs::json task = cfg.value("task", cs::json::object());
  const bool store = args.has("test-examples");
  if (store)
    for (const char* k : {"split", "checkpoint", "beam", "alpha", "max", "max-length", "lowercase", "rouge-stem",
                          "json", "csv", "hyp-out", "ref-out"})
      if (args.has(k))
        throw UsageError(std::string("--test-examples decodes every test pair as the run's test evaluation did, ") +
                         "from its best checkpoint with its beam: it takes no --" + k);
  cs::DecodeOptions o;
  o.split = store ? "test" : args.get("split", "valid");
  o.checkpoint = args.get("checkpoint", "best");
  o.beam = args.get_int("beam", task.is_object() ? task.value("beam", 10) : 10, 1, 1000);
  o.length_penalty = number_arg(args, "alpha", task.is_object() ? task.value("length_penalty", 1.0) : 1.0);
  if (o.length_penalty < 0) throw UsageError("--alpha must be >= 0");
  o.max_examples = store ? 0 : args.get_int("max", 20, 0, 1LL << 40);
  o.max_length = args.get_int("max-length", 0, 0, 100000);
  for (const char* k : {"hyp-out", "ref-out"})
    if (args.has(k)) check_output_path(k, args.get(k));
  if (args.has("hyp-out") && args.has("ref-out") && args.get("hyp-out") == args.get("ref-out"))
    throw UsageError("--hyp-out and --ref-out name the same file");
  cs::BleuOptions bo;
  bo.lowercase = args.has("lowercase");
  cs::RougeOptions ro;
  ro.stem = args.has("rouge-stem");
  int64_t last_pct = -1;
  // A terminal sees one line redrawn; a log (not a terminal) one line per 10%, no carriage returns.
  const bool tty = ::isatty(STDERR_FILENO);
  auto progress = [&](int64_t done, int64_t total) {
    const int64_t pct = total > 0 ? done * 100 / total : 100;
    if (tty && (pct != last_pct || done == total)) {
      std::cerr << "\rdecoding " << o.split << ": " << done << "/" << total << " (" << pct << "%)" << std::flush;
      if (done == total) std::cerr << "\n";
    } else if (!tty && (pct / 10 != last_pct / 10 || done == total)) {
      std::cerr << "decoding " << o.split << ": " << done << "/" << total << " (" << pct << "%)\n";
    }
    last_pct = pct;
    return true;
  };
  if (store) recorded_test_bleu(run);  // before minutes of decoding
  cs::DecodeReport r = cs::decode_run(run, o, progress);
  if (store) return store_test_examples(run, r);
  if (bo.lowercase || ro.stem) rescore(r, bo, ro);
  const std::string bleu_sig = cs::bleu_signature(bo, 1), rouge_sig = cs::rouge_signature(ro);
  for (const bool hyp : {true, false}) {
    const char* k = hyp ? "hyp-out" : "ref-out";
    if (!args.has(k)) continue;
    std::string text;
    for (const auto& s : r.samples) text += cs::scorer_line(hyp ? s.hypothesis : s.reference) + "\n";
    cs::atomic_write(args.get(k), text);
  }
  if (args.has("json")) {
    cs::json j;
    j["run"] = run;
    j["split"] = o.split;
    j["checkpoint"] = o.checkpoint;
    j["step"] = r.step;
    j["beam"] = o.beam;
    j["alpha"] = o.length_penalty;
    j["metrics"] = r.metrics;
    j["bleu_signature"] = bleu_sig;
    j["rouge_signature"] = rouge_sig;
    j["samples"] = cs::json::array();
    for (auto& s : r.samples)
      j["samples"].push_back(
          {{"source", s.source}, {"reference", s.reference}, {"hypothesis", s.hypothesis}, {"score", s.score}});
    std::cout << j.dump(2, ' ', false, cs::json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (args.has("csv")) {
    std::cout << "source,reference,hypothesis,score\n";
    for (auto& s : r.samples)
      std::cout << cs::csv_field(s.source) << "," << cs::csv_field(s.reference) << "," << cs::csv_field(s.hypothesis)
                << "," << s.score << "\n";
    std::cout << "\nmetric,value\n";
    for (auto& [k, v] : r.metrics) std::cout << k << "," << v << "\n";
    std::cout << "bleu_signature," << cs::csv_field(bleu_sig) << "\nrouge_signature," << cs::csv_field(rouge_sig)
              << "\n";
    return 0;
  }
  std::cout << "run " << run << ", checkpoint " << o.checkpoint << " (step " << r.step << "), " << o.split << ", beam "
            << o.beam << ", alpha " << o.length_penalty << "\n\n";
  for (size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    std::cout << "[" << i + 1 << "] source:     " << s.source << "\n    reference:  " << s.reference
              << "\n    hypothesis: " << s.hypothesis << "   (score " << std::fixed << std::setprecision(3) << s.score
              << ")\n";
    std::cout.unsetf(std::ios::fixed);
  }
  std::cout << "\n" << std::fixed << std::setprecision(2);
  for (const char* k : {"bleu", "rouge1", "rouge2", "rougeL"}) {
    auto it = r.metrics.find(k), lt = r.metrics.find(std::string("lead_") + k);
    std::cout << std::left << std::setw(8) << k << std::right << std::setw(8)
              << (it == r.metrics.end() ? 0.0 : it->second) << "   lead " << std::setw(8)
              << (lt == r.metrics.end() ? 0.0 : lt->second) << "\n";
  }
  std::cout << "BLEU  " << bleu_sig << "\nROUGE " << rouge_sig << "\n";
  return 0;
}

}  // namespace cli
