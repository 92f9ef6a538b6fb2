// cellscope-cli export tensorboard: runs as TensorBoard event files (core/run/train/tb_events.h,
// TENSORBOARD_NOTES.md), for runs written before the trainer wrote them live, or with
// training.tensorboard off, or to gather a workspace's runs into one TensorBoard log directory.
#include <iostream>

#include "cli.h"
#include "train/tb_events.h"

namespace cli {

std::string export_tensorboard_usage() {
  return "usage: cellscope-cli export tensorboard RUN_DIR|WORKSPACE --out LOGDIR\n\n"
         "Writes TensorBoard event files of a run, or of every run of a workspace (its subdirectories\n"
         "holding a config.json), from their metrics.jsonl and config.json: one subdirectory of LOGDIR\n"
         "per run, named by the run's label or else its directory name (made file-name safe; -2, -3, ...\n"
         "when two runs would share one). Scalars <split>/<metric> per step (train/loss, train/lr,\n"
         "train/throughput, valid/bpc, ...), the configuration as hparams and as text. An existing\n"
         "subdirectory of LOGDIR is never overwritten. New runs also write RUN_DIR/tensorboard/ live\n"
         "(training.tensorboard, default true).\n\n"
         "Open them with:  tensorboard --logdir LOGDIR\n"
         "                 wandb sync --sync-tensorboard LOGDIR/<run>\n"
         "                 aim convert tensorboard --logdir LOGDIR\n";
}

int cmd_export_tensorboard(const std::vector<std::string>& a) {
  if (want_help(a)) {
    std::cout << export_tensorboard_usage();
    return 0;
  }
  auto args = parse(a, {}, {"out"});
  if (args.positional.size() != 1) throw UsageError("expected one RUN_DIR or WORKSPACE");
  if (!args.has("out") || args.get("out").empty()) throw UsageError("--out LOGDIR is required");
  const auto written = cs::tb::export_tensorboard(args.positional[0], args.get("out"));
  for (auto& d : written) std::cout << d << "\n";
  std::cerr << written.size() << " run(s) written; open with: tensorboard --logdir " << args.get("out") << "\n";
  return 0;
}

}  // namespace cli
