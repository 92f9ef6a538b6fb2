// The reproducibility bundle: spec, rendering, manifest and check (report.h, REPORT_NOTES.md).
#include "report/report.h"

#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "analysis/kinds.h"
#include "data/manifest.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "train/dataset_hash.h"
#include "report/build_commit.h"
#include "train/run_store.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/own_paths.h"
#include "util/paths.h"
#include "util/sha256.h"

#ifndef CELLSCOPE_VERSION
#define CELLSCOPE_VERSION "unknown"
#endif

namespace cs {

namespace fs = std::filesystem;

namespace {

// ------------------------------------------------------------------ spec

const std::set<std::string>& keys_for(const std::string& kind) {
  static const std::set<std::string> table = {"sweep", "metric", "paired", "budget", "caption", "id"};
  static const std::set<std::string> series = {"sweep", "series", "metric", "caption", "id"};
  static const std::set<std::string> analysis = {"analysis", "figure", "run",    "runs",    "checkpoint", "checkpoints",
                                                 "text",     "last",   "layer",  "char",    "question",   "split",
                                                 "buckets",  "bins",   "metric", "caption", "id"};
  return kind == "table" ? table : kind == "series" ? series : analysis;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

bool valid_id(const std::string& s) {
  if (s.empty() || s.size() > 80 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

std::string slug(const std::string& s) {
  std::string o;
  for (char c : s) o += valid_id(std::string(1, c)) && c != '.' ? c : '-';
  return o.substr(0, 60);
}

std::string two_digits(size_t i) { return (i < 10 ? "0" : "") + std::to_string(i); }

// ------------------------------------------------------------------ inputs

std::string rel_to(const std::string& path, const std::string& base) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  const fs::path b = fs::weakly_canonical(fs::absolute(base), ec);
  const fs::path r = p.lexically_relative(b);
  if (!r.empty() && *r.begin() != "..") return r.string();
  return p.string();
}

// A run named in a spec: a directory (absolute, relative, or under the workspace), else the run
// of the workspace whose label (label.txt) is that name.
std::string resolve_run(const std::string& name, const std::string& ws) {
  auto is_run = [](const std::string& d) { return file_exists(join_path(d, "config.json")); };
  if (is_run(name)) return name;
  if (is_run(join_path(ws, name))) return join_path(ws, name);
  std::vector<std::string> hits;
  if (dir_exists(ws))
    for (auto& n : list_dir(ws)) {
      const std::string d = join_path(ws, n);
      if (is_run(d) && RunStore(d).read_label() == name) hits.push_back(d);
    }
  if (hits.size() == 1) return hits[0];
  if (hits.size() > 1)
    throw UserError("run '" + name + "': " + std::to_string(hits.size()) + " runs of workspace " + ws +
                    " have this label; name one by its directory");
  throw UserError("run '" + name + "' not found: neither a run directory nor the label of a run in workspace " + ws);
}

std::string checkpoint_file_of(const std::string& id) {
  if (id == "best" || id == "last") return id + ".pt";
  if (id.rfind("step_", 0) == 0) return id + ".pt";
  return "step_" + id + ".pt";
}

struct Fingerprints {
  std::string ws;
  json runs = json::object();            // run key -> inputs
  std::map<std::string, json> datasets;  // dataset path -> {"files": {...}} (hashed once)
  std::vector<std::string> warnings;     // dataset files changed since a run was trained
  std::string sha(const std::string& path) { return file_exists(path) ? file_sha256(path) : std::string(); }

  json dataset_of(const json& cfg) {
    json d = {{"name", ""}, {"path", ""}, {"files", json::object()}};
    if (!cfg.contains("dataset")) return d;
    DatasetLocation loc;
    try {
      loc = resolve_dataset(cfg["dataset"]);
    } catch (const std::exception& e) {
      d["error"] = e.what();
      if (cfg["dataset"].contains("path") && cfg["dataset"]["path"].is_string())
        d["path"] = cfg["dataset"]["path"].get<std::string>();
      return d;
    }
    d["name"] = loc.name;
    d["path"] = loc.path;
    auto it = datasets.find(loc.path);
    if (it == datasets.end()) it = datasets.emplace(loc.path, dataset_files_sha256(loc.path)).first;
    d["files"] = it->second;
    return d;
  }

  // Records a run's inputs (once) and the checkpoint files an item used; returns its key.
  std::string add(const std::string& run_dir, const std::vector<std::string>& checkpoint_files) {
    const std::string key = rel_to(run_dir, ws);
    if (!runs.contains(key)) {
      RunStore st(run_dir);
      const json cfg = st.read_config();
      json r;
      r["config"] = cfg;
      r["config_sha256"] = sha256_hex(cfg.dump());
      r["seed"] = cfg.contains("training") ? cfg["training"].value("seed", json(nullptr)) : json(nullptr);
      r["label"] = st.read_label();
      r["summary_sha256"] = sha(st.path("summary.json"));
      r["metrics_sha256"] = sha(st.path("metrics.jsonl"));
      r["checkpoints"] = json::object();
      r["dataset"] = dataset_of(cfg);
      // what the run recorded when it started (train/dataset_hash.h; runs before it: nothing)
      if (file_exists(st.path("dataset.json"))) {
        try {
          const json then = parse_json(read_file(st.path("dataset.json")), st.path("dataset.json"));
          if (then.contains("files") && then["files"].is_object()) {
            r["dataset_at_training"] = then["files"];
            for (auto& [f, sha_then] : then["files"].items()) {
              const std::string now = r["dataset"]["files"].value(f, "");
              if (sha_then.is_string() && sha_then.get<std::string>() != now)
                warnings.push_back("dataset file " + f + " changed since run " + key + " was trained (" +
                                   sha_then.get<std::string>().substr(0, 12) + " -> " +
                                   (now.empty() ? std::string("missing") : now.substr(0, 12)) + ")");
            }
          }
        } catch (const std::exception&) {
          warnings.push_back("run " + key + ": dataset.json is not readable");
        }
      }
      runs[key] = r;
    }
    for (auto& f : checkpoint_files)
      if (!runs[key]["checkpoints"].contains(f))
        runs[key]["checkpoints"][f] = sha(join_path(join_path(run_dir, "checkpoints"), f));
    return key;
  }
};

// ------------------------------------------------------------------ items

struct ItemOutput {
  json manifest;         // id, kind, caption, runs, numbers, outputs
  std::string markdown;  // its section of report.md
};

void write_out(const std::string& dir, const std::string& name, const std::string& data, json& outputs) {
  atomic_write(join_path(dir, name), data);
  outputs.push_back(name);
}

std::string md_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

std::string markdown_table(const SweepTable& t) {
  std::string s = "| " + md_escape(t.row_header.empty() ? "" : t.row_header) + " |";
  for (auto& c : t.col_labels) s += " " + md_escape(c) + " |";
  s += "\n|---|";
  for (size_t c = 0; c < t.col_labels.size(); ++c) s += "---|";
  s += "\n";
  for (size_t r = 0; r < t.row_labels.size(); ++r) {
    s += "| " + md_escape(t.row_labels[r]) + " |";
    for (size_t c = 0; c < t.col_labels.size(); ++c) {
      const TableCell& x = t.cells[r][c];
      std::string v = x.reference ? "(ref)" : x.n == 0 && !x.refused ? "-" : format_cell(x);
      if (x.best) v = "**" + v + "**";
      s += " " + md_escape(v) + " |";
    }
    s += "\n";
  }
  return s;
}

SweepResults read_sweep_or_explain(const std::string& name, const std::string& ws, const std::string& metric) {
  if (!file_exists(join_path(sweep_dir(ws, name), "sweep.json")) && !file_exists(join_path(name, "sweep.json")))
    throw UserError("sweep '" + name + "' has not run in workspace " + ws + ": run `cellscope-cli sweep run " + name +
                    " --workspace " + ws + "` first");
  SweepResults r = read_sweep_results(name, ws, metric);
  const bool any = std::any_of(r.records.begin(), r.records.end(), [](const SweepRunRecord& x) { return x.has_value; });
  if (!any)
    throw UserError("sweep '" + name + "' has no finished point in workspace " + ws +
                    ": run `cellscope-cli sweep run " + name + " --workspace " + ws +
                    "` (it resumes where it stopped)");
  return r;
}

json cell_number(const TableCell& c) {
  json n = {{"n", c.n}, {"values", c.values}, {"seeds", c.seeds}};
  n["mean"] = c.n > 0 ? json(c.mean) : json(nullptr);
  n["std"] = c.n > 1 ? json(c.std) : json(nullptr);
  if (c.refused) n["refused"] = true;
  return n;
}

// The runs of a sweep's points with a value, each with the checkpoint its summary's test metric
// was evaluated on; fills the item's "runs" and "checkpoints" (run key -> files).
void sweep_runs(const SweepResults& r, Fingerprints& fp, json& item) {
  json keys = json::array(), cks = json::object();
  for (auto& rec : r.records) {
    if (!rec.has_value || rec.state.run_dir.empty()) continue;
    const std::string ck =
        file_exists(join_path(join_path(rec.state.run_dir, "checkpoints"), "best.pt")) ? "best.pt" : "last.pt";
    const std::string key = fp.add(rec.state.run_dir, {ck});
    keys.push_back(key);
    cks[key] = json::array({ck});
  }
  item["runs"] = keys;
  item["checkpoints"] = cks;
}

std::string figure_links(const std::string& id, bool images, const std::string& caption) {
  std::string s;
  if (images) s += "![" + md_escape(caption) + "](" + id + ".png)\n\n";
  s += "Files: ";
  if (images) s += "[" + id + ".pdf](" + id + ".pdf), [" + id + ".png](" + id + ".png), ";
  s += "[" + id + ".csv](" + id + ".csv)";
  if (!images) s += " (no PNG/PDF: this cellscope-cli was built without the figures library)";
  return s + "\n";
}

ItemOutput render_table(const ReportItem& it, const std::string& dir, Fingerprints& fp) {
  const json& j = it.spec;
  const std::string name = j["sweep"].get<std::string>();
  SweepResults r = read_sweep_or_explain(name, fp.ws, j.value("metric", ""));
  Budget budget;
  if (j.contains("budget")) budget = parse_budget(j["budget"].get<std::string>());
  SweepTable t = sweep_table(r, j.value("paired", ""), budget);
  ItemOutput o;
  json outputs = json::array();
  write_out(dir, it.id + ".tex", table_to_latex(t), outputs);
  write_out(dir, it.id + ".csv", table_to_csv(t), outputs);
  json numbers = json::object();
  for (size_t ri = 0; ri < t.row_labels.size(); ++ri)
    for (size_t ci = 0; ci < t.col_labels.size(); ++ci)
      if (!t.cells[ri][ci].reference)
        numbers[t.row_labels[ri] + " / " + t.col_labels[ci]] = cell_number(t.cells[ri][ci]);
  int missing = 0;
  for (auto& rec : r.records) missing += rec.has_value ? 0 : 1;
  std::string caption = it.caption.empty() ? t.title : it.caption;
  if (caption.empty()) caption = name;
  const std::string paired = j.value("paired", "");
  std::string what = "Sweep `" + name + "`, " + r.metric_label + (paired.empty() ? "" : ", paired against " + paired) +
                     (budget.active() ? ", at " + budget.describe() : "") +
                     (paired.empty() ? ": mean ± sample std over seeds (n per cell in the CSV), best in bold."
                                     : ": mean ± sample std of the per-seed differences to the reference (ref), "
                                       "over the seeds both have; nothing bold.");
  if (missing > 0)
    what += " " + std::to_string(missing) + " of " + std::to_string(r.records.size()) +
            " points have no value yet (not run, running or failed).";
  o.manifest = {{"id", it.id},       {"kind", "table"},          {"caption", caption},
                {"sweep", name},     {"metric", r.metric_label}, {"missing_points", missing},
                {"numbers", numbers}};
  sweep_runs(r, fp, o.manifest);
  o.manifest["outputs"] = outputs;
  o.markdown = caption + "\n\n" + what + "\n\n" + markdown_table(t) + "\nFiles: [" + it.id + ".tex](" + it.id +
               ".tex), [" + it.id + ".csv](" + it.id + ".csv)\n";
  return o;
}

ItemOutput render_series(const ReportItem& it, const std::string& dir, Fingerprints& fp, const ReportOptions& opt) {
  const json& j = it.spec;
  const std::string name = j["sweep"].get<std::string>(), axis = j["series"].get<std::string>();
  SweepResults r = read_sweep_or_explain(name, fp.ws, j.value("metric", ""));
  const auto points = sweep_series(r, axis);
  ItemOutput o;
  json outputs = json::array();
  write_out(dir, it.id + ".csv", series_to_csv(points, axis), outputs);
  SeriesSet set;
  set.title = name;
  set.x_label = axis;
  set.y_label = r.metric_label;
  set.style = "line";
  std::string caption = it.caption.empty() ? r.metric_label + " against " + axis + " (sweep " + name +
                                                 "; mean over seeds, band: ± sample std)"
                                           : it.caption;
  set.caption = caption;
  json numbers = json::object();
  for (size_t i = 0; i < points.size(); ++i) {
    const SeriesPoint& p = points[i];
    auto s = std::find_if(set.series.begin(), set.series.end(), [&](const Series& x) { return x.name == p.series; });
    if (s == set.series.end()) {
      set.series.push_back(Series{p.series.empty() ? r.metric_label : p.series, {}, {}, {}});
      s = set.series.end() - 1;
    }
    double x = static_cast<double>(s->x.size());
    try {
      size_t used = 0;
      x = std::stod(p.x, &used);
      if (used != p.x.size()) x = static_cast<double>(s->x.size());
    } catch (...) {
    }
    s->x.push_back(x);
    s->y.push_back(p.mean);
    s->yerr.push_back(p.std);
    numbers[(p.series.empty() ? "" : p.series + " / ") + axis + "=" + p.x] = {
        {"mean", p.mean}, {"std", p.std}, {"n", p.n}};
  }
  const bool images = static_cast<bool>(opt.write_images);
  if (images) {
    AnalysisResult res = result_of(set);
    res.kind = "sweep_series";
    opt.write_images(res, join_path(dir, it.id));
    outputs.push_back(it.id + ".png");
    outputs.push_back(it.id + ".pdf");
  }
  o.manifest = {{"id", it.id},  {"kind", "series"},         {"caption", caption}, {"sweep", name},
                {"axis", axis}, {"metric", r.metric_label}, {"numbers", numbers}};
  sweep_runs(r, fp, o.manifest);
  o.manifest["outputs"] = outputs;
  o.markdown = caption + "\n\n" + figure_links(it.id, images, caption);
  return o;
}

AnalysisRequest request_of(const ReportItem& it, const std::string& ws, std::vector<std::string>* names) {
  const json& j = it.spec;
  AnalysisRequest rq;
  rq.kind = j.contains("figure") ? std::string("metric_time") : j["analysis"].get<std::string>();
  const auto& kind = analysis_kind(rq.kind);
  std::vector<std::string> given;
  if (j.contains("run")) given.push_back(j["run"].get<std::string>());
  if (j.contains("runs"))
    for (auto& r : j["runs"]) given.push_back(r.get<std::string>());
  for (auto& g : given) rq.runs.push_back(resolve_run(g, ws));
  *names = given;
  rq.checkpoint = j.value("checkpoint", "best");
  if (j.contains("checkpoints"))
    for (auto& c : j["checkpoints"]) rq.checkpoints.push_back(c.get<std::string>());
  rq.text = j.value("text", "");
  rq.last_k = j.value("last", int64_t(10));
  rq.position = j.value("char", int64_t(-1));
  if (j.contains("question")) rq.position = j["question"].get<int64_t>();
  rq.layer = j.value("layer", -1);
  rq.split = j.value("split", kind.default_split);
  if (j.contains("buckets"))
    for (auto& e : j["buckets"]) rq.edges.push_back(e.get<int64_t>());
  rq.bins = j.value("bins", 20);
  rq.metric = j.value("metric", "");
  return rq;
}

ItemOutput render_analysis(const ReportItem& it, const std::string& dir, Fingerprints& fp, const ReportOptions& opt) {
  std::vector<std::string> names;
  AnalysisRequest rq = request_of(it, fp.ws, &names);
  const auto& kind = analysis_kind(rq.kind);
  AnalysisResult res = run_analysis(rq);
  ItemOutput o;
  json outputs = json::array();
  write_out(dir, it.id + ".csv", res.to_csv(), outputs);
  const bool images = static_cast<bool>(opt.write_images);
  if (!it.caption.empty()) res.caption = it.caption + (res.caption.empty() ? "" : " " + res.caption);
  if (images) {
    opt.write_images(res, join_path(dir, it.id));
    outputs.push_back(it.id + ".png");
    outputs.push_back(it.id + ".pdf");
  }
  json runs = json::array(), used = json::object();
  for (size_t i = 0; i < rq.runs.size(); ++i) {
    std::vector<std::string> cks;
    if (rq.kind == "metric_time") {
      // reads metrics.jsonl only (pinned by its hash with every run), no checkpoint
    } else if (kind.over_training) {
      // every checkpoint the kind may read
      for (auto& n : list_dir(join_path(rq.runs[i], "checkpoints")))
        if (n.size() > 3 && n.substr(n.size() - 3) == ".pt") cks.push_back(n);
    } else {
      cks.push_back(checkpoint_file_of(checkpoint_of(rq, i)));
    }
    const std::string key = fp.add(rq.runs[i], cks);
    runs.push_back(key);
    used[key] = cks;
  }
  const std::string caption = it.caption.empty() ? kind.title + " (" + join(names, ", ") + ")" : it.caption;
  o.manifest = {{"id", it.id},         {"kind", "analysis"},       {"caption", caption},
                {"analysis", rq.kind}, {"warnings", res.warnings}, {"runs", runs},
                {"checkpoints", used}, {"outputs", outputs}};
  std::string md = caption + "\n\n" + figure_links(it.id, images, caption);
  for (auto& w : res.warnings) md += "\nWarning: " + w + "\n";
  if (!res.caption.empty()) md += "\n" + res.caption + "\n";
  o.markdown = md;
  return o;
}

ItemOutput render_item(const ReportItem& it, const std::string& dir, Fingerprints& fp, const ReportOptions& opt) {
  try {
    if (it.kind == "table") return render_table(it, dir, fp);
    if (it.kind == "series") return render_series(it, dir, fp, opt);
    return render_analysis(it, dir, fp, opt);
  } catch (const UserError& e) {
    throw UserError("item " + it.id + ": " + e.what());
  }
}

std::string sha_if(const std::string& path) { return file_exists(path) ? file_sha256(path) : std::string(); }

struct Rendered {
  std::vector<ItemOutput> items;
  json runs;
  std::vector<std::string> warnings;
};

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

// --out names a non-empty folder: it is replaced only when it is provably an earlier report, i.e. its
// manifest.json is a report manifest (format 1, items with their outputs) and every file in it is one
// that report wrote (report.md, manifest.json, an item's outputs). Anything else (the source tree's
// datasets/ holds a manifest.json of another kind; a report folder a user added a file to) is refused
// with one message naming what is not the report's.
void require_own_report(const std::string& dir) {
  const std::string mpath = join_path(dir, "manifest.json");
  const std::string refuse = "'" + dir + "' exists and is not an earlier report";
  if (!file_exists(mpath)) throw UserError(refuse + " (no manifest.json): give another --out");
  const json m = json::parse(read_file(mpath), nullptr, false);
  if (!m.is_object() || m.value("format", json()) != json(1) || !m.contains("items") || !m["items"].is_array() ||
      !m.contains("spec"))
    throw UserError(refuse + " (its manifest.json is not a report's): give another --out");
  std::set<std::string> own = {"report.md", "manifest.json"};
  for (auto& it : m["items"]) {
    if (!it.is_object() || !it.contains("outputs") || !it["outputs"].is_object())
      throw UserError(refuse + " (its manifest.json is not a report's): give another --out");
    for (auto& [f, sha] : it["outputs"].items()) own.insert(fs::path(f).lexically_normal().string());
  }
  // Directories are walked (not followed through links); any other entry must be one of the report's files.
  // A folder that cannot be read through is not provably the report's.
  std::error_code ec;
  for (auto i = fs::recursive_directory_iterator(dir, ec); !ec && i != fs::recursive_directory_iterator();
       i.increment(ec)) {
    std::error_code sec;
    if (i->symlink_status(sec).type() == fs::file_type::directory) continue;
    const std::string rel = i->path().lexically_relative(dir).lexically_normal().string();
    if (!own.count(rel))
      throw UserError(refuse + ": it holds '" + rel +
                      "', which that report did not write (move it, or give another --out)");
  }
  if (ec) throw UserError(refuse + ": it cannot be read through (" + ec.message() + "): give another --out");
}

}  // namespace

// ------------------------------------------------------------------ public

ReportSpec ReportSpec::from_json(const json& j, const std::string& file) {
  std::vector<std::string> problems;
  ReportSpec s;
  if (!j.is_object()) throw UserError(file + ": a report spec is a JSON object {\"title\", \"items\": [...]}");
  s.source = j;
  for (auto& [k, v] : j.items())
    if (k != "title" && k != "items" && k != "notes")
      problems.push_back("unknown key '" + k + "' (title, items, notes)");
  if (j.contains("title") && !j["title"].is_string()) problems.push_back("title: expected a string");
  s.title = j.contains("title") && j["title"].is_string() ? j["title"].get<std::string>() : "Report";
  if (!j.contains("items") || !j["items"].is_array() || j["items"].empty()) {
    problems.push_back("items: expected a non-empty list of items");
  } else {
    std::set<std::string> ids;
    for (size_t i = 0; i < j["items"].size(); ++i) {
      const json& x = j["items"][i];
      const std::string at = "items[" + std::to_string(i) + "]";
      if (!x.is_object()) {
        problems.push_back(at + ": expected an object");
        continue;
      }
      ReportItem it;
      it.spec = x;
      const int kinds = int(x.contains("sweep")) + int(x.contains("analysis")) + int(x.contains("figure"));
      if (kinds != 1) {
        problems.push_back(at +
                           ": give exactly one of \"sweep\" (a table or, with \"series\", a figure), "
                           "\"analysis\" (a kind) or \"figure\": \"curves\"");
        continue;
      }
      it.kind = x.contains("sweep") ? (x.contains("series") ? "series" : "table") : "analysis";
      const auto& allowed = keys_for(it.kind);
      for (auto& [k, v] : x.items())
        if (!allowed.count(k))
          problems.push_back(at + ": unknown key '" + k + "' for a " + it.kind + " item (" +
                             join(std::vector<std::string>(allowed.begin(), allowed.end()), ", ") + ")");
      auto need_string = [&](const char* k, bool required) {
        if (!x.contains(k)) {
          if (required) problems.push_back(at + "." + k + ": required");
          return;
        }
        if (!x[k].is_string() || x[k].get<std::string>().empty())
          problems.push_back(at + "." + k + ": expected a non-empty string");
      };
      auto need_int = [&](const char* k) {
        if (x.contains(k) && !x[k].is_number_integer()) problems.push_back(at + "." + k + ": expected an integer");
      };
      for (const char* k :
           {"metric", "paired", "budget", "caption", "id", "series", "run", "checkpoint", "text", "split"})
        need_string(k, false);
      for (const char* k : {"last", "layer", "char", "question", "bins"}) need_int(k);
      if (it.kind != "analysis") {
        need_string("sweep", true);
        if (x.contains("budget") && x["budget"].is_string()) try {
            (void)parse_budget(x["budget"].get<std::string>());
          } catch (const UserError& e) {
            problems.push_back(at + ".budget: " + e.what());
          }
      } else {
        if (x.contains("figure") && x["figure"] != "curves")
          problems.push_back(at + ".figure: expected \"curves\" (evaluation metric over training time)");
        if (x.contains("analysis")) {
          if (!x["analysis"].is_string()) problems.push_back(at + ".analysis: expected a kind name");
          else try {
              (void)analysis_kind(x["analysis"].get<std::string>());
            } catch (const UserError& e) {
              problems.push_back(at + ".analysis: " + e.what());
            }
        }
        const bool one = x.contains("run"), many = x.contains("runs");
        if (one == many)
          problems.push_back(at + ": give \"run\" (one run) or \"runs\" (a list), not " + (one ? "both" : "neither"));
        for (const char* k : {"runs", "checkpoints"})
          if (x.contains(k) && (!x[k].is_array() || x[k].empty() ||
                                !std::all_of(x[k].begin(), x[k].end(), [](const json& v) { return v.is_string(); })))
            problems.push_back(at + "." + k + ": expected a non-empty list of strings");
        if (x.contains("buckets") &&
            (!x["buckets"].is_array() || !std::all_of(x["buckets"].begin(), x["buckets"].end(),
                                                      [](const json& v) { return v.is_number_integer(); })))
          problems.push_back(at + ".buckets: expected a list of integers");
      }
      const std::string base =
          it.kind == "analysis"
              ? (x.contains("analysis") && x["analysis"].is_string() ? x["analysis"].get<std::string>()
                                                                     : std::string("curves"))
              : (x["sweep"].is_string() ? x["sweep"].get<std::string>() : std::string("sweep")) +
                    (it.kind == "series" ? "-series" : "");
      it.id =
          x.contains("id") && x["id"].is_string() ? x["id"].get<std::string>() : two_digits(i + 1) + "-" + slug(base);
      if (!valid_id(it.id)) problems.push_back(at + ".id: '" + it.id + "' is not a file name (letters, digits, - _ .)");
      else if (!ids.insert(it.id).second) problems.push_back(at + ".id: '" + it.id + "' is used by an earlier item");
      it.caption = x.contains("caption") && x["caption"].is_string() ? x["caption"].get<std::string>() : "";
      s.items.push_back(it);
    }
  }
  if (!problems.empty()) {
    std::string msg = file + ": " + std::to_string(problems.size()) + " problem" + (problems.size() > 1 ? "s" : "") +
                      " in the report spec:";
    for (auto& p : problems) msg += "\n  " + p;
    throw UserError(msg);
  }
  return s;
}

ReportSpec load_report_spec(const std::string& arg) {
  std::string path = arg;
  if (!file_exists(arg)) {
    const std::string b = join_path(join_path(resources_dir(), "reports"), arg + ".json");
    if (!file_exists(b))
      throw UserError("'" + arg + "' is neither a report spec file nor a bundled report (" +
                      join_path(resources_dir(), "reports") + ")");
    path = b;
  }
  json j;
  try {
    j = parse_json(read_file(path), path);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw UserError(path + ": not valid JSON: " + json_error_text(e));
  }
  return ReportSpec::from_json(j, path);
}

std::vector<json> bundled_reports() {
  std::vector<json> out;
  const std::string dir = join_path(resources_dir(), "reports");
  if (!dir_exists(dir)) return out;
  for (auto& n : list_dir(dir)) {
    if (n.size() < 6 || n.substr(n.size() - 5) != ".json") continue;
    const std::string path = join_path(dir, n);
    json e = {{"name", n.substr(0, n.size() - 5)}, {"path", path}, {"title", ""}};
    try {
      e["title"] = load_report_spec(path).title;
    } catch (const std::exception& ex) {
      e["error"] = ex.what();
    }
    out.push_back(e);
  }
  return out;
}

json code_version() {
  return {{"version", CELLSCOPE_VERSION}, {"commit", build_git_commit()}, {"libtorch", TORCH_VERSION}};
}

namespace {

Rendered render_into(const ReportSpec& spec, const std::string& dir, const ReportOptions& opt,
                     std::vector<std::string>* item_errors) {
  Fingerprints fp;
  fp.ws = opt.workspace.empty() ? default_workspace() : opt.workspace;
  Rendered out;
  const int total = static_cast<int>(spec.items.size());
  for (int i = 0; i < total; ++i) {
    const ReportItem& it = spec.items[static_cast<size_t>(i)];
    if (opt.on_progress) opt.on_progress(i, total, it.id);
    if (item_errors) {
      try {
        out.items.push_back(render_item(it, dir, fp, opt));
        item_errors->push_back("");
      } catch (const std::exception& e) {
        out.items.push_back({json{{"id", it.id}}, ""});
        item_errors->push_back(e.what());
      }
    } else {
      out.items.push_back(render_item(it, dir, fp, opt));
    }
  }
  if (opt.on_progress) opt.on_progress(total, total, "");
  out.runs = fp.runs;
  out.warnings = fp.warnings;
  return out;
}

}  // namespace

json render_report(const ReportSpec& spec, const std::string& spec_file, const std::string& out,
                   const ReportOptions& opt) {
  if (out.empty()) throw UserError("no output directory given");
  const std::string target = fs::path(out).lexically_normal().string();
  const std::string clean = !target.empty() && target.back() == '/' ? target.substr(0, target.size() - 1) : target;
  if (dir_exists(clean) && !list_dir(clean).empty()) require_own_report(clean);
  if (file_exists(clean) && !dir_exists(clean))
    throw UserError("'" + clean + "' is a file: give a directory for --out");
  const std::string ws = opt.workspace.empty() ? default_workspace() : opt.workspace;
  if (!dir_exists(ws)) throw UserError("workspace '" + ws + "' does not exist");
  // Every sweep that has not run, in one message with the commands that run them.
  std::vector<std::string> missing;
  for (auto& it : spec.items) {
    if (it.kind == "analysis") continue;
    const std::string name = it.spec["sweep"].get<std::string>();
    const std::string cmd = "cellscope-cli sweep run " + name + " --workspace " + ws;
    if (!file_exists(join_path(sweep_dir(ws, name), "sweep.json")) && !file_exists(join_path(name, "sweep.json")) &&
        std::find(missing.begin(), missing.end(), cmd) == missing.end())
      missing.push_back(cmd);
  }
  if (!missing.empty()) {
    std::string msg = std::to_string(missing.size()) + " sweep" + (missing.size() > 1 ? "s" : "") + " of the report " +
                      (missing.size() > 1 ? "have" : "has") + " not run in workspace " + ws + "; run:";
    for (auto& m : missing) msg += "\n  " + m;
    throw UserError(msg);
  }
  // A folder of this invocation's own beside DIR (unique name), renamed onto DIR at the end.
  const std::string tmp = make_temp_dir_beside(clean);
  try {
    Rendered r = render_into(spec, tmp, opt, nullptr);
    json manifest;
    manifest["format"] = 1;
    manifest["title"] = spec.title;
    manifest["created"] = now_iso();
    manifest["spec_file"] = spec_file;
    manifest["spec"] = spec.source;
    manifest["workspace"] = fs::absolute(ws).lexically_normal().string();
    manifest["code"] = code_version();
    manifest["images"] = static_cast<bool>(opt.write_images);
    manifest["tolerance"] = kReportTolerance;
    manifest["runs"] = r.runs;
    manifest["warnings"] = r.warnings;
    json items = json::array();
    std::string md = "# " + spec.title + "\n\nRendered " + manifest["created"].get<std::string>() + " by cellscope " +
                     CELLSCOPE_VERSION +
                     (std::string(build_git_commit()).empty() ? "" : std::string(" (") + build_git_commit() + ")") +
                     " from workspace `" + manifest["workspace"].get<std::string>() + "`" +
                     (spec_file.empty() ? "" : " and spec `" + spec_file + "`") +
                     ". What made every file (configs, seeds, checkpoints and dataset files by SHA-256): "
                     "[manifest.json](manifest.json); `cellscope-cli report --check DIR` recomputes it.\n";
    if (!r.warnings.empty()) {
      md += "\n**Warning: the data changed after training.**\n\n";
      for (auto& w : r.warnings) md += "- " + w + "\n";
    }
    for (size_t i = 0; i < r.items.size(); ++i) {
      json m = r.items[i].manifest;
      json files = json::object();
      for (auto& f : m["outputs"]) files[f.get<std::string>()] = sha_if(join_path(tmp, f.get<std::string>()));
      m["outputs"] = files;
      items.push_back(m);
      md += "\n## " + std::to_string(i + 1) + ". " + r.items[i].markdown;
      std::vector<std::string> seeds_runs;
      for (auto& k : m["runs"]) seeds_runs.push_back("`" + k.get<std::string>() + "`");
      md += "\nRuns (" + std::to_string(seeds_runs.size()) + "): " + join(seeds_runs, ", ") + "\n";
    }
    manifest["items"] = items;
    atomic_write(join_path(tmp, "report.md"), md);
    atomic_write(join_path(tmp, "manifest.json"), manifest.dump(2) + "\n");
    replace_dir_with(tmp, clean);  // DIR is absent, empty or an earlier report (require_own_report)
    return manifest;
  } catch (...) {
    remove_tree(tmp);
    throw;
  }
}

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
    Rendered now = render_into(spec, tmp, opt, &errors);
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
    remove_tree(tmp);
    throw;
  }
  remove_tree(tmp);
  return res;
}

}  // namespace cs
