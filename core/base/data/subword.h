// Subword vocabularies for the seq2seq task: SentencePiece (Debian's libsentencepiece-dev),
// trained by Cellscope on the training split (never a hand-written BPE). See
// core/base/data/SEQ2SEQ_DATA_NOTES.md for the training settings and why they are deterministic.
//
// Ids are fixed: 0 <pad>, 1 <unk>, 2 <s>, 3 </s>; the learned pieces follow from 4.
// The model proto (serialized()) is what a run saves, so a run decodes with exactly the
// vocabulary it was trained with (from_serialized()).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cs {

struct SubwordOptions {
  std::string model_type = "unigram";  // "unigram" | "bpe"
  int64_t vocab_size = 8000;
  double character_coverage = 1.0;
  // The option that set vocab_size, named in errors (the seq2seq task: dataset.source_vocab_size
  // or dataset.target_vocab_size).
  std::string option = "subword vocab_size";
};

class SubwordVocab {  // ids: 0 <pad>, 1 <unk>, 2 <s>, 3 </s>
 public:
  // Trains in memory on `lines` (one sentence each). Deterministic: the same lines and
  // options give the same model bytes. Throws UserError on bad options, on no text, and
  // when vocab_size is larger than the text supports (the message says the largest size).
  static SubwordVocab train(const std::vector<std::string>& lines, const SubwordOptions& o);
  // The bytes saved with a run. Throws UserError when they are not a SentencePiece model
  // or the special ids differ from the fixed ones.
  static SubwordVocab from_serialized(const std::string& model_proto);
  std::string serialized() const;
  // Pieces' ids, without <s> / </s> (the task adds them).
  std::vector<int32_t> encode(const std::string& text) const;
  // Ids -> text; <pad>, <s>, </s> are dropped, <unk> shows as " ⁇ " (SentencePiece's way).
  std::string decode(const std::vector<int32_t>& ids) const;
  std::vector<std::string> pieces(const std::vector<int32_t>& ids) const;
  int64_t size() const;
  static constexpr int32_t pad_id = 0, unk_id = 1, bos_id = 2, eos_id = 3;

  // Movable and copyable (the processor is immutable once loaded and shared).
  SubwordVocab(const SubwordVocab&) = default;
  SubwordVocab& operator=(const SubwordVocab&) = default;
  SubwordVocab(SubwordVocab&&) noexcept = default;
  SubwordVocab& operator=(SubwordVocab&&) noexcept = default;
  ~SubwordVocab();

  // Additional members (beyond the h3<->h4 contract).
  // The piece of one id ("" for an id out of range).
  std::string id_to_piece(int32_t id) const;

  struct Impl;  // opaque (the SentencePiece processor and the model bytes)

 private:
  explicit SubwordVocab(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace cs
