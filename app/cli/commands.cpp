#include <torch/serialize.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <tuple>

#include "bench/bench.h"
#include "cells/registry.h"
#include "cells/script_cell.h"
#include "data/bench_data.h"
#include "cli.h"
#include "dist/dist.h"
#include "dist/launch.h"
#include "help.h"
#include "tasks/model_params.h"
#include "tasks/task.h"
#include "train/graph_step.h"
#include "train/launch.h"
#include "train/run_store.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/format.h"
#include "util/paths.h"
#include "util/sysinfo.h"

namespace cli {

using cs::json;

// Args, parse() and want_help(): args.cpp (CLI11).

json load_config_arg(const std::string& arg, const std::vector<std::string>& sets) {
  std::string path = arg;
  if (!cs::file_exists(path)) {
    std::string preset = cs::join_path(cs::join_path(cs::resources_dir(), "presets"), arg + ".json");
    if (cs::file_exists(preset)) path = preset;
    else throw cs::UserError("'" + arg + "' is neither a config file nor a preset (cellscope-cli presets lists them)");
  }
  json cfg;
  try {
    cfg = cs::parse_json(cs::read_file(path), "'" + path + "'");
  } catch (const json::parse_error& e) {
    throw cs::UserError("'" + path + "' is not valid JSON: " + cs::json_error_text(e));
  }
  for (auto& s : sets) cs::apply_override(cfg, s);
  return cfg;
}

static std::string fmt_rate(double r) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  if (r >= 1e6) o << r / 1e6 << "M";
  else if (r >= 1e3) o << r / 1e3 << "k";
  else o << r;
  return o.str();
}

// ------------------------------------------------------------------ info
int cmd_info(const std::vector<std::string>& a) {
  auto args = parse(a, "info");
  cs::set_threads(static_cast<int>(args.get_int("threads", 0, 0, 1024)));
  json j = cs::system_info();
  j["qt_version"] = nullptr;  // the CLI links no Qt; the GUI's About dialog shows Qt's version
  j["resources_dir"] = cs::resources_dir();
  j["data_cache_dir"] = cs::data_cache_dir();
  j["workspace"] = cs::default_workspace();
  j["cells"] = cs::cell_names();
  std::vector<std::string> tasks;
  for (auto& t : cs::task_registry()) tasks.push_back(t.name);
  j["tasks"] = tasks;
  j["cuda"] = cs::cuda_info();  // the devices and the CUDA-graph state (train/graph_step.h)
  auto blas = cs::detect_blas();
  const std::string warn = cs::blas_warning(blas);
  if (!warn.empty()) j["warning"] = warn;
  if (args.has("json")) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "Cellscope       " << j["cellscope_version"].get<std::string>() << "\n"
              << "LibTorch        " << j["libtorch_version"].get<std::string>() << "\n"
              << "Qt              (not linked into the CLI)\n"
              << "BLAS            " << blas.name << (blas.path.empty() ? "" : "  [" + blas.path + "]") << "\n";
    if (!blas.detail.empty()) std::cout << "BLAS config     " << blas.detail << "\n";
    std::cout << "Intra-op threads " << j["intra_op_threads"] << " (of " << j["hardware_threads"]
              << " hardware threads, " << j["parallel_backend"].get<std::string>() << ")\n"
              << "CPU block cache " << j["cpu_cache"].get<std::string>() << "\n"
              << "CUDA            "
              << (j["cuda_available"].get<bool>()
                      ? "available, " + std::to_string(j["cuda_devices"].get<int>()) + " device(s)"
                      : std::string(j["cuda"]["built_with_cuda"].get<bool>() ? "built with CUDA, no device visible"
                                                                             : "not available (a CPU LibTorch)"))
              << "\n";
    for (const auto& d : j["cuda"]["devices"])
      std::cout << "  cuda:" << d["index"].get<int64_t>() << "          " << d["name"].get<std::string>()
                << ", compute capability " << d["capability"].get<std::string>() << ", "
                << d["memory_bytes"].get<int64_t>() / (int64_t{1} << 20) << " MiB\n";
    std::cout << "CUDA graphs     " << j["cuda"]["graphs"].get<std::string>() << "\n"
              << "Cells           ";
    for (auto& c : cs::cell_names()) std::cout << c << " ";
    std::cout << "\nTasks           ";
    for (auto& t : tasks) std::cout << t << " ";
    std::cout << "\nResources       " << cs::resources_dir() << "\nData cache      " << cs::data_cache_dir()
              << "\nWorkspace       " << cs::default_workspace() << "\n";
  }
  if (!warn.empty()) std::cerr << "\n*** " << warn << " ***\n\n";
  return 0;
}

// ------------------------------------------------------------------ presets
int cmd_presets(const std::vector<std::string>& a) {
  auto args = parse(a, "presets");
  if (args.has("json") && args.has("names")) throw UsageError("--json and --names are two answers: give one");
  const std::string dir = cs::join_path(cs::resources_dir(), "presets");
  json out = json::array();
  for (const std::string& name : cli::preset_names()) {
    const std::string path = cs::join_path(dir, name + ".json");
    if (args.has("names")) {
      std::cout << name << "\n";
      continue;
    }
    json p;
    try {
      p = cs::parse_json(cs::read_file(path), path);
    } catch (...) {
      continue;
    }
    out.push_back({{"name", name}, {"notes", p.value("notes", "")}, {"path", path}});
  }
  if (args.has("names")) return 0;
  if (args.has("json")) std::cout << out.dump(2) << "\n";
  else
    for (auto& p : out)
      std::cout << std::left << std::setw(28) << p["name"].get<std::string>() << p["notes"].get<std::string>() << "\n";
  return 0;
}

// ------------------------------------------------------------------ validate
// `validate --keys`: every SECTION.KEY of the schema once (an option that several cells or tasks
// declare, e.g. model.hidden, is one key; a choice's values are the union of its declarations'),
// in the schema's order.
static int print_config_keys(bool as_json) {
  static const char* const kType[] = {"int", "float", "bool", "string", "choice"};
  std::vector<std::string> order;
  std::map<std::string, std::pair<cs::OptType, std::vector<std::string>>> keys;
  for (const cs::OptionSpec& o : cs::all_options()) {
    auto it = keys.find(o.path());
    if (it == keys.end()) {
      order.push_back(o.path());
      it = keys.emplace(o.path(), std::make_pair(o.type, std::vector<std::string>())).first;
    }
    auto& choices = it->second.second;
    const std::vector<std::string> own =
        o.type == cs::OptType::Bool ? std::vector<std::string>{"true", "false"} : o.choices;
    for (const std::string& c : own)
      if (std::find(choices.begin(), choices.end(), c) == choices.end()) choices.push_back(c);
  }
  json out = json::array();
  for (const std::string& k : order) {
    const auto& [type, choices] = keys.at(k);
    const char* type_name = kType[static_cast<int>(type)];
    if (as_json) {
      out.push_back({{"key", k}, {"type", type_name}, {"choices", choices}});
      continue;
    }
    std::string joined;
    for (const std::string& c : choices) joined += (joined.empty() ? "" : "|") + c;
    std::cout << std::left << std::setw(32) << k << " " << type_name << (joined.empty() ? "" : "  " + joined) << "\n";
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
}

int cmd_validate(const std::vector<std::string>& a) {
  auto args = parse(a, "validate");
  if (args.has("keys")) {
    if (!args.positional.empty() || args.has("set")) throw UsageError("--keys takes no CONFIG and no --set");
    return print_config_keys(args.has("json"));
  }
  if (args.positional.size() != 1) throw UsageError("expected one CONFIG");
  json cfg = load_config_arg(args.positional[0], args.all("set"));
  auto errs = cs::validate_config(cfg);
  if (args.has("json")) {
    json j = json::array();
    for (auto& e : errs) j.push_back({{"path", e.path}, {"message", e.message}});
    std::cout << json{{"valid", errs.empty()},
                      {"errors", j},
                      {"resolved", errs.empty() ? cs::resolve_config(cfg) : json()}}
                     .dump(2)
              << "\n";
  } else if (errs.empty()) {
    std::cout << "valid\n";
  } else {
    for (auto& e : errs) std::cerr << e.str() << "\n";
  }
  return errs.empty() ? 0 : 2;
}

// ------------------------------------------------------------------ params
int cmd_params(const std::vector<std::string>& a) {
  auto args = parse(a, "params");
  if (args.positional.size() != 1) throw UsageError("expected one CONFIG");
  json cfg = cs::load_and_resolve(load_config_arg(args.positional[0], args.all("set")));
  std::vector<std::pair<std::string, int64_t>> br;
  int64_t total = 0;
  if (args.has("vocab")) {
    const long long v = args.get_int("vocab", 0, 1, 100000000);
    br = cs::model_parameter_breakdown(cfg, v);
    for (auto& kv : br) total += kv.second;
  } else {
    auto task = cs::make_task(cfg);
    br = task->parameter_breakdown();
    total = task->parameter_count();
  }
  if (args.has("json")) {
    json m = json::object();
    for (auto& [k, v] : br) m[k] = v;
    std::cout << json{{"total", total}, {"modules", m}, {"cell", cfg["model"]["cell"]}}.dump(2) << "\n";
  } else {
    for (auto& [k, v] : br) std::cout << std::left << std::setw(32) << k << std::right << std::setw(14) << v << "\n";
    std::cout << std::left << std::setw(32) << "total" << std::right << std::setw(14) << total << "  (" << std::fixed
              << std::setprecision(2) << total / 1e6 << "M)\n";
  }
  return 0;
}

// ------------------------------------------------------------------ train
static cs::TrainerControl* g_control = nullptr;
static volatile std::sig_atomic_t g_stop_signal = 0;  // the signal that asked for the stop
static void on_sigint(int sig) {
  if (g_control) {
    if (!g_control->stop.load()) {
      g_stop_signal = sig;
      g_control->stop_signal = sig;
    }
    if (g_control->stop.load()) std::_Exit(130);  // second Ctrl-C: leave now
    g_control->stop = true;
  }
}

// The training section of a configuration being built, made an object when it is not one.
static json& training_section(json& cfg) {
  if (!cfg.contains("training") || !cfg["training"].is_object()) cfg["training"] = json::object();
  return cfg["training"];
}

// The rendezvous of a data-parallel worker (before anything else: every rank then validates, loads
// and builds the same thing). `device_override`: cuda -> cuda:LOCAL_RANK on a launcher's worker.
static std::unique_ptr<cs::DistContext> train_rendezvous(const Args& args, const LauncherEnv& env, bool from_env,
                                                         std::string* device_override) {
  cs::DistOptions o;
  o.rank = from_env ? env.rank : static_cast<int>(args.get_int("rank", 0));
  o.world = from_env ? env.world : static_cast<int>(args.get_int("world-size", 1));
  o.master = from_env ? env.master : args.get("master");
  if (from_env) o.master_from = "MASTER_ADDR:MASTER_PORT";
  o.agent_store = from_env && env.agent_store;
  o.store_prefix = from_env ? env.store_prefix : std::string();
  o.listen = args.get("listen");
  o.store_file = args.get("store-file");
  o.timeout_s = parse_dist_timeout(args, 60);
  o.backend = args.get("dist-backend", "auto");
  try {  // the device decides the automatic backend (NCCL for CUDA); the config is fully checked later
    json peek = args.has("resume") ? cs::RunStore(args.get("resume")).read_config()
                                   : load_config_arg(args.positional.at(0), args.all("set"));
    const std::string device = peek.at("training").value("device", std::string("cpu"));
    if (from_env && device_for_local_rank(device, env.local_rank) != device)
      *device_override = device_for_local_rank(device, env.local_rank);
    o.device = torch::Device(device_override->empty() ? device : *device_override);
  } catch (...) {
  }
  if (from_env && !args.has("quiet") && !args.has("json") && env.rank == 0)
    std::cerr << "data-parallel worker from the launcher's environment: " << env.describe() << "\n";
  return cs::init_dist(o);
}

// What `train` hands start_run (train/launch.h): the launch options, and in *raw the configuration
// (a new run's) or the overrides on top of the run's config.json (--resume, a restart, --fork).
// `fresh`: a new run's configuration, read once; `restart`: --run-dir holds this configuration.
static cs::LaunchOptions train_launch_options(const Args& args, const LauncherEnv& env, const json& fresh, bool restart,
                                              bool root, json* raw) {
  cs::LaunchOptions lo;
  lo.threads = static_cast<int>(args.get_int("threads", 0));
  // A launcher's workers on one machine divide its cores (training.threads, when set, wins).
  if (env.present) lo.default_threads = cs::threads_per_process(env.local_world);
  if (restart) {
    lo.resume_dir = args.get("run-dir");
    *raw = json::object();  // config.json is this configuration already
    if (!args.has("quiet") && !args.has("json") && root)
      std::cerr << "run directory " << lo.resume_dir << " holds this configuration already: resuming it\n";
  } else if (args.has("resume")) {
    if (!args.positional.empty()) throw UsageError("--resume takes the run directory; give no CONFIG");
    lo.resume_dir = args.get("resume");
    *raw = json::object();  // overrides on top of the run's config.json
    for (auto& s : args.all("set")) cs::apply_override(*raw, s);
  } else if (args.has("fork")) {
    if (!args.positional.empty()) throw UsageError("--fork takes RUN_DIR[@STEP]; give no CONFIG");
    std::tie(lo.fork_dir, lo.fork_which) = cs::parse_fork_source(args.get("fork"));
    *raw = json::object();  // overrides on top of the parent's config.json
    for (auto& s : args.all("set")) cs::apply_override(*raw, s);
    lo.run_dir = args.get("run-dir", "");
    lo.workspace = args.get("workspace", cs::default_workspace());
  } else {
    *raw = fresh;  // --threads recorded in the new run's config.json, as the window does
    lo.run_dir = args.get("run-dir", "");
    lo.workspace = args.get("workspace", cs::default_workspace());
  }
  if (args.has("steps") && (args.has("resume") || args.has("fork")))
    training_section(*raw)["steps"] = args.get_int("steps", 0);
  if (args.has("threads") && args.has("fork"))  // recorded in the new run's config.json, as the window does
    training_section(*raw)["threads"] = args.get_int("threads", 0, 0, 1024);
  return lo;
}

// What `train` prints while it trains: a progress line on a terminal (at most 4 a second), each
// evaluation, or with --json every record as a JSON line ("metrics", as metrics.jsonl).
static cs::TrainerCallbacks train_printer(bool tty, bool json_out, bool quiet) {
  cs::TrainerCallbacks cb;
  auto last_print = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now() -
                                                                            std::chrono::seconds(10));
  cb.on_progress = [tty, last_print](const cs::Progress& p) {
    auto now = std::chrono::steady_clock::now();
    if (!tty || (now - *last_print < std::chrono::milliseconds(250) && p.step != p.total_steps)) return;
    *last_print = now;
    std::fprintf(stderr, "\r  step %lld/%lld [%3.0f%%]  loss %.3f  %s %s/s  elapsed %s  ETA %s   ",
                 static_cast<long long>(p.step), static_cast<long long>(p.total_steps),
                 100.0 * p.step / std::max<int64_t>(1, p.total_steps), p.last_loss, fmt_rate(p.throughput).c_str(),
                 p.unit.c_str(), cs::format_duration(p.elapsed).c_str(), cs::format_duration(p.eta).c_str());
    std::fflush(stderr);
  };
  cb.on_metrics = [tty, json_out, quiet](const cs::MetricsRecord& r) {
    if (json_out) {
      // JSON Lines with a record type: "metrics" lines (as metrics.jsonl), then one "summary"
      json line = {{"record", "metrics"}};
      line.update(r.to_json());
      std::cout << line.dump() << "\n" << std::flush;
    } else if (r.eval && !quiet) {
      if (tty) std::fprintf(stderr, "\n");
      std::ostringstream o;
      o << "  eval " << r.split << " @ step " << r.step << ":";
      for (auto& [k, v] : r.values) o << " " << k << " " << std::setprecision(4) << v;
      std::cerr << o.str() << "\n";
    }
  };
  return cb;
}

// The end of `train`: the summary (a "summary" JSON line with --json), or with --quiet only why it failed.
static void print_train_outcome(const cs::TrainOutcome& outcome, bool json_out, bool quiet) {
  const auto& s = outcome.summary;
  if (json_out) {
    json j = {{"record", "summary"}};
    j.update(s.to_json());
    j["run_dir"] = outcome.run_dir;
    std::cout << j.dump() << "\n";
  } else if (!quiet) {
    std::cerr << "  " << s.status << (s.reason.empty() ? "" : ": " + s.reason) << "\n";
    if (s.has_best)
      std::cerr << "  best valid " << s.primary_metric << " " << s.best_valid << " at step " << s.best_step << "\n";
    if (s.has_test) std::cerr << "  test " << s.primary_metric << " " << s.test_metric << "\n";
    std::cerr << "  run directory: " << outcome.run_dir << "\n";
  } else if (s.status == "failed") {
    // --quiet still says why a run failed (exit 1)
    std::cerr << "cellscope-cli train: failed: " << s.reason << "\n";
  }
}

int cmd_train(const std::vector<std::string>& a) {
  auto args = parse(a, "train");
  if (args.has("nproc") && args.has("rank")) throw UsageError("--nproc starts the workers itself; give no --rank");
  if (args.has("fork") && (args.has("nproc") || args.has("rank") || args.has("world-size")))
    throw UsageError("--fork starts a single-process run; fork first, then --resume the new run with --nproc");
  if (args.has("fork") && args.has("resume")) throw UsageError("give either --resume or --fork");
  if (args.has("nproc") && args.get_int("nproc", 1) != 1) return train_launch_local(a, args);
  // A stop asked for during start-up (reading the data, hashing it, the rendezvous) is kept and
  // honoured at the first step: the run stops there with its checkpoint (75 for SIGTERM), where
  // the signal's default action ended the process before (#52). What comes before main() (the
  // loading of LibTorch's libraries, about half a second) still ends it by the signal.
  cs::TrainerControl control;
  g_control = &control;
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  struct Restore {
    ~Restore() {
      g_control = nullptr;
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
    }
  } restore;
  // Without any of the data-parallel flags, a launcher's environment (torchrun, PyTorchJob) names
  // this worker's rank, world and rendezvous; the flags, when given, win.
  LauncherEnv env;
  if (!args.has("rank") && !args.has("world-size") && !args.has("master") && !args.has("store-file") &&
      !args.has("nproc"))
    env = launcher_env();
  const bool from_env = env.present && env.world > 1;
  const bool distributed = args.has("rank") || args.has("world-size") || from_env;
  // The configuration of a new run: CONFIG, --set, --steps and --threads (recorded in config.json).
  auto new_run_config = [&] {
    if (args.positional.size() != 1) throw UsageError("expected one CONFIG (a JSON file or a preset name)");
    json r = load_config_arg(args.positional[0], args.all("set"));
    if (args.has("steps")) training_section(r)["steps"] = args.get_int("steps", 0);
    if (args.has("threads")) training_section(r)["threads"] = args.get_int("threads", 0, 0, 1024);
    return r;
  };
  // A restarted job (a requeued Slurm step, a restarted PyTorchJob pod) runs the same
  // `train CONFIG --run-dir D` again: a D that holds this configuration is resumed, another one is
  // refused (cs::run_dir_holds_this_run). Decided before the rendezvous, so that every rank sees D
  // as it was before rank 0 could create it.
  const bool new_run = !args.has("resume") && !args.has("fork");
  const json fresh = new_run ? new_run_config() : json();  // read once, for the check and the run
  const bool restart = new_run && args.has("run-dir") && cs::run_dir_holds_this_run(fresh, args.get("run-dir"));
  if (distributed && !from_env && (!args.has("rank") || !args.has("world-size")))
    throw UsageError("a data-parallel worker needs both --rank and --world-size");
  const bool root = (from_env ? env.rank : args.get_int("rank", 0)) == 0;
  std::unique_ptr<cs::DistContext> dist;
  std::string device_override;  // cuda -> cuda:LOCAL_RANK on a launcher's worker
  if (distributed) dist = train_rendezvous(args, env, from_env, &device_override);
  const bool resuming = args.has("resume") || restart;
  // validate -> threads + seed -> make_task (loads data) -> run directory -> Trainer (train/launch.h)
  json raw;
  cs::LaunchOptions lo = train_launch_options(args, env, fresh, restart, root, &raw);
  lo.dist = dist.get();
  if (!device_override.empty()) training_section(raw)["device"] = device_override;
  cs::LaunchedRun launched = cs::start_run(raw, lo);
  const json& cfg = launched.cfg;
  std::shared_ptr<cs::RunStore> store = launched.store;
  const bool json_out = args.has("json") && root, quiet = args.has("quiet") || !root;
  const bool tty = ::isatty(2) && !quiet && !json_out;
  if (!quiet && !json_out)
    std::cerr << (resuming          ? "resuming "
                  : launched.forked ? "forking "
                                    : "training ")
              << cfg["model"]["cell"].get<std::string>() << " on " << cfg["task"]["name"].get<std::string>() << " -> "
              << store->dir()
              << (dist ? " (" + std::to_string(dist->world) + " processes, " + dist->backend + ")" : std::string())
              << "\n";
  for (const auto& note : launched.notes) {
    if (!quiet && !json_out) std::cerr << "  " << note << "\n";
    if (root) store->log(note);
  }
  auto outcome = launched.trainer->run(&control, train_printer(tty, json_out, quiet));
  if (tty) std::fprintf(stderr, "\n");
  print_train_outcome(outcome, json_out, quiet);
  const auto& s = outcome.summary;
  // SIGTERM here or on another rank (the workers agree on it, train/step_sync.h): requeue.
  if (s.status == "stopped" && control.stop_signal.load() == SIGTERM) return kExitStoppedBySigterm;
  return s.status == "failed" ? 1 : 0;
}

void apply_script_option(const Args& args) {
  if (!args.has("script")) return;
  if (args.get("script").empty()) throw UsageError("--script needs a PATH");
  cs::set_script_override(args.get("script"));
}

// ------------------------------------------------------------------ eval
int cmd_eval(const std::vector<std::string>& a) {
  auto args = parse(a, "eval");
  if (args.positional.size() != 1) throw UsageError("expected one RUN_DIR");
  apply_script_option(args);
  cs::set_threads(static_cast<int>(args.get_int("threads", 0)));
  auto task = cs::load_run_task(args.positional[0], args.get("checkpoint", "best"));
  const std::string split = args.get("split", "test");
  auto r = task->evaluate(split);
  json j = r.metrics;
  for (auto& [k, v] : r.labels) j[k] = v;  // e.g. seq2seq's "decode"
  j["split"] = split;
  j["units"] = r.units;
  j["checkpoint"] = args.get("checkpoint", "best");
  if (args.has("json")) std::cout << j.dump(2) << "\n";
  else {
    std::cout << split << ":";
    for (auto& [k, v] : r.metrics) std::cout << " " << k << " " << v;
    for (auto& [k, v] : r.labels) std::cout << " " << k << " \"" << v << "\"";
    std::cout << "  (" << r.units << " " << task->unit_name() << ")\n";
  }
  return 0;
}

// ------------------------------------------------------------------ label
int cmd_label(const std::vector<std::string>& a) {
  auto args = parse(a, "label");
  if (args.positional.empty() || args.positional.size() > 2) throw UsageError("expected RUN_DIR [TEXT]");
  cs::RunStore store(args.positional[0]);
  if (!cs::file_exists(store.path("config.json")))
    throw cs::UserError(args.positional[0] + " is not a run directory (no config.json)");
  if (args.has("clear")) {
    if (args.positional.size() == 2) throw UsageError("give TEXT or --clear, not both");
    store.write_label("");
    return 0;
  }
  if (args.positional.size() == 2) store.write_label(args.positional[1]);
  else std::cout << store.read_label() << "\n";
  return 0;
}

// ------------------------------------------------------------------ status
int cmd_status(const std::vector<std::string>& a) {
  auto args = parse(a, "status");
  if (args.positional.size() != 1) throw UsageError("expected one RUN_DIR");
  const std::string& dir = args.positional[0];
  const cs::RunState r = cs::probe_run_state(dir);
  if (args.has("json")) {
    std::cout << json{{"run_dir", dir},
                      {"state", r.state},
                      {"status", r.summary.status},
                      {"step", r.summary.step},
                      {"reason", r.summary.reason},
                      {"writer_pid", r.writer_pid.empty() ? json(nullptr) : json(r.writer_pid)},
                      {"checkpoint", r.has_checkpoint},
                      {"exit_status", r.exit_status}}
                     .dump()
              << "\n";
    return r.exit_status;
  }
  std::cout << dir << ": " << r.state;
  if (r.state != "not started") std::cout << " at step " << r.summary.step;
  if (!r.writer_pid.empty()) std::cout << " (PID " << r.writer_pid << " writes it)";
  if (!r.summary.reason.empty() && r.state != "running") std::cout << ": " << r.summary.reason;
  std::cout << "\n";
  if (r.exit_status == 75 || (r.state == "interrupted" && r.has_checkpoint))
    std::cout << "continue it with the command that started it, or: cellscope-cli train --resume " << dir << "\n";
  else if (r.state == "interrupted" || r.state == "not started")
    std::cout << "no checkpoint to continue from: train it again\n";
  return r.exit_status;
}

// ------------------------------------------------------------------ bench
int cmd_bench(const std::vector<std::string>& a) {
  if (std::find(a.begin(), a.end(), "--dist") != a.end() || std::find(a.begin(), a.end(), "--dist-worker") != a.end())
    return cmd_bench_dist(a);
  if (std::find(a.begin(), a.end(), "--analysis") != a.end()) return cmd_bench_analysis(a);  // analyze_cmd.cpp
  for (const char* f : {"--peer", "--peer-check", "--peer-export", "--peer-child"})
    if (std::find(a.begin(), a.end(), f) != a.end()) return cmd_bench_peer(a);  // bench_peer_cmd.cpp
  auto args = parse(a, "bench");
  if (args.has("data")) {
    // Corpus loading benchmark: a synthetic text8-like file of N MB, streamed (mmap) into ids.
    const long long mb = args.get_int("data", 100, 1, 1000000);
    json r = cs::bench_char_loading(static_cast<size_t>(mb));
    if (args.has("json")) std::cout << r.dump() << "\n";
    else std::cout << r.dump(2) << "\n";
    return 0;
  }
  const bool classify = args.get("task", "char_lm") == "classify";  // --task classify: bench/bench_classify.cpp
  if (!classify && args.get("task", "char_lm") != "char_lm") throw UsageError("--task must be char_lm or classify");

  cs::BenchOptions o;
  o.model = {{"cell", args.get("cell", "gru")},
             {"embed", args.get_int("embed", classify ? 200 : 256, 1, 65536)},
             {"hidden", args.get_int("hidden", classify ? 200 : 512, 1, 65536)}};
  for (auto& s : args.all("set")) {
    json tmp = {{"model", o.model}};
    cs::apply_override(tmp, s);
    if (!tmp.contains("model") || tmp.size() != 1) throw UsageError("bench --set takes model.KEY=VALUE");
    o.model = tmp["model"];
  }
  o.batch = args.get_int("batch", 32, 1, 65536);
  o.seq = args.get_int("seq", classify ? 50 : 150, 1, 100000);
  o.vocab = args.get_int("vocab", classify ? 20000 : 96, 1, 10000000);
  o.baseline = args.get("baseline", "");
  o.iters = static_cast<int>(args.get_int("iters", 0, 0, 1000000));
  o.threads = static_cast<int>(args.get_int("threads", 0, 0, 1024));
  {
    // The training memory bound of the configuration (config/schema.h), as validation does.
    const json shape = {{"model", o.model}, {"training", {{"batch", o.batch}, {"bptt", o.seq}}}};
    const double need = cs::training_memory_lower_bound(shape, "char_lm").total(), have = cs::physical_memory_bytes();
    if (have > 0 && need > have)
      throw UsageError("this benchmark needs at least " + std::to_string(static_cast<long long>(need / (1 << 30))) +
                       " GiB of memory, more than this machine's " +
                       std::to_string(static_cast<long long>(have / (1 << 30))) +
                       " GiB: reduce --hidden, --batch or --seq");
  }
  cs::set_threads(o.threads);
  json r = classify ? cs::run_bench_classify(o) : cs::run_bench(o);
  r["blas"] = cs::detect_blas().name;
  if (args.has("json")) {
    std::cout << r.dump() << "\n";
  } else {
    std::cout << std::fixed << std::setprecision(2);
    std::cout << "cell " << r["cell"].get<std::string>() << "  batch " << o.batch << "  seq " << o.seq << "  embed "
              << r["embed"] << "  hidden " << r["hidden"] << "  threads " << r["threads"] << "  BLAS "
              << r["blas"].get<std::string>() << "\n"
              << "  training step     " << r["seconds_per_step"].get<double>() * 1e3 << " ms  ("
              << fmt_rate(r["throughput"].get<double>()) << " " << r.value("unit", "chars/s") << ")\n"
              << "  achieved          ";
    // a cell without an analytic FLOP count (a TorchScript cell: NaN, written as null)
    if (r["gflops"].is_number() && std::isfinite(r["gflops"].get<double>()))
      std::cout << r["gflops"].get<double>() << " GFLOP/s  (GEMM " << r["gemm_gflops"].get<double>()
                << " GFLOP/s, efficiency " << 100 * r["efficiency"].get<double>() << "%)\n";
    else std::cout << "unknown GFLOP/s (cell " << r["cell"].get<std::string>() << " has no analytic FLOP count)\n";
    if (r.contains("baseline"))
      std::cout << "  baseline " << r["baseline"].get<std::string>() << "  "
                << r["baseline_seconds_per_step"].get<double>() * 1e3 << " ms  ("
                << fmt_rate(r["baseline_throughput"].get<double>()) << " " << r.value("unit", "chars/s") << ")\n"
                << "  time ratio        " << r["time_ratio"].get<double>() << "x   FLOP ratio ";
    if (r.contains("baseline")) {
      if (r["flop_ratio"].is_number() && std::isfinite(r["flop_ratio"].get<double>()))
        std::cout << r["flop_ratio"].get<double>() << "x\n";
      else std::cout << "unknown\n";
    }
  }
  auto warn = cs::blas_warning(cs::detect_blas());
  if (!warn.empty()) std::cerr << "*** " << warn << " ***\n";
  return 0;
}

}  // namespace cli
