#include "data/utf8.h"

#include <cstring>

#include "util/error.h"

namespace cs {

size_t utf8_validate(const unsigned char* p, size_t n, size_t* count) {
  size_t i = 0, cps = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
      cps += 8;
    }
    if (i >= n) break;
    const unsigned char c = p[i];
    size_t len;
    uint32_t min;
    if (c < 0x80) {
      ++i;
      ++cps;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      min = 0x10000;
    } else {
      if (count) *count = cps;
      return i;
    }
    if (i + len > n) {
      if (count) *count = cps;
      return i;
    }
    uint32_t cp = c & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
    for (size_t k = 1; k < len; ++k) {
      const unsigned char cc = p[i + k];
      if ((cc & 0xC0) != 0x80) {
        if (count) *count = cps;
        return i;
      }
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      if (count) *count = cps;
      return i;
    }
    i += len;
    ++cps;
  }
  if (count) *count = cps;
  return std::string::npos;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string text_position(const std::string& text, size_t at, const std::string& file) {
  return text_position(reinterpret_cast<const unsigned char*>(text.data()), text.size(), at, file);
}

std::string text_position(const unsigned char* text, size_t n, size_t at, const std::string& file) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < at && i < n; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return file + ":" + std::to_string(line) + ":" + std::to_string(at - line_start + 1);
}

std::string read_text_file(const std::string& path) {
  std::string s = read_file(path);
  if (const size_t bom = utf8_bom_size(reinterpret_cast<const unsigned char*>(s.data()), s.size())) s.erase(0, bom);
  return s;
}

std::string utf8_error_message(const std::string& text, size_t bad, const std::string& file) {
  return utf8_error_message(reinterpret_cast<const unsigned char*>(text.data()), text.size(), bad, file);
}

std::string utf8_error_message(const unsigned char* text, size_t n, size_t bad, const std::string& file) {
  static const char* hex = "0123456789ABCDEF";
  const unsigned char c = bad < n ? text[bad] : 0;
  return text_position(text, n, bad, file) + ": invalid UTF-8 (byte 0x" + hex[c >> 4] + hex[c & 15] +
         " at byte offset " + std::to_string(bad) +
         "); Cellscope reads text as UTF-8: convert the file (e.g. iconv -f latin1 -t utf-8)";
}

void require_utf8(const std::string& text, const std::string& file) {
  const size_t bad = utf8_validate(reinterpret_cast<const unsigned char*>(text.data()), text.size(), nullptr);
  if (bad != std::string::npos) throw UserError(utf8_error_message(text, bad, file));
}

std::string nul_byte_message(const unsigned char* text, size_t n, size_t at, const std::string& file) {
  return text_position(text, n, at, file) + ": NUL byte at byte offset " + std::to_string(at) +
         " (a binary file? expected UTF-8 text)";
}

void require_utf8_text(const std::string& text, const std::string& file) {
  const size_t nul = text.find('\0');
  const size_t bad = utf8_validate(reinterpret_cast<const unsigned char*>(text.data()), text.size(), nullptr);
  if (nul != std::string::npos && (bad == std::string::npos || nul < bad))
    throw UserError(nul_byte_message(reinterpret_cast<const unsigned char*>(text.data()), text.size(), nul, file));
  if (bad != std::string::npos) throw UserError(utf8_error_message(text, bad, file));
}

size_t find_unprintable_name_char(const std::string& s, uint32_t* cp) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const auto* p = b;
  const auto* end = b + s.size();
  while (p < end) {
    const auto* at = p;
    const uint32_t c = utf8_next(p);
    const bool control = c < 0x20 || (c >= 0x7F && c <= 0x9F);
    const bool bidi =
        c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
    if (control || bidi) {
      if (cp) *cp = c;
      return static_cast<size_t>(at - b);
    }
  }
  return std::string::npos;
}

std::string describe_unprintable_name_char(uint32_t cp) {
  static const char* hex = "0123456789ABCDEF";
  std::string u = "U+";
  for (int shift = cp > 0xFFFF ? 20 : 12; shift >= 0; shift -= 4) u += hex[(cp >> shift) & 15];
  const bool control = cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
  return u + (control ? " (a control character)" : " (a bidirectional-text control)");
}

std::vector<std::string> utf8_symbols(const std::string& text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t bad = utf8_validate(p, text.size(), nullptr);
  if (bad != std::string::npos) throw UserError("text: invalid UTF-8 at byte offset " + std::to_string(bad));
  std::vector<std::string> out;
  const auto* end = p + text.size();
  while (p < end) {
    const auto* s = p;
    utf8_next(p);
    out.emplace_back(reinterpret_cast<const char*>(s), static_cast<size_t>(p - s));
  }
  return out;
}

}  // namespace cs
