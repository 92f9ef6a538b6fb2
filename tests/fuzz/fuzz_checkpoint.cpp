// Checkpoint files: Trainer::load_checkpoint (what `train --resume` reads: model, optimizer,
// task and trainer state, RNG) of a fuzzed file into the tiny run's trainer
// (fuzz_run_tiny.h). Input: the checkpoint file's bytes.
// Seeds: CELLSCOPE_FUZZ_WRITE_SEEDS=DIR fuzz_checkpoint writes the tiny run's checkpoints
// there and exits (tests/fuzz/seeds/checkpoint/ was made so).
#include <cstdlib>
#include <filesystem>
#include <memory>
#include "config/schema.h"
#include "fuzz_common.h"
#include "fuzz_run_tiny.h"
#include "tasks/task.h"
#include "train/trainer.h"

static std::unique_ptr<cs::Trainer> trainer;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("CELLSCOPE_FUZZ_WRITE_SEEDS")) {
    const std::string run = csfuzz::scratch_dir() + "/seedrun";
    csfuzz::train_tiny_run(run);
    std::filesystem::create_directories(out);
    for (const char* n : {"last.pt", "best.pt", "step_2.pt"})
      std::filesystem::copy_file(run + "/checkpoints/" + n, std::string(out) + "/" + n,
                                 std::filesystem::copy_options::overwrite_existing);
    std::exit(0);
  }
  const cs::json cfg = cs::load_and_resolve(csfuzz::tiny_config());
  trainer = std::make_unique<cs::Trainer>(cfg, cs::make_task(cfg), nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = csfuzz::write_file("last.pt", std::string(reinterpret_cast<const char*>(data), size));
  csfuzz::expect_only_user_errors([&] { trainer->load_checkpoint(path); });
  return 0;
}
