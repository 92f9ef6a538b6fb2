// `cellscope-cli export RUN_DIR --out DIR`: what an export writes and what it refuses. The manifest (export.json,
// and --json's copy of it) and a state dict read back by cellscope_torch (packaging/python) with Debian's
// python3-torch (/usr/bin/python3); the writer of model.pt and model.safetensors (util/state_dict_file.h) over every
// dtype it writes, read by torch.load(weights_only=True) (PyTorch 2.6's default) and as safetensors (parsed by hand,
// and by the safetensors package where Python has it); the refusals of export; an export while the run trains; and
// TorchScript-cell runs (model.cell = script: the export carries the script, checked by its SHA-256, and the rebuilt
// model agrees with Cellscope's). The agreement of every built-in cell and task with PyTorch (and torch.nn,
// TorchScript, ONNX, evaluate, import): test_export_torch_python.cpp; every registered cell, task and enum value:
// test_export_torch_registry.cpp; what they share: export_torch_fixture.h.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "corpus_fixture.h"
#include "export/torch_export.h"
#include "export_torch_fixture.h"
#include "harness.h"
#include "tasks/task.h"
#include "train/trainer.h"
#include "util/sha256.h"
#include "util/state_dict_file.h"

namespace test_export_torch {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace export_torch_fixture;  // the export tests' shared helpers (export_torch_fixture.h)

namespace {

// What Python must find in a file written from `items` (util/state_dict_file.h): per tensor in order its name, dtype
// as torch prints it, shape and the SHA-256 of its elements' bytes (little-endian, row-major): equal bytes, so equal
// values, NaN and -0.0 included.
json tensor_facts(const std::vector<std::pair<std::string, torch::Tensor>>& items) {
  static const std::map<c10::ScalarType, std::string> names = {
      {torch::kFloat, "torch.float32"},     {torch::kDouble, "torch.float64"}, {torch::kHalf, "torch.float16"},
      {torch::kBFloat16, "torch.bfloat16"}, {torch::kLong, "torch.int64"},     {torch::kInt, "torch.int32"},
      {torch::kShort, "torch.int16"},       {torch::kChar, "torch.int8"},      {torch::kByte, "torch.uint8"},
      {torch::kBool, "torch.bool"}};
  json out = json::array();
  for (auto& [k, t] : items) {
    const torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    const size_t n = static_cast<size_t>(c.numel()) * c.element_size();
    const std::string bytes = n ? std::string(static_cast<const char*>(c.data_ptr()), n) : std::string();
    out.push_back({{"name", k},
                   {"dtype", names.at(c.scalar_type())},
                   {"shape", c.sizes().vec()},
                   {"sha256", cs::sha256_hex(bytes)}});
  }
  return out;
}

// A script cell with a submodule (nn.Linear: Cellscope names its parameters lin__weight, lin__bias), a buffer
// and two state tensors, no reset_parameters (Cellscope draws every parameter from U(-1/sqrt(H), 1/sqrt(H))).
std::string script_nested() {
  const std::string path = cstest::temp_dir() + "/script_nested.pt";
  if (fs::exists(path)) return path;
  cstest::write_text(
      path + ".py",
      "import torch\n"
      "from typing import Dict, List, Tuple\n"
      "from torch import Tensor\n"
      "class Nested(torch.nn.Module):\n"
      "    input_size: int\n"
      "    hidden_size: int\n"
      "    state_sizes: List[int]\n"
      "    def __init__(self, I: int, H: int):\n"
      "        super().__init__()\n"
      "        self.input_size, self.hidden_size, self.state_sizes = I, H, [H, H]\n"
      "        self.lin = torch.nn.Linear(I + H, 2 * H)\n"
      "        self.register_buffer(\"scale\", torch.linspace(0.5, 1.0, H))\n"
      "    def forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]:\n"
      "        a, b = self.lin(torch.cat([x, state[0]], 1)).chunk(2, 1)\n"
      "        n = torch.tanh(b)\n"
      "        c = torch.sigmoid(a) * state[1] + self.scale * n\n"
      "        return [torch.tanh(c), c], {\"candidate\": n}\n"
      "torch.jit.save(torch.jit.script(Nested(6, 8)), \"" +
          path + "\")\n");
  std::string out;
  const int rc = shell(std::string("OMP_NUM_THREADS=1 ") + kPython + " '" + path + ".py'", &out);
  EXPECT_EQ(rc, 0) << out;
  return rc == 0 ? path : "";
}

// Script-cell runs: a char LM, a 2-layer char LM (one torch.jit.load per layer), a bidirectional classifier and
// a cell with a submodule and a buffer.
std::vector<Variant> script_variants() {
  const std::string in6 = script_gru(6), in8 = script_gru(8), nested = script_nested();
  if (in6.empty() || in8.empty() || nested.empty()) return {};
  return {{"script_gru", "char_lm", {{"cell", "script"}, {"script", in6}}},
          {"script_gru_2layers",
           "char_lm",
           {{"cell", "script"}, {"script", in8}, {"embed", 8}, {"layers", 2}, {"dropout", 0.1}}},
          {"classify3_script_gru", "classify", {{"cell", "script"}, {"script", in6}, {"fc", 5}}},
          {"script_nested", "char_lm", {{"cell", "script"}, {"script", nested}}}};
}

}  // namespace

TEST(ExportTorch, manifestAndStateDictRoundTrip) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  const std::string text = cstest::write_text_fixture("export_manifest.txt", 8000);
  const Variant v{"manifest_gru_dt", "char_lm", {{"cell", "gru_dt"}, {"depth", 2}, {"share_transition", false}}};
  const std::string run = cstest::temp_dir() + "/run_manifest", out = cstest::temp_dir() + "/exp_manifest";
  std::string err, o;
  ASSERT_EQ(train_tiny(v, text, run, &err), 0) << err;
  ASSERT_EQ(cstest::run_cli({"export", run, "--checkpoint", "last", "--out", out}, &o, &err), 0) << err;
  const json man = cstest::json_object(cstest::read_text(out + "/export.json"));
  ASSERT_EQ(man.value("task", std::string()), "char_lm");
  ASSERT_EQ(man.value("cell", std::string()), "gru_dt");
  ASSERT_EQ(man["checkpoint"].value("step", -1), 2);
  ASSERT_EQ(man["checkpoint"].value("file", std::string()), "last.pt");
  ASSERT_EQ(man["checkpoint"].value("fnv1a64", std::string()).size(), 16u);
  ASSERT_EQ(man["parameters"]["stack.layer0.transition2.w_hh"], json({24, 8}));
  ASSERT_EQ(man["parameters"]["stack.layer0.transition2.w_ih"], json({24, 0}));
  // --json: the same manifest as one object on stdout, with where it went
  ASSERT_EQ(cstest::run_cli({"export", run, "--checkpoint", "last", "--out", out, "--force", "--json"}, &o, &err), 0)
      << err;
  const json printed = cstest::json_object(o);
  ASSERT_EQ(printed.value("out", std::string()), std::filesystem::absolute(out).lexically_normal().string()) << o;
  ASSERT_GT(printed.value("seconds", -1.0), 0.0) << o;
  ASSERT_EQ(printed.value("export", json()), cstest::json_object(cstest::read_text(out + "/export.json"))) << o;
  ASSERT_EQ(printed["export"]["checkpoint"], man["checkpoint"]) << o;
  const json files = man.value("files", json::array());
  ASSERT_NE(std::find(files.begin(), files.end(), "model.safetensors"), files.end()) << files.dump();
  // The tensors as the C++ side holds them (the checkpoint loaded again, named as the export names them): model.pt
  // by torch.load(weights_only=True), model.safetensors parsed by hand and by the safetensors package where Python
  // has it must hold exactly these, in this order (the empty [24, 0] w_ih included); reference.pt loads
  // weights-only too, and neither pickle names a global outside the weights-only unpickler's list.
  {
    auto task = cs::load_run_task(run, "last");
    std::vector<std::pair<std::string, torch::Tensor>> state;
    for (auto& p : task->model()->named_parameters(true)) state.emplace_back(p.key(), p.value());
    for (auto& b : task->model()->named_buffers(true)) state.emplace_back(b.key(), b.value());
    ASSERT_EQ(state.size(), man["parameters"].size());
    cstest::write_text(cstest::temp_dir() + "/manifest_facts.json", tensor_facts(state).dump());
  }
  const std::string facts_code =
      std::string(kStateFileChecks) +
      "import sys, json, torch\n"
      "d, facts = sys.argv[1], json.load(open(sys.argv[2]))\n"
      "p = facts_problems(torch.load(d + \"/model.pt\", weights_only=True), facts, \"model.pt\")\n"
      "p += facts_problems(read_safetensors(d + \"/model.safetensors\"), facts, \"model.safetensors by hand\")\n"
      "try:\n"
      "    import safetensors.torch as sft\n"
      "except ImportError:\n"
      "    sft = None\n"
      "if sft is not None:\n"
      "    p += facts_problems(sft.load_file(d + \"/model.safetensors\"), facts, \"safetensors.torch.load_file\",\n"
      "                        False)\n"
      "ref = torch.load(d + \"/reference.pt\", weights_only=True)\n"
      "kinds = {k: [str(v.dtype), v.dim()] for k, v in ref.items()}\n"
      "globs = sorted(set(pickle_globals(d + \"/model.pt\") + pickle_globals(d + \"/reference.pt\")))\n"
      "print(json.dumps({\"problems\": p, \"safetensors\": sft is not None, \"reference\": kinds,\n"
      "                  \"globals\": globs}))\n";
  int frc = 0;
  const std::string fres = python(facts_code, {out, cstest::temp_dir() + "/manifest_facts.json"}, &frc);
  ASSERT_EQ(frc, 0) << fres;
  const json fr = cstest::json_object(fres);
  ASSERT_TRUE(fr.contains("problems")) << fres;
  ASSERT_TRUE(fr["problems"].empty()) << fr["problems"].dump(1);
  std::cout << "model.safetensors read by hand"
            << (fr.value("safetensors", false) ? " and by safetensors.torch.load_file" : " (no safetensors package)")
            << "; pickle globals " << fr["globals"].dump() << "\n";
  ASSERT_EQ(fr["reference"], json({{"x", {"torch.int64", 2}},
                                   {"y", {"torch.int64", 2}},
                                   {"mask", {"torch.float32", 2}},
                                   {"logits", {"torch.float32", 3}},
                                   {"loss", {"torch.float64", 0}}}))
      << fres;
  ASSERT_EQ(fr["globals"], json({"collections OrderedDict", "torch DoubleStorage", "torch FloatStorage",
                                 "torch LongStorage", "torch._utils _rebuild_tensor_v2"}))
      << fres;
  // Python: the manifest's names and shapes are the state_dict's; the vocabulary is a list of the corpus' symbols;
  // a state_dict saved back by PyTorch loads strictly again; an option the package lacks is refused by name.
  const char* code =
      "import sys, json, os, torch, cellscope_torch as ct\n"
      "d = sys.argv[1]\n"
      "model, info = ct.load(d)\n"
      "man = info[\"manifest\"]\n"
      "sd = model.state_dict()\n"
      "assert sorted(sd) == sorted(man[\"parameters\"]), (sorted(sd), sorted(man[\"parameters\"]))\n"
      "assert all(list(sd[k].shape) == man[\"parameters\"][k] for k in sd)\n"
      "assert info[\"vocab\"][0] == \"<unk>\" and \"w\" in info[\"vocab\"]\n"
      "assert len(info[\"vocab\"]) == sd[\"embed.weight\"].shape[0]\n"
      "torch.save(sd, d + \"/again.pt\")\n"
      "m2, _ = ct.load(d)\n"
      "m2.load_state_dict(torch.load(d + \"/again.pt\"), strict=True)\n"
      "cfg = json.load(open(d + \"/config.json\"))\n"
      "cfg[\"model\"][\"frobnicate\"] = 3\n"
      "json.dump(cfg, open(d + \"/config.json\", \"w\"))\n"
      "try:\n"
      "    ct.load(d)\n"
      "    print(\"NOT REFUSED\")\n"
      "except NotImplementedError as e:\n"
      "    print(\"refused:\", e)\n";
  int rc = 0;
  const std::string res = python(code, {out}, &rc);
  ASSERT_EQ(rc, 0) << res;
  ASSERT_TRUE(cstest::contains(res, "refused:") && cstest::contains(res, "model.frobnicate")) << res;
}

// util/state_dict_file.h on its own: every dtype it writes, 0-dim scalars, empty tensors, 4 and 5 dimensions, a
// transposed view and a slice of a larger tensor (only their own elements are written), a tensor that requires grad,
// a dimension over 65535 (the pickle's 4-byte integer), NaN / -0.0 / inf and a non-ASCII name, read back by
// torch.load with weights_only=True (and without), and as safetensors by hand and by the safetensors package where
// Python has it: the same names in the same order, dtypes, shapes and bytes. An empty dict writes and loads; a
// dtype neither format is written for, a repeated name and a safetensors tensor named __metadata__ are refused.
// The export is one function of the core (run/export/torch_export.h) that the CLI and the window both call. Called
// in-process it writes what `cellscope-cli export` writes for the same checkpoint (export.json equal, the same
// weights byte for byte, a reference batch), says what it did, refuses a bad checkpoint name and a destination that
// is not an earlier export by throwing UserError, replaces an earlier export with force, and leaves no temporary
// folder beside its destination.
TEST(ExportTorch, coreFunctionWritesWhatTheCliWrites) {
  const std::string text = cstest::write_text_fixture("export_core.txt", 8000);
  const Variant v{"core_fn", "char_lm", {{"cell", "gru"}}};
  const std::string dir = cstest::temp_dir() + "/export_core";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = dir + "/run", cli_out = dir + "/by_cli", core_out = dir + "/by_core";
  std::string err, o;
  ASSERT_EQ(train_tiny(v, text, run, &err), 0) << err;
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", cli_out}, &o, &err), 0) << err;
  cs::TorchExportOptions opt;
  opt.run_dir = run;
  opt.out = core_out + "/";  // a trailing slash names the same folder
  const cs::TorchExport r = cs::export_torch(opt);
  EXPECT_EQ(r.out, fs::absolute(core_out).lexically_normal().string());
  const json cli_man = cstest::json_object(cstest::read_text(cli_out + "/export.json"));
  const json core_man = cstest::json_object(cstest::read_text(core_out + "/export.json"));
  EXPECT_EQ(core_man, r.manifest);
  EXPECT_EQ(core_man, cli_man);
  EXPECT_NE(core_man.value("cellscope_version", std::string("unknown")), "unknown");
  EXPECT_EQ(r.checkpoint_file, "best.pt");
  EXPECT_EQ(r.step, cli_man["checkpoint"].value("step", -2));
  EXPECT_EQ(r.tensors, static_cast<int64_t>(core_man["parameters"].size()));
  EXPECT_EQ(r.config.at("model").value("cell", std::string()), "gru");
  EXPECT_TRUE(core_man.value("reference", false));
  EXPECT_EQ(cstest::read_text(core_out + "/model.safetensors"), cstest::read_text(cli_out + "/model.safetensors"));
  const json files = core_man.value("files", json::array());
  EXPECT_NE(std::find(files.begin(), files.end(), "reference.pt"), files.end()) << files.dump();
  EXPECT_TRUE(fs::exists(core_out + "/reference.pt"));

  opt.checkpoint = "latest";
  try {
    cs::export_torch(opt);
    ADD_FAILURE() << "checkpoint 'latest' was accepted";
  } catch (const cs::UserError& e) {
    EXPECT_TRUE(cstest::contains(e.what(), "best, last or step_N")) << e.what();
  }
  opt.checkpoint = "last";
  try {
    cs::export_torch(opt);
    ADD_FAILURE() << "an existing export was replaced without force";
  } catch (const cs::UserError& e) {
    EXPECT_TRUE(cstest::contains(e.what(), "not empty")) << e.what();
  }
  opt.force = true;
  EXPECT_EQ(cs::export_torch(opt).checkpoint_file, "last.pt");
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(ExportTorch, stateDictFileWritesEveryDtypeForWeightsOnlyLoad) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  torch::manual_seed(7);
  const auto big = torch::arange(40, torch::kFloat32).reshape({8, 5});
  const std::vector<std::pair<std::string, torch::Tensor>> items = {
      {"f32", torch::randn({2, 3})},
      {"f64_scalar", torch::scalar_tensor(3.25, torch::kFloat64)},
      {"i64", torch::tensor(std::vector<int64_t>{-1, 0, int64_t{1} << 40, std::numeric_limits<int64_t>::min()})},
      {"i32_4d", torch::arange(12, torch::kInt32).reshape({2, 1, 2, 3})},
      {"i32_5d", torch::arange(6, torch::kInt32).reshape({1, 2, 1, 3, 1})},
      {"bool", torch::tensor(std::vector<int64_t>{1, 0, 1}).to(torch::kBool)},
      {"bool_scalar", torch::scalar_tensor(true, torch::kBool)},
      {"empty_f32", torch::empty({0})},
      {"empty_i64_3x0", torch::empty({3, 0}, torch::kInt64)},
      {"f16", torch::randn({3}).to(torch::kHalf)},
      {"bf16", torch::randn({2, 2}).to(torch::kBFloat16)},
      {"i16", torch::tensor(std::vector<int64_t>{-300, 300}).to(torch::kInt16)},
      {"i8", torch::tensor(std::vector<int64_t>{-128, 127}).to(torch::kInt8)},
      {"u8", torch::tensor(std::vector<int64_t>{0, 255, 7}).to(torch::kUInt8)},
      {"transposed", big.t()},
      {"slice", big.narrow(0, 3, 2)},
      {"grad", torch::ones({2}, torch::requires_grad())},
      {"long_dim", torch::arange(70000, torch::kFloat32)},
      {"odd_floats", torch::tensor(std::vector<float>{std::nanf(""), -0.0f, INFINITY, -INFINITY})},
      {"\xc3\xbcn\xc3\xaf.weight", torch::full({1}, 2.0)},
  };
  ASSERT_FALSE(items[14].second.is_contiguous());
  ASSERT_GT(items[15].second.storage_offset(), 0);
  const std::string dir = cstest::temp_dir() + "/state_dict_file";
  fs::create_directories(dir);
  cs::write_torch_state_dict(dir + "/unit.pt", items);
  cs::write_safetensors(dir + "/unit.safetensors", items);
  cs::write_torch_state_dict(dir + "/empty.pt", {});
  cs::write_safetensors(dir + "/empty.safetensors", {});
  cstest::write_text(dir + "/facts.json", tensor_facts(items).dump());
  const cs::NamedTensors complex = {{"c", torch::zeros({2}, torch::kComplexFloat)}};
  const cs::NamedTensors twice = {{"a", torch::zeros({1})}, {"a", torch::ones({1})}};
  const cs::NamedTensors metadata = {{"__metadata__", torch::zeros({1})}};
  EXPECT_THROW(cs::torch_state_dict_bytes(complex), std::invalid_argument);
  EXPECT_THROW(cs::safetensors_bytes(complex), std::invalid_argument);
  EXPECT_THROW(cs::torch_state_dict_bytes(twice), std::invalid_argument);
  EXPECT_THROW(cs::safetensors_bytes(twice), std::invalid_argument);
  EXPECT_THROW(cs::safetensors_bytes(metadata), std::invalid_argument);
  const std::string code =
      std::string(kStateFileChecks) +
      "import sys, json, torch\n"
      "d = sys.argv[1]\n"
      "facts = json.load(open(d + \"/facts.json\"))\n"
      "p = facts_problems(torch.load(d + \"/unit.pt\", weights_only=True), facts, \"torch.load(weights_only=True)\")\n"
      "p += facts_problems(torch.load(d + \"/unit.pt\"), facts, \"torch.load\")\n"
      "p += facts_problems(read_safetensors(d + \"/unit.safetensors\"), facts, \"safetensors by hand\")\n"
      "try:\n"
      "    import safetensors.torch as sft\n"
      "except ImportError:\n"
      "    sft = None\n"
      "if sft is not None:\n"
      "    p += facts_problems(sft.load_file(d + \"/unit.safetensors\"), facts, \"safetensors.torch.load_file\",\n"
      "                        False)\n"
      "    if sft.load_file(d + \"/empty.safetensors\") != {}:\n"
      "        p.append(\"empty.safetensors by safetensors.torch.load_file is not empty\")\n"
      "e = torch.load(d + \"/empty.pt\", weights_only=True)\n"
      "if type(e) is not dict or e:\n"
      "    p.append(\"empty.pt: %r\" % (e,))\n"
      "if read_safetensors(d + \"/empty.safetensors\") != {}:\n"
      "    p.append(\"empty.safetensors by hand is not empty\")\n"
      "print(json.dumps({\"problems\": p, \"safetensors\": sft is not None,\n"
      "                  \"globals\": pickle_globals(d + \"/unit.pt\"), \"torch\": torch.__version__}))\n";
  int rc = 0;
  const std::string res = python(code, {dir}, &rc);
  ASSERT_EQ(rc, 0) << res;
  const json r = cstest::json_object(res);
  ASSERT_TRUE(r.contains("problems")) << res;
  std::cout << "torch " << r.value("torch", std::string()) << ": read by torch.load(weights_only=True), torch.load and "
            << (r.value("safetensors", false) ? "safetensors.torch.load_file + by hand"
                                              : "by hand (no safetensors package in this Python)")
            << "\n";
  ASSERT_TRUE(r["problems"].empty()) << r["problems"].dump(1);
  ASSERT_EQ(r["globals"],
            json({"collections OrderedDict", "torch BFloat16Storage", "torch BoolStorage", "torch ByteStorage",
                  "torch CharStorage", "torch DoubleStorage", "torch FloatStorage", "torch HalfStorage",
                  "torch IntStorage", "torch LongStorage", "torch ShortStorage", "torch._utils _rebuild_tensor_v2"}))
      << res;
}

TEST(ExportTorch, refusesBadInputAndWritesNothing) {
  const std::string text = cstest::write_text_fixture("export_refuse.txt", 8000);
  const Variant v{"refuse_gru", "char_lm", {{"cell", "gru"}}};
  const std::string run = cstest::temp_dir() + "/run_refuse", out = cstest::temp_dir() + "/exp_refuse";
  std::string err, o;
  ASSERT_EQ(train_tiny(v, text, run, &err), 0) << err;
  ASSERT_EQ(cstest::run_cli({"export", "--help"}, &o, &err), 0);
  ASSERT_TRUE(cstest::contains(o, "usage: cellscope-cli export"));
  // not a run directory
  ASSERT_EQ(cstest::run_cli({"export", cstest::temp_dir(), "--out", out}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "not a run directory")) << err;
  // no --out
  ASSERT_EQ(cstest::run_cli({"export", run}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--out")) << err;
  // a checkpoint that does not exist: the ones that do are listed
  ASSERT_EQ(cstest::run_cli({"export", run, "--checkpoint", "step_77", "--out", out}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "step_77") && cstest::contains(err, "last")) << err;
  ASSERT_EQ(cstest::run_cli({"export", run, "--checkpoint", "latest", "--out", out}, &o, &err), 2);
  ASSERT_FALSE(fs::exists(out));
  // an existing non-empty --out is refused without --force, replaced with it
  fs::create_directories(out);
  cstest::write_text(out + "/keep.txt", "x");
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", out}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "not empty") && cstest::contains(err, "--force")) << err;
  ASSERT_TRUE(fs::exists(out + "/keep.txt"));
  // --force deletes only an earlier export: not a folder of other files, not the run, not the folder above it
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", out, "--force"}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "not an earlier export")) << err;
  ASSERT_TRUE(fs::exists(out + "/keep.txt"));
  for (const std::string& victim : {run, fs::path(run).parent_path().string()}) {
    ASSERT_EQ(cstest::run_cli({"export", run, "--out", victim, "--force"}, &o, &err), 2) << victim;
    ASSERT_TRUE(cstest::contains(err, "not an earlier export")) << err;
    ASSERT_TRUE(fs::exists(run + "/checkpoints/last.pt"));
    ASSERT_TRUE(fs::exists(run + "/metrics.jsonl"));
  }
  // an earlier export is replaced with --force; a user's folder named --out + ".tmp" is not touched
  // (the export writes into a folder of its own with a unique name), and none of its own is left
  fs::remove_all(out);
  fs::create_directories(out + ".tmp");
  cstest::write_text(out + ".tmp/mine.txt", "user's");
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", out}, &o, &err), 0) << err;
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", out, "--force"}, &o, &err), 0) << err;
  ASSERT_TRUE(fs::exists(out + "/model.pt"));
  // ... but not one a user has put a file of their own into, nor a folder whose export.json is not
  // this command's (#52: a file named export.json was proof enough, and the folder went whole)
  cstest::write_text(out + "/keep.txt", "x");
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", out, "--force"}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "keep.txt")) << err;
  ASSERT_EQ(cstest::read_text(out + "/keep.txt"), "x");
  fs::remove(out + "/keep.txt");
  const std::string foreign = cstest::temp_dir() + "/foreign_export";
  cstest::write_text(foreign + "/export.json", "{\"format\": \"another tool\", \"files\": []}");
  cstest::write_text(foreign + "/results.csv", "1,2");
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", foreign, "--force"}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "not one of cellscope-cli export's")) << err;
  ASSERT_EQ(cstest::read_text(foreign + "/results.csv"), "1,2");
  ASSERT_EQ(cstest::read_text(out + ".tmp/mine.txt"), "user's");
  for (auto& e : fs::directory_iterator(fs::path(out).parent_path()))
    ASSERT_FALSE(cstest::starts_with(e.path().filename().string(), "." + fs::path(out).filename().string() + "."))
        << "left behind: " << e.path();
  // a run named model.tmp exported to --out model: the run is read, never removed
  const std::string tmp_named = cstest::temp_dir() + "/as_tmp/model.tmp";
  fs::create_directories(fs::path(tmp_named).parent_path());
  fs::copy(run, tmp_named, fs::copy_options::recursive);
  ASSERT_EQ(cstest::run_cli({"export", tmp_named, "--out", cstest::temp_dir() + "/as_tmp/model"}, &o, &err), 0) << err;
  ASSERT_TRUE(fs::exists(tmp_named + "/checkpoints/best.pt") && fs::exists(tmp_named + "/config.json"));
  ASSERT_TRUE(fs::exists(cstest::temp_dir() + "/as_tmp/model/model.pt"));
  // an empty --out: one message naming it, exit 2
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", ""}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--out")) << err;
  // the run's own export.json does not make it replaceable
  cstest::write_text(run + "/export.json", "{}");
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", run, "--force"}, &o, &err), 2);
  ASSERT_TRUE(fs::exists(run + "/checkpoints/last.pt"));
  fs::remove(run + "/export.json");
  // a corrupted checkpoint: one clear message naming it, nothing written
  const std::string out2 = cstest::temp_dir() + "/exp_refuse2";
  {
    std::fstream f(run + "/checkpoints/last.pt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    char c = 0;
    f.read(&c, 1);
    f.seekp(200);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  ASSERT_EQ(cstest::run_cli({"export", run, "--checkpoint", "last", "--out", out2}, &o, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "last.pt") && cstest::contains(err, "corrupted")) << err;
  ASSERT_FALSE(fs::exists(out2));
  ASSERT_FALSE(fs::exists(out2 + ".tmp"));
  // a run whose vocab file is gone (#52: exported with exit 0 and no vocabulary): refused, naming the file
  const std::string novocab = cstest::temp_dir() + "/run_novocab";
  ASSERT_EQ(train_tiny(v, text, novocab, &err), 0) << err;
  fs::remove(novocab + "/vocab");
  ASSERT_EQ(cstest::run_cli({"export", novocab, "--out", out2}, &o, &err), 2) << o;
  ASSERT_TRUE(cstest::contains(err, novocab + "/vocab") && cstest::contains(err, "no vocab file")) << err;
  ASSERT_FALSE(fs::exists(out2));
}

// Exporting a run while it trains (#52): the checkpoint is read once, and model.pt, export.json's step and its
// hash all come from that one read. A run checkpointing every step, keeping every step file, is exported
// `--checkpoint last` again and again while it trains; afterwards each export is compared with an export of the step
// its export.json names (step_S.pt, the same bytes as last.pt held at step S): the same model.pt bytes and the same
// hash. Reading the file once for the weights, again for the step and again for the hash mixed steps (in the trial
// 5 of 5 exports named one step and held the weights of another).
TEST(ExportTorch, exportDuringTrainingIsOneSnapshotOfTheCheckpoint) {
  const std::string text = cstest::write_text_fixture("export_live.txt", 6000);
  const std::string run = cstest::temp_dir() + "/run_live", cfg_path = cstest::temp_dir() + "/live.json";
  const json cfg = {{"task", "char_lm"},
                    {"dataset", {{"path", text}}},
                    {"model", {{"cell", "gru"}, {"embed", 6}, {"hidden", 8}}},
                    {"training",
                     {{"batch", 4},
                      {"bptt", 12},
                      {"steps", 1000000},
                      {"eval_every", 0},
                      {"checkpoint_every", 1},
                      {"keep_checkpoints", 1000000},
                      {"threads", 1},
                      {"eval_test", false}}}};
  cstest::write_text(cfg_path, cfg.dump());
  cstest::Process train;
  ASSERT_TRUE(train.start({"train", cfg_path, "--run-dir", run})) << train.err();
  for (int i = 0; i < 600 && !fs::exists(run + "/checkpoints/step_2.pt"); ++i) {
    ASSERT_TRUE(train.running()) << train.err();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(run + "/checkpoints/step_2.pt")) << train.err();
  struct Live {
    std::string dir;
    int64_t step;
    std::string hash;
  };
  std::vector<Live> live;
  std::string o, err;
  for (int k = 0; k < 6; ++k) {
    const std::string e = cstest::temp_dir() + "/exp_live" + std::to_string(k);
    ASSERT_EQ(cstest::run_cli({"export", run, "--checkpoint", "last", "--out", e}, &o, &err), 0) << err;
    const json man = cstest::json_object(cstest::read_text(e + "/export.json"));
    live.push_back({e, man["checkpoint"].value("step", int64_t{-1}), man["checkpoint"].value("fnv1a64", "")});
  }
  ASSERT_TRUE(train.running()) << "the training ended before the exports did: " << train.err();
  train.signal(SIGTERM);
  ASSERT_TRUE(train.wait(120000));
  ASSERT_GT(live.back().step, live.front().step) << "the run did not move on while it was exported";
  for (const Live& l : live) {
    ASSERT_GT(l.step, 0) << l.dir;
    const std::string again = l.dir + "_again";
    ASSERT_EQ(
        cstest::run_cli({"export", run, "--checkpoint", "step_" + std::to_string(l.step), "--out", again}, &o, &err), 0)
        << err;
    const json man = cstest::json_object(cstest::read_text(again + "/export.json"));
    ASSERT_EQ(man["checkpoint"].value("step", int64_t{-1}), l.step);
    EXPECT_EQ(man["checkpoint"].value("fnv1a64", ""), l.hash)
        << l.dir << ": export.json's hash is not step " << l.step << "'s";
    EXPECT_TRUE(cstest::read_text(again + "/model.pt") == cstest::read_text(l.dir + "/model.pt"))
        << l.dir << ": model.pt does not hold the weights of step " << l.step << ", the step export.json names";
  }
}

// A TorchScript cell: the export writes the run's script (script_cell.pt, named in export.json with the SHA-256
// the run recorded), cellscope_torch.load rebuilds the model with one torch.jit.load of it per layer / direction,
// the state_dict loads strictly by Cellscope's names, and check() agrees with Cellscope as for the built-in cells.
TEST(ExportTorch, scriptCellRunExportsAndAgreesWithPyTorch) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  const auto vs = script_variants();
  ASSERT_EQ(vs.size(), 4u);
  std::vector<std::string> dirs;
  for (const auto& v : vs) {
    const std::string out = exported(v);
    ASSERT_FALSE(out.empty()) << v.name;
    const json man = cstest::json_object(cstest::read_text(out + "/export.json"));
    const json cfg = cstest::json_object(cstest::read_text(out + "/config.json"));
    const std::string recorded = cfg["model"].value("script_sha256", std::string());
    ASSERT_EQ(recorded.size(), 64u) << v.name;
    ASSERT_EQ(man["script"].value("file", std::string()), "script_cell.pt") << v.name;
    ASSERT_EQ(man["script"].value("sha256", std::string()), recorded) << v.name;
    ASSERT_EQ(cs::file_sha256(out + "/script_cell.pt"), recorded) << v.name;
    ASSERT_EQ(cs::file_sha256(v.model.at("script").get<std::string>()), recorded) << v.name;
    if (v.name == "script_nested") {  // Cellscope's names: the submodule's '.' as '__', the buffer by its name
      for (auto n : {"stack.layer0.lin__weight", "stack.layer0.lin__bias", "stack.layer0.scale"})
        ASSERT_TRUE(man["parameters"].contains(n)) << n << " " << man["parameters"].dump();
    }
    const json files = man.value("files", json::array());
    ASSERT_NE(std::find(files.begin(), files.end(), "script_cell.pt"), files.end()) << v.name;
    dirs.push_back(out);
  }
  // check() on the reference batch, and per model: the ScriptCells (one TorchScript module each), whether each
  // computes with the very tensors of the state_dict, portable.trace against the eager model and the ONNX export
  // (python3-onnx; run by onnxruntime where it imports, against Cellscope's logits), whether a backward pass reaches
  // the parameters, and the logits of the model in double.
  const std::string code =
      std::string(kScriptChecks) + kOnnxRuntime +
      "import sys, json, torch, warnings, cellscope_torch as ct\n"
      "import torch.nn.functional as F\n"
      "from cellscope_torch import portable\n"
      "warnings.filterwarnings(\"ignore\")\n"
      "try:\n"
      "    import onnx\n"
      "    has_onnx = True\n"
      "except ImportError:\n"
      "    has_onnx = False\n"
      "print(json.dumps({\"onnxruntime\": ort_version()}))\n"
      "for d in sys.argv[1:]:\n"
      "    r = ct.check(d)\n"
      "    model, info = ct.load(d)\n"
      "    cells = [m for m in model.modules() if isinstance(m, ct.ScriptCell)]\n"
      "    r[\"cells\"] = len(cells)\n"
      "    r[\"modules\"] = len({id(c._script) for c in cells})\n"
      "    def slot(m, n):\n"
      "        for p in n.split(\".\"):\n"
      "            m = getattr(m, p)\n"
      "        return m\n"
      "    r[\"same_tensors\"] = all(slot(c._script, n) is getattr(c, n.replace(\".\", \"__\")) for c in cells\n"
      "                              for n in c._slots)\n"
      "    r[\"script_path\"] = info[\"script\"]\n"
      "    ref = torch.load(d + \"/reference.pt\", weights_only=True)\n"
      "    ex = (ref[\"x\"],) if \"lengths\" not in ref else (ref[\"x\"], ref[\"lengths\"])\n"
      "    with torch.no_grad():\n"
      "        r[\"trace_diff\"] = (portable.trace(model, *ex)(*ex) - portable.LogitsOnly(model)(*ex)).abs().max().item()\n"
      "    r[\"onnx_nodes\"] = portable.export_onnx(model, d + \"/model.onnx\", *ex)[\"nodes\"] if has_onnx else -1\n"
      "    r[\"ort_diff\"] = ort_diff(d + \"/model.onnx\", ex, ref[\"logits\"]) if has_onnx else None\n"
      "    script_checks(model, d, ct.reference_inputs(info[\"task\"], ref), r)\n"
      "    if info[\"task\"] == \"char_lm\":\n"
      "        logits, _ = model(ref[\"x\"])\n"
      "        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ref[\"y\"].reshape(-1)).backward()\n"
      "        r[\"grads\"] = all(p.grad is not None and p.grad.abs().sum().item() > 0 for c in cells\n"
      "                         for p in c.parameters())\n"
      "    r[\"double_max_abs\"] = ct.check(d, model.double())[\"max_abs\"]\n"
      "    print(json.dumps(r))\n";
  int rc = 0;
  const std::string res = python(code, dirs, &rc);
  ASSERT_EQ(rc, 0) << res;
  auto lines = json_lines(res);
  ASSERT_EQ(lines.size(), vs.size() + 1) << res;
  const bool ort = report_onnxruntime(lines[0]);
  lines.erase(lines.begin());
  std::cout << "variant                                  task      max|dlogit|   max rel     |dloss|  double|dlogit|"
               "  script  |d script|   |d saved|\n";
  for (size_t i = 0; i < vs.size(); ++i) {
    const json r = cstest::json_object(lines[i]);
    const double da = r.value("max_abs", 1.0), dr = r.value("max_rel", 1.0), dl = r.value("loss_diff", 1.0);
    const double dd = r.value("double_max_abs", 1.0);
    char line[512];
    std::snprintf(line, sizeof line, "%-40s %-8s %10.2e %10.2e %10.2e %10.2e  %-6s %10.2e %10.2e\n", vs[i].name.c_str(),
                  vs[i].task.c_str(), da, dr, dl, dd, r.value("script", std::string("?")) == "ok" ? "ok" : "NO",
                  r.value("script_diff", -1.0), r.value("saved_diff", -1.0));
    std::cout << line;
    expect_scripts(vs[i].name, r);
    ASSERT_EQ(r.value("cell", std::string()), "script") << lines[i];
    ASSERT_LE(da, 1e-5) << vs[i].name;
    ASSERT_LE(dl, 1e-6) << vs[i].name;
    ASSERT_LE(dd, 1e-5) << vs[i].name;
    ASSERT_GT(r.value("cellscope_loss", 0.0), 0.5) << vs[i].name;
    const int want_cells = vs[i].task == "classify" ? 2 : vs[i].model.value("layers", 1);
    ASSERT_EQ(r.value("cells", 0), want_cells) << vs[i].name;
    ASSERT_EQ(r.value("modules", 0), want_cells) << vs[i].name;  // torch.jit.load once per layer / direction
    ASSERT_TRUE(r.value("same_tensors", false)) << vs[i].name;
    ASSERT_LE(r.value("trace_diff", 1.0), 1e-6) << vs[i].name;
    const int nodes = r.value("onnx_nodes", 0);  // -1: no python3-onnx, not checked
    ASSERT_TRUE(nodes == -1 || nodes > 3) << vs[i].name << ": " << lines[i];
    if (ort && nodes != -1) {
      std::cout << "  onnxruntime max|dlogit| vs Cellscope " << r.value("ort_diff", -1.0) << "\n";
      ASSERT_TRUE(r["ort_diff"].is_number()) << vs[i].name << ": " << lines[i];
      ASSERT_LE(r.value("ort_diff", 1.0), 1e-5) << vs[i].name << ": onnxruntime's logits vs Cellscope's";
    }
    ASSERT_EQ(r.value("script_path", std::string()), dirs[i] + "/script_cell.pt") << vs[i].name;
    if (vs[i].task == "char_lm") {
      ASSERT_TRUE(r.value("grads", false)) << vs[i].name;
    }
  }
}

// The script is checked against the SHA-256 the run recorded: cellscope_torch.load refuses an export whose
// script_cell.pt was replaced (another valid TorchScript cell of the same shapes) or removed, naming the file;
// the export refuses a run whose own copy was changed, with nothing written. With the original script gone the
// export uses the run's copy.
TEST(ExportTorch, scriptCellTamperedScriptIsRefused) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  const auto vs = script_variants();
  ASSERT_FALSE(vs.empty());
  const std::string good = exported(vs[0]);
  ASSERT_FALSE(good.empty());
  const std::string d = cstest::temp_dir() + "/exp_script_tampered";
  fs::remove_all(d);
  fs::copy(good, d, fs::copy_options::recursive);
  const std::string recorded =
      cstest::json_object(cstest::read_text(d + "/config.json"))["model"].value("script_sha256", std::string());
  const std::string other = script_gru(8);
  ASSERT_FALSE(other.empty());
  const char* code =
      "import sys, shutil, os, cellscope_torch as ct\n"
      "d, other = sys.argv[1], sys.argv[2]\n"
      "ct.load(d)\n"
      "print(\"loaded untouched\")\n"
      "keep = open(d + \"/script_cell.pt\", \"rb\").read()\n"
      "shutil.copyfile(other, d + \"/script_cell.pt\")\n"
      "for f in (ct.load, ct.check):\n"
      "    try:\n"
      "        f(d)\n"
      "        print(\"NOT REFUSED\")\n"
      "    except ct.ScriptMismatchError as e:\n"
      "        print(\"refused:\", e)\n"
      "os.remove(d + \"/script_cell.pt\")\n"
      "try:\n"
      "    ct.load(d)\n"
      "    print(\"NOT REFUSED\")\n"
      "except FileNotFoundError as e:\n"
      "    print(\"missing:\", e)\n"
      "open(d + \"/script_cell.pt\", \"wb\").write(keep)\n"
      "ct.load(d)\n"
      "print(\"loaded restored\")\n";
  int rc = 0;
  const std::string res = python(code, {d, other}, &rc);
  std::cout << res;
  ASSERT_EQ(rc, 0) << res;
  ASSERT_FALSE(cstest::contains(res, "NOT REFUSED")) << res;
  ASSERT_EQ(cstest::count(res, "refused: "), 2) << res;
  ASSERT_TRUE(cstest::contains(res, "loaded untouched") && cstest::contains(res, "loaded restored")) << res;
  ASSERT_TRUE(cstest::contains(res, d + "/script_cell.pt") && cstest::contains(res, "SHA-256") &&
              cstest::contains(res, recorded) && cstest::contains(res, cs::file_sha256(other)))
      << res;
  ASSERT_TRUE(cstest::contains(res, "missing:") && cstest::contains(res, "has no script_cell.pt")) << res;
  // the run's own copy changed: export refuses before writing anything
  const std::string run = cstest::temp_dir() + "/run_" + vs[0].name, copy = run + "/script_cell.pt";
  const std::string keep = cstest::read_text(copy);
  cstest::write_text(copy, cstest::read_text(other));
  const std::string out = cstest::temp_dir() + "/exp_script_refused";
  std::string o, err;
  const int erc = cstest::run_cli({"export", run, "--out", out}, &o, &err);
  cstest::write_text(copy, keep);
  ASSERT_EQ(erc, 2) << err;
  ASSERT_TRUE(cstest::contains(err, copy) && cstest::contains(err, "was trained with") &&
              cstest::contains(err, recorded))
      << err;
  ASSERT_FALSE(fs::exists(out));
  ASSERT_FALSE(fs::exists(out + ".tmp"));
  ASSERT_EQ(cstest::run_cli({"export", run, "--out", out}, &o, &err), 0) << err;  // restored: exports again
  // the original script (model.script) gone: the export loads and writes the run's copy, checked by its hash;
  // a changed copy is then refused too
  const std::string original = vs[0].model.at("script").get<std::string>();
  fs::rename(original, original + ".away");
  const std::string out2 = cstest::temp_dir() + "/exp_script_copy";
  const int rc2 = cstest::run_cli({"export", run, "--out", out2}, &o, &err);
  cstest::write_text(copy, cstest::read_text(other));
  const std::string out3 = cstest::temp_dir() + "/exp_script_copy_changed";
  std::string o3, err3;
  const int rc3 = cstest::run_cli({"export", run, "--out", out3}, &o3, &err3);
  cstest::write_text(copy, keep);
  fs::rename(original + ".away", original);
  ASSERT_EQ(rc2, 0) << err;
  ASSERT_TRUE(cstest::contains(o, "is gone") && cstest::contains(o, copy)) << o;
  ASSERT_EQ(cs::file_sha256(out2 + "/script_cell.pt"), recorded);
  ASSERT_EQ(cstest::json_object(cstest::read_text(out2 + "/config.json"))["model"].value("script", std::string()),
            original);  // config.json stays the run's own
  ASSERT_EQ(rc3, 2) << err3;
  ASSERT_TRUE(cstest::contains(err3, "is not the script this run was trained with") && cstest::contains(err3, recorded))
      << err3;
  ASSERT_FALSE(fs::exists(out3));
}

}  // namespace test_export_torch
