// Stand-in (plain text only); replaced by the full loader.
#include "data/char_corpus.h"

#include <map>

#include "util/error.h"

namespace cs {
CharCorpus load_char_corpus(const json& ds, const Vocab* fixed) {
  std::string path = ds.value("path", std::string());
  if (path.empty()) path = env_or("CELLSCOPE_DATA_DIR", std::string(CELLSCOPE_SOURCE_DIR) + "/.cache/datasets") + "/" + ds.value("name", std::string("moby-dick")) + ".txt";
  std::string text = read_file(path);
  int64_t mx = ds.value("max_chars", 0);
  if (mx > 0 && (int64_t)text.size() > mx) text.resize(mx);
  std::vector<std::string> syms;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = text[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    syms.push_back(text.substr(i, n));
    i += n;
  }
  CharCorpus cc;
  double vf = ds.value("valid_fraction", 0.05), tf = ds.value("test_fraction", 0.05);
  size_t N = syms.size(), ntr = (size_t)(N * (1 - vf - tf)), nva = (size_t)(N * vf);
  if (fixed) cc.vocab = *fixed;
  else {
    std::map<std::string, int> s;
    for (size_t i = 0; i < ntr; ++i) s[syms[i]] = 1;
    for (auto& kv : s) cc.vocab.add(kv.first);
  }
  for (size_t i = 0; i < N; ++i) {
    int32_t id = cc.vocab.id(syms[i]);
    (i < ntr ? cc.train : i < ntr + nva ? cc.valid : cc.test).push_back(id);
  }
  cc.source = path;
  cc.format = "text";
  return cc;
}
}  // namespace cs
