// Resume safety (architecture checks before anything is written), never-saved
// non-finite weights, divergence, one writer per run directory, atomic/stranded run
// directories, checkpoint checksums, forking a run from a checkpoint. Tiny GRU char-LMs
// through cellscope-cli (docs/RELIABILITY.md).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "corpus_fixture.h"
#include "harness.h"

namespace test_reliability {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The tiny GRU (hidden 32, embed 16) on a 20,000-character fixture.
std::string tiny_config(const std::string& name, const json& training_overrides = json::object()) {
  static const std::string corpus = cstest::write_text_fixture("reliability.txt", 20000);
  json cfg = {{"task", "char_lm"},
              {"dataset", {{"path", corpus}}},
              {"model", {{"cell", "gru"}, {"embed", 16}, {"hidden", 32}}},
              {"training",
               {{"batch", 8},
                {"bptt", 20},
                {"steps", 20},
                {"eval_every", 10},
                {"log_every", 5},
                {"checkpoint_every", 5},
                {"keep_checkpoints", 10},
                {"seed", 3},
                {"threads", 1}}}};
  for (auto& [k, v] : training_overrides.items()) cfg["training"][k] = v;
  const std::string p = cstest::temp_dir() + "/" + name + ".json";
  cstest::write_text(p, cfg.dump(2));
  return p;
}

std::string train_new(const std::string& name, const json& overrides = json::object(), int expect = 0) {
  const std::string dir = cstest::temp_dir() + "/" + name;
  std::string out, err;
  const int rc = cstest::run_cli({"train", tiny_config(name, overrides), "--run-dir", dir, "--quiet"}, &out, &err);
  EXPECT_EQ(rc, expect) << err;
  return dir;
}

json summary_of(const std::string& dir) { return cstest::json_object(cstest::read_text(dir + "/summary.json")); }

// Every file of a run directory (path -> bytes), to check that nothing changed.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> m;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "lock")
      m[e.path().string()] = cstest::read_text(e.path().string());
  return m;
}

double eval_bpc(const std::string& dir, const std::string& which, int* rc_out = nullptr,
                std::string* err_out = nullptr) {
  std::string out, err;
  const int rc =
      cstest::run_cli({"eval", dir, "--checkpoint", which, "--split", "valid", "--json", "--threads", "1"}, &out, &err);
  if (rc_out) *rc_out = rc;
  if (err_out) *err_out = err;
  auto j = cstest::json_object(out);
  return j.contains("bpc") && j["bpc"].is_number() ? j["bpc"].get<double>() : std::nan("");
}

}  // namespace

// Class 1: an architecture change on resume is refused before anything is written; the run
// stays usable; a training-only change still works.
TEST(Reliability, resumeRefusesArchitectureChangesBeforeWriting) {
  const std::string dir = train_new("arch_run");
  const auto before = snapshot(dir);
  for (const std::string set : {"model.cell=lstm", "model.hidden=48", "model.embed=8", "training.batch=4"}) {
    std::string out, err;
    const int rc = cstest::run_cli({"train", "--resume", dir, "--set", set, "--steps", "30", "--quiet"}, &out, &err);
    ASSERT_EQ(rc, 2) << set << ": " << err;
    const std::string key = set.substr(0, set.find('='));
    ASSERT_TRUE(cstest::contains(err, "--fork")) << err;
    // names what differs: the option, or the parameter whose shape it changes
    ASSERT_TRUE(cstest::contains(err, key) || cstest::contains(err, "shape")) << err;
    ASSERT_TRUE(snapshot(dir) == before) << set << " changed the run directory";
  }
  int rc = 0;
  const double bpc = eval_bpc(dir, "last", &rc);
  ASSERT_EQ(rc, 0);
  ASSERT_TRUE(std::isfinite(bpc));
  // training-only changes are a resume's business
  std::string out, err;
  ASSERT_EQ(
      cstest::run_cli({"train", "--resume", dir, "--set", "training.lr=0.002", "--steps", "25", "--quiet"}, &out, &err),
      0)
      << err;
  ASSERT_EQ(summary_of(dir).value("step", 0), 25);
}

// Class 1/8: eval of a checkpoint from another architecture: exit 2 naming the checkpoint and
// the parameter, never LibTorch text or silently replaced weights.
TEST(Reliability, evalOfCheckpointFromAnotherArchitectureExits2) {
  const std::string a = train_new("arch_a");
  const std::string b = train_new("arch_b", json::object());
  // b with another hidden size
  std::string out, err;
  const std::string b2 = cstest::temp_dir() + "/arch_b48";
  json cfg = cstest::json_object(cstest::read_text(tiny_config("arch_b48")));
  cfg["model"]["hidden"] = 48;
  cstest::write_text(cstest::temp_dir() + "/arch_b48.json", cfg.dump());
  ASSERT_EQ(cstest::run_cli({"train", cstest::temp_dir() + "/arch_b48.json", "--run-dir", b2, "--quiet"}, &out, &err),
            0)
      << err;
  fs::copy_file(b2 + "/checkpoints/last.pt", a + "/checkpoints/step_999.pt");
  int rc = 0;
  eval_bpc(a, "999", &rc, &err);
  ASSERT_EQ(rc, 2) << err;
  ASSERT_TRUE(cstest::contains(err, "step_999.pt")) << err;
  ASSERT_TRUE(cstest::contains(err, "shape")) << err;
  ASSERT_TRUE(!cstest::contains(err, "Exception raised from")) << err;
  (void)b;
}

// Class 2: a NaN/Inf ending never poisons the last checkpoint; a resume at a lower lr goes past
// the step that failed; --quiet still prints why the run failed.
TEST(Reliability, nonFiniteWeightsAreNeverSaved) {
  const std::string dir = cstest::temp_dir() + "/nan_run";
  const std::string cfg = tiny_config("nan_run", {{"optimizer", "sgd"},
                                                  {"lr", 100.0},
                                                  {"weight_decay", 1.0},
                                                  {"clip", 0.0},
                                                  {"checkpoint_every", 1},
                                                  {"log_every", 1000},
                                                  {"eval_every", 0},
                                                  {"steps", 60}});
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", dir, "--quiet"}, &out, &err), 1) << err;
  ASSERT_TRUE(cstest::contains(err, "failed") && (cstest::contains(err, "NaN") || cstest::contains(err, "Inf"))) << err;
  const json s = summary_of(dir);
  ASSERT_EQ(s.value("status", std::string()), "failed");
  const int failed_at = s.value("step", 0) + 1;
  int rc = 0;
  const double bpc = eval_bpc(dir, "last", &rc, &err);
  ASSERT_EQ(rc, 0) << err;
  ASSERT_TRUE(std::isfinite(bpc)) << "last.pt holds non-finite weights: bpc " << bpc;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--set", "training.lr=0.001", "--set", "training.weight_decay=0",
                             "--steps", std::to_string(failed_at + 5), "--quiet"},
                            &out, &err),
            0)
      << err;
  ASSERT_EQ(summary_of(dir).value("status", std::string()), "finished");
}

// Class 2: a loss that is non-finite before any update is not blamed on the learning rate. The
// case is the one MZU Table 3's sweep met: gcnMZU with 16 zones of 4 units and eq. 9's signed
// degree (model.gcn_degree signed_clamped) overflows in its first forward pass; the default
// absolute degree trains the same configuration (cells/MZU_NOTES.md).
TEST(Reliability, nonFiniteUntrainedLossNamesTheModelNotTheLr) {
  const std::string path = tiny_config(
      "gcn16", {{"batch", 16}, {"bptt", 50}, {"steps", 6}, {"eval_every", 3}, {"seed", 1}, {"checkpoint_every", 0}});
  json cfg = cstest::json_object(cstest::read_text(path));
  cfg["model"] = {{"cell", "gcn_mzu"}, {"embed", 32}, {"hidden", 64},       {"zones", 16},
                  {"filter", 128},     {"depth", 1},  {"layer_norm", true}, {"candidate_dropout", 0.1}};
  cstest::write_text(path, cfg.dump(2));
  std::string out, err;
  const std::string bad = cstest::temp_dir() + "/gcn16_signed";
  ASSERT_EQ(cstest::run_cli({"train", path, "--run-dir", bad, "--set", "model.gcn_degree=signed_clamped", "--quiet"},
                            &out, &err),
            1)
      << err;
  ASSERT_TRUE(cstest::contains(err, "at step 1")) << err;
  ASSERT_TRUE(cstest::contains(err, "No update had been made yet")) << err;
  ASSERT_FALSE(cstest::contains(err, "Try a lower training.lr")) << err;
  const std::string good = cstest::temp_dir() + "/gcn16_absolute";
  ASSERT_EQ(cstest::run_cli({"train", path, "--run-dir", good, "--quiet"}, &out, &err), 0) << err;
  ASSERT_EQ(summary_of(good).value("status", std::string()), "finished");
}

// Class 2: Adam at lr 100 diverges; the run fails with a reason starting "diverged:".
TEST(Reliability, divergenceFailsTheRun) {
  const std::string dir = cstest::temp_dir() + "/diverge_run";
  const std::string cfg = tiny_config(
      "diverge_run",
      {{"optimizer", "adam"}, {"lr", 100.0}, {"log_every", 5}, {"eval_every", 0}, {"steps", 200}, {"clip", 5.0}});
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", dir, "--quiet"}, &out, &err), 1) << err;
  const json s = summary_of(dir);
  ASSERT_EQ(s.value("status", std::string()), "failed");
  ASSERT_TRUE(cstest::starts_with(s.value("reason", std::string()), "diverged:")) << s.dump();
  ASSERT_TRUE(cstest::contains(err, "diverged:")) << err;
  ASSERT_TRUE(cstest::contains(cstest::read_text(dir + "/log.txt"), "diverged:"));
  ASSERT_TRUE(s.value("step", 1000) < 200);
  // The advice fits the run (#51): under Adam a run that clips already is not told to clip, and
  // is told why clipping did not help (Adam's step does not depend on the gradient's scale).
  ASSERT_TRUE(cstest::contains(s.value("reason", std::string()), "Try a lower training.lr (training.clip is set") &&
              cstest::contains(s.value("reason", std::string()), "Adam's step does not depend on the gradient's scale"))
      << s.dump();
  ASSERT_FALSE(cstest::contains(s.value("reason", std::string()), "or gradient clipping")) << s.dump();
}

// Class 4: one writer per run directory; the refusal names the PID.
TEST(Reliability, secondWriterIsRefusedNamingThePid) {
  const std::string dir = cstest::temp_dir() + "/locked_run";
  const std::string cfg =
      tiny_config("locked_run", {{"steps", 100000}, {"log_every", 1}, {"eval_every", 0}, {"checkpoint_every", 50}});
  cstest::Process p;
  ASSERT_TRUE(p.start({"train", cfg, "--run-dir", dir, "--quiet"})) << p.err();
  const auto t0 = std::chrono::steady_clock::now();
  while (p.running() && cstest::read_text(dir + "/metrics.jsonl").size() < 200 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(p.running()) << p.err();
  const auto metrics_before = cstest::read_text(dir + "/config.json");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--quiet"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "PID " + std::to_string(p.pid()))) << err;
  ASSERT_EQ(cstest::read_text(dir + "/config.json"), metrics_before);
  p.signal(SIGTERM);
  ASSERT_TRUE(p.wait(60000));
  // the lock died with its process
  ASSERT_EQ(cstest::run_cli(
                {"train", "--resume", dir, "--steps", std::to_string(summary_of(dir).value("step", 0) + 2), "--quiet"},
                &out, &err),
            0)
      << err;
}

// Class 4: resuming a finished run writes nothing (no second test evaluation).
TEST(Reliability, resumingAFinishedRunChangesNothing) {
  const std::string dir = train_new("finished_run");
  const std::string metrics = cstest::read_text(dir + "/metrics.jsonl");
  ASSERT_EQ(cstest::count(metrics, "\"split\":\"test\""), 1);
  for (int i = 0; i < 2; ++i) {
    std::string out, err;
    ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--quiet"}, &out, &err), 0) << err;
  }
  ASSERT_EQ(cstest::read_text(dir + "/metrics.jsonl"), metrics);
}

// A metrics.jsonl line with a field of the wrong type (#52): --resume exits 2 naming the file and
// the line, never library text (it exited 1 with nlohmann's type_error), and changes nothing.
TEST(Reliability, resumeNamesAWronglyTypedMetricsLine) {
  const std::string dir = train_new("metrics_type");
  std::string m = cstest::read_text(dir + "/metrics.jsonl");
  const auto at = m.find("\"step\":5,");
  ASSERT_NE(at, std::string::npos) << m;
  const size_t line = static_cast<size_t>(std::count(m.begin(), m.begin() + static_cast<long>(at), '\n')) + 1;
  m.replace(at, 9, "\"step\":\"5\",");
  cstest::write_text(dir + "/metrics.jsonl", m);
  const auto before = snapshot(dir);
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--steps", "30", "--quiet"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, dir + "/metrics.jsonl:" + std::to_string(line) + ": ")) << err;
  ASSERT_FALSE(cstest::contains(err, "json.exception")) << err;
  ASSERT_EQ(snapshot(dir), before);
}

// A resume removes the interrupted writes of its own (NAME.tmp.<digits>), not a user's file whose
// name merely contains ".tmp." (#52: every such name in the run directory was unlinked).
TEST(Reliability, resumeRemovesOnlyItsOwnInterruptedWrites) {
  const std::string dir = train_new("stale_tmp");
  cstest::write_text(dir + "/notes.tmp.md", "mine");
  cstest::write_text(dir + "/summary.json.tmp.4242", "{\"torn");
  cstest::write_text(dir + "/checkpoints/last.pt.tmp.99", "torn");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--steps", "25", "--quiet"}, &out, &err), 0) << err;
  ASSERT_EQ(cstest::read_text(dir + "/notes.tmp.md"), "mine");
  ASSERT_FALSE(fs::exists(dir + "/summary.json.tmp.4242"));
  ASSERT_FALSE(fs::exists(dir + "/checkpoints/last.pt.tmp.99"));
}

// A new run is made in a folder of its own beside the run directory (.NAME.creating-XXXXXX, a
// name unique to the call, not the PID that another machine of a shared workspace can share) and
// renamed into place. Creations a killed process left are removed, but only folders of exactly
// that form, unlocked, holding nothing but what a creation writes: a user's look-alikes stay (#52).
TEST(Reliability, aNewRunRemovesOnlyCreationsOfItsOwn) {
  const std::string parent = cstest::temp_dir() + "/creations", run = parent + "/run";
  const std::string stale = parent + "/.run.creating-aB3xYz";  // a killed creation: lock free, its files
  fs::create_directories(stale + "/checkpoints");
  cstest::write_text(stale + "/lock", "4242\n");
  cstest::write_text(stale + "/config.json", "{}");
  cstest::write_text(stale + "/vocab.tmp.77", "torn");
  fs::create_directories(parent + "/.run.creating-Qw8rTy");  // killed before its lock: empty
  const std::string mine = parent + "/.run.creating-zz1234", old_style = parent + "/.run.creating.4242",
                    longer = parent + "/.run.creating-abcdefg";
  for (const auto& d : {mine, old_style, longer}) {
    cstest::write_text(d + "/lock", "1\n");
    cstest::write_text(d + "/config.json", "{}");
  }
  cstest::write_text(mine + "/notes.txt", "mine");  // a file no creation writes
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", tiny_config("creations"), "--run-dir", run, "--quiet"}, &out, &err), 0) << err;
  ASSERT_EQ(summary_of(run).value("status", std::string()), "finished");
  ASSERT_FALSE(fs::exists(stale));
  ASSERT_FALSE(fs::exists(parent + "/.run.creating-Qw8rTy"));
  ASSERT_EQ(cstest::read_text(mine + "/notes.txt"), "mine");
  ASSERT_TRUE(fs::exists(mine + "/config.json"));
  ASSERT_TRUE(fs::exists(old_style + "/config.json"));
  ASSERT_TRUE(fs::exists(longer + "/config.json"));
  std::set<std::string> left;
  for (auto& e : fs::directory_iterator(parent)) left.insert(e.path().filename().string());
  ASSERT_EQ(left,
            (std::set<std::string>{"run", ".run.creating-zz1234", ".run.creating.4242", ".run.creating-abcdefg"}));
}

// Every file under `dir` (relative path -> bytes).
std::map<std::string, std::string> tree_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = cstest::read_text(e.path().string());
  return out;
}

// The removal rule (#52) for `train --fork`: the parent is only read (every byte of it, the user's
// files and look-alikes of temporary names included, is the same after), files planted beside the
// new run with the names a creation uses survive, and a fork into a user's folder is refused.
TEST(Reliability, forkTouchesOnlyTheRunItMakes) {
  const std::string ws = cstest::temp_dir() + "/fork_planted", parent = ws + "/parent", child = ws + "/child";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", tiny_config("fork_parent"), "--run-dir", parent, "--quiet"}, &out, &err), 0)
      << err;
  const std::vector<std::string> planted = {parent + "/notes.md",
                                            parent + "/checkpoints/step_5.pt.bak",
                                            parent + "/checkpoints/mine.tmp.1",
                                            parent + "/summary.json.tmp.7",
                                            ws + "/child.tmp/notes.txt",
                                            ws + "/.child.creating-mine/notes.txt",
                                            ws + "/.child.old-abcdef/notes.txt",
                                            ws + "/user/notes.txt"};
  for (const auto& f : planted) cstest::write_text(f, "mine");
  const auto before = tree_of(parent);
  ASSERT_EQ(cstest::run_cli({"train", "--fork", parent, "--run-dir", child, "--steps", "24", "--quiet"}, &out, &err), 0)
      << err;
  ASSERT_EQ(summary_of(child).value("status", std::string()), "finished");
  ASSERT_TRUE(tree_of(parent) == before) << "the parent changed";
  for (const auto& f : planted) ASSERT_EQ(cstest::read_text(f), "mine") << f;
  ASSERT_EQ(
      cstest::run_cli({"train", "--fork", parent, "--run-dir", ws + "/user", "--steps", "24", "--quiet"}, &out, &err),
      2);
  ASSERT_TRUE(cstest::contains(err, "already exists")) << err;
  ASSERT_EQ(tree_of(ws + "/user"), (std::map<std::string, std::string>{{"notes.txt", "mine"}}));
  std::set<std::string> left;
  for (auto& e : fs::directory_iterator(ws)) left.insert(e.path().filename().string());
  ASSERT_EQ(left, (std::set<std::string>{"parent", "child", "child.tmp", ".child.creating-mine", ".child.old-abcdef",
                                         "user"}));
}

// Class 6: a directory stranded by an interrupted creation (older versions: checkpoints/ and a
// temporary config, no config.json) is reused by --run-dir; a new run leaves no temporary directory.
TEST(Reliability, strandedRunDirectoryIsReusable) {
  const std::string dir = cstest::temp_dir() + "/stranded/run";
  fs::create_directories(dir + "/checkpoints");
  cstest::write_text(dir + "/config.json.tmp.4242", "{\"task\": ");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", tiny_config("stranded"), "--run-dir", dir, "--quiet"}, &out, &err), 0) << err;
  ASSERT_EQ(summary_of(dir).value("status", std::string()), "finished");
  for (auto& e : fs::directory_iterator(cstest::temp_dir() + "/stranded"))
    ASSERT_EQ(e.path().filename().string(), "run") << "left behind: " << e.path();
  // a directory with real content is still refused: a run of another configuration, or content
  // that is no run (the same configuration resumes it: a requeued job's command, run again)
  ASSERT_EQ(
      cstest::run_cli({"train", tiny_config("stranded", {{"steps", 21}}), "--run-dir", dir, "--quiet"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "another configuration") &&
              cstest::contains(err, "training.steps: 20 there, 21 here"))
      << err;
  const std::string other = cstest::temp_dir() + "/stranded/not_a_run";
  cstest::write_text(other + "/notes.txt", "mine");
  ASSERT_EQ(cstest::run_cli({"train", tiny_config("stranded"), "--run-dir", other, "--quiet"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "already exists")) << err;
  ASSERT_EQ(cstest::read_text(other + "/notes.txt"), "mine");
  // a name that merely contains ".tmp." is a user's file, not an interrupted write (#52: taken over)
  const std::string user_tmp = cstest::temp_dir() + "/stranded/user_tmp";
  cstest::write_text(user_tmp + "/results.tmp.csv", "a,b");
  ASSERT_EQ(cstest::run_cli({"train", tiny_config("stranded"), "--run-dir", user_tmp, "--quiet"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "already exists")) << err;
  ASSERT_EQ(cstest::read_text(user_tmp + "/results.tmp.csv"), "a,b");
}

// Class 7: a flipped bit in a checkpoint is detected at load.
TEST(Reliability, flippedBitInCheckpointIsDetected) {
  const std::string dir = train_new("bitflip_run");
  const std::string ck = dir + "/checkpoints/last.pt";
  std::string bytes = cstest::read_text(ck);
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t at : {bytes.size() / 2, bytes.size() - 5000, size_t(100)}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    cstest::write_text(ck, bad);
    int rc = 0;
    std::string err;
    eval_bpc(dir, "last", &rc, &err);
    ASSERT_EQ(rc, 2) << "byte " << at << ": " << err;
    ASSERT_TRUE(cstest::contains(err, "last.pt") && cstest::contains(err, "corrupted")) << err;
    std::string out;
    ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--steps", "30", "--quiet"}, &out, &err), 2) << err;
  }
  cstest::write_text(ck, bytes);
  int rc = 0;
  ASSERT_TRUE(std::isfinite(eval_bpc(dir, "last", &rc)));
  ASSERT_EQ(rc, 0);
}

// Fork: a new run from a parent's checkpoint; its steps continue from N, its config records
// the parent, it trains exactly as the parent did from there, and the parent is untouched.
TEST(Reliability, forkContinuesFromTheCheckpointInANewRun) {
  const std::string parent = train_new("fork_parent", {{"steps", 30}});
  const auto before = snapshot(parent);
  const std::string child = cstest::temp_dir() + "/fork_child";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", "--fork", parent + "@15", "--run-dir", child, "--quiet"}, &out, &err), 0) << err;
  ASSERT_TRUE(snapshot(parent) == before) << "the parent changed";
  const json cfg = cstest::json_object(cstest::read_text(child + "/config.json"));
  ASSERT_TRUE(cfg.contains("parent")) << cfg.dump();
  ASSERT_EQ(cfg["parent"].value("run_dir", std::string()), fs::canonical(parent).string());
  ASSERT_EQ(cfg["parent"].value("step", -1), 15);
  ASSERT_EQ(cfg["parent"].value("checkpoint", std::string()), "step_15.pt");
  ASSERT_EQ(cstest::run_cli({"validate", child + "/config.json"}, &out, &err), 0) << err;
  // metrics start after step 15 and equal the parent's lines from there (same options)
  auto strip = [](const std::string& text, int from) {
    std::vector<json> v;
    for (auto& l : cstest::split(text, '\n', true)) {
      json j = cstest::json_object(l);
      // the test evaluation uses each run's own best.pt (the child selects its own): not compared
      if (j.value("step", 0) <= from || j.value("split", std::string()) == "test") continue;
      j.erase("elapsed");
      j.erase("throughput");
      j.erase("wall_time");
      v.push_back(j);
    }
    return v;
  };
  const auto cm = strip(cstest::read_text(child + "/metrics.jsonl"), 0);
  ASSERT_FALSE(cm.empty());
  ASSERT_EQ(cm.front().value("step", 0), 20);
  const auto pm = strip(cstest::read_text(parent + "/metrics.jsonl"), 15);
  ASSERT_EQ(cm.size(), pm.size());
  for (size_t i = 0; i < cm.size(); ++i) ASSERT_EQ(cm[i], pm[i]) << i;
  // a forked run at another lr, its default checkpoint (last), steps continuing
  const std::string child2 = cstest::temp_dir() + "/fork_child2";
  ASSERT_EQ(cstest::run_cli({"train", "--fork", parent, "--set", "training.lr=0.01", "--steps", "40", "--run-dir",
                             child2, "--quiet"},
                            &out, &err),
            0)
      << err;
  const json cfg2 = cstest::json_object(cstest::read_text(child2 + "/config.json"));
  ASSERT_EQ(cfg2["parent"].value("step", -1), 30);
  ASSERT_EQ(cfg2["parent"].value("checkpoint", std::string()), "last.pt");
  ASSERT_DOUBLE_EQ(cfg2["training"].value("lr", 0.0), 0.01);
  ASSERT_EQ(summary_of(child2).value("step", 0), 40);
  // an architecture change is refused and creates nothing
  const std::string child3 = cstest::temp_dir() + "/fork_child3";
  ASSERT_EQ(cstest::run_cli({"train", "--fork", parent + "@15", "--set", "model.hidden=48", "--steps", "40",
                             "--run-dir", child3, "--quiet"},
                            &out, &err),
            2);
  ASSERT_TRUE(cstest::contains(err, "--fork") && cstest::contains(err, "hidden")) << err;
  ASSERT_FALSE(fs::exists(child3));
  // steps not beyond the checkpoint: refused
  ASSERT_EQ(
      cstest::run_cli({"train", "--fork", parent + "@15", "--steps", "10", "--run-dir", child3, "--quiet"}, &out, &err),
      2);
  ASSERT_FALSE(fs::exists(child3));
  ASSERT_TRUE(snapshot(parent) == before) << "the parent changed";
}

// Class 6: a run killed after its creation but before its first checkpoint (config.json, maybe
// some metrics lines, no last.pt) is resumable: it starts again from step 0 and ends as a new run.
TEST(Reliability, runKilledBeforeItsFirstCheckpointResumesFromScratch) {
  const std::string ref = train_new("nockpt_ref");
  const std::string dir = train_new("nockpt_run");
  // what a kill right after the creation leaves: config.json, vocab, a metrics line, no checkpoint
  for (auto& e : fs::directory_iterator(dir + "/checkpoints")) fs::remove(e.path());
  fs::remove(dir + "/summary.json");
  const auto lines = cstest::split(cstest::read_text(dir + "/metrics.jsonl"), '\n', true);
  cstest::write_text(dir + "/metrics.jsonl", lines.at(0) + "\n");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--quiet"}, &out, &err), 0) << err;
  auto strip = [](const std::string& text) {
    std::vector<json> v;
    for (auto& l : cstest::split(text, '\n', true)) {
      json j = cstest::json_object(l);
      j.erase("elapsed");
      j.erase("throughput");
      j.erase("wall_time");
      v.push_back(j);
    }
    return v;
  };
  ASSERT_EQ(strip(cstest::read_text(dir + "/metrics.jsonl")), strip(cstest::read_text(ref + "/metrics.jsonl")));
  ASSERT_EQ(summary_of(dir).value("status", std::string()), "finished");
}

// A run that lost checkpoints/last.pt (deleted, an interrupted copy) but still holds step_<N>.pt
// resumes from the newest step_<N>.pt that loads and verifies: its history is trimmed only to
// that step, never restarted from step 0. A finished run whose step_<N>.pt is its last step stays
// as it is.
TEST(Reliability, resumeWithoutLastPtContinuesFromTheNewestIntactStepCheckpoint) {
  const std::string ref = train_new("nolast_ref");
  const std::string dir = train_new("nolast_run");
  const std::string metrics = cstest::read_text(dir + "/metrics.jsonl");
  const std::string best = cstest::read_text(dir + "/checkpoints/best.pt");
  std::string out, err;
  // finished at step 20, step_20.pt kept: nothing to train, nothing written
  fs::remove(dir + "/checkpoints/last.pt");
  const auto before = snapshot(dir);
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--quiet"}, &out, &err), 0) << err;
  ASSERT_TRUE(snapshot(dir) == before) << "resuming a finished run without last.pt changed it";
  ASSERT_EQ(cstest::read_text(dir + "/metrics.jsonl"), metrics);
  ASSERT_EQ(cstest::read_text(dir + "/checkpoints/best.pt"), best);
  // step_20.pt gone too and step_15.pt damaged: resumed from step_10.pt, trained on to step 20
  fs::remove(dir + "/checkpoints/step_20.pt");
  std::string s15 = cstest::read_text(dir + "/checkpoints/step_15.pt");
  s15[s15.size() / 2] = static_cast<char>(s15[s15.size() / 2] ^ 0x10);
  cstest::write_text(dir + "/checkpoints/step_15.pt", s15);
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--quiet"}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(err, "last.pt is missing") && cstest::contains(err, "step_10.pt")) << err;
  const std::string log = cstest::read_text(dir + "/log.txt");
  ASSERT_TRUE(cstest::contains(log, "step_10.pt")) << log;
  ASSERT_FALSE(cstest::contains(log, "starting again from step 0")) << log;
  ASSERT_TRUE(cstest::contains(log, "from step 10 to 20")) << log;
  // the same options from step 10 on: the same history as the uninterrupted run
  ASSERT_EQ(cstest::comparable_metrics(dir), cstest::comparable_metrics(ref));
  ASSERT_EQ(summary_of(dir).value("status", std::string()), "finished");
  ASSERT_TRUE(fs::exists(dir + "/checkpoints/last.pt"));
  int rc = 0;
  ASSERT_EQ(eval_bpc(dir, "best", &rc), eval_bpc(ref, "best"));
  ASSERT_EQ(rc, 0);
}

// A run whose history cannot be resumed (its checkpoints/ directory is gone, or no checkpoint
// loads) is refused with exit 2 before anything is written; --fork RUN@N of a checkpoint that is
// still there works and leaves the run as it is.
TEST(Reliability, resumeWithoutUsableCheckpointsRefusesAndKeepsTheHistory) {
  std::string out, err;
  // checkpoints/ removed
  const std::string gone = train_new("nockdir_run", {{"steps", 30}});
  fs::remove_all(gone + "/checkpoints");
  auto before = snapshot(gone);
  ASSERT_EQ(cstest::run_cli({"train", "--resume", gone, "--steps", "40", "--quiet"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "checkpoints")) << err;
  ASSERT_TRUE(cstest::contains(err, "new run")) << err;
  ASSERT_TRUE(snapshot(gone) == before) << "a refused resume changed the run directory";
  ASSERT_FALSE(fs::exists(gone + "/checkpoints"));
  // every checkpoint removed but checkpoints/ kept, history far beyond the first checkpoint
  const std::string empty = train_new("emptyck_run", {{"steps", 30}});
  for (auto& e : fs::directory_iterator(empty + "/checkpoints")) fs::remove(e.path());
  before = snapshot(empty);
  ASSERT_EQ(cstest::run_cli({"train", "--resume", empty, "--steps", "40", "--quiet"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "no checkpoint")) << err;
  ASSERT_TRUE(snapshot(empty) == before) << "a refused resume changed the run directory";
  // last.pt gone and every step_<N>.pt damaged: refused, pointing to --fork
  const std::string bad = train_new("badck_run", {{"steps", 30}, {"keep_checkpoints", 2}});
  fs::remove(bad + "/checkpoints/last.pt");
  for (const char* n : {"step_25.pt", "step_30.pt"}) {
    std::string b = cstest::read_text(bad + "/checkpoints/" + n);
    b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 0x10);
    cstest::write_text(bad + "/checkpoints/" + n, b);
  }
  before = snapshot(bad);
  ASSERT_EQ(cstest::run_cli({"train", "--resume", bad, "--steps", "40", "--quiet"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "--fork " + bad + "@best")) << err;
  ASSERT_TRUE(cstest::contains(err, "step_30.pt")) << err;
  ASSERT_TRUE(snapshot(bad) == before) << "a refused resume changed the run directory";
  // forks: the default (last) is refused, RUN@N of a checkpoint still there works; the run stays as it is
  const std::string nolast = train_new("nolast_fork_parent", {{"steps", 30}});
  fs::remove(nolast + "/checkpoints/last.pt");
  before = snapshot(nolast);
  const std::string child = cstest::temp_dir() + "/nolast_fork_child";
  ASSERT_EQ(cstest::run_cli({"train", "--fork", nolast, "--steps", "40", "--run-dir", child, "--quiet"}, &out, &err), 2)
      << err;
  ASSERT_FALSE(fs::exists(child));
  ASSERT_EQ(
      cstest::run_cli({"train", "--fork", nolast + "@25", "--steps", "40", "--run-dir", child, "--quiet"}, &out, &err),
      0)
      << err;
  ASSERT_EQ(summary_of(child).value("step", 0), 40);
  ASSERT_TRUE(snapshot(nolast) == before) << "forking changed the parent";
}

// A run killed before anything but its creation, whose checkpoints/ directory is gone too, has no
// history to lose: it starts again from step 0 and the directory is made again.
TEST(Reliability, resumeWithoutCheckpointsDirectoryAndHistoryStartsAgain) {
  const std::string dir = train_new("nockdir_fresh");
  fs::remove_all(dir + "/checkpoints");
  fs::remove(dir + "/metrics.jsonl");
  fs::remove(dir + "/summary.json");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", "--resume", dir, "--quiet"}, &out, &err), 0) << err;
  ASSERT_EQ(summary_of(dir).value("status", std::string()), "finished");
  ASSERT_TRUE(fs::exists(dir + "/checkpoints/last.pt"));
}

}  // namespace test_reliability
