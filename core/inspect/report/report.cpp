// The reproducibility bundle: the code version, and a report rendered atomically into its folder
// with report.md and manifest.json (report.h, REPORT_NOTES.md). The spec: report_spec.cpp; the
// items: report_render.cpp; the check: report_check.cpp.
#include "report/report.h"

#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "report/build_commit.h"
#include "report/report_internal.h"
#include "sweep/sweep.h"
#include "util/error.h"
#include "util/own_paths.h"
#include "util/paths.h"
#include "util/sha256.h"
#include "util/text.h"

#ifndef CELLSCOPE_VERSION
#define CELLSCOPE_VERSION "unknown"
#endif

namespace cs {

namespace fs = std::filesystem;

namespace report_internal {

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

}  // namespace report_internal

namespace {

std::string sha_if(const std::string& path) { return file_exists(path) ? file_sha256(path) : std::string(); }

// --out names a non-empty folder: it is replaced only when it is provably an earlier report, i.e. its
// manifest.json is a report manifest (format 1, items with their outputs) and every file in it is one
// that report wrote (report.md, manifest.json, an item's outputs). Anything else (the source tree's
// datasets/ holds a manifest.json of another kind; a report folder a user added a file to) is refused
// with one message naming what is not the report's.
void require_own_report(const std::string& dir) {
  const std::string mpath = join_path(dir, "manifest.json");
  const std::string refuse = "'" + dir + "' exists and is not an earlier report";
  if (!file_exists(mpath)) throw UserError(refuse + " (no manifest.json): give another --out");
  const json m = json::parse(read_file(mpath), nullptr, false);
  if (!m.is_object() || m.value("format", json()) != json(1) || !m.contains("items") || !m["items"].is_array() ||
      !m.contains("spec"))
    throw UserError(refuse + " (its manifest.json is not a report's): give another --out");
  std::set<std::string> own = {"report.md", "manifest.json"};
  for (auto& it : m["items"]) {
    if (!it.is_object() || !it.contains("outputs") || !it["outputs"].is_object())
      throw UserError(refuse + " (its manifest.json is not a report's): give another --out");
    for (auto& [f, sha] : it["outputs"].items()) own.insert(fs::path(f).lexically_normal().string());
  }
  // Directories are walked (not followed through links); any other entry must be one of the report's files.
  // A folder that cannot be read through is not provably the report's.
  std::error_code ec;
  for (auto i = fs::recursive_directory_iterator(dir, ec); !ec && i != fs::recursive_directory_iterator();
       i.increment(ec)) {
    std::error_code sec;
    if (i->symlink_status(sec).type() == fs::file_type::directory) continue;
    const std::string rel = i->path().lexically_relative(dir).lexically_normal().string();
    if (!own.count(rel))
      throw UserError(refuse + ": it holds '" + rel +
                      "', which that report did not write (move it, or give another --out)");
  }
  if (ec) throw UserError(refuse + ": it cannot be read through (" + ec.message() + "): give another --out");
}

}  // namespace

json code_version() {
  return {{"version", CELLSCOPE_VERSION}, {"commit", build_git_commit()}, {"libtorch", TORCH_VERSION}};
}

json render_report(const ReportSpec& spec, const std::string& spec_file, const std::string& out,
                   const ReportOptions& opt) {
  if (out.empty()) throw UserError("no output directory given");
  const std::string target = fs::path(out).lexically_normal().string();
  const std::string clean = !target.empty() && target.back() == '/' ? target.substr(0, target.size() - 1) : target;
  if (dir_exists(clean) && !list_dir(clean).empty()) require_own_report(clean);
  if (file_exists(clean) && !dir_exists(clean))
    throw UserError("'" + clean + "' is a file: give a directory for --out");
  const std::string ws = opt.workspace.empty() ? default_workspace() : opt.workspace;
  if (!dir_exists(ws)) throw UserError("workspace '" + ws + "' does not exist");
  // Every sweep that has not run, in one message with the commands that run them.
  std::vector<std::string> missing;
  for (auto& it : spec.items) {
    if (it.kind == "analysis") continue;
    const std::string name = it.spec["sweep"].get<std::string>();
    const std::string cmd = "cellscope-cli sweep run " + name + " --workspace " + ws;
    if (!file_exists(join_path(sweep_dir(ws, name), "sweep.json")) && !file_exists(join_path(name, "sweep.json")) &&
        std::find(missing.begin(), missing.end(), cmd) == missing.end())
      missing.push_back(cmd);
  }
  if (!missing.empty()) {
    std::string msg = std::to_string(missing.size()) + " sweep" + (missing.size() > 1 ? "s" : "") + " of the report " +
                      (missing.size() > 1 ? "have" : "has") + " not run in workspace " + ws + "; run:";
    for (auto& m : missing) msg += "\n  " + m;
    throw UserError(msg);
  }
  // A folder of this invocation's own beside DIR (unique name), renamed onto DIR at the end.
  const std::string tmp = make_temp_dir_beside(clean);
  try {
    report_internal::Rendered r = report_internal::render_into(spec, tmp, opt, nullptr);
    json manifest;
    manifest["format"] = 1;
    manifest["title"] = spec.title;
    manifest["created"] = now_iso();
    manifest["spec_file"] = spec_file;
    manifest["spec"] = spec.source;
    manifest["workspace"] = fs::absolute(ws).lexically_normal().string();
    manifest["code"] = code_version();
    manifest["images"] = static_cast<bool>(opt.write_images);
    manifest["tolerance"] = kReportTolerance;
    manifest["runs"] = r.runs;
    manifest["warnings"] = r.warnings;
    json items = json::array();
    std::string md = "# " + spec.title + "\n\nRendered " + manifest["created"].get<std::string>() + " by cellscope " +
                     CELLSCOPE_VERSION +
                     (std::string(build_git_commit()).empty() ? "" : std::string(" (") + build_git_commit() + ")") +
                     " from workspace `" + manifest["workspace"].get<std::string>() + "`" +
                     (spec_file.empty() ? "" : " and spec `" + spec_file + "`") +
                     ". What made every file (configs, seeds, checkpoints and dataset files by SHA-256): "
                     "[manifest.json](manifest.json); `cellscope-cli report --check DIR` recomputes it.\n";
    if (!r.warnings.empty()) {
      md += "\n**Warning: the data changed after training.**\n\n";
      for (auto& w : r.warnings) md += "- " + w + "\n";
    }
    for (size_t i = 0; i < r.items.size(); ++i) {
      json m = r.items[i].manifest;
      json files = json::object();
      for (auto& f : m["outputs"]) files[f.get<std::string>()] = sha_if(join_path(tmp, f.get<std::string>()));
      m["outputs"] = files;
      items.push_back(m);
      md += "\n## " + std::to_string(i + 1) + ". " + r.items[i].markdown;
      std::vector<std::string> seeds_runs;
      for (auto& k : m["runs"]) seeds_runs.push_back("`" + k.get<std::string>() + "`");
      md += "\nRuns (" + std::to_string(seeds_runs.size()) + "): " + join(seeds_runs, ", ") + "\n";
    }
    manifest["items"] = items;
    atomic_write(join_path(tmp, "report.md"), md);
    atomic_write(join_path(tmp, "manifest.json"), manifest.dump(2) + "\n");
    replace_dir_with(tmp, clean);  // DIR is absent, empty or an earlier report (require_own_report)
    return manifest;
  } catch (...) {
    report_internal::remove_tree(tmp);
    throw;
  }
}

}  // namespace cs
