// cellscope-cli export RUN_DIR --out DIR: a trained run for plain PyTorch (packaging/python/cellscope_torch,
// its README.md lists the files). The export itself is the core's (run/export/torch_export.h), the one the
// window calls too; this is its command line.
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "export/torch_export.h"

namespace cli {

int cmd_export_torch(const std::vector<std::string>& a) {
  auto args = parse(a, "export");
  if (args.positional.size() != 1) throw UsageError("expected one RUN_DIR");
  apply_script_option(args);
  if (!args.has("out")) throw UsageError("--out DIR is required");
  cs::TorchExportOptions o;
  o.run_dir = args.positional[0];
  o.out = args.get("out");
  while (o.out.size() > 1 && o.out.back() == '/') o.out.pop_back();
  if (o.out.empty()) throw UsageError("--out needs a directory name (it was empty)");
  o.checkpoint = args.get("checkpoint", "best");
  try {
    cs::export_checkpoint_name(o.checkpoint);
  } catch (const cs::UserError&) {
    throw UsageError("--checkpoint must be best, last or step_N (got '" + o.checkpoint + "')");
  }
  o.force = args.has("force");
  const cs::TorchExport r = cs::export_torch(o);
  if (args.has("json")) {  // one object: where, how long, and the manifest (export.json) as written
    cs::json j = {{"out", r.out}, {"seconds", r.seconds}, {"export", r.manifest}};
    if (!r.script_copy_used.empty()) j["script_copy_used"] = r.script_copy_used;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "exported " << o.run_dir << " (" << r.checkpoint_file << ", step " << r.step << ", " << r.tensors
            << " tensors) to " << o.out << " in " << std::fixed << std::setprecision(2) << r.seconds << " s\n";
  if (!r.script_copy_used.empty())
    std::cout << "model.script '" << r.config.at("model").value("script", "") << "' is gone: exported the run's copy "
              << r.script_copy_used << " (SHA-256 checked)\n";
  return 0;
}

}  // namespace cli
