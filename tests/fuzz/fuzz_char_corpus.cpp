// The character-level corpus loaders (data/char_corpus.h): text, PTB char and text8.
// Input: byte 0 picks the format and the split fractions; the rest is an archive
// (fuzz_common.h) written into a directory "data":
//   text / text8: the first file is the corpus;  ptb_char: the directory (ptb.char.*.txt).
// Each load also runs once more with the first load's vocabulary fixed (what resume/eval do).
#include <string>
#include "data/char_corpus.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t sel = data[0];
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  csfuzz::clear_scratch();
  const auto files = csfuzz::write_archive("data", rest, 4);
  if (files.empty()) return 0;
  using F = cs::DatasetFormat;
  static const F formats[] = {F::Text, F::PtbChar, F::Text8, F::Auto};
  const F format = formats[sel % 4];
  const std::string path = format == F::PtbChar ? csfuzz::scratch_dir() + "/data" : files[0];
  const double vf = (sel >> 2 & 3) * 0.1, tf = (sel >> 4 & 1) * 0.05;
  const uint64_t max_chars = (sel & 0x80) ? 64 : 0;
  csfuzz::expect_only_user_errors([&] {
    auto c = cs::load_char_corpus_file(path, format, vf, tf, max_chars);
    (void)cs::line_spans(c.train, c.vocab.id("\n"));
    auto again = cs::load_char_corpus_file(path, format, vf, tf, max_chars, &c.vocab);
    if (again.train != c.train)
      csfuzz::unexpected("invariant", "reloading with the corpus' own vocabulary changed the ids");
  });
  return 0;
}
