// Small text helpers shared by the loaders (no Qt, no LibTorch).
#pragma once
#include <cstddef>
#include <string>

namespace cs {

// "file:line", the prefix of a loader's error message.
inline std::string where(const std::string& file, size_t line) { return file + ":" + std::to_string(line); }

// The six ASCII white-space bytes of isspace() in the "C" locale, independent of the locale.
inline bool is_ascii_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
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
