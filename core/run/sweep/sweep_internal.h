// Helpers shared by the sweep's translation units (sweep_spec.cpp: the spec and its grid;
// sweep_run.cpp: state and the one-process runner; sweep_jobs.cpp: several processes and Slurm;
// sweep_results.cpp: the results a table reads). Not API: include only from core/run/sweep.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "sweep/sweep.h"

namespace cs::sweep_internal {

// A JSON file, with a UserError naming it when it is unreadable or malformed.
json parse_json_file(const std::string& path);
// The grid's points in run order (first axis slowest, seeds innermost); no config yet.
std::vector<SweepPoint> enumerate_points(const SweepSpec& spec);
// A run directory's summary status ("" when it has none yet).
std::string run_status(const std::string& run_dir);
std::string absolute_dir(const std::string& p);

// A descriptor holding a flock, closed (unlocked) with the object.
struct FdLock {
  int fd = -1;
  FdLock() = default;
  FdLock(const FdLock&) = delete;
  FdLock& operator=(const FdLock&) = delete;
  ~FdLock() {
    if (fd >= 0) ::close(fd);
  }
  // true when taken; `how` = LOCK_EX | LOCK_SH, with LOCK_NB or not.
  bool take(const std::string& path, int how) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    while (::flock(fd, how) != 0) {
      if (errno == EINTR && !(how & LOCK_NB)) continue;
      ::close(fd);
      fd = -1;
      return false;
    }
    return true;
  }
};

}  // namespace cs::sweep_internal
