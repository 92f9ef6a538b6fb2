// The cellscope_torch Python package (packaging/python) against Cellscope, on exports of `cellscope-cli export`:
// tiny runs of every cell (char_lm, and word_lm for a selection) and of every task trained a few steps, exported,
// rebuilt by Debian's python3-torch (/usr/bin/python3) from config.json + model.pt, and run on the export's
// reference batch: the logits must agree with Cellscope's to 1e-5 and the loss to 1e-6; every rebuilt model must
// compile with torch.jit.script, its scripted form give the eager logits to 1e-6 and survive torch.jit.save +
// torch.jit.load (kNotScriptable lists the exceptions: none). model.pt and reference.pt load with
// torch.load(weights_only=True) (PyTorch 2.6's default) and model.safetensors holds the same tensors. Also
// torch.nn modules of the GRU, LSTM and RNN runs, TorchScript traces and ONNX files (where onnxruntime imports, the
// ONNX files run and give Cellscope's logits), cellscope_torch.evaluate against `cellscope-cli eval`, and the way
// back (`cellscope-cli import`). The export itself: test_export_torch.cpp; shared helpers: export_torch_fixture.h.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "export_torch_fixture.h"
#include "harness.h"
#include "tasks/task.h"
#include "train/trainer.h"
#include "util/sha256.h"
#include "util/state_dict_file.h"

namespace test_export_torch_python {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace export_torch_fixture;  // the export tests' shared helpers (export_torch_fixture.h)

namespace {

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
      // model.state_clamp: on over a GRU ('auto') and an LSTM (no fast path), off over a GRU, each with W_j moved far
      // from I (dist_scale 1, Adam at lr 0.3) so that s leaves [-1, 1] and the clamp acts
      {"mcrnn_gru_clamped", "char_lm", {{"cell", "mcrnn"}, {"base", "gru"}, {"dist_scale", 1.0}}, {{"lr", 0.3}}},
      {"mcrnn_gru_unclamped",
       "char_lm",
       {{"cell", "mcrnn"}, {"base", "gru"}, {"state_clamp", "off"}, {"dist_scale", 1.0}},
       {{"lr", 0.3}}},
      {"mcrnn_lstm_clamped", "char_lm", {{"cell", "mcrnn"}, {"state_clamp", "on"}, {"dist_scale", 1.0}}, {{"lr", 0.3}}},
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
      // model.bridge = output (runs written before it): an MC-RNN decoder's channel history starts at zero
      {"seq2seq_rnnsearch_mcrnn_bridge_output",
       "seq2seq",
       {{"architecture", "rnnsearch"}, {"cell", "mcrnn"}, {"block", 3}, {"bridge", "output"}}},
      // the MC-RNN paper's HO-RNN baseline: the bridge reaches all N preceding states of each decoder layer
      {"seq2seq_rnnsearch_ho_rnn", "seq2seq", {{"architecture", "rnnsearch"}, {"cell", "ho_rnn"}, {"layers", 2}}},
      {"ho_rnn_order4_sigmoid", "char_lm", {{"cell", "ho_rnn"}, {"ho_order", 4}, {"ho_activation", "sigmoid"}}},
      // the MC-RNN paper's HM-RNN baseline: three levels, the bridge to the output and every level's h
      {"hm_rnn_levels3", "char_lm", {{"cell", "hm_rnn"}, {"hm_levels", 3}}},
      {"seq2seq_rnnsearch_hm_rnn", "seq2seq", {{"architecture", "rnnsearch"}, {"cell", "hm_rnn"}}},
  };
}

const Variant& variant(const std::string& name) {
  static const std::vector<Variant> vs = variants();
  for (auto& v : vs)
    if (v.name == name) return v;
  throw std::runtime_error("no variant " + name);
}

// The tensors of a safetensors file by name.
std::map<std::string, at::Tensor> tensors_of(const std::string& path) {
  std::map<std::string, at::Tensor> m;
  for (auto& [n, t] : cs::read_safetensors(path)) m[n] = t;
  return m;
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

TEST(ExportTorchPython, everyCellAndTaskAgreesWithPyTorch) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  agrees_with_pytorch(false);
}

// cellscope_torch.to_torch_nn: an rnn, gru or lstm run is torch.nn.RNN / GRU / LSTM with its tensors renamed
// (packaging/python/cellscope_torch/torch_nn.py). The module's logits on the reference batch are Cellscope's to
// 1e-5 and the rebuilt model's, its final state is the model's (converted by state_to_torch_nn), and a second
// batch from that state agrees too; word_lm's training-only options are listed and warned about; layer_norm, a
// word_lm with tied weights (a last layer of another size) and an MZU are refused by name.
TEST(ExportTorchPython, gruLstmRnnRunsAreTorchNnModules) {
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
TEST(ExportTorchPython, seq2seqAgreesWithPyTorch) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  agrees_with_pytorch(true);
}

TEST(ExportTorchPython, torchScriptTraceAndOnnxOfGruLstmAndOneCellPerPaper) {
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

// The way back (#53): an export's weights changed in PyTorch (a char LM's GRU and MZU through the cellscope_torch
// model, an LSTM through torch.nn.LSTM from to_torch_nn) and written back with cellscope_torch.save_export become a
// Cellscope run with `cellscope-cli import`: its weights are Python's bit for bit (exported again), it evaluates to
// what `eval` says, and differs from the run it came from. A file that does not fit (a wrong shape, a missing
// tensor, a NaN), a folder that is no export and an existing run directory are refused naming the problem, with
// no run directory left.
TEST(ExportTorchPython, importMakesARunOfWeightsChangedInPyTorch) {
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

// cellscope_torch.encode / evaluate (#53 item 10, char_lm): the valid split of a run's text, cut as Cellscope's
// loader cuts it (valid_fraction, test_fraction, max_chars of the exported config), scored in Python the way
// `cellscope-cli eval --split valid` scores it: the same bits per character (to 1e-5 relative: the two sides'
// kernels may round differently), the same number of characters.
TEST(ExportTorchPython, evaluateAgreesWithCellscopeEval) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
  const std::vector<std::string> names = {"gru", "lstm", "sat_mzu"};
  std::vector<std::string> dirs;
  for (const auto& n : names) {
    dirs.push_back(exported(variant(n)));
    ASSERT_FALSE(dirs.back().empty()) << n;
  }
  // (word_lm, classify and absa: packaging/python/tests/test_text.py, against `cellscope-cli eval` too.)
  const std::string code =
      "import sys, json, math\n"
      "import cellscope_torch as ct\n"
      "for d in sys.argv[1:]:\n"
      "    cfg = json.load(open(d + \"/config.json\"))\n"
      "    ds = cfg[\"dataset\"]\n"
      "    t = open(ds[\"path\"], encoding=\"utf-8\").read().replace(\"\\r\\n\", \"\\n\")\n"
      "    if ds.get(\"max_chars\", 0):\n"
      "        t = t[:int(ds[\"max_chars\"])]\n"
      "    n = len(t)\n"
      "    nv, nt = (math.floor(n * ds.get(k, 0.05) + 0.5) for k in (\"valid_fraction\", \"test_fraction\"))\n"
      "    print(json.dumps(ct.evaluate(d, t[n - nv - nt:n - nt])))\n";
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
}

}  // namespace test_export_torch_python
