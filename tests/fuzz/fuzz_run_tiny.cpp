#include "fuzz_run_tiny.h"

#include <memory>
#include "config/schema.h"
#include "fixture_text.h"
#include "fuzz_common.h"
#include "tasks/task.h"
#include "train/run_store.h"
#include "train/trainer.h"

namespace csfuzz {

const std::string& tiny_corpus() {
  static const std::string path = write_file("tiny/corpus.txt", cstest::fixture_text(2000));
  return path;
}

cs::json tiny_config() {
  cs::json cfg = cs::json::parse(R"({
    "task": "char_lm",
    "dataset": {"format": "text", "valid_fraction": 0.1, "test_fraction": 0.1},
    "model": {"cell": "gru", "embed": 8, "hidden": 16},
    "training": {"batch": 2, "bptt": 8, "steps": 3, "log_every": 1, "eval_every": 1,
                 "checkpoint_every": 1, "threads": 1, "eval_test": false}
  })");
  cfg["dataset"]["path"] = tiny_corpus();
  return cfg;
}

void train_tiny_run(const std::string& run_dir) {
  const cs::json cfg = cs::load_and_resolve(tiny_config());
  cs::seed_everything(1);
  auto store = std::make_shared<cs::RunStore>(run_dir);
  store->create();
  store->write_config(cfg);
  cs::Trainer tr(cfg, cs::make_task(cfg, run_dir), store);
  tr.run();
}

}  // namespace csfuzz
