// `cellscope-cli bench --peer | --peer-check | --peer-export | --peer-child`: Cellscope's cells
// against their plain-PyTorch Python peers (core/run/bench/peers/).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "bench/bench.h"
#include "bench/bench_peer.h"
#include "cli.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cli {

namespace fs = std::filesystem;

static std::vector<std::string> peer_cell_list(const Args& args) {
  const std::string c = args.get("cell", "all");
  if (c == "all") return cs::peer_cells();
  std::vector<std::string> out;
  std::stringstream in(c);
  std::string one;
  while (std::getline(in, one, ',')) {
    if (std::find(cs::peer_cells().begin(), cs::peer_cells().end(), one) == cs::peer_cells().end()) {
      std::string known;
      for (auto& k : cs::peer_cells()) known += (known.empty() ? "" : ", ") + k;
      throw UsageError("--cell: no Python peer for '" + one + "' (known: " + known + ", or all)");
    }
    out.push_back(one);
  }
  if (out.empty()) throw UsageError("--cell: empty list");
  return out;
}

static cs::json peer_model(const Args& args, const std::string& cell, int64_t E, int64_t H) {
  cs::json m = cs::paper_model(cell, E, H);
  for (auto& s : args.all("set")) {
    cs::json tmp = {{"model", m}};
    cs::apply_override(tmp, s);
    if (!tmp.contains("model") || tmp.size() != 1) throw UsageError("bench --set takes model.KEY=VALUE");
    m = tmp["model"];
  }
  return m;
}

// The Python check of exported directories; prints a line per cell, returns 0 when all agree.
static int run_python_check(const std::vector<std::string>& dirs, bool as_json, double tol) {
  char tol_text[32];
  std::snprintf(tol_text, sizeof tol_text, "%.17g", tol);
  std::vector<std::string> argv = {cs::peer_python(), cs::peers_script_path(), "check", "--tol", tol_text};
  argv.insert(argv.end(), dirs.begin(), dirs.end());
  std::string out, err;
  const int rc = cs::run_capture(argv, {}, &out, &err);
  auto j = cs::json::parse(out, nullptr, false);
  if (!j.is_object() || !j.contains("results"))
    throw cs::UserError("the Python peer check (" + cs::peer_python() + " " + cs::peers_script_path() +
                        ") failed (exit " + std::to_string(rc) + "): " + (err.empty() ? out : err) +
                        (rc == 127 || err.find("No module named 'torch'") != std::string::npos
                             ? "\n(install Debian's python3-torch: sudo apt-get install python3-torch)"
                             : ""));
  if (as_json) {
    std::cout << j.dump() << "\n";
  } else {
    for (const auto& r : j["results"]) {
      std::cout << r.value("cell", std::string("?")) << ": " << (r.value("ok", false) ? "agrees" : "DIFFERS");
      if (r.contains("error")) std::cout << " (" << r["error"].get<std::string>() << ")";
      if (r.contains("loss"))
        std::cout << "  loss " << std::setprecision(17) << r["loss"].get<double>() << " vs "
                  << r["cellscope_loss"].get<double>() << std::setprecision(3) << "  worst relative error "
                  << r["worst_rel_err"].get<double>();
      std::cout << "\n";
      if (!r.value("ok", false) && r.contains("params"))
        for (auto& [name, p] : r["params"].items())
          if (p["max_rel_err"].get<double>() > tol || p["norm_rel_err"].get<double>() > tol)
            std::cout << "  " << name << ": gradient max relative error " << p["max_rel_err"].get<double>() << ", norm "
                      << p["grad_norm"].get<double>() << " vs " << p["cellscope_grad_norm"].get<double>() << "\n";
    }
  }
  return j.value("ok", false) && rc == 0 ? 0 : 1;
}

// `bench --peer --device cuda|cuda:N` (bench/bench_peer_gpu.cpp): the GPU's comparison and its table.
static int run_device_bench(const Args& args, cs::PeerBenchOptions& o) {
  if (o.device != "cuda" && o.device.rfind("cuda:", 0) != 0)
    throw UsageError("--device: expected cpu, cuda or cuda:N, got '" + o.device + "'");
  if (args.has("python-modes")) {
    o.python_modes.clear();
    std::stringstream in(args.get("python-modes"));
    std::string one;
    while (std::getline(in, one, ',')) {
      if (one != "eager" && one != "compile" && one != "compile_step")
        throw UsageError("--python-modes: each is eager, compile or compile_step, not '" + one + "'");
      o.python_modes.push_back(one);
    }
  }
  o.compile_timeout = std::stod(args.get("compile-timeout", "300"));
  o.partial_path = args.get("partial", "");
  cs::json r = cs::run_peer_bench_device(o, &std::cerr);
  if (args.has("json")) std::cout << r.dump() << "\n";
  else std::cout << cs::peer_table_markdown_device(r);
  return 0;
}

int cmd_bench_peer(const std::vector<std::string>& a) {
  auto args = parse(a, "bench --peer");
  if (args.has("peer-child")) {  // one measurement in a fresh process (run by `bench --peer`)
    const auto m = cs::parse_json(args.get("model-json"), "--model-json");
    cs::set_threads(static_cast<int>(args.get_int("threads", 0, 0, 1024)));
    const std::string device = args.get("device", "cpu");
    if (device != "cpu") {
      const auto r = cs::measure_step_child_device(
          m, args.get_int("batch", 32, 1, 65536), args.get_int("seq", 150, 1, 100000),
          args.get_int("vocab", 96, 1, 10000000), static_cast<int>(args.get_int("iters", 0, 0, 1000000)),
          std::stod(args.get("min-seconds", "3")), device, !args.has("eager"));
      std::cout << r.dump() << "\n";
      return 0;
    }
    auto r = cs::measure_step_child(m, args.get_int("batch", 32, 1, 65536), args.get_int("seq", 150, 1, 100000),
                                    args.get_int("vocab", 96, 1, 10000000),
                                    static_cast<int>(args.get_int("iters", 0, 0, 1000000)),
                                    std::stod(args.get("min-seconds", "3")), args.has("autograd"));
    std::cout << r.dump() << "\n";
    return 0;
  }
  if (args.has("table-from")) {  // the table of an earlier --json result (or a --partial one)
    const std::string path = args.get("table-from");
    std::ifstream f(path);
    if (!f) throw cs::UserError("--table-from: cannot read '" + path + "'");
    std::stringstream text;
    text << f.rdbuf();
    const cs::json r = cs::parse_json(text.str(), path);
    std::cout << (r.value("device", std::string("cpu")) != "cpu" ? cs::peer_table_markdown_device(r)
                                                                 : cs::peer_table_markdown(r));
    return 0;
  }
  const double tol = std::stod(args.get("tol", "1e-10"));
  if (args.has("peer-check") || args.has("peer-export")) {
    // Weight-exact agreement, double precision, at a tiny size (defaults) or the given one.
    if (args.has("from")) return run_python_check({args.get("from")}, args.has("json"), tol);
    const bool exp = args.has("peer-export");
    std::string root = exp ? args.get("peer-export") : args.get("keep");
    const int64_t E = args.get_int("embed", 8, 1, 65536), H = args.get_int("hidden", 8, 1, 65536);
    const int64_t B = args.get_int("batch", 3, 1, 65536), T = args.get_int("seq", 7, 1, 100000);
    const int64_t V = args.get_int("vocab", 11, 2, 10000000);
    // A temporary directory of this invocation's own (mkdtemp under $TMPDIR), removed however the
    // check ends: a refused option or a failed export left it behind before.
    struct RemovedAtEnd {
      std::string dir;
      ~RemovedAtEnd() {
        std::error_code ec;
        if (!dir.empty()) fs::remove_all(dir, ec);
      }
    } own;
    if (root.empty()) {
      std::error_code ec;
      const auto base = fs::temp_directory_path(ec);
      std::string tmpl = (ec ? std::string("/tmp") : base.string()) + "/cellscope-peer-check-XXXXXX";
      if (!::mkdtemp(tmpl.data()))
        throw cs::UserError("cannot create a temporary directory in " + tmpl.substr(0, tmpl.rfind('/')));
      root = own.dir = tmpl;
    }
    std::vector<std::string> dirs;
    for (const auto& cell : peer_cell_list(args)) {
      cs::json m = peer_model(args, cell, E, H);
      if (cs::paper_model(cell, E, H).contains("filter")) {
        // the papers' filter 1000 at a tiny size is needless work: 2 x hidden unless --set
        bool user = false;
        for (auto& s : args.all("set")) user = user || s.rfind("model.filter=", 0) == 0;
        if (!user) m["filter"] = 2 * H;
      }
      const std::string dir = root + "/" + cell;
      cs::export_peer_check(m, B, T, V, dir);
      dirs.push_back(dir);
    }
    if (exp) {
      for (auto& d : dirs) std::cout << d << "\n";
      return 0;
    }
    return run_python_check(dirs, args.has("json"), tol);
  }
  cs::PeerBenchOptions o;
  o.cells = peer_cell_list(args);
  o.batches.clear();
  {
    std::stringstream in(args.get("batch", "32"));
    std::string one;
    while (std::getline(in, one, ',')) {
      char* end = nullptr;
      const long long b = std::strtoll(one.c_str(), &end, 10);
      if (one.empty() || *end || b < 1 || b > 65536)
        throw UsageError("--batch: expected a list like 32,256, got '" + args.get("batch") + "'");
      o.batches.push_back(b);
    }
  }
  o.seq = args.get_int("seq", 150, 1, 100000);
  o.embed = args.get_int("embed", 256, 1, 65536);
  o.hidden = args.get_int("hidden", 512, 1, 65536);
  o.vocab = args.get_int("vocab", 96, 2, 10000000);
  o.iters = static_cast<int>(args.get_int("iters", 0, 0, 1000000));
  o.min_seconds = std::stod(args.get("min-seconds", "3"));
  o.threads = static_cast<int>(args.get_int("threads", 0, 0, 1024));
  o.sets = args.all("set");
  o.python = !args.has("no-python");
  o.rounds = static_cast<int>(args.get_int("rounds", 1, 1, 100));
  o.self_exe = self_exe();
  for (const auto& c : o.cells) peer_model(args, c, o.embed, o.hidden);  // --set errors before any measurement
  cs::set_threads(o.threads);
  o.device = args.get("device", "cpu");
  if (o.device != "cpu") return run_device_bench(args, o);
  cs::json r = cs::run_peer_bench(o, &std::cerr);  // progress on stderr, the result on stdout
  if (args.has("json")) std::cout << r.dump() << "\n";
  else std::cout << cs::peer_table_markdown(r);
  return 0;
}

}  // namespace cli
