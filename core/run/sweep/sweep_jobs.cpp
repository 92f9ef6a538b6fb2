// A sweep run by several local processes, and the Slurm array script that runs it on a cluster.
#include "sweep/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "dist/launch.h"
#include "train/launch.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/paths.h"
#include "sweep/sweep_internal.h"

namespace cs {

// ------------------------------------------------------------------ several processes

namespace {

struct Child {
  pid_t pid = -1;
  const SweepPoint* point = nullptr;
  std::chrono::steady_clock::time_point t0;
};

pid_t spawn_point(const std::string& exe, const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError("cannot open '" + log + "': " + std::strerror(errno));
  std::string head = "# " + now_iso() + ":";
  for (auto& a : all) head += " " + a;
  head += "\n";
  ssize_t w = ::write(fd, head.data(), head.size());
  (void)w;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw UserError(std::string("cannot start a process: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Own process group: a terminal's Ctrl-C reaches the children once, through this
    // process (SIGINT forwarded); if this process dies, they stop with a checkpoint.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGINT);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(exe.c_str(), argv.data());
    std::fprintf(stderr, "cannot execute '%s': %s\n", exe.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

}  // namespace

SweepRunResult run_sweep_jobs(const SweepSpec& spec, const SweepRunOptions& o, const SweepJobsOptions& j) {
  if (j.jobs < 1) throw UserError("--jobs must be at least 1 (got " + std::to_string(j.jobs) + ")");
  const auto points = expand_sweep(spec);
  const std::string ws = sweep_internal::absolute_dir(o.workspace.empty() ? default_workspace() : o.workspace);
  SweepRunResult res;
  res.total = static_cast<int>(points.size());
  res.dir = prepare_sweep_dir(spec, ws);
  {
    // Refused at once when the whole sweep is being run by one process.
    sweep_internal::FdLock probe;
    if (!probe.take(join_path(res.dir, "lock"), LOCK_SH | LOCK_NB))
      throw UserError("the sweep '" + spec.name + "' is being run by another process (" + res.dir + "/lock)");
  }
  const std::string logs = join_path(res.dir, "logs");
  make_dirs(logs);
  const int threads = j.threads > 0 ? j.threads : threads_per_process(j.jobs);
  std::vector<const SweepPoint*> queue;
  {
    auto state = read_sweep_state(res.dir);
    for (auto& p : points) {
      if (!point_in_share(p.index, o.worker, o.workers, o.points)) continue;
      ++res.share;
      auto it = state.find(p.id);
      const std::string rs = it == state.end() ? "" : sweep_internal::run_status(it->second.run_dir);
      if (rs == "finished" || rs == "failed") {
        ++res.done;
        ++res.skipped;
        res.failed += rs == "failed";
        if (o.on_log)
          o.on_log("point " + std::to_string(p.index) + " " + p.id + ": " + rs + " already (" + it->second.run_dir +
                   ")");
      } else {
        queue.push_back(&p);
      }
    }
  }
  std::vector<Child> running;
  size_t next = 0;
  bool forwarded = false;
  for (;;) {
    const bool stop = o.control && o.control->stop.load();
    if (stop && !forwarded) {
      for (auto& c : running) ::kill(c.pid, SIGINT);
      forwarded = true;
    }
    while (!stop && next < queue.size() && static_cast<int>(running.size()) < j.jobs) {
      const SweepPoint& p = *queue[next++];
      const std::string log = join_path(logs, "point-" + std::to_string(p.index) + ".log");
      std::vector<std::string> args = {"sweep",
                                       "run",
                                       res.dir,
                                       "--workspace",
                                       ws,
                                       "--point",
                                       std::to_string(p.index),
                                       "--threads",
                                       std::to_string(threads),
                                       "--quiet"};
      Child c{spawn_point(j.exe, args, log), &p, std::chrono::steady_clock::now()};
      running.push_back(c);
      if (j.on_start) j.on_start(p, c.pid, threads, log);
    }
    if (running.empty()) break;
    bool reaped = false;
    for (size_t i = 0; i < running.size();) {
      int st = 0;
      const pid_t r = ::waitpid(running[i].pid, &st, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        ++i;
        continue;
      }
      reaped = true;
      const Child c = running[i];
      running.erase(running.begin() + static_cast<long>(i));
      const int code = r < 0 ? -1 : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
      auto state = read_sweep_state(res.dir);
      auto it = state.find(c.point->id);
      const std::string run_dir = it == state.end() ? "" : it->second.run_dir;
      std::string status = sweep_internal::run_status(run_dir);
      if (code == 3) status = "busy";  // `sweep run --point`: being run by another process
      else if (status.empty()) status = code == 0 ? "pending" : "failed";
      ++res.ran;
      if (status == "finished" || status == "failed") {
        ++res.done;
        res.failed += status == "failed";
      } else if (status == "busy") {
        ++res.busy;
      } else if (status == "stopped" || stop) {
        res.stopped = true;
      } else {
        ++res.failed;  // died while running (the next run resumes it)
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.t0).count();
      if (j.on_done) j.on_done(*c.point, status, run_dir, secs, code);
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling interval
  }
  if (next < queue.size()) res.stopped = true;
  return res;
}

// ------------------------------------------------------------------ Slurm

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

// A value for an #SBATCH line: sbatch reads these lines without a shell.
std::string sbatch_value(const std::string& option, const std::string& v) {
  if (v.empty()) throw UserError("--" + option + ": empty value");
  for (char c : v)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '#' || c == '\'' || c == '"' || c == '\\' ||
        static_cast<unsigned char>(c) < 32)
      throw UserError("--" + option + " '" + v +
                      "': spaces, quotes, '#' and control characters cannot go into an #SBATCH line");
  return v;
}

}  // namespace

std::string slurm_array_script(const SweepSpec& spec, int points, const std::string& dir, const SlurmOptions& o) {
  if (points < 1) throw UserError("the sweep '" + spec.name + "' has no points");
  if (o.cpus_per_task < 0) throw UserError("--cpus-per-task must be at least 1");
  if (o.max_running < 0) throw UserError("--max-running must be at least 1");
  const std::string out_dir = join_path(dir, "slurm");
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# Cellscope sweep '" << spec.name << "': " << points << " points, one per array task (index = point,\n"
    << "# `cellscope-cli sweep run --dry-run` lists them). Written by `cellscope-cli sweep slurm` on " << now_iso()
    << ".\n"
    << "# Submit: sbatch THIS_FILE. Resumable: a requeued or re-submitted task resumes its point's run\n"
    << "# from the last checkpoint; a finished point's task exits at once. Results, finished or not:\n"
    << "#   " << o.exe << " sweep table " << dir << "\n"
    << "#SBATCH --job-name=" << sbatch_value("job-name", o.job_name.empty() ? "cellscope-" + spec.name : o.job_name)
    << "\n"
    << "#SBATCH --array=0-" << points - 1 << (o.max_running > 0 ? "%" + std::to_string(o.max_running) : std::string())
    << "\n"
    << "#SBATCH --ntasks=1\n";
  if (o.cpus_per_task > 0) s << "#SBATCH --cpus-per-task=" << o.cpus_per_task << "\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << sbatch_value("partition", o.partition) << "\n";
  if (!o.time.empty()) s << "#SBATCH --time=" << sbatch_value("time", o.time) << "\n";
  if (!o.mem.empty()) s << "#SBATCH --mem=" << sbatch_value("mem", o.mem) << "\n";
  if (!o.account.empty()) s << "#SBATCH --account=" << sbatch_value("account", o.account) << "\n";
  s << "#SBATCH --output=" << sbatch_value("workspace", join_path(out_dir, "%A_%a.out")) << "\n"
    << "#SBATCH --open-mode=append\n"
    << "#SBATCH --requeue\n"
    << "# SIGTERM 60 s before the time limit (or on preemption): the run stops with a checkpoint and\n"
    << "# exits 75, and the task requeues itself to continue from it.\n"
    << "#SBATCH --signal=B:TERM@60\n"
    << "set -u\n"
    << "CLI=" << shell_quote(o.exe) << "\n"
    << "SWEEP=" << shell_quote(dir) << "\n"
    << "WORKSPACE=" << shell_quote(o.workspace) << "\n"
    << ": \"${SLURM_ARRAY_TASK_ID:?not an array task: submit this script with sbatch}\"\n"
    << "\"$CLI\" sweep run \"$SWEEP\" --workspace \"$WORKSPACE\" --point \"$SLURM_ARRAY_TASK_ID\" \\\n"
    << "     --threads \"${SLURM_CPUS_PER_TASK:-1}\" &\n"
    << "pid=$!\n"
    << "trap 'kill -TERM \"$pid\" 2>/dev/null' TERM\n"
    << "# a TERM interrupts `wait` (status above 128): wait again for the run's own exit status\n"
    << "while :; do\n"
    << "  rc=0; wait \"$pid\" || rc=$?\n"
    << "  if [ \"$rc\" -gt 128 ] && kill -0 \"$pid\" 2>/dev/null; then continue; fi\n"
    << "  break\n"
    << "done\n"
    << "if [ \"$rc\" -eq 75 ] && [ -n \"${SLURM_ARRAY_JOB_ID:-}\" ]; then\n"
    << "  scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"\n"
    << "fi\n"
    << "exit \"$rc\"\n";
  return s.str();
}

}  // namespace cs
