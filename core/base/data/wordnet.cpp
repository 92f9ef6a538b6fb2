#include "data/wordnet.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "data/utf8.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace {

const char* kPosFile[4] = {"noun", "verb", "adj", "adv"};

std::string install_hint() {
  return "install WordNet with `sudo apt-get install wordnet-base` (packaging/setup.sh installs it), "
         "or set CELLSCOPE_WORDNET_DIR to a directory holding WordNet 3.0's database files";
}

std::vector<std::string> read_lines(const std::string& path, bool required) {
  std::ifstream f(path);
  if (!f) {
    if (!required) return {};
    throw UserError("WordNet file '" + path + "' is missing or unreadable: " + install_hint());
  }
  const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::vector<std::string> out;
  LineReader lines(text);
  for (std::string line; lines.next(line);) {
    if (out.empty()) line.erase(0, utf8_bom_size(reinterpret_cast<const unsigned char*>(line.data()), line.size()));
    out.push_back(line);
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

bool all_lower(const std::string& s) {
  for (char c : s)
    if (c >= 'A' && c <= 'Z') return false;
  return true;
}

struct Rule {
  const char* suffix;
  const char* ending;
};
const std::vector<Rule>& rules(int p) {
  static const std::vector<Rule> r[4] = {
      {{"s", ""},
       {"ses", "s"},
       {"xes", "x"},
       {"zes", "z"},
       {"ches", "ch"},
       {"shes", "sh"},
       {"men", "man"},
       {"ies", "y"}},
      {{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}},
      {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}},
      {}};
  return r[p];
}

}  // namespace

std::string WordNet::default_dir() { return env_or("CELLSCOPE_WORDNET_DIR", "/usr/share/wordnet"); }

int WordNet::pos_index(char pos) {
  switch (pos) {
    case 'n':
      return 0;
    case 'v':
      return 1;
    case 'a':
    case 's':
      return 2;
    case 'r':
      return 3;
    default:
      throw UserError(std::string("WordNet: unknown part of speech '") + pos + "'");
  }
}

WordNet WordNet::load(const std::string& dir) {
  if (!dir_exists(dir)) throw UserError("WordNet directory '" + dir + "' does not exist: " + install_hint());
  WordNet wn;
  for (int p = 0; p < 4; ++p) {
    Pos& P = wn.pos_[p];
    const std::string ipath = join_path(dir, std::string("index.") + kPosFile[p]);
    size_t ln = 0;
    for (const auto& line : read_lines(ipath, true)) {
      ++ln;
      if (line.empty() || line[0] == ' ') continue;  // licence header
      std::istringstream ss(line);
      std::string lemma, pos;
      int64_t synsets = 0, pointers = 0;
      if (!(ss >> lemma >> pos >> synsets >> pointers) || synsets <= 0 || pointers < 0)
        throw UserError("WordNet file '" + ipath + "' line " + std::to_string(ln) + " is malformed");
      std::string skip;
      for (int64_t i = 0; i < pointers + 2; ++i) ss >> skip;  // pointer symbols, sense_cnt, tagsense_cnt
      std::string off;
      if (!(ss >> off))
        throw UserError("WordNet file '" + ipath + "' line " + std::to_string(ln) + " has no synset offset");
      P.first_offset.emplace(lemma, static_cast<uint32_t>(std::strtoul(off.c_str(), nullptr, 10)));
    }
    const std::string dpath = join_path(dir, std::string("data.") + kPosFile[p]);
    ln = 0;
    for (const auto& line : read_lines(dpath, true)) {
      ++ln;
      if (line.empty() || line[0] == ' ') continue;
      std::istringstream ss(line);
      std::string off, type, wcnt;
      int lexfile = -1;
      if (!(ss >> off >> lexfile >> type >> wcnt))
        throw UserError("WordNet file '" + dpath + "' line " + std::to_string(ln) + " is malformed");
      P.lexfile[static_cast<uint32_t>(std::strtoul(off.c_str(), nullptr, 10))] = lexfile;
      const long n = std::strtol(wcnt.c_str(), nullptr, 16);
      for (long i = 0; i < n; ++i) {
        std::string word, lexid;
        if (!(ss >> word >> lexid))
          throw UserError("WordNet file '" + dpath + "' line " + std::to_string(ln) + " has too few words");
        const size_t paren = word.find('(');  // adjective markers: "galore(ip)"
        if (paren != std::string::npos) word.resize(paren);
        if (all_lower(word)) P.lower_lemmas.insert(word);
      }
    }
    for (const auto& line : read_lines(join_path(dir, std::string(kPosFile[p]) + ".exc"), false)) {
      std::istringstream ss(line);
      std::string infl, base;
      if (!(ss >> infl)) continue;
      while (ss >> base) P.exc[infl].push_back(base);
    }
  }
  // cntlist.rev: "lemma%ss_type:lex_filenum:lex_id:head_word:head_id sense_number tag_cnt"
  for (const auto& line : read_lines(join_path(dir, "cntlist.rev"), false)) {
    std::istringstream ss(line);
    std::string key;
    int64_t sense = 0, cnt = 0;
    if (!(ss >> key >> sense >> cnt)) continue;
    const size_t pct = key.find('%');
    if (pct == std::string::npos || pct + 1 >= key.size()) continue;
    const char t = key[pct + 1];
    const int p = t == '1' ? 0 : t == '2' ? 1 : (t == '3' || t == '5') ? 2 : t == '4' ? 3 : -1;
    if (p < 0) continue;
    wn.pos_[p].tags[ascii_lower(key.substr(0, pct))] += cnt;
  }
  return wn;
}

std::vector<std::string> WordNet::morphy(const std::string& word, char pos) const {
  const Pos& P = pos_[pos_index(pos)];
  std::vector<std::string> out;
  for (auto& f : base_forms(word, pos))
    if (P.first_offset.count(f)) out.push_back(f);
  return out;
}

std::vector<std::string> WordNet::base_forms(const std::string& word, char pos) const {
  const int p = pos_index(pos);
  const Pos& P = pos_[p];
  std::vector<std::string> forms{word};
  auto ex = P.exc.find(word);
  if (ex != P.exc.end()) {
    forms.insert(forms.end(), ex->second.begin(), ex->second.end());
  } else if (!(p == 0 && (ends_with(word, "ss") || word.size() <= 2))) {
    for (const Rule& r : rules(p)) {
      const std::string suf = r.suffix;
      if (word.size() > suf.size() && ends_with(word, suf))
        forms.push_back(word.substr(0, word.size() - suf.size()) + r.ending);
    }
  }
  std::vector<std::string> out;
  for (auto& f : forms)
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  return out;
}

bool WordNet::lowercase_lemma(const std::string& lemma, char pos) const {
  return pos_[pos_index(pos)].lower_lemmas.count(lemma) != 0;
}

int64_t WordNet::tag_count(const std::string& lemma, char pos) const {
  const auto& t = pos_[pos_index(pos)].tags;
  auto it = t.find(lemma);
  return it == t.end() ? 0 : it->second;
}

int WordNet::first_lexfile(const std::string& word, char pos) const {
  const auto bases = morphy(word, pos);
  if (bases.empty()) return -1;
  const Pos& P = pos_[pos_index(pos)];
  auto lf = P.lexfile.find(P.first_offset.at(bases[0]));
  return lf == P.lexfile.end() ? -1 : lf->second;
}

bool WordNet::common_noun(const std::string& w) const {
  auto c = noun_cache_.find(w);
  if (c != noun_cache_.end()) return c->second;
  bool ok = w.size() >= 3 && w.front() != '-' && w.back() != '-';
  for (char ch : w)
    if (!((ch >= 'a' && ch <= 'z') || ch == '-')) ok = false;
  if (ok) {
    int64_t noun = 0;
    bool any = false;
    for (auto& b : morphy(w, 'n')) {
      if (b.size() < 3 || !lowercase_lemma(b, 'n')) continue;
      any = true;
      noun += tag_count(b, 'n');
    }
    int64_t other = 0;
    for (char p : {'v', 'a', 'r'}) {
      int64_t s = 0;
      for (auto& b : base_forms(w, p)) s += tag_count(b, p);
      other = std::max(other, s);
    }
    ok = any && other <= noun;
  }
  noun_cache_.emplace(w, ok);
  return ok;
}

bool WordNet::common_word(const std::string& w) const {
  auto c = word_cache_.find(w);
  if (c != word_cache_.end()) return c->second;
  bool ok = false;
  for (char p : {'n', 'v', 'a', 'r'})
    for (auto& b : morphy(w, p))
      if (lowercase_lemma(b, p)) ok = true;
  word_cache_.emplace(w, ok);
  return ok;
}

}  // namespace cs
