#include "data/seq2seq_data.h"

#include <cctype>

#include "util/error.h"

namespace cs {

std::string lead_baseline(const std::string& source, int64_t n_words) {
  std::string out;
  int64_t k = 0;
  size_t i = 0;
  while (k < n_words && i < source.size()) {
    while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i]))) ++i;
    if (i >= source.size()) break;
    size_t j = i;
    while (j < source.size() && !std::isspace(static_cast<unsigned char>(source[j]))) ++j;
    if (!out.empty()) out += ' ';
    out.append(source, i, j - i);
    ++k;
    i = j;
  }
  return out;
}

// First commit: the interface for h4; the loaders follow in the next commits.
Seq2SeqSplits load_seq2seq_dataset(const json& dataset_section) {
  throw UserError("seq2seq datasets: loaders not implemented yet");
}
std::string clean_subject(const std::string& subject) { return subject; }
Seq2SeqSplits load_headlines_jsonl(const std::string& jsonl_path, const HeadlineOptions& o) {
  throw UserError("seq2seq datasets: loaders not implemented yet");
}
Seq2SeqSplits load_parallel_dir(const std::string& dir, const std::string& source_lang,
                                const std::string& target_lang) {
  throw UserError("seq2seq datasets: loaders not implemented yet");
}
Seq2SeqSplits load_gigaword_dir(const std::string& dir) {
  throw UserError("seq2seq datasets: loaders not implemented yet");
}

}  // namespace cs
