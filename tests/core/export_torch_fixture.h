// Shared by the export tests (tests/core/test_export_torch*.cpp): the python3 they run
// (Debian's python3-torch, PYTHONPATH at packaging/python), the Python snippets more than one of them
// runs (the scripting, tensor-file and onnxruntime checks), tiny runs of a model section trained
// 2 steps on a fixture of their task and exported once per test process, and the scripted GRU of
// resources/cells/gru_equations.py. The test files' own helpers stay in their files.
#pragma once
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cloze_fixture.h"
#include "corpus_fixture.h"
#include "harness.h"

namespace export_torch_fixture {

using json = nlohmann::json;
namespace fs = std::filesystem;

inline const char* const kPython = "/usr/bin/python3";

// stdout of a shell command (stderr appended), and its exit status.
inline int shell(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
}

inline bool python_has_torch() {
  std::string out;
  return shell(std::string(kPython) + " -c 'import torch'", &out) == 0;
}

// Python code run with PYTHONPATH at packaging/python; the dirs follow as arguments.
inline std::string python(const std::string& code, const std::vector<std::string>& args, int* rc) {
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
// Python checks that rebuild exports (test_export_torch_python.cpp's kCheckAll, test_export_torch.cpp's script-cell
// check), defined before their imports (it reads ct, portable and torch when it runs).
inline const char* const kScriptChecks =
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
// side wrote (tensor_facts in test_export_torch.cpp: names in order, dtype, shape, SHA-256 of the bytes);
// pickle_globals lists the globals of a torch.save file's pickle.
inline const char* const kStateFileChecks =
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
inline const char* const kOnnxRuntime =
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
inline std::vector<std::string> json_lines(const std::string& out) {
  std::vector<std::string> r;
  for (auto& l : cstest::split(out, '\n', true))
    if (!l.empty() && l[0] == '{') r.push_back(l);
  return r;
}

// The first line of a check that ran kOnnxRuntime ({"onnxruntime": version or null}), printed; whether it ran.
inline bool report_onnxruntime(const std::string& line) {
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

// The runs whose model torch.jit.script (PyTorch 1.13) cannot compile, by variant name, with the reason
// (documented in packaging/python/cellscope_torch/README.md, "TorchScript and ONNX"). Empty: every built-in cell
// and every task scripts. A run outside this list that fails to script fails the test, and so does a listed
// run that scripts (take it off the list).
inline const std::map<std::string, std::string> kNotScriptable = {};

// The scripting figures of one check line: script ok and the scripted / saved-and-loaded model's logits equal
// the eager model's to 1e-6 (or, for a listed run, scripting fails).
inline void expect_scripts(const std::string& name, const json& r) {
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
  json training = json::object();  // training options over train_tiny's (e.g. an lr that moves the weights far)
};

// A JSON-lines classification set of n sentences with `classes` labels (the label is a keyword in the text).
inline std::string write_classify_fixture(const std::string& name, int n, int classes) {
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
inline std::string write_absa_fixture(const std::string& name) {
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

// A parallel corpus (train/valid/test .de and .en): word sequences over "a".."h" and the same reversed.
inline std::string write_seq2seq_fixture(const std::string& name) {
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
inline int train_tiny(const Variant& v, const std::string& text, const std::string& dir, std::string* err) {
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
  cfg["training"].update(v.training);
  if (v.task == "seq2seq") cfg["training"]["eval_decode"] = 2;
  cfg["training"]["eval_batch"] = v.task == "char_lm" ? 3 : v.task == "word_lm" ? 2 : 6;
  const std::string path = cstest::temp_dir() + "/" + v.name + ".json";
  cstest::write_text(path, cfg.dump());
  std::string out;
  return cstest::run_cli({"train", path, "--run-dir", dir}, &out, err);
}

// The export of variant `v` (trained and exported once per test process, shared by the tests that ask for it);
// "" (and a gtest failure) when training or export fails.
inline std::string exported(const Variant& v) {
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

// The scripted GRU of resources/cells/gru_equations.py with input_size `input` and hidden 8, saved by
// /usr/bin/python3 into the scratch directory (as tests/core/test_script_cell.cpp does); "" and a gtest failure
// when Python fails.
inline std::string script_gru(int input) {
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

}  // namespace export_torch_fixture
