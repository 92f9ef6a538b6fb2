// Data-parallel launch (`train --nproc N`) and benchmark (`bench --dist`); see docs/DISTRIBUTED.md.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <csignal>
#include <iomanip>
#include <limits>
#include <iostream>
#include <sstream>

#include "bench/bench_dist.h"
#include "cli.h"
#include "dist/dist.h"
#include "dist/launch.h"
#include "train/launch.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/paths.h"

namespace cli {

using cs::json;

std::string self_exe() {
  const std::string exe = cs::executable_path();
  if (exe.empty()) throw cs::UserError("cannot find the path of this program (/proc/self/exe)");
  // The command users run, cellscope-cli, when it is beside this program (the launcher that
  // executes it, app/cli/launcher/launcher.cpp): what a Slurm script or a log names.
  const auto slash = exe.find_last_of('/');
  if (slash != std::string::npos && exe.substr(slash + 1) == "cellscope-cli-full") {
    const std::string launcher = exe.substr(0, slash + 1) + "cellscope-cli";
    if (::access(launcher.c_str(), X_OK) == 0) return launcher;
  }
  return exe;
}

double parse_dist_timeout(const Args& args, double def) {
  if (!args.has("dist-timeout")) return def;
  const std::string given = args.get("dist-timeout");
  // not a number at all (or trailing text): NaN, which gets the same message
  double v = std::numeric_limits<double>::quiet_NaN();
  try {
    size_t pos = 0;
    const double x = std::stod(given, &pos);
    if (pos == given.size()) v = x;
  } catch (const std::exception&) {
  }
  try {
    cs::check_dist_timeout(v, given);
  } catch (const cs::UserError& e) {
    throw UsageError(e.what());
  }
  return v;
}

static std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// An integer environment variable in [lo, hi]; `def` when unset or empty.
static int env_int(const char* name, int def, int lo, int hi) {
  const std::string v = env_text(name);
  if (v.empty()) return def;
  long long x = 0;
  size_t pos = 0;
  try {
    x = std::stoll(v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v.size() || pos == 0 || x < lo || x > hi)
    throw UsageError(std::string("the environment variable ") + name + "='" + v + "' must be an integer in [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "] (set by a launcher such as torchrun)");
  return static_cast<int>(x);
}

LauncherEnv launcher_env() {
  LauncherEnv e;
  if (env_text("RANK").empty() || env_text("WORLD_SIZE").empty()) return e;
  e.present = true;
  e.world = env_int("WORLD_SIZE", 1, 1, 1 << 20);
  e.rank = env_int("RANK", 0, 0, e.world - 1);
  e.local_rank = env_int("LOCAL_RANK", -1, 0, 1 << 20);
  e.local_world = env_int("LOCAL_WORLD_SIZE", 1, 1, 1 << 20);
  if (e.world > 1) {
    const std::string addr = env_text("MASTER_ADDR");
    if (addr.empty() || env_text("MASTER_PORT").empty())
      throw UsageError(
          "RANK and WORLD_SIZE are set (a launcher such as torchrun), but MASTER_ADDR and MASTER_PORT "
          "are not: set both, or give --rank, --world-size and --master");
    const int port = env_int("MASTER_PORT", 0, 1, 65535);
    // MASTER_ADDR is a host: a name, an IPv4 address, or an IPv6 address (bare or in brackets).
    // "127.0.0.1:29613" is a host and a port; it read as an IPv6 address and failed as a
    // bracketed --master naming neither the variable nor the port.
    const bool v6 = addr.find(':') != std::string::npos && addr.front() != '[';
    in6_addr a6{};
    if (v6 && ::inet_pton(AF_INET6, addr.c_str(), &a6) != 1) {
      const std::string tail = addr.substr(addr.rfind(':'));
      const bool port_like = tail.size() > 1 && tail.find_first_not_of("0123456789", 1) == std::string::npos;
      throw UsageError("the environment variable MASTER_ADDR='" + addr + "' is not a host name or address" +
                       (port_like ? ": it ends in a port ('" + tail +
                                        "'); MASTER_ADDR names the host only and MASTER_PORT "
                                        "the port (MASTER_PORT=" +
                                        env_text("MASTER_PORT") + " here)"
                                  : " (an IPv6 address is written bare, e.g. ::1, or in brackets)"));
    }
    e.master = (v6 ? "[" + addr + "]" : addr) + ":" + std::to_string(port);
  }
  // torchrun with its default (static) rendezvous: the agent serves a c10d TCPStore on
  // MASTER_PORT and its workers are clients of it under /worker/attempt_<restart count>
  // (torch/distributed/rendezvous.py, _create_c10d_store). Otherwise rank 0 serves.
  const std::string agent = env_text("TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = agent == "True" || agent == "true" || agent == "1";
  if (e.agent_store)
    e.store_prefix = "/worker/attempt_" + std::to_string(env_int("TORCHELASTIC_RESTART_COUNT", 0, 0, 1 << 20));
  return e;
}

std::string LauncherEnv::describe() const {
  return "RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(world) +
         (master.empty() ? std::string() : " MASTER_ADDR:MASTER_PORT=" + master) +
         (agent_store ? " (torchrun's agent store)" : "");
}

std::string device_for_local_rank(const std::string& device, int local_rank) {
  if (local_rank < 0 || device != "cuda") return device;
  return "cuda:" + std::to_string(local_rank);
}

// The parent's SIGINT/SIGTERM go to the workers once (they are in their own process
// groups, so a terminal's Ctrl-C reaches them only through here): they agree on the
// step, rank 0 checkpoints, all exit.
static cs::LocalWorkers* g_workers = nullptr;
static volatile std::sig_atomic_t g_launcher_signal = 0;
static void forward_stop(int sig) {
  g_launcher_signal = sig;
  if (g_workers) cs::stop_local_workers(*g_workers);
}

// Without `--nproc`/`--nproc=`, in the same order (the workers get the rest verbatim).
static std::vector<std::string> without_nproc(const std::vector<std::string>& a) {
  std::vector<std::string> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "--nproc") {
      ++i;
      continue;
    }
    if (a[i].rfind("--nproc=", 0) == 0) continue;
    out.push_back(a[i]);
  }
  return out;
}

int train_launch_local(const std::vector<std::string>& a, const Args& args) {
  const long long n = args.get_int("nproc", 1);
  if (n < 1 || n > 256) throw UsageError("--nproc must be between 1 and 256 (got " + std::to_string(n) + ")");
  for (const char* k : {"world-size", "master", "listen", "store-file"})
    if (args.has(k)) throw UsageError(std::string("--nproc starts the workers itself; give no --") + k);
  const double timeout = parse_dist_timeout(args, 60);
  // The workers get the same arguments; the launcher appends --rank, --world-size,
  // --store-file, --dist-timeout and --threads (the last occurrence of an option wins).
  std::vector<std::string> child = {"train"};
  for (auto& s : without_nproc(a)) child.push_back(s);
  std::string dir;
  if (args.has("resume")) {
    dir = args.get("resume");
  } else {
    // Check the configuration here (every problem, before any process starts) and fix
    // the run directory so that every rank agrees on it; rank 0 creates it.
    if (args.positional.size() != 1) throw UsageError("expected one CONFIG (a JSON file or a preset name)");
    json raw = load_config_arg(args.positional[0], args.all("set"));
    if (args.has("steps")) {
      if (!raw.contains("training") || !raw["training"].is_object()) raw["training"] = json::object();
      raw["training"]["steps"] = args.get_int("steps", 0);
    }
    json cfg = cs::load_and_resolve(raw);
    const int64_t batch = cfg["training"].value("batch", int64_t(32));
    if (batch % n != 0)
      throw cs::UserError("training.batch: the global batch of " + std::to_string(batch) +
                          " cannot be split evenly over " + std::to_string(n) + " processes");
    dir = args.has("run-dir") ? args.get("run-dir")
                              : cs::new_run_dir(args.get("workspace", cs::default_workspace()), cfg);
    // Rank 0 would refuse it after the others had started waiting for it. One that holds this
    // configuration is resumed by every worker (the command of a restarted job, run again).
    if (cs::dir_exists(dir) && !cs::list_dir(dir).empty() && !cs::run_dir_holds_this_run(raw, dir))
      throw cs::UserError("run directory '" + dir + "' already exists and is not empty");
    if (!args.has("run-dir")) {
      child.push_back("--run-dir");
      child.push_back(dir);
    }
  }
  const int threads =
      args.has("threads") ? static_cast<int>(args.get_int("threads", 0)) : cs::threads_per_process(static_cast<int>(n));
  if (!args.has("quiet") && !args.has("json"))
    std::cerr << "starting " << n << " worker processes (" << threads << " intra-op thread" << (threads == 1 ? "" : "s")
              << " each, Gloo over 127.0.0.1, timeout " << timeout << " s)\n";
  auto w = cs::launch_local_workers(self_exe(), child, static_cast<int>(n), timeout, threads);
  g_workers = &w;
  std::signal(SIGINT, forward_stop);
  std::signal(SIGTERM, forward_stop);
  std::string msg;
  const int rc = cs::wait_local_workers(w, &msg);
  g_workers = nullptr;
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (rc != 0) {
    // Point at a checkpoint only where there is one: workers that never met (a rendezvous that
    // timed out) made no run directory.
    std::cerr << "cellscope-cli train: " << msg;
    if (cs::file_exists(cs::join_path(dir, "checkpoints/last.pt")))
      std::cerr << "; the run directory " << dir << " keeps its last checkpoint (continue with: cellscope-cli train "
                << "--resume " << dir << " --nproc N)\n";
    else if (cs::dir_exists(dir))
      std::cerr << "; the run directory " << dir << " has no checkpoint yet (nothing to resume)\n";
    else std::cerr << "; no run directory was made (" << dir << ")\n";
    return rc >= 128 ? 1 : rc;
  }
  // Stopped by the scheduler (SIGTERM) with its checkpoint: the status that asks for a requeue.
  if (g_launcher_signal == SIGTERM) {
    try {
      if (cs::RunStore(dir).read_summary().status == "stopped") return kExitStoppedBySigterm;
    } catch (const std::exception&) {  // no summary: nothing to resume, the plain status
    }
  }
  return 0;
}

// Model and data options of one benchmark task (the defaults differ per task).
static cs::DistBenchOptions bench_options(const Args& args, const std::string& task) {
  cs::DistBenchOptions o;
  o.task = task;
  const bool word = task == "word_lm";
  o.model = {{"cell", args.get("cell", "gru")},
             {"embed", args.get_int("embed", word ? 256 : 256)},
             {"hidden", args.get_int("hidden", word ? 256 : 512)}};
  for (auto& s : args.all("set")) {
    json tmp = {{"model", o.model}};
    cs::apply_override(tmp, s);
    o.model = tmp["model"];
  }
  o.batch = args.get_int("batch", 32);
  o.seq = args.get_int("seq", word ? 35 : 150);
  o.steps = static_cast<int>(args.get_int("steps", 20));
  if (o.batch < 1 || o.seq < 1 || o.steps < 1) throw UsageError("--batch, --seq and --steps must be >= 1");
  return o;
}

static std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ','))
    if (!tok.empty()) out.push_back(tok);
  return out;
}

int cmd_bench_dist(const std::vector<std::string>& a) {
  auto args = parse(a, "bench --dist");
  const auto tasks = split_list(args.get("task", "char_lm,word_lm"));
  for (auto& t : tasks)
    if (t != "char_lm" && t != "word_lm") throw UsageError("--task: expected char_lm and/or word_lm, got '" + t + "'");
  if (tasks.empty()) throw UsageError("--task: expected char_lm and/or word_lm");
  if (args.has("dist-worker")) {
    auto o = bench_options(args, tasks.front());
    cs::set_threads(static_cast<int>(args.get_int("threads", 1)));
    cs::DistOptions d;
    d.rank = static_cast<int>(args.get_int("rank", 0));
    d.world = static_cast<int>(args.get_int("world-size", 1));
    d.store_file = args.get("store-file");
    d.master = args.get("master");
    d.listen = args.get("listen");
    d.timeout_s = parse_dist_timeout(args, 60);
    auto ctx = cs::init_dist(d);
    json r = cs::run_dist_bench_rank(o, *ctx);
    if (ctx->rank == 0 && args.has("out")) cs::atomic_write(args.get("out"), r.dump());
    return 0;
  }
  // Launcher: the same benchmark with 1, 2, ... local processes, for each task.
  std::vector<int> counts;
  for (auto& tok : split_list(args.get("nproc-list", "1,2"))) {
    try {
      counts.push_back(std::stoi(tok));
    } catch (...) {
      throw UsageError("--nproc-list expects comma-separated process counts, got '" + args.get("nproc-list") + "'");
    }
    if (counts.back() < 1 || counts.back() > 256)
      throw UsageError("--nproc-list: counts must be between 1 and 256 (as --nproc), got " + tok);
  }
  for (auto& t : tasks) bench_options(args, t);  // option errors before any process starts
  const int threads = static_cast<int>(args.get_int("threads", 1));
  const double timeout = parse_dist_timeout(args, 120);
  char tmpl[] = "/tmp/cellscope-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) throw cs::UserError("cannot create a temporary directory");
  const std::string tmp = tmpl;
  json all = json::array();
  for (auto& task : tasks) {
    std::vector<std::string> base = {"bench", "--dist-worker", "--task", task};
    for (const char* k : {"cell", "batch", "seq", "embed", "hidden", "steps"})
      if (args.has(k)) {
        base.push_back(std::string("--") + k);
        base.push_back(args.get(k));
      }
    for (auto& s : args.all("set")) {
      base.push_back("--set");
      base.push_back(s);
    }
    json results = json::array();
    for (int n : counts) {
      const std::string out = tmp + "/result_" + std::to_string(n) + ".json";
      auto child = base;
      child.push_back("--out");
      child.push_back(out);
      auto w = cs::launch_local_workers(self_exe(), child, n, timeout, threads);
      std::string msg;
      if (cs::wait_local_workers(w, &msg) != 0 || !cs::file_exists(out))
        throw cs::UserError("the " + task + " benchmark with " + std::to_string(n) + " processes failed: " + msg);
      results.push_back(cs::parse_json(cs::read_file(out), out));
      ::unlink(out.c_str());
    }
    const double base_tp = results.empty() ? 0 : results[0]["throughput"].get<double>();
    for (auto& r : results) {
      r["speedup"] = base_tp > 0 ? r["throughput"].get<double>() / base_tp : 0;
      all.push_back(r);
    }
    if (args.has("json") || results.empty()) continue;
    const auto& r0 = results[0];
    std::cout << std::fixed << std::setprecision(2);
    std::cout << "data-parallel " << task << ": cell " << r0["cell"].get<std::string>() << "  global batch "
              << r0["batch"] << "  seq " << r0["seq"] << "  embed " << r0["embed"] << "  hidden " << r0["hidden"]
              << "  (" << r0["parameters"] << " parameters)  " << threads << " thread(s) per process\n";
    for (auto& r : results)
      std::cout << "  " << r["world"].get<int>() << " process" << (r["world"].get<int>() == 1 ? " " : "es") << "  step "
                << 1e3 * r["seconds_per_step"].get<double>() << " ms  " << r["throughput"].get<double>() / 1e3 << "k "
                << r["unit"].get<std::string>() << "/s  (x" << r["speedup"].get<double>() << ")  compute "
                << r["compute_ms"].get<double>() << " ms  all-reduce " << r["allreduce_ms"].get<double>()
                << " ms/step\n";
  }
  ::rmdir(tmp.c_str());
  if (args.has("json")) std::cout << json{{"dist", all}}.dump() << "\n";
  return 0;
}

}  // namespace cli
