#include "data/text_tokenize.h"

namespace cs {

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
