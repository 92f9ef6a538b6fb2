// The results of a sweep's points, as a table reads them.
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

// ------------------------------------------------------------------ results

namespace {

// A sweep run before its bundled spec carried the "paper" label (SweepPaperLabel) takes the label
// of the bundled spec of the same name when that spec is the same sweep (everything but the notes
// and the label equal): the words describe the same runs.
void adopt_bundled_label(SweepSpec& spec) {
  const std::string b = join_path(join_path(resources_dir(), "sweeps"), spec.name + ".json");
  if (!file_exists(b)) return;
  try {
    const SweepSpec bundled = SweepSpec::from_json(sweep_internal::parse_json_file(b));
    json x = bundled.source, y = spec.source;
    for (auto* j : {&x, &y}) j->erase("notes"), j->erase("paper");
    if (x == y) spec.paper = bundled.paper;
  } catch (const std::exception&) {
    // a broken bundled file labels nothing (sweep list names it)
  }
}

}  // namespace

SweepResults read_sweep_results(const std::string& arg, const std::string& workspace, const std::string& metric) {
  SweepResults r;
  r.dir = arg;
  if (!file_exists(join_path(arg, "sweep.json"))) r.dir = sweep_dir(workspace, arg);
  if (!file_exists(join_path(r.dir, "sweep.json")))
    throw UserError("no sweep '" + arg + "' (neither a sweep directory nor " + r.dir + ")");
  r.spec = SweepSpec::from_json(sweep_internal::parse_json_file(join_path(r.dir, "sweep.json")));
  if (!metric.empty()) {
    json src = r.spec.source;
    src["table"]["metric"] = metric;
    r.spec = SweepSpec::from_json(src);
  }
  if (!r.spec.paper.present()) adopt_bundled_label(r.spec);
  const std::string m = r.spec.table.metric;
  const auto dot = m.find('.');
  const std::string split = m.substr(0, dot), key = dot == std::string::npos ? "" : m.substr(dot + 1);
  auto state = read_sweep_state(r.dir);
  // Points without validation (the table of a sweep whose base no longer validates still reads).
  const std::vector<SweepPoint> points = sweep_internal::enumerate_points(r.spec);
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
