#include "util/error.h"
#include "util/fsync.h"
#include "util/own_paths.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cs {

void atomic_write(const std::string& path, const std::string& data) {
  // The temporary name is this call's own: `path.tmp.<pid><n>`, created exclusively (O_EXCL, never
  // through a link), n counting the calls of this process; a name that exists (another thread,
  // another host with the same pid on a shared filesystem, a user's file) is skipped, never
  // truncated (#52). The suffix stays all digits: what remove_stale_temp_files and the TensorBoard
  // writer recognise as an interrupted write of theirs.
  static std::atomic<unsigned> calls{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 1000 && fd < 0; ++attempt) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + std::to_string(calls.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw UserError("cannot write '" + tmp + "': " + std::strerror(errno));
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw UserError("cannot write '" + tmp + "': " + std::strerror(e));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw UserError("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(e));
  }
  // The rename is durable only once the directory entry is on disk.
  const auto slash = path.find_last_of('/');
  fsync_dir(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
}

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string make_temp_dir_beside(const std::string& target, const std::string& what) {
  std::string t = target;
  while (t.size() > 1 && t.back() == '/') t.pop_back();
  const auto slash = t.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : t.substr(0, slash);
  const std::string name = slash == std::string::npos ? t : t.substr(slash + 1);
  std::string tmpl = join_path(parent, "." + name + "." + what + "-XXXXXX");
  if (!::mkdtemp(tmpl.data()))
    throw UserError("cannot create a temporary directory in '" + parent + "': " + std::strerror(errno));
  ::chmod(tmpl.c_str(), 0755);
  return tmpl;
}

void replace_dir_with(const std::string& fresh, const std::string& target) {
  if (!dir_exists(target)) {
    if (::rename(fresh.c_str(), target.c_str()) != 0)
      throw UserError("cannot rename '" + fresh + "' to '" + target + "': " + std::strerror(errno));
    return;
  }
  const std::string old = make_temp_dir_beside(target, "old");
  if (::rename(target.c_str(), old.c_str()) != 0) {
    const int e = errno;
    ::rmdir(old.c_str());
    throw UserError("cannot move the earlier '" + target + "' aside: " + std::strerror(e));
  }
  if (::rename(fresh.c_str(), target.c_str()) != 0) {
    const int e = errno;
    ::rename(old.c_str(), target.c_str());  // the earlier result back in place
    throw UserError("cannot rename '" + fresh + "' to '" + target + "': " + std::strerror(e));
  }
  std::error_code ec;
  std::filesystem::remove_all(old, ec);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool dir_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void make_dirs(const std::string& path) {
  if (path.empty() || dir_exists(path)) return;
  auto slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) make_dirs(path.substr(0, slash));
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    throw UserError("cannot create directory '" + path + "': " + std::strerror(errno));
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (!b.empty() && b[0] == '/') return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

std::string basename_of(const std::string& path) {
  auto s = path.find_last_of('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) return out;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

}  // namespace cs
