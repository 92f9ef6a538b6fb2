#include "train/trainer.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "dist/dist.h"
#include "util/error.h"

namespace cs {

using Clock = std::chrono::steady_clock;

json MetricsRecord::to_json() const {
  json j = {{"step", step}, {"epoch", epoch}, {"elapsed", elapsed}};
  if (eval) {
    j["eval"] = true;
    j["split"] = split;
  }
  for (auto& [k, v] : values) j[k] = std::isfinite(v) ? json(v) : json(nullptr);
  return j;
}

MetricsRecord MetricsRecord::from_json(const json& j) {
  MetricsRecord r;
  for (auto& [k, v] : j.items()) {
    if (k == "step") r.step = v.get<int64_t>();
    else if (k == "epoch") r.epoch = v.get<double>();
    else if (k == "elapsed") r.elapsed = v.get<double>();
    else if (k == "eval") r.eval = v.get<bool>();
    else if (k == "split") r.split = v.get<std::string>();
    else if (v.is_number()) r.values[k] = v.get<double>();
    else if (v.is_null()) r.values[k] = std::numeric_limits<double>::quiet_NaN();
  }
  return r;
}

void seed_everything(uint64_t seed) { torch::manual_seed(seed); }

void set_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(n);
}

struct Trainer::Impl {
  std::unique_ptr<torch::optim::Optimizer> opt;
  std::vector<torch::Tensor> params;
  torch::Device device{torch::kCPU};
  double lr = 1e-3, clip = 0;
  // logging interval accumulators (saved in checkpoints so a resumed run logs identically)
  double acc_loss = 0, acc_gnorm = 0;
  int64_t acc_n = 0, acc_units = 0;
  std::map<std::string, double> acc_metrics;
  double acc_time = 0;
  // best / early stop
  bool has_best = false;
  double best = 0;
  int64_t best_step = 0, bad_evals = 0;
  // totals
  double elapsed_before = 0;  // from earlier processes (resume)
  int64_t units_total = 0;
  double train_time_total = 0;
  // data-parallel interval accumulators, per rank (not checkpointed: throughput only)
  std::vector<double> acc_rank_time, acc_rank_units;
  double acc_allreduce = 0;
};

bool Trainer::parallel() const { return dist_ && dist_->world > 1; }
bool Trainer::writer() const { return store_ && (!dist_ || dist_->rank == 0); }

Trainer::Trainer(json cfg, std::unique_ptr<Task> task, std::shared_ptr<RunStore> store, DistContext* dist)
    : impl_(std::make_unique<Impl>()), cfg_(std::move(cfg)), task_(std::move(task)), store_(std::move(store)), dist_(dist) {
  const auto& tr = cfg_.at("training");
  std::string dev = tr.value("device", "cpu");
  try {
    impl_->device = torch::Device(dev);
  } catch (const std::exception&) {
    throw UserError("training.device: '" + dev + "' is not a device (expected cpu, cuda or cuda:N)");
  }
  if (impl_->device.is_cuda() && !torch::cuda::is_available())
    throw UserError("training.device: '" + dev + "' requested but this LibTorch has no CUDA device available");
  // Data parallel on GPUs: "cuda" without an index means one GPU per local rank.
  if (parallel() && impl_->device.is_cuda() && !impl_->device.has_index())
    impl_->device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(dist_->rank % std::max<int64_t>(1, torch::cuda::device_count())));
  if (parallel()) task_->set_shard(dist_->rank, dist_->world);  // before to(): the shard is built on the CPU
  task_->to(impl_->device);
  impl_->params = task_->model()->parameters();
  impl_->lr = tr.value("lr", 1e-3);
  impl_->clip = tr.value("clip", 0.0);
  const double wd = tr.value("weight_decay", 0.0);
  if (tr.value("optimizer", "adam") == "sgd" || tr.value("optimizer", "adam") == "asgd")  // asgd: averaging in the task
    impl_->opt = std::make_unique<torch::optim::SGD>(
        impl_->params, torch::optim::SGDOptions(impl_->lr).momentum(tr.value("momentum", 0.0)).weight_decay(wd));
  else
    impl_->opt = std::make_unique<torch::optim::Adam>(impl_->params, torch::optim::AdamOptions(impl_->lr).weight_decay(wd));
  summary_.task = task_->name();
  summary_.cell = cfg_["model"].value("cell", "");
  summary_.primary_metric = task_->primary_metric();
  summary_.lower_is_better = task_->lower_is_better();
  summary_.parameters = task_->parameter_count();
  summary_.unit = task_->unit_name();
  summary_.started = now_iso();
}

Trainer::~Trainer() = default;

void Trainer::save_checkpoint(const std::string& path) {
  torch::serialize::OutputArchive ar;
  torch::serialize::OutputArchive m, o, t, s;
  task_->model()->save(m);
  impl_->opt->save(o);
  task_->save_state(t);
  auto I = [](int64_t v) { return torch::tensor(v, torch::kInt64); };
  auto D = [](double v) { return torch::tensor(v, torch::kFloat64); };
  s.write("step", I(step_));
  s.write("acc_loss", D(impl_->acc_loss));
  s.write("acc_gnorm", D(impl_->acc_gnorm));
  s.write("acc_n", I(impl_->acc_n));
  s.write("acc_units", I(impl_->acc_units));
  s.write("acc_time", D(impl_->acc_time));
  s.write("has_best", I(impl_->has_best));
  s.write("best", D(impl_->best));
  s.write("best_step", I(impl_->best_step));
  s.write("bad_evals", I(impl_->bad_evals));
  s.write("elapsed", D(summary_.elapsed));
  s.write("units_total", I(impl_->units_total));
  s.write("train_time_total", D(impl_->train_time_total));
  json am = impl_->acc_metrics;
  std::string ams = am.dump();
  s.write("acc_metrics", torch::from_blob(ams.data(), {static_cast<int64_t>(ams.size())}, torch::kUInt8).clone());
  s.write("rng", at::detail::getDefaultCPUGenerator().get_state());
  ar.write("model", m);
  ar.write("optimizer", o);
  ar.write("task", t);
  ar.write("trainer", s);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ar.save_to(tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw UserError("cannot write checkpoint '" + path + "'");
}

void Trainer::load_checkpoint(const std::string& path) {
  if (!file_exists(path)) throw UserError("checkpoint '" + path + "' does not exist");
  try {
    torch::serialize::InputArchive ar, m, o, t, s;
    ar.load_from(path, impl_->device);
    ar.read("model", m);
    ar.read("optimizer", o);
    ar.read("task", t);
    ar.read("trainer", s);
    task_->model()->load(m);
    impl_->opt->load(o);
    task_->load_state(t);
    // InputArchive::read into an already-defined tensor tries to resize it: use a fresh one per key.
    auto T = [&](const char* k) { torch::Tensor v; s.read(k, v); return v; };
    auto I = [&](const char* k) { return T(k).item<int64_t>(); };
    auto D = [&](const char* k) { return T(k).item<double>(); };
    step_ = I("step");
    impl_->acc_loss = D("acc_loss");
    impl_->acc_gnorm = D("acc_gnorm");
    impl_->acc_n = I("acc_n");
    impl_->acc_units = I("acc_units");
    impl_->acc_time = D("acc_time");
    impl_->has_best = I("has_best") != 0;
    impl_->best = D("best");
    impl_->best_step = I("best_step");
    impl_->bad_evals = I("bad_evals");
    impl_->elapsed_before = D("elapsed");
    impl_->units_total = I("units_total");
    impl_->train_time_total = D("train_time_total");
    auto c = T("acc_metrics").contiguous();
    std::string ams(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
    impl_->acc_metrics = json::parse(ams).get<std::map<std::string, double>>();
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(T("rng"));
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    auto nl = what.find('\n');
    if (nl != std::string::npos) what = what.substr(0, nl);
    throw UserError("checkpoint '" + path + "' is unreadable or corrupted: " + what);
  }
}

void Trainer::resume() {
  if (!store_) throw UserError("resume needs a run directory");
  // Every rank reads the same (rank-independent) checkpoint; only rank 0 touches the directory.
  if (writer()) store_->remove_stale_temp_files();
  load_checkpoint(join_path(store_->checkpoint_dir(), "last.pt"));
  if (writer()) store_->truncate_metrics(step_);
  summary_.step = step_;
  summary_.has_best = impl_->has_best;
  summary_.best_valid = impl_->best;
  summary_.best_step = impl_->best_step;
  summary_.elapsed = impl_->elapsed_before;
  summary_.started = store_->read_summary().started;
}

TrainOutcome Trainer::run(TrainerControl* control, const TrainerCallbacks& cb) {
  const auto& tr = cfg_.at("training");
  const int64_t total = tr.value("steps", int64_t(1000));
  const int64_t log_every = tr.value("log_every", int64_t(10));
  const int64_t eval_every = tr.value("eval_every", int64_t(200));
  const int64_t ckpt_every = tr.value("checkpoint_every", int64_t(0));
  const int64_t keep = tr.value("keep_checkpoints", int64_t(3));
  const int64_t patience = tr.value("patience", int64_t(0));
  const bool lower = task_->lower_is_better();
  const std::string metric = task_->primary_metric();
  auto& I = *impl_;
  const auto t_start = Clock::now();
  double paused = 0;
  auto elapsed = [&] {
    return I.elapsed_before + std::chrono::duration<double>(Clock::now() - t_start).count() - paused;
  };
  const bool root = !dist_ || dist_->rank == 0;
  const bool par = parallel();
  const int W = par ? dist_->world : 1;
  auto log = [&](const std::string& s) {
    if (writer()) store_->log(s);
    if (cb.on_log && root) cb.on_log(s);
  };
  auto emit = [&](const MetricsRecord& r) {
    history.push_back(r);
    if (writer()) store_->append_metrics(r.to_json());
    if (cb.on_metrics && root) cb.on_metrics(r);
  };
  auto write_summary = [&] {
    summary_.step = step_;
    summary_.epoch = task_->epoch();
    summary_.elapsed = elapsed();
    summary_.has_best = I.has_best;
    summary_.best_valid = I.best;
    summary_.best_step = I.best_step;
    summary_.mean_throughput = I.train_time_total > 0 ? static_cast<double>(I.units_total) / I.train_time_total : 0;
    summary_.updated = now_iso();
    if (writer()) store_->write_summary(summary_);
  };
  // Data parallel: every rank takes part in gathering the task's sharded state, rank 0
  // saves it (global terms: the checkpoint does not depend on the number of ranks).
  auto save_global = [&](const std::string& path) {
    if (par) task_->set_gathered_state(allgather_rows(*dist_, task_->sharded_state()));
    if (writer()) save_checkpoint(path);
    if (par) task_->set_gathered_state({});
  };
  auto checkpoint = [&] {
    if (!store_) return;
    if (par) {
      save_global(join_path(store_->checkpoint_dir(), "last.pt"));
      if (!writer()) return;
    }
    const std::string dir = store_->checkpoint_dir();
    const std::string last = join_path(dir, "last.pt");
    if (!par) save_checkpoint(last);
    // step_<N>.pt: a hard link to this last.pt (the next save replaces last.pt by rename).
    const std::string named = join_path(dir, "step_" + std::to_string(step_) + ".pt");
    ::unlink(named.c_str());
    if (::link(last.c_str(), named.c_str()) != 0) save_checkpoint(named);
    auto steps = store_->checkpoint_steps();
    for (size_t i = 0; i + static_cast<size_t>(keep) < steps.size(); ++i)
      ::unlink(join_path(dir, "step_" + std::to_string(steps[i]) + ".pt").c_str());
  };
  auto evaluate = [&](const std::string& split) {
    auto er = task_->evaluate(split);
    if (par) {
      // Every rank evaluates the whole split with identical parameters (no collective
      // can time out during a long evaluation); rank 0's numbers are broadcast so that
      // best/early-stop decisions are identical everywhere.
      auto v = torch::zeros({static_cast<int64_t>(er.metrics.size())}, torch::kFloat64);
      int64_t i = 0;
      for (auto& kv : er.metrics) v[i++] = root ? kv.second : 0.0;
      v = allreduce_sum(*dist_, v).to(torch::kCPU);
      i = 0;
      for (auto& kv : er.metrics) kv.second = v[i++].item<double>();
    }
    MetricsRecord r;
    r.step = step_;
    r.epoch = task_->epoch();
    r.eval = true;
    r.split = split;
    r.elapsed = elapsed();
    r.values = er.metrics;
    if (par) {
      // Consistency check: the largest difference between any rank's per-tensor
      // parameter sums and rank 0's (0 when the replicas are identical, as they must be).
      std::vector<torch::Tensor> sums;
      {
        torch::NoGradGuard ng;
        for (auto& p : I.params) sums.push_back(p.detach().to(torch::kFloat64).sum().reshape({1}));
      }
      auto all = allgather_rows(*dist_, {torch::cat(sums)})[0].to(torch::kCPU).view({W, -1});
      r.values["param_divergence"] = (all - all[0]).abs().max().item<double>();
    }
    emit(r);
    return er;
  };

  summary_.status = "running";
  summary_.reason.clear();
  write_summary();
  log("training " + summary_.cell + " on " + task_->name() + " from step " + std::to_string(step_) + " to " +
      std::to_string(total) + " (" + std::to_string(summary_.parameters) + " parameters)");
  const double inf = std::numeric_limits<double>::infinity();
  bool early_stopped = false;
  bool agreed_stop = false;  // data parallel: some rank was asked to stop (reduced flag)
  try {
    if (par) {
      // Identical starting point on every rank (fresh or resumed), and a different
      // random stream per rank (dropout masks), deterministic in (seed, rank, step).
      std::vector<torch::Tensor> ps;
      for (auto& p : I.params) ps.push_back(p.data());
      broadcast_parameters(*dist_, ps);
      torch::manual_seed(tr.value("seed", int64_t(1)) + 1000003ull * static_cast<uint64_t>(dist_->rank) +
                         7919ull * static_cast<uint64_t>(step_));
      I.acc_rank_time.assign(static_cast<size_t>(W), 0.0);
      I.acc_rank_units.assign(static_cast<size_t>(W), 0.0);
      I.acc_allreduce = 0;
    }
    while (step_ < total) {
      if (par && agreed_stop) {
        checkpoint();
        summary_.status = "stopped";
        summary_.reason = "stopped by the user at step " + std::to_string(step_);
        write_summary();
        log(summary_.reason);
        return {summary_, store_ ? store_->dir() : ""};
      }
      if (control && !par) {
        while (control->pause.load() && !control->stop.load()) {
          auto p0 = Clock::now();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          paused += std::chrono::duration<double>(Clock::now() - p0).count();
        }
        if (control->stop.load()) {
          checkpoint();
          summary_.status = "stopped";
          summary_.reason = "stopped by the user at step " + std::to_string(step_);
          write_summary();
          log(summary_.reason);
          return {summary_, store_ ? store_->dir() : ""};
        }
      }
      auto t0 = Clock::now();
      StepResult sr = task_->train_step();
      I.opt->zero_grad();
      sr.loss.backward();
      bool nonfinite = !std::isfinite(sr.task_loss);
      if (par) {
        const double t_compute = std::chrono::duration<double>(Clock::now() - t0).count();
        const double ar0 = dist_->allreduce_seconds;
        allreduce_gradients(*dist_, I.params);  // mean gradient of the global batch
        I.acc_allreduce += dist_->allreduce_seconds - ar0;
        // One small all-reduce of this step's statistics: [loss, non-finite flag, stop
        // flag, compute seconds per rank (W), units per rank (W), task metrics...].
        const int64_t n = 3 + 2 * W + static_cast<int64_t>(sr.metrics.size());
        auto st = torch::zeros({n}, torch::kFloat64);
        auto a = st.accessor<double, 1>();
        a[0] = std::isfinite(sr.task_loss) ? sr.task_loss : 0.0;
        a[1] = nonfinite ? 1.0 : 0.0;
        a[2] = control && control->stop.load() ? 1.0 : 0.0;
        a[3 + dist_->rank] = t_compute;
        a[3 + W + dist_->rank] = static_cast<double>(sr.units);
        int64_t k = 3 + 2 * W;
        for (auto& kv : sr.metrics) a[k++] = kv.second;
        st = allreduce_sum(*dist_, st).to(torch::kCPU);
        auto b = st.accessor<double, 1>();
        nonfinite = b[1] > 0;  // a NaN/Inf on any rank stops every rank at the same step
        agreed_stop = b[2] > 0;
        sr.task_loss = nonfinite ? std::numeric_limits<double>::quiet_NaN() : b[0] / W;  // mean of equal-size shard means
        sr.units = 0;
        for (int r = 0; r < W; ++r) {
          I.acc_rank_time[static_cast<size_t>(r)] += b[3 + r];
          I.acc_rank_units[static_cast<size_t>(r)] += b[3 + W + r];
          sr.units += static_cast<int64_t>(b[3 + W + r]);
        }
        k = 3 + 2 * W;
        for (auto& kv : sr.metrics) kv.second = b[k++] / W;
      }
      const double gnorm = torch::nn::utils::clip_grad_norm_(I.params, I.clip > 0 ? I.clip : inf);
      if (nonfinite || !std::isfinite(gnorm)) {
        summary_.status = "failed";
        summary_.reason = std::string("the loss became ") + (std::isnan(sr.task_loss) || std::isnan(gnorm) ? "NaN" : "Inf") +
                          " at step " + std::to_string(step_ + 1) + "; the last good checkpoint is kept" +
                          (store_ && file_exists(join_path(store_->checkpoint_dir(), "last.pt"))
                               ? " (checkpoints/last.pt)"
                               : " (none was written yet)") +
                          ". Try a lower training.lr or gradient clipping (training.clip).";
        write_summary();
        log(summary_.reason);
        return {summary_, store_ ? store_->dir() : ""};
      }
      I.opt->step();
      ++step_;
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      I.acc_loss += sr.task_loss;
      I.acc_gnorm += gnorm;
      I.acc_n += 1;
      I.acc_units += sr.units;
      I.acc_time += dt;
      I.units_total += sr.units;
      I.train_time_total += dt;
      for (auto& [k, v] : sr.metrics) I.acc_metrics[k] += v;
      if (cb.on_progress) {
        Progress p;
        p.step = step_;
        p.total_steps = total;
        p.elapsed = elapsed();
        p.throughput = dt > 0 ? sr.units / dt : 0;
        p.eta = I.train_time_total / std::max<int64_t>(1, step_ - 0) * static_cast<double>(total - step_);
        p.unit = task_->unit_name();
        p.last_loss = sr.task_loss;
        cb.on_progress(p);
      }
      if (step_ % log_every == 0 || step_ == total) {
        MetricsRecord r;
        r.step = step_;
        r.epoch = task_->epoch();
        r.elapsed = elapsed();
        const double n = static_cast<double>(I.acc_n);
        r.values["loss"] = I.acc_loss / n;
        for (auto& [k, v] : I.acc_metrics) r.values[k] = v / n;
        r.values["grad_norm"] = I.acc_gnorm / n;
        r.values["lr"] = I.lr;
        r.values["throughput"] = I.acc_time > 0 ? static_cast<double>(I.acc_units) / I.acc_time : 0;
        if (par) {
          // Per rank: its units over its own forward+backward time (communication excluded),
          // so a slow rank stands out; the GUI reads these with rank_throughputs().
          for (int q = 0; q < W; ++q) {
            const double t = I.acc_rank_time[static_cast<size_t>(q)];
            r.values["throughput_rank" + std::to_string(q)] = t > 0 ? I.acc_rank_units[static_cast<size_t>(q)] / t : 0;
          }
          r.values["allreduce_ms"] = 1e3 * I.acc_allreduce / n;  // gradient all-reduce per step
          r.values["world_size"] = W;
          std::fill(I.acc_rank_time.begin(), I.acc_rank_time.end(), 0.0);
          std::fill(I.acc_rank_units.begin(), I.acc_rank_units.end(), 0.0);
          I.acc_allreduce = 0;
        }
        emit(r);
        I.acc_loss = I.acc_gnorm = I.acc_time = 0;
        I.acc_n = I.acc_units = 0;
        I.acc_metrics.clear();
      }
      const bool do_eval = (eval_every > 0 && step_ % eval_every == 0) || step_ == total;
      if (do_eval && task_->has_split("valid")) {
        auto er = evaluate("valid");
        const double v = er.metrics.at(metric);
        const bool better = !I.has_best || (lower ? v < I.best : v > I.best);
        if (better) {
          I.has_best = true;
          I.best = v;
          I.best_step = step_;
          I.bad_evals = 0;
        } else {
          ++I.bad_evals;
        }
        if (store_ && better) {
          // best.pt written after last.pt below would see the same weights: save it directly
          save_global(join_path(store_->checkpoint_dir(), "best.pt"));
        }
        if (patience > 0 && I.bad_evals >= patience) early_stopped = true;
        // test over training time (CRU Fig. 4): logged only, never used for selection
        if (tr.value("track_test", false) && task_->has_split("test")) evaluate("test");
      }
      if ((ckpt_every > 0 ? step_ % ckpt_every == 0 : do_eval) || step_ == total || early_stopped) checkpoint();
      if (do_eval || step_ % log_every == 0) write_summary();
      if (early_stopped) {
        log("early stop at step " + std::to_string(step_) + ": no improvement of valid " + metric + " in " +
            std::to_string(patience) + " evaluations (best " + std::to_string(I.best) + " at step " +
            std::to_string(I.best_step) + ")");
        break;
      }
    }
    // Test metric of the best checkpoint (data parallel: rank 0 alone, after the last collective).
    if (tr.value("eval_test", true) && task_->has_split("test") && root) {
      if (store_ && file_exists(join_path(store_->checkpoint_dir(), "best.pt"))) {
        // load only the model weights of best.pt
        torch::serialize::InputArchive ar, m;
        ar.load_from(join_path(store_->checkpoint_dir(), "best.pt"), I.device);
        ar.read("model", m);
        task_->model()->load(m);
      }
      auto er = evaluate("test");
      summary_.has_test = true;
      summary_.test_metric = er.metrics.at(metric);
    }
    summary_.status = "finished";
    summary_.reason = early_stopped ? "early stop (patience)" : "";
    write_summary();
    log("finished at step " + std::to_string(step_));
  } catch (const std::exception& e) {
    summary_.status = "failed";
    summary_.reason = e.what();
    try {
      write_summary();
    } catch (...) {
    }
    log(std::string("failed: ") + e.what());
    throw;
  }
  return {summary_, store_ ? store_->dir() : ""};
}

std::string checkpoint_path(const std::string& run_dir, const std::string& which) {
  const std::string dir = join_path(run_dir, "checkpoints");
  std::string p;
  if (which == "best" || which == "last") p = join_path(dir, which + ".pt");
  else p = join_path(dir, "step_" + which + ".pt");
  if (which == "best" && !file_exists(p)) p = join_path(dir, "last.pt");
  if (!file_exists(p)) throw UserError("run '" + run_dir + "' has no checkpoint '" + which + "' (" + p + ")");
  return p;
}

std::unique_ptr<Task> load_run_task(const std::string& run_dir, const std::string& which) {
  RunStore store(run_dir);
  if (!file_exists(store.path("config.json"))) throw UserError("'" + run_dir + "' is not a run directory (no config.json)");
  json cfg = load_and_resolve(store.read_config());
  auto task = make_task(cfg, run_dir);
  const std::string p = checkpoint_path(run_dir, which);
  try {
    torch::serialize::InputArchive ar, m;
    ar.load_from(p);
    ar.read("model", m);
    task->model()->load(m);
  } catch (const std::exception& e) {
    std::string what = e.what();
    auto nl = what.find('\n');
    throw UserError("checkpoint '" + p + "' is unreadable or corrupted: " + what.substr(0, nl));
  }
  return task;
}

}  // namespace cs
