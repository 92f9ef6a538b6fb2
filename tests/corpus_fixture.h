// Small deterministic corpora for the Qt Test suite, and the path of the real default corpus.
// The text itself is core/fixture_text.h's, shared with the core tests.
#pragma once
#include <QFile>
#include <QString>

#include <string>

#include "core/fixture_text.h"
#include "harness.h"
#include "util/paths.h"

namespace cstest {

// A text with learnable structure (words from a small lexicon, sentences), `chars` long.
inline QString write_text_fixture(const QString& name, int chars, unsigned seed = 7) {
  const std::string s = fixture_text(chars, seed);
  const QString path = temp_dir() + "/" + name;
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write(s.data(), static_cast<qint64>(s.size()));
  return path;
}

inline QString default_corpus_path() { return QString::fromStdString(cs::data_cache_dir()) + "/moby-dick.txt"; }

}  // namespace cstest
