// cellscope-cli fetch: download + convert the default corpora into the user's
// data cache (runs datasets/fetch.sh through cs::fetch_datasets).
#include <algorithm>
#include <iostream>

#include "cli.h"
#include "data/fetch.h"
#include "util/paths.h"

namespace cli {
int cmd_fetch(const std::vector<std::string>& a) {
  const Args args = parse(a, "fetch");
  if (!args.positional.empty()) throw UsageError("unexpected argument '" + args.positional[0] + "'");
  const std::string dest = args.get("dest", cs::data_cache_dir());
  if (args.has("dry-run")) {
    std::cout << "script: " << cs::fetch_script_path() << "\ndest: " << dest << "\n";
    return 0;
  }
  std::cout << "Fetching datasets into " << dest << "\n" << std::flush;
  const cs::FetchResult r =
      cs::fetch_datasets(dest, [](const std::string& l) { std::cout << l << "\n"
                                                                    << std::flush; });
  if (!r.ok()) {
    std::cerr << "cellscope-cli fetch: " << r.error_summary() << "\n";
    return 1;
  }
  return 0;
}
}  // namespace cli
