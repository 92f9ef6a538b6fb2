#include "dist/launch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "util/error.h"

namespace cs {

using Clock = std::chrono::steady_clock;

int threads_per_process(int nproc) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, nproc));
}

LocalWorkers launch_local_workers(const std::string& exe, const std::vector<std::string>& train_args, int nproc,
                                  double timeout_s, int threads) {
  if (nproc < 1) throw UserError("--nproc must be >= 1 (got " + std::to_string(nproc) + ")");
  LocalWorkers w;
  w.nproc = nproc;
  w.timeout_s = timeout_s;
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/cellscope-dist-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw UserError("cannot create a temporary directory for the rendezvous: " + std::string(std::strerror(errno)));
  w.store_dir = buf.data();
  const std::string store_file = w.store_dir + "/store";
  const int k = threads > 0 ? threads : threads_per_process(nproc);
  for (int r = 0; r < nproc; ++r) {
    std::vector<std::string> args = {exe};
    args.insert(args.end(), train_args.begin(), train_args.end());
    for (const std::string& s :
         {std::string("--rank"), std::to_string(r), std::string("--world-size"), std::to_string(nproc),
          std::string("--store-file"), store_file, std::string("--dist-timeout"), std::to_string(timeout_s),
          std::string("--threads"), std::to_string(k)})
      args.push_back(s);
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
      stop_local_workers(w);
      throw UserError("cannot start worker rank " + std::to_string(r) + ": " + std::strerror(errno));
    }
    if (pid == 0) {
      // Own process group: a terminal's Ctrl-C reaches the workers once, through the
      // launcher (stop_local_workers), not twice; and if the launcher dies the workers
      // are asked to stop (they checkpoint and exit).
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGINT);
      ::execv(exe.c_str(), argv.data());
      std::fprintf(stderr, "cannot execute '%s': %s\n", exe.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    w.pids.push_back(pid);
    w.status.push_back(0);
  }
  return w;
}

static std::string describe(int rank, pid_t pid, int st) {
  std::string s = "worker rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
  if (WIFSIGNALED(st))
    return s + " was killed by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  return s + " exited with status " + std::to_string(WEXITSTATUS(st));
}

// Reap finished workers without blocking; record the first failure (within one
// pass, a worker killed by a signal is named before one that exited with an error,
// since the survivors of a crash exit with an error themselves).
static void reap(LocalWorkers& w, int* first_fail, std::string* msg) {
  int pass_fail = -1;
  bool pass_sig = false;
  std::string pass_msg;
  for (int r = 0; r < w.nproc; ++r) {
    if (w.pids[static_cast<size_t>(r)] <= 0) continue;
    int st = 0;
    pid_t p = ::waitpid(w.pids[static_cast<size_t>(r)], &st, WNOHANG);
    if (p == 0) continue;
    if (p < 0 && errno == EINTR) continue;
    const bool sig = p > 0 && WIFSIGNALED(st);
    const int code = p < 0 ? 1 : sig ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
    w.status[static_cast<size_t>(r)] = code;
    if (code != 0 && (pass_fail < 0 || (sig && !pass_sig))) {
      pass_fail = r;
      pass_sig = sig;
      pass_msg =
          p < 0 ? "worker rank " + std::to_string(r) + " vanished" : describe(r, w.pids[static_cast<size_t>(r)], st);
    }
    w.pids[static_cast<size_t>(r)] = -1;
  }
  if (pass_fail >= 0 && first_fail && *first_fail < 0) {
    *first_fail = pass_fail;
    if (msg) *msg = pass_msg;
  }
}

bool local_workers_running(LocalWorkers& w) {
  reap(w, nullptr, nullptr);
  for (pid_t p : w.pids)
    if (p > 0) return true;
  return false;
}

void stop_local_workers(LocalWorkers& w) {
  for (pid_t p : w.pids)
    if (p > 0) ::kill(p, SIGINT);
}

int wait_local_workers(LocalWorkers& w, std::string* message) {
  int first_fail = -1;
  std::string msg;
  Clock::time_point deadline = Clock::time_point::max();
  bool termed = false;
  for (;;) {
    reap(w, &first_fail, &msg);
    bool any = false;
    for (pid_t p : w.pids) any = any || p > 0;
    if (!any) break;
    if (first_fail >= 0 && deadline == Clock::time_point::max())
      deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>((w.timeout_s + 15) * 1000));
    if (Clock::now() > deadline) {
      for (pid_t p : w.pids)
        if (p > 0) ::kill(p, termed ? SIGKILL : SIGTERM);
      if (!termed) msg += "; the other workers did not stop within the timeout and were terminated";
      termed = true;
      deadline = Clock::now() + std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling interval, not a correctness delay
  }
  std::error_code ec;
  std::filesystem::remove_all(w.store_dir, ec);
  if (message) *message = msg;
  return first_fail < 0 ? 0 : w.status[static_cast<size_t>(first_fail)];
}

}  // namespace cs
