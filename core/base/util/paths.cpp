#include "util/paths.h"

#include <limits.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "util/error.h"

#ifndef CELLSCOPE_SOURCE_DIR
#define CELLSCOPE_SOURCE_DIR ""
#endif
#ifndef CELLSCOPE_INSTALL_DATADIR
#define CELLSCOPE_INSTALL_DATADIR "/usr/local/share/cellscope"
#endif

namespace cs {

namespace {

const char* env_nonempty(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

// <exe dir>/../share/cellscope: the data of the installation this binary belongs to.
std::string relocated_datadir() {
  const std::string d = executable_dir();
  const auto slash = d.find_last_of('/');
  if (d.empty() || slash == std::string::npos) return "";
  return join_path(d.substr(0, slash), "share/cellscope");  // /usr/bin -> /usr/share/cellscope
}

// The compiled-in source tree, or "" for an installed binary (one with
// <exe dir>/../share/cellscope): an installed program never reads presets or
// the manifest from, nor caches data in, the tree it happened to be built from.
std::string source_dir() {
  const std::string rel = relocated_datadir();
  if (!rel.empty() && dir_exists(rel)) return "";
  return CELLSCOPE_SOURCE_DIR;
}

// The installed data directory: <exe dir>/../share/cellscope if it exists, else
// the compiled-in <prefix>/share/cellscope (even when absent, for messages).
// The exe-relative one comes first: it is the installation this very binary
// belongs to (a .deb built with CMAKE_INSTALL_PREFIX=/usr/local still installs
// into /usr, and a stale /usr/local install must not shadow it).
std::string install_datadir() {
  const std::string rel = relocated_datadir();
  if (!rel.empty() && dir_exists(rel)) return rel;
  return CELLSCOPE_INSTALL_DATADIR;
}

std::string home_dir() {
  if (const char* h = env_nonempty("HOME")) return h;
  if (const passwd* pw = ::getpwuid(::getuid())) return pw->pw_dir ? pw->pw_dir : "/tmp";
  return "/tmp";
}

}  // namespace

namespace {
std::string& executable_override() {
  static std::string path;
  return path;
}
}  // namespace

void set_executable_path(const std::string& path) { executable_override() = path; }

std::string executable_path() {
  if (!executable_override().empty()) return executable_override();
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string executable_dir() {
  const std::string p = executable_path();
  auto slash = p.find_last_of('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

std::string resources_dir() {
  if (const char* v = env_nonempty("CELLSCOPE_RESOURCES")) return v;
  const std::string src = source_dir();
  if (!src.empty() && dir_exists(join_path(src, "resources"))) return join_path(src, "resources");
  return install_datadir();
}

std::string datasets_manifest_path() {
  if (const char* v = env_nonempty("CELLSCOPE_MANIFEST")) return v;
  const std::string src = source_dir();
  if (!src.empty()) {
    const std::string p = join_path(src, "datasets/manifest.json");
    if (file_exists(p)) return p;
  }
  return join_path(install_datadir(), "datasets/manifest.json");
}

std::string data_cache_dir() {
  if (const char* v = env_nonempty("CELLSCOPE_DATA_DIR")) return v;
  // A source-tree build: the tree is still there and we may write into it
  // (its .cache/ is git-ignored). An installed program never writes there.
  const std::string src = source_dir();
  if (!src.empty() && dir_exists(src) && ::access(src.c_str(), W_OK) == 0) return join_path(src, ".cache/datasets");
  if (const char* x = env_nonempty("XDG_CACHE_HOME")) return join_path(x, "cellscope/datasets");
  return join_path(home_dir(), ".cache/cellscope/datasets");
}

std::string default_workspace() {
  if (const char* v = env_nonempty("CELLSCOPE_WORKSPACE")) return v;
  if (const char* x = env_nonempty("XDG_DATA_HOME")) return join_path(x, "cellscope/runs");
  return join_path(home_dir(), ".local/share/cellscope/runs");
}

std::string fetch_script_path() {
  if (const char* v = env_nonempty("CELLSCOPE_FETCH_SCRIPT")) return v;
  const std::string src = source_dir();
  if (!src.empty()) {
    const std::string p = join_path(src, "datasets/fetch.sh");
    if (file_exists(p)) return p;
  }
  return join_path(install_datadir(), "datasets/fetch.sh");
}

}  // namespace cs
