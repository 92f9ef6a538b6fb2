// `cellscope-cli sweep`: run a grid of configurations x seeds as ordinary runs
// (core/run/sweep/sweep.h), show its progress, and rebuild the papers' tables from it
// (core/run/sweep/table.h). docs/WORKBENCH.md "Sweeps and tables".
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "sweep/sweep.h"
#include "sweep/table.h"
#include "util/error.h"
#include "util/paths.h"

namespace cli {

using cs::json;

namespace {

cs::TrainerControl* g_sweep_control = nullptr;
extern "C" void on_sweep_sigint(int) {
  if (g_sweep_control) g_sweep_control->stop = true;
}

bool help_asked(const std::vector<std::string>& a) {
  return std::find(a.begin(), a.end(), "--help") != a.end() || std::find(a.begin(), a.end(), "-h") != a.end();
}

std::string dur(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = static_cast<long>(s + 0.5);
  char b[32];
  if (t >= 3600) std::snprintf(b, sizeof b, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else std::snprintf(b, sizeof b, "%ldm%02lds", t / 60, t % 60);
  return b;
}

const char* kUsage =
    "usage: cellscope-cli sweep run SPEC.json|NAME [--workspace DIR] [--dry-run] [--threads K] [--steps N] [--quiet]\n"
    "       cellscope-cli sweep status NAME|DIR [--workspace DIR] [--json]\n"
    "       cellscope-cli sweep table NAME|DIR [--workspace DIR] [--metric M] [--paired COLUMN]\n"
    "                                  [--series AXIS] [--budget time=SECONDS|flops=X|step=N|KIND=common]\n"
    "                                  [--out FILE.csv|.tex|.json|.txt]\n"
    "       cellscope-cli sweep list\n"
    "A sweep is a base configuration plus a grid over options and seeds (spec format: docs/WORKBENCH.md,\n"
    "core/run/sweep/sweep.h); NAME is a bundled sweep (sweep list: the \"reproduce\" sweeps of the papers'\n"
    "tables) or an existing sweep under WORKSPACE/sweeps/. Every point is an ordinary run in the workspace.\n"
    "run       runs the points not finished yet, one after another; Ctrl-C stops the current run with a\n"
    "          checkpoint, and running the same sweep again resumes it (finished points are skipped).\n"
    "          --dry-run validates every point and lists them without running. --steps N overrides\n"
    "          training.steps of every point (changes the sweep: give it a fresh workspace or name).\n"
    "status    each point's state and run directory.\n"
    "table     the table: rows x columns of the spec, mean +- sample std over seeds, best marked (bold in\n"
    "          LaTeX); --metric test|valid|test.KEY|valid.KEY; --paired COLUMN: the difference to COLUMN of\n"
    "          runs sharing seed and every other option, mean +- std over seeds; --series AXIS: long form\n"
    "          (series, AXIS, mean, std, n) for a figure with error bars, e.g. CRU Fig. 3 (model.filter_length).\n"
    "          --out writes CSV, a LaTeX tabular, JSON or text (by extension); the text is printed always.\n"
    "          Below the table, each cell's runs: parameters, steps reached per seed (E early stop, C step cap),\n"
    "          wall-clock training time and training FLOPs (3 x the cells' analytic forward FLOPs).\n"
    "          --budget (or --at) time=SECONDS | flops=X (1e12, 500G, 2T) | step=N: the compute-matched view:\n"
    "          every run read at the same wall-clock time / training FLOPs / step, at its best validation\n"
    "          evaluation within the budget (test when training.track_test evaluated it there, else valid);\n"
    "          runs that ended before the budget are read at their end and marked ^ (never extrapolated);\n"
    "          KIND=common: the largest budget every run reached. See core/run/sweep/SWEEP_NOTES.md.\n";

int sweep_list() {
  for (auto& s : cs::bundled_sweeps())
    std::cout << std::left << std::setw(28) << s["name"].get<std::string>() << s["notes"].get<std::string>() << "\n";
  return 0;
}

int sweep_run(const std::vector<std::string>& a) {
  auto args = parse(a, {"dry-run", "quiet"}, {"workspace", "threads", "steps"});
  if (args.positional.size() != 1) throw UsageError("sweep run: expected one SPEC.json or sweep NAME");
  const std::string ws = args.get("workspace", cs::default_workspace());
  std::string arg = args.positional[0];
  // An existing sweep of that name in the workspace (resume) when it is not a file or bundled sweep.
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
  const auto points = cs::expand_sweep(spec);
  const bool quiet = args.has("quiet");
  if (args.has("dry-run")) {
    auto state = cs::read_sweep_state(cs::sweep_dir(ws, spec.name));
    std::cout << "sweep '" << spec.name << "': " << points.size() << " points (" << spec.axes.size() << (spec.axes.size() == 1 ? " axis x " : " axes x ")
              << spec.seeds.size() << " seeds), all valid; directory " << cs::sweep_dir(ws, spec.name) << "\n";
    for (auto& p : points) {
      auto it = state.find(p.id);
      std::cout << "  " << std::setw(3) << p.index + 1 << "  " << p.id << "  " << p.config["model"]["cell"].get<std::string>()
                << ", " << p.config["training"]["steps"] << " steps"
                << (it != state.end() ? "  [" + it->second.status + "]" : std::string()) << "\n";
    }
    return 0;
  }
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
  o.threads = static_cast<int>(args.get_int("threads", 0));
  auto point_t0 = std::chrono::steady_clock::now();
  int started = 0;
  o.on_log = [&](const std::string& m) {
    if (!quiet && m.rfind("point ", 0) == 0) std::cerr << "  " << m << "\n";
  };
  o.on_point_start = [&](const cs::SweepPoint& p, int n, bool resumed, const std::string& dir) {
    point_t0 = std::chrono::steady_clock::now();
    if (remaining_at_start < 0) remaining_at_start = n - p.index;
    ++started;
    if (!quiet)
      std::cerr << "[" << p.index + 1 << "/" << n << "] " << (resumed ? "resuming " : "") << p.id << " -> " << dir << "\n";
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
  o.on_point_done = [&](const cs::SweepPoint&, int, const cs::RunSummary& s) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - point_t0).count();
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
  std::cerr << "sweep '" << spec.name << "': " << res.done << "/" << res.total << " points done (" << res.ran << " run now, "
            << res.skipped << " already done, " << res.failed << " failed) in " << dur(total) << "; " << res.dir << "\n";
  if (res.stopped) {
    std::cerr << "stopped: run `cellscope-cli sweep run " << spec.name << (args.has("workspace") ? " --workspace " + ws : "")
              << "` to continue\n";
    return 0;
  }
  auto results = cs::read_sweep_results(res.dir);
  std::cout << cs::table_to_text(cs::sweep_table(results));
  return res.failed ? 1 : 0;
}

int sweep_status(const std::vector<std::string>& a) {
  auto args = parse(a, {"json"}, {"workspace"});
  if (args.positional.size() != 1) throw UsageError("sweep status: expected one sweep NAME or directory");
  auto r = cs::read_sweep_results(args.positional[0], args.get("workspace", cs::default_workspace()));
  int done = 0;
  json pts = json::array();
  for (auto& rec : r.records) {
    done += rec.state.status == "finished" || rec.state.status == "failed";
    pts.push_back({{"id", rec.point.id}, {"status", rec.state.status}, {"run_dir", rec.state.run_dir},
                   {"value", rec.has_value ? json(rec.value) : json()}});
  }
  if (args.has("json")) {
    std::cout << json{{"name", r.spec.name}, {"dir", r.dir}, {"total", r.records.size()}, {"done", done}, {"metric", r.metric_label}, {"points", pts}}.dump(2) << "\n";
    return 0;
  }
  std::cout << "sweep '" << r.spec.name << "' (" << r.dir << "): " << done << "/" << r.records.size() << " points done\n";
  for (auto& p : pts) {
    std::cout << "  " << std::left << std::setw(10) << p["status"].get<std::string>() << std::setw(48) << p["id"].get<std::string>();
    if (!p["value"].is_null()) std::cout << " " << r.metric_label << " " << p["value"].get<double>();
    if (!p["run_dir"].get<std::string>().empty()) std::cout << "  " << p["run_dir"].get<std::string>();
    std::cout << "\n";
  }
  return 0;
}

int sweep_table_cmd(const std::vector<std::string>& a) {
  auto args = parse(a, {}, {"workspace", "metric", "paired", "series", "out", "budget", "at"});
  if (args.positional.size() != 1) throw UsageError("sweep table: expected one sweep NAME or directory");
  auto r = cs::read_sweep_results(args.positional[0], args.get("workspace", cs::default_workspace()), args.get("metric"));
  const std::string out = args.get("out");
  auto ext_of = [](const std::string& p) {
    auto d = p.rfind('.');
    return d == std::string::npos ? std::string() : p.substr(d + 1);
  };
  if (args.has("series")) {
    auto s = cs::sweep_series(r, args.get("series"));
    const std::string csv = cs::series_to_csv(s, args.get("series"));
    std::cout << "# " << r.spec.name << ": " << r.metric_label << " against " << args.get("series") << " (mean, sample std over seeds)\n" << csv;
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
  if (a.empty() || ((a[0] == "--help" || a[0] == "-h" || a[0] == "help"))) {
    std::cout << kUsage;
    return a.empty() ? 2 : 0;
  }
  const std::string sub = a[0];
  std::vector<std::string> rest(a.begin() + 1, a.end());
  if (help_asked(rest)) {
    std::cout << kUsage;
    return 0;
  }
  if (sub == "run") return sweep_run(rest);
  if (sub == "status") return sweep_status(rest);
  if (sub == "table") return sweep_table_cmd(rest);
  if (sub == "list") return sweep_list();
  throw UsageError("unknown sweep command '" + sub + "' (run, status, table, list)");
}

}  // namespace cli
