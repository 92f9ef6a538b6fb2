// The TorchScript cell (model.cell = script, cells/SCRIPT_CELL_NOTES.md): the scripted GRU of
// resources/cells/gru_equations.py against Cellscope's step-wise GRU (loss and gradients, double),
// the refusals at load (wrong signature, shape mismatch, not TorchScript), a run that resumes bit
// for bit, the refusal of a changed script, and the analyses on a script run. The .pt files are
// written by /usr/bin/python3 running the worked examples (python3-torch, which packaging/setup.sh
// installs; the tests fail without it).
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "analysis/computations.h"
#include "cells/script_cell.h"
#include "config/schema.h"
#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/char_lm.h"
#include "train/launch.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/sha256.h"

namespace test_script_cell {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;

namespace {

std::string dir() { return cstest::temp_dir() + "/script_cell"; }

// Runs /usr/bin/python3 with `args`; its output goes to a log whose text is returned on failure.
bool python(const std::string& args, std::string* log = nullptr) {
  const std::string out = dir() + "/python.log";
  const int rc = std::system(("/usr/bin/python3 " + args + " > '" + out + "' 2>&1").c_str());
  if (log) *log = cstest::read_text(out);
  return rc == 0;
}

std::string example(const std::string& name) { return cstest::source_dir() + "/resources/cells/" + name; }

bool have_torch = false;

// A small module of Python written to a .py file and run, writing `out`; `ctor_args` are M's.
void write_module(const std::string& py_body, const std::string& out, const std::string& ctor_args = "") {
  const std::string py = out + ".py";
  cstest::write_text(py, "import torch\nfrom typing import Dict, List, Tuple\nfrom torch import Tensor\n" + py_body +
                             "\ntorch.jit.save(torch.jit.script(M(" + ctor_args + ")), '" + out + "')\n");
  std::string log;
  ASSERT_TRUE(python("'" + py + "'", &log)) << log;
}

// A step cell class M (input_size 8, hidden_size 16, w [16, 8]) whose forward, under the script
// cell's signature, is `forward_body`; with `extra_state`, M(n) declares a second state of size n.
std::string step_cell(const std::string& forward_body, bool extra_state = false) {
  return std::string(
             "class M(torch.nn.Module):\n"
             "    input_size: int\n    hidden_size: int\n    state_sizes: List[int]\n") +
         (extra_state ? "    def __init__(self, extra: int):\n" : "    def __init__(self):\n") +
         "        super().__init__()\n"
         "        self.input_size = 8\n        self.hidden_size = 16\n" +
         (extra_state ? "        self.state_sizes = [16, extra]\n" : "        self.state_sizes = [16]\n") +
         "        self.w = torch.nn.Parameter(torch.zeros(16, 8))\n"
         "    def forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]:\n" +
         forward_body;
}

json run_config(const std::string& script, const std::string& corpus, int steps) {
  return {{"task", "char_lm"},
          {"dataset", {{"path", corpus}}},
          {"model", {{"cell", "script"}, {"script", script}, {"embed", 8}, {"hidden", 16}}},
          {"training",
           {{"batch", 8},
            {"bptt", 20},
            {"steps", steps},
            {"eval_every", 10},
            {"log_every", 5},
            {"checkpoint_every", 10},
            {"seed", 11},
            {"threads", 1}}}};
}

std::vector<json> comparable(const std::vector<json>& lines) {
  std::vector<json> out;
  for (auto j : lines) {
    j.erase("elapsed");
    j.erase("throughput");
    j.erase("wall_time");  // the clock time of the line (metrics.jsonl, TensorBoard): differs between runs
    out.push_back(j);
  }
  return out;
}

// The message of the UserError `f` throws ("" when none).
template <class F>
std::string user_error(F f) {
  try {
    f();
  } catch (const cs::UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class ScriptCell : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cs::set_threads(1);
    std::filesystem::create_directories(dir());
    have_torch = python("-c 'import torch'");
    if (!have_torch) return;
    python("'" + example("gru_equations.py") + "' '" + dir() + "/gru.pt' --input-size 8 --hidden 16");
    python("'" + example("gru_conv_input.py") + "' '" + dir() + "/conv.pt' --input-size 8 --hidden 16 --channels 6");
  }
  void SetUp() override {
    if (!have_torch) FAIL() << "/usr/bin/python3 has no torch: install python3-torch (packaging/setup.sh installs it)";
    ASSERT_TRUE(cs::file_exists(dir() + "/gru.pt")) << cstest::read_text(dir() + "/python.log");
    ASSERT_TRUE(cs::file_exists(dir() + "/conv.pt")) << cstest::read_text(dir() + "/python.log");
  }
};

// The scripted GRU with Cellscope's GRU's weights: the same loss and gradients in double, the same
// gate, and the same weights from the same seed (reset_parameters draws as GateCellBase does).
TEST_F(ScriptCell, gruFromEquationsMatchesStepwiseGru) {
  const int64_t V = 13, T = 9, B = 4;
  auto resolve = [](json m) {
    m["embed"] = 8;
    m["hidden"] = 16;
    return cs::load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", m}})["model"];
  };
  const json mg = resolve({{"cell", "gru"}});
  const json ms = resolve({{"cell", "script"}, {"script", dir() + "/gru.pt"}});
  torch::manual_seed(5);
  cs::CharLMModel g(mg, V);
  torch::manual_seed(5);
  cs::CharLMModel s(ms, V);
  {  // the same seed draws the same initial weights
    auto sp = s->named_parameters();
    for (const auto& p : g->named_parameters()) {
      ASSERT_TRUE(sp.contains(p.key())) << p.key();
      EXPECT_TRUE(torch::equal(p.value(), sp[p.key()])) << p.key();
    }
  }
  g->to(torch::kDouble);
  s->to(torch::kDouble);
  torch::manual_seed(6);
  {  // other weights, copied into the script cell
    torch::NoGradGuard ng;
    for (auto& p : g->parameters()) p.uniform_(-0.6, 0.6);
    auto sp = s->named_parameters();
    ASSERT_EQ(sp.size(), g->named_parameters().size());
    for (const auto& p : g->named_parameters()) sp[p.key()].copy_(p.value());
  }
  auto x = torch::randint(0, V, {T, B}, torch::kInt64), y = torch::randint(0, V, {T, B}, torch::kInt64);
  auto loss_of = [&](cs::CharLMModel& net, cs::Probe& probe) {
    net->train();
    cs::StepContext ctx;
    ctx.stepwise = true;
    ctx.probe = &probe;
    auto st = net->initial_state(B, torch::TensorOptions().dtype(torch::kDouble));
    auto logits = net->forward(x, st, ctx);
    EXPECT_EQ(ctx.fast_path_calls, 0);
    auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
    loss.backward();
    return loss.item<double>();
  };
  cs::Probe pg, ps;
  const double lg = loss_of(g, pg), ls = loss_of(s, ps);
  EXPECT_NEAR(lg, ls, 1e-6);
  EXPECT_GT(lg, 0.5);
  auto sp = s->named_parameters();
  double worst = 0;
  for (const auto& p : g->named_parameters()) {
    ASSERT_TRUE(sp[p.key()].grad().defined()) << p.key();
    const double d = (p.value().grad() - sp[p.key()].grad()).abs().max().item<double>();
    worst = std::max(worst, d);
    EXPECT_LT(d, 1e-6) << p.key();
    EXPECT_GT(p.value().grad().abs().max().item<double>(), 1e-4) << p.key() << ": no gradient to compare";
  }
  std::printf("scripted GRU vs step-wise GRU (double): |loss difference| %.3g, largest |gradient difference| %.3g\n",
              std::abs(lg - ls), worst);
  for (const std::string key : {"l0/gate", "l0/reset", "l0/candidate", "l0/h"}) {
    ASSERT_TRUE(ps.has(key)) << key;
    EXPECT_LT((pg.stacked(key) - ps.stacked(key)).abs().max().item<double>(), 1e-9) << key;
  }
}

// Every refusal names the file and the problem, before any run directory exists.
TEST_F(ScriptCell, refusalsNameFileAndProblem) {
  const std::string corpus = cstest::write_text_fixture("script_refuse.txt", 4000);
  const std::string wrong = dir() + "/wrong_signature.pt", mismatch = dir() + "/mismatch.pt";
  const std::string wrong_body =
      "class M(torch.nn.Module):\n"
      "    input_size: int\n    hidden_size: int\n    state_sizes: List[int]\n"
      "    def __init__(self):\n        super().__init__()\n"
      "        self.input_size = 8\n        self.hidden_size = 16\n        self.state_sizes = [16]\n"
      "        self.w = torch.nn.Parameter(torch.zeros(16, 8))\n"
      "    def forward(self, x: Tensor, h: Tensor) -> Tensor:\n        return torch.tanh(x @ self.w.t() + h)\n";
  write_module(wrong_body, wrong);
  write_module(
      "class M(torch.nn.Module):\n"
      "    input_size: int\n    hidden_size: int\n    state_sizes: List[int]\n"
      "    def __init__(self):\n        super().__init__()\n"
      "        self.input_size = 8\n        self.hidden_size = 16\n        self.state_sizes = [16]\n"
      "        self.w = torch.nn.Parameter(torch.zeros(12, 8))\n"
      "    def forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]:\n"
      "        h = torch.tanh(x @ self.w.t())\n        return [h], {'candidate': h}\n",
      mismatch);
  // A script that refuses its input with its own message: the message and the script's own line
  // reach the user, without a hint about shapes (only "The following operation failed in the
  // TorchScript interpreter." did, #52).
  const std::string refuses = dir() + "/refuses.pt";
  write_module(step_cell("        h = torch.tanh(x @ self.w.t())\n"
                         "        if x.size(1) == 8:\n"
                         "            raise ValueError('cellscope test: this cell refuses 8 inputs')\n"
                         "        return [h], {'candidate': h}\n"),
               refuses);
  int raise_line = 0;
  {
    const auto py_lines = cstest::split(cstest::read_text(refuses + ".py"), '\n');
    for (size_t k = 0; k < py_lines.size(); ++k)
      if (cstest::contains(py_lines[k], "raise ValueError")) raise_line = static_cast<int>(k) + 1;
  }
  ASSERT_GT(raise_line, 0);
  const std::string text = dir() + "/not_script.pt", pickled = dir() + "/state_dict.pt";
  cstest::write_text(text, "this is not a TorchScript file\n");
  std::string log;
  ASSERT_TRUE(python("-c \"import torch; torch.save({'w': torch.zeros(3)}, '" + pickled + "')\"", &log)) << log;

  struct Case {
    std::string file, problem;
    json model;
  };
  const std::vector<Case> cases = {
      {wrong, "wrong signature of forward", {}},
      {mismatch, "shape mismatch", {}},
      {text, "is not a TorchScript file", {}},
      {pickled, "is not a TorchScript file", {}},
      {dir() + "/gru.pt", "shape mismatch", {{"embed", 12}}},  // input_size 8, the embedding 12
      {dir() + "/missing.pt", "does not exist", {}},
      {refuses, "cellscope test: this cell refuses 8 inputs", {}},
  };
  int i = 0;
  for (const auto& c : cases) {
    json cfg = run_config(c.file, corpus, 5);
    if (c.model.is_object()) cfg["model"].update(c.model);
    cs::LaunchOptions lo;
    lo.run_dir = dir() + "/refused_" + std::to_string(i++);
    const std::string msg = user_error([&] { cs::start_run(cfg, lo); });
    EXPECT_TRUE(cstest::contains(msg, c.file)) << c.file << ": '" << msg << "'";
    EXPECT_TRUE(cstest::contains(msg, c.problem)) << c.problem << ": '" << msg << "'";
    EXPECT_FALSE(std::filesystem::exists(lo.run_dir)) << lo.run_dir;
    if (c.file == refuses) {
      // "...failed: ValueError: MESSAGE (at FILE.py line N, in forward)"
      EXPECT_TRUE(cstest::contains(msg, "ValueError")) << msg;
      EXPECT_TRUE(cstest::contains(msg, refuses + ".py line " + std::to_string(raise_line))) << msg;
      EXPECT_FALSE(cstest::contains(msg, "shape")) << msg;
      EXPECT_FALSE(cstest::contains(msg, "The following operation failed")) << msg;
    }
  }
  // the Python helper refuses the same module before writing it
  const std::string helper_py = dir() + "/helper_refuses.py", helper_out = dir() + "/helper_wrong.pt";
  cstest::write_text(helper_py, "import sys\nsys.path.insert(0, '" + cstest::source_dir() +
                                    "/packaging/python')\nfrom cellscope_torch.script_cell import save_cell\n" +
                                    "import torch\nfrom typing import Dict, List, Tuple\nfrom torch import Tensor\n" +
                                    wrong_body + "save_cell(M(), '" + helper_out + "')\n");
  EXPECT_FALSE(python("'" + helper_py + "'", &log));
  EXPECT_TRUE(cstest::contains(log, "wrong signature of forward")) << log;
  EXPECT_FALSE(std::filesystem::exists(helper_out));
  // the CLI: one line naming the file, exit 2, no run directory
  std::string out, err;
  const std::string cli_dir = dir() + "/refused_cli";
  EXPECT_EQ(cstest::run_cli({"train", "quick-gru", "--set", "model.cell=script", "--set", "model.script=" + wrong,
                             "--set", "model.embed=8", "--set", "model.hidden=16", "--run-dir", cli_dir, "--quiet"},
                            &out, &err),
            2)
      << err;
  EXPECT_TRUE(cstest::contains(err, wrong) && cstest::contains(err, "wrong signature")) << err;
  EXPECT_FALSE(std::filesystem::exists(cli_dir));
}

// A forward that never returns, and a declared size no machine holds: each refused naming the script,
// exit 2, within the trial call's time limit and before anything is allocated (#52: validate and train
// hung; 32 GB were asked for and the failure named no script).
TEST_F(ScriptCell, endlessForwardAndHugeSizesAreRefusedNamingTheScript) {
  const std::string endless = dir() + "/endless.pt", huge = dir() + "/huge.pt";
  auto module = [&](const std::string& body, const std::string& extra, const std::string& out) {
    write_module(step_cell(body, true), out, extra);
  };
  module(
      "        i = 0\n        while i >= 0:\n            i = (i + 1) % 1000\n"
      "        h = torch.tanh(x @ self.w.t())\n        return [h, state[1]], {'candidate': h}\n",
      "4", endless);
  module("        h = torch.tanh(x @ self.w.t())\n        return [h, state[1]], {'candidate': h}\n", "2 ** 33", huge);
  std::string out, err;
  {
    cstest::EnvGuard limit("CELLSCOPE_SCRIPT_TRIAL_SECONDS", "1");
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(cstest::run_cli({"validate", "quick-gru", "--set", "model.cell=script", "--set",
                               "model.script=" + endless, "--set", "model.embed=8", "--set", "model.hidden=16"},
                              &out, &err, 60000),
              2)
        << err;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
    EXPECT_TRUE(cstest::contains(err, endless) && cstest::contains(err, "did not return within 1 s")) << err;
  }
  ASSERT_EQ(cstest::run_cli({"validate", "quick-gru", "--set", "model.cell=script", "--set", "model.script=" + huge,
                             "--set", "model.embed=8", "--set", "model.hidden=16"},
                            &out, &err, 60000),
            2)
      << err;
  EXPECT_TRUE(cstest::contains(err, huge) && cstest::contains(err, "8589934592") &&
              cstest::contains(err, "values per example"))
      << err;
  // A NaN the script itself makes: the failure names the script as a suspect (it named only the
  // learning rate and the model's configuration, #52).
  const std::string nan = dir() + "/nan.pt";
  module(
      "        h = torch.tanh(x @ self.w.t()) * torch.sqrt(x.sum() * 0 - 1)\n"
      "        return [h, state[1]], {'candidate': h}\n",
      "4", nan);
  const std::string corpus = cstest::write_text_fixture("script_nan.txt", 4000);
  const std::string cfg = cstest::temp_dir() + "/script_nan.json";
  cstest::write_text(cfg, run_config(nan, corpus, 5).dump());
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--run-dir", dir() + "/nan_run", "--quiet"}, &out, &err), 1) << err;
  EXPECT_TRUE(cstest::contains(err, "the loss became NaN") && cstest::contains(err, "script of your own") &&
              cstest::contains(err, nan))
      << err;
}

// Two stacked layers load the file twice (independent parameters); a layer whose input differs from
// the module's input_size is refused naming the layer.
TEST_F(ScriptCell, layersAreIndependentInstances) {
  auto resolve = [](const json& m) {
    return cs::load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", m}})["model"];
  };
  const std::string p16 = dir() + "/gru16.pt";
  std::string log;
  ASSERT_TRUE(python("'" + example("gru_equations.py") + "' '" + p16 + "' --input-size 16 --hidden 16", &log)) << log;
  torch::manual_seed(1);
  cs::CharLMModel net(resolve({{"cell", "script"}, {"script", p16}, {"embed", 16}, {"hidden", 16}, {"layers", 2}}), 7);
  auto ps = net->named_parameters();
  ASSERT_TRUE(ps.contains("stack.layer0.w_hh") && ps.contains("stack.layer1.w_hh"));
  EXPECT_FALSE(torch::equal(ps["stack.layer0.w_hh"], ps["stack.layer1.w_hh"]));
  EXPECT_NE(ps["stack.layer0.w_hh"].data_ptr(), ps["stack.layer1.w_hh"].data_ptr());
  const std::string msg = user_error([&] {
    cs::CharLMModel bad(
        resolve({{"cell", "script"}, {"script", dir() + "/gru.pt"}, {"embed", 8}, {"hidden", 16}, {"layers", 2}}), 7);
  });
  EXPECT_TRUE(cstest::contains(msg, "layer 1") && cstest::contains(msg, "shape mismatch")) << msg;
}

// `bench` runs a script cell in both of its tasks and reports no GFLOP/s for it (no analytic count).
TEST_F(ScriptCell, benchReportsUnknownFlops) {
  for (const std::string task : {"char_lm", "classify"}) {
    const std::vector<std::string> args = {
        "bench",   "--cell",  "script",  "--set",    "model.script=" + dir() + "/gru.pt",
        "--task",  task,      "--batch", "2",        "--seq",
        "4",       "--embed", "8",       "--hidden", "16",
        "--vocab", "12",      "--iters", "1",        "--threads",
        "1"};
    std::string out, err;
    auto json_args = args;
    json_args.push_back("--json");
    ASSERT_EQ(cstest::run_cli(json_args, &out, &err), 0) << task << ": " << err;
    const json r = cstest::json_object(out);
    EXPECT_TRUE(r.contains("seconds_per_step") && r["seconds_per_step"].get<double>() > 0) << out;
    EXPECT_TRUE(r.contains("gflops") && r["gflops"].is_null()) << task << ": " << out;
    ASSERT_EQ(cstest::run_cli(args, &out, &err), 0) << task << ": " << err;
    EXPECT_TRUE(cstest::contains(out, "unknown GFLOP/s")) << task << ":\n" << out;
  }
}

// The hash a run records: SHA-256 (FIPS 180-4 test vectors; one and two padding blocks, several blocks).
TEST_F(ScriptCell, sha256MatchesTestVectors) {
  EXPECT_EQ(cs::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(cs::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(cs::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(cs::sha256_hex(std::string(1000, 'a')), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

namespace {

// The run of `cfg` uninterrupted into `full`, and stopped after step 17 into `part`.
void train_full_and_stopped(const json& cfg, const std::string& full, const std::string& part) {
  {
    cs::LaunchOptions lo;
    lo.run_dir = full;
    auto r = cs::start_run(cfg, lo);
    r.trainer->run();
  }
  {
    cs::LaunchOptions lo;
    lo.run_dir = part;
    auto r = cs::start_run(cfg, lo);
    cs::TrainerControl control;
    cs::TrainerCallbacks cb;
    cb.on_progress = [&](const cs::Progress& p) {
      if (p.step == 17) control.stop = true;
    };
    r.trainer->run(&control, cb);
  }
}

// The stopped run resumed from its step 17 to the end.
void resume_stopped(const std::string& part) {
  torch::manual_seed(999);  // the checkpoint restores the generator
  cs::LaunchOptions lo;
  lo.resume_dir = part;
  auto r = cs::start_run(json::object(), lo);
  ASSERT_EQ(r.trainer->step(), int64_t(17));
  r.trainer->run();
}

// The resumed run's weights are the uninterrupted run's, and the analyses that apply to any cell run on it:
// relevance (candidate, h) and the gates it names.
void expect_same_weights_and_analyses(const std::string& full, const std::string& part) {
  auto ta = cs::load_run_task(full, "last"), tb = cs::load_run_task(part, "last");
  auto pb = tb->model()->named_parameters();
  for (const auto& p : ta->model()->named_parameters())
    EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key() << " differs after the resume";
  const std::string text = "Call me Ishmael. Some years ago, never mind how long";
  const cs::LabeledMatrix m = cs::relevance_map(*ta, text, 10);
  ASSERT_EQ(m.rows(), 10);
  ASSERT_EQ(m.cols(), static_cast<int64_t>(text.size()));
  int finite = 0;
  for (double v : m.values) finite += std::isfinite(v) ? 1 : 0;
  EXPECT_GT(finite, 10 * 40);
  const cs::SeriesSet h = cs::gate_histograms(*ta, text);
  std::string names;
  for (const auto& s : h.series) names += s.name + " ";
  EXPECT_TRUE(cstest::contains(names, "l0/gate") && cstest::contains(names, "l0/reset")) << names;
}

// A fork of `part` records and copies the same script (hash `sha`).
void expect_fork_keeps_script(const std::string& part, const std::string& sha) {
  cs::LaunchOptions lo;
  lo.fork_dir = part;
  lo.run_dir = dir() + "/run_fork";
  auto r = cs::start_run(json{{"training", {{"steps", 32}}}}, lo);
  EXPECT_EQ(cs::RunStore(lo.run_dir).read_config()["model"]["script_sha256"], sha);
  EXPECT_EQ(cs::file_sha256(cs::RunStore(lo.run_dir).path(cs::script_copy_name())), sha);
}

// A different seed trains another model (the script's parameters are drawn from the run's seed), and the script's
// parameters are the model's: trained, checkpointed and restored (the full run's last checkpoint is not the
// initial draw of its seed).
void expect_seed_draws_and_training_moves_script_parameters(const json& cfg, const std::string& full) {
  json other = cfg;
  other["training"]["seed"] = 12;
  other["training"]["steps"] = 1;
  cs::LaunchOptions lo;
  lo.run_dir = dir() + "/run_seed12";
  auto r = cs::start_run(other, lo);
  cs::LaunchOptions lo11;
  json same = cfg;
  same["training"]["steps"] = 1;
  lo11.run_dir = dir() + "/run_seed11";
  auto r11 = cs::start_run(same, lo11);
  auto p12 = r.trainer->task().model()->named_parameters(), p11 = r11.trainer->task().model()->named_parameters();
  ASSERT_TRUE(p12.contains("stack.layer0.w_hh") && p11.contains("stack.layer0.w_conv"));
  EXPECT_FALSE(torch::equal(p12["stack.layer0.w_hh"], p11["stack.layer0.w_hh"]));
  auto ta = cs::load_run_task(full, "last");
  auto trained = ta->model()->named_parameters();
  for (const char* k : {"stack.layer0.w_conv", "stack.layer0.w_hh", "stack.layer0.b_ih"})
    EXPECT_FALSE(torch::equal(trained[k], p11[k])) << k << " did not train";
}

// The run's copy of its script (`copy_bytes`) changed too, so that it is not the file the run recorded either:
// resume and analysis are refused, naming the file (`mine`) and both hashes (recorded `sha`, the file's `now`), and
// nothing is written (the metrics stay `metrics`). The copy is restored after.
void expect_changed_copy_refused(cs::RunStore& ps, const std::string& part, const std::string& copy_bytes,
                                 const std::string& mine, const std::string& sha, const std::string& now,
                                 const std::vector<json>& metrics) {
  cstest::write_text(ps.path(cs::script_copy_name()), copy_bytes + "x");
  for (const std::string which : {"resume", "analyse"}) {
    const std::string msg = user_error([&] {
      if (which == "resume") {
        cs::LaunchOptions lo;
        lo.resume_dir = part;
        json more = {{"training", {{"steps", 40}}}};
        cs::start_run(more, lo);
      } else {
        cs::load_run_task(part, "last");
      }
    });
    EXPECT_TRUE(cstest::contains(msg, mine) && cstest::contains(msg, sha) && cstest::contains(msg, now))
        << which << ": '" << msg << "'";
  }
  EXPECT_EQ(comparable(ps.read_metrics()), metrics);  // the refused resume wrote nothing
  cstest::write_text(ps.path(cs::script_copy_name()), copy_bytes);
}

// The resume of `part` through the run's copy of the script (the original `mine` changed) says so and trains on.
void expect_resume_through_copy(const std::string& part, const std::string& mine) {
  cs::LaunchOptions lo;
  lo.resume_dir = part;
  auto r = cs::start_run(json{{"training", {{"steps", 35}}}}, lo);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_TRUE(cstest::contains(r.notes[0], mine) && cstest::contains(r.notes[0], "changed since") &&
              cstest::contains(r.notes[0], cs::script_copy_name()))
      << r.notes[0];
  EXPECT_EQ(r.trainer->step(), int64_t(30));
  r.trainer->run();
}

// Both gone, the original and the run's copy (whose bytes were `copy_bytes`): eval (like analyze, generate,
// decode, cloze scores and export) is pointed at the script with --script PATH, which must still be the run's by
// SHA-256 (`sha`).
void expect_script_option_when_both_are_gone(cs::RunStore& ps, const std::string& part, const std::string& copy_bytes,
                                             const std::string& sha) {
  const std::string elsewhere = dir() + "/moved/script.pt", changed = dir() + "/moved/changed.pt";
  cstest::write_text(elsewhere, copy_bytes);
  cstest::write_text(changed, copy_bytes + "x");
  std::filesystem::remove(ps.path(cs::script_copy_name()));
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"eval", part, "--split", "valid"}, &out, &err), 2) << err;
  EXPECT_TRUE(cstest::contains(err, "--script PATH")) << err;
  ASSERT_EQ(cstest::run_cli({"eval", part, "--split", "valid", "--script", elsewhere, "--json"}, &out, &err), 0) << err;
  EXPECT_FALSE(cstest::json_object(out).empty()) << out;
  ASSERT_EQ(cstest::run_cli({"eval", part, "--split", "valid", "--script", changed}, &out, &err), 2) << err;
  EXPECT_TRUE(cstest::contains(err, "is not the script this run was trained with") && cstest::contains(err, sha))
      << err;
  ASSERT_EQ(cstest::run_cli({"eval", part, "--script", dir() + "/moved/none.pt"}, &out, &err), 2) << err;
  EXPECT_TRUE(cstest::contains(err, "--script '" + dir() + "/moved/none.pt' does not exist")) << err;
  ASSERT_EQ(cstest::run_cli({"export", part, "--out", dir() + "/exp_moved", "--script", elsewhere}, &out, &err), 0)
      << err;
  EXPECT_EQ(cs::file_sha256(dir() + "/exp_moved/" + cs::script_copy_name()), sha);
}

}  // namespace

// A run of the convolution-input variant (three state tensors) stopped and resumed equals an
// uninterrupted one bit for bit; the run records and keeps its script; a changed script file is
// refused on resume and on analysis; the analyses run on it.
TEST_F(ScriptCell, runResumesBitExactlyAndKeepsItsOwnScript) {
  const std::string corpus = cstest::write_text_fixture("script_run.txt", 20000);
  const std::string mine = dir() + "/mine.pt";
  std::filesystem::copy_file(dir() + "/conv.pt", mine, std::filesystem::copy_options::overwrite_existing);
  const json cfg = run_config(mine, corpus, 30);
  const std::string full = dir() + "/run_full", part = dir() + "/run_part";
  train_full_and_stopped(cfg, full, part);
  cs::RunStore ps(part), fs(full);
  ASSERT_EQ(ps.read_summary().status, std::string("stopped"));
  // the run records the script's absolute path and hash, and keeps a copy
  const std::string sha = cs::file_sha256(mine);
  const json saved = ps.read_config();
  EXPECT_EQ(saved["model"]["script_sha256"], sha);
  EXPECT_EQ(saved["model"]["script"], std::filesystem::canonical(mine).string());
  EXPECT_EQ(cs::file_sha256(ps.path(cs::script_copy_name())), sha);
  ASSERT_NO_FATAL_FAILURE(resume_stopped(part));
  const auto a = comparable(fs.read_metrics()), b = comparable(ps.read_metrics());
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
  ASSERT_NO_FATAL_FAILURE(expect_same_weights_and_analyses(full, part));
  expect_fork_keeps_script(part, sha);
  ASSERT_NO_FATAL_FAILURE(expect_seed_draws_and_training_moves_script_parameters(cfg, full));
  // The script changes (the example saved again: new weights, new bytes). The run keeps using its
  // own copy, the very file it recorded (resume and analysis failed without using it, #52) ...
  std::string log;
  ASSERT_TRUE(
      python("'" + example("gru_conv_input.py") + "' '" + mine + "' --input-size 8 --hidden 16 --channels 6", &log))
      << log;
  const std::string now = cs::file_sha256(mine);
  ASSERT_NE(now, sha);
  EXPECT_TRUE(cs::load_run_task(part, "last") != nullptr);
  // ... unless the copy is not that file either: refused, naming the file and both hashes, nothing written.
  const std::string copy_bytes = cstest::read_text(ps.path(cs::script_copy_name()));
  expect_changed_copy_refused(ps, part, copy_bytes, mine, sha, now, b);
  // The resume through the copy says so and trains on.
  ASSERT_NO_FATAL_FAILURE(expect_resume_through_copy(part, mine));
  EXPECT_EQ(ps.read_summary().step, 35);
  // The original gone altogether: the same.
  std::filesystem::remove(mine);
  EXPECT_TRUE(cs::load_run_task(part, "last") != nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_script_option_when_both_are_gone(ps, part, copy_bytes, sha));
}

}  // namespace test_script_cell
