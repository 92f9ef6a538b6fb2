// Cloze-style reading comprehension (CRU paper, section 4.2 and Table 3): the Children's
// Book Test format (data/cbt_format.h), the Attention-over-Attention Reader (Cui et al.
// 2017, "AoA") and the CRU paper's Modified AoA Reader ("M-AoA": the document word
// embeddings concatenated with freq(x) and CoQ(x), eqs. 15-16), with any registered cell as
// the bidirectional recurrent layer (eqs. 17-18). Choices: tasks/CLOZE_NOTES.md.
#pragma once
#include <torch/nn/modules/embedding.h>

#include "cells/bidirectional.h"
#include "config/option_spec.h"
#include "data/cbt_format.h"
#include "data/vocab.h"
#include "tasks/task_common.h"

namespace cs {

// model.reader: the AoA Reader (Cui et al. 2017) or the CRU paper's Modified AoA Reader.
enum class ClozeReaderKind { Aoa, MAoa };
constexpr EnumNames<ClozeReaderKind, 2> enum_names(ClozeReaderKind) {
  return {{{ClozeReaderKind::Aoa, "aoa"}, {ClozeReaderKind::MAoa, "m_aoa"}}};
}
// dataset.blank: how the query's blank XXXXX is read.
enum class ClozeBlank { Token, Unk };
constexpr EnumNames<ClozeBlank, 2> enum_names(ClozeBlank) {
  return {{{ClozeBlank::Token, "token"}, {ClozeBlank::Unk, "unk"}}};
}
// model.recurrent_init: the reader's recurrent matrices.
enum class RecurrentInit { Orthogonal, Cell };
constexpr EnumNames<RecurrentInit, 2> enum_names(RecurrentInit) {
  return {{{RecurrentInit::Orthogonal, "orthogonal"}, {RecurrentInit::Cell, "cell"}}};
}

struct ClozeOptions {
  ClozeReaderKind reader = ClozeReaderKind::MAoa;  // model.reader
  bool lowercase = true;                           // dataset.lowercase
  Tokenizer tokenizer = Tokenizer::Icu;            // dataset.tokenizer: how lowercase folds (legacy: ASCII only)
  std::string locale;                              // dataset.locale: in which language's rules ("" = root)
  // dataset.blank: Token = XXXXX has its own vocabulary id (2) and embedding (CBT, the AoA
  // Reader) | Unk = XXXXX is <unk> (Cellscope before the fix; kept for the comparison).
  ClozeBlank blank = ClozeBlank::Token;
  int64_t min_freq = 1;     // dataset.min_freq
  int64_t max_vocab = 0;    // dataset.max_vocab
  int64_t eval_batch = 32;  // training.eval_batch
  double embed_l2 = 1e-4;   // training.embed_l2 (Cui et al. 2017: l2 0.0001 on the embedding)
  // model.recurrent_init: Orthogonal (Cui et al. 2017, section 4.2: the GRUs' internal weights
  // are random orthogonal matrices; the reader presets and the Table 3 sweep set it) | Cell
  // (the cell's own uniform initialisation: the default, what every run made before the option
  // did, and the only choice for cells without a w_hh matrix).
  RecurrentInit recurrent_init = RecurrentInit::Cell;
};
const OptionTable<ClozeOptions>& cloze_option_table();

// The M-AoA features of every document word (CRU paper, section 4.2.2), compared as strings
// (after the task's lower-casing), so unknown words are told apart:
//   eq. 15: freq(d) = word_count(d) / length(D), d in D
//   CoQ(d) = the number of times d appears in the query Q
void cloze_document_features(const std::vector<std::string>& doc, const std::vector<std::string>& query,
                             std::vector<float>& freq, std::vector<float>& coq);
// The index of the candidate occurring most often in the document (ties: the first in
// candidate order): the frequency baseline.
int64_t cloze_frequency_baseline(const std::vector<std::string>& doc, const std::vector<std::string>& candidates);

// One question as the reader sees it.
struct ClozeItem {
  std::vector<int32_t> doc, query;             // vocabulary ids
  std::vector<float> freq, coq;                // eq. 15 and CoQ per document word
  std::vector<std::vector<int64_t>> cand_pos;  // per candidate: the document positions holding it
  int64_t answer = 0;                          // index of the answer among the candidates
  int64_t freq_baseline = 0;                   // cloze_frequency_baseline
};
// Encode an example (lower-cased when `lowercase`) with `vocab` (unknown words -> <unk>).
// `rules`: the run's dataset.tokenizer, how lowercase folds (cloze_lower).
ClozeItem encode_cloze(const ClozeExample& e, const Vocab& vocab, bool lowercase, Tokenizer rules = Tokenizer::Icu,
                       const std::string& locale = "");

struct ClozeBatch {
  torch::Tensor doc, doc_len;      // [Td, B] int64 padded with the pad id; [B]
  torch::Tensor query, query_len;  // [Tq, B]; [B]
  torch::Tensor features;          // [Td, B, 2]: freq, CoQ (0 at padding)
  torch::Tensor cand_mask;         // [B, C, Td] float: 1 where document word i is candidate c
  torch::Tensor cand_valid;        // [B, C] bool: candidate c exists (questions may have fewer)
  torch::Tensor answer;            // [B] int64
  std::vector<int64_t> index;      // the questions' indices in their split
};
ClozeBatch make_cloze_batch(const std::vector<const ClozeItem*>& items, int32_t pad, const torch::Device& device);

// The AoA Reader's attention (Cui et al. 2017, eqs. 5-11), batched with masks:
struct AoAOutput {
  torch::Tensor M;       // [B, Td, Tq] pair-wise matching M(i, j) = h_doc(i)^T h_query(j)
  torch::Tensor alpha;   // [B, Td, Tq] column-wise softmax: alpha(t) = softmax(M(1..|D|, t)) (0 at padded i)
  torch::Tensor beta_t;  // [B, Td, Tq] row-wise softmax: beta(t) = softmax(M(t, 1..|Q|)) (0 at padded j)
  torch::Tensor beta;    // [B, Tq] beta = 1/|D| sum_t beta(t) over the real document positions
  torch::Tensor s;       // [B, Td] attention over attention s = alpha^T beta (0 at padded i)
};
// h_doc [B, Td, H], h_query [B, Tq, H]; lengths [B] int64 (>= 1).
AoAOutput attention_over_attention(const torch::Tensor& h_doc, const torch::Tensor& h_query,
                                   const torch::Tensor& doc_len, const torch::Tensor& query_len);
// Sum attention: P(c | D, Q) = sum of s(i) over the positions i where the document word is c.
// s [B, Td], cand_mask [B, C, Td] -> [B, C].
torch::Tensor sum_attention(const torch::Tensor& s, const torch::Tensor& cand_mask);

// Orthogonal initialisation of a cell's recurrent matrices: every parameter named `w_hh` (at
// any depth of the cell's modules: the MC-RNN's base LSTM too), laid out [G*H, H] as G gate
// blocks, gets each H x H block set to a random orthogonal matrix (W^T W = I; Saxe et al.
// 2013, as the AoA Reader does). Returns how many blocks were set. A cell without such a
// matrix (the MZUs, a script cell) is refused with a UserError naming `cell_name`.
int64_t orthogonal_recurrent_init(torch::nn::Module& cell, const std::string& cell_name);

class ClozeReaderImpl : public torch::nn::Module {
 public:
  // `modified`: the M-AoA Reader (features on the document side).
  ClozeReaderImpl(const json& model, int64_t vocab, int64_t pad, bool modified);
  struct Output {
    AoAOutput aoa;
    torch::Tensor prob;  // [B, C] P(candidate | D, Q); 0 for a candidate absent from the document
  };
  Output forward(const ClozeBatch& b, StepContext& ctx);
  double flops_per_step() const { return doc_encoder->flops_per_step(); }
  torch::nn::Embedding embed{nullptr};
  Bidirectional doc_encoder{nullptr}, query_encoder{nullptr};
  bool modified = true;
  double dropout = 0.0;
};
TORCH_MODULE(ClozeReader);

// The attention-over-attention weights of one question (analysis `aoa`).
struct ClozeAttention {
  std::vector<std::string> document, query, candidates;  // as in the file
  int64_t answer = 0, predicted = 0;                     // candidate indices
  std::vector<double> s;                                 // [|D|] attention over attention s = alpha^T beta
  std::vector<double> alpha_mean;  // [|D|] column-wise attention alpha(t) averaged over the query words t
  std::vector<double> beta;        // [|Q|] averaged row-wise attention
  std::vector<double> prob;        // per candidate: sum attention P(c | D, Q)
  std::string source;              // "file:line" of the question
};

// A question's probabilities (the CLI's `cloze scores`, h1's re-ranker reads them).
struct ClozeScore {
  const ClozeExample* example = nullptr;
  std::vector<double> prob;  // per candidate, in candidate order
  int64_t answer = 0, predicted = 0;
};

class ClozeTask : public ExampleTask {
 public:
  ClozeTask(const json& cfg, const std::string& run_dir);
  std::string name() const override { return "cloze"; }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  StepResult train_step() override;
  EvalResult evaluate(const std::string& split) override;
  std::string primary_metric() const override { return "accuracy"; }
  bool lower_is_better() const override { return false; }
  std::string unit_name() const override { return "questions"; }
  bool has_split(const std::string& split) const override;
  std::vector<std::pair<std::string, torch::Tensor>> export_reference() override;  // tasks/export_reference.cpp
  std::string vocab_text() const override { return vocab_.serialize(); }
  std::string cell_name() const override;
  // Inspection: questions by document length (accuracy); the AoA weights of one question
  // (not a Task virtual: the analysis `aoa` reads it from a ClozeTask, kind_aoa.cpp).
  SequenceScores sequence_scores(const std::string& split) override;
  ClozeAttention cloze_attention(const std::string& split, int64_t index);
  std::string default_analysis_text() const override { return ""; }

  // Every question of `split` scored once (eval mode, no grad).
  std::vector<ClozeScore> score_split(const std::string& split);
  const std::vector<ClozeExample>& examples(const std::string& split) const;
  const std::vector<ClozeItem>& items(const std::string& split) const;
  const Vocab& vocab() const { return vocab_; }
  // Whether the blank XXXXX has its own embedding: true for runs whose saved vocabulary holds
  // it (built since the blank got id 2); false for older runs, whose blank stays <unk>.
  bool blank_has_own_token() const { return vocab_.contains(kClozeBlank); }
  ClozeReader& net() { return model_; }
  static constexpr int32_t kPad = 1;  // id 0 = <unk>, 1 = <pad>

 private:
  json cfg_;
  ClozeOptions o_;
  Vocab vocab_;
  ClozeSplits data_;
  std::vector<ClozeItem> train_, valid_, test_;
  ClozeReader model_{nullptr};
  int64_t batch_ = 32;
};

// Adds task "cloze" (cloze_options.cpp); called by task_registry() (task.cpp).
void register_cloze_task(std::vector<TaskInfo>& out);

}  // namespace cs
