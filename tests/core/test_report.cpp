// The reproducibility bundle (`cellscope-cli report`, core/inspect/report): a tiny sweep (2 hidden
// sizes x 2 seeds, 20 steps each) trained in the test on a copy of a fixture corpus, rendered
// (table, series, an analysis and training curves), its manifest checked against the runs'
// own files; `report --check` passes unchanged, then catches a changed dataset file and a
// rewritten checkpoint; a malformed spec and a sweep that has not run give one clear error and
// no output directory.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <typeinfo>
#include <regex>

#include "corpus_fixture.h"
#include "harness.h"
#include "config/json.h"
#include "report/build_commit.h"
#include "report/report.h"
#include "util/error.h"
#include "util/sha256.h"

namespace test_report {  // this file's own names in a unity build (tests/README.md)

using cstest::contains;
using cstest::read_text;
using cstest::run_cli;
using cstest::temp_dir;
using cstest::write_text;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  std::string ws, corpus, corpus_text, spec, out;
  std::vector<std::string> runs;  // run directories of the sweep, point order
  bool ok = false;
};
Fixture& fixture() {
  static Fixture s;
  return s;
}

}  // namespace

class Report : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Fixture& s = fixture();
    s.ws = temp_dir() + "/report-ws";
    fs::create_directories(s.ws);
    s.corpus = cstest::write_text_fixture("report-corpus.txt", 6000, 11);
    s.corpus_text = read_text(s.corpus);
    const json sweep = {{"name", "tiny"},
                        {"base",
                         {{"task", {{"name", "char_lm"}}},
                          {"dataset", {{"path", s.corpus}}},
                          {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                          {"training",
                           {{"batch", 8},
                            {"bptt", 16},
                            {"steps", 20},
                            {"eval_every", 10},
                            {"log_every", 5},
                            {"checkpoint_every", 10},
                            {"threads", 1}}}}},
                        {"grid", {{"model.hidden", {8, 16}}}},
                        {"seeds", {1, 2}}};
    write_text(temp_dir() + "/tiny-sweep.json", sweep.dump(2));
    std::string out, err;
    const int rc =
        run_cli({"sweep", "run", temp_dir() + "/tiny-sweep.json", "--workspace", s.ws, "--quiet"}, &out, &err, 300000);
    if (rc != 0) {
      std::fprintf(stderr, "sweep run failed (%d): %s\n", rc, err.c_str());
      return;
    }
    const json state = cstest::json_object(read_text(s.ws + "/sweeps/tiny/state.json"));
    for (auto& [id, st] : state["points"].items()) s.runs.push_back(st.value("run_dir", std::string()));
    std::sort(s.runs.begin(), s.runs.end());
    const json spec = {{"title", "Tiny report"},
                       {"items",
                        {{{"sweep", "tiny"}, {"caption", "Test BPC by hidden size"}},
                         {{"sweep", "tiny"}, {"series", "model.hidden"}},
                         {{"analysis", "relevance"},
                          {"run", fs::path(s.runs[0]).filename().string()},
                          {"last", 4},
                          {"text", "the whale and the sea"}},
                         {{"figure", "curves"}, {"runs", {s.runs[0], s.runs[1]}}}}}};
    s.spec = temp_dir() + "/tiny-report.json";
    write_text(s.spec, spec.dump(2));
    s.out = temp_dir() + "/tiny-out";
    s.ok = s.runs.size() == 4;
  }
  void SetUp() override { ASSERT_TRUE(fixture().ok) << "the tiny sweep did not run"; }
};

TEST_F(Report, renders_files_and_manifest) {
  Fixture& s = fixture();
  std::string out, err;
  ASSERT_EQ(run_cli({"report", s.spec, "--out", s.out, "--workspace", s.ws}, &out, &err, 300000), 0) << err;
  ASSERT_FALSE(fs::exists(s.out + ".tmp"));
  const json m = cstest::json_object(read_text(s.out + "/manifest.json"));
  ASSERT_EQ(m.value("title", std::string()), "Tiny report");
  ASSERT_FALSE(m["code"].value("version", std::string()).empty());
  // the commit the program was built from (generated at build time; "" outside a git checkout)
  const std::string commit = m["code"].value("commit", std::string());
  EXPECT_EQ(commit, cs::build_git_commit());
  if (!commit.empty()) {
    EXPECT_TRUE(std::regex_match(commit, std::regex("[0-9a-f]{12}(-dirty)?"))) << commit;
  }
  ASSERT_EQ(m["items"].size(), 4u);
  ASSERT_EQ(m["runs"].size(), 4u);
  const bool images = m.value("images", false);
  // Every output file exists and has the SHA-256 the manifest records.
  for (auto& item : m["items"])
    for (auto& [name, sha] : item["outputs"].items()) {
      ASSERT_TRUE(fs::exists(s.out + "/" + name)) << name;
      ASSERT_EQ(sha.get<std::string>(), cs::file_sha256(s.out + "/" + name)) << name;
    }
  const std::string md = read_text(s.out + "/report.md");
  ASSERT_TRUE(contains(md, "# Tiny report"));
  ASSERT_TRUE(contains(md, "Test BPC by hidden size"));
  ASSERT_TRUE(contains(md, "[01-tiny.tex](01-tiny.tex)"));
  ASSERT_TRUE(fs::exists(s.out + "/01-tiny.tex") && fs::exists(s.out + "/01-tiny.csv"));
  ASSERT_TRUE(contains(read_text(s.out + "/01-tiny.tex"), "\\begin{tabular}"));
  for (const char* stem : {"02-tiny-series", "03-relevance", "04-curves"}) {
    ASSERT_TRUE(fs::exists(s.out + "/" + stem + ".csv")) << stem;
    if (images) {
      ASSERT_EQ(read_text(s.out + "/" + stem + ".png").substr(1, 3), "PNG") << stem;
      ASSERT_EQ(read_text(s.out + "/" + stem + ".pdf").substr(0, 5), "%PDF-") << stem;
      ASSERT_TRUE(contains(md, std::string("(") + stem + ".png)"));
    }
  }
  // Each run: its resolved config and seed, its best checkpoint and the dataset copy by hash.
  const std::string corpus_sha = cs::file_sha256(s.corpus);
  for (auto& dir : s.runs) {
    const std::string key = fs::path(dir).filename().string();
    ASSERT_TRUE(m["runs"].contains(key)) << key;
    const json& r = m["runs"][key];
    const json cfg = cstest::json_object(read_text(dir + "/config.json"));
    ASSERT_EQ(r["config"], cfg);
    ASSERT_EQ(r["seed"], cfg["training"]["seed"]);
    ASSERT_EQ(r["checkpoints"].value("best.pt", std::string()), cs::file_sha256(dir + "/checkpoints/best.pt"));
    ASSERT_EQ(r["dataset"]["files"].value(s.corpus, std::string()), corpus_sha);
    // ... which the run itself recorded when it started (dataset.json)
    ASSERT_EQ(r["dataset_at_training"].value(s.corpus, std::string()), corpus_sha);
  }
  ASSERT_TRUE(m["warnings"].empty()) << m["warnings"].dump();
  // The relevance item used the best checkpoint of its run, and only that.
  const json& rel = m["items"][2];
  ASSERT_EQ(rel["runs"].size(), 1u);
  // Each table number is the mean over its seeds of the runs' own summary.json test metric.
  const json& numbers = m["items"][0]["numbers"];
  ASSERT_EQ(numbers.size(), 2u);
  for (int hidden : {8, 16}) {
    std::vector<double> tests;
    for (auto& dir : s.runs) {
      const json cfg = cstest::json_object(read_text(dir + "/config.json"));
      if (cfg["model"]["hidden"].get<int>() != hidden) continue;
      tests.push_back(cstest::json_object(read_text(dir + "/summary.json"))["test_metric"].get<double>());
    }
    ASSERT_EQ(tests.size(), 2u);
    const json* cell = nullptr;
    for (auto& [name, v] : numbers.items())
      if (cstest::starts_with(name, std::to_string(hidden) + " ")) cell = &v;
    ASSERT_TRUE(cell) << numbers.dump();
    ASSERT_EQ((*cell)["n"].get<int>(), 2);
    ASSERT_NEAR((*cell)["mean"].get<double>(), 0.5 * (tests[0] + tests[1]), 1e-12);
  }
}

// --out is replaced only when it is provably an earlier report; a user's "DIR.tmp", a folder with a
// manifest.json of another kind (the source tree's datasets/ has one) and a file added to an earlier
// report all survive, and the report leaves no folder of its own beside DIR.
TEST_F(Report, replaces_only_its_own_earlier_report) {
  Fixture& s = fixture();
  std::string out, err;
  const std::string dir = temp_dir() + "/own-out", parent = temp_dir();
  fs::create_directories(dir + ".tmp");
  write_text(dir + ".tmp/mine.txt", "user's");
  // a folder holding another program's manifest.json
  const std::string other = temp_dir() + "/not-a-report";
  fs::create_directories(other);
  write_text(other + "/manifest.json", R"({"datasets": {"x": {"files": []}}})");
  write_text(other + "/data.txt", "keep");
  ASSERT_EQ(run_cli({"report", s.spec, "--out", other, "--workspace", s.ws}, &out, &err, 300000), 2);
  ASSERT_TRUE(contains(err, "not an earlier report")) << err;
  ASSERT_EQ(read_text(other + "/data.txt"), "keep");
  ASSERT_TRUE(contains(read_text(other + "/manifest.json"), "datasets"));
  // a report, then a user's file added to it: refused, naming the file; nothing removed
  ASSERT_EQ(run_cli({"report", s.spec, "--out", dir, "--workspace", s.ws}, &out, &err, 300000), 0) << err;
  write_text(dir + "/notes.txt", "mine");
  ASSERT_EQ(run_cli({"report", s.spec, "--out", dir, "--workspace", s.ws}, &out, &err, 300000), 2);
  ASSERT_TRUE(contains(err, "notes.txt")) << err;
  ASSERT_EQ(read_text(dir + "/notes.txt"), "mine");
  ASSERT_TRUE(fs::exists(dir + "/report.md"));
  // without it, the earlier report is replaced
  fs::remove(dir + "/notes.txt");
  ASSERT_EQ(run_cli({"report", s.spec, "--out", dir, "--workspace", s.ws}, &out, &err, 300000), 0) << err;
  ASSERT_TRUE(fs::exists(dir + "/report.md"));
  ASSERT_NE(cstest::json_object(read_text(dir + "/manifest.json")).value("created", std::string()), "");
  ASSERT_EQ(read_text(dir + ".tmp/mine.txt"), "user's");
  for (auto& e : fs::directory_iterator(parent))
    ASSERT_FALSE(cstest::starts_with(e.path().filename().string(), ".own-out.")) << "left behind: " << e.path();
}

TEST_F(Report, check_passes_then_catches_dataset_and_checkpoint) {
  Fixture& s = fixture();
  if (!fs::exists(s.out + "/manifest.json")) {
    std::string err;
    ASSERT_EQ(run_cli({"report", s.spec, "--out", s.out, "--workspace", s.ws, "--no-images"}, nullptr, &err, 300000), 0)
        << err;
  }
  std::string out, err;
  ASSERT_EQ(run_cli({"report", "--check", s.out}, &out, &err, 300000), 0) << out << err;
  for (const char* id : {"01-tiny: ok", "02-tiny-series: ok", "03-relevance: ok", "04-curves: ok", "all items match"})
    ASSERT_TRUE(contains(out, id)) << id << "\n" << out;

  // A changed dataset file: every item over runs trained on it says so.
  write_text(s.corpus, s.corpus_text + "and one more line at the end of the corpus.\n");
  ASSERT_EQ(run_cli({"report", "--check", s.out}, &out, &err, 300000), 1) << out << err;
  ASSERT_TRUE(contains(out, "01-tiny: CHANGED")) << out;
  ASSERT_TRUE(contains(out, "dataset file " + s.corpus + " changed")) << out;
  ASSERT_FALSE(contains(out, "all items match"));
  // A new report over the changed file says the data changed after training (dataset.json).
  ASSERT_EQ(run_cli({"report", s.spec, "--out", temp_dir() + "/after-change", "--workspace", s.ws, "--no-images"}, &out,
                    &err, 300000),
            0)
      << err;
  ASSERT_TRUE(contains(err, "warning: dataset file " + s.corpus + " changed since run ")) << err;
  ASSERT_TRUE(contains(read_text(temp_dir() + "/after-change/report.md"), "the data changed after training")) << err;
  write_text(s.corpus, s.corpus_text);
  ASSERT_EQ(run_cli({"report", "--check", s.out}, &out, &err, 300000), 0) << out << err;

  // A rewritten checkpoint: the relevance item names it, and its numbers moved.
  const std::string best = s.runs[0] + "/checkpoints/best.pt";
  const std::string saved = read_text(best);
  // the weights of the other evaluation step than the best one
  const int64_t best_step = cstest::json_object(read_text(s.runs[0] + "/summary.json")).value("best_step", int64_t(0));
  const std::string other = s.runs[0] + "/checkpoints/" + (best_step == 10 ? "step_20.pt" : "step_10.pt");
  ASSERT_TRUE(fs::exists(other));
  ASSERT_NE(read_text(other), saved);
  fs::copy_file(other, best, fs::copy_options::overwrite_existing);
  ASSERT_EQ(run_cli({"report", "--check", s.out}, &out, &err, 300000), 1) << out << err;
  ASSERT_TRUE(contains(out, "03-relevance: CHANGED")) << out;
  ASSERT_TRUE(
      contains(out, "checkpoint " + fs::path(s.runs[0]).filename().string() + "/checkpoints/best.pt sha changed"))
      << out;
  ASSERT_TRUE(contains(out, "03-relevance.csv row")) << out;  // a number a -> b of the figure's data
  write_text(best, saved);
  ASSERT_EQ(run_cli({"report", "--check", s.out}, &out, &err, 300000), 0) << out << err;
}

// A tampered manifest (#52): every field check_report reads, removed or replaced by a value of each other JSON
// type, gives one UserError naming manifest.json and the field's JSON path (the CLI: exit 2), or a check that
// runs (a removed optional field); never library text ("[json.exception.type_error...]", exit 1) or a read of a
// missing key through const json::operator[] (undefined behaviour: the same manifest once reported `number` and
// once `null`). The spec inside the manifest has its own validation (malformed_spec_is_one_clear_error) and a
// run's recorded config is not read by the check: neither is mutated here.
TEST_F(Report, tampered_manifest_is_one_clear_error_never_library_text) {
  Fixture& s = fixture();
  const std::string dir = temp_dir() + "/tamper-out", spec = temp_dir() + "/tamper-spec.json";
  write_text(
      spec, json({{"title", "Tamper"}, {"items", {{{"sweep", "tiny"}}, {{"figure", "curves"}, {"runs", {s.runs[0]}}}}}})
                .dump());
  std::string out, err;
  ASSERT_EQ(run_cli({"report", spec, "--out", dir, "--workspace", s.ws, "--no-images"}, &out, &err, 300000), 0) << err;
  const std::string mpath = dir + "/manifest.json";
  const json good = cstest::json_object(read_text(mpath));
  cs::ReportOptions opt;
  opt.workspace = s.ws;
  ASSERT_TRUE(cs::check_report(dir, opt).ok());
  // Every node the check may read: (JSON pointer, readable path).
  std::vector<json::json_pointer> nodes;
  std::function<void(const json&, const json::json_pointer&)> walk = [&](const json& j, const json::json_pointer& at) {
    const std::string p = at.to_string();
    if (!at.empty()) nodes.push_back(at);
    if (p == "/spec" || (cstest::starts_with(p, "/runs/") &&
                         (cstest::contains(p, "/config") || cstest::contains(p, "/dataset_at_training"))))
      return;  // the node itself only
    if (j.is_object())
      for (auto& [k, v] : j.items()) walk(v, at / k);
    else if (j.is_array())
      for (size_t i = 0; i < j.size() && i < 2; ++i) walk(j[i], at / i);
  };
  walk(good, json::json_pointer());
  ASSERT_GT(nodes.size(), 30u);
  const std::vector<json> replacements = {json(nullptr), json(7),        json(2.5), json("x"),
                                          json::array(), json::object(), json(true)};
  int checked = 0, refused = 0;
  std::vector<std::string> findings;
  for (const auto& ptr : nodes) {
    for (int r = -1; r < static_cast<int>(replacements.size()); ++r) {
      json m = good;
      if (r < 0) {  // removed
        json& parent = m[ptr.parent_pointer()];
        if (parent.is_object()) parent.erase(ptr.back());
        else continue;
      } else {
        if (m[ptr] == replacements[r]) continue;
        m[ptr] = replacements[r];
      }
      write_text(mpath, m.dump());
      ++checked;
      try {
        (void)cs::check_report(dir, opt);
      } catch (const cs::UserError& e) {
        ++refused;
        const std::string what = e.what();
        if (!contains(what, mpath) || contains(what, "json.exception"))
          findings.push_back(ptr.to_string() + (r < 0 ? " removed" : " = " + replacements[r].dump()) +
                             ": the message names no manifest or is library text: " + what);
      } catch (const std::exception& e) {
        findings.push_back(ptr.to_string() + (r < 0 ? " removed" : " = " + replacements[r].dump()) + ": " +
                           typeid(e).name() + ": " + e.what());
      }
    }
  }
  write_text(mpath, good.dump(2));
  std::cout << checked << " tampered manifests, " << refused << " refused with one message\n";
  ASSERT_TRUE(findings.empty()) << findings.size() << " of " << checked << ", e.g.:\n"
                                << findings[0] << "\n"
                                << findings[findings.size() / 2] << "\n"
                                << findings.back();
  ASSERT_GT(refused, 30);
  // The command: exit 2, the file and the field's JSON path named.
  json m = good;
  m["items"][0]["numbers"] = "none";
  write_text(mpath, m.dump());
  ASSERT_EQ(run_cli({"report", "--check", dir}, &out, &err, 300000), 2) << out << err;
  ASSERT_TRUE(contains(err, mpath) && contains(err, "items[0].numbers: expected an object, found a string")) << err;
  ASSERT_FALSE(contains(err, "json.exception")) << err;
  write_text(mpath, good.dump(2));
  ASSERT_EQ(run_cli({"report", "--check", dir}, &out, &err, 300000), 0) << out << err;
}

TEST_F(Report, malformed_spec_is_one_clear_error) {
  Fixture& s = fixture();
  const std::string bad = temp_dir() + "/bad-report.json";
  write_text(bad, R"({"title": "x", "items": [{"sweep": "tiny", "analysis": "relevance"},
                     {"analysis": "relevance", "runs": [], "colour": 3}, {"sweep": "tiny", "budget": "nonsense"}]})");
  const std::string out_dir = temp_dir() + "/bad-out";
  std::string out, err;
  ASSERT_EQ(run_cli({"report", bad, "--out", out_dir, "--workspace", s.ws}, &out, &err), 2);
  ASSERT_TRUE(contains(err, bad)) << err;
  ASSERT_TRUE(contains(err, "items[0]: give exactly one of")) << err;
  ASSERT_TRUE(contains(err, "items[1]: unknown key 'colour'")) << err;
  ASSERT_TRUE(contains(err, "items[1].runs: expected a non-empty list")) << err;
  ASSERT_TRUE(contains(err, "items[2].budget")) << err;
  ASSERT_FALSE(fs::exists(out_dir));
  ASSERT_FALSE(fs::exists(out_dir + ".tmp"));
  // Not JSON at all: the file and the position.
  write_text(bad, "{\"items\": [");
  ASSERT_EQ(run_cli({"report", bad, "--out", out_dir, "--workspace", s.ws}, &out, &err), 2);
  ASSERT_TRUE(contains(err, bad)) << err;
  ASSERT_FALSE(fs::exists(out_dir));
  // A sweep that has not run: which command runs it, and no half-written directory.
  write_text(bad, R"({"items": [{"sweep": "tiny"}, {"sweep": "never-ran"}]})");
  ASSERT_EQ(run_cli({"report", bad, "--out", out_dir, "--workspace", s.ws}, &out, &err), 2);
  ASSERT_TRUE(contains(err, "cellscope-cli sweep run never-ran --workspace " + s.ws)) << err;
  ASSERT_FALSE(fs::exists(out_dir));
  ASSERT_FALSE(fs::exists(out_dir + ".tmp"));
  // --check of a directory that is no report.
  ASSERT_EQ(run_cli({"report", "--check", temp_dir()}, &out, &err), 2);
  ASSERT_TRUE(contains(err, "is not a report (no manifest.json)")) << err;
}

// The shipped spec (resources/reports/sweep-notes.json): in a workspace where its sweeps have not
// run, one message lists the command that runs each; with stand-ins of the reproduce-* sweeps (the
// same names, axes and labels the spec's paired views and series name, tiny char-LM runs instead
// of the papers' settings) every item renders and --check passes.
TEST_F(Report, shipped_spec_renders_when_its_sweeps_have_run) {
  Fixture& s = fixture();
  const std::string ws = temp_dir() + "/shipped-ws", out_dir = temp_dir() + "/shipped-out";
  fs::create_directories(ws);
  std::string out, err;
  ASSERT_EQ(run_cli({"report", "sweep-notes", "--out", out_dir, "--workspace", ws}, &out, &err), 2);
  for (const char* name :
       {"reproduce-cru-table2", "reproduce-cru-fig3", "reproduce-cru-table3", "reproduce-mzu-table3",
        "reproduce-mzu-table4", "reproduce-mcrnn-table2", "reproduce-mcrnn-table3", "reproduce-mcrnn-table4"})
    ASSERT_TRUE(contains(err, std::string("cellscope-cli sweep run ") + name + " --workspace " + ws)) << err;
  ASSERT_EQ(cstest::count(err, "cellscope-cli sweep run reproduce-mzu-table4"), 1) << err;  // named once
  ASSERT_FALSE(fs::exists(out_dir));
  ASSERT_FALSE(fs::exists(out_dir + ".tmp"));

  // A named axis whose labels are those of the bundled sweep, each value a hidden size (a second
  // axis: a learning rate).
  auto axis = [](const std::string& name, const std::vector<std::string>& labels, bool second = false) {
    json values = json::array();
    for (size_t i = 0; i < labels.size(); ++i)
      values.push_back({{"label", labels[i]},
                        {"set", second ? json{{"training.lr", 0.001 * static_cast<double>(1 + 2 * i)}}
                                       : json{{"model.hidden", 8 + 8 * static_cast<int>(i)}}}});
    return json{{"name", name}, {"values", values}};
  };
  const json base = {
      {"task", {{"name", "char_lm"}}},
      {"dataset", {{"path", s.corpus}}},
      {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
      {"training", {{"batch", 8}, {"bptt", 16}, {"steps", 10}, {"eval_every", 10}, {"log_every", 5}, {"threads", 1}}}};
  const std::vector<std::pair<std::string, json>> sweeps = {
      {"reproduce-cru-table2", json::array({axis("model", {"GRU", "CRU"})})},
      {"reproduce-cru-fig3", json::array({axis("model.filter_length", {"1", "3"})})},
      {"reproduce-cru-table3",
       json::array({axis("model", {"AoA Reader (GRU)", "M-AoA Reader (GRU)", "M-AoA Reader (CRU)"})})},
      {"reproduce-mzu-table3", json::array({axis("model.zones", {"2", "4"})})},
      {"reproduce-mzu-table4", json::array({axis("model", {"GRU", "satMZU"}), axis("model.depth", {"0", "2"}, true)})},
      {"reproduce-mcrnn-table2", json::array({axis("model", {"LSTM", "MC-RNN-2"})})},
      {"reproduce-mcrnn-table3", json::array({axis("model", {"LSTM", "MC-RNN-2"})})},
      {"reproduce-mcrnn-table4", json::array({axis("model", {"LSTM", "MC-RNN-2"})})}};
  for (auto& [name, grid] : sweeps) {
    json spec = {{"name", name}, {"base", base}, {"grid", grid}, {"seeds", {1, 2}}};
    if (name == "reproduce-mzu-table4") spec["table"] = {{"rows", "model"}, {"cols", "model.depth"}};
    const std::string file = temp_dir() + "/" + name + ".json";
    write_text(file, spec.dump());
    ASSERT_EQ(run_cli({"sweep", "run", file, "--workspace", ws, "--quiet"}, &out, &err, 300000), 0) << name << err;
  }
  ASSERT_EQ(run_cli({"report", "sweep-notes", "--out", out_dir, "--workspace", ws, "--no-images"}, &out, &err, 300000),
            0)
      << err;
  const json m = cstest::json_object(read_text(out_dir + "/manifest.json"));
  ASSERT_EQ(m["items"].size(), 13u);
  for (auto& item : m["items"]) {
    ASSERT_FALSE(item["runs"].empty()) << item.dump();
    for (auto& [name, sha] : item["outputs"].items()) ASSERT_TRUE(fs::exists(out_dir + "/" + name)) << name;
  }
  // the paired views are differences: the reference is left out, the other cell has 2 seeds
  ASSERT_EQ(m["items"][6]["id"], "mzu-table3-paired");
  const json& paired = m["items"][6]["numbers"];
  ASSERT_EQ(paired.size(), 1u) << paired.dump();
  ASSERT_EQ(paired.begin().value()["n"].get<int>(), 2);
  ASSERT_TRUE(contains(read_text(out_dir + "/report.md"), "MZU Table 4, DT minus No-DT"));
  ASSERT_EQ(run_cli({"report", "--check", out_dir}, &out, &err, 300000), 0) << out << err;
}

}  // namespace test_report
