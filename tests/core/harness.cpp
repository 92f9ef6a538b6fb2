// Qt-free harness and main() of cellscope_core_tests (see harness.h).
#include "util/cpu_cache.h"
#include "harness.h"
#include "cli_zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace cstest {
namespace {
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cellscope-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      std::fprintf(stderr, "cannot create a temporary directory from %s: %s\n", tmpl.c_str(), std::strerror(errno));
      std::exit(1);
    }
    path = tmpl;
  }
  ~TempDir() {
    const char* keep = std::getenv("CS_KEEP_TMP");
    if (keep && std::string(keep) == "1") {
      std::fprintf(stderr, "kept %s (CS_KEEP_TMP=1)\n", path.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
}  // namespace

std::string temp_dir() {
  static TempDir dir;
  return dir.path;
}
std::string cli_path() { return CELLSCOPE_CLI_PATH; }
std::string source_dir() { return CELLSCOPE_SOURCE_DIR; }

int run_cli(const std::vector<std::string>& args, std::string* out, std::string* err, int timeout_ms) {
  int po[2], pe[2];
  if (::pipe2(po, O_CLOEXEC) != 0) return -3;
  if (::pipe2(pe, O_CLOEXEC) != 0) {
    ::close(po[0]), ::close(po[1]);
    return -3;
  }
  const std::string prog = cli_path();
  // From the zygote when it can (cli_zygote.h), else the program executed.
  const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = zygote::spawn(prog, args, null_in, po[1], pe[1]);
  if (null_in >= 0) ::close(null_in);
  const bool forked = pid > 0;
  int rc = 0;
  if (!forked) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, po[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, pe[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(prog.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    rc = ::posix_spawn(&pid, prog.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
  }
  ::close(po[1]);
  ::close(pe[1]);
  if (rc != 0) {
    ::close(po[0]), ::close(pe[0]);
    if (err) *err = "cannot start " + prog + ": " + std::strerror(rc);
    return -3;
  }
  std::string o, e;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t k = ::read(fds[i].fd, buf, sizeof buf);
      if (k > 0) {
        (i == 0 ? o : e).append(buf, static_cast<size_t>(k));
      } else if (k == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  if (forked) {
    while (!zygote::reap(pid, &status, 60000)) {
    }
  } else {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (timed_out) {
    if (err) *err = "timeout";
    return -1;
  }
  if (out) *out = o;
  if (err) *err = e;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

Process::~Process() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    wait(60000);
  }
}

bool Process::start(const std::vector<std::string>& args) {
  static int serial = 0;
  const std::string base = temp_dir() + "/process-" + std::to_string(++serial);
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  const std::string prog = cli_path();
  {  // from the zygote when it can (cli_zygote.h), else the program executed (below)
    const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const pid_t pid = in >= 0 && out >= 0 && err >= 0 ? zygote::spawn(prog, args, in, out, err) : -1;
    for (int fd : {in, out, err})
      if (fd >= 0) ::close(fd);
    if (pid > 0) {
      pid_ = pid;
      ended_ = false;
      exit_code_ = -1;
      return true;
    }
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(prog.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, prog.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    start_error_ = "cannot start " + prog + ": " + std::strerror(rc);
    return false;
  }
  ended_ = false;
  exit_code_ = -1;
  return true;
}

bool Process::running() {
  if (pid_ < 0 || ended_) return false;
  int status = 0;
  pid_t r;
  if (zygote::owns(pid_)) {
    if (!zygote::reap(pid_, &status, 0)) return true;
    r = pid_;
  } else {
    while ((r = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (r == 0) return true;
  }
  ended_ = true;
  exit_code_ = r == pid_ && WIFEXITED(status) ? WEXITSTATUS(status) : -2;
  return false;
}

void Process::signal(int sig) {
  if (running()) ::kill(pid_, sig);
}

bool Process::wait(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pid_ >= 0;
}

std::string Process::out() const { return read_text(out_path_); }
std::string Process::err() const { return start_error_.empty() ? read_text(err_path_) : start_error_; }

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& bytes) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}
bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  if (needle.empty()) return 0;
  for (size_t i = haystack.find(needle); i != std::string::npos; i = haystack.find(needle, i + needle.size())) ++n;
  return n;
}
std::vector<std::string> split(const std::string& s, char sep, bool skip_empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!(skip_empty && part.empty())) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

EnvGuard::EnvGuard(const char* name, const std::string& value) : name_(name), had_(std::getenv(name) != nullptr) {
  if (had_) old_ = std::getenv(name);
  ::setenv(name, value.c_str(), 1);
}
std::vector<nlohmann::json> comparable_metrics(const std::string& run_dir) {
  std::vector<nlohmann::json> v;
  for (auto& l : split(read_text(run_dir + "/metrics.jsonl"), '\n', true)) {
    nlohmann::json j = json_object(l);
    j.erase("elapsed");
    j.erase("throughput");
    j.erase("wall_time");
    v.push_back(j);
  }
  return v;
}
EnvGuard::~EnvGuard() {
  if (had_) ::setenv(name_.c_str(), old_.c_str(), 1);
  else ::unsetenv(name_.c_str());
}
}  // namespace cstest

int main(int argc, char** argv) {
  // First, while this process is single-threaded and has run nothing: the zygote that the CLI
  // processes of the tests are forked from (cli_zygote.h).
  {
    const std::string cli = cstest::cli_path();
    cstest::zygote::start(cli.substr(0, cli.find_last_of('/') + 1) + "cellscope-cli-full");
    const std::string state = cstest::zygote::state();
    if (state != "on" && state != "off: CELLSCOPE_TEST_EXEC=1")
      std::fprintf(stderr, "the CLI zygote is %s: every CLI process is executed\n", state.c_str());
  }
  ::testing::InitGoogleTest(&argc, argv);
  // CELLSCOPE_TEST_EXCLUDE: gtest patterns (a:b) taken out of whatever the filter selects; the
  // sanitizer stage of packaging/setup.sh leaves out the long runs that only repeat arithmetic the
  // other tests of the file already cover under the sanitizers (tests/README.md).
  if (const char* ex = std::getenv("CELLSCOPE_TEST_EXCLUDE"); ex && *ex) {
    std::string& f = ::testing::GTEST_FLAG(filter);
    f += (f.find('-') == std::string::npos ? "-" : ":") + std::string(ex);
  }
  cs::install_cpu_cache();  // as cellscope-cli and the workbench run (util/cpu_cache.h)
  // Every bench process (and its Python peer) measures its large-GEMM rate for 0.1 s, not 1 s:
  // the tests check how the figures are made and reported, not the machine (docs/ENVIRONMENT.md).
  ::setenv("CELLSCOPE_BENCH_GEMM_SECONDS", "0.1", 0);
  cstest::temp_dir();  // created before the first test, removed after the last
  const int rc = RUN_ALL_TESTS();
  // A filter that selects nothing (a renamed suite) must not pass silently.
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "no test matched the filter '%s'\n", ::testing::GTEST_FLAG(filter).c_str());
    return 1;
  }
  return rc;
}
