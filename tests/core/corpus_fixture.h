// Small deterministic corpora for the core tests, and the path of the real default corpus.
#pragma once
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "fixture_text.h"
#include "harness.h"
#include "util/paths.h"

namespace cstest {

// Writes fixture_text(chars, seed) to temp_dir()/name and returns the path.
inline std::string write_text_fixture(const std::string& name, int chars, unsigned seed = 7) {
  const std::string path = temp_dir() + "/" + name;
  write_text(path, fixture_text(chars, seed));
  return path;
}

// Unigram entropy (bits per character) of the first `max_bytes` of a UTF-8 file, by code point.
inline double unigram_entropy_bits(const std::string& path, int64_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return 0;
  std::string text(static_cast<size_t>(max_bytes), '\0');
  f.read(text.data(), static_cast<std::streamsize>(max_bytes));
  text.resize(static_cast<size_t>(f.gcount()));
  return unigram_entropy_bits_of(text);
}

inline std::string default_corpus_path() { return cs::data_cache_dir() + "/moby-dick.txt"; }

}  // namespace cstest
