// cellscope-cli import DIR: a run from an export folder whose weights came back from PyTorch
// (core/run/train/import_run.h).
#include <iostream>

#include "cli.h"
#include "train/import_run.h"
#include "train/run_store.h"
#include "util/error.h"

namespace cli {

int cmd_import(const std::vector<std::string>& a) {
  auto args = parse(a, "import");
  if (args.positional.size() != 1) throw UsageError("expected one DIR (an export folder)");
  if (args.has("run-dir") && args.has("workspace")) throw UsageError("give --run-dir or --workspace, not both");
  cs::ImportOptions o;
  o.dir = args.positional[0];
  o.launch.run_dir = args.get("run-dir", "");
  o.launch.workspace = args.get("workspace", "");
  o.launch.threads = static_cast<int>(args.get_int("threads", 0, 0, 4096));
  o.label = args.get("label", "");
  const cs::ImportedRun r = cs::import_run(o);
  if (args.has("json")) {
    std::cout << cs::json{{"run_dir", r.run_dir},
                          {"tensors", r.tensors},
                          {"weights_sha256", r.weights_sha256},
                          {"metric", r.primary_metric},
                          {"valid", r.valid},
                          {"test", r.has_test ? cs::json(r.test) : cs::json(nullptr)}}
                     .dump()
              << "\n";
  } else if (!args.has("quiet")) {
    std::cout << "imported " << r.tensors << " tensors into " << r.run_dir << ": valid " << r.primary_metric << " "
              << r.valid;
    if (r.has_test) std::cout << ", test " << r.test;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace cli
