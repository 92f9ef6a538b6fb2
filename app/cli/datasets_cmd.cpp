#include <algorithm>
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "data/bench_data.h"
#include "data/cbt_build.h"
#include "data/manifest.h"
#include "util/error.h"
#include "util/paths.h"

namespace cli {

namespace {

// `datasets build NAME [--force] [--json]`: builds a dataset Cellscope makes itself ("obtain": "build",
// e.g. the CBT-style cloze sets) into the data cache and prints its counts.
int datasets_build(const Args& args) {
  if (args.positional.size() != 2) throw UsageError("datasets build needs exactly one dataset NAME");
  const std::string name = args.positional[1];
  const cs::json m = cs::load_manifest();
  const cs::json* e = cs::find_manifest_entry(m, name);
  if (!e) {
    std::string known;
    for (auto& n : cs::manifest_names(m)) {
      const cs::json* x = cs::find_manifest_entry(m, n);
      if (x->value("obtain", "") == "build") known += (known.empty() ? "" : ", ") + n;
    }
    throw cs::UserError("unknown dataset '" + name + "' (datasets Cellscope builds: " + known + ")");
  }
  if (e->value("obtain", "") != "build")
    throw cs::UserError("dataset '" + name + "' is not built by Cellscope (obtain: " + e->value("obtain", "") +
                        "); see cellscope-cli datasets and datasets/README.md");
  const bool was = cs::dataset_fetched(*e);
  const cs::json info = cs::build_manifest_dataset(m, *e, args.has("force"));
  const std::string dir = cs::join_path(cs::data_cache_dir(), e->at("path").get<std::string>());
  if (args.has("json")) {
    std::cout << cs::json{{"name", name}, {"path", dir}, {"rebuilt", !was || args.has("force")}, {"build", info}}.dump(
                     2)
              << "\n";
    return 0;
  }
  std::cout << (was && !args.has("force") ? "already built: " : "built: ") << name << " -> " << dir << "\n";
  if (info.is_object() && info.contains("counts")) {
    const cs::json& c = info["counts"];
    std::cout << "  " << c.value("sentences", 0) << " sentences, " << c.value("tokens", 0) << " tokens\n";
    for (const char* s : {"train", "valid", "test"}) {
      const cs::json& x = c[s];
      std::cout << "  " << std::left << std::setw(6) << s << std::right << std::setw(7) << x.value("questions", 0)
                << " questions  (" << x.value("windows", 0)
                << " windows; skipped: " << x.value("skipped_few_candidates", 0) << " < "
                << info.value("candidates", 10) << " candidates, " << x.value("skipped_not_in_context", 0)
                << " answer not in context; " << x.value("no_class_word", 0) << " without a " << info.value("class", "")
                << " word)\n";
    }
  }
  return 0;
}

}  // namespace

int cmd_datasets(const std::vector<std::string>& a) {
  if (!a.empty() && a[0] == "show") return cmd_datasets_show(std::vector<std::string>(a.begin() + 1, a.end()));
  auto args = parse(a, "datasets");
  if (!args.positional.empty() && args.positional[0] == "build") return datasets_build(args);
  if (!args.positional.empty())
    throw UsageError("unexpected argument '" + args.positional[0] + "' (or: datasets build NAME)");
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
  std::cout << std::left << std::setw(24) << "name" << std::setw(22) << "tasks" << std::setw(12) << "format"
            << std::setw(10) << "obtain"
            << "status\n";
  for (auto& r : out) {
    std::string tasks;
    for (auto& t : r["tasks"]) tasks += (tasks.empty() ? "" : ",") + t.get<std::string>();
    std::cout << std::left << std::setw(24) << r["name"].get<std::string>() << std::setw(22) << tasks << std::setw(12)
              << r["format"].get<std::string>() << std::setw(10) << r["obtain"].get<std::string>()
              << (r["fetched"].get<bool>()
                      ? (r["obtain"] == "build" ? "built" : "fetched")
                      : (r["obtain"] == "build" ? "not built (built on first use)" : "not fetched"))
              << "\n";
  }
  return 0;
}

}  // namespace cli
