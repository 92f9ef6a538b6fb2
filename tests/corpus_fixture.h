// Small deterministic corpora for tests, and the path of the real default corpus.
#pragma once
#include <QFile>
#include <QString>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "harness.h"
#include "util/paths.h"

namespace cstest {

// A text with learnable structure (words from a small lexicon, sentences), `chars` long.
inline QString write_text_fixture(const QString& name, int chars, unsigned seed = 7) {
  static const char* words[] = {"the", "whale", "sea", "ship", "captain", "white", "old", "man", "and", "of",
                                "to", "a", "in", "his", "was", "that", "it", "upon", "boat", "harpoon"};
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
  const QString path = temp_dir() + "/" + name;
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write(s.data(), static_cast<qint64>(s.size()));
  return path;
}

// Unigram entropy (bits per character) of the first `max_bytes` of a UTF-8 file, by code point.
inline double unigram_entropy_bits(const QString& path, qint64 max_bytes) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return 0;
  QString text = QString::fromUtf8(f.read(max_bytes));
  std::map<uint, double> counts;
  double n = 0;
  for (uint cp : text.toUcs4()) {
    counts[cp] += 1;
    n += 1;
  }
  double h = 0;
  for (auto& [c, k] : counts) h -= k / n * std::log2(k / n);
  return h;
}

inline QString default_corpus_path() { return QString::fromStdString(cs::data_cache_dir()) + "/moby-dick.txt"; }

}  // namespace cstest
