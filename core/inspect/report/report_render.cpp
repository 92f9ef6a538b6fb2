// Rendering a report's items: sweeps' tables and series, analyses of runs, and the inputs each
// read, pinned by SHA-256 (report.h, REPORT_NOTES.md "Output" and "Manifest").
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "analysis/kinds.h"
#include "data/manifest.h"
#include "report/report_internal.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "train/dataset_hash.h"
#include "train/run_store.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/sha256.h"
#include "util/text.h"

namespace cs {

namespace fs = std::filesystem;

namespace {

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
      loc = resolve_dataset(dataset_option_table().read_partial(cfg["dataset"]));
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
      if (x.has_sig && x.sig.seeds >= 2) v += " (" + p_text(x.sig.p) + ")";
      s += " " + md_escape(v) + " |";
    }
    s += "\n";
  }
  return s;
}

std::string t_statistic_text(double t) {
  if (std::isinf(t)) return t > 0 ? "inf" : "-inf";
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << t;
  return o.str();
}

// The paired view's verdicts, one per comparison, with the tests that made them (SWEEP_NOTES.md
// "Significance"); "" outside the paired view.
std::string markdown_verdicts(const SweepTable& t) {
  std::string s;
  for (size_t r = 0; r < t.row_labels.size(); ++r)
    for (size_t c = 0; c < t.col_labels.size(); ++c) {
      const TableCell& x = t.cells[r][c];
      if (!x.has_sig) continue;
      const Significance& g = x.sig;
      s += "- " + md_escape(t.col_labels.size() > 1 ? t.row_labels[r] + " / " + t.col_labels[c] : t.row_labels[r]) +
           ": " + format_cell(x) + "; " + g.test() +
           (g.seeds >= 2 ? ": t = " + t_statistic_text(g.t.t) + ", " + p_text(g.t.p) : "") +
           (std::isfinite(g.p_examples) ? "; bootstrap " + p_text(g.p_examples) : "") + "; sign test " +
           std::to_string(g.sign.positive) + "+ / " + std::to_string(g.sign.negative) + "-, " + p_text(g.sign.p) +
           ": **" + g.text() + "**\n";
    }
  if (s.empty()) return s;
  return "Verdicts (two-sided tests; a difference *holds* only at p < 0.05 on at least " +
         std::to_string(kMinSeedsForHolds) + " seeds, else it is *consistent in sign on N seeds* when every seed " +
         "agrees, else *not established*):\n\n" + s +
         (t.sampling_note.empty() ? "" : "\nNote: " + t.sampling_note + ".\n");
}

// The sweep's labels in report.md: the data used, the paper's data and every departure.
std::string markdown_labels(const SweepLabels& l) {
  if (l.empty()) return "";
  std::string s = "Data: " + md_escape(l.data_line().substr(6)) + ".\n";
  const auto deps = l.departure_lines();
  if (!deps.empty()) {
    s += "\nSettings that depart from the paper:\n\n";
    for (auto& d : deps) s += "- " + md_escape(d) + "\n";
  }
  if (!l.excluded.empty()) {
    s += "\nPoints the sweep leaves out:\n\n";
    for (auto& x : l.excluded) s += "- " + md_escape(x) + "\n";
  }
  return s;
}

json labels_manifest(const SweepLabels& l) {
  return {{"data", l.data_line()}, {"departures", l.departure_lines()}, {"excluded", l.excluded}};
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
  if (c.has_sig) n["verdict"] = c.sig.text();
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

report_internal::ItemOutput render_table(const ReportItem& it, const std::string& dir, Fingerprints& fp) {
  const json& j = it.spec;
  const std::string name = j["sweep"].get<std::string>();
  SweepResults r = read_sweep_or_explain(name, fp.ws, j.value("metric", ""));
  Budget budget;
  if (j.contains("budget")) budget = parse_budget(j["budget"].get<std::string>());
  SweepTable t = sweep_table(r, j.value("paired", ""), budget);
  report_internal::ItemOutput o;
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
  o.manifest = {{"id", it.id},
                {"kind", "table"},
                {"caption", caption},
                {"sweep", name},
                {"metric", r.metric_label},
                {"missing_points", missing},
                {"numbers", numbers},
                {"labels", labels_manifest(t.labels)}};
  sweep_runs(r, fp, o.manifest);
  o.manifest["outputs"] = outputs;
  const std::string labels = markdown_labels(t.labels), verdicts = markdown_verdicts(t);
  o.markdown = caption + "\n\n" + what + "\n\n" + (labels.empty() ? "" : labels + "\n") + markdown_table(t) +
               (verdicts.empty() ? "" : "\n" + verdicts) + "\nFiles: [" + it.id + ".tex](" + it.id + ".tex), [" +
               it.id + ".csv](" + it.id + ".csv)\n";
  return o;
}

report_internal::ItemOutput render_series(const ReportItem& it, const std::string& dir, Fingerprints& fp,
                                          const ReportOptions& opt) {
  const json& j = it.spec;
  const std::string name = j["sweep"].get<std::string>(), axis = j["series"].get<std::string>();
  SweepResults r = read_sweep_or_explain(name, fp.ws, j.value("metric", ""));
  const auto points = sweep_series(r, axis);
  report_internal::ItemOutput o;
  json outputs = json::array();
  const SweepLabels labels = sweep_labels(r);
  write_out(dir, it.id + ".csv", series_to_csv(points, axis, labels), outputs);
  SeriesSet set;
  set.title = name;
  set.x_label = axis;
  set.y_label = r.metric_label;
  set.style = "line";
  std::string caption = it.caption.empty() ? r.metric_label + " against " + axis + " (sweep " + name +
                                                 "; mean over seeds, band: ± sample std)"
                                           : it.caption;
  // the figure's own caption names the data and the departures (by name; report.md lists them in full)
  set.caption = caption + (labels.empty() ? "" : ". " + labels.data_line()) +
                (labels.paper.departures.empty() ? "" : ". Departs from the paper in: " + labels.departure_names());
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
                {"axis", axis}, {"metric", r.metric_label}, {"numbers", numbers}, {"labels", labels_manifest(labels)}};
  sweep_runs(r, fp, o.manifest);
  o.manifest["outputs"] = outputs;
  const std::string md_labels = markdown_labels(labels);
  o.markdown = caption + "\n\n" + (md_labels.empty() ? "" : md_labels + "\n") + figure_links(it.id, images, caption);
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

report_internal::ItemOutput render_analysis(const ReportItem& it, const std::string& dir, Fingerprints& fp,
                                            const ReportOptions& opt) {
  std::vector<std::string> names;
  AnalysisRequest rq = request_of(it, fp.ws, &names);
  const auto& kind = analysis_kind(rq.kind);
  AnalysisResult res = run_analysis(rq);
  report_internal::ItemOutput o;
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

report_internal::ItemOutput render_item(const ReportItem& it, const std::string& dir, Fingerprints& fp,
                                        const ReportOptions& opt) {
  try {
    if (it.kind == "table") return render_table(it, dir, fp);
    if (it.kind == "series") return render_series(it, dir, fp, opt);
    return render_analysis(it, dir, fp, opt);
  } catch (const UserError& e) {
    throw UserError("item " + it.id + ": " + e.what());
  }
}

}  // namespace

namespace report_internal {

Rendered render_into(const ReportSpec& spec, const std::string& dir, const ReportOptions& opt,
                     std::vector<std::string>* item_errors) {
  Fingerprints fp;
  fp.ws = opt.workspace.empty() ? default_workspace() : opt.workspace;
  report_internal::Rendered out;
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

}  // namespace report_internal

}  // namespace cs
