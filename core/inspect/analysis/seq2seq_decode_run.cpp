// decode_run (tasks/seq2seq_decode.h): load the run's checkpoint and decode a split with beam
// search (beam 1 = greedy), scoring the hypotheses and the lead baseline on the same pairs.
#include "tasks/seq2seq_decode.h"

#include "analysis/checkpoints.h"
#include "tasks/seq2seq.h"
#include "util/error.h"

namespace cs {

DecodeReport decode_run(const std::string& run_dir, const DecodeOptions& o,
                        const std::function<bool(int64_t, int64_t)>& progress) {
  if (o.split != "train" && o.split != "valid" && o.split != "test")
    throw UserError("decode: split must be train, valid or test (got '" + o.split + "')");
  if (o.beam < 1) throw UserError("decode: beam must be at least 1 (got " + std::to_string(o.beam) + ")");
  if (o.length_penalty < 0) throw UserError("decode: the length penalty alpha must be >= 0");
  if (o.max_examples < 0) throw UserError("decode: max_examples must be >= 0 (0 = all)");
  if (o.max_length < 0) throw UserError("decode: max_length must be >= 0 (0 = the task's default)");
  auto task = load_checkpoint_task(run_dir, o.checkpoint);
  auto* s2s = dynamic_cast<Seq2SeqTask*>(task.get());
  if (!s2s) throw UserError("decode needs a seq2seq run; the task of run '" + run_dir + "' is " + task->name());
  const auto& ex = s2s->examples(o.split);
  if (ex.empty()) throw UserError("decode: the " + o.split + " split of run '" + run_dir + "' is empty");
  const int64_t N = o.max_examples > 0 ? std::min<int64_t>(o.max_examples, static_cast<int64_t>(ex.size()))
                                       : static_cast<int64_t>(ex.size());
  BeamSearchOptions bo;
  bo.beam = o.beam;
  bo.alpha = o.length_penalty;
  bo.max_length = o.max_length > 0 ? o.max_length : s2s->default_max_decode();
  DecodeReport r;
  r.step = checkpoint_step(run_dir, o.checkpoint);
  std::vector<std::string> hyps, refs;
  for (int64_t i = 0; i < N; ++i) {
    const auto& e = ex[static_cast<size_t>(i)];
    DecodeSample d;
    d.source = e.source;
    d.reference = e.target;
    d.hypothesis = s2s->beam_text(e.src, bo, &d.score);  // as a beam test evaluation decodes it
    hyps.push_back(d.hypothesis);
    refs.push_back(d.reference);
    r.samples.push_back(std::move(d));
    if (progress && !progress(i + 1, N))
      throw Cancelled("decode cancelled after " + std::to_string(i + 1) + " of " + std::to_string(N) + " examples");
  }
  r.metrics = text_metrics(hyps, refs);
  for (auto& [k, v] : s2s->lead_metrics(o.split, N)) r.metrics[k] = v;
  r.metrics["examples"] = static_cast<double>(N);
  r.metrics["lead_words"] = static_cast<double>(s2s->lead_words());
  return r;
}

}  // namespace cs
