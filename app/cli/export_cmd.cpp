// cellscope-cli export: the dispatch of its forms.
//   export tensorboard RUN_DIR|WORKSPACE --out LOGDIR   export_tb_cmd.cpp
//   export RUN_DIR [--checkpoint ...] --out DIR        export_torch_cmd.cpp (a run for plain PyTorch)
#include <iostream>

#include "cli.h"

namespace cli {

int cmd_export(const std::vector<std::string>& a) {
  if (!a.empty() && a[0] == "tensorboard")
    return cmd_export_tensorboard(std::vector<std::string>(a.begin() + 1, a.end()));
  return cmd_export_torch(a);
}

}  // namespace cli
