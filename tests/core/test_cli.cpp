// cellscope-cli: exit codes and messages; nothing created for an invalid config.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/version.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_zygote.h"
#include "corpus_fixture.h"
#include "harness.h"

namespace test_cli {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;

namespace {
std::string writeConfig(const std::string& name, const std::string& text) {
  const std::string p = cstest::temp_dir() + "/" + name;
  cstest::write_text(p, text);
  return p;
}
}  // namespace

TEST(Cli, usageAndVersion) {
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({}, &out, &err), 2);
  ASSERT_EQ(cstest::run_cli({"--help"}, &out, &err), 0);
  ASSERT_TRUE(cstest::contains(out, "train"));
  ASSERT_EQ(cstest::run_cli({"--version"}, &out, &err), 0);
  ASSERT_TRUE(cstest::contains(out, "cellscope-cli "));
  ASSERT_EQ(cstest::run_cli({"frobnicate"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "unknown command"));
  ASSERT_EQ(cstest::run_cli({"train", "--bogus"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--bogus"));
  for (auto c : {"info", "datasets", "presets", "validate", "train", "eval", "params", "bench"}) {
    ASSERT_EQ(cstest::run_cli({c, "--help"}, &out, &err), 0);
    ASSERT_TRUE(cstest::contains(out, "usage")) << c;
  }
}

TEST(Cli, infoReportsBlasAndThreads) {
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"info", "--json", "--threads", "1"}, &out, &err), 0);
  auto j = cstest::json_object(out);
  ASSERT_TRUE(j.contains("blas"));
  const json blas = j.value("blas", json::object());
  ASSERT_TRUE(!blas.value("name", std::string()).empty());
  ASSERT_EQ(j.value("intra_op_threads", 0), 1);
  ASSERT_TRUE(j.contains("cuda_available"));
  // The LibTorch this build compiled against (Debian 12: 1.13, Debian 13: 2.6), as it says at run time.
  const std::string built = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + ".";
  ASSERT_TRUE(cstest::starts_with(j.value("libtorch_version", std::string()), built)) << j.dump();
  // This machine's set-up installs OpenBLAS; a netlib BLAS would be flagged with a warning.
  ASSERT_EQ(blas.value("fast", false), !j.contains("warning"));
}

TEST(Cli, invalidConfigExits2WithPathsAndCreatesNothing) {
  const std::string cfg =
      writeConfig("bad.json", R"({"model": {"cell": "gru", "hidden": -4, "zones": 3}, "training": {"lr": "fast"}})");
  const std::string dir = cstest::temp_dir() + "/should_not_exist";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", dir}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "model.hidden") && cstest::contains(err, "training.lr") &&
              cstest::contains(err, "model.zones"))
      << err;
  ASSERT_TRUE(!std::filesystem::exists(dir));
  ASSERT_EQ(cstest::run_cli({"validate", cfg}, &out, &err), 2);
  // malformed JSON
  const std::string broken = writeConfig("broken.json", R"({"model": {"cell": )");
  ASSERT_EQ(cstest::run_cli({"train", broken, "--run-dir", dir}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "not valid JSON") && cstest::contains(err, "broken.json")) << err;
  ASSERT_TRUE(!std::filesystem::exists(dir));
  // a dataset that does not exist: named in the message, no directory
  const std::string nodata = writeConfig("nodata.json", R"({"dataset": {"path": "/nonexistent/corpus.txt"}})");
  ASSERT_EQ(cstest::run_cli({"train", nodata, "--run-dir", dir}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "/nonexistent/corpus.txt")) << err;
  ASSERT_TRUE(!std::filesystem::exists(dir));
  // --set overrides are validated too
  const std::string ok = writeConfig("ok.json", R"({"model": {"cell": "gru"}})");
  ASSERT_EQ(cstest::run_cli({"validate", ok, "--set", "model.layers=0"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "model.layers"));
}

TEST(Cli, trainEvalParamsRoundTrip) {
  const std::string text = cstest::write_text_fixture("cli.txt", 12000);
  const std::string cfg = writeConfig("tiny.json", R"({"dataset": {"path": ")" + text + R"("},
    "model": {"cell": "lstm", "embed": 8, "hidden": 16},
    "training": {"batch": 4, "bptt": 16, "steps": 30, "eval_every": 15, "threads": 1}})");
  const std::string dir = cstest::temp_dir() + "/cli_run";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", dir, "--json"}, &out, &err), 0);
  const std::vector<std::string> lines = cstest::split(out, '\n', true);  // out.trimmed().split('\n')
  ASSERT_TRUE(!lines.empty());
  auto last = cstest::json_object(lines.back());
  ASSERT_EQ(last.value("record", std::string()), "summary") << lines.back();
  ASSERT_EQ(last.value("status", std::string()), std::string("finished"));
  ASSERT_GE(lines.size(), 3u);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {  // each logged interval and evaluation, typed
    const auto m = cstest::json_object(lines[i]);
    ASSERT_EQ(m.value("record", std::string()), "metrics") << lines[i];
    ASSERT_TRUE(m.contains("step")) << lines[i];
  }
  ASSERT_EQ(last.value("run_dir", std::string()), dir);
  for (auto f : {"config.json", "vocab", "metrics.jsonl", "summary.json", "checkpoints/last.pt", "checkpoints/best.pt"})
    ASSERT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  // the same directory again: the same configuration resumes it (finished: nothing changes),
  // another one is refused
  const std::string metrics = cstest::read_text(dir + "/metrics.jsonl");
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", dir}, &out, &err), 0) << err;
  ASSERT_EQ(cstest::read_text(dir + "/metrics.jsonl"), metrics);
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", dir, "--set", "training.lr=0.5"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "already holds a run of another configuration")) << err;
  ASSERT_TRUE(cstest::contains(err, "training.lr")) << err;
  ASSERT_EQ(cstest::run_cli({"eval", dir, "--split", "valid", "--json"}, &out, &err), 0);
  auto ev = cstest::json_object(out);
  ASSERT_TRUE(ev.value("bpc", 0.0) > 0);
  ASSERT_EQ(cstest::run_cli({"eval", dir, "--split", "nonsense"}, &out, &err), 2);
  ASSERT_EQ(cstest::run_cli({"eval", cstest::temp_dir() + "/no_such_run"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "not a run directory"));
  // a label: set, read back, refused when not one line or too long, cleared
  ASSERT_EQ(cstest::run_cli({"label", dir}, &out, &err), 0);
  ASSERT_EQ(out, std::string("\n"));
  ASSERT_EQ(cstest::run_cli({"label", dir, "  LSTM, lr 2e-3 é  "}, &out, &err), 0);
  ASSERT_EQ(cstest::run_cli({"label", dir}, &out, &err), 0);
  ASSERT_EQ(out, std::string("LSTM, lr 2e-3 é\n"));
  ASSERT_EQ(cstest::run_cli({"label", dir, "two\nlines"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "one line")) << err;
  ASSERT_EQ(cstest::run_cli({"label", dir, std::string(81, 'x')}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "80 bytes")) << err;
  ASSERT_EQ(cstest::run_cli({"label", dir}, &out, &err), 0);
  ASSERT_EQ(out, std::string("LSTM, lr 2e-3 é\n"));  // a refused label leaves the old one
  ASSERT_EQ(cstest::run_cli({"label", dir, "--clear"}, &out, &err), 0);
  ASSERT_FALSE(std::filesystem::exists(dir + "/label.txt"));
  ASSERT_EQ(cstest::run_cli({"label", cstest::temp_dir() + "/no_such_run", "x"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "not a run directory"));
  ASSERT_EQ(cstest::run_cli({"params", cfg, "--json"}, &out, &err), 0);
  auto pj = cstest::json_object(out);
  // LSTM: 4H x (I + H) weights + two 4H biases; embedding V x 8; head 16V + V
  const auto mods = pj.value("modules", json::object());
  ASSERT_EQ(mods.value("stack.layer0", 0), 4 * 16 * (8 + 16) + 8 * 16);
  const int V = mods.value("embed", 0) / 8;
  ASSERT_TRUE(V > 10);
  ASSERT_EQ(mods.value("out", 0), 16 * V + V);
  int sum = 0;
  for (auto it = mods.begin(); it != mods.end(); ++it) sum += it->is_number() ? it->get<int>() : 0;
  ASSERT_EQ(pj.value("total", 0), sum);
}

TEST(Cli, benchJsonHasTheYardstickFields) {
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"bench", "--cell", "gru", "--batch", "4", "--seq", "10", "--embed", "16", "--hidden", "16",
                             "--iters", "3", "--threads", "1", "--json"},
                            &out, &err),
            0);
  auto j = cstest::json_object(out);
  for (auto k : {"cell", "batch", "seq", "throughput", "gflops", "gemm_gflops", "efficiency", "baseline", "time_ratio",
                 "flop_ratio"})
    ASSERT_TRUE(j.contains(k)) << k;
  ASSERT_TRUE(j.value("throughput", 0.0) > 0);
  ASSERT_EQ(j.value("baseline", std::string()), std::string("torch_gru"));
  ASSERT_EQ(cstest::run_cli({"bench", "--cell", "nope"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "model.cell"));
}

// The tests' CLI processes come from the zygote (tests/README.md, "How the core tests start the
// CLI"): it runs in this build, and a forked process says what the executed program says about
// itself (paths found from the executable, BLAS, threads, the CPU cache), its exit status and its
// streams included; a changed variable read at library load executes the program instead.
TEST(Cli, theZygoteRunsTheProgramAsTheExecutedProgramDoes) {
  const char* exec = std::getenv("CELLSCOPE_TEST_EXEC");
  if (!(exec && std::string(exec) == "1")) {
    ASSERT_EQ(cstest::zygote::state(), "on");
  }
  std::string forked_out, forked_err, exec_out, exec_err;
  const int forked = cstest::run_cli({"info"}, &forked_out, &forked_err);
  {
    cstest::EnvGuard e("CELLSCOPE_TEST_EXEC", "1");
    ASSERT_EQ(cstest::run_cli({"info"}, &exec_out, &exec_err), forked) << forked_err;
  }
  EXPECT_EQ(forked, 0) << forked_err;
  EXPECT_EQ(forked_out, exec_out);
  EXPECT_EQ(forked_err, exec_err);
  EXPECT_TRUE(cstest::contains(forked_out, "Resources       " + cstest::source_dir() + "/resources")) << forked_out;
  // Bad input: the same message and exit status 2 both ways.
  const std::vector<std::string> bad = {"train", cstest::temp_dir() + "/no-such-config.json"};
  std::string e1, e2;
  const int r1 = cstest::run_cli(bad, nullptr, &e1);
  {
    cstest::EnvGuard e("CELLSCOPE_TEST_EXEC", "1");
    ASSERT_EQ(cstest::run_cli(bad, nullptr, &e2), r1);
  }
  EXPECT_EQ(r1, 2);
  EXPECT_EQ(e1, e2);
  // A variable OpenMP reads as it loads, changed: the zygote declines (the harness then executes
  // the program); unchanged again, it forks, and the exit status comes back through it.
  if (cstest::zygote::state() == "on") {
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    ASSERT_GE(null, 0);
    const char* omp = std::getenv("OMP_NUM_THREADS");
    {
      cstest::EnvGuard t("OMP_NUM_THREADS", omp && std::string(omp) == "3" ? "4" : "3");
      std::string why;
      EXPECT_EQ(cstest::zygote::spawn(cstest::cli_path(), {"--version"}, null, null, null, &why), -1);
      EXPECT_TRUE(cstest::contains(why, "read when the libraries load")) << why;
    }
    const pid_t pid = cstest::zygote::spawn(cstest::cli_path(), {"train"}, null, null, null);
    ::close(null);
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_TRUE(cstest::zygote::reap(pid, &status, 60000));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;  // train without a config
  }
}

}  // namespace test_cli
