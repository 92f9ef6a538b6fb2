#include "train/run_store.h"
#include "train/test_examples.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "config/schema.h"
#include "data/utf8.h"
#include "train/metrics.h"
#include "util/error.h"
#include "util/fsync.h"
#include "util/own_paths.h"
#include "util/text.h"

namespace cs {

json RunSummary::to_json() const {
  json j = {{"status", status},
            {"reason", reason},
            {"task", task},
            {"cell", cell},
            {"primary_metric", primary_metric},
            {"lower_is_better", lower_is_better},
            {"parameters", parameters},
            {"step", step},
            {"epoch", epoch},
            {"mean_throughput", mean_throughput},
            {"unit", unit},
            {"elapsed", elapsed},
            {"started", started},
            {"updated", updated},
            {"processes", processes}};
  j["best_valid"] = has_best ? json(best_valid) : json(nullptr);
  j["best_step"] = has_best ? json(best_step) : json(nullptr);
  j["test_metric"] = has_test ? json(test_metric) : json(nullptr);
  if (std::isfinite(train_flops)) j["train_flops"] = train_flops;
  if (valid_units > 0) j["valid_units"] = valid_units;
  if (test_units > 0) j["test_units"] = test_units;
  return j;
}

RunSummary RunSummary::from_json(const json& j) {
  RunSummary s;
  s.status = j.value("status", "unknown");
  s.reason = j.value("reason", "");
  s.task = j.value("task", "");
  s.cell = j.value("cell", "");
  s.primary_metric = j.value("primary_metric", "");
  s.lower_is_better = j.value("lower_is_better", true);
  s.parameters = j.value("parameters", int64_t(0));
  s.step = j.value("step", int64_t(0));
  s.epoch = j.value("epoch", 0.0);
  s.mean_throughput = j.value("mean_throughput", 0.0);
  s.unit = j.value("unit", "");
  s.elapsed = j.value("elapsed", 0.0);
  s.started = j.value("started", "");
  s.updated = j.value("updated", "");
  s.processes = j.value("processes", int64_t(1));
  if (j.contains("train_flops") && j["train_flops"].is_number()) s.train_flops = j["train_flops"].get<double>();
  if (j.contains("valid_units") && j["valid_units"].is_number_integer())
    s.valid_units = j["valid_units"].get<int64_t>();
  if (j.contains("test_units") && j["test_units"].is_number_integer()) s.test_units = j["test_units"].get<int64_t>();
  if (j.contains("best_valid") && j["best_valid"].is_number()) {
    s.has_best = true;
    s.best_valid = j["best_valid"].get<double>();
    s.best_step = j.value("best_step", int64_t(0));
  }
  if (j.contains("test_metric") && j["test_metric"].is_number()) {
    s.has_test = true;
    s.test_metric = j["test_metric"].get<double>();
  }
  return s;
}

std::string RunStore::path(const std::string& name) const { return join_path(dir_, name); }

void RunStore::create() {
  if (dir_exists(dir_) && !list_dir(dir_).empty())
    throw UserError("run directory '" + dir_ + "' already exists and is not empty (use --resume to continue it)");
  make_dirs(dir_);
  make_dirs(checkpoint_dir());
}

namespace {
// Take an exclusive flock on `dir`/lock and write our PID into it; the descriptor is returned
// (it holds the lock). Refused: UserError naming the PID found in the file.
int take_lock(const std::string& dir, const std::string& shown_dir) {
  const std::string p = join_path(dir, "lock");
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError("cannot open '" + p + "' to lock the run directory: " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    throw UserError("run directory '" + shown_dir + "' is being written by another process (PID " +
                    (pid.empty() ? std::string("unknown") : pid) + ", holding " + join_path(shown_dir, "lock") +
                    "); wait for it to end or stop it first");
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) {
    ssize_t w = ::pwrite(fd, me.data(), me.size(), 0);
    (void)w;
  }
  return fd;
}

// An interrupted write of atomic_write's: NAME.tmp.<digits>, a regular file (not a user's
// "results.tmp.csv", which a takeover would have removed, #52).
bool interrupted_write(const std::string& dir, const std::string& n) {
  const size_t t = n.rfind(".tmp.");
  if (t == std::string::npos || t == 0 || t + 5 == n.size()) return false;
  if (!std::all_of(n.begin() + static_cast<std::ptrdiff_t>(t + 5), n.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  struct stat st {};
  return ::lstat(join_path(dir, n).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// What an interrupted creation (older versions: mkdir, checkpoints/, then config.json) can leave.
bool stranded_creation(const std::string& dir) {
  if (file_exists(join_path(dir, "config.json"))) return false;
  for (auto& n : list_dir(dir)) {
    const std::string p = join_path(dir, n);
    if (n == "checkpoints" && dir_exists(p)) {
      for (auto& c : list_dir(p))
        if (!interrupted_write(p, c)) return false;
    } else if (n != "lock" && !interrupted_write(dir, n)) {
      return false;
    }
  }
  return true;
}

void remove_tree_shallow(const std::string& dir) {
  // a stranded or temporary run directory: files and one level of subdirectories
  for (auto& n : list_dir(dir)) {
    const std::string p = join_path(dir, n);
    if (dir_exists(p)) {
      for (auto& c : list_dir(p)) ::unlink(join_path(p, c).c_str());
      ::rmdir(p.c_str());
    } else {
      ::unlink(p.c_str());
    }
  }
  ::rmdir(dir.c_str());
}
}  // namespace

void RunStore::lock_for_writing() {
  if (lock_fd_) return;
  const int fd = take_lock(dir_, dir_);
  lock_fd_ = std::shared_ptr<int>(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
}

void RunStore::create_atomically(const json& cfg, const std::string& vocab_text,
                                 const std::vector<std::pair<std::string, std::string>>& copies) {
  std::string d = dir_;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const auto slash = d.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : d.substr(0, slash);
  const std::string name = slash == std::string::npos ? d : d.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") throw UserError("'" + dir_ + "' cannot be a run directory");
  make_dirs(parent);
  if (dir_exists(d)) {
    if (!list_dir(d).empty() && !stranded_creation(d))
      throw UserError("run directory '" + dir_ + "' already exists and is not empty (use --resume to continue it)");
    // an empty directory, or one stranded by an interrupted creation: take it over (locked while we
    // do, so a creation under way in another process is not disturbed)
    const int fd = take_lock(d, dir_);
    remove_tree_shallow(d);
    ::close(fd);
  } else if (file_exists(d)) {
    throw UserError("'" + dir_ + "' exists and is not a directory");
  }
  // Creations of this name that a killed process left behind are removed: only a folder named as
  // this function names its own (.NAME.creating-XXXXXX), whose lock no live process holds, and
  // that holds nothing but what a creation writes (#52's rule: never a user's look-alike). A creation
  // killed before its lock file was made leaves an empty folder: rmdir removes only an empty one.
  const std::string stem = "." + name + ".creating-";
  std::vector<std::string> ours = {"config.json", "vocab", "lock", "checkpoints"};
  for (const auto& c : copies) ours.push_back(c.first);
  auto only_creation_files = [&](const std::string& dir) {
    for (auto& n : list_dir(dir)) {
      const std::string p = join_path(dir, n);
      if (n == "checkpoints" && dir_exists(p)) {
        if (!list_dir(p).empty()) return false;
      } else if (std::find(ours.begin(), ours.end(), n) == ours.end() && !interrupted_write(dir, n)) {
        return false;
      }
    }
    return true;
  };
  for (auto& n : list_dir(parent)) {
    if (n.rfind(stem, 0) != 0 || n.size() != stem.size() + 6) continue;
    const std::string old = join_path(parent, n);
    if (!dir_exists(old)) continue;
    const int ofd = ::open(join_path(old, "lock").c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (ofd < 0) {
      ::rmdir(old.c_str());  // only if empty
      continue;
    }
    if (::flock(ofd, LOCK_EX | LOCK_NB) != 0) {
      ::close(ofd);
      continue;  // still being created by a live process
    }
    if (only_creation_files(old)) remove_tree_shallow(old);
    ::close(ofd);
  }
  // This creation's folder: a name unique to this call (mkdtemp, util/own_paths.h), not the PID
  // (which another machine writing the same workspace can share).
  const std::string tmp = make_temp_dir_beside(d, "creating");
  make_dirs(join_path(tmp, "checkpoints"));
  const int fd = take_lock(tmp, dir_);
  auto hold = std::shared_ptr<int>(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  try {
    atomic_write(join_path(tmp, "config.json"), cfg.dump(2) + "\n");
    if (!vocab_text.empty()) atomic_write(join_path(tmp, "vocab"), vocab_text);
    for (const auto& [name, src] : copies) atomic_write(join_path(tmp, name), read_file(src));
    fsync_dir(join_path(tmp, "checkpoints"));
    fsync_dir(tmp);
    if (::rename(tmp.c_str(), d.c_str()) != 0) {
      const int e = errno;
      throw UserError("cannot create run directory '" + dir_ + "': " +
                      (e == ENOTEMPTY || e == EEXIST ? std::string("it was created by another process meanwhile")
                                                     : std::string(std::strerror(e))));
    }
  } catch (...) {
    remove_tree_shallow(tmp);
    throw;
  }
  fsync_dir(parent);
  lock_fd_ = hold;  // the flock follows the renamed directory's lock file
}

void RunStore::write_config(const json& cfg) const { atomic_write(path("config.json"), cfg.dump(2) + "\n"); }

json RunStore::read_config() const {
  const std::string p = path("config.json");
  try {
    return as_written(parse_json(read_file(p), p));  // a run written before an option: its value then
  } catch (const json::exception& e) {
    throw UserError("'" + p + "' is not valid JSON: " + json_error_text(e));
  }
}

void RunStore::write_summary(const RunSummary& s) const {
  atomic_write(path("summary.json"), s.to_json().dump(2) + "\n");
}

RunSummary RunStore::read_summary() const {
  const std::string p = path("summary.json");
  try {
    return RunSummary::from_json(parse_json(read_file(p), p));
  } catch (const json::exception& e) {
    // a syntax error, or a field of the wrong type (from_json)
    throw UserError("'" + p + "' is not a valid run summary: " + json_error_text(e));
  }
}

static void append_line(const std::string& p, const std::string& line) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw UserError("cannot append to '" + p + "'");
  std::string s = line + "\n";
  // One write() of a whole line: a reader never sees half a line unless the process dies mid-write.
  ssize_t n = ::write(fd, s.data(), s.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(s.size())) throw UserError("short write to '" + p + "'");
}

void RunStore::append_metrics(const json& line) const { append_line(path("metrics.jsonl"), line.dump()); }

std::vector<json> RunStore::read_metrics() const { return read_metrics_lines(path("metrics.jsonl")); }

void RunStore::truncate_metrics(int64_t step) const {
  std::string out;
  for (auto& j : read_metrics())
    if (j.value("step", int64_t(0)) <= step) out += j.dump() + "\n";
  atomic_write(path("metrics.jsonl"), out);
}

void RunStore::log(const std::string& line) const {
  try {
    append_line(path("log.txt"), "[" + now_iso() + "] " + line);
  } catch (...) {
  }
}

std::string RunStore::remove_if_only_run_files() const {
  // What create_atomically and the first steps write (the layout at the top of run_store.h, and
  // dataset.json: train/launch.cpp's record of the dataset's files), and test_examples.json, which
  // the end writes (a copy of a run's files counts as the run's).
  static const char* const kFiles[] = {"config.json", "vocab",          "lock",      "summary.json", "metrics.jsonl",
                                       "log.txt",     "script_cell.pt", "label.txt", "dataset.json", kTestExamplesFile};
  auto is_file = [](const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  auto is_dir = [](const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  std::vector<std::string> files, dirs;
  for (auto& n : list_dir(dir_)) {
    const std::string p = join_path(dir_, n);
    const bool known =
        std::find_if(std::begin(kFiles), std::end(kFiles), [&](const char* k) { return n == k; }) != std::end(kFiles);
    if ((known || interrupted_write(dir_, n)) && is_file(p)) {
      files.push_back(p);
    } else if ((n == "checkpoints" || n == "tensorboard") && is_dir(p)) {
      for (auto& c : list_dir(p)) {
        const std::string cp = join_path(p, c);
        const bool ours = interrupted_write(p, c) || (n == "tensorboard" && c.rfind("events.out.tfevents.", 0) == 0);
        if (!ours || !is_file(cp)) return join_path(n, c);  // a checkpoint, or a user's file
        files.push_back(cp);
      }
      dirs.push_back(p);
    } else {
      return n;
    }
  }
  for (auto& f : files) ::unlink(f.c_str());
  for (auto& d : dirs) ::rmdir(d.c_str());
  ::rmdir(dir_.c_str());
  return "";
}

std::string RunStore::writer_pid() const {
  const std::string p = path("lock");
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";  // no lock file: nothing ever wrote here, or it was removed
  std::string pid;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    char buf[32] = {0};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    if (pid.empty()) pid = "unknown";
  }
  ::close(fd);  // releases the shared probe at once
  return pid;
}

RunState probe_run_state(const std::string& dir) {
  RunStore store(dir);
  if (!dir_exists(dir)) throw UserError("'" + dir + "' does not exist");
  if (!file_exists(store.path("config.json"))) throw UserError("'" + dir + "' is not a run directory (no config.json)");
  RunState r;
  r.writer_pid = store.writer_pid();
  r.has_checkpoint = file_exists(join_path(store.checkpoint_dir(), "last.pt"));
  const bool has_summary = file_exists(store.path("summary.json"));
  if (has_summary) r.summary = store.read_summary();
  if (!r.writer_pid.empty()) {
    r.state = "running";
    r.exit_status = 3;
  } else if (!has_summary) {
    r.state = "not started";
    r.exit_status = 1;
  } else if (r.summary.status == "finished") {
    r.state = "finished";
    r.exit_status = 0;
  } else if (r.summary.status == "failed") {
    r.state = "failed";
    r.exit_status = 1;
  } else {
    r.state = r.summary.status == "stopped" ? "stopped" : "interrupted";
    r.exit_status = r.state == "stopped" && r.has_checkpoint ? 75 : 1;
  }
  return r;
}

std::vector<int64_t> RunStore::checkpoint_steps() const {
  std::vector<int64_t> v;
  for (auto& n : list_dir(checkpoint_dir())) {
    if (n.rfind("step_", 0) == 0 && n.size() > 8 && n.substr(n.size() - 3) == ".pt") {
      try {
        v.push_back(std::stoll(n.substr(5, n.size() - 8)));
      } catch (...) {
      }
    }
  }
  std::sort(v.begin(), v.end());
  return v;
}

void RunStore::remove_stale_temp_files() const {
  for (const auto& d : {dir_, checkpoint_dir()})
    for (auto& n : list_dir(d))
      if (interrupted_write(d, n)) ::unlink(join_path(d, n).c_str());  // not a user's "notes.tmp.md" (#52)
}

namespace {
// A label without its leading and trailing blanks, tabs, CRs and LFs (not form feeds or vertical tabs:
// those are refused by write_label as unprintable, as they always were).
std::string trim_ws(const std::string& s) { return trim_chars(s, " \t\r\n"); }
}  // namespace

std::string RunStore::read_label() const {
  std::ifstream f(path("label.txt"), std::ios::binary);
  if (!f) return "";
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  s = trim_ws(s.substr(0, s.find('\n')));
  // A label file edited by hand into something invalid is ignored rather than shown garbled.
  if (s.size() > 80 ||
      utf8_validate(reinterpret_cast<const unsigned char*>(s.data()), s.size(), nullptr) != std::string::npos ||
      find_unprintable_name_char(s, nullptr) != std::string::npos)
    return "";
  return s;
}

void RunStore::write_label(const std::string& label) const {
  const std::string s = trim_ws(label);
  if (s.find('\n') != std::string::npos || s.find('\r') != std::string::npos)
    throw UserError("a run label is one line");
  if (s.size() > 80) throw UserError("a run label has at most 80 bytes (got " + std::to_string(s.size()) + ")");
  if (utf8_validate(reinterpret_cast<const unsigned char*>(s.data()), s.size(), nullptr) != std::string::npos)
    throw UserError("a run label must be valid UTF-8");
  uint32_t cp = 0;
  if (const size_t at = find_unprintable_name_char(s, &cp); at != std::string::npos)
    throw UserError("a run label is printed in tables and legends: it may not hold " +
                    describe_unprintable_name_char(cp) + ", found at byte " + std::to_string(at + 1));
  if (!file_exists(path("config.json"))) throw UserError(dir_ + " is not a run directory (no config.json)");
  if (s.empty()) {
    ::unlink(path("label.txt").c_str());
    return;
  }
  atomic_write(path("label.txt"), s + "\n");
}

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
  return buf;
}

std::string new_run_dir(const std::string& workspace, const json& cfg) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  std::string base = join_path(
      workspace, std::string(buf) + "-" + cfg["task"].value("name", "task") + "-" + cfg["model"].value("cell", "cell"));
  std::string d = base;
  for (int i = 2; dir_exists(d) || file_exists(d); ++i) d = base + "-" + std::to_string(i);
  return d;
}

}  // namespace cs
