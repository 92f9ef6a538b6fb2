// A run's history is append-only from the user's point of view (docs/RELIABILITY.md, "A run's
// history is never lost on resume"): every command that reads or goes on from an existing run
// (resume, a resume with fewer steps, fork of each checkpoint kind, a new run into an existing
// directory, a sweep meeting a point whose run lost its checkpoints) leaves each file of that run
// byte for byte as it was, or, where training goes on, keeps metrics.jsonl as a prefix and
// replaces best.pt only with a better evaluation. The resumes without last.pt or without any
// checkpoint are in test_reliability.cpp (Reliability.resumeWithout*).

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "corpus_fixture.h"
#include "harness.h"
#include "sweep/sweep.h"
#include "util/error.h"
#include "util/paths.h"

namespace test_history {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

json tiny_run_config(const std::string& corpus, int steps) {
  return {{"task", "char_lm"},
          {"dataset", {{"path", corpus}}},
          {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
          {"training",
           {{"batch", 8},
            {"bptt", 16},
            {"steps", steps},
            {"eval_every", 10},
            {"log_every", 5},
            {"checkpoint_every", 5},
            {"keep_checkpoints", 10},
            {"seed", 5},
            {"threads", 1}}}};
}

const std::string& history_corpus() {
  static const std::string c = cstest::write_text_fixture("history_corpus.txt", 8000);
  return c;
}

std::string trained_run(const std::string& name, int steps) {
  const std::string cfg = cstest::temp_dir() + "/" + name + ".json";
  cstest::write_text(cfg, tiny_run_config(history_corpus(), steps).dump(2));
  const std::string dir = cstest::temp_dir() + "/" + name;
  std::string out, err;
  EXPECT_EQ(cstest::run_cli({"train", cfg, "--run-dir", dir, "--quiet"}, &out, &err), 0) << err;
  return dir;
}

// Every file of a run directory (relative path -> bytes) but the lock, whose content is the pid
// of the last process that took it.
std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> m;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "lock")
      m[fs::relative(e.path(), dir).string()] = cstest::read_text(e.path().string());
  return m;
}

// The first difference between two snapshots, for the failure message.
std::string first_difference(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  for (auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) return k + " is gone";
    if (it->second != v) return k + " changed";
  }
  for (auto& [k, v] : b)
    if (!a.count(k)) return k + " appeared";
  return "";
}

json summary_json(const std::string& dir) { return cstest::json_object(cstest::read_text(dir + "/summary.json")); }

// The lines of metrics.jsonl up to `step` (what a resume from that step's checkpoint keeps).
std::string metrics_through(const std::string& dir, int64_t step) {
  std::string kept;
  for (auto& l : cstest::split(cstest::read_text(dir + "/metrics.jsonl"), '\n', true))
    if (cstest::json_object(l).value("step", int64_t(0)) <= step) kept += l + "\n";
  return kept;
}

}  // namespace

// Going on from a finished run: nothing changes until the steps are raised; then every line up
// to the checkpoint stays, and best.pt is replaced only when a later evaluation beats it.
TEST(History, resumeKeepsEveryLineAndTheBestCheckpointUnlessBeaten) {
  const std::string dir = trained_run("hist_resume", 20);
  const auto before = files_of(dir);
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--quiet"}, &out, &err), 0) << err;
  ASSERT_EQ(first_difference(before, files_of(dir)), "") << "resuming a finished run changed it";
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--steps", "20", "--quiet"}, &out, &err), 0) << err;
  ASSERT_EQ(first_difference(before, files_of(dir)), "") << "resuming a finished run at its own steps changed it";

  const json s0 = summary_json(dir);
  const std::string kept = metrics_through(dir, 20);
  ASSERT_FALSE(kept.empty());
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--steps", "40", "--quiet"}, &out, &err), 0) << err;
  const std::string after = cstest::read_text(dir + "/metrics.jsonl");
  ASSERT_TRUE(cstest::starts_with(after, kept)) << "metrics.jsonl lost lines of the history it went on from";
  ASSERT_GT(after.size(), kept.size());
  const json s1 = summary_json(dir);
  ASSERT_EQ(s1.value("step", 0), 40);
  if (s1.value("best_step", 0) == s0.value("best_step", 0))
    ASSERT_EQ(cstest::read_text(dir + "/checkpoints/best.pt"), before.at("checkpoints/best.pt"))
        << "best.pt was replaced without a better evaluation";
  else ASSERT_LT(s1.value("best_valid", 1e9), s0.value("best_valid", 0.0)) << "best.pt replaced by a worse evaluation";
  for (int step : {5, 10, 15, 20})
    if (before.count("checkpoints/step_" + std::to_string(step) + ".pt")) {
      ASSERT_EQ(cstest::read_text(dir + "/checkpoints/step_" + std::to_string(step) + ".pt"),
                before.at("checkpoints/step_" + std::to_string(step) + ".pt"));
    }
}

// A run stopped at step 20 of 40, resumed with --steps below 20: refused before anything is
// written (it would record a run of 10 steps that trained 20). --steps 20 ends it there.
TEST(History, resumeWithStepsBelowTheStepReachedIsRefused) {
  const std::string dir = trained_run("hist_short", 20);
  // as a run stopped (SIGTERM, the window's Stop) at step 20 of 40 leaves it
  json sum = summary_json(dir);
  sum["status"] = "stopped";
  cs::atomic_write(dir + "/summary.json", sum.dump(2));
  json cfg = cstest::json_object(cstest::read_text(dir + "/config.json"));
  cfg["training"]["steps"] = 40;
  cs::atomic_write(dir + "/config.json", cfg.dump(2));
  std::string test_line;
  for (auto& l : cstest::split(cstest::read_text(dir + "/metrics.jsonl"), '\n', true))
    if (cstest::json_object(l).value("split", std::string()) == "test") test_line = l;
  ASSERT_FALSE(test_line.empty());
  std::string m = cstest::read_text(dir + "/metrics.jsonl");
  m.erase(m.find(test_line), test_line.size() + 1);  // a stopped run has no test evaluation
  cstest::write_text(dir + "/metrics.jsonl", m);

  const auto before = files_of(dir);
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--steps", "10", "--quiet"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "training.steps (10) is below the step it has reached (20)")) << err;
  ASSERT_TRUE(cstest::contains(err, "--steps 20")) << err;
  ASSERT_EQ(first_difference(before, files_of(dir)), "") << "a refused resume changed the run";

  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--steps", "20", "--quiet"}, &out, &err), 0) << err;
  const json s = summary_json(dir);
  ASSERT_EQ(s.value("status", std::string()), "finished");
  ASSERT_EQ(s.value("step", 0), 20);
  ASSERT_TRUE(cstest::starts_with(cstest::read_text(dir + "/metrics.jsonl"), m));
  ASSERT_EQ(cstest::read_text(dir + "/checkpoints/best.pt"), before.at("checkpoints/best.pt"));
}

// A fork reads its parent only, whichever checkpoint it starts from; a new run is never written
// into an existing run directory.
TEST(History, forksAndNewRunsLeaveAnExistingRunAsItIs) {
  const std::string parent = trained_run("hist_parent", 20);
  const auto before = files_of(parent);
  std::string out, err;
  int i = 0;
  for (const std::string which : {"", "@10", "@best", "@last"}) {
    const std::string child = cstest::temp_dir() + "/hist_child" + std::to_string(i++);
    ASSERT_EQ(cstest::run_cli({"train", "--fork", parent + which, "--steps", "30", "--run-dir", child, "--quiet"}, &out,
                              &err),
              0)
        << which << ": " << err;
    ASSERT_EQ(summary_json(child).value("step", 0), 30);
    ASSERT_EQ(first_difference(before, files_of(parent)), "") << "forking " << which << " changed the parent";
  }
  const std::string cfg = cstest::temp_dir() + "/hist_parent.json";
  // The parent's own command again resumes it (finished: nothing changes); another configuration is refused.
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", parent, "--quiet"}, &out, &err), 0) << err;
  ASSERT_EQ(first_difference(before, files_of(parent)), "") << "the run's own command again changed it";
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", parent, "--set", "training.seed=99", "--quiet"}, &out, &err), 2)
      << err;
  ASSERT_TRUE(cstest::contains(err, "another configuration")) << err;
  ASSERT_EQ(first_difference(before, files_of(parent)), "") << "a new run into the directory changed it";
}

// A sweep point whose finished run lost every checkpoint (a cleanup, an interrupted copy) while
// its history remains: the run directory is kept byte for byte and the point is trained again in
// a new one; a point's run killed before its first checkpoint is still removed
// (SweepWorkers.pointLocksAndUnresumableRuns).
TEST(History, sweepKeepsAPointRunThatLostItsCheckpoints) {
  const std::string ws = cstest::temp_dir() + "/hist_ws";
  const json spec = {{"name", "keep"},
                     {"base", tiny_run_config(history_corpus(), 10)},
                     {"grid", {{"model.hidden", {16}}}},
                     {"seeds", {1}}};
  const std::string path = cstest::temp_dir() + "/hist_sweep.json";
  cstest::write_text(path, spec.dump(2));
  const auto points = cs::expand_sweep(cs::SweepSpec::from_json(spec));
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--point", "0"}, &out, &err), 0) << err;
  const std::string state_path = cs::sweep_dir(ws, "keep") + "/state.json";
  const std::string dir = cs::read_sweep_state(cs::sweep_dir(ws, "keep")).at(points[0].id).run_dir;
  for (auto& e : fs::directory_iterator(dir + "/checkpoints")) fs::remove(e.path());
  json st = cstest::json_object(cstest::read_text(state_path));
  st["points"][points[0].id] = {{"run_dir", dir}, {"status", "running"}};
  cs::atomic_write(state_path, st.dump(2));
  json sum = summary_json(dir);
  sum["status"] = "running";  // as a point killed after its last checkpoint leaves it
  cs::atomic_write(dir + "/summary.json", sum.dump(2));
  const auto before = files_of(dir);
  ASSERT_FALSE(metrics_through(dir, 10).empty());

  ASSERT_EQ(cstest::run_cli({"sweep", "run", path, "--workspace", ws, "--point", "0"}, &out, &err), 0) << err;
  ASSERT_TRUE(fs::exists(dir)) << "the point's run and its history were removed: " << err;
  ASSERT_TRUE(cstest::contains(err, "kept " + dir)) << err;
  ASSERT_EQ(first_difference(before, files_of(dir)), "") << "the kept run was changed";
  const auto now = cs::read_sweep_state(cs::sweep_dir(ws, "keep")).at(points[0].id);
  ASSERT_NE(now.run_dir, dir);
  ASSERT_EQ(now.status, "finished");
  ASSERT_EQ(summary_json(now.run_dir).value("step", 0), 10);
}

}  // namespace test_history
