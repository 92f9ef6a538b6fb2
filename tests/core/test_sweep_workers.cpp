// Sweeps across processes and machines (core/run/sweep/sweep.h, `cellscope-cli sweep run
// --worker I/N | --point I | --jobs K`, `sweep slurm`): the shares partition the points, N
// concurrent workers run every point exactly once, a worker killed with SIGKILL resumes its
// points when run again, --jobs runs points in parallel child processes with the threads
// divided (and Ctrl-C stops them with checkpoints), and the sbatch array script, run once per
// array index the way Slurm would, completes the sweep; `sweep table` gathers what finished.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "corpus_fixture.h"
#include "harness.h"
#include "sweep/sweep.h"
#include "train/run_store.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_sweep_workers {  // this file's own names in a unity build (tests/README.md)

using namespace cs;
namespace fs = std::filesystem;

namespace {

json toy_base(const std::string& corpus, int steps, int checkpoint_every = 5, int eval_every = 10) {
  return {{"task", {{"name", "char_lm"}}},
          {"dataset", {{"path", corpus}}},
          {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
          {"training",
           {{"batch", 8},
            {"bptt", 16},
            {"steps", steps},
            {"eval_every", eval_every},
            {"log_every", 5},
            {"checkpoint_every", checkpoint_every},
            {"threads", 1}}}};
}

std::string write_spec(const std::string& name, const json& spec) {
  const std::string p = cstest::temp_dir() + "/" + name + ".json";
  atomic_write(p, spec.dump(2));
  return p;
}

// Run directories of the workspace (every directory holding config.json, hidden ones too).
std::set<std::string> runs_in(const std::string& ws) {
  std::set<std::string> out;
  if (!fs::exists(ws)) return out;
  for (auto& e : fs::directory_iterator(ws))
    if (e.is_directory() && e.path().filename() != "sweeps") out.insert(e.path().filename().string());
  return out;
}

std::string base_name(const std::string& p) { return fs::path(p).filename().string(); }

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

// True once `sig` is pending for process `pid` (its SigPnd or ShdPnd mask in /proc/PID/status),
// within timeout_ms: how a test knows a signal has reached a stopped process.
bool signal_pending(pid_t pid, int sig, int timeout_ms) {
  const unsigned long long bit = 1ull << (sig - 1);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  do {
    for (const auto& line : cstest::split(cstest::read_text("/proc/" + std::to_string(pid) + "/status"), '\n'))
      if (cstest::starts_with(line, "SigPnd:") || cstest::starts_with(line, "ShdPnd:"))
        if (std::stoull(line.substr(7), nullptr, 16) & bit) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

// The point's state (empty when none).
SweepPointState point_state(const std::string& ws, const std::string& sweep, const std::string& id) {
  auto st = read_sweep_state(sweep_dir(ws, sweep));
  auto it = st.find(id);
  return it == st.end() ? SweepPointState{} : it->second;
}

bool has_last(const std::string& run_dir) {
  return !run_dir.empty() && file_exists(join_path(join_path(run_dir, "checkpoints"), "last.pt"));
}

std::string summary_status(const std::string& run_dir) {
  if (run_dir.empty() || !file_exists(join_path(run_dir, "summary.json"))) return "";
  try {
    return RunStore(run_dir).read_summary().status;
  } catch (...) {
    return "";
  }
}

// Every point of the sweep finished, each in its own run directory, each run directory of
// the workspace belonging to one point, its config the point's.
void expect_complete(const std::string& ws, const std::string& sweep, const json& spec_json) {
  const SweepSpec spec = SweepSpec::from_json(spec_json);
  const auto points = expand_sweep(spec);
  auto st = read_sweep_state(sweep_dir(ws, sweep));
  ASSERT_EQ(st.size(), points.size());
  std::set<std::string> dirs;
  for (auto& p : points) {
    ASSERT_TRUE(st.count(p.id)) << p.id;
    const auto& s = st[p.id];
    ASSERT_EQ(s.status, "finished") << p.id;
    RunSummary sum = RunStore(s.run_dir).read_summary();
    ASSERT_EQ(sum.status, "finished") << s.run_dir;
    ASSERT_EQ(sum.step, p.config["training"]["steps"].get<int64_t>()) << s.run_dir;
    const json cfg = RunStore(s.run_dir).read_config();
    ASSERT_EQ(cfg["training"]["seed"], p.seed) << s.run_dir;
    ASSERT_EQ(cfg["model"]["hidden"], p.config["model"]["hidden"]) << s.run_dir;
    dirs.insert(base_name(s.run_dir));
  }
  ASSERT_EQ(dirs.size(), points.size()) << "two points share a run directory";
  ASSERT_EQ(runs_in(ws), dirs) << "a run directory of the workspace belongs to no point (a duplicate or an orphan)";
}

}  // namespace

class SweepWorkers : public ::testing::Test {
 protected:
  static std::string corpus_;
  static void SetUpTestSuite() { corpus_ = cstest::write_text_fixture("sweep_workers_corpus.txt", 6000); }
};
std::string SweepWorkers::corpus_;

// The shares: every point in exactly one share of N, by its index alone; "I/N" parsed strictly.
TEST_F(SweepWorkers, sharesPartitionThePoints) {
  for (int n = 1; n <= 5; ++n)
    for (int index = 0; index < 23; ++index) {
      int owners = 0;
      for (int w = 0; w < n; ++w) owners += point_in_share(index, w, n);
      ASSERT_EQ(owners, 1) << "point " << index << " of " << n << " shares";
      ASSERT_TRUE(point_in_share(index, index % n, n));
    }
  ASSERT_TRUE(point_in_share(4, 0, 1, {4}));
  ASSERT_FALSE(point_in_share(3, 0, 1, {4}));
  ASSERT_EQ(parse_worker_share("0/4"), std::make_pair(0, 4));
  ASSERT_EQ(parse_worker_share("3/4"), std::make_pair(3, 4));
  for (const char* bad : {"4/4", "1/0", "0/0", "-1/2", "1", "a/b", "1/2/3", "/2", "1/", " 1/2"})
    ASSERT_THROW(parse_worker_share(bad), UserError) << bad;
}

// N concurrent `sweep run --worker i/N` processes: every point run exactly once.
TEST_F(SweepWorkers, concurrentWorkersRunEveryPointOnce) {
  const std::string ws = cstest::temp_dir() + "/ws_workers";
  const json spec = {{"name", "workers"},
                     {"base", toy_base(corpus_, 20)},
                     {"grid", {{"model.hidden", {8, 12, 16}}}},
                     {"seeds", {1, 2}}};
  const std::string path = write_spec("workers", spec);
  std::string out, err;
  // Bad shares: one clear message, exit 2, nothing written.
  for (auto [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {"3/3", "0..2"}, {"1/0", "at least 1"}, {"x", "expected I/N"}, {"-1/2", "expected I/N"}}) {
    ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--worker", bad}, &out, &err), 2) << bad << err;
    ASSERT_TRUE(cstest::contains(err, says)) << bad << ": " << err;
  }
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--point", "6"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "points 0..5")) << err;
  // The dry run lists a share's points by their 0-based index.
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--worker", "1/3", "--dry-run"}, &out, &err), 0)
      << err;
  {
    std::vector<std::string> listed;
    for (auto& l : cstest::split(out, '\n', true))
      if (cstest::contains(l, "seed=")) listed.push_back(l);
    ASSERT_EQ(listed.size(), 2u) << out;
    ASSERT_TRUE(std::regex_search(listed[0], std::regex("^ +1  model.hidden=8,seed=2 "))) << out;
    ASSERT_TRUE(std::regex_search(listed[1], std::regex("^ +4  model.hidden=16,seed=1 "))) << out;
  }
  ASSERT_FALSE(fs::exists(ws));
  const int N = 3;
  std::vector<std::unique_ptr<cstest::Process>> ps;
  for (int i = 0; i < N; ++i) {
    ps.push_back(std::make_unique<cstest::Process>());
    ASSERT_TRUE(ps.back()->start({"sweep", "run", path, "--workspace", ws, "--worker",
                                  std::to_string(i) + "/" + std::to_string(N), "--threads", "1"}))
        << ps.back()->err();
  }
  for (int i = 0; i < N; ++i) {
    ASSERT_TRUE(ps[i]->wait(120000)) << "worker " << i << " did not end";
    ASSERT_EQ(ps[i]->exit_code(), 0) << ps[i]->err();
    // Its own points (index % N == i), and only those.
    for (int k = 0; k < 6; ++k)
      ASSERT_EQ(cstest::contains(ps[i]->err(), "[" + std::to_string(k + 1) + "/6]"), k % N == i)
          << "worker " << i << ", point " << k << ":\n"
          << ps[i]->err();
    ASSERT_TRUE(cstest::contains(ps[i]->err(), "2/2 points done (2 run now")) << ps[i]->err();
  }
  expect_complete(ws, "workers", spec);
  // A share run again: its points are finished, nothing runs.
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--worker", "1/3"}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(err, "2/2 points done (0 run now, 2 already done")) << err;
  // The table gathers every worker's points.
  ASSERT_EQ(
      cstest::run_cli({"sweep", "table", "workers", "--workspace", ws, "--out", cstest::temp_dir() + "/workers.csv"},
                      &out, &err),
      0)
      << err;
  ASSERT_FALSE(cstest::contains(err, "missing")) << err;
  const auto csv = cstest::split(cstest::read_text(cstest::temp_dir() + "/workers.csv"), '\n', true);
  ASSERT_EQ(csv.size(), 4u);
  for (size_t r = 1; r < csv.size(); ++r) ASSERT_EQ(cstest::split(csv[r], ',')[4], "2") << csv[r];
  expect_complete(ws, "workers", spec);
}

// A point being run by another process (its lock held) is left alone: `--point` and a share
// skip it and exit with 3. A point whose run directory a killed process left without a
// checkpoint starts over, and that directory is removed: one run directory per point.
TEST_F(SweepWorkers, pointLocksAndUnresumableRuns) {
  const std::string ws = cstest::temp_dir() + "/ws_locks";
  const json spec = {
      {"name", "locks"}, {"base", toy_base(corpus_, 10)}, {"grid", {{"model.hidden", {8}}}}, {"seeds", {1, 2}}};
  const std::string path = write_spec("locks", spec);
  const auto points = expand_sweep(SweepSpec::from_json(spec));
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--point", "0"}, &out, &err), 0) << err;
  const std::string dir0 = point_state(ws, "locks", points[0].id).run_dir;
  ASSERT_EQ(summary_status(dir0), "finished");
  {
    const int fd = ::open((sweep_dir(ws, "locks") + "/points/1.lock").c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--point", "1"}, &out, &err), 3) << err;
    ASSERT_TRUE(cstest::contains(err, "being run by another process, skipped")) << err;
    ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--worker", "1/2"}, &out, &err), 3) << err;
    ASSERT_TRUE(
        cstest::contains(err, "0/1 points done (0 run now, 0 already done, 0 failed, 1 being run by another process)"))
        << err;
    ::close(fd);
  }
  ASSERT_TRUE(point_state(ws, "locks", points[1].id).run_dir.empty());
  // A run directory stranded before its first checkpoint (config.json, no checkpoints/last.pt),
  // recorded for point 1 as a killed process leaves it.
  const std::string stranded = fs::absolute(ws).lexically_normal().string() + "/20990101-000000-char_lm-gru-locks-p1";
  fs::create_directories(stranded + "/checkpoints");
  fs::copy_file(dir0 + "/config.json", stranded + "/config.json");
  json st = json::parse(cstest::read_text(sweep_dir(ws, "locks") + "/state.json"));
  st["points"][points[1].id] = {{"run_dir", stranded}, {"status", "running"}};
  atomic_write(sweep_dir(ws, "locks") + "/state.json", st.dump(2));
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--point", "1", "--json"}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(err, "removed " + stranded)) << err;
  {  // --json in one process: the point's line, then the share's counts (no table: one point of two)
    const auto lines = cstest::split(out, '\n', true);
    ASSERT_EQ(lines.size(), 2u) << out;
    const json pj = cstest::json_object(lines[0]), sj = cstest::json_object(lines[1]);
    ASSERT_EQ(pj.value("record", std::string()), "point") << out;
    ASSERT_EQ(pj.value("index", -1), 1) << out;
    ASSERT_EQ(pj.value("status", std::string()), "finished") << out;
    ASSERT_EQ(pj.value("run_dir", std::string()), point_state(ws, "locks", points[1].id).run_dir) << out;
    ASSERT_EQ(sj.value("record", std::string()), "sweep") << out;
    ASSERT_EQ(sj.value("share", -1), 1) << out;
    ASSERT_FALSE(sj.contains("table")) << out;
  }
  ASSERT_FALSE(fs::exists(stranded));
  ASSERT_NE(point_state(ws, "locks", points[1].id).run_dir, stranded);
  expect_complete(ws, "locks", spec);
}

// The removal rule (#52): a sweep removes a point's run interrupted before its first checkpoint
// only when the directory holds nothing but what a run writes. A user's file in it keeps it whole
// (the point starts over in a new directory), and files planted with every name a sweep writes
// beside its own (the sweep folder, points/, state.json's temporary names, the workspace) survive.
TEST_F(SweepWorkers, plantedFilesSurviveASweep) {
  const std::string ws = fs::absolute(cstest::temp_dir() + "/ws_planted").lexically_normal().string();
  const json spec = {{"name", "planted"}, {"base", toy_base(corpus_, 10)}, {"seeds", {1}}};
  const std::string path = write_spec("planted", spec);
  const auto points = expand_sweep(SweepSpec::from_json(spec));
  const std::string sdir = sweep_dir(ws, "planted");
  std::string out, err;
  // A killed first try left a run stranded before its first checkpoint, in which the user has put
  // a notebook.
  const std::string stranded = ws + "/20990101-000000-char_lm-gru-planted-p0";
  fs::create_directories(stranded + "/checkpoints");
  cstest::write_text(stranded + "/config.json", points[0].config.dump(2));
  cstest::write_text(stranded + "/summary.json", json{{"status", "running"}, {"step", 0}}.dump());
  cstest::write_text(sdir + "/state.json",
                     json{{"points", {{points[0].id, {{"run_dir", stranded}, {"status", "running"}}}}}}.dump(2));
  const std::vector<std::string> planted = {stranded + "/analysis.ipynb",
                                            sdir + "/notes.md",
                                            sdir + "/points/mine.txt",
                                            sdir + "/state.json.tmp.mine",
                                            sdir + "/sweep.json.bak",
                                            ws + "/mine.tmp/notes.txt",
                                            ws + "/.planted.creating-mine/notes.txt"};
  for (const auto& f : planted) cstest::write_text(f, "mine");
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(err, "kept " + stranded) && cstest::contains(err, "analysis.ipynb")) << err;
  for (const auto& f : planted) ASSERT_EQ(cstest::read_text(f), "mine") << f;
  ASSERT_TRUE(fs::exists(stranded + "/config.json"));  // kept whole
  const std::string ran = point_state(ws, "planted", points[0].id).run_dir;
  ASSERT_NE(ran, stranded);
  ASSERT_EQ(summary_status(ran), "finished");
  // A run killed before its first checkpoint, with everything such a run writes (its files as the finished run
  // has them, dataset.json and the TensorBoard events included; no metrics, no checkpoint): removed whole.
  const std::string killed = ws + "/20990101-000001-char_lm-gru-planted-p0";
  fs::create_directories(killed + "/checkpoints");
  for (auto& e : fs::directory_iterator(ran))
    if (e.is_regular_file() && e.path().filename() != "metrics.jsonl")
      fs::copy_file(e.path(), fs::path(killed) / e.path().filename());
  fs::copy(fs::path(ran) / "tensorboard", fs::path(killed) / "tensorboard", fs::copy_options::recursive);
  ASSERT_TRUE(fs::exists(killed + "/dataset.json"));
  cstest::write_text(killed + "/metrics.jsonl", "");
  cstest::write_text(killed + "/summary.json", json{{"status", "running"}, {"step", 0}}.dump());
  cstest::write_text(sdir + "/state.json",
                     json{{"points", {{points[0].id, {{"run_dir", killed}, {"status", "running"}}}}}}.dump(2));
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(err, "removed " + killed)) << err;
  ASSERT_FALSE(fs::exists(killed));
  for (const auto& f : planted) ASSERT_EQ(cstest::read_text(f), "mine") << f;
}

// A point's run that lost checkpoints/last.pt but keeps step_<N>.pt is resumed from the newest of
// them in its own directory, its history up to that step kept; it is never removed as a run
// interrupted before its first checkpoint.
TEST_F(SweepWorkers, pointWithoutLastPtResumesFromItsStepCheckpoint) {
  const std::string ws = cstest::temp_dir() + "/ws_nolast";
  const json spec = {
      {"name", "nolast"}, {"base", toy_base(corpus_, 10)}, {"grid", {{"model.hidden", {8}}}}, {"seeds", {1}}};
  const std::string path = write_spec("nolast", spec);
  const auto points = expand_sweep(SweepSpec::from_json(spec));
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--point", "0"}, &out, &err), 0) << err;
  const std::string dir = point_state(ws, "nolast", points[0].id).run_dir;
  ASSERT_EQ(summary_status(dir), "finished");
  // as a point killed at step 10 leaves it, then last.pt and step_10.pt lost
  fs::remove(dir + "/checkpoints/last.pt");
  fs::remove(dir + "/checkpoints/step_10.pt");
  ASSERT_TRUE(fs::exists(dir + "/checkpoints/step_5.pt"));
  std::string kept;
  for (auto& l : cstest::split(cstest::read_text(dir + "/metrics.jsonl"), '\n', true))
    if (cstest::json_object(l).value("step", 0) <= 5) kept += l + "\n";
  ASSERT_FALSE(kept.empty());
  json sum = json::parse(cstest::read_text(dir + "/summary.json"));
  sum["status"] = "running";
  atomic_write(dir + "/summary.json", sum.dump(2));
  json st = json::parse(cstest::read_text(sweep_dir(ws, "nolast") + "/state.json"));
  st["points"][points[0].id] = {{"run_dir", dir}, {"status", "running"}};
  atomic_write(sweep_dir(ws, "nolast") + "/state.json", st.dump(2));
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--point", "0"}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(err, "resuming " + points[0].id + " -> " + dir)) << err;
  ASSERT_EQ(point_state(ws, "nolast", points[0].id).run_dir, dir);
  ASSERT_TRUE(cstest::starts_with(cstest::read_text(dir + "/metrics.jsonl"), kept));
  expect_complete(ws, "nolast", spec);
}

// A worker killed (SIGKILL) mid-run: the table says what is missing, and the same share run
// again resumes the killed point in its own run directory and finishes the rest.
TEST_F(SweepWorkers, killedWorkerResumes) {
  const std::string ws = cstest::temp_dir() + "/ws_kill";
  const json spec = {{"name", "kill"},
                     {"base", toy_base(corpus_, 100, 5, 50)},
                     {"grid", {{"model.hidden", {8, 12}}}},
                     {"seeds", {1, 2}}};
  const std::string path = write_spec("kill", spec);
  const auto points = expand_sweep(SweepSpec::from_json(spec));
  cstest::Process w0, w1;
  ASSERT_TRUE(w0.start({"sweep", "run", path, "--workspace", ws, "--worker", "0/2", "--threads", "1"})) << w0.err();
  ASSERT_TRUE(w1.start({"sweep", "run", path, "--workspace", ws, "--worker", "1/2", "--threads", "1"})) << w1.err();
  // Worker 0 (points 0 and 2) is killed as soon as its current point has a checkpoint.
  std::string killed_id, killed_dir;
  const auto t0 = std::chrono::steady_clock::now();
  while (killed_id.empty()) {
    ASSERT_TRUE(w0.running()) << "worker 0 ended before it could be killed mid-run:\n" << w0.err();
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
    for (int k : {0, 2}) {
      const auto st = point_state(ws, "kill", points[k].id);
      if (has_last(st.run_dir) && summary_status(st.run_dir) != "finished") {
        killed_id = points[k].id;
        killed_dir = st.run_dir;
        break;
      }
    }
    if (killed_id.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  w0.signal(SIGKILL);
  ASSERT_TRUE(w0.wait(10000));
  ASSERT_FALSE(w0.normal_exit());
  ASSERT_TRUE(w1.wait(120000));
  ASSERT_EQ(w1.exit_code(), 0) << w1.err();
  ASSERT_NE(summary_status(killed_dir), "finished");
  // Gathering what has finished: worker 1's two points, the rest named missing.
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "table", "kill", "--workspace", ws}, &out, &err), 0) << err;
  ASSERT_TRUE(std::regex_search(err, std::regex("[12] of 4 points missing"))) << err;
  ASSERT_EQ(cstest::run_cli({"sweep", "status", "kill", "--workspace", ws, "--json"}, &out, &err), 0) << err;
  int finished = 0;
  const json status = cstest::json_object(out);
  ASSERT_EQ(status.value("total", 0), 4) << out;
  for (auto& p : status["points"]) finished += p["status"] == "finished";
  ASSERT_GE(finished, 2);
  ASSERT_LE(finished, 3);
  // Worker 0 again: the killed point resumes from its checkpoint, in the same directory.
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--worker", "0/2", "--threads", "1"}, &out, &err,
                            120000),
            0)
      << err;
  ASSERT_TRUE(cstest::contains(err, "resuming " + killed_id + " -> " + killed_dir)) << err;
  ASSERT_EQ(point_state(ws, "kill", killed_id).run_dir, killed_dir);
  expect_complete(ws, "kill", spec);
  ASSERT_EQ(cstest::run_cli({"sweep", "table", "kill", "--workspace", ws}, &out, &err), 0) << err;
  ASSERT_FALSE(cstest::contains(err, "missing")) << err;
}

// --jobs 2: the points in two child processes at once, the threads divided; Ctrl-C (SIGINT to
// the launcher) stops both children with checkpoints, and the same command finishes the sweep.
TEST_F(SweepWorkers, jobsRunPointsInParallelProcesses) {
  const std::string ws = cstest::temp_dir() + "/ws_jobs";
  const json spec = {{"name", "jobs"},
                     {"base", toy_base(corpus_, 100, 5, 50)},
                     {"grid", {{"model.hidden", {8, 12}}}},
                     {"seeds", {1, 2}}};
  const std::string path = write_spec("jobs", spec);
  const auto points = expand_sweep(SweepSpec::from_json(spec));
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--jobs", "0"}, &out, &err), 2) << err;
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--jobs", "2", "--point", "1"}, &out, &err), 2)
      << err;
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string threads = std::to_string(std::max(1, hw / 2));
  cstest::Process launcher;
  ASSERT_TRUE(launcher.start({"sweep", "run", path, "--workspace", ws, "--jobs", "2"})) << launcher.err();
  // Both children training (each point has a checkpoint), then Ctrl-C. A child that reached its
  // first checkpoint is frozen (SIGSTOP) where it is, so that neither can run to its end while the
  // other is still starting (on a loaded 2-core machine one point finished before the Ctrl-C, CI
  // of 9180cc0); Ctrl-C goes to the launcher only, and the children are let go (SIGCONT) once the
  // SIGINT it forwards is pending in both.
  std::vector<std::string> dirs(2);
  std::map<int, pid_t> child;  // point index -> pid, from the launcher's "start point" lines
  std::set<int> frozen;
  const auto t0 = std::chrono::steady_clock::now();
  while (frozen.size() < 2) {
    ASSERT_TRUE(launcher.running()) << "the sweep ended before it could be interrupted:\n" << launcher.err();
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60)) << launcher.err();
    const std::string e0 = launcher.err();
    const std::regex start_re("start point ([0-9]+) [^ ]+ \\(pid ([0-9]+),");
    for (auto it = std::sregex_iterator(e0.begin(), e0.end(), start_re); it != std::sregex_iterator(); ++it)
      child[std::stoi((*it)[1])] = static_cast<pid_t>(std::stol((*it)[2]));
    for (int k : {0, 1}) {
      if (frozen.count(k) || !child.count(k)) continue;
      const auto st = point_state(ws, "jobs", points[k].id);
      if (!has_last(st.run_dir)) continue;
      ASSERT_EQ(::kill(child[k], SIGSTOP), 0) << k;
      ASSERT_NE(summary_status(st.run_dir), "finished") << "point " << k << " ran to its end before it was frozen";
      dirs[k] = st.run_dir;
      frozen.insert(k);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  launcher.signal(SIGINT);
  for (int k : {0, 1}) {
    ASSERT_TRUE(signal_pending(child[k], SIGINT, 30000)) << "the launcher did not forward Ctrl-C to point " << k;
    ASSERT_EQ(::kill(child[k], SIGCONT), 0) << k;
  }
  ASSERT_TRUE(launcher.wait(60000));
  ASSERT_EQ(launcher.exit_code(), 0) << launcher.err();
  const std::string e1 = launcher.err();
  ASSERT_TRUE(cstest::contains(e1, "2 points at once, " + threads + " training thread")) << e1;
  ASSERT_TRUE(cstest::contains(e1, "stopped")) << e1;
  // Two children were started at once (pids named), and none is left running.
  std::set<pid_t> pids;
  const std::regex pid_re("\\(pid ([0-9]+),");
  for (auto it = std::sregex_iterator(e1.begin(), e1.end(), pid_re); it != std::sregex_iterator(); ++it)
    pids.insert(static_cast<pid_t>(std::stol((*it)[1])));
  ASSERT_EQ(pids.size(), 2u) << e1;
  for (pid_t p : pids) ASSERT_FALSE(alive(p)) << p;
  for (auto& d : dirs) {
    ASSERT_EQ(summary_status(d), "stopped") << d;
    ASSERT_TRUE(has_last(d)) << d;
  }
  // Each child's log: its point, with the divided threads.
  for (int k : {0, 1}) {
    const std::string log = cstest::read_text(sweep_dir(ws, "jobs") + "/logs/point-" + std::to_string(k) + ".log");
    ASSERT_TRUE(cstest::contains(log, "(threads " + threads + ")")) << log;
  }
  // The same command again: the stopped points resume in their directories, all four finish.
  // With --json: a typed line per point ended, then the sweep's counts and table (no text table).
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--jobs", "2", "--json"}, &out, &err, 120000), 0)
      << err;
  ASSERT_TRUE(cstest::contains(err, "[4/4 done, 0 running")) << err;
  {
    const auto lines = cstest::split(out, '\n', true);
    ASSERT_GE(lines.size(), 3u) << out;  // the two stopped points, then the sweep
    std::set<int> ended;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      const json pj = cstest::json_object(lines[i]);
      ASSERT_EQ(pj.value("record", std::string()), "point") << lines[i];
      ASSERT_EQ(pj.value("status", std::string()), "finished") << lines[i];
      ASSERT_TRUE(fs::exists(pj.value("run_dir", std::string()) + "/summary.json")) << lines[i];
      ended.insert(pj.value("index", -1));
    }
    ASSERT_EQ(ended.size(), lines.size() - 1) << out;
    const json sj = cstest::json_object(lines.back());
    ASSERT_EQ(sj.value("record", std::string()), "sweep") << lines.back();
    ASSERT_EQ(sj.value("done", -1), 4) << lines.back();
    ASSERT_EQ(sj.value("failed", -1), 0) << lines.back();
    ASSERT_FALSE(sj.value("stopped", true)) << lines.back();
    ASSERT_TRUE(sj.contains("table") && sj["table"].is_object()) << lines.back();
    ASSERT_FALSE(cstest::contains(out, "mean +- std over seeds")) << "no text table with --json: " << out;
  }
  for (int k : {0, 1}) {
    const std::string log = cstest::read_text(sweep_dir(ws, "jobs") + "/logs/point-" + std::to_string(k) + ".log");
    ASSERT_TRUE(cstest::contains(log, "resuming")) << log;
  }
  for (size_t k = 0; k < dirs.size(); ++k) ASSERT_EQ(point_state(ws, "jobs", points[k].id).run_dir, dirs[k]);
  expect_complete(ws, "jobs", spec);
}

// `sweep slurm`: the array range, the #SBATCH options and the command; the script run once
// per array index (as Slurm would, SLURM_ARRAY_TASK_ID set) completes the sweep, a task run
// again exits at once, and `sweep table` gathers what finished in between.
TEST_F(SweepWorkers, slurmArrayScript) {
  const std::string ws = cstest::temp_dir() + "/ws_slurm";
  const json spec = {
      {"name", "slurm"}, {"base", toy_base(corpus_, 20)}, {"grid", {{"model.hidden", {8, 12}}}}, {"seeds", {1, 2, 3}}};
  const std::string path = write_spec("slurm", spec);
  const std::string script = cstest::temp_dir() + "/slurm job.sh";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "slurm", path, "--workspace", ws, "--cpus-per-task", "0"}, &out, &err), 2) << err;
  ASSERT_EQ(cstest::run_cli({"sweep", "slurm", path, "--workspace", ws, "--partition", "a b"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "--partition 'a b'")) << err;
  ASSERT_FALSE(fs::exists(ws + "/sweeps/slurm"));
  ASSERT_EQ(
      cstest::run_cli({"sweep", "slurm", path, "--workspace", ws, "--out", script, "--partition", "debug", "--time",
                       "00:10:00", "--cpus-per-task", "2", "--mem", "1G", "--account", "lab", "--max-running", "4"},
                      &out, &err),
      0)
      << err;
  const std::string text = cstest::read_text(script);
  const auto lines = cstest::split(text, '\n', true);
  ASSERT_EQ(lines[0], "#!/bin/bash");
  // sbatch reads #SBATCH lines up to the first command: all of them come before it.
  size_t first_cmd = 0;
  while (first_cmd < lines.size() && lines[first_cmd][0] == '#') ++first_cmd;
  std::set<std::string> sbatch(lines.begin(), lines.begin() + static_cast<long>(first_cmd));
  for (const std::string& l : std::vector<std::string>{
           "#SBATCH --array=0-5%4", "#SBATCH --partition=debug", "#SBATCH --time=00:10:00", "#SBATCH --cpus-per-task=2",
           "#SBATCH --mem=1G", "#SBATCH --account=lab", "#SBATCH --requeue",
           "#SBATCH --output=" + fs::absolute(ws).lexically_normal().string() + "/sweeps/slurm/slurm/%A_%a.out"})
    ASSERT_TRUE(sbatch.count(l)) << l << "\n" << text;
  for (size_t i = first_cmd; i < lines.size(); ++i) ASSERT_FALSE(cstest::starts_with(lines[i], "#SBATCH")) << text;
  ASSERT_TRUE(cstest::contains(text, "CLI='" + fs::absolute(cstest::cli_path()).lexically_normal().string() + "'"))
      << text;
  ASSERT_TRUE(
      cstest::contains(text, "sweep run \"$SWEEP\" --workspace \"$WORKSPACE\" --point \"$SLURM_ARRAY_TASK_ID\""))
      << text;
  ASSERT_TRUE(cstest::contains(text, "--threads \"${SLURM_CPUS_PER_TASK:-1}\"")) << text;
  ASSERT_TRUE(file_exists(ws + "/sweeps/slurm/sweep.json"));
  ASSERT_TRUE(fs::is_directory(ws + "/sweeps/slurm/slurm"));
  // Outside an array task: refused with a message.
  const std::string log = cstest::temp_dir() + "/slurm_task.log";
  auto task = [&](const std::string& env) {
    const std::string cmd = "env -u SLURM_ARRAY_TASK_ID " + env + " bash '" + script + "' >'" + log + "' 2>&1";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  ASSERT_NE(task(""), 0);
  ASSERT_TRUE(cstest::contains(cstest::read_text(log), "not an array task")) << cstest::read_text(log);
  // Array tasks 0-2, one after another.
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(task("SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=" + std::to_string(i) + " SLURM_CPUS_PER_TASK=1"), 0)
        << cstest::read_text(log);
    ASSERT_TRUE(cstest::contains(cstest::read_text(log), "(threads 1)")) << cstest::read_text(log);
  }
  ASSERT_EQ(cstest::run_cli({"sweep", "table", "slurm", "--workspace", ws}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(err, "3 of 6 points missing")) << err;
  ASSERT_EQ(cstest::run_cli({"sweep", "status", "slurm", "--workspace", ws}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(out, "3/6 points done")) << out;
  // Tasks 3-5 at once, as Slurm runs an array.
  {
    std::string cmd =
        "env -u SLURM_ARRAY_TASK_ID bash -c 'pids=; for i in 3 4 5; do SLURM_ARRAY_TASK_ID=$i SLURM_CPUS_PER_TASK=1 bash \"$0\" >\"$1.$i\" 2>&1 & pids=\"$pids $!\"; done; rc=0; for p in $pids; do wait $p || rc=1; done; exit $rc' '" +
        script + "' '" + log + "'";
    const int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
        << cstest::read_text(log + ".3") << cstest::read_text(log + ".4") << cstest::read_text(log + ".5");
  }
  expect_complete(ws, "slurm", spec);
  ASSERT_EQ(cstest::run_cli({"sweep", "table", "slurm", "--workspace", ws}, &out, &err), 0) << err;
  ASSERT_FALSE(cstest::contains(err, "missing")) << err;
  // A re-submitted task whose point is finished exits at once.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(task("SLURM_ARRAY_TASK_ID=4 SLURM_CPUS_PER_TASK=1"), 0) << cstest::read_text(log);
  ASSERT_TRUE(cstest::contains(cstest::read_text(log), "finished already")) << cstest::read_text(log);
  ASSERT_TRUE(cstest::contains(cstest::read_text(log), "1/1 points done (0 run now, 1 already done"))
      << cstest::read_text(log);
  ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  expect_complete(ws, "slurm", spec);
}

// Preemption or the time limit (`--signal=B:TERM@60`): Slurm's TERM to the batch shell reaches the
// run, which stops with a checkpoint and exits 75; the task then requeues itself
// (`scontrol requeue JOB_TASK`) so that Slurm runs it again, resuming from the checkpoint.
TEST_F(SweepWorkers, slurmTaskStoppedBySigtermRequeuesItself) {
  const std::string ws = cstest::temp_dir() + "/ws_slurm_term";
  const json spec = {{"name", "slurmterm"}, {"base", toy_base(corpus_, 100000, 50, 0)}, {"seeds", {1}}};
  const std::string path = write_spec("slurmterm", spec);
  const std::string script = cstest::temp_dir() + "/slurm_term.sh";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "slurm", path, "--workspace", ws, "--out", script}, &out, &err), 0) << err;
  // A stand-in for Slurm's scontrol that records its arguments.
  const std::string bin = cstest::temp_dir() + "/fake_slurm_bin", calls = cstest::temp_dir() + "/scontrol.calls";
  cstest::write_text(bin + "/scontrol", "#!/bin/sh\necho \"$@\" >> '" + calls + "'\n");
  fs::permissions(bin + "/scontrol", fs::perms::owner_all);
  const std::string log = cstest::temp_dir() + "/slurm_term.log", rc_file = cstest::temp_dir() + "/slurm_term.rc";
  // The batch shell in the background; TERM to it (not to the run) once the run has logged.
  // (a simple command in the background, so that $p is the batch shell itself)
  const std::string cmd = "cd '" + cstest::temp_dir() + "'\nPATH='" + bin +
                          "':\"$PATH\" SLURM_ARRAY_JOB_ID=88 SLURM_ARRAY_TASK_ID=0 bash '" + script + "' >'" + log +
                          "' 2>&1 &\np=$!; for i in $(seq 600); do "
                          "if [ -n \"$(find '" +
                          ws +
                          "' -name metrics.jsonl -size +200c 2>/dev/null)\" ]; then break; fi; "
                          "sleep 0.1; done; kill -TERM $p; wait $p; echo $? > '" +
                          rc_file + "'";
  const std::string driver = cstest::temp_dir() + "/slurm_term_driver.sh";
  cstest::write_text(driver, cmd + "\n");
  ASSERT_NE(std::system(("bash '" + driver + "'").c_str()), -1);
  ASSERT_EQ(cstest::read_text(rc_file), "75\n") << cstest::read_text(log);
  ASSERT_EQ(cstest::read_text(calls), "requeue 88_0\n") << cstest::read_text(log);
  const auto points = expand_sweep(SweepSpec::from_json(spec));
  const std::string run = point_state(ws, "slurmterm", points[0].id).run_dir;
  ASSERT_FALSE(run.empty());
  RunStore store(run);
  ASSERT_EQ(store.read_summary().status, std::string("stopped"));
  ASSERT_TRUE(file_exists(store.path("checkpoints/last.pt")));
}

}  // namespace test_sweep_workers
