// A report's spec: parsing and checking it, bundled specs (report.h, REPORT_NOTES.md "Spec").
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "analysis/kinds.h"
#include "report/report.h"
#include "sweep/table.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/text.h"

namespace cs {

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

}  // namespace

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

}  // namespace cs
