// A table's runs: compute budgets (`sweep table --budget`), the evaluation a run has at a budget,
// and what each run reached (size, steps, time, FLOPs, split sizes) (table.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "config/json.h"
#include "sweep/table.h"
#include "sweep/table_internal.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/text.h"

namespace cs {

// ------------------------------------------------------------------ budgets
namespace table_internal {

std::string fixed_num(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

std::string short_num(double v) {
  if (!std::isfinite(v)) return "-";
  std::ostringstream o;
  o << std::setprecision(3) << v;
  return o.str();
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(s < 10 ? 1 : 0) << s << " s";
  return o.str();
}

}  // namespace table_internal

std::string Budget::describe() const {
  if (!active()) return "";
  const std::string amt = kind == "time"    ? table_internal::seconds_text(amount)
                          : kind == "flops" ? table_internal::short_num(amount)
                                            : std::to_string(static_cast<int64_t>(amount));
  const std::string what = kind == "time"    ? "equal wall-clock time: " + amt + " of training"
                           : kind == "flops" ? "equal training FLOPs: " + amt
                                             : "equal steps: " + amt;
  return what + (common ? " (the largest budget every run reached)" : "");
}

Budget parse_budget(const std::string& text) {
  const auto eq = text.find('=');
  const std::string usage =
      "--budget: expected time=SECONDS, flops=X (e.g. 2e12, 500G, 3T) or step=N, or KIND=common, got '" + text + "'";
  if (eq == std::string::npos) throw UserError(usage);
  Budget b;
  b.kind = ascii_lower(text.substr(0, eq));
  if (b.kind == "steps") b.kind = "step";
  if (b.kind == "seconds" || b.kind == "wall" || b.kind == "wall-clock") b.kind = "time";
  if (b.kind != "time" && b.kind != "flops" && b.kind != "step") throw UserError(usage);
  std::string v = text.substr(eq + 1);
  if (ascii_lower(v) == "common") {
    b.common = true;
    return b;
  }
  double mult = 1;
  if (!v.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(v.back())));
    const std::string suffixes = b.kind == "time" ? "SMH" : "KMGTP";
    if (std::isalpha(static_cast<unsigned char>(last))) {
      if (suffixes.find(last) == std::string::npos) throw UserError(usage);
      if (b.kind == "time") mult = last == 'S' ? 1 : last == 'M' ? 60 : 3600;
      else mult = std::pow(10.0, 3.0 * static_cast<double>(1 + std::string("KMGTP").find(last)));
      v.pop_back();
    }
  }
  size_t used = 0;
  try {
    b.amount = std::stod(v, &used);
  } catch (const std::exception&) {
    throw UserError(usage);
  }
  if (used != v.size() || !std::isfinite(b.amount) || b.amount <= 0) throw UserError(usage);
  b.amount *= mult;
  return b;
}

BudgetValue value_at_budget(const std::vector<EvalAt>& evals, double end_x, const Budget& b, bool lower) {
  BudgetValue out;
  auto x_of = [&](const EvalAt& e) {
    return b.kind == "time" ? e.seconds : b.kind == "flops" ? e.flops : static_cast<double>(e.step);
  };
  const double tol = 1e-9 * std::max(1.0, std::fabs(b.amount));
  out.reached = end_x >= b.amount - tol;
  const EvalAt* best = nullptr;
  for (auto& e : evals) {
    if (!(x_of(e) <= b.amount + tol)) continue;  // beyond the budget (or unknown x)
    if (!std::isfinite(e.valid)) continue;
    if (!best || (lower ? e.valid < best->valid : e.valid > best->valid)) best = &e;
  }
  if (!best) {
    out.problem = evals.empty() ? "no evaluation in its metrics"
                                : "no evaluation within the budget (the first at " +
                                      (b.kind == "time" ? table_internal::seconds_text(x_of(evals.front()))
                                                        : table_internal::short_num(x_of(evals.front()))) +
                                      ")";
    return out;
  }
  out.step = best->step;
  if (!std::isfinite(best->value)) {
    out.problem = "no value of the metric at step " + std::to_string(best->step);
    return out;
  }
  out.has_value = true;
  out.value = best->value;
  return out;
}

RunFacts read_run_facts(const std::string& run_dir, int64_t seed, const std::string& status) {
  RunFacts f;
  f.seed = seed;
  f.end = status.empty() ? "pending" : status;
  if (run_dir.empty() || !file_exists(join_path(run_dir, "summary.json"))) return f;
  try {
    RunStore store(run_dir);
    const RunSummary s = store.read_summary();
    f.known = true;
    f.parameters = s.parameters;
    f.step = s.step;
    f.seconds = s.elapsed;
    f.flops = s.train_flops;
    f.valid_units = s.valid_units;
    f.test_units = s.test_units;
    if (file_exists(join_path(run_dir, "config.json"))) {
      const json cfg = parse_json(read_file(join_path(run_dir, "config.json")), "config.json");
      if (cfg.contains("training") && cfg["training"].contains("steps") && cfg["training"]["steps"].is_number())
        f.cap = cfg["training"]["steps"].get<int64_t>();
    }
    if (s.status == "finished")
      f.end = s.reason.rfind("early stop", 0) == 0 ? "early stop" : f.cap > 0 && s.step >= f.cap ? "cap" : "finished";
    else f.end = s.status;
  } catch (const std::exception&) {
    f.known = false;
  }
  return f;
}

std::vector<EvalAt> read_evals(const std::string& run_dir, const std::string& split, const std::string& key,
                               double* end_seconds, double* end_flops, int64_t* end_step, bool* has_flops) {
  std::vector<EvalAt> out;
  RunStore store(run_dir);
  const RunSummary s = store.read_summary();
  const std::string primary = s.primary_metric;
  const std::string k = key.empty() ? primary : key;
  const auto recs = read_metrics(join_path(run_dir, "metrics.jsonl"));
  bool flops_ok = true;
  double es = 0, ef = std::numeric_limits<double>::quiet_NaN();
  int64_t st = 0;
  // the test line that belongs to a valid evaluation: the first test line of the same step after
  // it (track_test); the final best-checkpoint test line comes later and is not taken
  std::vector<bool> has_test(0);
  for (auto& r : recs) {
    es = std::max(es, r.elapsed);
    st = std::max(st, r.step);
    if (r.has_train_flops()) ef = std::isfinite(ef) ? std::max(ef, r.train_flops) : r.train_flops;
    else flops_ok = false;
    if (!r.eval) continue;
    if (r.split == "valid") {
      EvalAt e;
      e.step = r.step;
      e.seconds = r.elapsed;
      e.flops = r.train_flops;
      auto v = r.values.find(primary);
      if (v != r.values.end()) e.valid = v->second;
      if (split == "valid") {
        auto w = r.values.find(k);
        if (w != r.values.end()) e.value = w->second;
      }
      out.push_back(e);
      has_test.push_back(false);
    } else if (r.split == "test" && split == "test" && !out.empty() && out.back().step == r.step && !has_test.back()) {
      auto w = r.values.find(k);
      if (w != r.values.end()) out.back().value = w->second;
      has_test.back() = true;
    }
  }
  if (end_seconds) *end_seconds = es;
  if (end_flops) *end_flops = flops_ok ? ef : std::numeric_limits<double>::quiet_NaN();
  if (end_step) *end_step = st;
  if (has_flops) *has_flops = flops_ok && !recs.empty();
  return out;
}

namespace {

// The run's training.track_test (test evaluated at every evaluation).
bool tracks_test(const std::string& run_dir) {
  const std::string p = join_path(run_dir, "config.json");
  if (!file_exists(p)) return false;
  try {
    const json c = parse_json(read_file(p), p);
    return c.contains("training") && c["training"].value("track_test", false);
  } catch (const std::exception&) {
    return false;
  }
}

bool has_metrics(const SweepRunRecord& rec) {
  return !rec.state.run_dir.empty() && file_exists(join_path(rec.state.run_dir, "summary.json")) &&
         file_exists(join_path(rec.state.run_dir, "metrics.jsonl"));
}

}  // namespace

namespace table_internal {

std::vector<TableInput> budget_inputs(const SweepResults& r, Budget& budget, std::string& metric_label,
                                      std::string& note, std::vector<std::string>& problems, int& missing) {
  std::vector<TableInput> in;
  const auto& rows_axes = r.spec.table.rows;
  const auto& cols_axes = r.spec.table.cols;
  const std::string m = r.spec.table.metric;
  const auto dot = m.find('.');
  std::string split = m.substr(0, dot);
  const std::string key = dot == std::string::npos ? "" : m.substr(dot + 1);
  // test at a budget needs the test split evaluated during training (training.track_test)
  if (split == "test") {
    int untracked = 0, with = 0;
    for (auto& rec : r.records)
      if (has_metrics(rec)) ++with, untracked += tracks_test(rec.state.run_dir) ? 0 : 1;
    if (untracked > 0) {
      split = "valid";
      note = std::to_string(untracked) + " of " + std::to_string(with) +
             " run(s) did not evaluate the test split during training (training.track_test off): the budget view reads "
             "the validation metric of every run";
      const auto sp = metric_label.find(' ');
      metric_label = "valid" + (sp == std::string::npos ? std::string(" metric") : metric_label.substr(sp));
      const auto paren = metric_label.find(" (");  // the test split's decode (valid decodes greedily)
      if (paren != std::string::npos) metric_label = metric_label.substr(0, paren) + " (greedy)";
    }
  }
  struct Read {
    const SweepRunRecord* rec;
    std::vector<EvalAt> evals;
    double end_x = 0;
    bool lower = true;
  };
  std::vector<Read> reads;
  std::vector<std::string> no_flops;
  for (auto& rec : r.records) {
    if (!has_metrics(rec)) {
      ++missing;
      continue;
    }
    Read rd{&rec, {}, 0, true};
    double es = 0, ef = 0;
    int64_t est = 0;
    bool hf = false;
    try {
      rd.evals = read_evals(rec.state.run_dir, split, key, &es, &ef, &est, &hf);
      rd.lower = RunStore(rec.state.run_dir).read_summary().lower_is_better;
    } catch (const UserError& e) {
      problems.push_back(rec.point.id + ": " + e.what());
      ++missing;
      continue;
    }
    if (budget.kind == "flops" && !hf) {
      no_flops.push_back(rec.state.run_dir);
      continue;
    }
    rd.end_x = budget.kind == "time" ? es : budget.kind == "flops" ? ef : static_cast<double>(est);
    reads.push_back(std::move(rd));
  }
  if (!no_flops.empty()) {
    std::string list;
    for (size_t i = 0; i < no_flops.size() && i < 5; ++i) list += "\n  " + no_flops[i];
    if (no_flops.size() > 5) list += "\n  ... and " + std::to_string(no_flops.size() - 5) + " more";
    throw UserError("--budget flops: the metrics.jsonl of " + std::to_string(no_flops.size()) +
                    " run(s) carry no training FLOPs (\"train_flops\"; written before Cellscope recorded them, or "
                    "resumed from a checkpoint without the count), so they cannot be put at equal FLOPs; use "
                    "--budget time=SECONDS or --budget step=N, or train them again:" +
                    list);
  }
  if (budget.common) {
    double amt = std::numeric_limits<double>::infinity();
    for (auto& rd : reads) amt = std::min(amt, rd.end_x);
    if (!std::isfinite(amt) || amt <= 0) throw UserError("--budget " + budget.kind + "=common: no run has trained yet");
    budget.amount = amt;
  }
  for (auto& rd : reads) {
    const auto v = value_at_budget(rd.evals, rd.end_x, budget, rd.lower);
    if (!v.has_value) {
      problems.push_back(rd.rec->point.id + ": " + v.problem);
      ++missing;
      continue;
    }
    in.push_back({table_internal::label_on(r, *rd.rec, rows_axes, metric_label),
                  table_internal::label_on(r, *rd.rec, cols_axes, metric_label), rd.rec->point.seed, v.value,
                  !v.reached});
  }
  return in;
}

}  // namespace table_internal

}  // namespace cs
