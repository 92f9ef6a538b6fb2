// Sentence-level tasks (see tasks/CLASSIFY_NOTES.md):
//  * classify (CRU paper, Fig. 2): embedding -> bidirectional encoder -> the two
//    directions' final states concatenated -> fully connected layer (1024) ->
//    one sigmoid unit for two classes, softmax for more. Metric: accuracy
//    (+ macro-F1 for more than two classes).
//  * absa (MZU paper): Bi-RNN encoder, mean pooling over the output states,
//    concatenated with the aspect embedding (mean over a multi-word aspect),
//    softmax over positive/negative/neutral/conflict. DS or the hard subset HDS.
// Batches of sentences padded at the end with their lengths; the training order
// is a seeded permutation per epoch (saved with the cursor, so resume is exact).
#pragma once
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "cells/bidirectional.h"
#include "data/text_datasets.h"
#include "data/tokenizer.h"
#include "data/vocab.h"
#include "tasks/task_common.h"

namespace cs {

// Activation of the fully connected layer (model.fc_activation).
enum class FcActivation { Relu, Tanh, None };
constexpr EnumNames<FcActivation, 3> enum_names(FcActivation) {
  return {{{FcActivation::Relu, "relu"}, {FcActivation::Tanh, "tanh"}, {FcActivation::None, "none"}}};
}
// absa's dataset.subset: the full dataset or the hard subset (MZU paper).
enum class AbsaSubset { Ds, Hds };
constexpr EnumNames<AbsaSubset, 2> enum_names(AbsaSubset) {
  return {{{AbsaSubset::Ds, "ds"}, {AbsaSubset::Hds, "hds"}}};
}

// The options of the sentence tasks; the members are their only defaults, except that
// absa's table starts from model.fc = 0 (sentence_option_table(true)). The dataset.* keys the
// loader reads (text_field, label_field, split_field, sst_classes, domain) are its
// TextExampleOptions (data/text_datasets.h).
struct SentenceOptions : TextExampleOptions {
  bool lowercase = true;
  Tokenizer tokenizer = Tokenizer::Icu;  // data/tokenizer.h; old runs: legacy
  std::string locale;                    // dataset.locale: the language of lower-casing ("" = root)
  int64_t max_len = 0;
  int64_t max_vocab = 0;
  int64_t min_freq = 1;
  int64_t folds = 0;
  int64_t fold = 0;
  int64_t split_seed = 1;
  std::optional<std::string> pretrained_embeddings;  // model.*
  bool freeze_embeddings = false;
  FcActivation fc_activation = FcActivation::Relu;
  int64_t eval_batch = 64;  // training.*
  double embed_l2 = 1e-4;
  int64_t fc = 1024;                   // model.fc: classify (CRU paper); absa: 0
  AbsaSubset subset = AbsaSubset::Ds;  // absa only
  bool drop_conflict = false;          // absa only
};
// The field table of classify (false) or absa (true): schema entries and binding of a
// whole resolved config.
const OptionTable<SentenceOptions>& sentence_option_table(bool absa);
// The sentence tasks' tokenizer: dataset.tokenizer (legacy: the sentence rule set) and dataset.lowercase.
TokenizerOptions sentence_tokenizer_options(const SentenceOptions& o);

// Assign every example a split ("train", "valid", "test") in place, following the
// dataset section: k-fold (dataset.folds > 0: fold dataset.fold is the test part),
// else the split given by the source (a missing valid part is carved from train),
// else a seeded split by dataset.valid_fraction / test_fraction. Examples sharing a
// non-empty `group` (ABSA: one sentence) always land in the same split.
void assign_splits(std::vector<TextExample>& ex, const json& dataset);

// Pretrained vectors in GloVe text format ("word v1 ... vE" per line; a word2vec
// header line "N E" is skipped). Fills rows of `weight` [V, E] for words of `vocab`;
// returns how many vocabulary words were found. Errors name the file and line.
int64_t load_pretrained_embeddings(const std::string& path, const Vocab& vocab, torch::Tensor weight);

struct SentenceBatch {
  torch::Tensor tokens;        // [T, B] int64, padded with the pad id
  torch::Tensor lengths;       // [B] int64
  torch::Tensor aspect;        // absa: [A, B] int64 (padded), else undefined
  torch::Tensor aspect_len;    // absa: [B]
  torch::Tensor labels;        // [B] int64
  std::vector<int64_t> index;  // example indices of the split
};

class SentenceModelImpl : public torch::nn::Module {
 public:
  SentenceModelImpl(const json& model, int64_t vocab, int64_t classes, bool absa, int64_t pad_id);
  // Logits [B, 1] (two classes, sigmoid) or [B, C].
  torch::Tensor forward(const SentenceBatch& b, StepContext& ctx);
  torch::nn::Embedding embed{nullptr};
  Bidirectional encoder{nullptr};
  torch::nn::Linear fc{nullptr}, out{nullptr};
  bool absa = false, binary = false;
  double dropout = 0.0;
  FcActivation fc_activation = FcActivation::Relu;
};
TORCH_MODULE(SentenceModel);

class SentenceTask : public ExampleTask {
 public:
  SentenceTask(const json& cfg, const std::string& run_dir, bool absa);
  std::string name() const override { return absa_ ? "absa" : "classify"; }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  StepResult train_step() override;
  EvalResult evaluate(const std::string& split) override;
  std::string primary_metric() const override { return "accuracy"; }
  bool lower_is_better() const override { return false; }
  std::string unit_name() const override { return "sentences"; }
  bool has_split(const std::string& split) const override;
  std::string vocab_text() const override;
  std::vector<std::pair<std::string, torch::Tensor>> export_reference() override;  // tasks/export_reference.cpp
  // Data parallel: every rank walks the same global order and batch; rank r trains on
  // its slice of each batch (shard_of), its loss weighted so that the averaged gradient
  // is the gradient of the global batch's mean loss.
  void set_shard(int rank, int world) override;

  struct Split {
    std::vector<std::vector<int32_t>> tokens, aspect;
    std::vector<int64_t> labels;
    std::vector<uint8_t> hard;
  };
  const Split& split(const std::string& name) const;
  const Vocab& vocab() const { return vocab_; }
  const std::vector<std::string>& labels() const { return labels_; }
  SentenceModel& net() { return model_; }
  SentenceBatch make_batch(const Split& s, const std::vector<int64_t>& idx) const;
  double pretrained_coverage() const { return coverage_; }
  static constexpr int32_t kPad = 1;  // id 0 = <unk>, 1 = <pad>

  // Inspection (tasks/task.h; implemented in classify_inspect.cpp).
  EncodedText encode_text(const std::string& text) const override;
  void probe_sequence(const std::vector<int32_t>& ids, Probe& probe) override;
  bool probe_split_sentences(const std::string& split, int64_t max, Probe& probe) override;
  std::string split_text(const std::string& split, int64_t max_tokens) const override;
  std::string default_analysis_text() const override;
  SequenceScores sequence_scores(const std::string& split) override;
  torch::Tensor class_probabilities(const std::vector<std::vector<int32_t>>& seqs) override;
  std::vector<std::string> class_names() const override { return labels_; }
  std::string cell_name() const override;
  // Token-id sequences (label 0) as one padded batch for the model.
  SentenceBatch batch_of(const std::vector<std::vector<int32_t>>& seqs) const;

 private:
  json cfg_;
  bool absa_;
  Vocab vocab_;
  std::vector<std::string> labels_;
  Split train_, valid_, test_;
  SentenceModel model_{nullptr};
  int64_t batch_, eval_batch_;
  double embed_l2_ = 0;
  double coverage_ = -1;  // fraction of vocabulary words found in the pretrained file (-1: none)
  // data-parallel shard (set_shard)
  int shard_rank_ = 0, shard_world_ = 1;
  // This rank's part of a global batch `idx` and the weight of its mean loss.
  std::vector<int64_t> shard_of(const std::vector<int64_t>& idx, double* weight) const;
};

}  // namespace cs
