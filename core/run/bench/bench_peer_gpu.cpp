// `cellscope-cli bench --peer --device cuda`: the paper cells' char-LM training step on a GPU, Cellscope's
// (its step captured as one CUDA graph, and the same step eagerly) against the same model in PyTorch
// on the same GPU (the Python peer eagerly and under torch.compile), and LibTorch's / PyTorch's cuDNN GRU
// at the same shape (bench/peers/README.md, "On a GPU").
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>

#include "bench/bench.h"
#include "bench/bench_peer.h"
#include "config/schema.h"
#include "train/graph_step.h"
#include "util/error.h"

namespace cs {

namespace {

// Seconds of an n x n x n float32 product on `d` (TF32 off), as GFLOP/s.
double device_gemm_gflops(const torch::Device& d, int64_t n = 4096) {
  torch::NoGradGuard ng;
  auto a = torch::randn({n, n}, torch::TensorOptions().device(d)), b = torch::randn({n, n}, a.options());
  auto c = torch::empty({n, n}, a.options());
  std::vector<double> ts;
  for (int i = 0; i < 12; ++i) {
    torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    torch::mm_out(c, a, b);
    torch::cuda::synchronize();
    if (i >= 2) ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  return 2.0 * static_cast<double>(n * n * n) / ts[ts.size() / 2] / 1e9;
}

std::string gpu_name(const torch::Device& d) {
  const json info = cuda_info();
  const int64_t idx = d.has_index() ? d.index() : 0;
  for (const auto& dev : info["devices"])
    if (dev["index"].get<int64_t>() == idx) return dev["name"].get<std::string>();
  return "";
}

}  // namespace

json measure_step_child_device(const json& model, int64_t B, int64_t T, int64_t V, int iters, double min_seconds,
                               const std::string& device, bool graph) {
  using Clock = std::chrono::steady_clock;
  const torch::Device d(device);
  if (!d.is_cuda()) throw UserError("measure_step_child_device: expected a CUDA device, got '" + device + "'");
  if (!torch::cuda::is_available()) throw UserError("--device " + device + ": this LibTorch sees no CUDA device");
  cuda_float32_exact();
  CharLMStepBench b(model, B, T, V, /*autograd=*/false, device, graph);
  torch::cuda::synchronize();
  cuda_reset_peak_memory(d);
  const int64_t base = cuda_allocated_bytes(d, false);
  // Warm-up: the first steps allocate the gradients and Adam's moments; with a graph the fourth step
  // is the capture and its first replay.
  for (int i = 0; i < (graph ? 6 : 2); ++i) b.step();
  torch::cuda::synchronize();
  const int64_t peak = cuda_allocated_bytes(d, true);
  std::vector<double> ts;
  const auto start = Clock::now();
  for (;;) {
    const auto t0 = Clock::now();
    b.step();
    torch::cuda::synchronize();
    ts.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    if (iters > 0 ? static_cast<int>(ts.size()) >= iters
                  : ((total >= min_seconds && ts.size() >= 3) || ts.size() >= 500))
      break;
  }
  const std::vector<double> in_order = ts;
  std::sort(ts.begin(), ts.end());
  return {{"seconds_per_step", ts[ts.size() / 2]},
          {"steps_timed", ts.size()},
          {"step_seconds", in_order},
          {"flops_per_step", b.flops_per_step()},
          {"model_flops_per_step", b.model_flops_per_step()},
          {"peak_step_bytes", peak - base},
          {"gemm_gflops", device_gemm_gflops(d)},
          {"device", device},
          {"gpu", gpu_name(d)},
          {"graph", graph ? b.graph_note() : std::string("off")},
          {"tf32", false}};
}

namespace {

struct GpuRun {
  const PeerBenchOptions& o;
  std::string py, script;
  std::ostream* log;
};

// The shape and length of a measurement, as the Cellscope child and the Python peer both take them.
std::vector<std::string> gpu_measure_args(const PeerBenchOptions& o) {
  return {"--seq",         std::to_string(o.seq),
          "--vocab",       std::to_string(o.vocab),
          "--iters",       std::to_string(o.iters),
          "--min-seconds", std::to_string(o.min_seconds),
          "--device",      o.device};
}

json gpu_cellscope(const GpuRun& g, const json& model, int64_t B, bool graph) {
  std::vector<std::string> argv = {g.o.self_exe, "bench",   "--peer-child",   "--model-json",
                                   model.dump(), "--batch", std::to_string(B)};
  for (auto& x : gpu_measure_args(g.o)) argv.push_back(std::move(x));
  if (!graph) argv.push_back("--eager");
  std::string out, err;
  const int rc = run_capture(argv, {}, &out, &err);
  json j = peer_last_json(out);
  if (rc != 0 || !j.contains("seconds_per_step"))
    throw UserError("bench --peer --device: the Cellscope measurement of " + model.value("cell", std::string()) +
                    " failed (exit " + std::to_string(rc) + "): " + peer_tail(err));
  return j;
}

// The Python peer's measurements, all in one process (`peers.py time-many`: one import of torch and one
// CUDA start for all of them), in the order given: each job {"job", "model", "batch", "mode",
// "cudnn_gru"} gets its result, or {"error": ...}. A job that ends the process (a compile over
// --compile-timeout exits it) is reported with the process's exit and stderr, and the jobs after it
// run in a new process.
std::vector<json> gpu_python_jobs(const GpuRun& g, const std::vector<json>& jobs,
                                  const std::function<void(size_t, const json&)>& on_result) {
  std::vector<json> res(jobs.size());
  size_t next = 0;
  while (next < jobs.size()) {
    json batch = json::array();
    for (size_t i = next; i < jobs.size(); ++i) batch.push_back(jobs[i]);
    const char* tmp = std::getenv("TMPDIR");
    std::string file = std::string(tmp && *tmp ? tmp : "/tmp") + "/cellscope-peer-jobs-XXXXXX";
    const int fd = ::mkstemp(file.data());
    if (fd < 0) throw UserError("bench --peer: cannot create a temporary file in " + file.substr(0, file.rfind('/')));
    ::close(fd);
    {
      std::ofstream f(file);
      f << batch.dump();
    }
    char t[32];
    std::snprintf(t, sizeof t, "%g", g.o.compile_timeout);
    std::vector<std::string> argv = {g.py, g.script, "time-many", "--jobs", file, "--compile-timeout", t};
    for (auto& x : gpu_measure_args(g.o)) argv.push_back(std::move(x));
    std::string out, err;
    const int rc = run_capture(argv, {}, &out, &err);
    std::remove(file.c_str());
    std::istringstream in(out);
    std::string line;
    size_t done = next;
    while (std::getline(in, line)) {
      auto j = json::parse(line, nullptr, false);
      if (!j.is_object() || !j.contains("job")) continue;
      const size_t k = j["job"].get<size_t>();
      if (k >= res.size()) continue;
      res[k] = j;
      on_result(k, j);
      if (g.log)
        *g.log << "python " << jobs[k]["mode"].get<std::string>() << " "
               << jobs[k]["model"].value("cell", std::string())
               << (jobs[k].value("cudnn_gru", false) ? " (nn.GRU)" : "") << " batch " << jobs[k]["batch"] << ": "
               << (j.contains("seconds_per_step") ? std::to_string(j["seconds_per_step"].get<double>()) + " s/step"
                                                  : j.value("error", std::string("?")))
               << "\n";
      done = std::max(done, k + 1);
    }
    if (done < jobs.size()) {  // the process ended at job `done`: report it, go on after it
      res[done] = {{"job", done},
                   {"error", "the peer process ended (exit " + std::to_string(rc) + "): " + peer_tail(err, 400)}};
      if (g.log) *g.log << "python job " << done << ": " << res[done]["error"].get<std::string>() << "\n";
      on_result(done, res[done]);
      ++done;
    }
    next = done;
  }
  return res;
}

double secs(const json& m) { return m.contains("seconds_per_step") ? m["seconds_per_step"].get<double>() : -1; }

}  // namespace

json run_peer_bench_device(const PeerBenchOptions& o, std::ostream* log) {
  const GpuRun g{o, peer_python(), peers_script_path(), log};
  json r;
  r["device"] = o.device;
  r["seq"] = o.seq;
  r["embed"] = o.embed;
  r["hidden"] = o.hidden;
  r["vocab"] = o.vocab;
  r["python_modes"] = o.python_modes;
  r["peer_script"] = g.script;
  r["load_before"] = peer_loadavg1();
  json rows = json::array();
  auto partial = [&] {
    if (o.partial_path.empty()) return;
    r["rows"] = rows;
    atomic_write(o.partial_path, r.dump());
  };
  // Cellscope's side: per batch the cuDNN GRU (LibTorch's at::gru, Cellscope's gru cell), then every cell,
  // each with its step captured as a CUDA graph and eagerly.
  const std::vector<std::string> cells = o.cells.empty() ? peer_cells() : o.cells;
  std::vector<json> resolved_models;
  for (int64_t B : o.batches) {
    std::vector<std::string> names = {"gru"};
    names.insert(names.end(), cells.begin(), cells.end());
    for (size_t i = 0; i < names.size(); ++i) {
      const bool cudnn = i == 0;
      json m = cudnn ? json{{"cell", "gru"}, {"embed", o.embed}, {"hidden", o.hidden}}
                     : paper_model(names[i], o.embed, o.hidden);
      for (const auto& s : o.sets) {
        if (cudnn) break;
        json tmp = {{"model", m}};
        apply_override(tmp, s);
        m = tmp["model"];
      }
      if (log) *log << "batch " << B << ": " << (cudnn ? std::string("cuDNN GRU") : names[i]) << " ..." << std::flush;
      json row = {{"cell", names[i]}, {"batch", B}, {"model", m}};
      if (cudnn) row["label"] = "cuDNN GRU";
      row["cellscope"] = gpu_cellscope(g, m, B, true);
      row["cellscope_eager"] = gpu_cellscope(g, m, B, false);
      if (log)
        *log << " graph " << secs(row["cellscope"]) << " (" << row["cellscope"].value("graph", std::string())
             << "), eager " << secs(row["cellscope_eager"]) << " s/step\n";
      rows.push_back(row);
      resolved_models.push_back(
          cudnn ? m : load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", m}}, "bench model")["model"]);
      partial();
    }
  }
  // The Python side: every row eagerly first, then the compiled modes (slow to compile: a time box on
  // the whole bench loses those rather than the eager ones). nn.GRU runs eagerly only.
  if (o.python) {
    std::vector<json> jobs;
    std::vector<std::pair<size_t, std::string>> where;  // row, mode of each job
    for (const auto& mode : o.python_modes)
      for (size_t i = 0; i < rows.size(); ++i) {
        const bool cudnn = rows[i].contains("label");
        if (cudnn && mode != "eager") continue;
        jobs.push_back({{"job", jobs.size()},
                        {"model", resolved_models[i]},
                        {"batch", rows[i]["batch"]},
                        {"mode", mode},
                        {"cudnn_gru", cudnn}});
        where.emplace_back(i, mode);
      }
    gpu_python_jobs(g, jobs, [&](size_t k, const json& res) {
      json& row = rows[where[k].first];
      if (!row.contains("python")) row["python"] = json::object();
      row["python"][where[k].second] = res;
      partial();  // a time box on the whole bench keeps every result so far
    });
  }
  r["rows"] = rows;
  r["load_after"] = peer_loadavg1();
  partial();
  return r;
}

std::string peer_table_markdown_device(const json& r) {
  std::ostringstream s;
  auto fmt = [](double v, int prec) {
    std::ostringstream t;
    t << std::fixed << std::setprecision(prec) << v;
    return t.str();
  };
  std::string gpu;
  for (const auto& row : r["rows"])
    if (row["cellscope"].contains("gpu")) gpu = row["cellscope"]["gpu"].get<std::string>();
  s << "char-LM training step (embedding + cell + softmax + backward + clip + Adam) on "
    << (gpu.empty() ? "a GPU" : gpu) << ", float32 (TF32 off on both sides), seq " << r["seq"] << ", embed "
    << r["embed"] << ", hidden " << r["hidden"]
    << "; ms per step, median over the timed steps; speedup = the PyTorch time / Cellscope's (graph)\n\n";
  std::vector<std::string> modes;
  for (const auto& m : r["python_modes"]) modes.push_back(m.get<std::string>());
  s << "| model | batch | Cellscope (CUDA graph) | Cellscope eager | graph |";
  for (const auto& m : modes) s << " PyTorch " << m << " | speedup vs " << m << " |";
  s << " peak MiB Cellscope |\n|---|---|---|---|---|";
  for (size_t i = 0; i < modes.size(); ++i) s << "---|---|";
  s << "---|\n";
  for (const auto& row : r["rows"]) {
    const double c = secs(row["cellscope"]);
    s << "| " << row.value("label", row["cell"].get<std::string>()) << " | " << row["batch"] << " | " << fmt(c * 1e3, 2)
      << " | " << fmt(secs(row["cellscope_eager"]) * 1e3, 2) << " | " << row["cellscope"].value("graph", std::string())
      << " |";
    for (const auto& m : modes) {
      const json p = row.contains("python") && row["python"].contains(m) ? row["python"][m] : json();
      if (p.is_object() && p.contains("seconds_per_step"))
        s << " " << fmt(secs(p) * 1e3, 2) << " | " << fmt(secs(p) / c, 2) << "x |";
      else if (p.is_object() && p.contains("error")) s << " failed | - |";
      else s << " - | - |";
    }
    s << " " << fmt(row["cellscope"]["peak_step_bytes"].get<double>() / (1 << 20), 1) << " |\n";
  }
  for (const auto& row : r["rows"])
    if (row.contains("python"))
      for (const auto& [m, p] : row["python"].items())
        if (p.contains("error"))
          s << "\n- " << row["cell"].get<std::string>() << " batch " << row["batch"] << ", PyTorch " << m << ": "
            << p["error"].get<std::string>();
  s << "\n";
  return s.str();
}

}  // namespace cs
