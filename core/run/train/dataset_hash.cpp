#include "train/dataset_hash.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "data/manifest.h"
#include "util/sha256.h"

namespace cs {

json dataset_files_sha256(const std::string& path) {
  namespace fs = std::filesystem;
  json files = json::object();
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    files[path] = file_sha256(path);
  } else if (fs::is_directory(path, ec)) {
    std::vector<std::string> all;
    for (auto& e : fs::recursive_directory_iterator(path, ec))
      if (e.is_regular_file()) all.push_back(e.path().string());
    std::sort(all.begin(), all.end());
    for (auto& f : all) files[f] = file_sha256(f);
  }
  return files;
}

json dataset_record(const json& dataset_section) {
  try {
    const DatasetLocation loc = resolve_dataset(dataset_option_table().read_partial(dataset_section));
    return {{"name", loc.name}, {"path", loc.path}, {"files", dataset_files_sha256(loc.path)}};
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
}

}  // namespace cs
