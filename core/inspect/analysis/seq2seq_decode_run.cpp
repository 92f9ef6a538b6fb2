// decode_run (tasks/seq2seq_decode.h): load the run's checkpoint and decode a split.
#include "tasks/seq2seq_decode.h"

#include "analysis/checkpoints.h"
#include "tasks/task.h"
#include "util/error.h"

namespace cs {

DecodeReport decode_run(const std::string& run_dir, const DecodeOptions& o,
                        const std::function<bool(int64_t, int64_t)>& progress) {
  auto task = load_checkpoint_task(run_dir, o.checkpoint);
  if (task->name() != "seq2seq")
    throw UserError("decode needs a seq2seq run; the task of run '" + run_dir + "' is " + task->name());
  throw UserError("seq2seq decoding is not implemented yet");  // replaced by the task's decoder (h4, next commits)
}

}  // namespace cs
