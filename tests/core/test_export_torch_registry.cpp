// #54 item 4: nothing Cellscope adds escapes the Python package (packaging/python/cellscope_torch) unnoticed.
// Every cell of the cell registry, every task of the task registry, every value of every model.* enum option and
// every cell the registry accepts as an MC-RNN's base is trained 2 steps, exported and loaded by cellscope_torch
// with Debian's python3-torch; the package's FORMAT_VERSION and BARE_DEFAULTS are compared with the exporter's and
// the schema's. The exports of the built-in variants: test_export_torch_python.cpp; shared helpers:
// export_torch_fixture.h.

#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cells/registry.h"
#include "config/schema.h"
#include "export/torch_schema.h"
#include "export_torch_fixture.h"
#include "harness.h"
#include "tasks/task.h"

namespace test_export_torch_registry {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;
using namespace export_torch_fixture;  // the export tests' shared helpers (export_torch_fixture.h)

// Every cell of the cell registry (char_lm), every task of the task registry (gru), every value of every model.*
// enum option (on the first cell and task it applies to) and every cell the registry accepts as an MC-RNN's base is
// trained 2 steps, exported and loaded by cellscope_torch in one python3 process: each must load and agree with
// Cellscope's reference logits (1e-5), or be listed in kRefusedInPython with the reason, and then be refused by
// load() with NotImplementedError.
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

// The package's FORMAT_VERSION is the exporter's, and its BARE_DEFAULTS (the bench peers' bare sections) hold the
// schema's defaults of every registered cell.
TEST(ExportTorchRegistry, packageFormatVersionAndBareDefaultsAreCellscopes) {
  if (!python_has_torch()) FAIL() << kPython << " has no torch: install python3-torch (packaging/setup.sh installs it)";
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
      "print(json.dumps({\"bare_defaults\": bad}))\n";
  int rc = 0;
  const std::string res = python(code, {defaults_path}, &rc);
  ASSERT_EQ(rc, 0) << res;
  const auto lines = json_lines(res);
  ASSERT_EQ(lines.size(), 2u) << res;
  ASSERT_EQ(cstest::json_object(lines[0]).value("format_version", 0), cs::kTorchExportFormat)
      << "cellscope_torch.FORMAT_VERSION is not the exporter's kTorchExportFormat";
  for (const auto& b : cstest::json_object(lines[1]).value("bare_defaults", json::array()))
    ADD_FAILURE() << "packaging/python/cellscope_torch/models.py BARE_DEFAULTS: " << b.get<std::string>();
}

TEST(ExportTorchRegistry, everyRegisteredCellTaskAndEnumValueLoadsInPythonOrIsRefused) {
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
  const std::string code =
      "import sys, json, warnings, cellscope_torch as ct\n"
      "warnings.filterwarnings(\"ignore\")\n"
      "for d in sys.argv[1:]:\n"
      "    try:\n"
      "        model, info = ct.load(d)\n"
      "        r = ct.check(d, model)\n"
      "    except NotImplementedError as e:\n"
      "        r = {\"refused\": str(e)}\n"
      "    except Exception as e:\n"
      "        r = {\"error\": type(e).__name__ + \": \" + str(e)}\n"
      "    print(json.dumps(r))\n";
  int rc = 0;
  const std::string res = python(code, dirs, &rc);
  ASSERT_EQ(rc, 0) << res;
  const auto lines = json_lines(res);
  ASSERT_EQ(lines.size(), vs.size()) << res;
  int loaded = 0, refused = 0;
  for (size_t i = 0; i < vs.size(); ++i) {
    const json r = cstest::json_object(lines[i]);
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

}  // namespace test_export_torch_registry
