#include "train/launch.h"

#include <algorithm>
#include <thread>

#include "dist/dist.h"
#include "tasks/task.h"
#include "util/error.h"

namespace cs {

int gui_training_threads() {
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, hw - 1);
}

namespace {
// Merge `over` into `base` section by section (objects merged key by key).
void merge_into(json& base, const json& over) {
  if (!over.is_object()) return;
  for (auto& [k, v] : over.items()) {
    if (v.is_object() && base.contains(k) && base[k].is_object()) merge_into(base[k], v);
    else base[k] = v;
  }
}
}  // namespace

LaunchedRun start_run(const json& raw_cfg, const LaunchOptions& o) {
  LaunchedRun out;
  const bool resuming = !o.resume_dir.empty();
  if (resuming) {
    out.store = std::make_shared<RunStore>(o.resume_dir);
    if (!file_exists(out.store->path("config.json")))
      throw UserError("'" + o.resume_dir + "' is not a run directory (no config.json)");
    json raw = out.store->read_config();
    merge_into(raw, raw_cfg);
    out.cfg = load_and_resolve(raw);
  } else {
    out.cfg = load_and_resolve(raw_cfg);  // every problem, with its JSON path; nothing created yet
  }
  const int threads = out.cfg.at("training").at("threads").get<int>();
  set_threads(o.threads > 0 ? o.threads : threads > 0 ? threads : o.default_threads);
  seed_everything(out.cfg.at("training").at("seed").get<uint64_t>());
  // Build the task (loads and checks the data) before any directory is created.
  auto task = make_task(out.cfg, resuming ? out.store->dir() : "");
  const bool root = !o.dist || o.dist->rank == 0;
  if (!resuming && !root) {
    // Other ranks never write the run directory (a store object all the same: the
    // ranks must agree on whether checkpoints are taken).
    out.store = std::make_shared<RunStore>(o.run_dir);
  } else if (!resuming) {
    const std::string ws = o.workspace.empty() ? default_workspace() : o.workspace;
    const std::string dir = o.run_dir.empty() ? new_run_dir(ws, out.cfg) : o.run_dir;
    out.store = std::make_shared<RunStore>(dir);
    out.store->create();
    out.store->write_config(out.cfg);
    const std::string vt = task->vocab_text();
    if (!vt.empty()) atomic_write(out.store->path("vocab"), vt);
  } else if (root) {
    out.store->write_config(out.cfg);
  }
  out.trainer = std::make_unique<Trainer>(out.cfg, std::move(task), out.store, o.dist);
  if (resuming) {
    out.trainer->resume();
    out.resumed = true;
  }
  return out;
}

}  // namespace cs
