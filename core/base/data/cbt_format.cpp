#include "data/cbt_format.h"

#include <algorithm>
#include <map>

#include "data/utf8.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace {

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  for (;;) {
    const size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

// A field without its leading and trailing blanks and tabs: only those, as the format has always been
// read (not trim_ascii: a CR or form feed at a field's end stays part of it).
std::string trim(const std::string& s) { return trim_chars(s, " \t"); }

std::string kind_of(const std::string& name) {
  std::string b = basename_of(name);
  for (auto& c : b) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  for (const char* k : {"NE", "CN", "V", "P"})
    if (b.find(std::string("_") + k + "_") != std::string::npos) return k;
  return "";
}

// Whether a file name's stem has a word (split at '_', '-', '.', ' ') starting with `part`:
// "cbtest_CN_test_2500ex" names test (its "cbtest" does not), "train" names train.
bool names_split(const std::string& stem, const std::string& part) {
  size_t b = 0;
  while (b <= stem.size()) {
    size_t e = stem.find_first_of("_-. ", b);
    if (e == std::string::npos) e = stem.size();
    if (stem.compare(b, part.size(), part) == 0 && e - b >= part.size()) return true;
    b = e + 1;
  }
  return false;
}

std::string quote_(const std::string& s) { return "'" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "'"; }

}  // namespace

std::string cloze_lower(const std::string& w, Tokenizer rules, const std::string& locale) {
  if (w == kClozeBlank) return w;
  return lowercase_word(w, rules, locale);
}

std::vector<ClozeExample> parse_cbt(const std::string& text, const std::string& name) {
  auto where = [&](size_t line) { return name + ":" + std::to_string(line) + ": "; };
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const size_t line =
        1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
    throw UserError(where(line) + "a NUL byte: this is a binary file, not CBT text");
  }
  require_utf8(text, name);  // name:line:column of the first byte that is not UTF-8
  const std::string kind = kind_of(name);
  std::vector<ClozeExample> out;
  ClozeExample ex;
  int expect = 1;  // the number the next line of the current example must carry
  LineReader lines(text);
  std::string line;
  while (lines.next(line)) {
    const size_t no = lines.number();
    if (trim(line).empty()) {
      if (expect == 1) continue;  // between examples
      throw UserError(where(no) + "blank line inside an example after its line " + std::to_string(expect - 1) +
                      " (each example has 21 numbered lines)");
    }
    size_t p = 0;
    while (p < line.size() && line[p] >= '0' && line[p] <= '9') ++p;
    if (p == 0 || p > 3 || (p < line.size() && line[p] != ' ' && line[p] != '\t'))
      throw UserError(where(no) + "expected line number " + std::to_string(expect) + " at the start of the line, got " +
                      quote_(line));
    const int n = std::stoi(line.substr(0, p));
    if (n != expect)
      throw UserError(where(no) + "expected line number " + std::to_string(expect) + ", got " + std::to_string(n) +
                      (expect > 1 ? " (each example has 21 numbered lines, then a blank line)" : ""));
    const std::string rest = p < line.size() ? line.substr(p + 1) : "";
    if (expect < 21) {
      for (auto& w : split_ascii_words(rest)) ex.document.push_back(w);
      ++expect;
      continue;
    }
    // line 21: query \t answer \t (empty) \t candidates
    const auto fields = split_on(rest, '\t');
    if (fields.size() != 4)
      throw UserError(where(no) +
                      "line 21 needs 4 tab-separated fields (query, answer, an empty field, candidates "
                      "separated by |), found " +
                      std::to_string(fields.size()));
    ex.query = split_ascii_words(fields[0]);  // as the istream >> of before: its classic locale's white space
    if (std::find(ex.query.begin(), ex.query.end(), kClozeBlank) == ex.query.end())
      throw UserError(where(no) + "the query has no XXXXX (the blank): " + quote_(fields[0]));
    ex.answer = trim(fields[1]);
    if (ex.answer.empty()) throw UserError(where(no) + "empty answer (the second tab-separated field)");
    for (auto& c : split_on(trim(fields[3]), '|')) {
      const std::string t = trim(c);
      if (!t.empty()) ex.candidates.push_back(t);
    }
    if (ex.candidates.size() < 2)
      throw UserError(where(no) + "expected candidates separated by | in the fourth field, got " + quote_(fields[3]));
    if (std::find(ex.candidates.begin(), ex.candidates.end(), ex.answer) == ex.candidates.end())
      throw UserError(where(no) + "the answer " + quote_(ex.answer) + " is not among the candidates");
    if (ex.document.empty()) throw UserError(where(no) + "the example's 20 context lines hold no word");
    ex.kind = kind;
    ex.source = name + ":" + std::to_string(no);
    out.push_back(std::move(ex));
    ex = ClozeExample{};
    expect = 1;
  }
  if (expect != 1)
    throw UserError(where(std::max<size_t>(lines.number(), 1)) + "the file ends inside an example (after its line " +
                    std::to_string(expect - 1) + " of 21)");
  if (out.empty()) throw UserError(name + ": empty file: no CBT example (21 numbered lines each)");
  return out;
}

std::vector<ClozeExample> load_cbt_file(const std::string& path) { return parse_cbt(read_text_file(path), path); }

ClozeSplits load_cbt_dir(const std::string& dir) {
  if (!dir_exists(dir)) {
    if (file_exists(dir))
      throw UserError(
          dir + ": a cbt dataset is a directory holding *train*.txt, *valid*.txt and *test*.txt files, not a file");
    throw UserError(
        dir + ": no such directory (a cbt dataset is a directory holding *train*.txt, *valid*.txt and *test*.txt)");
  }
  ClozeSplits s;
  const auto names = list_dir(dir);
  for (const char* part : {"train", "valid", "test"}) {
    std::vector<std::string> hits;
    for (auto& n : names)
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".txt") == 0 && names_split(n.substr(0, n.size() - 4), part))
        hits.push_back(n);
    if (hits.size() != 1) {
      std::string l;
      for (auto& h : hits) l += (l.empty() ? "" : ", ") + h;
      throw UserError(dir + ": expected one *" + part + "*.txt file, found " +
                      (hits.empty() ? std::string("none") : std::to_string(hits.size()) + " (" + l + ")"));
    }
    const std::string path = join_path(dir, hits[0]);
    auto ex = load_cbt_file(path);
    if (std::string(part) == "train") s.train = std::move(ex), s.train_path = path;
    else if (std::string(part) == "valid") s.valid = std::move(ex), s.valid_path = path;
    else s.test = std::move(ex), s.test_path = path;
  }
  return s;
}

Vocab cloze_vocab(const std::vector<ClozeExample>& train, bool lowercase, int64_t min_count, int64_t max_vocab,
                  bool blank_token, Tokenizer rules, const std::string& locale) {
  std::map<std::string, int64_t> freq;
  auto add = [&](const std::string& w) {
    if (w == kClozeBlank) return;
    ++freq[lowercase ? cloze_lower(w, rules, locale) : w];
  };
  for (auto& e : train) {
    for (auto& w : e.document) add(w);
    for (auto& w : e.query) add(w);
    add(e.answer);
    for (auto& w : e.candidates) add(w);
  }
  std::vector<std::pair<std::string, int64_t>> fv(freq.begin(), freq.end());
  std::stable_sort(fv.begin(), fv.end(), [](auto& a, auto& b) { return a.second > b.second; });
  Vocab v;
  v.add("<pad>");
  // The blank has its own embedding (id 2), as in CBT and the AoA Reader: it never shares
  // <unk>'s row with the unknown words of valid/test (CBT_NOTES.md, "The blank").
  if (blank_token) v.add(kClozeBlank);
  const int64_t specials = static_cast<int64_t>(v.size());
  for (auto& [w, c] : fv) {
    if (c < min_count) break;
    if (max_vocab > 0 && static_cast<int64_t>(v.size()) - specials >= max_vocab) break;
    if (w == "<pad>") continue;
    v.add(w);
  }
  return v;
}

}  // namespace cs
