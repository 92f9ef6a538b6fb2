#include <iostream>

#include "cli.h"
#include "util/paths.h"

namespace cli {
int cmd_datasets(const std::vector<std::string>& a) {
  std::cout << "manifest: " << cs::datasets_manifest_path() << "\ncache: " << cs::data_cache_dir() << "\n";
  return 0;
}
}  // namespace cli
