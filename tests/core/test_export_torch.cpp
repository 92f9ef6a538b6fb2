// `cellscope-cli export RUN_DIR --out DIR` and the cellscope_torch Python package (packaging/python):
// tiny runs of every cell (char_lm, and word_lm for a selection) trained a few steps, exported, rebuilt by
// Debian's python3-torch (/usr/bin/python3) from config.json + model.pt, and run on the export's reference
// batch: the logits must agree with Cellscope's to 1e-5 and the loss to 1e-6; every rebuilt model must compile with
// torch.jit.script, its scripted form give the eager logits to 1e-6 and survive torch.jit.save + torch.jit.load
// (kNotScriptable lists the exceptions: none). Also the refusals of export, and TorchScript-cell runs
// (model.cell = script: the export carries the script, checked by its SHA-256). model.pt and reference.pt load with
// torch.load(weights_only=True) (PyTorch 2.6's default), model.safetensors holds the same tensors (parsed by hand,
// and by the safetensors package where Python has it), and the writer of both (util/state_dict_file.h) is checked
// over every dtype it writes; where onnxruntime imports, the ONNX files run and give Cellscope's logits.

#include <gtest/gtest.h>

#include <sys/wait.h>

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
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cloze_fixture.h"
#include "corpus_fixture.h"
#include "cells/registry.h"
#include "config/schema.h"
#include "export/torch_schema.h"
#include "harness.h"
#include "tasks/task.h"
#include "train/trainer.h"
#include "util/sha256.h"
#include "util/state_dict_file.h"

namespace test_export_torch {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char* kPython = "/usr/bin/python3";

// stdout of a shell command (stderr appended), and its exit status.
int shell(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
}

bool python_has_torch() {
  std::string out;
  return shell(std::string(kPython) + " -c 'import torch'", &out) == 0;
}

// Python code run with PYTHONPATH at packaging/python; the dirs follow as arguments.
std::string python(const std::string& code, const std::vector<std::string>& args, int* rc) {
  std::string cmd = "PYTHONPATH='" + cstest::source_dir() +
                    "/packaging/python' PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1 " + kPython + " -c '" + code + "'";
  for (auto& a : args) cmd += " '" + a + "'";
  std::string out;
  *rc = shell(cmd, &out);
  return out;
}

// torch.jit.script of a loaded model into r: the scripted model's logits on the reference batch against the eager
// model's (three calls, so that the profiling executor's optimised plan runs too), and torch.jit.save +
// torch.jit.load of it (its logits again, and check() of the loaded file against Cellscope's). Shared by the two
// Python checks below, defined before their imports (it reads ct, portable and torch when it runs).
const char* kScriptChecks =
    "def script_checks(model, d, args, r):\n"
    "    sm, why = portable.script(model)\n"
    "    r[\"script\"] = why or \"ok\"\n"
    "    if sm is None:\n"
    "        return\n"
    "    with torch.no_grad():\n"
    "        eager = ct.logits_of(model(*args))\n"
    "        r[\"script_diff\"] = max((ct.logits_of(sm(*args)) - eager).abs().max().item() for _ in range(3))\n"
    "    torch.jit.save(sm, d + \"/scripted.pt\")\n"
    "    sl = torch.jit.load(d + \"/scripted.pt\")\n"
    "    with torch.no_grad():\n"
    "        r[\"saved_diff\"] = max((ct.logits_of(sl(*args)) - eager).abs().max().item() for _ in range(3))\n"
    "    r[\"saved_check_max_abs\"] = ct.check(d, sl)[\"max_abs\"]\n";

// The tensor files of an export in Python, defined before the imports of the code that uses them (they read torch
// when they run): read_safetensors parses a safetensors file by hand (no safetensors package: Debian 12 has none),
// so that its check never passes for want of a reader; facts_problems compares a loaded dict with the facts the C++
// side wrote (tensor_facts below: names in order, dtype, shape, SHA-256 of the bytes); pickle_globals lists the
// globals of a torch.save file's pickle.
const char* kStateFileChecks =
    "ST_DTYPES = {\"F16\": \"float16\", \"BF16\": \"bfloat16\", \"F32\": \"float32\", \"F64\": \"float64\",\n"
    "             \"I8\": \"int8\", \"I16\": \"int16\", \"I32\": \"int32\", \"I64\": \"int64\", \"U8\": \"uint8\",\n"
    "             \"BOOL\": \"bool\"}\n"
    "def read_safetensors(path):\n"
    "    import struct, json as js\n"
    "    b = open(path, \"rb\").read()\n"
    "    (n,) = struct.unpack(\"<Q\", b[:8])\n"
    "    assert n % 8 == 0 and b[8:9] == b\"{\", (path, n, b[8:9])\n"
    "    h = js.loads(b[8:8 + n].decode(\"utf-8\"))\n"
    "    data = b[8 + n:]\n"
    "    assert h.pop(\"__metadata__\") == {\"format\": \"pt\"}, path\n"
    "    out, end = {}, 0\n"
    "    for k, e in h.items():\n"
    "        a, z = e[\"data_offsets\"]\n"
    "        assert a == end and z >= a, (path, k, e, end)\n"
    "        end = z\n"
    "        dt = getattr(torch, ST_DTYPES[e[\"dtype\"]])\n"
    "        numel = 1\n"
    "        for s in e[\"shape\"]:\n"
    "            numel *= s\n"
    "        assert z - a == numel * torch.empty(0, dtype=dt).element_size(), (path, k, e)\n"
    "        t = torch.frombuffer(bytearray(data[a:z]), dtype=dt) if z > a else torch.empty(0, dtype=dt)\n"
    "        out[k] = t.reshape(e[\"shape\"])\n"
    "    assert end == len(data), (path, end, len(data))\n"
    "    return out\n"
    "def raw_bytes(t):\n"
    "    t = t.detach().contiguous()\n"
    "    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()\n"
    "def facts_problems(sd, facts, what, ordered=True):\n"
    "    import hashlib\n"
    "    names = [f[\"name\"] for f in facts]\n"
    "    if not isinstance(sd, dict):\n"
    "        return [what + \": not a dict but \" + type(sd).__name__]\n"
    "    p = []\n"
    "    if (list(sd) if ordered else sorted(sd)) != (names if ordered else sorted(names)):\n"
    "        p.append(\"%s: names %s, want %s\" % (what, list(sd), names))\n"
    "    for f in facts:\n"
    "        t = sd.get(f[\"name\"])\n"
    "        if t is None:\n"
    "            continue\n"
    "        got = {\"dtype\": str(t.dtype), \"shape\": list(t.shape),\n"
    "               \"sha256\": hashlib.sha256(raw_bytes(t)).hexdigest(), \"requires_grad\": t.requires_grad}\n"
    "        want = {\"dtype\": f[\"dtype\"], \"shape\": f[\"shape\"], \"sha256\": f[\"sha256\"],\n"
    "                \"requires_grad\": False}\n"
    "        if got != want:\n"
    "            p.append(\"%s: %s is %s, want %s\" % (what, f[\"name\"], got, want))\n"
    "    return p\n"
    "def pickle_globals(path):\n"
    "    import zipfile, pickletools\n"
    "    z = zipfile.ZipFile(path)\n"
    "    pkl = [n for n in z.namelist() if n.endswith(\"/data.pkl\")]\n"
    "    assert len(pkl) == 1, z.namelist()\n"
    "    return sorted({a for op, a, _ in pickletools.genops(z.read(pkl[0])) if op.name == \"GLOBAL\"})\n";

// onnxruntime where Python has it: ort_version() (None without it), ort_diff(path, inputs, logits) the largest
// |difference| between the ONNX file's logits on `inputs` (x, and lengths for a sentence task) and `logits`
// (None without onnxruntime). The file's inputs are fed by name (torch.onnx may leave out one the graph ignores).
const char* kOnnxRuntime =
    "def ort_version():\n"
    "    try:\n"
    "        import onnxruntime\n"
    "        return onnxruntime.__version__\n"
    "    except ImportError:\n"
    "        return None\n"
    "def ort_diff(path, inputs, logits):\n"
    "    if ort_version() is None:\n"
    "        return None\n"
    "    import onnxruntime\n"
    "    sess = onnxruntime.InferenceSession(path, providers=[\"CPUExecutionProvider\"])\n"
    "    feed = dict(zip([\"x\", \"lengths\"], [t.numpy() for t in inputs]))\n"
    "    out = sess.run(None, {i.name: feed[i.name] for i in sess.get_inputs()})[0]\n"
    "    return (torch.from_numpy(out).to(logits.dtype) - logits).abs().max().item()\n";

// The JSON lines of a Python check's output. Debian 13's onnxruntime, imported into a process where torch.onnx has
// loaded ONNX's operator schemas, prints a "Schema error: ... already registered" line per operator to stderr
// (harmless: both register the same schemas), which python() captures with the rest.
std::vector<std::string> json_lines(const std::string& out) {
  std::vector<std::string> r;
  for (auto& l : cstest::split(out, '\n', true))
    if (!l.empty() && l[0] == '{') r.push_back(l);
  return r;
}

// The first line of a check that ran kOnnxRuntime ({"onnxruntime": version or null}), printed; whether it ran.
bool report_onnxruntime(const std::string& line) {
  const json j = cstest::json_object(line);
  EXPECT_TRUE(j.contains("onnxruntime")) << line;
  const bool ort = j.contains("onnxruntime") && j["onnxruntime"].is_string();
  if (ort)
    std::cout << "onnxruntime " << j["onnxruntime"].get<std::string>()
              << " available: the ONNX files run and are compared with Cellscope's reference logits\n";
  else
    std::cout << "onnxruntime NOT available (Debian 12 has no python3-onnxruntime): the ONNX files are checked with "
                 "onnx.checker and their declared shapes only, not run\n";
  return ort;
}

// Per export directory: model.pt and reference.pt by torch.load(weights_only=True) and model.safetensors parsed by
// hand, the same tensors as model.pt; check() on the reference batch, then script_checks. One JSON line per directory.
const std::string kCheckAll =
    std::string(kScriptChecks) + kStateFileChecks +
    "import sys, json, torch, warnings, cellscope_torch as ct\n"
    "from cellscope_torch import portable\n"
    "warnings.filterwarnings(\"ignore\")\n"
    "for d in sys.argv[1:]:\n"
    "    model = None\n"
    "    try:\n"
    "        sd = torch.load(d + \"/model.pt\", weights_only=True)\n"
    "        ref = torch.load(d + \"/reference.pt\", weights_only=True)\n"
    "        st = read_safetensors(d + \"/model.safetensors\")\n"
    "        same = list(st) == list(sd) and all(st[k].dtype == sd[k].dtype and torch.equal(st[k], sd[k])\n"
    "                                            for k in sd)\n"
    "        model, info = ct.load(d)\n"
    "        r = ct.check(d, model)\n"
    "        r[\"safetensors_same\"] = same\n"
    "        r[\"reference_keys\"] = list(ref)\n"
    "        lens = [ref[k] for k in (\"lengths\", \"doc_len\", \"src_len\") if k in ref]\n"
    "        r[\"distinct_lengths\"] = len(set(lens[0].tolist())) if lens else 0\n"
    "    except Exception as e:\n"
    "        r = {\"error\": type(e).__name__ + \": \" + str(e)}\n"
    "    r[\"dir\"] = d\n"
    "    if model is not None:\n"
    "        script_checks(model, d, ct.reference_inputs(info[\"task\"], ref), r)\n"
    "    print(json.dumps(r))\n";

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

// The runs whose model torch.jit.script (PyTorch 1.13) cannot compile, by variant name, with the reason
// (documented in packaging/python/cellscope_torch/README.md, "TorchScript and ONNX"). Empty: every built-in cell
// and every task scripts. A run outside this list that fails to script fails the test, and so does a listed
// run that scripts (take it off the list).
const std::map<std::string, std::string> kNotScriptable = {};

// The scripting figures of one check line: script ok and the scripted / saved-and-loaded model's logits equal
// the eager model's to 1e-6 (or, for a listed run, scripting fails).
void expect_scripts(const std::string& name, const json& r) {
  const std::string script = r.value("script", std::string("(no script result)"));
  if (auto it = kNotScriptable.find(name); it != kNotScriptable.end()) {
    EXPECT_NE(script, "ok") << name << " is listed as not scriptable (" << it->second
                            << ") but torch.jit.script compiles it: take it off kNotScriptable";
    return;
  }
  ASSERT_EQ(script, "ok") << name << ": torch.jit.script failed: " << script;
  ASSERT_LE(r.value("script_diff", 1.0), 1e-6) << name << ": scripted vs eager logits";
  ASSERT_LE(r.value("saved_diff", 1.0), 1e-6) << name << ": torch.jit.save + torch.jit.load vs eager logits";
  ASSERT_LE(r.value("saved_check_max_abs", 1.0), 1e-5) << name << ": the loaded scripted model vs Cellscope";
}

struct Variant {
  std::string name, task;
  json model;
};

// A JSON-lines classification set of n sentences with `classes` labels (the label is a keyword in the text).
std::string write_classify_fixture(const std::string& name, int n, int classes) {
  static const char* words[] = {"great", "awful", "plain", "odd"};
  std::string s;
  for (int i = 0; i < n; ++i) {
    const int c = (i * 7 + i / 3) % classes;
    s += json{{"text", std::string("the film was ") + words[c] + " and long " + std::to_string(i % 5) +
                           (i % 4 == 0 ? " very very long indeed" : "")},
              {"label", std::string("c") + std::to_string(c)}}
             .dump() +
         "\n";
  }
  const std::string path = cstest::temp_dir() + "/" + name;
  cstest::write_text(path, s);
  return path;
}

// A SemEval-2014 directory (restaurants): sentences of three lengths with one or two aspect terms and their
// polarities.
std::string write_absa_fixture(const std::string& name) {
  static const char* pol[] = {"positive", "negative", "neutral"};
  static const char* asp[] = {"food", "service", "wine list", "staff"};
  auto xml = [&](int n, int seed) {
    std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sentences>\n";
    for (int i = 0; i < n; ++i) {
      const int a = (i + seed) % 4, b = (i * 3 + seed) % 4, p = (i * 5 + seed) % 3;
      s += "<sentence id=\"" + std::to_string(i) + "\"><text>The " + asp[a] + " was " +
           (p == 0   ? "good"
            : p == 1 ? "bad"
                     : "there") +
           " and the " + asp[b] + " too" +
           (i % 3 == 1   ? " indeed"
            : i % 3 == 2 ? " this time, we thought"
                         : "") +
           ".</text><aspectTerms>" + "<aspectTerm term=\"" + asp[a] + "\" polarity=\"" + pol[p] +
           "\" from=\"0\" to=\"1\"/>" +
           (i % 3 == 0 ? "<aspectTerm term=\"" + std::string(asp[b]) + "\" polarity=\"" + pol[(p + 1) % 3] +
                             "\" from=\"0\" to=\"1\"/>"
                       : std::string()) +
           "</aspectTerms></sentence>\n";
    }
    return s + "</sentences>\n";
  };
  const std::string dir = cstest::temp_dir() + "/" + name;
  cstest::write_text(dir + "/Restaurants_Train_v2.xml", xml(60, 0));
  cstest::write_text(dir + "/Restaurants_Test_Gold.xml", xml(20, 1));
  return dir;
}

// Every cell on char_lm (with options that change the forward), and word_lm's own pieces.
std::vector<Variant> variants() {
  const json mzu = {{"zones", 2}, {"filter", 8}, {"depth", 1}};
  auto with = [](json a, const json& b) {
    a.update(b);
    return a;
  };
  return {
      {"rnn", "char_lm", {{"cell", "rnn"}}},
      {"gru", "char_lm", {{"cell", "gru"}}},
      {"lstm", "char_lm", {{"cell", "lstm"}}},
      {"gru_ln_2layers", "char_lm", {{"cell", "gru"}, {"layer_norm", true}, {"layers", 2}, {"dropout", 0.2}}},
      {"gru_2layers", "char_lm", {{"cell", "gru"}, {"layers", 2}, {"dropout", 0.2}}},
      {"lstm_ln_cdrop", "char_lm", {{"cell", "lstm"}, {"layer_norm", true}, {"candidate_dropout", 0.1}}},
      {"rnn_ln", "char_lm", {{"cell", "rnn"}, {"layer_norm", true}}},
      {"gru_dt", "char_lm", {{"cell", "gru_dt"}}},
      {"gru_dt_unshared_ln",
       "char_lm",
       {{"cell", "gru_dt"}, {"depth", 2}, {"share_transition", false}, {"layer_norm", true}}},
      {"sat_mzu", "char_lm", with(mzu, {{"cell", "sat_mzu"}})},
      {"sat_mzu_per_zone_lnzones_reggate", "char_lm",
       with(mzu, {{"cell", "sat_mzu"},
                  {"sat_qkv", "per_zone"},
                  {"ln_position", "zones"},
                  {"regular_gate", true},
                  {"share_transition", false},
                  {"ffn_residual", true}})},
      {"gcn_mzu", "char_lm", with(mzu, {{"cell", "gcn_mzu"}})},
      {"gcn_mzu_cosine_tanh", "char_lm",
       with(mzu, {{"cell", "gcn_mzu"},
                  {"gcn_adjacency", "cosine"},
                  {"gcn_edges", "relu_cosine"},
                  {"gcn_activation", "tanh"},
                  {"layer_norm", false},
                  {"depth", 0}})},
      {"cap_mzu", "char_lm", with(mzu, {{"cell", "cap_mzu"}})},
      {"cap_mzu_regtrans_unshared", "char_lm",
       with(mzu, {{"cell", "cap_mzu"},
                  {"regular_trans", true},
                  {"share_transition", false},
                  {"capsules", 4},
                  {"routing_iters", 2},
                  {"depth", 2}})},
      {"mcrnn", "char_lm", {{"cell", "mcrnn"}, {"block", 3}}},
      {"mcrnn_gru_block4", "char_lm", {{"cell", "mcrnn"}, {"base", "gru"}, {"block", 4}, {"attention", 5}}},
      {"mcrnn_lstm_average", "char_lm", {{"cell", "mcrnn"}, {"lstm_memory", "average"}, {"block", 3}}},
      // an MZU base runs at the MZU's defaults (Cellscope refuses the base's own options under cell mcrnn)
      {"mcrnn_sat_mzu", "char_lm", {{"cell", "mcrnn"}, {"base", "sat_mzu"}, {"block", 3}}},
      {"cru_shallow", "char_lm", {{"cell", "cru_shallow"}, {"conv_window", "causal"}}},
      {"cru_shallow_resetbefore",
       "char_lm",
       {{"cell", "cru_shallow"}, {"conv_window", "causal"}, {"reset_after", false}, {"conv_channels", 5}}},
      {"cru_deep", "char_lm", {{"cell", "cru_deep"}, {"conv_window", "causal"}}},
      {"cru_deep_enhanced",
       "char_lm",
       {{"cell", "cru_deep_enhanced"}, {"conv_window", "causal"}, {"conv_activation", "tanh"}, {"filter_length", 2}}},
      {"word_lstm_tied",
       "word_lm",
       {{"cell", "lstm"},
        {"layers", 2},
        {"tie_weights", true},
        {"weight_drop", 0.3},
        {"dropoute", 0.1},
        {"dropouti", 0.2},
        {"dropouth", 0.2}}},
      {"word_gru_dt", "word_lm", {{"cell", "gru_dt"}}},
      {"word_gru_untied", "word_lm", {{"cell", "gru"}, {"layers", 2}, {"weight_drop", 0.2}, {"dropouti", 0.1}}},
      {"word_gcn_mzu", "word_lm", with(mzu, {{"cell", "gcn_mzu"}})},
      {"word_mcrnn", "word_lm", {{"cell", "mcrnn"}, {"block", 3}, {"weight_drop", 0.2}}},
      {"word_cru_deep_enhanced", "word_lm", {{"cell", "cru_deep_enhanced"}, {"conv_window", "causal"}}},
      {"word_mcrnn_gcn_mzu", "word_lm", {{"cell", "mcrnn"}, {"base", "gcn_mzu"}, {"block", 4}}},
      {"classify2_gru", "classify", {{"cell", "gru"}, {"fc", 6}}},
      {"classify3_cru_2layers", "classify", {{"cell", "cru_deep"}, {"layers", 2}, {"fc", 0}, {"dropout", 0.3}}},
      {"classify3_sat_mzu_tanh", "classify", with(mzu, {{"cell", "sat_mzu"}, {"fc", 5}, {"fc_activation", "tanh"}})},
      {"classify2_mcrnn", "classify", {{"cell", "mcrnn"}, {"block", 3}, {"fc", 4}, {"fc_activation", "none"}}},
      // the padding mask reaches the MZU base step by step (its eq. 19 term): trains and agrees in a sentence task
      {"classify_mcrnn_cap_mzu", "classify", {{"cell", "mcrnn"}, {"base", "cap_mzu"}, {"block", 3}}},
      {"absa_gru_dt", "absa", {{"cell", "gru_dt"}}},
      {"absa_cap_mzu_fc", "absa", with(mzu, {{"cell", "cap_mzu"}, {"fc", 5}})},
      {"cloze_m_aoa_gru", "cloze", {{"cell", "gru"}, {"reader", "m_aoa"}}},
      {"cloze_aoa_cru_deep", "cloze", {{"cell", "cru_deep"}, {"reader", "aoa"}, {"layers", 2}}},
      {"seq2seq_gru_copy", "seq2seq", {{"cell", "gru"}, {"copy", true}}},
      {"seq2seq_mcrnn_2layers", "seq2seq", {{"cell", "mcrnn"}, {"block", 3}, {"layers", 2}}},
      // model.architecture rnnsearch (Bahdanau): bidirectional encoder, bridge, additive attention, context in the
      // decoder's input, maxout; the 2-layer MC-RNN over LSTM as the paper's models, and a GRU with copying
      {"seq2seq_rnnsearch_mcrnn_2layers",
       "seq2seq",
       {{"architecture", "rnnsearch"}, {"cell", "mcrnn"}, {"block", 3}, {"base", "lstm"}, {"layers", 2}}},
      {"seq2seq_rnnsearch_gru_copy", "seq2seq", {{"architecture", "rnnsearch"}, {"cell", "gru"}, {"copy", true}}},
  };
}

// A parallel corpus (train/valid/test .de and .en): word sequences over "a".."h" and the same reversed.
std::string write_seq2seq_fixture(const std::string& name) {
  const std::string dir = cstest::temp_dir() + "/" + name;
  unsigned r = 3;
  auto next = [&] { return r = r * 1103515245u + 12345u, (r >> 16) & 0x7fff; };
  for (auto [split, n] : {std::pair<const char*, int>{"train", 120}, {"valid", 12}, {"test", 12}}) {
    std::string src, tgt;
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> w(3 + next() % 4);
      for (auto& x : w) x = std::string(1, static_cast<char>('a' + next() % 8));
      for (size_t j = 0; j < w.size(); ++j) {
        src += (j ? " " : "") + w[j];
        tgt += (j ? " " : "") + w[w.size() - 1 - j];
      }
      src += "\n";
      tgt += "\n";
    }
    cstest::write_text(dir + "/" + split + ".de", src);
    cstest::write_text(dir + "/" + split + ".en", tgt);
  }
  return dir;
}

// Trains a tiny run of `v` (2 steps, no evaluation: the export falls back to checkpoints/last.pt) into dir; returns the
// CLI's exit status.
int train_tiny(const Variant& v, const std::string& text, const std::string& dir, std::string* err) {
  json m = {{"embed", 6}, {"hidden", 8}};
  m.update(v.model);
  json ds = {{"path", text}};
  if (v.task == "classify")
    ds = {{"path", write_classify_fixture(v.name + ".jsonl", 90, v.name.rfind("classify2", 0) == 0 ? 2 : 3)}};
  if (v.task == "absa") ds = {{"path", write_absa_fixture(v.name)}, {"format", "semeval2014_xml"}};
  if (v.task == "cloze") ds = {{"path", clozefix::write_cbt_dir(cstest::temp_dir() + "/" + v.name, 40, 12, 12)}};
  if (v.task == "seq2seq")
    ds = {{"path", write_seq2seq_fixture(v.name)},
          {"format", "parallel"},
          {"subword", "bpe"},
          {"source_vocab_size", 20},
          {"target_vocab_size", 20},
          {"shared_vocab", v.model.value("copy", false)},
          {"max_source_len", 16},
          {"max_target_len", 16}};
  json cfg = {{"task", v.task},
              {"dataset", ds},
              {"model", m},
              {"training", {{"batch", 4}, {"steps", 2}, {"eval_every", 0}, {"threads", 1}, {"eval_test", false}}}};
  if (v.task == "char_lm" || v.task == "word_lm") cfg["training"]["bptt"] = 12;
  if (v.task == "seq2seq") cfg["training"]["eval_decode"] = 2;
  cfg["training"]["eval_batch"] = v.task == "char_lm" ? 3 : v.task == "word_lm" ? 2 : 6;
  const std::string path = cstest::temp_dir() + "/" + v.name + ".json";
  cstest::write_text(path, cfg.dump());
  std::string out;
  return cstest::run_cli({"train", path, "--run-dir", dir}, &out, err);
}

// The export of variant `v` (trained and exported once per test process, shared by the tests of this file);
// "" (and a gtest failure) when training or export fails.
std::string exported(const Variant& v) {
  static std::map<std::string, std::string> done;
  if (auto it = done.find(v.name); it != done.end()) return it->second;
  const std::string text = cstest::write_text_fixture("export_torch.txt", 5000);
  const std::string run = cstest::temp_dir() + "/run_" + v.name, out = cstest::temp_dir() + "/exp_" + v.name;
  std::string err, o;
  const int rc = train_tiny(v, text, run, &err);
  EXPECT_EQ(rc, 0) << v.name << ": " << err;
  if (rc != 0) return "";
  const int rc2 = cstest::run_cli({"export", run, "--out", out}, &o, &err);
  EXPECT_EQ(rc2, 0) << v.name << ": " << err;
  if (rc2 != 0) return "";
  return done[v.name] = out;
}

const Variant& variant(const std::string& name) {
  static const std::vector<Variant> vs = variants();
  for (auto& v : vs)
    if (v.name == name) return v;
  throw std::runtime_error("no variant " + name);
}

// The scripted GRU of resources/cells/gru_equations.py with input_size `input` and hidden 8, saved by
// /usr/bin/python3 into the scratch directory (as tests/core/test_script_cell.cpp does); "" and a gtest failure
// when Python fails.
std::string script_gru(int input) {
  const std::string path = cstest::temp_dir() + "/script_gru_in" + std::to_string(input) + ".pt";
  if (fs::exists(path)) return path;
  std::string out;
  const int rc = shell(std::string("PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1 ") + kPython + " '" +
                           cstest::source_dir() + "/resources/cells/gru_equations.py' '" + path + "' --input-size " +
                           std::to_string(input) + " --hidden 8",
                       &out);
  EXPECT_EQ(rc, 0) << out;
  return rc == 0 ? path : "";
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

// Every variant of one group (seq2seq or not) trained, exported and rebuilt by python3-torch: logits to 1e-5,
// loss to 1e-6, the figures printed.
void agrees_with_pytorch(bool seq2seq) {
  std::vector<std::string> dirs;
  std::vector<Variant> vs;
  for (const auto& v : variants())
    if ((v.task == "seq2seq") == seq2seq) vs.push_back(v);
  for (const auto& v : vs) {
    const std::string out = exported(v);
    ASSERT_FALSE(out.empty()) << v.name;
    for (auto f : {"model.pt", "model.safetensors", "config.json", "vocab.cellscope", "reference.pt", "export.json"})
      ASSERT_TRUE(fs::exists(out + "/" + f)) << v.name << " " << f;
    ASSERT_FALSE(fs::exists(out + ".tmp")) << v.name;
    if (v.task == "seq2seq") {  // the SentencePiece models out of the run's vocabulary, as protobuf files
      for (auto f : {"/source.model", "/target.model"}) {
        const std::string b = cstest::read_text(out + f);
        ASSERT_TRUE(b.size() > 1000 && b[0] == 0x0a) << v.name << f;
      }
    } else {
      ASSERT_TRUE(fs::exists(out + "/vocab.json")) << v.name;
    }
    if (v.task == "classify" || v.task == "absa") {
      const json labels = json::parse(cstest::read_text(out + "/labels.json"), nullptr, false);
      ASSERT_TRUE(labels.is_array() && labels.size() >= 2) << v.name;
    }
    dirs.push_back(out);
  }
  int rc = 0;
  const std::string res = python(kCheckAll, dirs, &rc);
  ASSERT_EQ(rc, 0) << res;
  const auto lines = cstest::split(res, '\n', true);
  ASSERT_EQ(lines.size(), vs.size()) << res;
  // the agreement with Cellscope, then torch.jit.script: the scripted model and its saved-and-loaded form against
  // the eager model (|d script|, |d saved|)
  std::cout << "variant                                  task      max|dlogit|   max rel     |dloss|  script  "
               "|d script|   |d saved|\n";
  for (size_t i = 0; i < vs.size(); ++i) {
    const json r = cstest::json_object(lines[i]);
    ASSERT_FALSE(r.contains("error")) << vs[i].name << ": " << r.value("error", std::string());
    ASSERT_EQ(r.value("dir", std::string()), dirs[i]);
    ASSERT_TRUE(r.value("safetensors_same", false)) << vs[i].name << ": model.safetensors is not model.pt";
    const json rk = r.value("reference_keys", json::array());  // reference.pt by torch.load(weights_only=True)
    for (auto k : {"y", "logits", "loss"})
      ASSERT_NE(std::find(rk.begin(), rk.end(), k), rk.end()) << vs[i].name << ": " << rk.dump();
    const double da = r.value("max_abs", 1.0), dr = r.value("max_rel", 1.0), dl = r.value("loss_diff", 1.0);
    char line[512];
    std::snprintf(line, sizeof line, "%-40s %-8s %10.2e %10.2e %10.2e  %-6s %10.2e %10.2e\n", vs[i].name.c_str(),
                  vs[i].task.c_str(), da, dr, dl, r.value("script", std::string("?")) == "ok" ? "ok" : "NO",
                  r.value("script_diff", -1.0), r.value("saved_diff", -1.0));
    std::cout << line;
    if (r.value("script", std::string()) != "ok")
      std::cout << "  torch.jit.script: " << r.value("script", std::string()) << "\n";
    expect_scripts(vs[i].name, r);
    ASSERT_LE(da, 1e-5) << vs[i].name;
    ASSERT_LE(dl, 1e-6) << vs[i].name;
    ASSERT_GT(r.value("cellscope_loss", 0.0), 0.5) << vs[i].name;  // a real loss, not an empty batch
    // The reference batch of a padded task spans lengths (check() runs padding), not the split's first examples
    // of one length.
    if (vs[i].task != "char_lm" && vs[i].task != "word_lm") {
      EXPECT_GE(r.value("distinct_lengths", 0), 2) << vs[i].name << ": the reference batch has one length";
    }
    const auto shape = r.value("shape", json::array());
    const bool seq = vs[i].task == "char_lm" || vs[i].task == "word_lm" || vs[i].task == "seq2seq";
    ASSERT_EQ(shape.size(), seq ? 3u : 2u) << vs[i].name;
    if (vs[i].task == "cloze") {
      ASSERT_EQ(shape[1], 10) << vs[i].name;  // P(candidate) of the 10 candidates of a CBT question
    }
  }
}

TEST(ExportTorch, everyCellAndTaskAgreesWithPyTorch) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  agrees_with_pytorch(false);
}

// cellscope_torch.to_torch_nn: an rnn, gru or lstm run is torch.nn.RNN / GRU / LSTM with its tensors renamed
// (packaging/python/cellscope_torch/torch_nn.py). The module's logits on the reference batch are Cellscope's to
// 1e-5 and the rebuilt model's, its final state is the model's (converted by state_to_torch_nn), and a second
// batch from that state agrees too; word_lm's training-only options are listed and warned about; layer_norm, a
// word_lm with tied weights (a last layer of another size) and an MZU are refused by name.
TEST(ExportTorch, gruLstmRnnRunsAreTorchNnModules) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  const std::vector<std::string> names = {
      "rnn", "gru", "lstm", "gru_2layers", "word_gru_untied", "gru_ln_2layers", "word_lstm_tied", "sat_mzu"};
  std::vector<std::string> dirs;
  for (const auto& n : names) {
    dirs.push_back(exported(variant(n)));
    ASSERT_FALSE(dirs.back().empty()) << n;
  }
  const std::string code =
      "import sys, json, torch, warnings\n"
      "import cellscope_torch as ct\n"
      "def mx(a, b):\n"
      "    if isinstance(a, tuple):\n"
      "        return max(mx(x, y) for x, y in zip(a, b))\n"
      "    return (a - b).abs().max().item()\n"
      "for i, d in enumerate(sys.argv[1:]):\n"
      "    model, info = ct.load(d)\n"
      "    ref = torch.load(d + \"/reference.pt\", weights_only=True)\n"
      "    r = {\"cell\": info[\"cell\"]}\n"
      "    try:\n"
      "        with warnings.catch_warnings(record=True) as w:\n"
      "            warnings.simplefilter(\"always\")\n"
      "            lm = ct.to_torch_nn(d if i == 0 else model)\n"
      "        kind = info[\"cell\"]\n"
      "        with torch.no_grad():\n"
      "            logits, st = lm(ref[\"x\"])\n"
      "            ours, ost = model(ref[\"x\"])\n"
      "            l2, _ = lm(ref[\"x\"], st)\n"
      "            o2, _ = model(ref[\"x\"], ct.state_from_torch_nn(st, kind))\n"
      "        r.update({\"module\": type(lm.rnn).__name__, \"layers\": lm.rnn.num_layers, \"warned\": len(w),\n"
      "                  \"differences\": lm.training_differences, \"ref_diff\": mx(logits, ref[\"logits\"]),\n"
      "                  \"model_diff\": mx(logits, ours), \"state_diff\": mx(st, ct.state_to_torch_nn(ost, kind)),\n"
      "                  \"continued_diff\": mx(l2, o2)})\n"
      "    except ValueError as e:\n"
      "        r[\"refused\"] = str(e)\n"
      "    print(json.dumps(r))\n";
  int rc = 0;
  const std::string res = python(code, dirs, &rc);
  ASSERT_EQ(rc, 0) << res;
  const auto lines = json_lines(res);
  ASSERT_EQ(lines.size(), names.size()) << res;
  const std::map<std::string, std::pair<std::string, int>> modules = {{"rnn", {"RNN", 1}},
                                                                      {"gru", {"GRU", 1}},
                                                                      {"lstm", {"LSTM", 1}},
                                                                      {"gru_2layers", {"GRU", 2}},
                                                                      {"word_gru_untied", {"GRU", 2}}};
  const std::map<std::string, std::string> refusals = {{"gru_ln_2layers", "model.layer_norm"},
                                                       {"word_lstm_tied", "tie_weights"},
                                                       {"sat_mzu", "only cells rnn, gru and lstm"}};
  for (size_t i = 0; i < names.size(); ++i) {
    const json r = cstest::json_object(lines[i]);
    const std::string& n = names[i];
    if (auto it = refusals.find(n); it != refusals.end()) {
      ASSERT_TRUE(r.contains("refused")) << n << ": " << lines[i];
      EXPECT_NE(r["refused"].get<std::string>().find(it->second), std::string::npos) << n << ": " << lines[i];
      continue;
    }
    ASSERT_FALSE(r.contains("refused")) << n << ": " << lines[i];
    EXPECT_EQ(r.value("module", std::string()), modules.at(n).first) << n;
    EXPECT_EQ(r.value("layers", 0), modules.at(n).second) << n;
    EXPECT_LE(r.value("ref_diff", 1.0), 1e-5) << n << ": torch.nn's logits vs Cellscope's";
    EXPECT_LE(r.value("model_diff", 1.0), 1e-5) << n << ": torch.nn's logits vs cellscope_torch's model";
    EXPECT_LE(r.value("state_diff", 1.0), 1e-5) << n;
    EXPECT_LE(r.value("continued_diff", 1.0), 1e-5) << n;
    // word_lm's weight_drop and dropouti act in training only: listed and warned about; gru_2layers's dropout
    // between layers is torch.nn's own, but its dropout on the embedding and output is the char LM's
    const bool differs = n == "word_gru_untied" || n == "gru_2layers";
    EXPECT_EQ(r["differences"].empty(), !differs) << n << ": " << lines[i];
    EXPECT_EQ(r.value("warned", -1), differs ? 1 : 0) << n;
  }
}

// Apart from the others: a seq2seq run loads SentencePiece (RTLD_DEEPBIND), which the sanitizer stage cannot
// run (tests/README.md), so that stage leaves out this test only.
TEST(ExportTorch, seq2seqAgreesWithPyTorch) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  agrees_with_pytorch(true);
}

TEST(ExportTorch, torchScriptTraceAndOnnxOfGruLstmAndOneCellPerPaper) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  std::string o;
  if (shell(std::string(kPython) + " -c 'import onnx'", &o) != 0)
    FAIL() << kPython << " has no onnx: install python3-onnx (packaging/setup.sh installs it)";
  // GRU, LSTM, one cell of each paper (MZU, CRU, MC-RNN) and a sentence classifier
  std::vector<Variant> vs;
  std::vector<std::string> dirs;
  for (auto n : {"gru", "lstm", "sat_mzu", "cru_deep", "mcrnn", "classify2_gru"}) {
    vs.push_back(variant(n));
    dirs.push_back(exported(vs.back()));
    ASSERT_FALSE(dirs.back().empty()) << n;
  }
  // The traced TorchScript module gives the eager model's logits on the reference batch; the ONNX file passes
  // onnx.checker with a dynamic batch dimension and the logits' shape, and where onnxruntime imports (Debian 13's
  // python3-onnxruntime; Debian 12 has none) it runs and gives Cellscope's reference logits to 1e-5. The first line
  // says which.
  const std::string code =
      std::string(kOnnxRuntime) +
      "import sys, json, os, torch, warnings\n"
      "warnings.filterwarnings(\"ignore\")\n"
      "import cellscope_torch as ct\n"
      "from cellscope_torch import portable\n"
      "print(json.dumps({\"onnxruntime\": ort_version()}))\n"
      "for d in sys.argv[1:]:\n"
      "    model, info = ct.load(d)\n"
      "    ref = torch.load(d + \"/reference.pt\", weights_only=True)\n"
      "    ex = (ref[\"x\"],) if \"lengths\" not in ref else (ref[\"x\"], ref[\"lengths\"])\n"
      "    eager = portable.LogitsOnly(model)(*ex)\n"
      "    tr = portable.trace(model, *ex)\n"
      "    tdiff = (tr(*ex) - eager).abs().max().item()\n"
      "    o = portable.export_onnx(model, d + \"/model.onnx\", *ex)\n"
      "    s, why = portable.script(model)\n"
      "    print(json.dumps({\"cell\": info[\"cell\"], \"task\": info[\"task\"], \"trace_diff\": tdiff,\n"
      "                      \"onnx\": o, \"onnx_bytes\": os.path.getsize(d + \"/model.onnx\"),\n"
      "                      \"ort_diff\": ort_diff(d + \"/model.onnx\", ex, ref[\"logits\"]),\n"
      "                      \"logits\": list(eager.shape), \"script\": why or \"ok\"}))\n";
  int rc = 0;
  const std::string res = python(code, dirs, &rc);
  ASSERT_EQ(rc, 0) << res;
  const auto lines = json_lines(res);
  ASSERT_EQ(lines.size(), vs.size() + 1) << res;
  const bool ort = report_onnxruntime(lines[0]);
  for (size_t i = 0; i < vs.size(); ++i) {
    const json r = cstest::json_object(lines[i + 1]);
    std::cout << vs[i].name << ": trace max|diff| " << r.value("trace_diff", -1.0) << ", ONNX "
              << r["onnx"].value("nodes", 0) << " nodes, torch.jit.script: " << r.value("script", std::string())
              << ", onnxruntime max|dlogit| vs Cellscope "
              << (ort ? std::to_string(r.value("ort_diff", -1.0)) : std::string("(not run)")) << "\n";
    if (ort) {
      ASSERT_TRUE(r["ort_diff"].is_number()) << vs[i].name << ": " << lines[i + 1];
      ASSERT_LE(r.value("ort_diff", 1.0), 1e-5) << vs[i].name << ": onnxruntime's logits vs Cellscope's";
    }
    ASSERT_LE(r.value("trace_diff", 1.0), 1e-6) << vs[i].name;
    ASSERT_GT(r["onnx"].value("nodes", 0), 3) << vs[i].name;
    ASSERT_GT(r.value("onnx_bytes", 0), 100) << vs[i].name;
    const json logits = r["logits"];
    json want = logits;
    if (vs[i].task == "classify") want[0] = "batch";
    else want[1] = "batch";
    ASSERT_EQ(r["onnx"]["outputs"]["logits"], want) << vs[i].name << " " << lines[i + 1];
  }
}

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

// The tensors of a safetensors file by name.
std::map<std::string, at::Tensor> tensors_of(const std::string& path) {
  std::map<std::string, at::Tensor> m;
  for (auto& [n, t] : cs::read_safetensors(path)) m[n] = t;
  return m;
}

// The way back (#53): an export's weights changed in PyTorch (a char LM's GRU and MZU through the cellscope_torch
// model, an LSTM through torch.nn.LSTM from to_torch_nn) and written back with cellscope_torch.save_export become a
// Cellscope run with `cellscope-cli import`: its weights are Python's bit for bit (exported again), it evaluates to
// what `eval` says, and differs from the run it came from. A file that does not fit (a wrong shape, a missing
// tensor, a NaN), a folder that is no export and an existing run directory are refused naming the problem, with
// no run directory left.
TEST(ExportTorch, importMakesARunOfWeightsChangedInPyTorch) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  const std::vector<std::string> names = {"gru", "lstm", "sat_mzu"};
  std::vector<std::string> dirs;
  for (const auto& n : names) {
    const std::string src = exported(variant(n));
    ASSERT_FALSE(src.empty()) << n;
    const std::string d = cstest::temp_dir() + "/import_" + n;
    fs::copy(src, d, fs::copy_options::recursive);
    dirs.push_back(d);
  }
  const std::string code =
      "import sys, torch\n"
      "import cellscope_torch as ct\n"
      "torch.manual_seed(0)\n"
      "for d in sys.argv[1:]:\n"
      "    model, info = ct.load(d)\n"
      "    if info[\"cell\"] == \"lstm\":\n"
      "        lm = ct.to_torch_nn(model)\n"
      "        with torch.no_grad():\n"
      "            lm.rnn.weight_hh_l0.mul_(0.5)\n"
      "            lm.out.bias.add_(0.25)\n"
      "        ct.save_export(lm, d)\n"
      "    else:\n"
      "        with torch.no_grad():\n"
      "            for p in model.parameters():\n"
      "                p.add_(0.05 * torch.randn_like(p))\n"
      "        ct.save_export(model, d)\n"
      "    print(d)\n";
  int rc = 0;
  const std::string res = python(code, dirs, &rc);
  ASSERT_EQ(rc, 0) << res;
  for (size_t i = 0; i < dirs.size(); ++i) {
    const std::string& d = dirs[i];
    const std::string run = cstest::temp_dir() + "/imported_" + names[i];
    std::string out, err;
    ASSERT_EQ(cstest::run_cli({"import", d, "--run-dir", run, "--label", "tuned " + names[i], "--json"}, &out, &err), 0)
        << names[i] << ": " << err;
    const json r = cstest::json_object(out);
    ASSERT_EQ(r.value("run_dir", ""), run) << out;
    const json cfg = cstest::json_object(cstest::read_text(run + "/config.json"));
    ASSERT_EQ(cfg["imported"].value("weights_sha256", ""), cs::file_sha256(d + "/model.safetensors"));
    ASSERT_EQ(cfg["imported"].value("dir", ""), fs::absolute(d).lexically_normal().string());
    const json sum = cstest::json_object(cstest::read_text(run + "/summary.json"));
    ASSERT_EQ(sum.value("status", ""), "finished");
    ASSERT_TRUE(cstest::contains(sum.value("reason", ""), "imported from")) << sum.dump();
    // eval of the new run: the figure import reported, on its best.pt
    ASSERT_EQ(cstest::run_cli({"eval", run, "--split", "valid", "--json"}, &out, &err), 0) << err;
    const json ev = cstest::json_object(out);
    const std::string metric = r.value("metric", "");
    ASSERT_NEAR(ev.value(metric, -1.0), r.value("valid", -2.0), 1e-6 * std::max(1.0, std::fabs(r.value("valid", 0.0))))
        << out;
    // ... which is not the exported run's (the weights changed)
    const json man = cstest::json_object(cstest::read_text(d + "/export.json"));
    ASSERT_EQ(cstest::run_cli({"eval", man.value("run", ""), "--split", "valid", "--json"}, &out, &err), 0) << err;
    ASSERT_GT(std::fabs(cstest::json_object(out).value(metric, 0.0) - r.value("valid", 0.0)), 1e-4) << out;
    ASSERT_EQ(man["saved"].value("by", ""), "cellscope_torch.save_export");
    // Python's tensors, bit for bit, in the run's checkpoint: export the new run and compare.
    const std::string again = cstest::temp_dir() + "/reexport_" + names[i];
    ASSERT_EQ(cstest::run_cli({"export", run, "--out", again}, &out, &err), 0) << err;
    const auto mine = tensors_of(d + "/model.safetensors"), back = tensors_of(again + "/model.safetensors");
    ASSERT_EQ(mine.size(), back.size());
    for (auto& [n, t] : mine) {
      ASSERT_TRUE(back.count(n)) << n;
      ASSERT_TRUE(t.equal(back.at(n))) << names[i] << ": " << n << " differs after the import";
    }
    ASSERT_EQ(cstest::run_cli({"label", run}, &out, &err), 0);
    ASSERT_EQ(out, "tuned " + names[i] + "\n");
  }
  // What does not fit is named; no run directory is made.
  const std::string d = dirs[0], ws = cstest::temp_dir() + "/import_refused";
  const std::string bad_code =
      "import sys, torch, os\n"
      "import cellscope_torch as ct\n"
      "d, kind = sys.argv[1], sys.argv[2]\n"
      "st = {k: v for k, v in ct.load_tensors(d + \"/model.pt\").items()}\n"
      "k = sorted(st)[0]\n"
      "if kind == \"shape\":\n"
      "    st[k] = torch.zeros(3, 2)\n"
      "elif kind == \"missing\":\n"
      "    del st[k]\n"
      "else:\n"
      "    st[k] = st[k].clone(); st[k].view(-1)[0] = float(\"nan\")\n"
      "open(d + \"/model.safetensors\", \"wb\").write(ct.safetensors_bytes(st))\n"
      "print(k)\n";
  const std::map<std::string, std::string> expected = {
      {"shape", "shape or type differs"}, {"missing", "in the model, not in the file"}, {"nan", "NaN or Inf values"}};
  for (const auto& [kind, words] : expected) {
    const std::string bd = cstest::temp_dir() + "/import_bad_" + kind;
    fs::copy(d, bd, fs::copy_options::recursive);
    const std::string name = python(bad_code, {bd, kind}, &rc);
    ASSERT_EQ(rc, 0) << name;
    std::string out, err;
    ASSERT_EQ(cstest::run_cli({"import", bd, "--workspace", ws}, &out, &err), 2) << kind << ": " << err;
    ASSERT_TRUE(cstest::contains(err, words) && cstest::contains(err, name.substr(0, name.size() - 1)) &&
                cstest::contains(err, "nothing was written"))
        << kind << ": " << err;
    ASSERT_TRUE(!fs::exists(ws) || fs::is_empty(ws)) << kind;
  }
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"import", cstest::temp_dir(), "--workspace", ws}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "is not a Cellscope export (no export.json)")) << err;
  ASSERT_EQ(cstest::run_cli({"import", dirs[1], "--run-dir", cstest::temp_dir() + "/imported_gru"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "already exists")) << err;
  ASSERT_TRUE(!fs::exists(ws) || fs::is_empty(ws));
}

}  // namespace test_export_torch

namespace test_export_torch {

// cellscope_torch.encode / evaluate (#53 item 10, char_lm): the valid split of a run's text, cut as Cellscope's
// loader cuts it (valid_fraction, test_fraction, max_chars of the exported config), scored in Python the way
// `cellscope-cli eval --split valid` scores it: the same bits per character (to 1e-5 relative: the two sides'
// kernels may round differently), the same number of characters. A word-level run is refused by name.
TEST(ExportTorch, evaluateAgreesWithCellscopeEval) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  const std::vector<std::string> names = {"gru", "lstm", "sat_mzu"};
  std::vector<std::string> dirs;
  for (const auto& n : names) {
    dirs.push_back(exported(variant(n)));
    ASSERT_FALSE(dirs.back().empty()) << n;
  }
  dirs.push_back(exported(variant("word_gru_untied")));
  ASSERT_FALSE(dirs.back().empty());
  const std::string code =
      "import sys, json, math\n"
      "import cellscope_torch as ct\n"
      "for d in sys.argv[1:]:\n"
      "    cfg = json.load(open(d + \"/config.json\"))\n"
      "    ds = cfg[\"dataset\"]\n"
      "    try:\n"
      "        t = open(ds[\"path\"], encoding=\"utf-8\").read().replace(\"\\r\\n\", \"\\n\")\n"
      "        if ds.get(\"max_chars\", 0):\n"
      "            t = t[:int(ds[\"max_chars\"])]\n"
      "        n = len(t)\n"
      "        nv, nt = (math.floor(n * ds.get(k, 0.05) + 0.5) for k in (\"valid_fraction\", \"test_fraction\"))\n"
      "        r = ct.evaluate(d, t[n - nv - nt:n - nt])\n"
      "    except NotImplementedError as e:\n"
      "        r = {\"refused\": str(e)}\n"
      "    print(json.dumps(r))\n";
  int rc = 0;
  const std::string res = python(code, dirs, &rc);
  ASSERT_EQ(rc, 0) << res;
  const auto lines = json_lines(res);
  ASSERT_EQ(lines.size(), dirs.size()) << res;
  for (size_t i = 0; i < names.size(); ++i) {
    const json py = cstest::json_object(lines[i]);
    const json man = cstest::json_object(cstest::read_text(dirs[i] + "/export.json"));
    std::string out, err;
    ASSERT_EQ(cstest::run_cli({"eval", man.value("run", ""), "--split", "valid", "--json"}, &out, &err), 0) << err;
    const json ev = cstest::json_object(out);
    ASSERT_EQ(py.value("chars", -1), ev.value("units", -2)) << names[i] << ": " << lines[i] << " vs " << out;
    ASSERT_NEAR(py.value("bpc", 0.0), ev.value("bpc", -1.0), 1e-5 * ev.value("bpc", 1.0))
        << names[i] << ": " << lines[i] << " vs " << out;
  }
  const json word = cstest::json_object(lines.back());
  ASSERT_TRUE(cstest::contains(word.value("refused", ""), "only char_lm")) << lines.back();
}

// #54 item 4: nothing Cellscope adds escapes the Python package unnoticed. Every cell of the cell registry
// (char_lm), every task of the task registry (gru), every value of every model.* enum option (on the first cell
// and task it applies to) and every cell the registry accepts as an MC-RNN's base is trained 2 steps, exported and
// loaded by cellscope_torch in one python3 process: each must load and agree with Cellscope's reference logits
// (1e-5), or be listed in kRefusedInPython with the reason, and then be refused by load() with NotImplementedError.
// The same process compares the package's FORMAT_VERSION with the exporter's and its BARE_DEFAULTS (the bench
// peers' bare sections) with the schema's defaults of every registered cell.
const std::map<std::string, std::string> kRefusedInPython = {};

namespace {

// A tiny model section of `cell` (an MZU needs zones dividing hidden and a small filter; a script cell its file).
json tiny_cell(const std::string& cell) {
  json m = {{"cell", cell}};
  const std::string fam = cs::cell_info(cell).family;
  if (fam == "mzu") m.update({{"zones", 2}, {"filter", 8}});
  if (fam == "mcrnn") m["block"] = 3;
  if (fam == "cru") m["conv_window"] = "causal";
  if (fam == "script") m["script"] = script_gru(6);
  return m;
}

// Whether Cellscope accepts the model section of variant v (its validator, before any training; the dataset is
// train_tiny's).
bool cellscope_accepts(const Variant& v) {
  json m = {{"embed", 6}, {"hidden", 8}};
  m.update(v.model);
  for (const auto& e : cs::validate_config(json{{"task", v.task}, {"model", m}}))
    if (e.path.rfind("model", 0) == 0) return false;
  return true;
}

std::vector<Variant> registry_variants() {
  std::vector<Variant> vs;
  for (const auto& c : cs::cell_registry()) vs.push_back({"reg_cell_" + c.name, "char_lm", tiny_cell(c.name)});
  for (const auto& t : cs::task_registry()) vs.push_back({"reg_task_" + t.name, t.name, {{"cell", "gru"}}});
  for (const auto& c : cs::cell_registry()) {  // every cell Cellscope takes as an MC-RNN's base
    Variant v{"reg_base_" + c.name, "char_lm", {{"cell", "mcrnn"}, {"block", 3}, {"base", c.name}}};
    if (cellscope_accepts(v)) vs.push_back(v);
  }
  // every value of every model.* enum, on the first cell and task that take it (all_options() holds a cell's own
  // option once per cell: specs_for_cell)
  std::set<std::string> found, wanted;
  for (const auto& o : cs::all_options()) {
    if (o.section != "model" || o.type != cs::OptType::Enum || o.key == "cell") continue;
    for (const auto& value : o.choices) {
      const std::string kv = o.key + "=" + value;
      wanted.insert(kv);
      for (const auto& t : cs::task_registry())
        for (const auto& c : cs::cell_registry())
          if (!found.count(kv) && cs::option_applies(o, c.name, t.name)) {
            Variant v{"reg_" + o.key + "_" + value, t.name, tiny_cell(c.name)};
            v.model[o.key] = value;
            if (cellscope_accepts(v)) {
              vs.push_back(v);
              found.insert(kv);
            }
          }
    }
  }
  for (const auto& kv : wanted)
    EXPECT_TRUE(found.count(kv)) << "model." << kv << ": no cell and task of the registries takes it";
  return vs;
}

}  // namespace

TEST(ExportTorch, everyRegisteredCellTaskAndEnumValueLoadsInPythonOrIsRefused) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  const std::vector<Variant> vs = registry_variants();
  std::vector<std::string> dirs;
  for (const auto& v : vs) {
    const std::string out = exported(v);
    ASSERT_FALSE(out.empty()) << v.name;
    const json man = cstest::json_object(cstest::read_text(out + "/export.json"));
    ASSERT_EQ(man.value("format", ""), cs::torch_export_format()) << v.name;
    ASSERT_EQ(man.value("format_version", 0), cs::kTorchExportFormat) << v.name;
    ASSERT_EQ(man["schema"].value("cell", ""), v.model.value("cell", "")) << v.name;
    dirs.push_back(out);
  }
  // The schema's defaults of every registered cell (char_lm), for the package's BARE_DEFAULTS.
  json defaults = json::object();
  for (const auto& c : cs::cell_registry()) {
    json d = json::object();
    for (const auto& o : cs::options_for(c.name, "char_lm"))
      if (o.section == "model" && !o.default_value.is_null() && o.key != "cell" && o.key != "embed" &&
          o.key != "hidden")
        d[o.key] = o.default_value;
    defaults[c.name] = {{"family", c.family}, {"defaults", d}};
  }
  const std::string defaults_path = cstest::temp_dir() + "/registry_defaults.json";
  cstest::write_text(defaults_path, defaults.dump());
  const std::string code =
      "import sys, json, warnings, cellscope_torch as ct\n"
      "from cellscope_torch.models import BARE_DEFAULTS\n"
      "warnings.filterwarnings(\"ignore\")\n"
      "print(json.dumps({\"format_version\": ct.FORMAT_VERSION}))\n"
      "bad = []\n"
      "for cell, e in json.load(open(sys.argv[1])).items():\n"
      "    if cell not in ct.CELLS:\n"
      "        continue\n"
      "    have = dict(BARE_DEFAULTS[\"common\"], **BARE_DEFAULTS[e[\"family\"]])\n"
      "    for k, v in e[\"defaults\"].items():\n"
      "        if k not in (\"script\", \"script_sha256\") and (k not in have or have[k] != v):\n"
      "            bad.append(\"%s: model.%s = %r in Cellscope, %r in BARE_DEFAULTS\" % (cell, k, v, have.get(k)))\n"
      "print(json.dumps({\"bare_defaults\": bad}))\n"
      "for d in sys.argv[2:]:\n"
      "    try:\n"
      "        model, info = ct.load(d)\n"
      "        r = ct.check(d, model)\n"
      "    except NotImplementedError as e:\n"
      "        r = {\"refused\": str(e)}\n"
      "    except Exception as e:\n"
      "        r = {\"error\": type(e).__name__ + \": \" + str(e)}\n"
      "    print(json.dumps(r))\n";
  std::vector<std::string> args = {defaults_path};
  args.insert(args.end(), dirs.begin(), dirs.end());
  int rc = 0;
  const std::string res = python(code, args, &rc);
  ASSERT_EQ(rc, 0) << res;
  const auto lines = json_lines(res);
  ASSERT_EQ(lines.size(), vs.size() + 2) << res;
  ASSERT_EQ(cstest::json_object(lines[0]).value("format_version", 0), cs::kTorchExportFormat)
      << "cellscope_torch.FORMAT_VERSION is not the exporter's kTorchExportFormat";
  for (const auto& b : cstest::json_object(lines[1]).value("bare_defaults", json::array()))
    ADD_FAILURE() << "packaging/python/cellscope_torch/models.py BARE_DEFAULTS: " << b.get<std::string>();
  int loaded = 0, refused = 0;
  for (size_t i = 0; i < vs.size(); ++i) {
    const json r = cstest::json_object(lines[i + 2]);
    const auto listed = kRefusedInPython.find(vs[i].name);
    ASSERT_FALSE(r.contains("error")) << vs[i].name << ": " << r.value("error", "");
    if (listed != kRefusedInPython.end()) {
      EXPECT_TRUE(r.contains("refused")) << vs[i].name << " is listed in kRefusedInPython (" << listed->second
                                         << ") but loads: take it off the list";
      ++refused;
      continue;
    }
    ASSERT_FALSE(r.contains("refused")) << vs[i].name << ": cellscope_torch refuses it (" << r.value("refused", "")
                                        << "): implement it in packaging/python or list it in kRefusedInPython";
    EXPECT_LE(r.value("max_abs", 1.0), 1e-5) << vs[i].name;
    EXPECT_LE(r.value("loss_diff", 1.0), 1e-6) << vs[i].name;
    ++loaded;
  }
  std::cout << vs.size() << " registry variants exported: " << loaded << " load in cellscope_torch and agree, "
            << refused << " refused as listed\n";
}

}  // namespace test_export_torch
