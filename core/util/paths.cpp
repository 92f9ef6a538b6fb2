// Stand-in; replaced by the full resolver.
#include "util/paths.h"

#include "util/error.h"
namespace cs {
std::string resources_dir() { return env_or("CELLSCOPE_RESOURCES", std::string(CELLSCOPE_SOURCE_DIR) + "/resources"); }
std::string datasets_manifest_path() { return std::string(CELLSCOPE_SOURCE_DIR) + "/datasets/manifest.json"; }
std::string data_cache_dir() { return env_or("CELLSCOPE_DATA_DIR", std::string(CELLSCOPE_SOURCE_DIR) + "/.cache/datasets"); }
}  // namespace cs
