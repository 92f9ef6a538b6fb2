// A report's manifest.json as `cellscope-cli report --check DIR` reads it (core/inspect/report,
// #52: a tampered manifest gave raw json.exception text or read a missing key through const
// json::operator[]). At start the target trains the tiny run (fuzz_run_tiny.h) into a workspace
// of its own and renders a report of it (training curves and a relevance analysis): each input is
// then written as that report's manifest.json and checked against the workspace, so the check
// gets past the manifest's shape into recomputing the items and comparing runs, checkpoints,
// dataset files, numbers and CSVs. The spec names the run by its name under the workspace, so a
// seed written by one process checks in another.
// Seeds: CELLSCOPE_FUZZ_WRITE_SEEDS=DIR fuzz_report_manifest writes the rendered manifest there.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include "fuzz_common.h"
#include "fuzz_run_tiny.h"
#include "report/report.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace {

struct Rendered {
  std::string workspace, report;
};

const Rendered& rendered() {
  static const Rendered r = [] {
    Rendered x;
    x.workspace = csfuzz::scratch_dir() + "/ws";
    x.report = csfuzz::scratch_dir() + "/report";
    csfuzz::train_tiny_run(x.workspace + "/tiny");
    const cs::json spec = cs::json::parse(R"({"title": "Fuzz", "items": [
      {"figure": "curves", "runs": ["tiny"]},
      {"analysis": "relevance", "run": "tiny", "checkpoint": "last", "last": 4, "text": "the sea"}]})");
    cs::ReportOptions opt;
    opt.workspace = x.workspace;
    (void)cs::render_report(cs::ReportSpec::from_json(spec, "fuzz spec"), "fuzz spec", x.report, opt);
    return x;
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const Rendered& r = rendered();
  if (const char* out = std::getenv("CELLSCOPE_FUZZ_WRITE_SEEDS")) {
    fs::create_directories(out);
    std::ofstream(std::string(out) + "/report_manifest", std::ios::binary)
        << cs::read_file(r.report + "/manifest.json");
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Rendered& r = rendered();
  {
    std::ofstream f(r.report + "/manifest.json", std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  csfuzz::expect_only_user_errors([&] {
    cs::ReportOptions opt;
    opt.workspace = r.workspace;
    (void)cs::check_report(r.report, opt).ok();
  });
  return 0;
}
