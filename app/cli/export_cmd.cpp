// cellscope-cli export: the dispatch of its forms.
//   export tensorboard RUN_DIR|WORKSPACE --out LOGDIR   export_tb_cmd.cpp
// The PyTorch export (`export RUN_DIR --out DIR`) goes in the else branch below.
#include <iostream>

#include "cli.h"

namespace cli {

int cmd_export(const std::vector<std::string>& a) {
  if (!a.empty() && a[0] == "tensorboard")
    return cmd_export_tensorboard(std::vector<std::string>(a.begin() + 1, a.end()));
  if (!a.empty() && (a[0] == "--help" || a[0] == "-h")) {
    std::cout << export_tensorboard_usage();
    return 0;
  }
  // (the PyTorch export of RUN_DIR goes here)
  std::cerr << "cellscope-cli export: expected `export tensorboard ...`\n\n" << export_tensorboard_usage();
  return 2;
}

}  // namespace cli
