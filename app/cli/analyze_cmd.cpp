// `cellscope-cli analyze KIND ...` and `cellscope-cli bench --analysis relevance`.
// The analyses themselves are core/inspect/analysis/kinds.h; CSV/JSON are written here
// (Qt-free); PNG/PDF/SVG go through app/cli/figure_export/ (the figures library),
// compiled in only when the CLI is built with CELLSCOPE_GUI=ON.
#include <ATen/Parallel.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "analysis/computations.h"
#include "analysis/kinds.h"
#include "cli.h"
#include "cli_figures.h"
#include "data/utf8.h"
#include "tasks/task.h"
#include "train/trainer.h"
#include "util/error.h"

namespace cli {

namespace {

std::string extension_of(const std::string& out) {
  const auto dot = out.rfind('.');
  if (dot == std::string::npos || out.find('/', dot) != std::string::npos) return "";
  std::string e = out.substr(dot + 1);
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

std::vector<int64_t> parse_edges(const std::string& s) {
  std::vector<int64_t> edges;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    try {
      size_t used = 0;
      edges.push_back(std::stoll(tok, &used));
      if (used != tok.size()) throw std::invalid_argument(tok);
    } catch (...) {
      throw UsageError("--buckets expects comma-separated integers, got '" + tok + "'");
    }
  }
  return edges;
}

void print_help() {
  std::cout << "usage: cellscope-cli analyze KIND --run DIR [--run DIR2 ...] [--checkpoint best|last|STEP|step_N ...]\n"
               "                              [--text TEXT] [options] [--out FILE.{csv,json,png,pdf,svg}]\n"
               "kinds:\n";
  for (auto& k : cs::analysis_kinds()) {
    std::string ts;
    for (auto& t : k.tasks) ts += (ts.empty() ? "" : ",") + t;
    // a name wider than the column (channel_attention_decoder) gets its text on the next line, aligned
    const std::string name = k.name.size() < 18 ? k.name : k.name + "\n" + std::string(20, ' ');
    std::cout << "  " << std::left << std::setw(18) << name << k.help << " [" << ts
              << (k.multi_run ? "; several runs" : "") << "]\n";
  }
  std::cout << options_help({"analyze"})
            << "--out may be given several times (one computation, e.g. the figure and its CSV).\n"
               "Several runs: --checkpoint once for all or once per --run; they are analysed on the same text\n"
               "(the first run's) and the same evaluation data (length: the first run's dataset), named by\n"
               "their labels (cellscope-cli label) or the options that differ; warnings go to stderr.\n"
               "Without --out the result is printed as JSON. --text defaults to the start of the valid split\n"
               "(classify: its first sentence; gate/dzone kinds on classify runs: a split name uses its first\n"
               "64 sentences). Images need a build with CELLSCOPE_GUI=ON; they are drawn offscreen.\n"
               "Definitions: core/inspect/analysis/ANALYSIS_NOTES.md.\n";
}

}  // namespace

int cmd_analyze(const std::vector<std::string>& a) {
  if (want_help(a)) {
    print_help();
    return 0;
  }
  auto args = parse(a, "analyze");
  if (args.positional.size() != 1) throw UsageError("expected one KIND (see cellscope-cli analyze --help)");
  apply_script_option(args);
  if (!args.has("run")) throw UsageError("--run DIR is required");
  const auto& kind = cs::analysis_kind(args.positional[0]);
  // --out may repeat (e.g. the figure and its data from one computation)
  const std::vector<std::string> outs = args.all("out");
  for (auto& out : outs) {
    const std::string ext = extension_of(out);
    if (ext != "csv" && ext != "json" && ext != "png" && ext != "pdf" && ext != "svg")
      throw UsageError("--out must end in .csv, .json, .png, .pdf or .svg (got '" + out + "')");
    if ((ext == "png" || ext == "pdf" || ext == "svg") && !figures_available())
      throw UsageError(
          "this cellscope-cli was built without the figures library (CELLSCOPE_GUI=OFF): "
          "image output (.png/.pdf/.svg) is unavailable; use --out FILE.csv or FILE.json");
  }
  cs::set_threads(static_cast<int>(args.get_int("threads", 0)));

  cs::AnalysisRequest rq;
  rq.kind = kind.name;
  rq.runs = args.all("run");
  // --checkpoint once (every run) or once per --run, in the same order
  const std::vector<std::string> cks = args.all("checkpoint");
  if (cks.size() > 1 && cks.size() != rq.runs.size())
    throw UsageError("give --checkpoint once, or once per --run (" + std::to_string(rq.runs.size()) + " runs, " +
                     std::to_string(cks.size()) + " checkpoints)");
  rq.checkpoint = cks.empty() ? std::string("best") : cks.front();
  if (cks.size() > 1) rq.checkpoints = cks;
  rq.text = args.get("text");
  rq.last_k = args.get_int("last", 10);
  rq.position = args.get_int("char", -1);
  if (args.has("question")) rq.position = args.get_int("question", 0, 0, 1000000000);  // aoa: question index
  rq.layer = static_cast<int>(args.get_int("layer", -1));
  rq.split = args.get("split", kind.default_split);
  if (args.has("buckets")) rq.edges = parse_edges(args.get("buckets"));
  rq.bins = static_cast<int>(args.get_int("bins", 20));
  rq.metric = args.get("metric");
  if (rq.last_k < 1) throw UsageError("--last must be >= 1");
  auto result = cs::run_analysis(rq);
  // What a reader must not miss (different data or steps, unknown symbols), also in the caption.
  for (auto& w : result.warnings) std::cerr << "warning: " << w << "\n";

  if (outs.empty()) std::cout << result.to_json().dump(2) << "\n";
  for (auto& out : outs) {
    const std::string ext = extension_of(out);
    if (ext == "csv") {
      cs::atomic_write(out, result.to_csv());
    } else if (ext == "json") {
      cs::atomic_write(out, result.to_json().dump(2) + "\n");
    } else {
      FigureOptions fo;
      fo.color_map = args.get("color-map");
      fo.width = static_cast<int>(args.get_int("width", 0));
      fo.height = static_cast<int>(args.get_int("height", 0));
      export_analysis_figure(result, out, fo);  // throws UserError on failure; written atomically
    }
  }
  return 0;
}

// ------------------------------------------------------------------ bench --analysis relevance
namespace {
// CPU seconds of this process (all threads): contention-independent, unlike wall time.
double cpu_seconds() {
  struct rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}
double load_average() {
  double l[1] = {0};
  return ::getloadavg(l, 1) == 1 ? l[0] : -1;
}

}  // namespace

int cmd_bench_analysis(const std::vector<std::string>& a) {
  auto args = parse(a, "bench --analysis");
  const std::string what = args.get("analysis", "relevance");
  if (what != "relevance") throw UsageError("bench --analysis supports: relevance");
  cs::set_threads(static_cast<int>(args.get_int("threads", 0)));
  const int64_t chars = args.get_int("chars", 300);
  const int64_t last = args.get_int("last", chars);
  const int repeats = static_cast<int>(std::max<long long>(1, args.get_int("repeats", 5)));
  std::unique_ptr<cs::Task> task;
  std::string model_desc;
  std::string tmp_text;
  if (args.has("run")) {
    task = cs::load_checkpoint_task(args.get("run"), args.get("checkpoint", "best"));
    model_desc = "run " + args.get("run");
  } else {
    // The paper's capMZU+DT at hidden 800 (ptb-cap-mzu-dt), random weights, on a small generated text.
    cs::json cfg = load_config_arg(args.get("preset", "ptb-cap-mzu-dt"), {});
    {
      // A file of this call's own (mkstemp under $TMPDIR), never a pid-named one that may exist (#52).
      std::error_code ec;
      const auto base = std::filesystem::temp_directory_path(ec);
      std::string tmpl = (ec ? std::string("/tmp") : base.string()) + "/cellscope-bench-analysis-XXXXXX.txt";
      const int fd = ::mkstemps(tmpl.data(), 4);
      if (fd < 0) throw cs::UserError("cannot create a temporary file in " + tmpl.substr(0, tmpl.rfind('/')));
      ::close(fd);
      tmp_text = tmpl;
    }
    std::string s;
    const char* words[] = {"the", "whale", "sea", "ship", "captain", "white", "old", "man", "and", "of", "boat"};
    for (unsigned i = 0; s.size() < 20000; ++i)
      s += std::string(words[(i * 7 + i / 3) % 11]) + ((i % 9 == 8) ? ".\n" : " ");
    cs::atomic_write(tmp_text, s);
    cfg["dataset"] = {{"path", tmp_text}, {"valid_fraction", 0.1}, {"test_fraction", 0.1}};
    cfg["training"]["batch"] = 4;
    cfg = cs::load_and_resolve(cfg);
    try {
      task = cs::make_task(cfg, "");
    } catch (...) {
      std::remove(tmp_text.c_str());
      throw;
    }
    std::remove(tmp_text.c_str());
    model_desc = "preset " + args.get("preset", "ptb-cap-mzu-dt") + " (" + cfg["model"].value("cell", "") +
                 ", hidden " + std::to_string(cfg["model"].value("hidden", 0)) + ", random weights)";
  }
  if (task->name() != "char_lm") throw cs::UserError("bench --analysis relevance needs a char_lm model");
  // the first --chars characters of the valid split (the train split when valid is shorter)
  std::string text = task->split_text("valid", chars);
  if (static_cast<int64_t>(cs::utf8_symbols(text).size()) < chars) text = task->split_text("train", chars);
  if (static_cast<int64_t>(cs::utf8_symbols(text).size()) < chars)
    throw cs::UserError("the corpus is shorter than --chars");
  using Clock = std::chrono::steady_clock;
  std::vector<double> secs, cpus;
  cs::LabeledMatrix m;
  m = cs::relevance_map(*task, text, last);  // warm-up (allocator, thread pool)
  for (int r = 0; r < repeats; ++r) {
    const double c0 = cpu_seconds();
    auto t0 = Clock::now();
    m = cs::relevance_map(*task, text, last);
    secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    cpus.push_back(cpu_seconds() - c0);
  }
  cs::json j = {{"analysis", "relevance"},
                {"model", model_desc},
                {"parameters", task->parameter_count()},
                {"characters", chars},
                {"rows", m.rows()},
                {"cols", m.cols()},
                {"repeats", repeats},
                {"compute_s_median", median(secs)},
                {"compute_s_min", *std::min_element(secs.begin(), secs.end())},
                {"compute_s_all", secs},
                {"compute_cpu_s_median", median(cpus)},
                {"load_average", load_average()},
                {"threads", at::get_num_threads()}};
  if (figures_available()) {
    cs::HeatmapSet heatmaps;
    heatmaps.matrices = {m};
    heatmaps.titles = {"bench"};
    heatmaps.x_label = "earlier character j";
    heatmaps.y_label = "character t (last K)";
    heatmaps.value_label = "cosine";
    cs::AnalysisResult res;
    res.kind = "relevance";
    res.caption = m.caption;
    res.data = std::move(heatmaps);
    auto rt = figure_redraw_ms(res, static_cast<int>(args.get_int("redraws", 20)));
    j["redraw_ms_median"] = median(rt.replot_ms);
    j["redraw_ms_all"] = rt.replot_ms;
    j["rebuild_ms_median"] = median(rt.rebuild_ms);
  } else {
    j["redraw_ms_median"] = nullptr;
    j["redraw_note"] = "built without the figures library (CELLSCOPE_GUI=OFF)";
  }
  if (args.has("json")) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "relevance map " << m.rows() << " x " << m.cols() << " on " << model_desc << "\n"
              << "  compute: median " << median(secs) << " s over " << repeats << " repeats (min "
              << *std::min_element(secs.begin(), secs.end()) << " s), " << at::get_num_threads() << " threads\n"
              << "           CPU time median " << median(cpus) << " s (load average " << load_average() << ")\n";
    if (j.contains("redraw_ms_all"))
      std::cout << "  redraw:  median " << j["redraw_ms_median"].get<double>() << " ms (replot of the heatmap figure); "
                << j["rebuild_ms_median"].get<double>() << " ms to build the figure from the result and draw it\n";
    else std::cout << "  redraw:  n/a (" << j["redraw_note"].get<std::string>() << ")\n";
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace cli
