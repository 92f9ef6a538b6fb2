#include "fuzz_common.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <typeinfo>
#include <unistd.h>

namespace fs = std::filesystem;

namespace csfuzz {

namespace {
struct Scratch {
  std::string path;
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/cellscope-fuzz-XXXXXX";
    if (!mkdtemp(templ.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    path = templ;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

const std::string& scratch_dir() {
  static Scratch s;
  return s.path;
}

std::string write_file(const std::string& name, const std::string& data) {
  const fs::path p = fs::path(scratch_dir()) / name;
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", p.c_str());
    std::abort();
  }
  return p.string();
}

void clear_scratch() {
  for (const auto& e : fs::directory_iterator(scratch_dir())) fs::remove_all(e.path());
}

std::vector<std::string> split_parts(const std::string& data, size_t max_parts) {
  static const std::string sep = "\n----\n";
  std::vector<std::string> parts;
  size_t pos = 0;
  while (parts.size() + 1 < max_parts) {
    const size_t at = data.find(sep, pos);
    if (at == std::string::npos) break;
    parts.push_back(data.substr(pos, at - pos));
    pos = at + sep.size();
  }
  parts.push_back(data.substr(pos));
  return parts;
}

static std::string tame_path(const std::string& raw) {
  std::string out, comp;
  int depth = 0;
  auto flush = [&] {
    if (!comp.empty() && comp != "." && comp != ".." && depth < 4) {
      if (!out.empty()) out += '/';
      out += comp.substr(0, 64);
      ++depth;
    }
    comp.clear();
  };
  for (char c : raw) {
    if (c == '/') flush();
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') comp += c;
  }
  flush();
  return out.empty() ? "f" : out;
}

std::vector<std::string> write_archive(const std::string& root, const std::string& data, size_t max_files) {
  std::vector<std::string> paths;
  for (const auto& part : split_parts(data, max_files)) {
    const size_t nl = part.find('\n');
    const std::string name = tame_path(part.substr(0, nl));
    const std::string content = nl == std::string::npos ? std::string() : part.substr(nl + 1);
    const fs::path p = fs::path(scratch_dir()) / root / name;
    std::error_code ec;
    // A name that is already a directory (or under a file) is skipped, as a tar would fail on it.
    fs::create_directories(p.parent_path(), ec);
    if (ec || fs::is_directory(p)) continue;
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (f) paths.push_back(p.string());
  }
  return paths;
}

void unexpected(const char* kind, const char* what) {
  std::fprintf(stderr, "fuzz finding: unexpected exception escaped (%s): %s\n", kind, what);
  std::abort();
}

}  // namespace csfuzz
