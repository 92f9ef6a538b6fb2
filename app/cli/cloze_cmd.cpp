// cellscope-cli cloze scores: a cloze run's probability of every candidate of every
// question of a split, one JSON object per line (the input of the re-ranking step,
// `cellscope-cli cloze rerank`; contract in tasks/CLOZE_NOTES.md).
#include <iostream>

#include "analysis/checkpoints.h"
#include "cli.h"
#include "tasks/cloze.h"
#include "util/error.h"
#include "train/trainer.h"

namespace cli {

namespace {

int cmd_scores(const std::vector<std::string>& a) {
  auto args = parse(a, "cloze scores");
  apply_script_option(args);
  if (args.positional.size() != 1)
    throw UsageError("expected one RUN directory: cloze scores RUN --split S --out F.jsonl");
  if (!args.has("out")) throw UsageError("--out F.jsonl is required");
  if (!args.has("split")) throw UsageError("--split S is required (train, valid or test)");
  const std::string split = args.get("split");
  if (split != "train" && split != "valid" && split != "test")
    throw UsageError("--split expects train, valid or test, got '" + split + "'");
  cs::set_threads(static_cast<int>(args.get_int("threads", 0)));
  auto task = cs::load_checkpoint_task(args.positional[0], args.get("checkpoint", "best"));
  auto* cz = dynamic_cast<cs::ClozeTask*>(task.get());
  if (!cz) throw cs::UserError(args.positional[0] + ": not a cloze run (its task is " + task->name() + ")");
  std::string out;
  for (const auto& s : cz->score_split(split)) {
    const cs::json j = {{"document", s.example->document},
                        {"query", s.example->query},
                        {"candidates", s.example->candidates},
                        {"prob", s.prob},
                        {"answer", s.answer}};
    out += j.dump(-1, ' ', false, cs::json::error_handler_t::replace) + "\n";
  }
  cs::atomic_write(args.get("out"), out);
  return 0;
}

}  // namespace

// `cellscope-cli cloze scores|rerank`: the reader's candidate scores, then the re-ranking step
// (cloze_rerank_cmd.cpp) that reads them.
int cmd_cloze(const std::vector<std::string>& a) {
  // No words, help and --help: help.cpp.
  const std::vector<std::string> rest(a.begin() + 1, a.end());
  if (a[0] == "scores") return cmd_scores(rest);
  if (a[0] == "rerank") return cmd_cloze_rerank(rest);
  throw UsageError("unknown cloze command '" + a[0] + "' (scores or rerank; see cellscope-cli cloze --help)");
}

}  // namespace cli
