// Small text helpers shared by the loaders (no Qt, no LibTorch).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cs {

// "file:line", the prefix of a loader's error message.
inline std::string where(const std::string& file, size_t line) { return file + ":" + std::to_string(line); }

// The six ASCII white-space bytes of isspace() in the "C" locale, independent of the locale.
inline bool is_ascii_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The elements of v with sep between them ("" for none); the first n only when given.
inline std::string join(const std::vector<std::string>& v, const std::string& sep, size_t n = SIZE_MAX) {
  std::string o;
  for (size_t i = 0; i < v.size() && i < n; ++i) {
    if (i) o += sep;
    o += v[i];
  }
  return o;
}

// The first line of s (all of it without a LF): an error's message without what follows.
inline std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// A-Z lowered to a-z, every other byte (UTF-8 included) unchanged: the same result in every locale.
// Not for user text in other scripts: that is ICU's (lowercase_word in data/tokenizer.h).
inline std::string ascii_lower(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// "[2, 3]": the sizes of a tensor's shape, from any range of integers (t.sizes(), a std::vector<int64_t>).
// The one way messages write a shape ("[]" for a scalar's).
template <class Sizes>
std::string shape_text(const Sizes& sizes) {
  std::string o = "[";
  bool first = true;
  for (const auto n : sizes) {
    if (!first) o += ", ";
    o += std::to_string(n);
    first = false;
  }
  return o + "]";
}

// s without its leading and trailing ASCII white space (is_ascii_space).
inline std::string trim_ascii(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_ascii_space(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && is_ascii_space(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// s without its leading and trailing bytes from `chars` (trim_chars(s, " \t"): blanks and tabs only).
inline std::string trim_chars(const std::string& s, const char* chars) {
  const size_t b = s.find_first_not_of(chars);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

// The words of s: maximal runs of bytes that are not ASCII white space (is_ascii_space); none for a
// text of white space only. Other white space (U+00A0, U+3000) stays inside a word.
inline std::vector<std::string> split_ascii_words(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_ascii_space(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !is_ascii_space(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s, i, j - i);
    i = j;
  }
  return out;
}

// The lines of a text, one at a time: LF ends a line and a CR just before it (or at the very
// end) is dropped; a last line without LF counts, an empty text has none. The one way the
// loaders split text into lines, so that they agree on CRLF files and a missing final LF.
//   LineReader lines(text);
//   std::string line;
//   while (lines.next(line)) use(line, lines.number());
class LineReader {
 public:
  explicit LineReader(const std::string& text) : text_(text) {}
  bool next(std::string& line) {
    if (pos_ >= text_.size()) return false;
    size_t nl = text_.find('\n', pos_);
    if (nl == std::string::npos) nl = text_.size();
    line.assign(text_, pos_, nl - pos_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    pos_ = nl + 1;
    ++number_;
    return true;
  }
  size_t number() const { return number_; }             // of the line `next` gave last, from 1
  bool at_end() const { return pos_ >= text_.size(); }  // no line after the one `next` gave last

 private:
  const std::string& text_;
  size_t pos_ = 0, number_ = 0;
};

}  // namespace cs
