#include <iostream>
#include <sstream>

#include "analysis/analysis.h"
#include "cli.h"
#include "tasks/char_lm.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cli {

int cmd_analyze(const std::vector<std::string>& a) {
  if (std::find(a.begin(), a.end(), "--help") != a.end()) {
    std::cout << "usage: cellscope-cli analyze KIND --run DIR [--checkpoint best|last|STEP] --out FILE.{csv,json}\n"
                 "  relevance       [--text TEXT] [--last K] [--layer L]   MZU paper Fig. 3a/b\n"
                 "  zone_relevance  [--text TEXT] [--char T] [--layer L]   MZU paper Fig. 3c (MZU cells)\n"
                 "  bpc_length      [--split test] [--buckets 0,10,...,90,120]  MZU paper Fig. 2\n"
                 "Without --out the result is printed as JSON. --text defaults to the start of the split.\n";
    return 0;
  }
  auto args = parse(a, {}, {"run", "checkpoint", "out", "text", "last", "layer", "char", "split", "buckets", "threads"});
  if (args.positional.size() != 1) throw UsageError("expected one KIND (relevance, zone_relevance, bpc_length)");
  if (!args.has("run")) throw UsageError("--run DIR is required");
  cs::set_threads(static_cast<int>(args.get_int("threads", 0)));
  const std::string kind = args.positional[0];
  if (kind != "relevance" && kind != "zone_relevance" && kind != "bpc_length")
    throw UsageError("unknown analysis '" + kind + "' (relevance, zone_relevance, bpc_length)");
  auto task = cs::load_run_task(args.get("run"), args.get("checkpoint", "best"));
  auto* lm = dynamic_cast<cs::CharLMTask*>(task.get());
  if (!lm) throw cs::UserError("analysis '" + kind + "' needs a char_lm run; this run's task is " + task->name());
  std::string text = args.get("text");
  if (text.empty() && kind != "bpc_length") {
    // the first 120 characters of the valid split
    const auto& v = lm->corpus().valid;
    for (size_t i = 0; i < v.size() && i < 120; ++i) text += lm->corpus().vocab.symbol(v[i]);
  }
  const int layer = static_cast<int>(args.get_int("layer", -1));
  std::string csv;
  cs::json j;
  if (kind == "relevance") {
    auto m = cs::relevance_map(*lm, text, args.get_int("last", 10), layer);
    csv = m.to_csv();
    j = m.to_json();
  } else if (kind == "zone_relevance") {
    auto m = cs::zone_relevance(*lm, text, args.get_int("char", -1), layer);
    csv = m.to_csv();
    j = m.to_json();
  } else {
    std::vector<int64_t> edges = cs::default_length_edges();
    if (args.has("buckets")) {
      edges.clear();
      std::stringstream ss(args.get("buckets"));
      std::string tok;
      while (std::getline(ss, tok, ',')) {
        try {
          edges.push_back(std::stoll(tok));
        } catch (...) {
          throw UsageError("--buckets expects comma-separated integers, got '" + tok + "'");
        }
      }
    }
    auto b = cs::bpc_by_length(*lm, args.get("split", "test"), edges);
    csv = cs::buckets_to_csv(b);
    j = {{"buckets", cs::buckets_to_json(b)}, {"split", args.get("split", "test")}};
  }
  const std::string out = args.get("out");
  if (out.empty()) {
    std::cout << j.dump(2) << "\n";
  } else if (out.size() > 4 && out.substr(out.size() - 4) == ".csv") {
    cs::atomic_write(out, csv);
  } else if (out.size() > 5 && out.substr(out.size() - 5) == ".json") {
    cs::atomic_write(out, j.dump(2) + "\n");
  } else {
    throw UsageError("--out must end in .csv or .json (figures: open the run in the workbench)");
  }
  return 0;
}

}  // namespace cli
