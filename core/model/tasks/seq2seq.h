// Task `seq2seq` (MC-RNN paper §4.1-4.2: translation and summarization; tasks/SEQ2SEQ_NOTES.md):
// pairs from data/seq2seq_data.h, SentencePiece vocabularies trained on the training split
// (saved with the run), the encoder-decoder of tasks/seq2seq_model.h trained with teacher
// forcing on padded batches, evaluated by loss/perplexity per target token and by BLEU and
// ROUGE of greedy decodes (beam search for the test split with task.test_decode = beam); beam
// search (tasks/beam_search.h) in decode().
#pragma once
#include <map>
#include <memory>
#include <optional>

#include "data/seq2seq_data.h"
#include "data/subword.h"
#include "tasks/beam_search.h"
#include "tasks/seq2seq_model.h"
#include "tasks/task_common.h"

namespace cs {

// dataset.subword: the SentencePiece model type (data/subword's SubwordOptions::model_type).
enum class SubwordModel { Bpe, Unigram };
constexpr EnumNames<SubwordModel, 2> enum_names(SubwordModel) {
  return {{{SubwordModel::Bpe, "bpe"}, {SubwordModel::Unigram, "unigram"}}};
}

// model.architecture (tasks/seq2seq_model.h): Luong et al. (2015) attention after the decoder, or
// RNNSearch (Bahdanau et al. 2015). luong is the default so that runs written before the option load as they were.
enum class Seq2SeqArchitecture { Luong, Rnnsearch };
constexpr EnumNames<Seq2SeqArchitecture, 2> enum_names(Seq2SeqArchitecture) {
  return {{{Seq2SeqArchitecture::Luong, "luong"}, {Seq2SeqArchitecture::Rnnsearch, "rnnsearch"}}};
}

// model.bridge (tasks/SEQ2SEQ_NOTES.md "Initial decoder state"): where rnnsearch's s_0 = tanh(W_s <-h_1) goes in
// the decoder's state. recurrence: the output before the first step as the cell's recurrence reads it (an MC-RNN's
// channel history h_t^k for t <= 0 too); output: the state's first tensor only, as runs written before the option.
enum class Seq2SeqBridge { Recurrence, Output };
constexpr EnumNames<Seq2SeqBridge, 2> enum_names(Seq2SeqBridge) {
  return {{{Seq2SeqBridge::Recurrence, "recurrence"}, {Seq2SeqBridge::Output, "output"}}};
}

// task.test_decode: how evaluations of the test split decode for BLEU/ROUGE: greedy, or beam
// search with task.beam and task.length_penalty (validation stays greedy).
enum class TestDecode { Greedy, Beam };
constexpr EnumNames<TestDecode, 2> enum_names(TestDecode) {
  return {{{TestDecode::Greedy, "greedy"}, {TestDecode::Beam, "beam"}}};
}

struct Seq2SeqOptions {
  SubwordModel subword = SubwordModel::Bpe;  // dataset.*
  int64_t source_vocab_size = 8000;
  int64_t target_vocab_size = 8000;
  bool shared_vocab = false;
  int64_t max_source_len = 100;
  int64_t max_target_len = 40;
  // Read by h3's loaders (data/seq2seq_data.cpp); declared here so that configs validate. Unset =
  // the format's own default.
  std::optional<std::string> source_lang, target_lang;                       // parallel
  std::optional<int64_t> source_words, min_subject_words, min_source_words;  // headlines
  std::optional<bool> lowercase;                                             // every format
  Tokenizer tokenizer = Tokenizer::Icu;  // how dataset.lowercase lower-cases (data/tokenizer.h); old runs: legacy
  std::string locale;                    // dataset.locale: in which language's rules ("" = root)
  int64_t eval_batch = 64;               // training.*
  int64_t eval_decode = 200;
  int64_t beam = 10;                            // task.*
  TestDecode test_decode = TestDecode::Greedy;  // how test-split evaluations decode
  double length_penalty = 1.0;
  int64_t max_decode = 0;
  int64_t lead_words = 0;
  bool copy = false;  // model.copy (read by Seq2SeqModel from the model section)
  Seq2SeqArchitecture architecture =
      Seq2SeqArchitecture::Luong;                    // model.architecture (likewise; luong for configs without it)
  Seq2SeqBridge bridge = Seq2SeqBridge::Recurrence;  // model.bridge (likewise; output for runs written before it)
};
const OptionTable<Seq2SeqOptions>& seq2seq_option_table();

class Seq2SeqTask : public ExampleTask {
 public:
  Seq2SeqTask(const json& cfg, const std::string& run_dir);
  // The same on pairs given directly instead of cfg["dataset"] (tests, other front ends).
  Seq2SeqTask(const json& cfg, Seq2SeqSplits pairs, const std::string& run_dir);
  std::string name() const override { return "seq2seq"; }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  StepResult train_step() override;
  EvalResult evaluate(const std::string& split) override;
  std::string primary_metric() const override { return "ppl"; }
  bool lower_is_better() const override { return true; }
  std::string unit_name() const override { return "tokens"; }
  bool has_split(const std::string& split) const override;
  std::vector<std::pair<std::string, torch::Tensor>> export_reference() override;  // tasks/export_reference.cpp
  // The training order (ExampleTask) and whether the lead baseline was logged per split.
  void save_state(torch::serialize::OutputArchive& ar) const override;
  void load_state(torch::serialize::InputArchive& ar) override;
  std::string vocab_text() const override;
  std::string cell_name() const override;

  // Inspection: the source side (encoder) for the analyses that read one sequence.
  EncodedText encode_text(const std::string& text) const override;
  void probe_sequence(const std::vector<int32_t>& ids, Probe& probe) override;
  std::string split_text(const std::string& split, int64_t max_tokens) const override;
  std::string default_analysis_text() const override;
  // Every pair of the split decoded as evaluate(split) decodes it (decode_label), keyed by the source's length in
  // words (whitespace-separated, the raw text), with its hypothesis and reference: BLEU by source length (MC-RNN
  // paper Fig. 4; analysis kind "length").
  SequenceScores sequence_scores(const std::string& split) override;
  // How many times the split's pairs were decoded for their scores (evaluate, sequence_scores) by this task: a
  // run's end decodes the test split once (its evaluation hands the decodes to test_examples.json).
  int64_t split_decodes(const std::string& split) const {
    const auto it = decodes_.find(split);
    return it == decodes_.end() ? 0 : it->second;
  }
  // The decoder run with teacher forcing on `target` (empty: the greedy decode of `source`),
  // probed; returns the target pieces it read (the decoder's input tokens after <s>).
  std::vector<std::string> probe_decoder(const std::string& source, const std::string& target, Probe& probe);

  struct Example {
    std::string source, target;     // the raw texts
    std::vector<int32_t> src, tgt;  // subword ids (cut to the max lengths; no <s>/</s>)
  };
  const std::vector<Example>& examples(const std::string& split) const;
  const SubwordVocab& source_vocab() const { return *src_vocab_; }
  const SubwordVocab& target_vocab() const { return *tgt_vocab_; }
  Seq2SeqModel& net() { return model_; }
  const Seq2SeqOptions& options() const { return o_; }
  int64_t default_max_decode() const;

  // Batch of examples: src [S, B], src_len [B], y_in [T, B] (<s> y), y_out [T, B] (y </s>),
  // padded with pad_id, and the target mask [T, B] float.
  struct Batch {
    torch::Tensor src, src_len, y_in, y_out, y_mask;
  };
  Batch make_batch(const std::vector<const Example*>& ex) const;
  // Summed NLL (nats) of the batch's real target tokens and their count; `loss` keeps the graph.
  torch::Tensor batch_nll(const Batch& b, StepContext& ctx);

  // Greedy decode of source id sequences as one batch (ids without </s>, cut at max_len).
  std::vector<std::vector<int32_t>> greedy(const std::vector<std::vector<int32_t>>& sources, int64_t max_len);
  // Beam search of one source (beam 1 = greedy).
  std::vector<BeamHypothesis> beam(const std::vector<int32_t>& source, const BeamSearchOptions& bo);
  // The text of the best hypothesis of beam(source, bo) (its </s> dropped; "" when none), and its
  // normalised score in `score`: what `decode` and a beam test evaluation score.
  std::string beam_text(const std::vector<int32_t>& source, const BeamSearchOptions& bo, double* score = nullptr);
  // How evaluate(split) decodes for BLEU/ROUGE: "greedy", or "beam K, lp A" for the test split
  // with task.test_decode = beam (recorded as the evaluation's "decode" label).
  std::string decode_label(const std::string& split) const;
  // Whether the split's evaluations decode by beam search (the test split with task.test_decode = beam).
  bool beam_decodes(const std::string& split) const { return split == "test" && o_.test_decode == TestDecode::Beam; }
  // The decodes (texts) of the split's first D examples, as decode_label(split) says: greedy in batches of similar
  // source lengths, or beam_text per pair.
  std::vector<std::string> decode_texts(const std::string& split, int64_t D);
  // The lead baseline's BLEU / ROUGE on a split ("lead_bleu", "lead_rouge1", ...), over the first
  // `max_examples` examples (0 = all).
  std::map<std::string, double> lead_metrics(const std::string& split, int64_t max_examples) const;
  int64_t lead_words() const { return lead_words_; }

 private:
  json cfg_;
  Seq2SeqOptions o_;
  std::unique_ptr<SubwordVocab> src_vocab_, tgt_vocab_;
  std::vector<Example> train_, valid_, test_;
  Seq2SeqModel model_{nullptr};
  int64_t batch_ = 32;
  int64_t lead_words_ = 8;
  bool lead_logged_valid_ = false, lead_logged_test_ = false;
  std::map<std::string, int64_t> decodes_;  // split_decodes

  // The split's pairs scored with their hypotheses `hyps` (one per pair, in the split's order): what
  // sequence_scores gives, and a full evaluation hands over (EvalResult::sequences).
  SequenceScores scored_pairs(const std::string& split, const std::vector<std::string>& hyps) const;
};

// Token-id sequences -> texts with the metrics of the pairs: "bleu", "rouge1", "rouge2", "rougeL"
// (data/text_metrics.h), with `prefix` before each name.
std::map<std::string, double> text_metrics(const std::vector<std::string>& hyps, const std::vector<std::string>& refs,
                                           const std::string& prefix = "");

void register_seq2seq_task(std::vector<TaskInfo>& out);

}  // namespace cs
