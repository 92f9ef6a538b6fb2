// The CUDA-graph step's pieces (run/train/graph_step.h, GRAPH_NOTES.md): Adam, clipping and the
// finiteness check as device work must compute what torch::optim::Adam, clip_grad_norm_ and the
// plain step's checks compute; the static-shape char-LM step (training.cuda_graph on) must train as
// the plain step does. On the CPU nothing is captured, so these run everywhere; the tests marked CUDA
// check the captured step where a CUDA device is visible (the GPU check, packaging/gpu/check.sh) and the
// refusal and fallback elsewhere.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "bench/bench_peer.h"
#include "cells/cell.h"
#include "cells/registry.h"
#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/task.h"
#include "train/graph_step.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "train/trainer.h"

namespace test_graph_step {  // this file's own names in a unity build (tests/README.md)

using cs::json;

namespace {

std::vector<torch::Tensor> make_params(int seed) {
  torch::manual_seed(seed);
  return {torch::randn({7, 5}).requires_grad_(true), torch::randn({5}).requires_grad_(true),
          torch::randn({5, 3}).requires_grad_(true)};
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

// A loss of the three parameters whose gradients change from step to step.
torch::Tensor toy_loss(const std::vector<torch::Tensor>& p, int step) {
  torch::manual_seed(100 + step);
  const auto x = torch::randn({4, 7});
  return (torch::tanh(torch::matmul(x.matmul(p[0]) + p[1], p[2])).pow(2)).sum() + 0.1 * p[1].pow(3).sum();
}

json small_lm(const std::string& path, int steps, const std::string& graph, const json& model) {
  json m = model;
  m["embed"] = 8;
  m["hidden"] = 16;
  return cs::load_and_resolve({{"task", "char_lm"},
                               {"dataset", {{"path", path}}},
                               {"model", m},
                               {"training",
                                {{"batch", 4},
                                 {"bptt", 12},
                                 {"steps", steps},
                                 {"eval_every", steps},
                                 {"log_every", 1},
                                 {"seed", 5},
                                 {"threads", 1},
                                 {"weight_decay", 0.001},
                                 {"eval_test", false},
                                 {"tensorboard", false},
                                 {"cuda_graph", graph}}}});
}

// The run's training losses, one per step, and its log text.
std::vector<double> train_losses(const json& cfg, const std::string& dir, std::string* log_text = nullptr) {
  cs::seed_everything(cfg["training"]["seed"].get<uint64_t>());
  auto store = std::make_shared<cs::RunStore>(dir);
  auto task = cs::make_task(cfg, "");
  store->create();
  store->write_config(cfg);
  cs::atomic_write(store->path("vocab"), task->vocab_text());
  cs::Trainer t(cfg, std::move(task), store);
  cs::TrainerControl control;
  cs::TrainerCallbacks cb;
  std::string logged;
  cb.on_log = [&](const std::string& s) { logged += s + "\n"; };
  const auto outcome = t.run(&control, cb);
  EXPECT_EQ(outcome.summary.status, "finished") << outcome.summary.reason;
  std::vector<double> losses;
  for (const auto& r : cs::read_metrics(store->path("metrics.jsonl")))
    if (!r.eval && r.values.count("loss")) losses.push_back(r.values.at("loss"));
  if (log_text) *log_text = logged;
  return losses;
}

bool cuda() { return torch::cuda::is_available(); }

}  // namespace

// DeviceAdam is torch::optim::Adam's update (same state tensors, bias corrections on the device):
// 25 steps with weight decay agree to float rounding, and the step count it stores is Adam's.
TEST(GraphStep, deviceAdamMatchesTorchAdam) {
  auto a = make_params(1), b = clones(a);
  torch::optim::Adam ref(a, torch::optim::AdamOptions(3e-2).weight_decay(0.01));
  torch::optim::Adam opt(b, torch::optim::AdamOptions(3e-2).weight_decay(0.01));
  cs::DeviceAdam dev(opt, b);
  for (int step = 0; step < 25; ++step) {
    ref.zero_grad();
    toy_loss(a, step).backward();
    ref.step();
    cs::zero_grads_in_place(b);
    toy_loss(b, step).backward();
    dev.load_from_optimizer();
    dev.step();
    dev.store_step_count(step + 1);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = (a[i] - b[i]).abs().max().item<double>();
    EXPECT_LT(diff, 1e-4) << "parameter " << i << " after 25 steps (float32 rounding of the bias corrections)";
    EXPECT_GT((a[i] - make_params(1)[i]).abs().max().item<double>(), 1e-2) << "the parameters moved";
  }
  ASSERT_EQ(dev.step_count(), 25);
  // The learning rate is read from the optimizer at each load (training.lr_decay changes it there).
  static_cast<torch::optim::AdamOptions&>(opt.param_groups()[0].options()).lr(0.0);
  const auto before = b[0].detach().clone();
  cs::zero_grads_in_place(b);
  toy_loss(b, 99).backward();
  dev.load_from_optimizer();
  dev.step();
  ASSERT_TRUE(torch::equal(before, b[0].detach())) << "lr 0 must not move the weights";
}

// clip_grad_norm_device = clip_grad_norm_: the same norm, the same scaled gradients; below the
// threshold the gradients stay exactly as they were.
TEST(GraphStep, deviceClipMatchesClipGradNorm) {
  for (double max_norm : {0.5, 1e6}) {
    auto a = make_params(2), b = clones(a);
    toy_loss(a, 0).backward();
    toy_loss(b, 0).backward();
    std::vector<torch::Tensor> before;
    for (const auto& p : b) before.push_back(p.grad().clone());
    const double ref = torch::nn::utils::clip_grad_norm_(a, max_norm);
    const double got = cs::clip_grad_norm_device(b, max_norm).item<double>();
    EXPECT_NEAR(got, ref, 1e-5 * ref);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_LT((a[i].grad() - b[i].grad()).abs().max().item<double>(), 1e-6) << "max_norm " << max_norm;
      if (max_norm > 1e5) {
        ASSERT_TRUE(torch::equal(b[i].grad(), before[i]));
      }
    }
  }
}

TEST(GraphStep, nonfiniteCode) {
  auto p = make_params(3);
  EXPECT_EQ(cs::nonfinite_any(p).item<float>(), 0.0f);
  {
    torch::NoGradGuard ng;
    p[1][2] = std::numeric_limits<float>::infinity();
  }
  EXPECT_EQ(cs::nonfinite_any(p).item<float>(), 1.0f);
  {
    torch::NoGradGuard ng;
    p[2][0][1] = std::nanf("");
  }
  EXPECT_GE(cs::nonfinite_any(p).item<float>(), 2.0f);
}

// The MZU's logged metrics as tensors (StepContext::tensor_metrics, read once after a captured
// step) are the values it logs as doubles.
TEST(GraphStep, tensorMetricsAreTheLoggedValues) {
  json m = cs::paper_model("sat_mzu", 8, 16);
  m["filter"] = 12;
  const json resolved = cs::load_and_resolve(json{{"task", {{"name", "char_lm"}}}, {"model", m}}, "test")["model"];
  torch::manual_seed(4);
  auto c = cs::cell_info("sat_mzu").make(resolved, 8, 0);
  const auto x = torch::randn({6, 3, 8});
  cs::StepContext plain, tensors;
  tensors.tensor_metrics = true;
  plain.stepwise = tensors.stepwise = true;
  c->forward_sequence(x, c->initial_state(3, x.options()), plain);
  c->forward_sequence(x, c->initial_state(3, x.options()), tensors);
  ASSERT_FALSE(plain.metrics.empty());
  ASSERT_TRUE(tensors.metrics.empty()) << "nothing logged as a double in tensor mode";
  for (const auto& [k, v] : plain.metrics) {
    ASSERT_TRUE(tensors.metric_tensors.count(k)) << k;
    EXPECT_EQ(tensors.metric_tensors[k].second, v.second) << k;
    EXPECT_NEAR(tensors.metric_tensors[k].first.item<double>(), v.first, 1e-5 * (1 + std::abs(v.first))) << k;
  }
}

// training.cuda_graph on, on the CPU: the static-shape step (fixed buffers, the carried state copied
// in place, device Adam and clipping, one read-back) trains as the plain step, across an epoch's end
// (its shorter last window runs on its own buffers) and with weight decay; sat_mzu also logs its metrics.
TEST(GraphStep, staticStepTrainsAsThePlainStep) {
  const auto path = cstest::write_text_fixture("graph-static.txt", 3000);
  for (const json& model : {json{{"cell", "gru"}}, json{{"cell", "sat_mzu"}, {"zones", 4}, {"filter", 12}}}) {
    const std::string cell = model["cell"];
    const auto plain = train_losses(small_lm(path, 70, "off", model), cstest::temp_dir() + "/gs-off-" + cell);
    std::string log;
    const auto staticed = train_losses(small_lm(path, 70, "on", model), cstest::temp_dir() + "/gs-on-" + cell, &log);
    ASSERT_EQ(plain.size(), 70u);
    ASSERT_EQ(staticed.size(), plain.size());
    EXPECT_NE(log.find("static-shape step runs on cpu"), std::string::npos) << log;
    for (size_t i = 0; i < plain.size(); ++i)
      ASSERT_NEAR(staticed[i], plain[i], 2e-4 * std::abs(plain[i])) << cell << ", step " << i + 1;
  }
}

TEST(GraphStep, cudaInfoSaysWhatThisBuildCan) {
  const json j = cs::cuda_info();
  ASSERT_EQ(j["built_with_cuda"].get<bool>(), cs::cuda_graphs_built());
  ASSERT_FALSE(j["graphs"].get<std::string>().empty());
  ASSERT_EQ(j["devices"].size(), cuda() ? torch::cuda::device_count() : 0u);
  EXPECT_FALSE(cs::graph_refusal(json{{"cell", "mcrnn"}}).empty());
  EXPECT_TRUE(cs::graph_refusal(json{{"cell", "sat_mzu"}}).empty());
}

// The captured step trains as the eager step (the same kernels, replayed), the log says it was
// captured, and the MZU's metrics are logged from the replays. Where no CUDA device is visible (CI),
// the other half of the contract: a capture on the CPU refuses, says why and runs nothing, and
// training.cuda_graph auto leaves the CPU's plain step alone (no graph line in the log).
TEST(GraphStep, capturedStepTrainsAsTheEagerStep) {
  const auto path = cstest::write_text_fixture("graph-cuda.txt", 3000);
  if (!cuda()) {
    cs::StepGraph g{torch::Device(torch::kCPU)};
    bool ran = false;
    std::string why;
    ASSERT_FALSE(g.capture([&] { ran = true; }, &why));
    ASSERT_FALSE(ran);
    ASSERT_FALSE(g.captured());
    ASSERT_FALSE(why.empty());
    std::string log;
    train_losses(small_lm(path, 10, "auto", json{{"cell", "gru"}}), cstest::temp_dir() + "/gc-cpu-auto", &log);
    EXPECT_EQ(log.find("cuda_graph"), std::string::npos) << log;
    return;
  }
  for (const json& model : {json{{"cell", "gru_dt"}, {"depth", 2}},
                            json{{"cell", "sat_mzu"}, {"zones", 4}, {"filter", 12}, {"depth", 2}}}) {
    const std::string cell = model["cell"];
    json off = small_lm(path, 40, "off", model), on = small_lm(path, 40, "auto", model);
    off["training"]["device"] = on["training"]["device"] = "cuda";
    const auto eager = train_losses(off, cstest::temp_dir() + "/gc-off-" + cell);
    std::string log;
    const auto graphed = train_losses(on, cstest::temp_dir() + "/gc-on-" + cell, &log);
    EXPECT_NE(log.find("captured as one CUDA graph"), std::string::npos) << log;
    ASSERT_EQ(graphed.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i)
      ASSERT_NEAR(graphed[i], eager[i], 1e-3 * std::abs(eager[i])) << cell << ", step " << i + 1;
  }
}

// The bench's step with a graph: on CUDA captured for every paper cell but MC-RNN, which says why;
// on the CPU every cell's capture refuses after the warm-up and the note says so (the steps go on
// eagerly).
TEST(GraphStep, benchStepCapturesWhereItCan) {
  const std::string device = cuda() ? "cuda" : "cpu";
  for (const auto& cell : cs::peer_cells()) {
    json m = cs::paper_model(cell, 16, 32);
    if (m.contains("filter")) m["filter"] = 24;
    cs::CharLMStepBench b(m, 4, 10, 20, false, device, true);
    for (int i = 0; i < 6; ++i) b.step();
    if (cuda()) torch::cuda::synchronize();
    if (cell == "mcrnn" || !cuda()) EXPECT_EQ(b.graph_note().rfind("eager: ", 0), 0u) << cell << ": " << b.graph_note();
    else EXPECT_EQ(b.graph_note(), "captured") << cell;
  }
}

}  // namespace test_graph_step
