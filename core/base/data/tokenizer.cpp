#include "data/tokenizer.h"

#include <cctype>
#include <cstring>

#include "util/text.h"

namespace cs {

namespace {

// Length in bytes of a typographic punctuation sequence at text[i], or 0.
size_t unicode_punct(const std::string& s, size_t i) {
  static const char* marks[] = {"\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98", "\xE2\x80\x99",  // “ ” ‘ ’
                                "\xE2\x80\x94", "\xE2\x80\x93", "\xE2\x80\xA6"};                  // — – …
  for (const char* m : marks)
    if (s.compare(i, 3, m) == 0) return 3;
  return 0;
}

// Is position i the start of a word character (not space, not punctuation)?
bool word_char_at(const std::string& s, size_t i) {
  if (i >= s.size()) return false;
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (is_ascii_space(c)) return false;
  if (c < 0x80) return !std::ispunct(c);
  return unicode_punct(s, i) == 0;
}

}  // namespace

std::vector<std::string> tokenize(const std::string& s, const TokenizerOptions& opt) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (is_ascii_space(c)) {
      flush();
      ++i;
      continue;
    }
    size_t plen = c < 0x80 ? (std::ispunct(c) ? 1 : 0) : unicode_punct(s, i);
    if (plen == 0) {
      cur += opt.lowercase && c < 0x80 ? static_cast<char>(std::tolower(c)) : static_cast<char>(c);
      ++i;
      continue;
    }
    const bool apostrophe = (plen == 1 && c == '\'') || (plen == 3 && s.compare(i, 3, "\xE2\x80\x99") == 0);
    const bool hyphen = plen == 1 && c == '-';
    if (opt.keep_inner && (apostrophe || hyphen) && !cur.empty() && word_char_at(s, i + plen)) {
      cur += apostrophe ? '\'' : '-';  // inner apostrophe/hyphen: part of the word
      i += plen;
      continue;
    }
    flush();
    if (opt.keep_punctuation) out.push_back(apostrophe ? std::string("'") : s.substr(i, plen));
    i += plen;
  }
  flush();
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  LineReader reader(text);
  std::string line;
  while (reader.next(line)) lines.push_back(line);
  return lines;
}

}  // namespace cs
