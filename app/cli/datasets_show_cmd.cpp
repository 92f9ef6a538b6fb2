// `cellscope-cli datasets show NAME|PATH`: what a seq2seq dataset holds (counts per split, a few
// pairs) and the "lead" baseline's BLEU / ROUGE on valid and test (data/seq2seq_data.h,
// data/text_metrics.h). The lead length is default_lead_words (the training split's mean target length in
// whitespace words) unless --lead-words says otherwise.
#include <chrono>
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "data/manifest.h"
#include "data/seq2seq_data.h"
#include "data/subword.h"
#include "data/text_metrics.h"
#include "util/error.h"

namespace cli {

namespace {

double mean_words(const std::vector<cs::TextPair>& v, bool source) {
  if (v.empty()) return 0;
  double n = 0;
  for (const auto& p : v) n += static_cast<double>(cs::whitespace_words(source ? p.source : p.target).size());
  return n / static_cast<double>(v.size());
}

// The dataset section NAME|PATH and --format / --set describe.
cs::json dataset_section(const Args& args) {
  if (args.positional.size() != 1) throw UsageError("datasets show: expected one dataset name or path");
  const std::string what = args.positional[0];
  cs::json ds = cs::json::object();
  const cs::json manifest = cs::load_manifest();
  if (cs::find_manifest_entry(manifest, what)) ds["name"] = what;
  else if (cs::file_exists(what) || cs::dir_exists(what)) ds["path"] = what;
  else
    throw cs::UserError("datasets show: '" + what + "' is neither a dataset of the manifest nor a file or directory");
  if (args.has("format")) ds["format"] = args.get("format");
  for (const auto& kv : args.all("set")) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--set " + kv + ": expected KEY=VALUE");
    const std::string key = kv.substr(0, eq), val = kv.substr(eq + 1);
    try {
      ds[key] = cs::json::parse(val);
    } catch (const std::exception&) {
      ds[key] = val;
    }
  }
  return ds;
}

// --subword N: a SentencePiece vocabulary trained on the training split, and the valid split's mean
// pieces per source and target.
cs::json subword_summary(const Args& args, const cs::Seq2SeqSplits& s) {
  cs::SubwordOptions so;
  so.vocab_size = args.get_int("subword", 8000, 8, 10000000);
  so.model_type = args.get("subword-type", "unigram");
  so.option = "--subword";
  std::vector<std::string> lines;
  for (const auto& p : s.train) {
    lines.push_back(p.source);
    lines.push_back(p.target);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const cs::SubwordVocab v = cs::SubwordVocab::train(lines, so);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double src = 0, tgt = 0;
  for (const auto& p : s.valid) {
    src += static_cast<double>(v.encode(p.source).size());
    tgt += static_cast<double>(v.encode(p.target).size());
  }
  const double n = std::max<double>(1, static_cast<double>(s.valid.size()));
  return {{"model_type", so.model_type},
          {"vocab_size", v.size()},
          {"train_seconds", secs},
          {"valid_mean_source_pieces", src / n},
          {"valid_mean_target_pieces", tgt / n}};
}

// The text form of the JSON `out` (the splits' table, the signatures, the subword line, the pairs).
void print_summary(const cs::json& out, const std::string& description, int64_t lead, const std::string& split) {
  std::cout << description << "\n\n"
            << std::left << std::setw(8) << "split" << std::right << std::setw(9) << "pairs" << std::setw(10)
            << "src words" << std::setw(10) << "tgt words" << std::setw(10) << "lead BLEU" << std::setw(8) << "R-1"
            << std::setw(8) << "R-2" << std::setw(8) << "R-L"
            << "\n";
  std::cout << std::fixed << std::setprecision(2);
  for (const char* name : {"train", "valid", "test"}) {
    const auto& row = out["splits"][name];
    std::cout << std::left << std::setw(8) << name << std::right << std::setw(9) << row["pairs"].get<int64_t>()
              << std::setw(10) << row["mean_source_words"].get<double>() << std::setw(10)
              << row["mean_target_words"].get<double>();
    if (row.contains("lead"))
      std::cout << std::setw(10) << row["lead"]["bleu"].get<double>() << std::setw(8)
                << row["lead"]["rouge1"].get<double>() << std::setw(8) << row["lead"]["rouge2"].get<double>()
                << std::setw(8) << row["lead"]["rougeL"].get<double>();
    std::cout << "\n";
  }
  std::cout << "(lead baseline = the first " << lead << " words of the source; BLEU corpus-level, ROUGE F1 mean over "
            << "pairs, both 0..100)\n";
  if (out.contains("bleu_signature"))
    std::cout << "BLEU  " << out["bleu_signature"].get<std::string>() << "\nROUGE "
              << out["rouge_signature"].get<std::string>() << "\n";
  if (out.contains("subword"))
    std::cout << "subword vocabulary (SentencePiece " << out["subword"]["model_type"].get<std::string>() << ", "
              << out["subword"]["vocab_size"].get<int64_t>() << " pieces, trained on the training split in "
              << out["subword"]["train_seconds"].get<double>() << " s): valid sources "
              << out["subword"]["valid_mean_source_pieces"].get<double>() << " pieces, targets "
              << out["subword"]["valid_mean_target_pieces"].get<double>() << " pieces on average\n";
  if (!out["examples"].empty()) std::cout << "\nfirst " << out["examples"].size() << " pairs of " << split << ":\n";
  for (const auto& e : out["examples"]) {
    std::cout << "  source: " << e["source"].get<std::string>() << "\n"
              << "  target: " << e["target"].get<std::string>() << "\n"
              << "  lead:   " << e["lead"].get<std::string>() << "\n\n";
  }
}

}  // namespace

int cmd_datasets_show(const std::vector<std::string>& a) {
  auto args = parse(a, "datasets show");
  const cs::json ds = dataset_section(args);
  const int64_t k = args.get_int("pairs", 5, 0, 1000000);
  const std::string split = args.get("split", "valid");
  if (split != "train" && split != "valid" && split != "test")
    throw UsageError("--split " + split + ": expected train, valid or test");

  const cs::Seq2SeqSplits s = cs::load_seq2seq_dataset(cs::read_seq2seq_data_options(ds));
  const int64_t lead =
      args.has("lead-words") ? args.get_int("lead-words", 8, 1, 100000) : cs::default_lead_words(s.train);
  cs::json out = {{"description", s.description}, {"lead_words", lead}};
  for (const char* name : {"train", "valid", "test"}) {
    const auto& v = std::string(name) == "train" ? s.train : std::string(name) == "valid" ? s.valid : s.test;
    cs::json row = {
        {"pairs", v.size()}, {"mean_source_words", mean_words(v, true)}, {"mean_target_words", mean_words(v, false)}};
    if (std::string(name) != "train") {
      std::vector<std::string> hyp, ref;
      for (const auto& p : v) {
        hyp.push_back(cs::lead_baseline(p.source, lead));
        ref.push_back(p.target);
      }
      const auto b = cs::corpus_bleu(hyp, ref);
      const auto r = cs::corpus_rouge(hyp, ref);
      row["lead"] = {{"bleu", b.bleu},
                     {"brevity_penalty", b.brevity_penalty},
                     {"rouge1", r.rouge1},
                     {"rouge2", r.rouge2},
                     {"rougeL", r.rougeL}};
      out["bleu_signature"] = b.signature;
      out["rouge_signature"] = r.signature;
    }
    out["splits"][name] = row;
  }
  if (args.has("subword")) out["subword"] = subword_summary(args, s);
  const auto& shown = split == "train" ? s.train : split == "valid" ? s.valid : s.test;
  out["examples"] = cs::json::array();
  for (size_t i = 0; i < shown.size() && static_cast<int64_t>(i) < k; ++i)
    out["examples"].push_back(
        {{"source", shown[i].source}, {"target", shown[i].target}, {"lead", cs::lead_baseline(shown[i].source, lead)}});
  if (args.has("json")) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  print_summary(out, s.description, lead, split);
  return 0;
}

}  // namespace cli
