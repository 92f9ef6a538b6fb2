#include "data/manifest.h"

#include "util/error.h"
#include "data/utf8.h"
#include "data/cbt_build.h"
#include "data/fetch.h"
#include "util/paths.h"

namespace cs {

json load_manifest(const std::string& path_in) {
  const std::string path = path_in.empty() ? datasets_manifest_path() : path_in;
  if (!file_exists(path))
    throw UserError("dataset manifest '" + path + "' does not exist (set CELLSCOPE_MANIFEST or reinstall)");
  json m;
  try {
    const std::string text = read_text_file(path);
    require_utf8_text(text, path);  // NUL, invalid UTF-8: path:line:column
    m = parse_json(text, "dataset manifest '" + path + "'");
  } catch (const json::parse_error& e) {
    throw UserError("dataset manifest '" + path + "' is not valid JSON: " + json_error_text(e));
  }
  if (!m.is_object() || !m.contains("datasets") || !m["datasets"].is_array())
    throw UserError("dataset manifest '" + path + "' has no \"datasets\" array");
  size_t i = 0;
  for (const auto& e : m["datasets"]) {
    const std::string where = "dataset manifest '" + path + "' entry " + std::to_string(i++);
    if (!e.is_object()) throw UserError(where + " is not an object");
    for (const char* k : {"name", "format", "obtain", "path"})
      if (!e.contains(k) || !e[k].is_string()) throw UserError(where + ": missing string \"" + k + "\"");
    const std::string named = where + " ('" + e["name"].get<std::string>() + "')";
    if (!e.contains("files") || !e["files"].is_array() || e["files"].empty())
      throw UserError(named + ": missing non-empty \"files\" array");
    size_t k = 0;
    for (const auto& f : e["files"]) {
      const std::string at = named + ": files[" + std::to_string(k++) + "]";
      if (!f.is_string() || f.get<std::string>().empty())
        throw UserError(at + " is not a file name (expected a non-empty string, got " + f.dump().substr(0, 40) + ")");
      const std::string n = f.get<std::string>();
      if (n[0] == '/' || n == ".." || n.rfind("../", 0) == 0 || n.find("/../") != std::string::npos ||
          (n.size() >= 3 && n.compare(n.size() - 3, 3, "/..") == 0))
        throw UserError(at + ": '" + n + "' must be a path inside the data cache (relative, no '..')");
    }
    // Optional fields that the listings read: right types or absent.
    for (const char* key : {"licence", "description", "comment"})
      if (e.contains(key) && !e[key].is_string()) throw UserError(named + ": \"" + key + "\" must be a string");
    if (e.contains("tasks")) {
      if (!e["tasks"].is_array()) throw UserError(named + ": \"tasks\" must be an array of task names");
      for (const auto& t : e["tasks"])
        if (!t.is_string()) throw UserError(named + ": \"tasks\" must be an array of task names (strings)");
    }
    if (e.contains("source")) {
      if (!e["source"].is_object()) throw UserError(named + ": \"source\" must be an object");
      for (auto& [k2, v] : e["source"].items())
        if (!v.is_string()) throw UserError(named + ": source." + k2 + " must be a string");
    }
  }
  return m;
}

const json* find_manifest_entry(const json& manifest, const std::string& name) {
  for (const auto& e : manifest.at("datasets"))
    if (e.value("name", "") == name) return &e;
  return nullptr;
}

std::vector<std::string> manifest_names(const json& manifest) {
  std::vector<std::string> out;
  for (const auto& e : manifest.at("datasets")) out.push_back(e.value("name", ""));
  return out;
}

bool dataset_fetched(const json& entry, std::string* missing) {
  const std::string dir = data_cache_dir();
  for (const auto& f : entry.at("files")) {
    const std::string p = join_path(dir, f.get<std::string>());
    if (!file_exists(p)) {
      if (missing) *missing = p;
      return false;
    }
  }
  return true;
}

DatasetLocation resolve_dataset(const DatasetOptions& dataset) {
  DatasetLocation loc;
  if (dataset.path && !dataset.path->empty()) {
    loc.path = *dataset.path;
    loc.format = dataset.format;
    return loc;
  }
  if (dataset.name.empty())
    throw UserError("dataset: set dataset.name (a manifest dataset) or dataset.path (a file of your own)");
  loc.name = dataset.name;
  const std::string mpath = datasets_manifest_path();
  const json manifest = load_manifest(mpath);
  const json* e = find_manifest_entry(manifest, loc.name);
  if (!e) {
    std::string known;
    for (const auto& n : manifest_names(manifest)) known += (known.empty() ? "" : ", ") + n;
    throw UserError("dataset.name: unknown dataset '" + loc.name + "' (manifest '" + mpath + "' knows: " + known +
                    "); or set dataset.path to a file of your own");
  }
  loc.entry = *e;
  loc.path = join_path(data_cache_dir(), e->at("path").get<std::string>());
  loc.format = dataset.format;
  if (loc.format == DatasetFormat::Auto) {
    const std::string f = e->at("format").get<std::string>();
    const auto known = dataset_format_named(f);
    if (!known)
      throw UserError("dataset manifest '" + mpath + "' ('" + loc.name + "'): unknown format '" + f + "' (" +
                      choice_error(enum_choices<DatasetFormat>(), f) + ")");
    loc.format = *known;
  }
  if (e->at("obtain") == "build") {        // built by Cellscope from other datasets (data/cbt_build.h): on first
    build_manifest_dataset(manifest, *e);  // use, and again when build.json shows other options
    return loc;
  }
  std::string missing;
  if (!dataset_fetched(*e, &missing)) {
    if (e->at("obtain") == "npm")
      throw UserError("dataset '" + loc.name + "' is not fetched yet (missing '" + missing + "'); " + fetch_hint());
    std::string url;
    if (e->contains("source") && e->at("source").is_object()) url = e->at("source").value("url", "");
    throw UserError("dataset '" + loc.name + "' is not bundled: obtain it yourself" +
                    (url.empty() ? std::string() : " from " + url) + " and put it at '" + missing +
                    "', or set dataset.path to your copy");
  }
  return loc;
}

}  // namespace cs
