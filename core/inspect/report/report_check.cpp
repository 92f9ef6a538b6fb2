// `report --check DIR`: the manifest read as untrusted input, every item recomputed and compared
// (report.h, REPORT_NOTES.md "Check").
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "report/report_internal.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/sha256.h"

namespace cs {

namespace fs = std::filesystem;

bool ReportCheck::ok() const {
  return std::all_of(lines.begin(), lines.end(), [](const ReportCheckLine& l) { return l.ok || l.item == "code"; });
}

namespace {

std::string short_sha(const std::string& s) { return s.empty() ? "missing" : s.substr(0, 12); }

bool same_number(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::fabs(a - b) <= kReportTolerance * std::max(1.0, std::max(std::fabs(a), std::fabs(b)));
}

bool as_number(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

std::string num_text(const json& v) {
  if (v.is_null()) return "none";
  if (v.is_number()) {
    std::ostringstream o;
    o.precision(10);
    o << v.get<double>();
    return o.str();
  }
  return v.dump();
}

// What a JSON value is, for "expected X, found Y".
std::string json_kind(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  return "an object";
}

// The manifest of a report to check, as check_report reads it (#52: a tampered manifest gave raw
// "[json.exception.type_error...]" text with exit 1, and a missing key read through const
// json::operator[] was undefined behaviour). Every field the check reads is checked here first, each
// problem named by its JSON path; the check reads only what passed, and optional fields through
// value() with a default. One UserError (exit 2) naming the file lists them all.
void check_manifest_shape(const json& m, const std::string& mpath) {
  std::vector<std::string> problems;
  auto bad = [&](const std::string& at, const std::string& expected, const json& v) {
    problems.push_back(at + ": expected " + expected + ", found " + json_kind(v));
  };
  auto strings_object = [&](const json& o, const std::string& at) {  // {name: "sha256", ...}
    if (!o.is_object()) return bad(at, "an object of strings", o);
    for (auto& [k, v] : o.items())
      if (!v.is_string()) bad(at + "." + k, "a string", v);
  };
  auto optional_string = [&](const json& o, const char* k, const std::string& at) {
    if (o.contains(k) && !o[k].is_string()) bad(at + "." + k, "a string", o[k]);
  };
  if (!m.is_object())
    throw UserError(mpath + ": not a report manifest (expected a JSON object, found " + json_kind(m) + ")");
  for (const char* k : {"spec", "items", "runs"})
    if (!m.contains(k)) problems.push_back(std::string(k) + ": missing");
  if (m.contains("items") && !m["items"].is_array()) bad("items", "a list", m["items"]);
  if (m.contains("runs") && !m["runs"].is_object()) bad("runs", "an object", m["runs"]);
  optional_string(m, "workspace", "manifest");
  if (m.contains("code")) {
    if (!m["code"].is_object()) bad("code", "an object", m["code"]);
    else
      for (const char* k : {"version", "commit"}) optional_string(m["code"], k, "code");
  }
  if (m.contains("items") && m["items"].is_array())
    for (size_t i = 0; i < m["items"].size(); ++i) {
      const json& it = m["items"][i];
      const std::string at = "items[" + std::to_string(i) + "]";
      if (!it.is_object()) {
        bad(at, "an object", it);
        continue;
      }
      if (!it.contains("id")) problems.push_back(at + ".id: missing");
      optional_string(it, "id", at);
      if (it.contains("runs")) {
        if (!it["runs"].is_array()) bad(at + ".runs", "a list of run keys", it["runs"]);
        else
          for (size_t r = 0; r < it["runs"].size(); ++r)
            if (!it["runs"][r].is_string()) bad(at + ".runs[" + std::to_string(r) + "]", "a string", it["runs"][r]);
      }
      if (it.contains("checkpoints")) {
        const json& c = it["checkpoints"];
        if (!c.is_object()) bad(at + ".checkpoints", "an object (run key -> checkpoint files)", c);
        else
          for (auto& [k, files] : c.items()) {
            if (!files.is_array()) {
              bad(at + ".checkpoints." + k, "a list of file names", files);
              continue;
            }
            for (size_t f = 0; f < files.size(); ++f)
              if (!files[f].is_string())
                bad(at + ".checkpoints." + k + "[" + std::to_string(f) + "]", "a string", files[f]);
          }
      }
      if (it.contains("outputs")) strings_object(it["outputs"], at + ".outputs");
      if (it.contains("numbers")) {
        const json& ns = it["numbers"];
        if (!ns.is_object()) bad(at + ".numbers", "an object", ns);
        else
          for (auto& [name, n] : ns.items()) {
            const std::string nat = at + ".numbers." + name;
            if (!n.is_object()) {
              bad(nat, "an object", n);
              continue;
            }
            for (const char* k : {"mean", "std"})
              if (n.contains(k) && !n[k].is_number() && !n[k].is_null()) bad(nat + "." + k, "a number or null", n[k]);
            if (n.contains("n") && !n["n"].is_number_integer()) bad(nat + ".n", "an integer", n["n"]);
          }
      }
    }
  if (m.contains("runs") && m["runs"].is_object())
    for (auto& [key, r] : m["runs"].items()) {
      const std::string at = "runs." + key;
      if (!r.is_object()) {
        bad(at, "an object", r);
        continue;
      }
      for (const char* k : {"config_sha256", "summary_sha256", "metrics_sha256"}) optional_string(r, k, at);
      if (r.contains("checkpoints")) strings_object(r["checkpoints"], at + ".checkpoints");
      if (r.contains("dataset")) {
        if (!r["dataset"].is_object()) bad(at + ".dataset", "an object", r["dataset"]);
        else if (r["dataset"].contains("files")) strings_object(r["dataset"]["files"], at + ".dataset.files");
      }
    }
  if (problems.empty()) return;
  std::string msg = mpath + ": not a report manifest this check can read (edited by hand?):";
  const size_t shown = std::min<size_t>(problems.size(), 12);
  for (size_t i = 0; i < shown; ++i) msg += "\n  " + problems[i];
  if (problems.size() > shown) msg += "\n  and " + std::to_string(problems.size() - shown) + " more";
  throw UserError(msg);
}

// An object member, or an empty object when `j` lacks it (a const json& never goes through
// operator[] with a missing key: undefined behaviour).
json member_or_empty(const json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_object() ? j[k] : json::object();
}

// Differences of the inputs of one run (old manifest entry vs recomputed).
void compare_run(const std::string& key, const json& a, const json& b, const json& used,
                 std::vector<std::string>* out) {
  if (b.is_null()) {
    out->push_back("run " + key + " is no longer used or found");
    return;
  }
  if (a.value("config_sha256", "") != b.value("config_sha256", "")) out->push_back("config of run " + key + " changed");
  for (auto& f_used : used) {
    const std::string f = f_used.get<std::string>();
    const std::string sha = member_or_empty(a, "checkpoints").value(f, "");
    const std::string now = member_or_empty(b, "checkpoints").value(f, "");
    if (sha != now)
      out->push_back("checkpoint " + key + "/checkpoints/" + f + " sha changed (" + short_sha(sha) + " -> " +
                     short_sha(now) + ")");
  }
  const json fa = member_or_empty(member_or_empty(a, "dataset"), "files");
  const json fb = member_or_empty(member_or_empty(b, "dataset"), "files");
  for (auto& [f, sha] : fa.items()) {
    const std::string now = fb.value(f, "");
    if (sha.get<std::string>() != now)
      out->push_back("dataset file " + f + " changed (" + short_sha(sha.get<std::string>()) + " -> " + short_sha(now) +
                     ")");
  }
  for (auto& [f, sha] : fb.items())
    if (!fa.contains(f)) out->push_back("dataset file " + f + " is new");
  if (a.value("summary_sha256", "") != b.value("summary_sha256", ""))
    out->push_back("summary.json of run " + key + " changed");
  if (a.value("metrics_sha256", "") != b.value("metrics_sha256", ""))
    out->push_back("metrics.jsonl of run " + key + " changed");
}

void compare_numbers(const json& a, const json& b, std::vector<std::string>* out) {
  int n = 0;
  auto note = [&](const std::string& s) {
    if (++n <= 6) out->push_back(s);
  };
  for (auto& [name, va] : a.items()) {
    if (!b.contains(name)) {
      note("number " + name + " is gone");
      continue;
    }
    const json& vb = b[name];
    for (const char* k : {"mean", "std"}) {
      const json x = va.value(k, json(nullptr)), y = vb.value(k, json(nullptr));
      const bool same = (x.is_null() && y.is_null()) ||
                        (x.is_number() && y.is_number() && same_number(x.get<double>(), y.get<double>()));
      if (!same) note("number " + name + " " + k + " " + num_text(x) + " -> " + num_text(y));
    }
    if (va.value("n", 0) != vb.value("n", 0))
      note("number " + name + " n " + std::to_string(va.value("n", 0)) + " -> " + std::to_string(vb.value("n", 0)));
  }
  for (auto& [name, vb] : b.items())
    if (!a.contains(name)) note("number " + name + " is new (" + num_text(vb.value("mean", json(nullptr))) + ")");
  if (n > 6) out->push_back("and " + std::to_string(n - 6) + " more numbers");
}

void compare_csv(const std::string& file, const std::string& a, const std::string& b, std::vector<std::string>* out) {
  const auto ra = csv_records(a), rb = csv_records(b);
  if (ra.size() != rb.size()) {
    out->push_back(file + ": " + std::to_string(ra.size()) + " rows -> " + std::to_string(rb.size()));
    return;
  }
  int n = 0;
  for (size_t r = 0; r < ra.size(); ++r) {
    const size_t cols = std::max(ra[r].size(), rb[r].size());
    for (size_t c = 0; c < cols; ++c) {
      const std::string x = c < ra[r].size() ? ra[r][c] : "", y = c < rb[r].size() ? rb[r][c] : "";
      double u = 0, v = 0;
      const bool same = x == y || (as_number(x, &u) && as_number(y, &v) && same_number(u, v));
      if (!same && ++n <= 3)
        out->push_back(file + " row " + std::to_string(r + 1) + " (" + (ra[r].empty() ? "" : ra[r][0]) + ") column " +
                       std::to_string(c + 1) + (r > 0 && c < ra[0].size() ? " (" + ra[0][c] + ")" : "") + ": number " +
                       x + " -> " + y);
    }
  }
  if (n > 3) out->push_back(file + ": and " + std::to_string(n - 3) + " more values changed");
}

}  // namespace

ReportCheck check_report(const std::string& dir, const ReportOptions& options) {
  const std::string mpath = join_path(dir, "manifest.json");
  if (!file_exists(mpath)) throw UserError("'" + dir + "' is not a report (no manifest.json)");
  json manifest;
  try {
    manifest = parse_json(read_file(mpath), mpath);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw UserError(mpath + ": not valid JSON: " + json_error_text(e));
  }
  check_manifest_shape(manifest, mpath);  // every field read below, by its JSON path
  const ReportSpec spec = ReportSpec::from_json(manifest["spec"], mpath + " (its spec)");
  ReportOptions opt = options;
  opt.write_images = nullptr;  // images are not compared: the CSV beside each holds its numbers
  if (opt.workspace.empty()) opt.workspace = manifest.value("workspace", "");
  if (!dir_exists(opt.workspace)) throw UserError("workspace '" + opt.workspace + "' of the report does not exist");

  std::error_code ec;
  const fs::path tmp_root = fs::temp_directory_path(ec);  // $TMPDIR, else /tmp
  std::string tmpl = ((ec ? fs::path("/tmp") : tmp_root) / "cellscope-report-check-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw UserError("cannot create a temporary directory (" + tmpl + ")");
  const std::string tmp = tmpl;
  ReportCheck res;
  try {
    std::vector<std::string> errors;
    report_internal::Rendered now = report_internal::render_into(spec, tmp, opt, &errors);
    const json code_now = code_version();
    const json code_then = manifest.value("code", json::object());
    const bool code_changed = code_then.value("version", "") != code_now.value("version", "") ||
                              code_then.value("commit", "") != code_now.value("commit", "");
    ReportCheckLine code;
    code.item = "code";
    code.ok = !code_changed;
    if (code_changed)
      code.changes.push_back("code version changed (" + code_then.value("version", "?") + " " +
                             code_then.value("commit", "") + " -> " + code_now.value("version", "?") + " " +
                             code_now.value("commit", "") + ")");
    res.lines.push_back(code);
    for (size_t i = 0; i < spec.items.size(); ++i) {
      ReportCheckLine line;
      line.item = spec.items[i].id;
      json old;
      for (auto& m : manifest["items"])
        if (m.value("id", "") == line.item) old = m;
      if (old.is_null()) {
        line.ok = false;
        line.changes.push_back("not in the manifest's items");
        res.lines.push_back(line);
        continue;
      }
      if (!errors[i].empty()) {
        line.ok = false;
        line.changes.push_back("cannot recompute: " + errors[i]);
        res.lines.push_back(line);
        continue;
      }
      const json& fresh = now.items[i].manifest;
      std::vector<std::string> inputs, numbers;
      std::set<std::string> old_runs, new_runs;
      for (auto& k : old.value("runs", json::array())) old_runs.insert(k.get<std::string>());
      for (auto& k : fresh["runs"]) new_runs.insert(k.get<std::string>());
      for (auto& k : old_runs) {
        if (!new_runs.count(k)) {
          inputs.push_back("run " + k + " is no longer used");
          continue;
        }
        const json a = manifest["runs"].value(k, json::object());
        const json used = old.contains("checkpoints") ? old["checkpoints"].value(k, json::array()) : json::array();
        compare_run(k, a, now.runs.value(k, json(nullptr)), used, &inputs);
      }
      for (auto& k : new_runs)
        if (!old_runs.count(k)) inputs.push_back("run " + k + " is new in the item");
      if (old.contains("numbers")) compare_numbers(old["numbers"], fresh.value("numbers", json::object()), &numbers);
      for (auto& f : fresh["outputs"]) {
        const std::string name = f.get<std::string>();
        if (name.size() < 4 || name.substr(name.size() - 4) != ".csv") continue;
        const std::string then_path = join_path(dir, name);
        if (!file_exists(then_path)) {
          numbers.push_back(name + " is missing from the report");
          continue;
        }
        if (old.contains("outputs") && old["outputs"].is_object() &&
            old["outputs"].value(name, "") != file_sha256(then_path))
          inputs.push_back(name + " in the report was edited after rendering (its sha256 is not the manifest's)");
        compare_csv(name, read_file(then_path), read_file(join_path(tmp, name)), &numbers);
      }
      // the same dataset file under several runs: said once
      std::vector<std::string> unique;
      for (auto& x : inputs)
        if (std::find(unique.begin(), unique.end(), x) == unique.end()) unique.push_back(x);
      inputs = unique;
      line.changes = inputs;
      line.changes.insert(line.changes.end(), numbers.begin(), numbers.end());
      if (!numbers.empty() && inputs.empty())
        line.changes.push_back(code_changed ? "why: the code version changed"
                                            : "why: unknown (same inputs and code; a non-deterministic computation?)");
      line.ok = line.changes.empty();
      res.lines.push_back(line);
    }
  } catch (...) {
    report_internal::remove_tree(tmp);
    throw;
  }
  report_internal::remove_tree(tmp);
  return res;
}

}  // namespace cs
