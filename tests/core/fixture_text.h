// The text of the test corpora, shared by the core tests (tests/core/corpus_fixture.h) and
// the Qt Test suite (tests/corpus_fixture.h) so that both write the very same fixtures.
// No Qt and no harness here.
#pragma once
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>

namespace cstest {

// A text with learnable structure (words from a small lexicon, sentences), `chars` bytes long.
inline std::string fixture_text(int chars, unsigned seed = 7) {
  static const char* words[] = {"the", "whale", "sea", "ship", "captain", "white", "old", "man",  "and",  "of",
                                "to",  "a",     "in",  "his",  "was",     "that",  "it",  "upon", "boat", "harpoon"};
  std::mt19937 rng(seed);
  std::string s;
  while (static_cast<int>(s.size()) < chars) {
    int n = 4 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      std::string w = words[rng() % 20];
      if (i == 0) w[0] = static_cast<char>(std::toupper(w[0]));
      s += w + (i + 1 < n ? " " : ". ");
    }
    if (rng() % 5 == 0) s += "\n";
  }
  s.resize(static_cast<size_t>(chars));
  return s;
}

// Unigram entropy (bits per character) of UTF-8 text, by code point; a malformed or cut
// sequence counts as one U+FFFD per byte that cannot start or continue a character.
inline double unigram_entropy_bits_of(const std::string& text) {
  std::map<uint32_t, double> counts;
  double n = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t len = text.size();
  for (size_t i = 0; i < len;) {
    const unsigned char c = p[i];
    uint32_t cp = 0xFFFD;
    size_t k = 1;
    const size_t need = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 99;
    if (need == 0) {
      cp = c;
    } else if (need != 99 && i + need < len) {
      uint32_t v = c & (0x3F >> need);
      bool ok = true;
      for (size_t j = 1; j <= need; ++j) {
        if ((p[i + j] & 0xC0) != 0x80) {
          ok = false;
          break;
        }
        v = (v << 6) | (p[i + j] & 0x3F);
      }
      if (ok) {
        cp = v;
        k = need + 1;
      }
    }
    counts[cp] += 1;
    n += 1;
    i += k;
  }
  double h = 0;
  for (auto& [c, m] : counts) h -= m / n * std::log2(m / n);
  return h;
}

}  // namespace cstest
