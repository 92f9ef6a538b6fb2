#include "data/word_corpus.h"
#include "data/fetch.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "data/tokenizer.h"
#include "data/utf8.h"
#include "util/error.h"
#include "util/text.h"
#include "util/paths.h"

namespace cs {

static const char* kEos = "<eos>";

std::vector<std::string> ptb_tokens(const std::string& text) {
  std::vector<std::string> out;
  for (auto& line : split_lines(text)) {
    for (auto& w : split_ascii_words(line)) out.push_back(std::move(w));
    out.push_back(kEos);  // as in the PTB LM setup (Mikolov; AWD-LSTM): every line end is <eos>
  }
  return out;
}

std::vector<std::string> word_text_tokens(const std::string& text, const TokenizerOptions& to, WordEos eos, bool seed) {
  std::vector<std::string> out;
  bool in_par = false;
  const auto lines = split_lines(text);
  const bool ends_with_break = !text.empty() && text.back() == '\n';
  for (size_t i = 0; i < lines.size(); ++i) {
    auto toks = tokenize(lines[i], to);
    if (toks.empty()) {
      if (eos == WordEos::Paragraph && in_par) out.push_back(kEos);
      in_par = false;
      continue;
    }
    out.insert(out.end(), toks.begin(), toks.end());
    in_par = true;
    // A seed's last line is still being written unless the text ends with a line break.
    if (eos == WordEos::Line && (!seed || i + 1 < lines.size() || ends_with_break)) out.push_back(kEos);
  }
  if (eos == WordEos::Paragraph && in_par && !seed) out.push_back(kEos);
  return out;
}

TokenizerOptions word_tokenizer_options(Tokenizer rules, bool lowercase, const std::string& locale) {
  TokenizerOptions to;
  to.rules = rules;
  to.locale = locale;
  to.legacy_rules = LegacyRules::WordLM;
  to.lowercase = lowercase;
  return to;
}

static std::vector<std::string> text_tokens(const std::string& text, const WordCorpusOptions& wo) {
  return word_text_tokens(text, word_tokenizer_options(wo.tokenizer, wo.lowercase, wo.locale), wo.eos, false);
}

static std::string clip(std::string text, int64_t max_chars) {
  if (max_chars > 0 && static_cast<int64_t>(text.size()) > max_chars) {
    size_t n = static_cast<size_t>(max_chars);
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // do not cut a UTF-8 sequence
    text.resize(n);
  }
  return text;
}

WordCorpus load_word_corpus(const DatasetOptions& dso, const WordCorpusOptions& wo, const Vocab* fixed) {
  std::string path = dso.path.value_or("");
  const std::string& name = dso.name;
  if (path.empty()) {
    const std::string base = join_path(data_cache_dir(), name);
    path = file_exists(base + ".txt") ? base + ".txt" : dir_exists(base) ? base : base + ".txt";
    if (!file_exists(path) && !dir_exists(path))
      throw UserError("dataset.name: dataset '" + name + "' not found in " + data_cache_dir() + " (" + fetch_hint() +
                      "; or set dataset.path)");
  }
  // The PTB files' directory: the path, or the directory of a ptb.* file.
  std::string dir = path;
  if (!dir_exists(path) && basename_of(path).rfind("ptb.", 0) == 0) {
    const auto slash = path.find_last_of('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  const DatasetFormat format = detect_dataset_format(path, "word_lm", check_format_for_task(dso.format, "word_lm"));
  const int64_t max_chars = dso.max_chars;
  std::vector<std::string> tr, va, te;
  WordCorpus wc;
  if (format == DatasetFormat::PtbWord) {
    if (!dir_exists(dir))
      throw UserError("dataset.path: '" + path + "' is not a directory with ptb.{train,valid,test}.txt");
    for (auto* split : {"train", "valid", "test"}) {
      const std::string f = join_path(dir, std::string("ptb.") + split + ".txt");
      if (!file_exists(f))
        throw UserError("dataset.path: '" + dir + "' has no " + basename_of(f) + " (PTB word format)");
    }
    // Text must be UTF-8 (checked before anything is trained, so that the vocabulary a run
    // writes is UTF-8 and loads again: datasets/README.md, "Encodings").
    auto read_ptb = [&](const char* split) {
      const std::string f = join_path(dir, std::string("ptb.") + split + ".txt");
      const std::string text = read_text_file(f);
      require_utf8_text(text, f);
      return ptb_tokens(clip(text, max_chars));
    };
    tr = read_ptb("train");
    va = read_ptb("valid");
    te = read_ptb("test");
    wc.source = dir;
  } else {
    if (dir_exists(path))
      throw UserError("dataset.path: '" + path + "' is a directory without ptb.train.txt; give a text file");
    const std::string text = read_text_file(path);
    require_utf8_text(text, path);
    auto all = text_tokens(clip(text, max_chars), wo);
    const double vf = dso.valid_fraction, tf = dso.test_fraction;
    const size_t N = all.size(), ntr = static_cast<size_t>(static_cast<double>(N) * (1 - vf - tf)),
                 nva = static_cast<size_t>(static_cast<double>(N) * vf);
    tr.assign(all.begin(), all.begin() + static_cast<long>(ntr));
    va.assign(all.begin() + static_cast<long>(ntr), all.begin() + static_cast<long>(ntr + nva));
    te.assign(all.begin() + static_cast<long>(ntr + nva), all.end());
    wc.source = path;
  }
  wc.format = format;
  if (fixed) {
    wc.vocab = *fixed;
  } else {
    std::unordered_map<std::string, int64_t> cnt;
    for (auto& w : tr) ++cnt[w];
    std::vector<std::pair<std::string, int64_t>> byf(cnt.begin(), cnt.end());
    std::sort(byf.begin(), byf.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    const int64_t vmax = wo.vocab_size;  // including <unk>; 0 = all
    const int64_t min_count = wo.min_count;
    if (cnt.count(kEos)) wc.vocab.add(kEos);
    for (auto& [w, c] : byf) {
      if (vmax > 0 && static_cast<int64_t>(wc.vocab.size()) >= vmax) break;
      if (c < min_count) break;
      wc.vocab.add(w);  // "<unk>" of PTB is id 0 already
    }
  }
  auto map = [&](const std::vector<std::string>& toks, std::vector<int32_t>& ids) {
    ids.reserve(toks.size());
    for (auto& w : toks) ids.push_back(wc.vocab.id(w));
  };
  map(tr, wc.train);
  map(va, wc.valid);
  map(te, wc.test);
  wc.train_counts.assign(wc.vocab.size(), 0);
  for (auto id : wc.train) ++wc.train_counts[static_cast<size_t>(id)];
  return wc;
}

}  // namespace cs
