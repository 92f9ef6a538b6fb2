#include <iomanip>
#include <iostream>

#include "cli.h"
#include "data/bench_data.h"
#include "data/manifest.h"
#include "util/paths.h"

namespace cli {

int cmd_datasets(const std::vector<std::string>& a) {
  if (!a.empty() && a[0] == "show") return cmd_datasets_show(std::vector<std::string>(a.begin() + 1, a.end()));
  if (std::find(a.begin(), a.end(), "--help") != a.end()) {
    std::cout << "usage: cellscope-cli datasets [--json] | datasets show NAME (see datasets show --help)\n"
                 "Lists the datasets of the manifest (" + cs::datasets_manifest_path() + "), their task(s), format,\n"
                 "licence, and whether they are in the data cache (" + cs::data_cache_dir() + ").\n"
                 "Fetch the default corpora with: bash datasets/fetch.sh (packaging/setup.sh does it).\n";
    return 0;
  }
  auto args = parse(a, {"json"}, {});
  cs::json m = cs::load_manifest();
  cs::json out = cs::json::array();
  for (auto& name : cs::manifest_names(m)) {
    const cs::json* e = cs::find_manifest_entry(m, name);
    std::string missing;
    const bool fetched = cs::dataset_fetched(*e, &missing);
    cs::json row = {{"name", name},
                    {"tasks", e->value("tasks", cs::json::array())},
                    {"format", e->value("format", "")},
                    {"licence", e->value("licence", "")},
                    {"obtain", e->value("obtain", "")},
                    {"fetched", fetched}};
    if (!fetched) row["missing"] = missing;
    out.push_back(row);
  }
  if (args.has("json")) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << std::left << std::setw(16) << "name" << std::setw(22) << "tasks" << std::setw(12) << "format"
            << std::setw(10) << "obtain" << "status\n";
  for (auto& r : out) {
    std::string tasks;
    for (auto& t : r["tasks"]) tasks += (tasks.empty() ? "" : ",") + t.get<std::string>();
    std::cout << std::left << std::setw(16) << r["name"].get<std::string>() << std::setw(22) << tasks << std::setw(12)
              << r["format"].get<std::string>() << std::setw(10) << r["obtain"].get<std::string>()
              << (r["fetched"].get<bool>() ? "fetched" : "not fetched") << "\n";
  }
  return 0;
}

}  // namespace cli
