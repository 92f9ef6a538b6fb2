#include "data/subword.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <mutex>
#include <regex>
#include <unordered_map>

#include "util/error.h"

namespace cs {

struct SubwordVocab::Impl {
  sentencepiece::SentencePieceProcessor sp;
  std::string proto;
};

SubwordVocab::SubwordVocab(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
SubwordVocab::~SubwordVocab() = default;

namespace {

// Feeds the training lines to SentencePiece without a temporary file.
class LinesIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LinesIterator(const std::vector<std::string>& lines) : lines_(lines) { skip_empty(); }
  bool done() const override { return i_ >= lines_.size(); }
  void Next() override { ++i_; skip_empty(); }
  const std::string& value() const override { return lines_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void skip_empty() {
    while (i_ < lines_.size() && lines_[i_].find_first_not_of(" \t\r\n") == std::string::npos) ++i_;
  }
  const std::vector<std::string>& lines_;
  size_t i_ = 0;
};

std::shared_ptr<SubwordVocab::Impl> load_proto(const std::string& proto, const std::string& what) {
  auto impl = std::make_shared<SubwordVocab::Impl>();
  const auto st = impl->sp.LoadFromSerializedProto(proto);
  if (!st.ok()) throw UserError(what + ": not a SentencePiece model (" + st.ToString() + ")");
  if (impl->sp.pad_id() != SubwordVocab::pad_id || impl->sp.unk_id() != SubwordVocab::unk_id ||
      impl->sp.bos_id() != SubwordVocab::bos_id || impl->sp.eos_id() != SubwordVocab::eos_id)
    throw UserError(what + ": SentencePiece model with special ids pad=" + std::to_string(impl->sp.pad_id()) +
                    " unk=" + std::to_string(impl->sp.unk_id()) + " bos=" + std::to_string(impl->sp.bos_id()) +
                    " eos=" + std::to_string(impl->sp.eos_id()) +
                    "; Cellscope's subword vocabularies use pad=0 unk=1 bos=2 eos=3");
  impl->proto = proto;
  return impl;
}

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

SubwordVocab SubwordVocab::train(const std::vector<std::string>& lines, const SubwordOptions& o) {
  if (o.model_type != "unigram" && o.model_type != "bpe")
    throw UserError("subword model_type '" + o.model_type + "': expected \"unigram\" or \"bpe\"");
  if (o.vocab_size < 8)
    throw UserError("subword vocab_size " + std::to_string(o.vocab_size) + ": must be at least 8");
  if (!(o.character_coverage > 0.0 && o.character_coverage <= 1.0))
    throw UserError("subword character_coverage " + fmt_double(o.character_coverage) + ": must be in (0, 1]");
  LinesIterator it(lines);
  if (it.done()) throw UserError("subword vocabulary: no training text (every line is empty)");

  // Deterministic: every sentence is used (no sampling), in the given order, on one thread
  // (the EM's sums are then added in one fixed order), with a fixed seed.
  const std::unordered_map<std::string, std::string> kw = {
      {"model_type", o.model_type},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", fmt_double(o.character_coverage)},
      {"pad_id", "0"}, {"unk_id", "1"}, {"bos_id", "2"}, {"eos_id", "3"},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"num_threads", "1"},
      {"hard_vocab_limit", "true"},
      {"minloglevel", "2"},
  };
  static std::mutex train_mutex;  // SentencePiece's seed and log level are process-wide
  std::string proto;
  sentencepiece::util::Status st;
  {
    std::lock_guard<std::mutex> lock(train_mutex);
    sentencepiece::SetRandomGeneratorSeed(1234);
    st = sentencepiece::SentencePieceTrainer::Train(kw, &it, &proto);
  }
  if (!st.ok()) {
    std::string msg = st.ToString();
    std::smatch m;
    static const std::regex too_large("Vocabulary size is too large. Please set it to a value <= ([0-9]+)");
    if (std::regex_search(msg, m, too_large))
      throw UserError("subword vocab_size " + std::to_string(o.vocab_size) +
                      " is too large for the training text: at most " + m[1].str() +
                      " pieces can be learned from it; lower the vocabulary size");
    throw UserError("training the subword vocabulary (SentencePiece " + o.model_type + ", vocab_size " +
                    std::to_string(o.vocab_size) + ") failed: " + msg);
  }
  return SubwordVocab(load_proto(proto, "trained subword model"));
}

SubwordVocab SubwordVocab::from_serialized(const std::string& model_proto) {
  return SubwordVocab(load_proto(model_proto, "subword model"));
}

std::string SubwordVocab::serialized() const { return impl_->proto; }

std::vector<int32_t> SubwordVocab::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto st = impl_->sp.Encode(text, &ids);
  if (!st.ok()) throw UserError("subword encode: " + st.ToString());
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string SubwordVocab::decode(const std::vector<int32_t>& ids) const {
  const int n = impl_->sp.GetPieceSize();
  std::vector<int> keep;
  keep.reserve(ids.size());
  for (int32_t id : ids) {
    if (id == pad_id || id == bos_id || id == eos_id) continue;
    keep.push_back(id >= 0 && id < n ? id : unk_id);
  }
  std::string out;
  const auto st = impl_->sp.Decode(keep, &out);
  if (!st.ok()) throw UserError("subword decode: " + st.ToString());
  return out;
}

std::vector<std::string> SubwordVocab::pieces(const std::vector<int32_t>& ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.push_back(id_to_piece(id));
  return out;
}

std::string SubwordVocab::id_to_piece(int32_t id) const {
  if (id < 0 || id >= impl_->sp.GetPieceSize()) return "";
  return impl_->sp.IdToPiece(id);
}

int64_t SubwordVocab::size() const { return impl_->sp.GetPieceSize(); }

}  // namespace cs
