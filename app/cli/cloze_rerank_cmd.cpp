// cellscope-cli cloze rerank: the re-ranking step of the cloze readers (CRU paper Table 3
// "+ Re-ranking"; tasks/cloze_rerank.h, CLOZE_RERANK_NOTES.md) on the JSONL files that
// `cellscope-cli cloze scores` writes.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli.h"
#include "data/wordnet.h"
#include "tasks/cloze_rerank.h"
#include "tasks/task.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/sysinfo.h"

namespace cli {

int cmd_cloze_rerank(const std::vector<std::string>& a) {
  auto args = parse(a, "cloze rerank");
  if (!args.positional.empty()) throw UsageError("unexpected argument '" + args.positional[0] + "'");
  if (!args.has("valid") || !args.has("test")) throw UsageError("--valid V.jsonl and --test T.jsonl are required");
  cs::set_threads(static_cast<int>(args.get_int("threads", 0)));
  cs::RerankOptions o;
  o.order = static_cast<int>(args.get_int("order", 3, 1, 10));
  const auto valid = cs::read_cloze_scores(args.get("valid"));
  const auto test = cs::read_cloze_scores(args.get("test"));
  std::vector<cs::ClozeScored> train;
  if (args.has("train")) train = cs::read_cloze_scores(args.get("train"));
  std::unique_ptr<cs::WordNet> wn;
  if (!args.has("no-word-class"))
    wn = std::make_unique<cs::WordNet>(cs::WordNet::load(args.get("wordnet", cs::WordNet::default_dir())));
  std::unique_ptr<cs::Task> lm;
  std::function<double(const std::vector<std::string>&)> global;
  if (args.has("lm")) {
    lm = cs::load_run_task(args.get("lm"), args.get("checkpoint", "best"));
    if (lm->name() != "word_lm")
      throw cs::UserError("--lm '" + args.get("lm") + "' is a " + lm->name() +
                          " run; the Global LM needs a word_lm run");
    global = cs::task_lm_scorer(*lm);
  }
  // Has the Global LM seen the test questions? (its training split against the test queries)
  std::vector<std::string> warnings;
  cs::LmOverlap overlap, valid_overlap;
  if (lm) {
    const auto lm_tokens = cs::lm_training_symbols(*lm);
    overlap = cs::lm_overlap(test, lm_tokens, cs::task_lm_tokenizer(*lm));
    const std::string w = overlap.warning(args.get("lm"), "test");
    if (!w.empty()) {
      warnings.push_back(w);
      std::cerr << "warning: " << w << "\n";
    }
    // valid only tunes the weights: a note, not a warning (the test number stays held-out)
    valid_overlap = cs::lm_overlap(valid, lm_tokens, cs::task_lm_tokenizer(*lm));
    std::cerr << "Global LM check (queries with half or more of their word " << cs::kLmOverlapOrder
              << "-grams in its training split): test " << overlap.found << " of " << overlap.checked << ", valid "
              << valid_overlap.found << " of " << valid_overlap.checked << "\n";
    if (valid_overlap.overlaps())
      std::cerr << "note: the Global LM's training split holds " << valid_overlap.found << " of the "
                << valid_overlap.checked << " checked valid questions: the weights are tuned on questions it has "
                << "seen, which favours the global_lm feature\n";
  }
  const cs::RerankReport r = cs::rerank_cloze(valid, test, train, wn.get(), global, o);
  if (args.has("json")) {
    cs::json j = r.to_json();
    j["valid_file"] = args.get("valid");
    j["test_file"] = args.get("test");
    if (args.has("lm")) {
      j["lm"] = args.get("lm");
      j["lm_test_overlap"] = overlap.to_json();
      j["lm_valid_overlap"] = valid_overlap.to_json();
    }
    j["warnings"] = warnings;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << r.to_text();
  return 0;
}

}  // namespace cli
