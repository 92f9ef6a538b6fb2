// The CLI zygote (cli_zygote.h).
#include "cli_zygote.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "program.h"     // cli::program_main: cellscope-cli-full's main()
#include "util/paths.h"  // cs::set_executable_path

extern char** environ;

namespace cstest::zygote {
namespace {

// The variables the process's libraries read when they are loaded, not when the program asks:
// a forked process keeps what the test process started with, so a change executes the program.
bool read_at_load(const std::string& name) {
  static const char* const prefixes[] = {"OMP_",     "GOMP_",  "KMP_",    "OPENBLAS_", "GOTO", "MKL_",   "BLIS_",
                                         "ASAN_",    "UBSAN_", "LSAN_",   "MALLOC_",   "LD_",  "GLIBC_", "TORCH_",
                                         "PYTORCH_", "DNNL_",  "ONEDNN_", "CUDA_",     "LIBC_"};
  for (const char* p : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}
std::map<std::string, std::string> load_env() {
  std::map<std::string, std::string> m;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos && read_at_load(kv.substr(0, eq))) m[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return m;
}

struct Reply {
  int kind;  // 'S': started (pid, or -errno), 'E': ended (pid, wait status)
  int pid;
  int status;
};

constexpr size_t kMaxRequest = 1 << 20;

std::mutex g_mu;
int g_sock = -1;  // this process's end; -1: no zygote
std::string g_state = "off: not started";
std::string g_program;
std::map<std::string, std::string> g_load_env;
std::set<pid_t> g_pids;        // made by the zygote, not yet reaped
std::map<pid_t, int> g_ended;  // their wait statuses, reported and not yet reaped

int thread_count() {
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

// ---- the zygote's side -------------------------------------------------------------------------

[[noreturn]] void run_child(const std::vector<std::string>& parts, const int* fds, const sigset_t& mask) {
  // parts: cwd, program, argc, argv..., environment...
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  for (int i = 0; i < 3; ++i)
    if (::dup2(fds[i], i) < 0) ::_exit(126);
  ::close_range(3, ~0U, 0);
  if (::chdir(parts[0].c_str()) != 0) ::_exit(126);
  const size_t argc = std::stoul(parts[2]);
  // The environment's strings stay reachable from a global: the program replaces some of them
  // (setenv), and a replaced putenv string would otherwise be a leak to LeakSanitizer, where an
  // executed program's strings live on its stack.
  // (Never destroyed: a static vector's destructor runs in exit() before LeakSanitizer looks.)
  static auto* env = new std::vector<char*>;
  ::clearenv();
  for (size_t i = 3 + argc; i < parts.size(); ++i) {
    env->push_back(::strdup(parts[i].c_str()));
    ::putenv(env->back());
  }
  cs::set_executable_path(parts[1]);
  ::prctl(PR_SET_NAME, "cellscope-cli", 0, 0, 0);
  // Kept where LeakSanitizer's exit check sees them (a global, never destroyed), as a
  // program's argv is.
  static auto* argv = new std::vector<char*>;
  for (size_t i = 0; i < argc; ++i) argv->push_back(::strdup(parts[3 + i].c_str()));
  argv->push_back(nullptr);
  // exit(), not _exit(): as when main() returns (streams flushed, LeakSanitizer's check).
  std::exit(cli::program_main(static_cast<int>(argc), argv->data()));
}

void send_reply(int sock, int kind, int pid, int status) {
  const Reply r{kind, pid, status};
  ::send(sock, &r, sizeof r, MSG_NOSIGNAL);
}

[[noreturn]] void serve(int sock, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != parent) ::_exit(0);
  // Standard streams to /dev/null: the zygote writes nothing, and must not hold the test
  // process's output open (CTest reads it to the end).
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; i < 3 && null >= 0; ++i) ::dup2(null, i);
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, &old);
  const int sfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) ::_exit(1);
  static std::vector<char> buf(kMaxRequest);  // static, as `parts`: reachable in the forked process
  for (;;) {
    pollfd p[2] = {{sock, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      ::_exit(1);
    }
    if (p[1].revents & POLLIN) {
      signalfd_siginfo si;
      while (::read(sfd, &si, sizeof si) > 0) {
      }
      int st = 0;
      pid_t pid;
      while ((pid = ::waitpid(-1, &st, WNOHANG)) > 0) send_reply(sock, 'E', pid, st);
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char ctl[CMSG_SPACE(3 * sizeof(int))];
    iovec iov{buf.data(), buf.size()};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    const ssize_t n = ::recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    if (n <= 0) ::_exit(0);  // the test process has ended
    int fds[3] = {-1, -1, -1};
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(3 * sizeof(int)))
        std::memcpy(fds, CMSG_DATA(c), sizeof fds);
    static std::vector<std::string> parts;
    parts.clear();
    for (size_t i = 0; i < static_cast<size_t>(n);) {
      const size_t end = std::string(buf.data() + i, static_cast<size_t>(n) - i).find('\0');
      if (end == std::string::npos) break;
      parts.emplace_back(buf.data() + i, end);
      i += end + 1;
    }
    const bool ok = fds[2] >= 0 && parts.size() >= 3 && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
                    parts.size() >= 3 + std::stoul(parts[2]);
    pid_t pid = ok ? ::fork() : -1;
    if (pid == 0) {
      ::close(sock);
      ::close(sfd);
      run_child(parts, fds, old);
    }
    const int e = errno;
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
    send_reply(sock, 'S', pid > 0 ? pid : -(ok ? e : EINVAL), 0);
  }
}

// ---- the test process's side --------------------------------------------------------------------

// Reads the replies there are (waits up to timeout_ms for the first); false when the zygote is gone.
bool read_replies(int timeout_ms, Reply* started) {
  for (;;) {
    pollfd p{g_sock, POLLIN, 0};
    const int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return true;
    Reply rep{};
    const ssize_t n = ::recv(g_sock, &rep, sizeof rep, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
    if (n != sizeof rep) return true;
    if (rep.kind == 'E') {
      g_ended[rep.pid] = rep.status;
    } else if (rep.kind == 'S' && started) {
      *started = rep;
      return true;
    }
    timeout_ms = 0;
  }
}

void stop_locked(const std::string& why) {
  if (g_sock >= 0) ::close(g_sock);
  g_sock = -1;
  g_state = "off: " + why;
}

}  // namespace

void start(const std::string& program) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sock >= 0) return;
  if (const char* e = std::getenv("CELLSCOPE_TEST_EXEC"); e && std::string(e) == "1") {
    g_state = "off: CELLSCOPE_TEST_EXEC=1";
    return;
  }
  if (::access(program.c_str(), X_OK) != 0) {
    g_state = "off: " + program + " is not there";
    return;
  }
  if (const int n = thread_count(); n != 1) {
    g_state = "off: the test process has " + std::to_string(n) + " threads at its start";
    return;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    g_state = std::string("off: socketpair: ") + std::strerror(errno);
    return;
  }
  const int size = static_cast<int>(kMaxRequest) + 4096;
  ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  ::setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  const pid_t parent = ::getpid();
  const pid_t z = ::fork();
  if (z < 0) {
    ::close(sv[0]), ::close(sv[1]);
    g_state = std::string("off: fork: ") + std::strerror(errno);
    return;
  }
  if (z == 0) {
    ::close(sv[0]);
    serve(sv[1], parent);
  }
  ::close(sv[1]);
  g_sock = sv[0];
  g_program = program;
  g_load_env = load_env();
  g_state = "on";
}

pid_t spawn(const std::string& argv0, const std::vector<std::string>& args, int in, int out, int err,
            std::string* why) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto no = [&](const std::string& w) {
    if (why) *why = w;
    return pid_t(-1);
  };
  if (g_sock < 0) return no(g_state);
  if (const char* e = std::getenv("CELLSCOPE_TEST_EXEC"); e && std::string(e) == "1")
    return no("CELLSCOPE_TEST_EXEC=1");
  if (load_env() != g_load_env) return no("a variable read when the libraries load has changed");
  std::string msg;
  auto put = [&](const std::string& s) {
    msg += s;
    msg += '\0';
  };
  std::vector<char> cwd(4096);
  if (!::getcwd(cwd.data(), cwd.size())) return no("getcwd failed");
  put(cwd.data());
  put(g_program);
  put(std::to_string(args.size() + 1));
  put(argv0);
  for (const auto& a : args) put(a);
  for (char** e = environ; e && *e; ++e) put(*e);
  if (msg.size() > kMaxRequest) return no("the arguments and environment are too large");
  const int fds[3] = {in, out, err};
  char ctl[CMSG_SPACE(sizeof fds)];
  std::memset(ctl, 0, sizeof ctl);
  iovec iov{msg.data(), msg.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  if (::sendmsg(g_sock, &m, MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size())) {
    const std::string w = std::string("the zygote cannot be reached: ") + std::strerror(errno);
    stop_locked(w);
    return no(w);
  }
  Reply started{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (started.kind != 'S') {
    if (!read_replies(1000, &started)) {
      stop_locked("the zygote has ended");
      return no(g_state);
    }
    if (started.kind != 'S' && std::chrono::steady_clock::now() > deadline) {
      stop_locked("the zygote did not answer in 60 s");
      return no(g_state);
    }
  }
  if (started.pid <= 0) return no(std::string("the zygote could not fork: ") + std::strerror(-started.pid));
  g_pids.insert(started.pid);
  return started.pid;
}

bool owns(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_pids.count(pid) > 0;
}

bool reap(pid_t pid, int* status, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      if (g_sock >= 0 && !read_replies(0, nullptr)) stop_locked("the zygote has ended");
      auto it = g_ended.find(pid);
      if (it != g_ended.end()) {
        *status = it->second;
        g_ended.erase(it);
        g_pids.erase(pid);
        return true;
      }
      if (g_sock < 0) {  // no zygote to report it: ended as far as anyone can tell
        *status = W_EXITCODE(0, SIGKILL);
        g_pids.erase(pid);
        return true;
      }
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{-1, POLLIN, 0};
    {
      std::lock_guard<std::mutex> lock(g_mu);
      p.fd = g_sock;
    }
    ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 20)));
  }
}

std::string state() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state;
}

}  // namespace cstest::zygote
