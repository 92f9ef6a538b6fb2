// Character-level corpora for the char-LM task. Symbols are Unicode code points
// (UTF-8 strings in the Vocab), not bytes. Files are memory-mapped and decoded
// in one streaming pass straight into ids: no per-line strings and no copy of
// the file in a std::string (peak memory ~ 4 bytes per character for the ids).
//
// Formats (dataset.format; see datasets/README.md for the full rules):
//   text      plain UTF-8 (BOM skipped, "\r\n" read as "\n"). Contiguous split by
//             characters: the first n - nv - nt characters are train, then nv
//             valid, then nt test, with nv = round(n * valid_fraction) and
//             nt = round(n * test_fraction).
//   ptb_char  Mikolov's PTB character files: a directory holding
//             ptb.char.{train,valid,test}.txt, or any one of those files (the
//             siblings are found next to it). Symbols are separated by spaces,
//             "_" stands for a space, and each line is a sentence: its end is the
//             newline symbol "\n" (the usual end-of-sentence symbol for PTB char;
//             blank lines are skipped). The corpus' own split is used;
//             valid/test_fraction are ignored.
//   text8     one line of characters. 100M characters give the standard
//             90M/5M/5M split (as in the MZU paper and Mikolov et al.); any other
//             size is split with the same 90%/5%/5% proportions (valid = test =
//             floor(n / 20), train = the rest). valid/test_fraction are ignored.
//   auto      a directory or a ptb.char.*.txt name -> ptb_char; a name starting
//             with "text8" -> text8; otherwise text.
// max_chars (> 0) caps the number of characters used: for text/text8 the first
// max_chars characters are split as above; for ptb_char each split is cut to
// its share of max_chars (the corpus' train:valid:test ratio is kept).
//
// Every problem is a UserError with one message naming the file: missing,
// empty, binary (NUL bytes, or > 5% control characters in the first 64 KiB),
// invalid UTF-8 (with the byte offset), or a split with fewer than 2 characters
// (a split whose fraction is 0 may be empty).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/common_options.h"
#include "data/dataset_formats.h"
#include "data/vocab.h"

namespace cs {

struct CharCorpus {
  std::vector<int32_t> train, valid, test;
  Vocab vocab;
  std::string source;                          // resolved file or directory
  DatasetFormat format = DatasetFormat::Text;  // resolved: text, ptb_char or text8
};

// `dataset`: the "dataset" config section as options (read_dataset_options of a resolved
// section; tests may use dataset_option_table().read_partial): name (manifest name), path
// (overrides name), format (auto, text, ptb_char or text8; another is refused naming the
// char_lm formats), valid_fraction, test_fraction, max_chars (0 = all). If fixed_vocab is given
// (resume/eval of a saved run) it is used as is (symbols it lacks -> <unk>); otherwise the
// vocabulary is <unk> plus the symbols of the train split sorted by code point (deterministic),
// and valid/test symbols unseen in train map to <unk>.
CharCorpus load_char_corpus(const DatasetOptions& dataset, const Vocab* fixed_vocab = nullptr);

// Load a file/directory of a known format directly (format may be auto).
CharCorpus load_char_corpus_file(const std::string& path, DatasetFormat format, double valid_fraction,
                                 double test_fraction, uint64_t max_chars, const Vocab* fixed_vocab = nullptr);

// auto -> text, ptb_char or text8 from the path's name (see above; the registry's char_lm patterns).
DatasetFormat detect_char_format(const std::string& path);

// Segments of `ids` between newline symbols, as [begin, end) index pairs that
// exclude the newline itself; empty lines are skipped, a last line without a
// newline is included. For BPC-by-sentence-length analysis.
std::vector<std::pair<size_t, size_t>> line_spans(const std::vector<int32_t>& ids, int32_t newline_id);

}  // namespace cs
