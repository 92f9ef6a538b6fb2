// cellscope-cli export tensorboard: runs as TensorBoard event files (core/run/train/tb_events.h,
// TENSORBOARD_NOTES.md), for runs written before the trainer wrote them live, or with
// training.tensorboard off, or to gather a workspace's runs into one TensorBoard log directory.
#include <iostream>

#include "cli.h"
#include "train/tb_events.h"

namespace cli {

int cmd_export_tensorboard(const std::vector<std::string>& a) {
  auto args = parse(a, "export tensorboard");
  if (args.positional.size() != 1) throw UsageError("expected one RUN_DIR or WORKSPACE");
  if (!args.has("out") || args.get("out").empty()) throw UsageError("--out LOGDIR is required");
  const auto written = cs::tb::export_tensorboard(args.positional[0], args.get("out"));
  for (auto& d : written) std::cout << d << "\n";
  std::cerr << written.size() << " run(s) written; open with: tensorboard --logdir " << args.get("out") << "\n";
  return 0;
}

}  // namespace cli
