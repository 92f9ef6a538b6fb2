#include "data/text_tokenize.h"

#include "util/text.h"

namespace cs {

static bool is_word(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

std::vector<std::string> tokenize_words(const std::string& text, const TextTokenizeOptions& opt) {
  std::vector<std::string> out;
  const size_t n = text.size();
  size_t i = 0;
  auto full = [&] { return opt.max_tokens > 0 && out.size() >= opt.max_tokens; };
  while (i < n && !full()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (is_ascii_space(c)) {
      ++i;
      continue;
    }
    if (is_word(c)) {
      std::string w;
      while (i < n) {
        const unsigned char d = static_cast<unsigned char>(text[i]);
        if (is_word(d)) {
          w += (opt.lowercase && d >= 'A' && d <= 'Z') ? static_cast<char>(d - 'A' + 'a') : static_cast<char>(d);
          ++i;
        } else if ((d == '\'' || d == '-') && i + 1 < n && is_word(static_cast<unsigned char>(text[i + 1]))) {
          w += static_cast<char>(d);  // inner apostrophe / hyphen
          ++i;
        } else {
          break;
        }
      }
      out.push_back(std::move(w));
      continue;
    }
    out.emplace_back(1, static_cast<char>(c));  // punctuation / symbol
    ++i;
  }
  return out;
}

std::string latin1_to_utf8(const std::string& s) {
  std::string o;
  o.reserve(s.size() + s.size() / 8);
  for (unsigned char c : s) {
    if (c < 0x80) {
      o += static_cast<char>(c);
    } else {
      o += static_cast<char>(0xC0 | (c >> 6));
      o += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return o;
}

size_t find_invalid_utf8(const std::string& s) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > n) return i;
    if (len == 2 && c < 0xC2) return i;  // overlong
    for (size_t j = 1; j < len; ++j)
      if ((static_cast<unsigned char>(s[i + j]) & 0xC0) != 0x80) return i;
    i += len;
  }
  return std::string::npos;
}

}  // namespace cs
