#include "util/cpu_cache.h"
#include "bench/bench_peer.h"

#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "bench/bench.h"
#include "bench/gemm_floor.h"
#include "cells/registry.h"
#include "tasks/char_lm.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/own_paths.h"
#include "util/paths.h"

extern char** environ;

namespace cs {

namespace fs = std::filesystem;

const std::vector<std::string>& peer_cells() {
  static const std::vector<std::string> c = {"gru_dt",      "sat_mzu",  "gcn_mzu",           "cap_mzu",
                                             "cru_shallow", "cru_deep", "cru_deep_enhanced", "mcrnn"};
  return c;
}

json paper_model(const std::string& cell, int64_t embed, int64_t hidden) {
  json m = {{"cell", cell}, {"embed", embed}, {"hidden", hidden}};
  if (cell == "gru_dt") {
    m["depth"] = 1;  // MZU paper Table 4's GRU+DT (L = 1)
  } else if (cell == "sat_mzu" || cell == "gcn_mzu" || cell == "cap_mzu") {
    // resources/presets/ptb-*-mzu-dt.json without the candidate dropout
    m.update({{"depth", 1},
              {"share_transition", true},
              {"layer_norm", true},
              {"zone_disagreement", 1.0},
              {"filter", 1000},
              {"zones", 4}});
    if (cell == "cap_mzu") m.update({{"capsules", 2}, {"routing_iters", 3}});
  } else if (cell.rfind("cru_", 0) == 0) {
    m["filter_length"] = 3;       // CRU paper's k
    m["conv_window"] = "causal";  // the bench's task is a language model (cells/CRU_NOTES.md)
  } else if (cell == "mcrnn") {
    m.update({{"block", 4}, {"base", "lstm"}, {"lstm_memory", "prev"}});  // MC-RNN-3 over an LSTM
  }
  return m;
}

std::string peers_script_path() {
  if (const char* e = std::getenv("CELLSCOPE_PEERS_SCRIPT"); e && *e) return e;
  const fs::path res = resources_dir();
  const fs::path src = res.parent_path() / "core" / "run" / "bench" / "peers" / "peers.py";
  if (fs::exists(src)) return src.string();
  return (res / "peers" / "peers.py").string();
}

std::string peer_python() {
  const char* e = std::getenv("CELLSCOPE_PEER_PYTHON");
  if (!e || !*e) return "/usr/bin/python3";
  const std::string name = e;
  // A bare name (CELLSCOPE_PEER_PYTHON=python3, a virtual environment's) is looked up on PATH, as a shell
  // would: run_capture executes a path (a GPU run once lost every Python measurement to "cannot run python3").
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string cand = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return name;  // not found: run_capture says it cannot run it
}

// ------------------------------------------------------------------ check export
static void write_raw(const std::string& path, const void* data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!f) throw UserError("cannot write " + path);
}

namespace {

const char* const kPeerFormat =
    "params.f64/grads.f64: float64 little-endian, named_parameters() order; x.i64/y.i64: int64 [seq, batch]";

// "" when `dir` may be replaced by a new export: absent, empty, or an earlier export of this
// command (only its five files, model.json naming its format); else why not (#52's rule: a
// command replaces only what is provably its own).
std::string not_an_earlier_peer_export(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) return "";
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return "it is not a folder";
  const std::vector<std::string> ours = {"params.f64", "grads.f64", "x.i64", "y.i64", "model.json"};
  bool any = false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (std::find(ours.begin(), ours.end(), n) == ours.end() || !e.is_regular_file(ec) || e.is_symlink(ec))
      return "it holds '" + n + "', which a peer export does not write";
    any = true;
  }
  if (!any) return "";
  std::ifstream f(dir + "/model.json");
  const json m = json::parse(f, nullptr, false);
  if (!m.is_object() || m.value("format", std::string()) != kPeerFormat) return "its model.json is not a peer export's";
  return "";
}

}  // namespace

json export_peer_check(const json& model_in, int64_t B, int64_t T, int64_t V, const std::string& out) {
  json model = load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", model_in}}, "bench model")["model"];
  if (const std::string why = not_an_earlier_peer_export(out); !why.empty())
    throw UserError("'" + out + "' is not replaced: " + why +
                    " (a peer export goes into a new or empty folder, or "
                    "over an earlier one)");
  fs::create_directories(fs::path(out).parent_path().empty() ? fs::path(".") : fs::path(out).parent_path());
  // Written into a folder of this call's own beside it, then put in place (util/own_paths.h).
  const std::string dir = make_temp_dir_beside(out);
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      std::error_code ec;
      if (!d.empty()) fs::remove_all(d, ec);
    }
  } cleanup{dir};
  torch::manual_seed(0);
  CharLMModel net(model, V);
  net->to(torch::kFloat64);
  net->train();
  auto x = torch::randint(0, V, {T, B}, torch::kInt64);
  auto y = torch::randint(0, V, {T, B}, torch::kInt64);
  auto states = net->stack->initial_state(B, torch::TensorOptions().dtype(torch::kFloat64));
  StepContext ctx;
  auto logits = net->forward(x, states, ctx);
  auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
  if (ctx.extra_loss.defined()) loss = loss + ctx.extra_loss;
  net->zero_grad();
  loss.backward();
  json index = json::array();
  std::vector<double> p, g;
  for (const auto& kv : net->named_parameters()) {
    const auto& t = kv.value();
    auto tc = t.detach().contiguous().to(torch::kFloat64);
    auto gc = t.grad().defined() ? t.grad().contiguous().to(torch::kFloat64) : torch::zeros_like(tc);
    index.push_back({{"name", kv.key()}, {"shape", t.sizes().vec()}, {"offset", p.size()}});
    p.insert(p.end(), tc.data_ptr<double>(), tc.data_ptr<double>() + tc.numel());
    g.insert(g.end(), gc.data_ptr<double>(), gc.data_ptr<double>() + gc.numel());
  }
  write_raw(dir + "/params.f64", p.data(), p.size() * sizeof(double));
  write_raw(dir + "/grads.f64", g.data(), g.size() * sizeof(double));
  auto xc = x.contiguous(), yc = y.contiguous();
  write_raw(dir + "/x.i64", xc.data_ptr<int64_t>(), static_cast<size_t>(xc.numel()) * sizeof(int64_t));
  write_raw(dir + "/y.i64", yc.data_ptr<int64_t>(), static_cast<size_t>(yc.numel()) * sizeof(int64_t));
  json meta = {{"model", model},       {"batch", B},      {"seq", T},
               {"vocab", V},           {"params", index}, {"loss", loss.item<double>()},
               {"format", kPeerFormat}};
  {
    std::ofstream f(dir + "/model.json");
    f << meta.dump(1) << "\n";
    if (!f) throw UserError("cannot write " + dir + "/model.json");
  }
  if (const std::string why = not_an_earlier_peer_export(out); !why.empty())  // again: it may have changed since
    throw UserError("'" + out + "' is not replaced: " + why);
  replace_dir_with(dir, out);
  cleanup.d.clear();
  return meta;
}

// ------------------------------------------------------------------ child measurement
static int64_t status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string k = std::string(key) + ":";
  while (std::getline(f, line))
    if (line.rfind(k, 0) == 0) return std::atoll(line.c_str() + k.size());
  return 0;
}

static bool reset_hwm() {
  // Linux >= 4.0: writing 5 to clear_refs resets VmHWM to the current RSS.
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

json measure_step_child(const json& model, int64_t B, int64_t T, int64_t V, int iters, double min_seconds,
                        bool autograd) {
  using Clock = std::chrono::steady_clock;
  CharLMStepBench b(model, B, T, V, autograd);
  // Peak memory of a training step: VmHWM reset after the set-up, minus the RSS then (the
  // first step also allocates the gradients and Adam's moments, as Python's first step does).
  // The CPU block cache (util/cpu_cache.h) starts empty, so what it keeps during the step counts.
  cpu_cache_release();
  const bool reset = reset_hwm();
  const int64_t base = status_kib("VmRSS");
  // Over two steps: the second is the first to run on cached blocks, and must not need more.
  b.step();
  b.step();
  const int64_t peak = status_kib("VmHWM");
  std::vector<double> ts;
  const CpuCacheStats cache0 = cpu_cache_stats();
  const auto start = Clock::now();
  for (;;) {
    const auto t0 = Clock::now();
    b.step();
    ts.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    if (iters > 0 ? static_cast<int>(ts.size()) >= iters
                  : ((total >= min_seconds && ts.size() >= 3) || ts.size() >= 200))
      break;
  }
  const CpuCacheStats cache1 = cpu_cache_stats();
  const std::vector<double> in_order = ts;  // as timed, to show any warm-up trend
  std::sort(ts.begin(), ts.end());
  // The large-GEMM rate in this process right after the steps: on a loaded machine the rate
  // the parent measured minutes earlier may not be what this child got (efficiency uses this one).
  const double gemm = gemm_gflops();
  // The GEMM floor: the products of one more step, each replayed alone (bench/gemm_floor.h).
  const GemmFloor floor = measure_gemm_floor([&] { b.step(); });
  return {{"seconds_per_step", ts[ts.size() / 2]},
          {"gemm_floor",
           floor.to_json(std::getenv("CELLSCOPE_FLOOR_TOP") ? std::atoi(std::getenv("CELLSCOPE_FLOOR_TOP")) : 8)},
          {"gemm_gflops", gemm},
          {"steps_timed", ts.size()},
          {"step_seconds", in_order},
          {"flops_per_step", b.flops_per_step()},              // executed (a folded embedding's products not)
          {"model_flops_per_step", b.model_flops_per_step()},  // the model's analytic count
          {"peak_step_bytes", (peak - base) * 1024},
          {"peak_rss_bytes", status_kib("VmHWM") * 1024},
          {"hwm_reset", reset},
          {"threads", at::get_num_threads()},
          // the CPU block cache over the timed steps (util/cpu_cache.h): large allocations served
          // from kept memory, from memory whose pages had been given back (faulted in anew), new
          {"cpu_cache",
           {{"installed", cpu_cache_installed()},
            {"hits", cache1.hits - cache0.hits},
            {"hits_given_back", cache1.hits_given_back - cache0.hits_given_back},
            {"misses", cache1.misses - cache0.misses},
            {"mapped_bytes", cache1.mapped_bytes}}}};
}

// ------------------------------------------------------------------ processes
int run_capture(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out,
                std::string* err) {
  int po[2], pe[2];
  if (::pipe(po) != 0) return -1;
  if (::pipe(pe) != 0) {
    ::close(po[0]);
    ::close(po[1]);
    return -1;
  }
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    const std::string s = *e;
    bool replaced = false;
    for (const auto& n : env)
      if (s.substr(0, s.find('=') + 1) == n.substr(0, n.find('=') + 1)) replaced = true;
    if (!replaced) envs.push_back(s);
  }
  for (const auto& n : env) envs.push_back(n);
  std::vector<char*> av, ev;
  for (const auto& s : argv) av.push_back(const_cast<char*>(s.c_str()));
  av.push_back(nullptr);
  for (const auto& s : envs) ev.push_back(const_cast<char*>(s.c_str()));
  ev.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::dup2(po[1], 1);
    ::dup2(pe[1], 2);
    ::close(po[0]);
    ::close(pe[0]);
    ::close(po[1]);
    ::close(pe[1]);
    ::execve(av[0], av.data(), ev.data());
    std::fprintf(stderr, "cannot run %s: %s\n", av[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(po[1]);
  ::close(pe[1]);
  std::string o, e;
  pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? o : e).append(buf, static_cast<size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (out) *out = o;
  if (err) *err = e;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

double peer_loadavg1() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

// The last line of `out` that parses as a JSON object.
json peer_last_json(const std::string& out) {
  std::istringstream in(out);
  std::string line;
  json r;
  while (std::getline(in, line)) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_object()) r = j;
  }
  return r;
}

std::string peer_tail(const std::string& s, size_t n) { return s.size() > n ? s.substr(s.size() - n) : s; }

// The measurement of the median round (by s/step; the lower median for an even count), with every
// round's s/step in "samples" so a reader sees the spread.
json peer_median_sample(const std::vector<json>& v) {
  std::vector<size_t> idx(v.size());
  for (size_t i = 0; i < v.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return v[a]["seconds_per_step"].get<double>() < v[b]["seconds_per_step"].get<double>();
  });
  json m = v[idx[(v.size() - 1) / 2]];
  json samples = json::array();
  for (const auto& j : v) samples.push_back(j["seconds_per_step"]);
  m["samples"] = samples;
  return m;
}

// The shape and length of one measurement, as both the Cellscope child and the Python peer take them.
static std::vector<std::string> measurement_args(const PeerBenchOptions& o, int threads, const json& model, int64_t B) {
  return {"--model-json", model.dump(),
          "--batch",      std::to_string(B),
          "--seq",        std::to_string(o.seq),
          "--vocab",      std::to_string(o.vocab),
          "--threads",    std::to_string(threads),
          "--iters",      std::to_string(o.iters)};
}

// One Cellscope measurement of `model` at batch B in a fresh process (`bench --peer-child`), its
// default path, or the autograd path (CELLSCOPE_FAST=0).
static json cellscope_measurement(const PeerBenchOptions& o, int threads, const json& model, int64_t B, bool autograd) {
  std::vector<std::string> argv = {o.self_exe, "bench", "--peer-child"};
  for (auto& x : measurement_args(o, threads, model, B)) argv.push_back(std::move(x));
  if (autograd) argv.push_back("--autograd");
  std::string out, err;
  const int rc = run_capture(
      argv, {"OMP_NUM_THREADS=" + std::to_string(threads), std::string("CELLSCOPE_FAST=") + (autograd ? "0" : "1")},
      &out, &err);
  json j = peer_last_json(out);
  if (rc != 0 || !j.contains("seconds_per_step"))
    throw UserError("bench --peer: the Cellscope measurement of " + model.value("cell", std::string()) +
                    " failed (exit " + std::to_string(rc) + "): " + peer_tail(err, 600));
  return j;
}

// One measurement of the plain-PyTorch peer (peers.py `time`, run by `py`) of the resolved model.
static json python_measurement(const PeerBenchOptions& o, int threads, const std::string& py, const std::string& script,
                               const json& model, int64_t B) {
  std::vector<std::string> argv = {py, script, "time"};
  for (auto& x : measurement_args(o, threads, model, B)) argv.push_back(std::move(x));
  argv.push_back("--min-seconds");
  argv.push_back(std::to_string(o.min_seconds));
  std::string out, err;
  const int rc = run_capture(argv, {"OMP_NUM_THREADS=" + std::to_string(threads)}, &out, &err);
  json j = peer_last_json(out);
  if (rc != 0 || !j.contains("seconds_per_step"))
    throw UserError("bench --peer: the Python peer of " + model.value("cell", std::string()) + " (" + py + " " +
                    script + ") failed (exit " + std::to_string(rc) + "): " + peer_tail(err, 600));
  return j;
}

namespace {

// What every row of one run_peer_bench call shares.
struct PeerRun {
  const PeerBenchOptions& o;
  int threads;
  int rounds;
  double gemm;  // the parent's large-GEMM GFLOP/s (a child's own, where it measured one, comes first)
  std::string py, script;
  std::ostream* log;
};

// LibTorch's fused GRU at the same shape (Cellscope's gru cell runs at::gru).
json fused_gru_row(const PeerRun& pr, int64_t B) {
  json m = {{"cell", "gru"}, {"embed", pr.o.embed}, {"hidden", pr.o.hidden}};
  if (pr.log) *pr.log << "batch " << B << ": gru (LibTorch fused) ..." << std::flush;
  std::vector<json> cs_;
  for (int k = 0; k < pr.rounds; ++k) cs_.push_back(cellscope_measurement(pr.o, pr.threads, m, B, false));
  json c = peer_median_sample(cs_);
  json row = {{"cell", "gru"}, {"label", "LibTorch fused GRU"}, {"batch", B}, {"model", m}, {"cellscope", c}};
  row["efficiency"] =
      c["flops_per_step"].get<double>() / c["seconds_per_step"].get<double>() / 1e9 / c.value("gemm_gflops", pr.gemm);
  if (c.contains("gemm_floor"))
    row["floor_efficiency"] = c["flops_per_step"].get<double>() / c["gemm_floor"]["seconds"].get<double>() / 1e9 /
                              c.value("gemm_gflops", pr.gemm);
  if (pr.log) *pr.log << " " << c["seconds_per_step"].get<double>() << " s/step\n";
  return row;
}

// The Python columns of a row: the peer's time, the speedup, the efficiencies against it.
void add_python_columns(json& row, const json& c, const json& p, double mflops, double gemm) {
  const double flops = c["flops_per_step"].get<double>(), t = c["seconds_per_step"].get<double>();
  row["python"] = p;
  row["speedup"] = p["seconds_per_step"].get<double>() / t;
  row["python_efficiency"] = mflops / p["seconds_per_step"].get<double>() / 1e9 / p.value("gemm_gflops", gemm);
  // The efficiency Cellscope's executed products must reach for a 1.5x speedup over
  // Python (= 1.5 x Python's when nothing is folded)
  row["needed_efficiency"] = 1.5 * flops / p["seconds_per_step"].get<double>() / 1e9 / p.value("gemm_gflops", gemm);
  // On the speedup column's basis (the two children's times), so the two can be compared:
  // a ratio of efficiencies, each over its own child's GEMM rate, came out below the
  // speedup actually reached when the two rates differed (cru_shallow once showed 1.32x
  // "best possible" next to 1.54x reached).
  if (c.contains("gemm_floor") && c["gemm_floor"]["seconds"].get<double>() > 0)
    row["max_speedup"] = p["seconds_per_step"].get<double>() / c["gemm_floor"]["seconds"].get<double>();
}

// A cell of the papers in its papers' configuration: Cellscope's default path, its autograd path
// where a fast path exists, and the Python peer.
json cell_row(const PeerRun& pr, const std::string& cell, int64_t B) {
  json m = paper_model(cell, pr.o.embed, pr.o.hidden);
  for (const auto& s : pr.o.sets) {
    json tmp = {{"model", m}};
    apply_override(tmp, s);
    m = tmp["model"];
  }
  const json resolved = load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", m}}, "bench model")["model"];
  json row = {{"cell", cell}, {"batch", B}, {"model", m}};
  if (pr.log) *pr.log << "batch " << B << ": " << cell << " ..." << std::flush;
  // Rounds interleave the variants (default path, autograd path, Python, then again), so a
  // slow spell of the machine hits all of them alike; each reported time is the median round.
  const std::string refusal = fast_path_refusal(resolved);  // the cell registry's answer
  const bool has_fast = refusal.empty();
  if (!has_fast) row["stepwise_reason"] = refusal;
  std::vector<json> cv, av, pv;
  bool python_ok = pr.o.python;
  for (int k = 0; k < pr.rounds; ++k) {
    cv.push_back(cellscope_measurement(pr.o, pr.threads, m, B, false));
    if (has_fast) av.push_back(cellscope_measurement(pr.o, pr.threads, m, B, true));
    if (python_ok) {
      // A peer that cannot run this model (an option it does not implement, no python3-torch)
      // leaves its columns empty and says why; Cellscope's numbers are still reported.
      try {
        pv.push_back(python_measurement(pr.o, pr.threads, pr.py, pr.script, resolved, B));
      } catch (const UserError& e) {
        row["python_error"] = e.what();
        python_ok = false;
        pv.clear();
        if (pr.log) *pr.log << " (Python peer: " << e.what() << ")";
      }
    }
  }
  json c = peer_median_sample(cv);
  row["cellscope"] = c;
  // Cellscope's efficiency and floor over the products it executed; the autograd path's and
  // Python's over the model's count (they fold nothing). With a folded embedding
  // (cells/token_fold.h) the two differ, and the row says by how much.
  const double flops = c["flops_per_step"].get<double>(), t = c["seconds_per_step"].get<double>();
  const double mflops = c.value("model_flops_per_step", flops);
  if (mflops > flops * (1 + 1e-9)) row["folded_fraction"] = 1.0 - flops / mflops;
  row["efficiency"] = flops / t / 1e9 / c.value("gemm_gflops", pr.gemm);
  if (pr.log) *pr.log << " cellscope " << t;
  if (has_fast) {
    json a = peer_median_sample(av);
    row["cellscope_autograd"] = a;
    row["autograd_efficiency"] = mflops / a["seconds_per_step"].get<double>() / 1e9 / a.value("gemm_gflops", pr.gemm);
    if (pr.log) *pr.log << ", autograd " << a["seconds_per_step"].get<double>();
  }
  if (c.contains("gemm_floor")) {
    // The efficiency the step would have if it took only its products' time (no code that runs
    // these products through this BLAS can do better), and what it allows against Python.
    row["floor_efficiency"] = flops / c["gemm_floor"]["seconds"].get<double>() / 1e9 / c.value("gemm_gflops", pr.gemm);
  }
  if (!pv.empty()) {
    const json p = peer_median_sample(pv);
    add_python_columns(row, c, p, mflops, pr.gemm);
    if (pr.log) *pr.log << ", python " << p["seconds_per_step"].get<double>();
  }
  if (pr.log) *pr.log << " s/step\n";
  return row;
}

}  // namespace

json run_peer_bench(const PeerBenchOptions& o, std::ostream* log) {
  const int threads = o.threads > 0 ? o.threads : at::get_num_threads();
  std::vector<std::string> cells = o.cells.empty() ? peer_cells() : o.cells;
  json r;
  r["threads"] = threads;
  r["seq"] = o.seq;
  r["embed"] = o.embed;
  r["hidden"] = o.hidden;
  r["vocab"] = o.vocab;
  r["load_before"] = peer_loadavg1();
  r["gemm_gflops"] = gemm_gflops();
  const PeerRun pr{
      o, threads, std::max(1, o.rounds), r["gemm_gflops"].get<double>(), peer_python(), peers_script_path(), log};
  r["peer_script"] = pr.script;
  r["rounds"] = pr.rounds;
  json rows = json::array();
  for (int64_t B : o.batches) {
    rows.push_back(fused_gru_row(pr, B));
    for (const auto& cell : cells) rows.push_back(cell_row(pr, cell, B));
  }
  r["rows"] = rows;
  r["load_after"] = peer_loadavg1();
  return r;
}

static std::string fmt(double v, int prec) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(prec) << v;
  return s.str();
}

std::string peer_table_markdown(const json& r) {
  std::ostringstream s;
  s << "char-LM training step (embedding + cell + softmax + backward + Adam), seq " << r["seq"] << ", embed "
    << r["embed"] << ", hidden " << r["hidden"] << ", " << r["threads"] << " threads; large GEMM "
    << fmt(r["gemm_gflops"].get<double>(), 1)
    << " GFLOP/s at the start (each efficiency uses the GEMM rate its own "
       "process measured right after its steps); load average "
    << fmt(r["load_before"].get<double>(), 2) << " before, " << fmt(r["load_after"].get<double>(), 2) << " after";
  const int rounds = r.value("rounds", 1);
  if (rounds > 1)
    s << "; each time is the median of " << rounds << " rounds that interleave the variants (range in brackets)";
  s << "\n\n";
  s << "| model | batch | Cellscope s/step | autograd path s/step | plain PyTorch Python s/step | speedup vs Python | "
       "efficiency (of GEMM) | Python efficiency | needed for 1.5x | GEMM floor s/step (its efficiency) | "
       "best possible speedup | peak step MiB Cellscope | peak step MiB autograd path | peak step MiB Python |\n";
  s << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  auto mib = [](const json& m) { return fmt(m["peak_step_bytes"].get<double>() / (1 << 20), 1); };
  auto secs = [](const json& m) {  // "median" or "median [min-max]" over the rounds
    std::string t = fmt(m["seconds_per_step"].get<double>(), 3);
    if (m.contains("samples") && m["samples"].size() > 1) {
      double lo = 1e300, hi = 0;
      for (const auto& v : m["samples"]) lo = std::min(lo, v.get<double>()), hi = std::max(hi, v.get<double>());
      t += " [" + fmt(lo, 3) + "-" + fmt(hi, 3) + "]";
    }
    return t;
  };
  for (const auto& row : r["rows"]) {
    const auto& c = row["cellscope"];
    s << "| " << row.value("label", row["cell"].get<std::string>()) << (row.contains("folded_fraction") ? " (f)" : "")
      << " | " << row["batch"] << " | " << secs(c) << " | "
      << (row.contains("cellscope_autograd") ? secs(row["cellscope_autograd"]) : "-") << " | "
      << (row.contains("python") ? secs(row["python"]) : "-") << " | "
      << (row.contains("speedup") ? fmt(row["speedup"].get<double>(), 2) + "x" : "-") << " | "
      << fmt(row["efficiency"].get<double>(), 2) << " | "
      << (row.contains("python_efficiency") ? fmt(row["python_efficiency"].get<double>(), 2) : "-") << " | "
      << (row.contains("needed_efficiency") ? fmt(row["needed_efficiency"].get<double>(), 2) : "-") << " | "
      << (c.contains("gemm_floor") && row.contains("floor_efficiency")
              ? fmt(c["gemm_floor"]["seconds"].get<double>(), 3) + " (" +
                    fmt(row["floor_efficiency"].get<double>(), 2) + ")"
              : "-")
      << " | " << (row.contains("max_speedup") ? fmt(row["max_speedup"].get<double>(), 2) + "x" : "-") << " | "
      << mib(c) << " | " << (row.contains("cellscope_autograd") ? mib(row["cellscope_autograd"]) : "-") << " | "
      << (row.contains("python") ? mib(row["python"]) : "-") << " |\n";
  }
  // A folded embedding runs fewer products than the model's count: say so, and by how much, so
  // that an efficiency over executed FLOPs is not read as one over the model's.
  bool any_folded = false;
  for (const auto& row : r["rows"]) any_folded = any_folded || row.contains("folded_fraction");
  if (any_folded) {
    s << "\n(f) Cellscope folded the embedding lookup into the cell's first input map (core/model/cells/"
         "TOKEN_FOLD_NOTES.md): the same model and gradients, fewer products. Its efficiency, \"needed for 1.5x\" "
         "and GEMM-floor columns count the products it executed; the autograd path and Python run the model's "
         "count (their efficiency columns use it). Products not executed:";
    for (const auto& row : r["rows"])
      if (row.contains("folded_fraction"))
        s << " " << row["cell"].get<std::string>() << " b" << row["batch"] << " "
          << fmt(100.0 * row["folded_fraction"].get<double>(), 1) << "%;";
    s << "\n";
  }
  for (const auto& row : r["rows"])
    if (row.contains("stepwise_reason"))
      s << "\n"
        << row["cell"].get<std::string>() << ", batch " << row["batch"] << ": no fast path, the step-wise "
        << "autograd path runs: " << row["stepwise_reason"].get<std::string>() << "\n";
  for (const auto& row : r["rows"])
    if (row.contains("python_error"))
      s << "\n"
        << row["cell"].get<std::string>() << ", batch " << row["batch"]
        << ": no Python time: " << row["python_error"].get<std::string>() << "\n";
  return s.str();
}

}  // namespace cs
