// Cellscope core: errors and small file utilities. No Qt, no torch here.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace cs {

// A problem the user can fix (bad config, bad data, bad checkpoint). The message
// names the offending file / JSON path / option; the CLI prints it and exits 2.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Write `data` to `path` atomically: write `path.tmp.<pid>`, fsync, rename over
// `path`. A reader (or a process killed at any instant) sees the old or the new
// file, never a torn one.
void atomic_write(const std::string& path, const std::string& data);

// Read a whole (small) file; throws UserError naming the file when unreadable.
std::string read_file(const std::string& path);

bool file_exists(const std::string& path);
bool dir_exists(const std::string& path);
// mkdir -p; throws UserError on failure.
void make_dirs(const std::string& path);
std::string join_path(const std::string& a, const std::string& b);
std::string basename_of(const std::string& path);
std::vector<std::string> list_dir(const std::string& path);  // names, sorted

// Environment variable or fallback.
std::string env_or(const char* name, const std::string& fallback);

}  // namespace cs
