#include "tasks/task.h"

#include "util/error.h"

namespace cs {

std::vector<std::pair<std::string, int64_t>> Task::parameter_breakdown() { return parameter_breakdown_of(*model()); }

std::vector<std::pair<std::string, int64_t>> parameter_breakdown_of(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, int64_t>> out;
  std::map<std::string, int64_t> idx;
  for (auto& p : model.named_parameters(/*recurse=*/true)) {
    std::string k = p.key();
    // group by the first two path components, e.g. "stack.layer0"
    auto d1 = k.find('.');
    std::string group = k;
    if (d1 != std::string::npos) {
      auto d2 = k.find('.', d1 + 1);
      group = k.substr(0, d2 == std::string::npos ? d1 : d2);
    }
    auto it = idx.find(group);
    if (it == idx.end()) {
      idx[group] = static_cast<int64_t>(out.size());
      out.emplace_back(group, 0);
      it = idx.find(group);
    }
    out[static_cast<size_t>(it->second)].second += p.value().numel();
  }
  return out;
}

void Task::set_shard(int rank, int world) {
  throw UserError("task '" + name() + "' does not support data-parallel training (rank " + std::to_string(rank) +
                  " of " + std::to_string(world) + "); train it with one process");
}

// ---- Inspection defaults: the task does not support it.
namespace {
[[noreturn]] void unsupported(const Task& t, const std::string& what) {
  throw UserError("task '" + t.name() + "' is not supported by " + what);
}
}  // namespace

EncodedText Task::encode_text(const std::string&) const { unsupported(*this, "this analysis"); }
void Task::probe_sequence(const std::vector<int32_t>&, Probe&) { unsupported(*this, "this analysis"); }
std::string Task::split_text(const std::string&, int64_t) const { unsupported(*this, "this analysis"); }
std::string Task::default_analysis_text() const { return ""; }
SequenceScores Task::sequence_scores(const std::string&) {
  throw UserError("length buckets need a char_lm, word_lm, classify, absa, cloze or seq2seq run");
}
torch::Tensor Task::class_probabilities(const std::vector<std::vector<int32_t>>&) {
  unsupported(*this, "this analysis (it needs a classifier)");
}
bool Task::stage_static_batch() {
  throw std::logic_error("task " + name() + " has no static-shape training step (Task::has_static_step)");
}
StaticForward Task::static_forward() {
  throw std::logic_error("task " + name() + " has no static-shape training step (Task::has_static_step)");
}
TokenStepper Task::token_stepper(const std::string&) {
  throw UserError("generation needs a char_lm or word_lm run; this run's task is " + name());
}

int64_t Task::parameter_count() {
  int64_t n = 0;
  for (auto& p : model()->parameters()) n += p.numel();
  return n;
}

// The tasks, in registry order: ONE line each. X(f) names the task's `void f(std::vector<TaskInfo>&)`,
// defined in the task's own .cpp (cells/README.md, "Adding a task").
#define CELLSCOPE_TASKS(X)   \
  X(register_char_lm_task)   \
  X(register_word_lm_task)   \
  X(register_sentence_tasks) \
  X(register_cloze_task)     \
  X(register_seq2seq_task)

#define CELLSCOPE_DECLARE_TASK(f) void f(std::vector<TaskInfo>& out);
CELLSCOPE_TASKS(CELLSCOPE_DECLARE_TASK)
#undef CELLSCOPE_DECLARE_TASK

const std::vector<TaskInfo>& task_registry() {
  static const std::vector<TaskInfo> reg = [] {
    std::vector<TaskInfo> v;
#define CELLSCOPE_REGISTER_TASK(f) f(v);
    CELLSCOPE_TASKS(CELLSCOPE_REGISTER_TASK)
#undef CELLSCOPE_REGISTER_TASK
    return v;
  }();
  return reg;
}
#undef CELLSCOPE_TASKS

const TaskInfo& task_info(const std::string& name) {
  for (auto& t : task_registry())
    if (t.name == name) return t;
  std::string known;
  for (auto& t : task_registry()) known += (known.empty() ? "" : ", ") + t.name;
  throw UserError("unknown task '" + name + "' (known: " + known + ")");
}

std::unique_ptr<Task> make_task(const json& cfg, const std::string& run_dir) {
  return task_info(cfg.at("task").at("name").get<std::string>()).make(cfg, run_dir);
}

}  // namespace cs
