#pragma once
#include <string>
namespace cs {
std::string resources_dir();
std::string datasets_manifest_path();
std::string data_cache_dir();
}  // namespace cs
