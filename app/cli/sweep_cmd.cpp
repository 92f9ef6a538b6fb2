// `cellscope-cli sweep`: run a grid of configurations x seeds as ordinary runs
// (core/run/sweep/sweep.h), show its progress, and rebuild the papers' tables from it
// (core/run/sweep/table.h). core/run/sweep/SWEEP_NOTES.md.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <thread>
#include <tuple>

#include "cli.h"
#include "dist/launch.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "util/error.h"
#include "util/paths.h"

namespace cli {

using cs::json;

namespace {

cs::TrainerControl* g_sweep_control = nullptr;
volatile std::sig_atomic_t g_sweep_signal = 0;  // the signal that asked for the stop
extern "C" void on_sweep_sigint(int sig) {
  if (g_sweep_control) {
    if (!g_sweep_control->stop.load()) g_sweep_signal = sig;
    g_sweep_control->stop = true;
  }
}

std::string dur(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = static_cast<long>(s + 0.5);
  char b[32];
  if (t >= 3600) std::snprintf(b, sizeof b, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else std::snprintf(b, sizeof b, "%ldm%02lds", t / 60, t % 60);
  return b;
}

// The spec named on the command line: a file, a bundled sweep, or an existing sweep of the
// workspace (resume) when it is neither; --steps applied.
cs::SweepSpec spec_arg(const std::string& arg, const std::string& ws, const Args& args) {
  const std::string existing = cs::sweep_dir(ws, arg);
  cs::SweepSpec spec;
  if (!cs::file_exists(arg) && cs::file_exists(cs::join_path(existing, "sweep.json")) &&
      !cs::file_exists(cs::join_path(cs::join_path(cs::resources_dir(), "sweeps"), arg + ".json")))
    spec = cs::load_sweep_spec(existing);
  else spec = cs::load_sweep_spec(arg);
  if (args.has("steps")) {
    json src = spec.source;
    cs::set_option_path(src["base"], "training.steps", args.get_int("steps", 0));
    spec = cs::SweepSpec::from_json(src);
  }
  return spec;
}

// How many points have no finished run, to stderr ("" when none).
void report_missing(const cs::SweepResults& r) {
  int finished = 0, running = 0, failed = 0;
  for (auto& rec : r.records) {
    finished += rec.state.status == "finished";
    failed += rec.state.status == "failed";
    running += rec.state.status == "running" || rec.state.status == "stopped";
  }
  const int missing = static_cast<int>(r.records.size()) - finished;
  if (missing == 0) return;
  std::cerr << missing << " of " << r.records.size() << " points missing (not finished: " << running
            << " running or stopped, " << failed << " failed, " << missing - running - failed
            << " not started); the table holds the " << finished << " finished\n";
}

int sweep_list() {
  int broken = 0;
  for (auto& s : cs::bundled_sweeps()) {
    if (s.contains("error")) {
      ++broken;
      std::cerr << "error: bundled sweep '" << s["name"].get<std::string>()
                << "' does not load: " << s["error"].get<std::string>() << "\n";
      continue;
    }
    std::cout << std::left << std::setw(28) << s["name"].get<std::string>() << s["notes"].get<std::string>() << "\n";
  }
  return broken ? 1 : 0;
}

int sweep_jobs(const cs::SweepSpec& spec, const cs::SweepRunOptions& base, const Args& args, int jobs);

// --json: one JSON line per point ended, {"record": "point", ...}, then {"record": "sweep", ...}
// with the counts and, when the whole sweep ran to its end, its table (sweep table --out .json's).
void print_point_json(const cs::SweepPoint& p, const std::string& status, const std::string& reason,
                      const std::string& dir, double secs) {
  cs::json j = {{"record", "point"}, {"index", p.index}, {"id", p.id}, {"status", status}, {"seconds", secs}};
  if (!reason.empty()) j["reason"] = reason;
  if (!dir.empty()) j["run_dir"] = dir;
  std::cout << j.dump() << "\n" << std::flush;
}

void print_sweep_json(const cs::SweepSpec& spec, const cs::SweepRunResult& res, double secs, bool with_table) {
  cs::json j = {{"record", "sweep"},    {"name", spec.name}, {"dir", res.dir},         {"total", res.total},
                {"share", res.share},   {"done", res.done},  {"ran", res.ran},         {"skipped", res.skipped},
                {"failed", res.failed}, {"busy", res.busy},  {"stopped", res.stopped}, {"seconds", secs}};
  if (with_table) j["table"] = cs::table_to_json(cs::sweep_table(cs::read_sweep_results(res.dir)));
  std::cout << j.dump() << "\n" << std::flush;
}

// `sweep run --dry-run`: the points of the share, each with its index, cell, steps and state.
int print_dry_run(const cs::SweepSpec& spec, const std::vector<cs::SweepPoint>& points, const std::string& ws,
                  int worker, int workers, const std::vector<int>& only) {
  auto state = cs::read_sweep_state(cs::sweep_dir(ws, spec.name));
  std::cout << "sweep '" << spec.name << "': " << points.size() << " points (" << spec.axes.size()
            << (spec.axes.size() == 1 ? " axis x " : " axes x ") << spec.seeds.size() << " seeds"
            << (spec.exclude.empty() ? "" : ", less what the spec leaves out") << "), all valid; directory "
            << cs::sweep_dir(ws, spec.name) << "\n";
  for (auto& x : spec.exclude) std::cout << "  left out by the spec: " << x.text() << "\n";
  std::cout << "  index (0-based: --point INDEX; share I of N holds index % N == I)\n";
  for (auto& p : points) {
    if (!cs::point_in_share(p.index, worker, workers, only)) continue;
    auto it = state.find(p.id);
    std::cout << "  " << std::setw(5) << p.index << "  " << p.id << "  " << p.config["model"]["cell"].get<std::string>()
              << ", " << p.config["training"]["steps"] << " steps"
              << (it != state.end() ? "  [" + it->second.status + "]" : std::string()) << "\n";
  }
  return 0;
}

int sweep_run(const std::vector<std::string>& a) {
  auto args = parse(a, "sweep run");
  if (args.positional.size() != 1) throw UsageError("sweep run: expected one SPEC.json or sweep NAME");
  const std::string ws = args.get("workspace", cs::default_workspace());
  int worker = 0, workers = 1;
  try {
    if (args.has("worker")) std::tie(worker, workers) = cs::parse_worker_share(args.get("worker"));
  } catch (const cs::UserError& e) {
    throw UsageError(e.what());
  }
  std::vector<int> only;
  if (args.has("point")) only.push_back(static_cast<int>(args.get_int("point", 0, 0, 1000000000)));
  const int jobs = static_cast<int>(args.get_int("jobs", 1, 1, 4096));
  if (args.has("jobs") && args.has("point"))
    throw UsageError("sweep run: --jobs runs several points, --point names one");
  const cs::SweepSpec spec = spec_arg(args.positional[0], ws, args);
  const auto points = cs::expand_sweep(spec);
  const bool quiet = args.has("quiet"), json_out = args.has("json");
  if (args.has("dry-run")) return print_dry_run(spec, points, ws, worker, workers, only);
  cs::TrainerControl control;
  g_sweep_control = &control;
  std::signal(SIGINT, on_sweep_sigint);
  std::signal(SIGTERM, on_sweep_sigint);
  const bool tty = ::isatty(2) && !quiet;
  const auto t0 = std::chrono::steady_clock::now();
  int ran_finished = 0;
  double finished_time = 0;  // seconds spent on points run (for the sweep's ETA)
  int remaining_at_start = -1;
  cs::SweepRunOptions o;
  o.workspace = ws;
  o.threads = static_cast<int>(args.get_int("threads", 0, 0, 4096));
  o.worker = worker;
  o.workers = workers;
  o.points = only;
  if (!only.empty() && only[0] >= static_cast<int>(points.size()))
    throw UsageError("--point " + std::to_string(only[0]) + ": the sweep '" + spec.name + "' has points 0.." +
                     std::to_string(points.size() - 1));
  o.control = &control;
  if (args.has("jobs")) {
    const int rc = sweep_jobs(spec, o, args, jobs);
    g_sweep_control = nullptr;
    return rc;
  }
  auto point_t0 = std::chrono::steady_clock::now();
  int started = 0;
  std::string point_dir;
  o.on_log = [&](const std::string& m) {
    if (!quiet && m.rfind("point ", 0) == 0) std::cerr << "  " << m << "\n";
  };
  o.on_point_start = [&](const cs::SweepPoint& p, int n, bool resumed, const std::string& dir) {
    point_t0 = std::chrono::steady_clock::now();
    point_dir = dir;
    if (remaining_at_start < 0) remaining_at_start = n - p.index;
    ++started;
    if (!quiet)
      std::cerr << "[" << p.index + 1 << "/" << n << "] " << (resumed ? "resuming " : "") << p.id << " -> " << dir
                << (o.threads > 0 ? " (threads " + std::to_string(o.threads) + ")" : std::string()) << "\n";
    else  // a child of --jobs or a Slurm task: one line in its log
      std::cerr << "point " << p.index << " " << p.id << (resumed ? ": resuming " : ": ") << dir
                << (o.threads > 0 ? " (threads " + std::to_string(o.threads) + ")" : std::string()) << "\n";
  };
  o.on_progress = [&](const cs::SweepPoint& p, const cs::Progress& pr) {
    static auto last = std::chrono::steady_clock::now() - std::chrono::seconds(10);
    auto now = std::chrono::steady_clock::now();
    if (!tty || now - last < std::chrono::milliseconds(300)) return;
    last = now;
    // Sweep ETA: the mean time of the points finished so far (else this point's ETA) x points left.
    const double per_point = ran_finished ? finished_time / ran_finished : pr.elapsed + pr.eta;
    const int left_after = std::max(0, remaining_at_start - started);
    std::fprintf(stderr, "\r  step %lld/%lld  loss %.3f  point ETA %s  sweep ETA %s   ",
                 static_cast<long long>(pr.step), static_cast<long long>(pr.total_steps), pr.last_loss,
                 dur(pr.eta).c_str(), dur(pr.eta + left_after * per_point).c_str());
    std::fflush(stderr);
    (void)p;
  };
  o.on_point_done = [&](const cs::SweepPoint& p, int, const cs::RunSummary& s) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - point_t0).count();
    if (json_out) print_point_json(p, s.status, s.reason, point_dir, secs);
    if (s.status == "finished") {
      ++ran_finished;
      finished_time += secs;
    }
    if (tty) std::fprintf(stderr, "\n");
    if (!quiet) {
      std::cerr << "  " << s.status << (s.reason.empty() ? "" : ": " + s.reason);
      if (s.has_test) std::cerr << "  test " << s.primary_metric << " " << s.test_metric;
      std::cerr << "  (" << dur(secs) << ")\n";
    }
  };
  auto res = cs::run_sweep(spec, o);
  g_sweep_control = nullptr;
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool whole = workers == 1 && only.empty();
  std::cerr << "sweep '" << spec.name << "'"
            << (whole           ? std::string()
                : !only.empty() ? " point " + std::to_string(only[0])
                                : " share " + args.get("worker"))
            << ": " << res.done << "/" << res.share << " points done (" << res.ran << " run now, " << res.skipped
            << " already done, " << res.failed << " failed"
            << (res.busy ? ", " + std::to_string(res.busy) + " being run by another process" : std::string()) << ") in "
            << dur(total) << "; " << res.dir << "\n";
  if (json_out) print_sweep_json(spec, res, total, whole && !res.stopped);
  if (res.stopped) {
    std::cerr << "stopped: run the same command again to continue\n";
    return g_sweep_signal == SIGTERM ? kExitStoppedBySigterm : 0;
  }
  if (!whole) {
    // The others' points may still be running: the table of what has finished.
    auto results = cs::read_sweep_results(res.dir);
    report_missing(results);
    if (!quiet) std::cerr << "the table so far: cellscope-cli sweep table " << res.dir << "\n";
    return res.failed ? 1 : res.busy ? 3 : 0;
  }
  if (!json_out) std::cout << cs::table_to_text(cs::sweep_table(cs::read_sweep_results(res.dir)));
  return res.failed ? 1 : 0;
}

// --jobs K: the share's points K at a time in child processes (cs::run_sweep_jobs).
int sweep_jobs(const cs::SweepSpec& spec, const cs::SweepRunOptions& base, const Args& args, int jobs) {
  const bool quiet = args.has("quiet");
  cs::SweepJobsOptions j;
  j.exe = self_exe();
  j.jobs = jobs;
  j.threads = base.threads;
  const int threads = j.threads > 0 ? j.threads : cs::threads_per_process(jobs);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::cerr << "sweep '" << spec.name << "': " << jobs << " points at once, " << threads << " training thread"
            << (threads == 1 ? "" : "s") << " each ("
            << (j.threads > 0 ? "--threads"
                              : "max(1, " + std::to_string(cores) + " cores / " + std::to_string(jobs) + ")")
            << ")\n";
  const auto t0 = std::chrono::steady_clock::now();
  int share = 0, done = 0, active = 0, ran_done = 0;
  double ran_time = 0;
  for (int i = 0; i < static_cast<int>(cs::expand_sweep(spec).size()); ++i)
    share += cs::point_in_share(i, base.worker, base.workers, base.points);
  int left = share;
  cs::SweepRunOptions o = base;
  o.on_log = [&](const std::string& m) {
    ++done;
    --left;
    if (!quiet) std::cerr << "  " << m << "\n";
  };
  j.on_start = [&](const cs::SweepPoint& p, int pid, int, const std::string& log) {
    ++active;
    if (!quiet)
      std::cerr << "[" << done << "/" << share << " done, " << active << " running] start point " << p.index << " "
                << p.id << " (pid " << pid << ", log " << log << ")\n";
  };
  j.on_done = [&](const cs::SweepPoint& p, const std::string& status, const std::string& dir, double secs, int) {
    if (args.has("json")) print_point_json(p, status, "", dir, secs);
    --active;
    --left;
    if (status == "finished" || status == "failed") {
      ++done;
      ++ran_done;
      ran_time += secs;
    }
    // ETA: the mean time of the points run to the end here, over K at once.
    std::string eta;
    if (ran_done && left > 0) eta = ", sweep ETA " + dur(ran_time / ran_done * std::ceil(double(left) / jobs));
    std::cerr << "[" << done << "/" << share << " done, " << active << " running" << eta << "] point " << p.index << " "
              << p.id << ": " << status << " (" << dur(secs) << ")" << (dir.empty() ? "" : " " + dir) << "\n";
  };
  auto res = cs::run_sweep_jobs(spec, o, j);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << "sweep '" << spec.name << "': " << res.done << "/" << res.share << " points done (" << res.ran
            << " run now, " << res.skipped << " already done, " << res.failed << " failed"
            << (res.busy ? ", " + std::to_string(res.busy) + " being run by another process" : std::string()) << ") in "
            << dur(total) << "; " << res.dir << "\n";
  if (args.has("json")) print_sweep_json(spec, res, total, res.share == res.total && !res.stopped);
  if (res.stopped) {
    std::cerr << "stopped: run the same command again to continue\n";
    return g_sweep_signal == SIGTERM ? kExitStoppedBySigterm : 0;
  }
  auto results = cs::read_sweep_results(res.dir);
  if (res.share == res.total && !args.has("json")) std::cout << cs::table_to_text(cs::sweep_table(results));
  report_missing(results);
  return res.failed ? 1 : res.busy ? 3 : 0;
}

std::string abs_path(const std::string& p) { return std::filesystem::absolute(p).lexically_normal().string(); }

int sweep_slurm(const std::vector<std::string>& a) {
  auto args = parse(a, "sweep slurm");
  if (args.positional.size() != 1) throw UsageError("sweep slurm: expected one SPEC.json or sweep NAME");
  const std::string ws = abs_path(args.get("workspace", cs::default_workspace()));
  const cs::SweepSpec spec = spec_arg(args.positional[0], ws, args);
  const auto points = cs::expand_sweep(spec);  // every point valid before anything is written
  cs::SlurmOptions o;
  o.workspace = ws;
  o.exe = abs_path(args.get("cli", self_exe()));
  o.partition = args.get("partition");
  o.time = args.get("time");
  o.mem = args.get("mem");
  o.account = args.get("account");
  o.job_name = args.get("job-name");
  o.cpus_per_task = static_cast<int>(args.get_int("cpus-per-task", 0, 1, 4096));
  o.max_running = static_cast<int>(args.get_int("max-running", 0, 1, 1000000));
  if (!cs::file_exists(o.exe))
    throw UsageError("--cli '" + o.exe + "': no such file (cellscope-cli as the nodes see it)");
  std::string script;
  try {
    script = cs::slurm_array_script(spec, static_cast<int>(points.size()), cs::sweep_dir(ws, spec.name), o);
  } catch (const cs::UserError& e) {
    throw UsageError(e.what());
  }
  const std::string dir = cs::prepare_sweep_dir(spec, ws);
  cs::make_dirs(cs::join_path(dir, "slurm"));
  const std::string out = args.get("out");
  if (out.empty()) {
    std::cout << script;
  } else {
    cs::atomic_write(out, script);
    ::chmod(out.c_str(), 0755);
    std::cerr << "wrote " << out << ": " << points.size() << " array tasks (0-" << points.size() - 1
              << "); submit with `sbatch " << out << "`, gather with `cellscope-cli sweep table " << dir << "`\n";
  }
  return 0;
}

int sweep_status(const std::vector<std::string>& a) {
  auto args = parse(a, "sweep status");
  if (args.positional.size() != 1) throw UsageError("sweep status: expected one sweep NAME or directory");
  auto r = cs::read_sweep_results(args.positional[0], args.get("workspace", cs::default_workspace()));
  int done = 0;
  json pts = json::array();
  for (auto& rec : r.records) {
    done += rec.state.status == "finished" || rec.state.status == "failed";
    pts.push_back({{"id", rec.point.id},
                   {"status", rec.state.status},
                   {"run_dir", rec.state.run_dir},
                   {"value", rec.has_value ? json(rec.value) : json()}});
  }
  if (args.has("json")) {
    std::vector<std::string> excluded;
    for (auto& x : r.spec.exclude) excluded.push_back(x.text());
    std::cout << json{{"name", r.spec.name},      {"dir", r.dir},  {"total", r.records.size()}, {"done", done},
                      {"metric", r.metric_label}, {"points", pts}, {"excluded", excluded}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "sweep '" << r.spec.name << "' (" << r.dir << "): " << done << "/" << r.records.size()
            << " points done\n";
  for (auto& p : pts) {
    std::cout << "  " << std::left << std::setw(10) << p["status"].get<std::string>() << std::setw(48)
              << p["id"].get<std::string>();
    if (!p["value"].is_null()) std::cout << " " << r.metric_label << " " << p["value"].get<double>();
    if (!p["run_dir"].get<std::string>().empty()) std::cout << "  " << p["run_dir"].get<std::string>();
    std::cout << "\n";
  }
  for (auto& x : r.spec.exclude) std::cout << "  left out by the spec: " << x.text() << "\n";
  return 0;
}

int sweep_table_cmd(const std::vector<std::string>& a) {
  auto args = parse(a, "sweep table");
  if (args.positional.size() != 1) throw UsageError("sweep table: expected one sweep NAME or directory");
  auto r =
      cs::read_sweep_results(args.positional[0], args.get("workspace", cs::default_workspace()), args.get("metric"));
  report_missing(r);
  const std::string out = args.get("out");
  auto ext_of = [](const std::string& p) {
    auto d = p.rfind('.');
    return d == std::string::npos ? std::string() : p.substr(d + 1);
  };
  if (args.has("series")) {
    auto s = cs::sweep_series(r, args.get("series"));
    const cs::SweepLabels labels = cs::sweep_labels(r);
    const std::string csv = cs::series_to_csv(s, args.get("series"), labels);
    std::cout << "# " << r.spec.name << ": " << r.metric_label << " against " << args.get("series")
              << " (mean, sample std over seeds)\n";
    if (!labels.empty()) std::cout << "# " << labels.data_line() << "\n";
    for (auto& d : labels.departure_lines()) std::cout << "# departs from the paper: " << d << "\n";
    std::cout << csv;
    if (!out.empty()) {
      if (ext_of(out) != "csv") throw UsageError("--series writes CSV: give --out FILE.csv");
      cs::atomic_write(out, csv);
    }
    return 0;
  }
  if (args.has("budget") && args.has("at")) throw UsageError("sweep table: give --budget or --at, not both");
  cs::Budget budget;
  if (args.has("budget") || args.has("at")) {
    if (args.has("series")) throw UsageError("sweep table: --budget does not apply to --series");
    budget = cs::parse_budget(args.get(args.has("budget") ? "budget" : "at"));
  }
  auto t = cs::sweep_table(r, args.get("paired"), budget);
  std::cout << cs::table_to_text(t);
  if (!out.empty()) {
    const std::string e = ext_of(out);
    std::string data;
    if (e == "csv") data = cs::table_to_csv(t);
    else if (e == "tex") data = cs::table_to_latex(t);
    else if (e == "json") data = cs::table_to_json(t).dump(2) + "\n";
    else if (e == "txt") data = cs::table_to_text(t);
    else throw UsageError("--out: expected a .csv, .tex, .json or .txt file");
    cs::atomic_write(out, data);
    std::cerr << "wrote " << out << "\n";
  }
  return 0;
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& a) {
  // No words, help and --help: help.cpp.
  const std::string sub = a[0];
  std::vector<std::string> rest(a.begin() + 1, a.end());
  if (sub == "run") return sweep_run(rest);
  if (sub == "status") return sweep_status(rest);
  if (sub == "table") return sweep_table_cmd(rest);
  if (sub == "list") return sweep_list();
  if (sub == "slurm") return sweep_slurm(rest);
  throw UsageError("unknown sweep command '" + sub + "' (run, slurm, status, table, list)");
}

}  // namespace cli
