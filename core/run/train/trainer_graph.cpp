// The trainer's CUDA-graph step (GRAPH_NOTES.md): the task's static-shape step (Task::stage_static_batch,
// static_forward) with the backward, clipping and Adam as device work, run eagerly on a side stream for
// the first steps and then captured once and replayed; one read-back per step (loss, gradient norm,
// finiteness, metrics). Batches of another shape (an epoch's shorter last window) run eagerly.
#include <torch/optim/adam.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "train/graph_step.h"
#include "train/step_sync.h"
#include "train/trainer.h"
#include "train/trainer_impl.h"

namespace cs {

namespace {
// Eager steps on the fixed buffers before the capture: the gradients, Adam's moments and the
// libraries' workspaces (cuBLAS, cuDNN) exist by then, on the stream the capture uses.
constexpr int64_t kGraphWarmup = 3;
}  // namespace

void Trainer::setup_graph(RunContext& rc) {
  auto& I = *impl_;
  I.graph.reset();
  const CudaGraph mode = I.opts.cuda_graph;
  if (mode == CudaGraph::Off || (!I.device.is_cuda() && mode != CudaGraph::On)) return;
  std::string why;
  if (parallel()) why = "data-parallel training (the gradients' all-reduce runs between backward and update)";
  else if (I.opts.optimizer != Optimizer::Adam)
    why = "training.optimizer " + std::string(enum_name(I.opts.optimizer)) + " (the captured step implements Adam)";
  else if (!task_->has_static_step()) why = "task " + task_->name() + " has no static-shape step (char_lm has one)";
  else if (I.device.is_cuda()) why = graph_refusal(cfg_.at("model"));
  if (!why.empty()) {
    log(rc, "training.cuda_graph: plain steps, not a CUDA graph: " + why);
    return;
  }
  I.graph = std::make_unique<GraphRun>(I.device);
  I.graph->adam = std::make_unique<DeviceAdam>(static_cast<torch::optim::Adam&>(*I.opt), I.params);
  I.graph->updates = I.graph->adam->step_count();
  if (!I.device.is_cuda()) {
    I.graph->gave_up = true;  // nothing to capture on the CPU: the same step, eagerly
    log(rc, "training.cuda_graph on: the static-shape step runs on " + I.device.str() + " (nothing is captured there)");
  } else {
    log(rc, "training.cuda_graph: the step is captured as one CUDA graph after " + std::to_string(kGraphWarmup) +
                " eager steps");
  }
}

bool Trainer::train_step_graphed(RunContext& rc) {
  auto& I = *impl_;
  auto& G = *I.graph;
  const auto t0 = Clock::now();
  task_->set_train_step(step_);
  const bool fixed = task_->stage_static_batch();
  G.adam->load_from_optimizer();  // the learning rate now (training.lr_decay), the step count
  const double clip = I.opts.clip > 0 ? I.opts.clip : std::numeric_limits<double>::infinity();
  GraphRun::Step step;  // what this step's body wrote (or, replayed, the captured one's)
  // One whole update on the fixed buffers, with nothing read back: what the graph holds.
  auto body = [&] {
    StaticForward f = task_->static_forward();
    zero_grads_in_place(I.params);
    f.loss.backward();
    f.commit();
    const auto gnorm = clip_grad_norm_device(I.params, clip);
    G.adam->step();
    std::vector<torch::Tensor> vals = {f.task_loss.to(torch::kFloat32).reshape({}), gnorm.to(torch::kFloat32),
                                       nonfinite_any(I.params)};
    step.metric_names.clear();
    for (auto& [k, v] : f.metrics) {
      vals.push_back(v.first.to(torch::kFloat32).reshape({}));
      step.metric_names.emplace_back(k, v.second);
    }
    step.stats = torch::stack(vals);
    step.units = f.units;
    step.flops = f.flops;
    step.host_schedule = f.host_schedule;
    step.loss_metrics = f.loss_metrics;
  };
  if (fixed && G.graph.captured()) {
    G.graph.replay();
    ++G.replays;
    step = G.captured;
  } else if (fixed && !G.gave_up && G.warm >= kGraphWarmup && !G.last_host_schedule) {
    std::string why;
    if (G.graph.capture(body, &why)) {
      G.captured = step;  // its stats live in the graph's memory: every replay rewrites them
      G.graph.replay();   // the capture ran nothing: this step's update
      ++G.replays;
      log(rc, "training.cuda_graph: step " + std::to_string(step_ + 1) +
                  " captured as one CUDA graph; replayed from now on");
    } else {
      G.gave_up = true;
      log(rc, "training.cuda_graph: the capture failed, plain steps from now on: " + why);
      G.graph.run(body);
      ++G.eager;
    }
  } else {
    G.graph.run(body);
    ++G.eager;
    if (fixed) {
      ++G.warm;
      G.last_host_schedule = step.host_schedule;
    }
  }
  torch::Tensor host;
  G.graph.run([&] { host = step.stats.to(torch::kCPU); });  // on the side stream: after the step's work
  const auto a = host.accessor<float, 1>();
  G.updates += 1;
  G.adam->store_step_count(G.updates);
  StepStats st;
  st.loss = a[0];
  const double gnorm = a[1];
  st.nonfinite = !std::isfinite(st.loss);
  st.units = step.units;
  for (const auto& [k, f] : step.loss_metrics) st.metrics[k] = st.loss * f;
  for (size_t i = 0; i < step.metric_names.size(); ++i)
    st.metrics[step.metric_names[i].first] =
        a[3 + static_cast<int64_t>(i)] / static_cast<double>(std::max<int64_t>(step.metric_names[i].second, 1));
  // The update ran inside the step; a failed run keeps the last good checkpoint, never these weights.
  if (st.nonfinite || !std::isfinite(gnorm)) {
    fail_nonfinite_loss(rc, st.loss, gnorm);
    return false;
  }
  if (std::isnan(I.ref_loss) && step_ == 0) I.ref_loss = st.loss;
  if (a[2] > 0.5f) {
    fail_nonfinite_weights(rc, a[2] > 1.5f);
    return false;
  }
  account_step(rc, st, gnorm, std::chrono::duration<double>(Clock::now() - t0).count(), step.flops);
  return true;
}

}  // namespace cs
