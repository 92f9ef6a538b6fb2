// The plain-PyTorch Python peers of `bench --peer` (core/run/bench/peers/peers.py) are the same
// models as Cellscope's cells: `bench --peer-check` exports Cellscope's initial parameters, one
// batch, the loss and every gradient in double; the peer (Debian's python3-torch) loads them and
// must agree to 1e-10. And `bench --peer` reports what the issue's table needs.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_peer.h"
#include "harness.h"

namespace test_bench_peers {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;

namespace {
const std::vector<std::string> kCells = {"gru_dt",      "sat_mzu",  "gcn_mzu",           "cap_mzu",
                                         "cru_shallow", "cru_deep", "cru_deep_enhanced", "mcrnn"};
}

TEST(BenchPeers, everyCellAgreesWithItsPythonPeerToOneEMinus10) {
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-check", "--cell", "all", "--json"}, &out, &err), 0) << out << err;
  auto j = cstest::json_object(out);
  ASSERT_TRUE(j.value("ok", false)) << out;
  ASSERT_TRUE(j.contains("results"));
  std::vector<std::string> seen;
  for (const auto& r : j["results"]) {
    const std::string cell = r.value("cell", std::string());
    seen.push_back(cell);
    ASSERT_TRUE(r.value("ok", false)) << cell;
    ASSERT_LE(r.value("loss_rel_err", 1.0), 1e-10) << cell;
    ASSERT_GT(r.value("loss", 0.0), 1.0) << cell;  // ~ln(11) for 11 symbols, plus the MZUs' eq. 19 term
    ASSERT_TRUE(r.contains("params"));
    ASSERT_GE(r["params"].size(), 5u) << cell;  // embedding, out weight and bias, and the cell's own
    int nonzero = 0;
    for (auto& [name, p] : r["params"].items()) {
      ASSERT_LE(p.value("max_rel_err", 1.0), 1e-10) << cell << " " << name;
      ASSERT_LE(p.value("norm_rel_err", 1.0), 1e-10) << cell << " " << name;
      nonzero += p.value("cellscope_grad_norm", 0.0) > 0;
    }
    ASSERT_GE(nonzero, static_cast<int>(r["params"].size()) - 1) << cell;  // (gru_dt's transition w_ih is [3H, 0])
  }
  ASSERT_EQ(seen, kCells);
}

// MC-RNN over an MZU base (cellscope_torch's MCRNN with an MZU: each base step a sequence of length one over the
// B*K channel rows, eq. 19's term per step as Cellscope's MC-RNN adds it): loss with the term, and every gradient.
TEST(BenchPeers, mcrnnOverEachMzuBaseAgreesWithItsPythonPeer) {
  for (const std::string base : {"sat_mzu", "gcn_mzu", "cap_mzu"}) {
    std::string out, err;
    ASSERT_EQ(cstest::run_cli({"bench", "--peer-check", "--cell", "mcrnn", "--set", "model.base=" + base, "--json"},
                              &out, &err),
              0)
        << base << ": " << out << err;
    const auto j = cstest::json_object(out);
    ASSERT_TRUE(j.value("ok", false)) << base << ": " << out;
    ASSERT_EQ(j["results"].size(), 1u) << out;
    const json& r = j["results"][0];
    ASSERT_LE(r.value("loss_rel_err", 1.0), 1e-10) << base;
    ASSERT_TRUE(r["params"].contains("stack.layer0.base.first.w_h")) << base << ": " << r["params"].dump();
    for (auto& [name, p] : r["params"].items()) {
      ASSERT_LE(p.value("max_rel_err", 1.0), 1e-10) << base << " " << name;
      ASSERT_LE(p.value("norm_rel_err", 1.0), 1e-10) << base << " " << name;
    }
    ASSERT_GT(r["params"]["stack.layer0.base.first.w_h"].value("cellscope_grad_norm", 0.0), 0.0) << base;
  }
}

TEST(BenchPeers, aGradientThatDiffersIsReportedByName) {
  // Export gcnMZU+DT, change one gradient entry of w_g by 1e-8 relative: the check must fail and name it.
  const std::string dir = cstest::temp_dir() + "/peer-export";
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-export", dir, "--cell", "gcn_mzu"}, &out, &err), 0) << err;
  auto meta = cstest::json_object(cstest::read_text(dir + "/gcn_mzu/model.json"));
  int64_t off = -1;
  for (auto& e : meta["params"])
    if (e.value("name", std::string()) == "stack.layer0.first.w_g") off = e.value("offset", int64_t(-1));
  ASSERT_GE(off, 0);
  {
    std::fstream f(dir + "/gcn_mzu/grads.f64", std::ios::in | std::ios::out | std::ios::binary);
    double v = 0;
    f.seekg(off * 8);
    f.read(reinterpret_cast<char*>(&v), 8);
    v = v == 0 ? 1e-3 : v * (1 + 1e-8);
    f.seekp(off * 8);
    f.write(reinterpret_cast<const char*>(&v), 8);
    ASSERT_TRUE(static_cast<bool>(f));
  }
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-check", "--from", dir + "/gcn_mzu", "--json"}, &out, &err), 1)
      << out << err;
  auto j = cstest::json_object(out);
  ASSERT_FALSE(j.value("ok", true));
  const auto& p = j["results"][0]["params"];
  ASSERT_GT(p["stack.layer0.first.w_g"].value("max_rel_err", 0.0), 1e-10);
  ASSERT_LE(p["stack.layer0.first.w_h"].value("max_rel_err", 1.0), 1e-10);
  // the text report names it too
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-check", "--from", dir + "/gcn_mzu"}, &out, &err), 1);
  ASSERT_TRUE(cstest::contains(out, "DIFFERS")) << out;
  ASSERT_TRUE(cstest::contains(out, "stack.layer0.first.w_g")) << out;
  // Exported again over its own earlier export: replaced whole (the changed gradient is gone) ...
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-export", dir, "--cell", "gcn_mzu"}, &out, &err), 0) << err;
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-check", "--from", dir + "/gcn_mzu"}, &out, &err), 0) << out << err;
  // ... but a folder of that name holding anything else is left as it is, and the command says why (#52).
  const std::string mine = cstest::temp_dir() + "/peer-mine";
  cstest::write_text(mine + "/gru_dt/params.f64", "my data");
  cstest::write_text(mine + "/gru_dt/notes.txt", "mine");
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-export", mine, "--cell", "gru_dt"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "is not replaced: it holds 'notes.txt'")) << err;
  ASSERT_EQ(cstest::read_text(mine + "/gru_dt/params.f64"), "my data");
  std::filesystem::remove(mine + "/gru_dt/notes.txt");  // only its file names, but not its model.json
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-export", mine, "--cell", "gru_dt"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "its model.json is not a peer export's")) << err;
  ASSERT_EQ(cstest::read_text(mine + "/gru_dt/params.f64"), "my data");
  size_t left = 0;  // and no folder of its own left beside it
  for (const auto& e : std::filesystem::directory_iterator(mine)) left += e.path().filename() != "gru_dt";
  ASSERT_EQ(left, 0u);
}

TEST(BenchPeers, anOptionThePeerDoesNotImplementIsRefusedByName) {
  // The check's temporary directory goes however it ends (a refusal left one behind in /tmp, #52).
  const std::string tmp = cstest::temp_dir() + "/peer_tmp";
  std::filesystem::create_directories(tmp);
  cstest::EnvGuard t("TMPDIR", tmp);
  std::string out, err;
  ASSERT_NE(cstest::run_cli({"bench", "--peer-check", "--cell", "gcn_mzu", "--set", "model.candidate_dropout=0.5"},
                            &out, &err),
            0);
  ASSERT_TRUE(cstest::contains(err, "candidate_dropout")) << err;
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-check", "--cell", "lstm"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "no Python peer")) << err;
  ASSERT_EQ(cstest::run_cli({"bench", "--peer-check", "--cell", "gru_dt"}, &out, &err), 0) << err;
  ASSERT_TRUE(std::filesystem::is_empty(tmp))
      << "left in $TMPDIR: " << std::filesystem::directory_iterator(tmp)->path();
}

// Every timed step's seconds in the order they ran (a warm-up trend shows there), one per step
// timed, and the reported time is their median (the upper one of an even count, as sorted).
static void expect_step_seconds(const json& m, const char* who) {
  ASSERT_TRUE(m.contains("step_seconds")) << who << ": " << m.dump();
  std::vector<double> ts = m["step_seconds"].get<std::vector<double>>();
  ASSERT_EQ(static_cast<int64_t>(ts.size()), m.value("steps_timed", int64_t(-1))) << who;
  for (double t : ts) ASSERT_GT(t, 0.0) << who;
  std::sort(ts.begin(), ts.end());
  ASSERT_EQ(ts[ts.size() / 2], m.value("seconds_per_step", -1.0)) << who;
}

namespace {

// Cellscope's figures of one row of `bench --peer --json`: time, FLOPs, memory, its own large-GEMM rate and the
// efficiency they make, the timed steps, and the GEMM floor.
void expect_cellscope_figures(const json& row) {
  const auto& c = row["cellscope"];
  ASSERT_GT(c.value("seconds_per_step", 0.0), 0.0);
  ASSERT_GT(c.value("flops_per_step", 0.0), 0.0);
  ASSERT_GE(c.value("peak_step_bytes", -1.0), 0.0);
  ASSERT_GT(c.value("peak_rss_bytes", 0.0), 0.0);
  ASSERT_GT(c.value("gemm_gflops", 0.0), 0.0);  // the child's own large-GEMM rate (efficiency's denominator)
  ASSERT_NEAR(row.value("efficiency", 0.0),
              c.value("flops_per_step", 0.0) / c.value("seconds_per_step", 1.0) / 1e9 / c.value("gemm_gflops", 1.0),
              1e-9);
  ASSERT_GT(row.value("efficiency", 0.0), 0.0);
  expect_step_seconds(c, "cellscope");
  // The GEMM floor (bench/gemm_floor.h): the step's products, replayed alone, take some time but
  // less than the step; their FLOPs are about the analytic count (3x the forward's products).
  ASSERT_TRUE(c.contains("gemm_floor")) << c.dump();
  const auto& fl = c["gemm_floor"];
  ASSERT_GT(fl.value("seconds", 0.0), 0.0);
  ASSERT_LT(fl.value("seconds", 1e9), c.value("seconds_per_step", 0.0));
  ASSERT_GT(fl.value("calls", 0), 0);
  ASSERT_GT(fl.value("flops", 0.0), 0.3 * c.value("flops_per_step", 0.0)) << fl.dump();
  ASSERT_LT(fl.value("flops", 0.0), 1.5 * c.value("flops_per_step", 0.0)) << fl.dump();
  ASSERT_NEAR(row.value("floor_efficiency", 0.0),
              c.value("flops_per_step", 0.0) / fl.value("seconds", 1.0) / 1e9 / c.value("gemm_gflops", 1.0), 1e-9);
  ASSERT_GT(row.value("floor_efficiency", 0.0), row.value("efficiency", 1e9));
}

// The Python peer's figures of one row (a cell's, not LibTorch's fused GRU's) and what they make with Cellscope's:
// the speedup, the efficiency 1.5x needs, the best speedup the floor allows; and the autograd path's own time.
void expect_python_figures(const json& row) {
  const auto& c = row["cellscope"];
  const auto& p = row["python"];
  ASSERT_GT(p.value("seconds_per_step", 0.0), 0.0);
  expect_step_seconds(p, "python");
  ASSERT_EQ(p.value("threads", 0), 1);
  ASSERT_GT(p.value("gemm_gflops", 0.0), 0.0);
  ASSERT_GE(p.value("peak_step_bytes", -1.0), 0.0);
  ASSERT_NEAR(row.value("speedup", 0.0), p.value("seconds_per_step", 0.0) / c.value("seconds_per_step", 1.0), 1e-9);
  // what 1.5x needs in efficiency terms; the most the floor allows on the speedup's own basis
  // (times), so that it can never read below a speedup actually reached by removing overhead
  // (vocabulary 96 against 12-18 positions: nothing folded, both counts are the model's)
  ASSERT_FALSE(row.contains("folded_fraction")) << row.dump();
  ASSERT_EQ(c.value("model_flops_per_step", 0.0), c.value("flops_per_step", 1.0));
  ASSERT_NEAR(row.value("needed_efficiency", 0.0), 1.5 * row.value("python_efficiency", 0.0), 1e-12);
  ASSERT_NEAR(row.value("max_speedup", 0.0), p.value("seconds_per_step", 0.0) / c["gemm_floor"].value("seconds", 1.0),
              1e-9);
  // gru_dt and cru_shallow have hand-written fast paths (cells/fused_gru_dt.cpp, fused_cru.cpp):
  // their autograd path is measured too, with its own time and memory
  ASSERT_TRUE(row.contains("cellscope_autograd")) << row.dump();
  ASSERT_GT(row["cellscope_autograd"].value("seconds_per_step", 0.0), 0.0) << row.dump();
}

// `bench --peer --json` of gru_dt and cru_shallow at batches 2 and 3 on one thread: every row's figures, in order.
void expect_peer_rows(json& j) {
  ASSERT_GT(j.value("gemm_gflops", 0.0), 0.0);
  ASSERT_EQ(j.value("threads", 0), 1);
  ASSERT_EQ(j["rows"].size(), 6u);  // per batch: LibTorch's fused GRU, gru_dt, cru_shallow
  std::vector<std::string> order;
  for (const auto& row : j["rows"]) {
    order.push_back(row.value("cell", std::string()) + "@" + std::to_string(row.value("batch", 0)));
    ASSERT_NO_FATAL_FAILURE(expect_cellscope_figures(row));
    if (row["cell"] == "gru") continue;
    ASSERT_NO_FATAL_FAILURE(expect_python_figures(row));
  }
  ASSERT_EQ(order,
            (std::vector<std::string>{"gru@2", "gru_dt@2", "cru_shallow@2", "gru@3", "gru_dt@3", "cru_shallow@3"}));
}

// --rounds 3 (mcrnn): every variant measured that often, interleaved; the reported time is the median
// round's (one of the samples, with as many below it as above for 3 rounds)
void expect_median_of_rounds(json& r) {
  ASSERT_EQ(r.value("rounds", 0), 3);
  ASSERT_EQ(r["rows"].size(), 2u);
  const auto& row = r["rows"][1];
  ASSERT_EQ(row.value("cell", std::string()), "mcrnn");
  ASSERT_TRUE(row.contains("cellscope_autograd")) << "mcrnn has a fast path (cells/fused_mcrnn.h)";
  for (const char* k : {"cellscope", "cellscope_autograd", "python"}) {
    const auto& m = row[k];
    ASSERT_EQ(m["samples"].size(), 3u) << k;
    const double t = m.value("seconds_per_step", 0.0);
    int below = 0, above = 0, equal = 0;
    for (const auto& v : m["samples"]) (v.get<double>() < t ? below : v.get<double>() > t ? above : equal)++;
    ASSERT_GE(equal, 1) << k << ": the median is not one of the rounds";
    ASSERT_LE(below, 1) << k;
    ASSERT_LE(above, 1) << k;
  }
}

// A folded embedding (gru_dt at batch 3, 6 positions, vocabulary 4): Cellscope's efficiency, floor and "needed"
// count the products it executed, the autograd path's and Python's the model's.
void expect_folded_counts(json& r) {
  const auto& row = r["rows"][1];
  ASSERT_EQ(row.value("cell", std::string()), "gru_dt");
  const auto& c = row["cellscope"];
  const double exec = c.value("flops_per_step", 0.0), model = c.value("model_flops_per_step", 0.0);
  // W_ih [3 H, E] over 18 positions replaced by 4 table rows, x 3 (forward and backward)
  ASSERT_NEAR(model - exec, 3.0 * (18 - 4) * 2.0 * 24 * 8, 1e-6) << c.dump();
  ASSERT_NEAR(row.value("folded_fraction", 0.0), 1.0 - exec / model, 1e-12);
  ASSERT_NEAR(row.value("efficiency", 0.0), exec / c.value("seconds_per_step", 1.0) / 1e9 / c.value("gemm_gflops", 1.0),
              1e-9);
  const auto& a = row["cellscope_autograd"];
  ASSERT_EQ(a.value("flops_per_step", 0.0), model) << "the autograd path folds nothing";
  ASSERT_NEAR(row.value("autograd_efficiency", 0.0),
              model / a.value("seconds_per_step", 1.0) / 1e9 / a.value("gemm_gflops", 1.0), 1e-9);
  const auto& p = row["python"];
  ASSERT_NEAR(row.value("python_efficiency", 0.0),
              model / p.value("seconds_per_step", 1.0) / 1e9 / p.value("gemm_gflops", 1.0), 1e-9);
  ASSERT_NEAR(row.value("needed_efficiency", 0.0),
              1.5 * exec / p.value("seconds_per_step", 1.0) / 1e9 / p.value("gemm_gflops", 1.0), 1e-9);
}

}  // namespace

TEST(BenchPeers, peerBenchReportsTimesSpeedupEfficiencyAndMemory) {
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"bench", "--peer", "--cell", "gru_dt,cru_shallow", "--batch", "2,3", "--seq", "6",
                             "--embed", "8", "--hidden", "8", "--iters", "2", "--threads", "1", "--json"},
                            &out, &err, 300000),
            0)
      << err;
  auto j = cstest::json_object(out);
  ASSERT_NO_FATAL_FAILURE(expect_peer_rows(j));
  // The markdown table: one line per row, the header of the issue's columns.
  ASSERT_EQ(cstest::run_cli({"bench", "--peer", "--cell", "gru_dt", "--batch", "2", "--seq", "6", "--embed", "8",
                             "--hidden", "8", "--iters", "1", "--threads", "1"},
                            &out, &err, 300000),
            0)
      << err;
  ASSERT_TRUE(cstest::contains(out, "| model | batch | Cellscope s/step |")) << out;
  ASSERT_TRUE(cstest::contains(out, "| needed for 1.5x | GEMM floor s/step (its efficiency) | best possible speedup |"))
      << out;
  ASSERT_TRUE(cstest::contains(out, "| gru_dt | 2 |")) << out;
  ASSERT_TRUE(cstest::contains(out, "| LibTorch fused GRU | 2 |")) << out;
  // --rounds: every variant measured that often, interleaved; the reported time is the median
  // round's (one of the samples, with as many below it as above for 3 rounds), the range is shown
  ASSERT_EQ(cstest::run_cli({"bench", "--peer", "--cell", "mcrnn", "--batch", "2", "--seq", "5", "--embed", "6",
                             "--hidden", "6", "--iters", "1", "--threads", "1", "--rounds", "3", "--json"},
                            &out, &err, 300000),
            0)
      << err;
  {
    auto r = cstest::json_object(out);
    ASSERT_NO_FATAL_FAILURE(expect_median_of_rounds(r));
  }
  ASSERT_EQ(cstest::run_cli({"bench", "--peer", "--cell", "mcrnn", "--batch", "2", "--seq", "5", "--embed", "6",
                             "--hidden", "6", "--iters", "1", "--threads", "1", "--rounds", "2", "--no-python"},
                            &out, &err, 300000),
            0)
      << err;
  ASSERT_TRUE(cstest::contains(out, "median of 2 rounds")) << out;
  ASSERT_TRUE(cstest::contains(out, "| mcrnn | 2 | ")) << out;
  ASSERT_TRUE(cstest::contains(out, " [")) << "the range of the rounds: " << out;
  // A folded embedding (cells/token_fold.h; vocabulary 4 against 18 positions): Cellscope's
  // efficiency, floor and "needed" count the products it executed, the autograd path's and
  // Python's the model's; the table marks the row and says how much was not executed.
  ASSERT_EQ(cstest::run_cli({"bench", "--peer", "--cell", "gru_dt", "--batch", "3", "--seq", "6", "--embed", "8",
                             "--hidden", "8", "--vocab", "4", "--iters", "1", "--threads", "1", "--json"},
                            &out, &err, 300000),
            0)
      << err;
  {
    auto r = cstest::json_object(out);
    ASSERT_NO_FATAL_FAILURE(expect_folded_counts(r));
  }
  ASSERT_EQ(cstest::run_cli({"bench", "--peer", "--cell", "gru_dt", "--batch", "3", "--seq", "6", "--embed", "8",
                             "--hidden", "8", "--vocab", "4", "--iters", "1", "--threads", "1"},
                            &out, &err, 300000),
            0)
      << err;
  ASSERT_TRUE(cstest::contains(out, "| gru_dt (f) | 3 |")) << out;
  ASSERT_TRUE(cstest::contains(out, "Products not executed: gru_dt b3 ")) << out;
  ASSERT_FALSE(cstest::contains(out, "LibTorch fused GRU (f)")) << out;
  ASSERT_EQ(cstest::run_cli({"bench", "--peer", "--batch", "32,x"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--batch")) << err;
}

TEST(BenchPeers, aPeerThatCannotRunTheModelLeavesItsColumnsEmptyAndSaysWhy) {
  // candidate dropout draws masks the Python peer cannot reproduce: it refuses the option by name,
  // and `bench --peer` still reports Cellscope's numbers.
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"bench",     "--peer",
                             "--cell",    "gcn_mzu",
                             "--set",     "model.candidate_dropout=0.5",
                             "--set",     "model.filter=8",
                             "--batch",   "2",
                             "--seq",     "4",
                             "--embed",   "8",
                             "--hidden",  "8",
                             "--iters",   "1",
                             "--threads", "1",
                             "--json"},
                            &out, &err, 300000),
            0)
      << err;
  auto j = cstest::json_object(out);
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& row = j["rows"][1];
  ASSERT_EQ(row.value("cell", std::string()), std::string("gcn_mzu"));
  ASSERT_GT(row["cellscope"].value("seconds_per_step", 0.0), 0.0);
  ASSERT_FALSE(row.contains("python"));
  ASSERT_FALSE(row.contains("speedup"));
  ASSERT_TRUE(cstest::contains(row.value("python_error", std::string()), "candidate_dropout")) << row.dump();
}

// CELLSCOPE_PEER_PYTHON may name the interpreter as a shell would (python3, a virtual environment's on
// PATH): a bare name is looked up on PATH, since the children are started by path (a GPU run once lost
// every Python measurement to "cannot run python3"). A path is kept as it is; no value: Debian's.
TEST(BenchPeers, peerPythonBareNameIsLookedUpOnPath) {
  const char* old = std::getenv("CELLSCOPE_PEER_PYTHON");
  const std::string saved = old ? old : "";
  ::setenv("CELLSCOPE_PEER_PYTHON", "sh", 1);
  const std::string sh = cs::peer_python();
  ::setenv("CELLSCOPE_PEER_PYTHON", "/opt/some/python3", 1);
  const std::string given = cs::peer_python();
  ::unsetenv("CELLSCOPE_PEER_PYTHON");
  const std::string fallback = cs::peer_python();
  if (old) ::setenv("CELLSCOPE_PEER_PYTHON", saved.c_str(), 1);
  ASSERT_EQ(sh.front(), '/') << sh;
  ASSERT_EQ(sh.substr(sh.size() - 3), "/sh") << sh;
  ASSERT_EQ(::access(sh.c_str(), X_OK), 0) << sh;
  ASSERT_EQ(given, "/opt/some/python3");
  ASSERT_EQ(fallback, "/usr/bin/python3");
}

}  // namespace test_bench_peers
