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

namespace cs {

namespace {

json parse_json_file(const std::string& path) {
  try {
    return parse_json(read_file(path), "'" + path + "'");
  } catch (const json::parse_error& e) {
    throw UserError("'" + path + "' is not valid JSON: " + json_error_text(e));
  }
}

std::string value_label(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// Names that are safe as a directory name.
bool valid_sweep_name(const std::string& n) {
  if (n.empty() || n.size() > 100 || n[0] == '.') return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

SweepAxis parse_axis(const json& a, const std::string& where) {
  SweepAxis axis;
  if (!a.is_object())
    throw UserError(where + ": expected {\"option\": PATH, \"values\": [...]} or {\"name\": N, \"values\": [...]}");
  const std::string option = a.value("option", std::string());
  axis.name = a.value("name", option);
  if (axis.name.empty()) throw UserError(where + ": an axis needs \"option\" (an option path) or \"name\"");
  if (!a.contains("values") || !a["values"].is_array() || a["values"].empty())
    throw UserError(where + ".values: expected a non-empty array");
  const json& vals = a["values"];
  for (size_t i = 0; i < vals.size(); ++i) {
    const json& v = vals[i];
    const std::string w = where + ".values[" + std::to_string(i) + "]";
    if (v.is_object()) {
      if (!v.contains("set") || !v["set"].is_object())
        throw UserError(w + ": a named value needs \"set\": {\"section.key\": value}");
      axis.labels.push_back(v.value("label", v["set"].dump()));
      axis.sets.push_back(v["set"]);
    } else {
      if (option.empty()) throw UserError(w + ": a plain value needs the axis's \"option\" path");
      axis.labels.push_back(value_label(v));
      axis.sets.push_back(json{{option, v}});
    }
    for (auto& [path, _] : axis.sets.back().items())
      if (path.find('.') == std::string::npos)
        throw UserError(w + ": '" + path + "' is not an option path (section.key)");
  }
  std::set<std::string> seen;
  for (auto& l : axis.labels)
    if (!seen.insert(l).second) throw UserError(where + ": the value label '" + l + "' appears twice");
  return axis;
}

std::vector<std::string> name_list(const json& j, const std::string& where) {
  std::vector<std::string> out;
  if (j.is_null()) return out;
  if (j.is_string()) return {j.get<std::string>()};
  if (!j.is_array()) throw UserError(where + ": expected an axis name or a list of them");
  for (auto& x : j) {
    if (!x.is_string()) throw UserError(where + ": expected axis names (strings)");
    out.push_back(x.get<std::string>());
  }
  return out;
}


// The grid's points in run order (first axis slowest, seeds innermost); no config yet.
std::vector<SweepPoint> enumerate_points(const SweepSpec& spec) {
  std::vector<SweepPoint> out;
  const size_t A = spec.axes.size();
  std::vector<int> idx(A, 0);
  while (true) {
    for (int64_t seed : spec.seeds) {
      SweepPoint p;
      p.index = static_cast<int>(out.size());
      p.value_index = idx;
      p.seed = seed;
      for (size_t a = 0; a < A; ++a) {
        p.labels.push_back(spec.axes[a].labels[idx[a]]);
        p.id += spec.axes[a].name + "=" + p.labels.back() + ",";
      }
      p.id += "seed=" + std::to_string(seed);
      out.push_back(std::move(p));
    }
    bool wrapped = true;  // advance the index like an odometer
    for (size_t a = A; a-- > 0;) {
      if (++idx[a] < static_cast<int>(spec.axes[a].labels.size())) {
        wrapped = false;
        break;
      }
      idx[a] = 0;
    }
    if (wrapped) break;
  }
  return out;
}

}  // namespace

void set_option_path(json& cfg, const std::string& path, const json& value) {
  const auto dot = path.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == path.size())
    throw UserError("'" + path + "' is not an option path (section.key, e.g. model.hidden)");
  const std::string section = path.substr(0, dot), key = path.substr(dot + 1);
  if (!cfg.is_object()) throw UserError("the base configuration is not a JSON object");
  if (cfg.contains(section) && cfg[section].is_string() && section == "task") {
    // The short form "task": "char_lm" -> {"name": "char_lm"}.
    cfg[section] = json{{"name", cfg[section].get<std::string>()}};
  }
  if (value.is_null()) {
    if (cfg.contains(section) && cfg[section].is_object()) cfg[section].erase(key);
    return;
  }
  if (!cfg.contains(section) || cfg[section].is_null()) cfg[section] = json::object();
  if (!cfg[section].is_object()) throw UserError(path + ": the section '" + section + "' is not an object");
  cfg[section][key] = value;
}

SweepSpec SweepSpec::from_json(const json& j) {
  if (!j.is_object()) throw UserError("a sweep spec is a JSON object {name, base, grid, seeds, table}");
  SweepSpec s;
  s.name = j.value("name", std::string());
  if (!valid_sweep_name(s.name))
    throw UserError(
        "name: expected a sweep name of letters, digits, '-', '_' or '.' (it names the directory sweeps/<name>)");
  s.notes = j.value("notes", std::string());
  if (!j.contains("base")) throw UserError("base: missing (a configuration object or a preset name)");
  const json& b = j["base"];
  if (b.is_string()) {
    const std::string preset = join_path(join_path(resources_dir(), "presets"), b.get<std::string>() + ".json");
    if (file_exists(b.get<std::string>())) s.base = parse_json_file(b.get<std::string>());
    else if (file_exists(preset)) s.base = parse_json_file(preset);
    else throw UserError("base: '" + b.get<std::string>() + "' is neither a config file nor a preset");
  } else if (b.is_object()) {
    s.base = b;
  } else {
    throw UserError("base: expected a configuration object or a preset name");
  }
  s.base.erase("name");
  s.base.erase("notes");
  if (j.contains("set")) {
    if (!j["set"].is_object()) throw UserError("set: expected {\"section.key\": value, ...}");
    for (auto& [p, v] : j["set"].items()) set_option_path(s.base, p, v);
  }
  const json grid = j.value("grid", json::object());
  if (grid.is_object()) {
    for (auto& [path, vals] : grid.items())
      s.axes.push_back(parse_axis(json{{"option", path}, {"values", vals}}, "grid." + path));
  } else if (grid.is_array()) {
    for (size_t i = 0; i < grid.size(); ++i) s.axes.push_back(parse_axis(grid[i], "grid[" + std::to_string(i) + "]"));
  } else {
    throw UserError("grid: expected {\"section.key\": [values]} or a list of axes");
  }
  std::set<std::string> names;
  for (auto& a : s.axes)
    if (a.name == "seed" || !names.insert(a.name).second)
      throw UserError("grid: the axis name '" + a.name + "' is used twice (or is 'seed')");
  const json seeds = j.value("seeds", json::array({1}));
  if (!seeds.is_array() || seeds.empty()) throw UserError("seeds: expected a non-empty list of integers");
  for (auto& x : seeds) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0) throw UserError("seeds: expected non-negative integers");
    s.seeds.push_back(x.get<int64_t>());
  }
  if (std::set<int64_t>(s.seeds.begin(), s.seeds.end()).size() != s.seeds.size())
    throw UserError("seeds: a seed appears twice");
  const json t = j.value("table", json::object());
  if (!t.is_object()) throw UserError("table: expected an object {rows, cols, metric, best}");
  s.table.rows = name_list(t.value("rows", json()), "table.rows");
  s.table.cols = name_list(t.value("cols", json()), "table.cols");
  s.table.metric = t.value("metric", std::string("test"));
  s.table.best = t.value("best", std::string("column"));
  if (t.contains("higher_is_better")) s.table.higher_is_better = t["higher_is_better"].get<bool>() ? 1 : 0;
  if (s.table.best != "column" && s.table.best != "row" && s.table.best != "all" && s.table.best != "none")
    throw UserError("table.best: expected column, row, all or none");
  const std::string m = s.table.metric;
  if (!(m == "test" || m == "valid" || m.rfind("test.", 0) == 0 || m.rfind("valid.", 0) == 0))
    throw UserError("table.metric: expected test, valid, test.<key> or valid.<key> (e.g. test.accuracy)");
  for (auto* v : {&s.table.rows, &s.table.cols})
    for (auto& n : *v)
      if (!names.count(n)) throw UserError("table: '" + n + "' is not an axis of the grid");
  // Axes named neither in rows nor in cols join the rows (in grid order).
  for (auto& a : s.axes)
    if (std::find(s.table.rows.begin(), s.table.rows.end(), a.name) == s.table.rows.end() &&
        std::find(s.table.cols.begin(), s.table.cols.end(), a.name) == s.table.cols.end())
      s.table.rows.push_back(a.name);
  s.source = j;
  s.source["base"] = s.base;
  s.source.erase("set");  // already applied to base
  return s;
}

std::vector<json> bundled_sweeps() {
  std::vector<json> out;
  const std::string dir = join_path(resources_dir(), "sweeps");
  if (!dir_exists(dir)) return out;
  for (auto& n : list_dir(dir)) {
    if (n.size() < 6 || n.substr(n.size() - 5) != ".json") continue;
    const std::string path = join_path(dir, n), name = n.substr(0, n.size() - 5);
    // A file that does not load is listed with its error (an installation problem to see, not
    // to hide); `sweep run NAME` then gives the same message.
    try {
      const SweepSpec spec = load_sweep_spec(path);
      out.push_back({{"name", name}, {"notes", spec.source.value("notes", "")}, {"path", path}});
    } catch (const std::exception& e) {
      out.push_back({{"name", name}, {"notes", ""}, {"path", path}, {"error", e.what()}});
    }
  }
  return out;
}

SweepSpec load_sweep_spec(const std::string& arg) {
  std::string path = arg;
  if (dir_exists(arg) && file_exists(join_path(arg, "sweep.json"))) path = join_path(arg, "sweep.json");
  else if (!file_exists(arg)) {
    const std::string b = join_path(join_path(resources_dir(), "sweeps"), arg + ".json");
    if (!file_exists(b))
      throw UserError("'" + arg + "' is neither a sweep spec file nor a bundled sweep (cellscope-cli sweep list)");
    path = b;
  }
  try {
    return SweepSpec::from_json(parse_json_file(path));
  } catch (const UserError& e) {
    throw UserError(path + ": " + e.what());
  }
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec) {
  std::vector<SweepPoint> out = enumerate_points(spec);
  std::vector<std::string> problems;
  for (auto& p : out) {
    json raw = spec.base;
    try {
      for (size_t a = 0; a < spec.axes.size(); ++a)
        for (auto& [path, v] : spec.axes[a].sets[p.value_index[a]].items()) set_option_path(raw, path, v);
      set_option_path(raw, "training.seed", p.seed);
      auto errs = validate_config(raw);
      for (auto& e : errs) problems.push_back("point " + p.id + ": " + e.str());
      if (errs.empty()) p.config = resolve_config(raw);
    } catch (const UserError& e) {
      problems.push_back("point " + p.id + ": " + e.what());
    }
  }
  if (!problems.empty()) {
    std::string msg = "sweep '" + spec.name + "': " + std::to_string(problems.size()) + " invalid point(s):";
    for (size_t i = 0; i < problems.size() && i < 20; ++i) msg += "\n  " + problems[i];
    if (problems.size() > 20) msg += "\n  ...";
    throw UserError(msg);
  }
  return out;
}

// ------------------------------------------------------------------ state

std::string sweep_dir(const std::string& workspace, const std::string& name) {
  return join_path(join_path(workspace.empty() ? default_workspace() : workspace, "sweeps"), name);
}

std::map<std::string, SweepPointState> read_sweep_state(const std::string& dir) {
  std::map<std::string, SweepPointState> out;
  const std::string p = join_path(dir, "state.json");
  if (!file_exists(p)) return out;
  json j = parse_json_file(p);
  const json pts = j.value("points", json::object());  // a named copy: items() of a temporary dangles
  for (auto& [id, v] : pts.items())
    out[id] = {v.value("run_dir", std::string()), v.value("status", std::string("pending"))};
  return out;
}

namespace {

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

// Several processes update state.json (one entry each): read-modify-write under
// <dir>/state.lock, so no update is lost; readers see whole files (atomic_write).
void update_state(const std::string& dir, const std::string& id, const SweepPointState& st) {
  FdLock l;
  if (!l.take(join_path(dir, "state.lock"), LOCK_EX))
    throw UserError("cannot lock '" + join_path(dir, "state.lock") + "': " + std::strerror(errno));
  auto all = read_sweep_state(dir);
  all[id] = st;
  json pts = json::object();
  for (auto& [k, s] : all) pts[k] = {{"run_dir", s.run_dir}, {"status", s.status}};
  atomic_write(join_path(dir, "state.json"), json{{"points", pts}, {"updated", now_iso()}}.dump(2) + "\n");
}

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
  const std::string base = join_path(ws, std::string(buf) + "-" + p.config["task"].value("name", "task") + "-" +
                                             p.config["model"].value("cell", "cell") + "-" + spec.name + "-p" +
                                             std::to_string(p.index));
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
    std::error_code ec;
    std::filesystem::remove_all(run_dir, ec);
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
    const json old = parse_json_file(spec_path);
    json a = old, b = spec.source;
    for (auto* x : {&a, &b}) x->erase("notes");
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
  const std::string ws = absolute_dir(o.workspace.empty() ? default_workspace() : o.workspace);
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
  FdLock lock;
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
    const std::string tag = "point " + std::to_string(p.index) + " (" + std::to_string(p.index + 1) + "/" +
                            std::to_string(n) + ") " + p.id;
    FdLock point_lock;
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
    const std::string rs = run_status(st.run_dir);
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
  const std::string ws = absolute_dir(o.workspace.empty() ? default_workspace() : o.workspace);
  SweepRunResult res;
  res.total = static_cast<int>(points.size());
  res.dir = prepare_sweep_dir(spec, ws);
  {
    // Refused at once when the whole sweep is being run by one process.
    FdLock probe;
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
      const std::string rs = it == state.end() ? "" : run_status(it->second.run_dir);
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
      std::vector<std::string> args = {"sweep", "run", res.dir, "--workspace", ws, "--point", std::to_string(p.index),
                                       "--threads", std::to_string(threads), "--quiet"};
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
      std::string status = run_status(run_dir);
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

// ------------------------------------------------------------------ results

SweepResults read_sweep_results(const std::string& arg, const std::string& workspace, const std::string& metric) {
  SweepResults r;
  r.dir = arg;
  if (!file_exists(join_path(arg, "sweep.json"))) r.dir = sweep_dir(workspace, arg);
  if (!file_exists(join_path(r.dir, "sweep.json")))
    throw UserError("no sweep '" + arg + "' (neither a sweep directory nor " + r.dir + ")");
  r.spec = SweepSpec::from_json(parse_json_file(join_path(r.dir, "sweep.json")));
  if (!metric.empty()) {
    json src = r.spec.source;
    src["table"]["metric"] = metric;
    r.spec = SweepSpec::from_json(src);
  }
  const std::string m = r.spec.table.metric;
  const auto dot = m.find('.');
  const std::string split = m.substr(0, dot), key = dot == std::string::npos ? "" : m.substr(dot + 1);
  auto state = read_sweep_state(r.dir);
  // Points without validation (the table of a sweep whose base no longer validates still reads).
  const std::vector<SweepPoint> points = enumerate_points(r.spec);
  int lower_votes = 0, higher_votes = 0;
  std::string primary;
  for (auto& p : points) {
    SweepRunRecord rec;
    rec.point = p;
    auto it = state.find(p.id);
    if (it != state.end()) rec.state = it->second;
    else rec.state.status = "pending";
    if (!rec.state.run_dir.empty() && file_exists(join_path(rec.state.run_dir, "summary.json"))) {
      try {
        RunStore store(rec.state.run_dir);
        RunSummary s = store.read_summary();
        rec.state.status = s.status;
        if (s.status == "finished") {
          if (key.empty()) {
            if (split == "test" && s.has_test) rec.value = s.test_metric, rec.has_value = true;
            if (split == "valid" && s.has_best) rec.value = s.best_valid, rec.has_value = true;
            primary = s.primary_metric;
            (s.lower_is_better ? lower_votes : higher_votes)++;
          } else {
            // The last evaluation line of that split carrying the key.
            auto lines = store.read_metrics();
            for (auto l = lines.rbegin(); l != lines.rend(); ++l)
              if (l->value("eval", false) && l->value("split", std::string()) == split && l->contains(key) &&
                  (*l)[key].is_number()) {
                rec.value = (*l)[key].get<double>();
                rec.has_value = true;
                rec.decode = l->value("decode", std::string());
                break;
              }
          }
        }
      } catch (const UserError&) {
      }
    }
    r.records.push_back(std::move(rec));
  }
  if (r.spec.table.higher_is_better >= 0) r.higher_is_better = r.spec.table.higher_is_better == 1;
  else if (key.empty()) r.higher_is_better = higher_votes > lower_votes;
  else r.higher_is_better = key.find("acc") != std::string::npos || key == "f1" || key.find("f1") != std::string::npos;
  r.metric_label = split + " " + (key.empty() ? (primary.empty() ? std::string("metric") : primary) : key);
  // Which decode made the values (seq2seq BLEU/ROUGE): one -> "(beam 5, lp 1.0)"; runs written before
  // evaluations recorded it decoded greedily.
  std::set<std::string> decodes;
  bool any_decode = false;
  for (auto& rec : r.records) any_decode = any_decode || !rec.decode.empty();
  for (auto& rec : r.records)
    if (any_decode && rec.has_value) decodes.insert(rec.decode.empty() ? "greedy" : rec.decode);
  if (decodes.size() == 1) r.metric_label += " (" + *decodes.begin() + ")";
  if (decodes.size() > 1) {
    std::string all;
    for (auto& d : decodes) all += (all.empty() ? "" : "; ") + d;
    r.metric_label += " (decodes differ between runs: " + all + ")";
  }
  return r;
}

}  // namespace cs
