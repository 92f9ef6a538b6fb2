// A whole run directory, read the ways eval, analyze, the run table and `train --resume` read
// it: RunStore (config, summary, metrics, label, checkpoint list), the analyses' checkpoint
// list, load_run_task (eval) and Trainer::resume (which also trims metrics.jsonl).
// Input: an archive (fuzz_common.h) written as the run directory: config.json, vocab,
// summary.json, metrics.jsonl, label.txt, checkpoints/*.pt, ...
// Harness limits (so one input stays fast; the loaders have their own targets): the config's
// dataset is pointed at the tiny corpus (fuzz_run_tiny.h), and a config asking for a model
// larger than hidden/embed 64, 2 layers or batch 8 is skipped after validation.
// Seeds: CELLSCOPE_FUZZ_WRITE_SEEDS=DIR fuzz_run_dir writes the tiny run as an archive there.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include "analysis/checkpoints.h"
#include "config/schema.h"
#include "fuzz_common.h"
#include "fuzz_run_tiny.h"
#include "tasks/task.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"

namespace fs = std::filesystem;

static void write_seed(const std::string& out) {
  const std::string run = csfuzz::scratch_dir() + "/seedrun";
  csfuzz::train_tiny_run(run);
  std::string archive;
  for (const char* n : {"config.json", "vocab", "summary.json", "metrics.jsonl", "checkpoints/last.pt"}) {
    std::ifstream f(run + "/" + n, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!archive.empty()) archive += "\n----\n";
    archive += std::string(n) + "\n" + ss.str();
  }
  fs::create_directories(out);
  std::ofstream(out + "/tiny_run", std::ios::binary) << archive;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("CELLSCOPE_FUZZ_WRITE_SEEDS")) {
    write_seed(out);
    std::exit(0);
  }
  (void)csfuzz::tiny_corpus();
  return 0;
}

static bool too_big(const cs::json& cfg) {
  auto num = [&](const char* sec, const char* key) -> double {
    const auto s = cfg.find(sec);
    if (s == cfg.end() || !s->is_object()) return 0;
    const auto v = s->find(key);
    return v != s->end() && v->is_number() ? v->get<double>() : 0;
  };
  return num("model", "hidden") > 64 || num("model", "embed") > 64 || num("model", "layers") > 2 ||
         num("training", "batch") > 8 || num("training", "bptt") > 64;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fs::remove_all(csfuzz::scratch_dir() + "/run");
  const std::string dir = csfuzz::scratch_dir() + "/run";
  fs::create_directories(dir);
  csfuzz::write_archive("run", std::string(reinterpret_cast<const char*>(data), size), 12);
  csfuzz::expect_only_user_errors([&] {
    cs::RunStore store(dir);
    (void)store.read_label();
    (void)store.checkpoint_steps();
    (void)cs::read_metrics(store.path("metrics.jsonl"));
    if (cs::file_exists(store.path("summary.json"))) (void)store.read_summary();
    (void)cs::list_checkpoints(dir);
    if (!cs::file_exists(store.path("config.json"))) return;
    cs::json cfg = cs::load_and_resolve(store.read_config());
    if (too_big(cfg)) return;
    if (cfg.contains("dataset") && cfg["dataset"].is_object()) {
      cfg["dataset"]["path"] = csfuzz::tiny_corpus();
      cfg["dataset"]["max_chars"] = 0;
    }
    store.write_config(cfg);  // what eval and resume read from here on
    (void)cs::load_run_task(dir, "last");
    cs::Trainer tr(cfg, cs::make_task(cfg, dir), std::make_shared<cs::RunStore>(dir));
    tr.resume();
  });
  return 0;
}
