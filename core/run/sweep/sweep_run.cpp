// A sweep's state on disk and its one-process runner (several processes: sweep_jobs.cpp).
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

namespace sweep_internal {

std::string run_status(const std::string& run_dir) {
  if (run_dir.empty() || !file_exists(join_path(run_dir, "summary.json"))) return "";
  try {
    return RunStore(run_dir).read_summary().status;
  } catch (...) {
    return "";
  }
}

std::string absolute_dir(const std::string& p) {
  std::string a = std::filesystem::absolute(p).lexically_normal().string();
  while (a.size() > 1 && a.back() == '/') a.pop_back();
  return a;
}

}  // namespace sweep_internal

// ------------------------------------------------------------------ state

std::string sweep_dir(const std::string& workspace, const std::string& name) {
  return join_path(join_path(workspace.empty() ? default_workspace() : workspace, "sweeps"), name);
}

std::map<std::string, SweepPointState> read_sweep_state(const std::string& dir) {
  std::map<std::string, SweepPointState> out;
  const std::string p = join_path(dir, "state.json");
  if (!file_exists(p)) return out;
  json j = sweep_internal::parse_json_file(p);
  const json pts = j.value("points", json::object());  // a named copy: items() of a temporary dangles
  for (auto& [id, v] : pts.items())
    out[id] = {v.value("run_dir", std::string()), v.value("status", std::string("pending"))};
  return out;
}

namespace {

// Several processes update state.json (one entry each): read-modify-write under
// <dir>/state.lock, so no update is lost; readers see whole files (atomic_write).
void update_state(const std::string& dir, const std::string& id, const SweepPointState& st) {
  sweep_internal::FdLock l;
  if (!l.take(join_path(dir, "state.lock"), LOCK_EX))
    throw UserError("cannot lock '" + join_path(dir, "state.lock") + "': " + std::strerror(errno));
  auto all = read_sweep_state(dir);
  all[id] = st;
  json pts = json::object();
  for (auto& [k, s] : all) pts[k] = {{"run_dir", s.run_dir}, {"status", s.status}};
  atomic_write(join_path(dir, "state.json"), json{{"points", pts}, {"updated", now_iso()}}.dump(2) + "\n");
}

// last.pt or a step_<N>.pt: a run that lost last.pt is resumed from its newest step_<N>.pt
// (Trainer::resume), never removed as one interrupted before its first checkpoint.
bool has_checkpoint(const std::string& run_dir) {
  if (run_dir.empty()) return false;
  const RunStore store(run_dir);
  return file_exists(join_path(store.checkpoint_dir(), "last.pt")) || !store.checkpoint_steps().empty();
}

// The run directory of a point: <workspace>/<time>-<task>-<cell>-<sweep>-p<index>. Unique
// across concurrent processes (new_run_dir's name is not: two workers starting the same
// cell in the same second would pick the same name), since a point runs in one process at a
// time (its lock) and sweep names are unique in a workspace.
std::string point_run_dir(const std::string& ws, const SweepSpec& spec, const SweepPoint& p) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  const std::string base =
      join_path(ws, std::string(buf) + "-" + p.config["task"].value("name", "task") + "-" +
                        p.config["model"].value("cell", "cell") + "-" + spec.name + "-p" + std::to_string(p.index));
  std::string d = base;
  for (int i = 2; dir_exists(d) || file_exists(d); ++i) d = base + "-" + std::to_string(i);
  return d;
}

// A point's run directory left without a checkpoint by a process killed before its first
// checkpoint holds nothing to resume: it is removed (when no process writes it) so that the point
// keeps one run directory. One whose checkpoints were lost after it had history is kept.
void discard_unresumable_run(const std::string& run_dir, const std::string& tag,
                             const std::function<void(const std::string&)>& log) {
  if (run_dir.empty() || !dir_exists(run_dir) || has_checkpoint(run_dir)) return;
  try {
    RunStore store(run_dir);
    store.lock_for_writing();  // UserError when another process writes it: leave it alone
    // A run whose checkpoints were lost still holds its history: never removed (the point
    // starts over in a new directory and this one stays for the user to look at or fork).
    std::string lost;
    try {
      lost = history_without_checkpoint(store);
    } catch (const UserError& e) {
      lost = std::string("its config.json or summary.json cannot be read: ") + e.what();
    }
    if (!lost.empty()) {
      if (log)
        log(tag + ": kept " + run_dir + " (" + lost +
            "; nothing in it was changed); the point starts over in a new run directory");
      return;
    }
    // Only what the run wrote goes: a user's file in it keeps the directory (#52).
    const std::string foreign = store.remove_if_only_run_files();
    if (!foreign.empty()) {
      if (log)
        log(tag + ": kept " + run_dir + " (interrupted before its first checkpoint, but it holds '" + foreign +
            "', which the run did not write; nothing in it was changed); the point starts over in a new run directory");
      return;
    }
    if (log) log(tag + ": removed " + run_dir + " (interrupted before its first checkpoint; the point starts over)");
  } catch (const UserError& e) {
    if (log) log(tag + ": left " + run_dir + " (" + e.what() + "); the point starts over in a new run directory");
  }
}

}  // namespace

std::pair<int, int> parse_worker_share(const std::string& text) {
  const auto slash = text.find('/');
  auto whole = [](const std::string& x, int* v) {
    if (x.empty() || x.size() > 9) return false;
    for (char c : x)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    *v = std::stoi(x);
    return true;
  };
  int i = 0, n = 0;
  if (slash == std::string::npos || !whole(text.substr(0, slash), &i) || !whole(text.substr(slash + 1), &n))
    throw UserError("--worker '" + text +
                    "': expected I/N, this worker's index I (0-based) and the number of workers N, e.g. 0/4");
  if (n < 1) throw UserError("--worker '" + text + "': the number of workers N must be at least 1");
  if (i >= n)
    throw UserError("--worker '" + text + "': the index I must be 0.." + std::to_string(n - 1) +
                    " (0-based, like SLURM_PROCID)");
  return {i, n};
}

bool point_in_share(int index, int worker, int workers, const std::vector<int>& points) {
  if (workers > 1 && index % workers != worker) return false;
  return points.empty() || std::find(points.begin(), points.end(), index) != points.end();
}

std::string prepare_sweep_dir(const SweepSpec& spec, const std::string& workspace) {
  const std::string dir = sweep_dir(workspace.empty() ? default_workspace() : workspace, spec.name);
  const std::string spec_path = join_path(dir, "sweep.json");
  if (file_exists(spec_path)) {
    const json old = sweep_internal::parse_json_file(spec_path);
    json a = old, b = spec.source;
    for (auto* x : {&a, &b}) x->erase("notes"), x->erase("paper");  // words about the runs, not what runs
    if (a != b)
      throw UserError("a different sweep named '" + spec.name + "' exists in " + dir +
                      " (rename this one, or remove that directory to start over)");
  } else {
    make_dirs(dir);
    atomic_write(spec_path, spec.source.dump(2) + "\n");  // concurrent creators write the same bytes
  }
  return dir;
}

SweepRunResult run_sweep(const SweepSpec& spec, const SweepRunOptions& o) {
  const auto points = expand_sweep(spec);  // every point checked before anything is written
  // Absolute: state.json's run directories are read by processes with other working directories.
  const std::string ws = sweep_internal::absolute_dir(o.workspace.empty() ? default_workspace() : o.workspace);
  if (o.workers < 1 || o.worker < 0 || o.worker >= o.workers) throw UserError("worker share out of range");
  for (int i : o.points)
    if (i < 0 || i >= static_cast<int>(points.size()))
      throw UserError("--point " + std::to_string(i) + ": the sweep '" + spec.name + "' has points 0.." +
                      std::to_string(points.size() - 1));
  SweepRunResult res;
  res.total = static_cast<int>(points.size());
  res.dir = prepare_sweep_dir(spec, ws);
  // The whole sweep: one process (a second `sweep run`, or the window, is refused instead of
  // training the same points twice). A share: shared, beside other shares. The lock goes
  // with the process.
  const bool whole = o.workers == 1 && o.points.empty();
  sweep_internal::FdLock lock;
  if (!lock.take(join_path(res.dir, "lock"), (whole ? LOCK_EX : LOCK_SH) | LOCK_NB))
    throw UserError("the sweep '" + spec.name + "' is being run by another process" +
                    (whole ? std::string(" (") : std::string(" as a whole (")) + res.dir + "/lock)");
  make_dirs(join_path(res.dir, "points"));
  const int n = res.total;
  for (const auto& p : points) res.share += point_in_share(p.index, o.worker, o.workers, o.points);
  for (const auto& p : points) {
    if (!point_in_share(p.index, o.worker, o.workers, o.points)) continue;
    if (o.control && o.control->stop.load()) {
      res.stopped = true;
      break;
    }
    const std::string tag =
        "point " + std::to_string(p.index) + " (" + std::to_string(p.index + 1) + "/" + std::to_string(n) + ") " + p.id;
    sweep_internal::FdLock point_lock;
    if (!point_lock.take(join_path(join_path(res.dir, "points"), std::to_string(p.index) + ".lock"),
                         LOCK_EX | LOCK_NB)) {
      ++res.busy;
      if (o.on_log) o.on_log(tag + ": being run by another process, skipped");
      continue;
    }
    // Read under the point's lock: another share may have finished it a moment ago.
    SweepPointState st;
    {
      auto state = read_sweep_state(res.dir);
      auto it = state.find(p.id);
      if (it != state.end()) st = it->second;
    }
    // The run directory is the truth (a process killed between the run's summary and
    // the state file leaves the state one step behind).
    const std::string rs = sweep_internal::run_status(st.run_dir);
    if (rs == "finished" || rs == "failed") {
      if (st.status != rs) update_state(res.dir, p.id, {st.run_dir, rs});
      ++res.done;
      ++res.skipped;
      if (rs == "failed") ++res.failed;
      if (o.on_log) o.on_log(tag + ": " + rs + " already (" + st.run_dir + ")");
      continue;
    }
    LaunchOptions lo;
    lo.workspace = ws;
    lo.threads = o.threads;
    lo.default_threads = o.default_threads;
    const bool can_resume = has_checkpoint(st.run_dir);
    json raw = p.config;
    if (can_resume) {
      lo.resume_dir = st.run_dir;
      raw = json::object();
    } else {
      discard_unresumable_run(st.run_dir, tag, o.on_log);
      // Recorded before the directory exists: a kill at any instant leaves the state naming
      // the point's only run directory (or one not created yet).
      lo.run_dir = point_run_dir(ws, spec, p);
      st.run_dir = lo.run_dir;
      update_state(res.dir, p.id, {st.run_dir, "running"});
    }
    LaunchedRun launched = start_run(raw, lo);
    st.run_dir = launched.store->dir();
    st.status = "running";
    update_state(res.dir, p.id, st);
    if (o.on_point_start) o.on_point_start(p, n, launched.resumed, st.run_dir);
    TrainerCallbacks cb;
    if (o.on_progress) cb.on_progress = [&](const Progress& pr) { o.on_progress(p, pr); };
    if (o.on_metrics) cb.on_metrics = [&](const MetricsRecord& r) { o.on_metrics(p, r); };
    if (o.on_log) cb.on_log = o.on_log;
    TrainOutcome outcome = launched.trainer->run(o.control, cb);
    launched.trainer.reset();
    st.status = outcome.summary.status;
    update_state(res.dir, p.id, st);
    ++res.ran;
    if (o.on_point_done) o.on_point_done(p, n, outcome.summary);
    if (st.status == "stopped") {
      res.stopped = true;
      break;
    }
    ++res.done;
    if (st.status == "failed") ++res.failed;
  }
  return res;
}

}  // namespace cs
