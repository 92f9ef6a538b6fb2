// Minimal, strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing
// above U+10FFFF. Used by the corpus loaders and the vocabulary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cs {

// Returns std::string::npos when [p, p+n) is valid UTF-8, else the byte offset
// of the first byte of the first invalid sequence. When `count` is given it
// receives the number of code points (of the valid prefix).
size_t utf8_validate(const unsigned char* p, size_t n, size_t* count);

// Decode one code point at p (must be valid, already checked); advances p.
inline uint32_t utf8_next(const unsigned char*& p) {
  const unsigned char c = *p;
  if (c < 0x80) {
    ++p;
    return c;
  }
  if (c < 0xE0) {
    uint32_t cp = ((c & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    p += 2;
    return cp;
  }
  if (c < 0xF0) {
    uint32_t cp = ((c & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    p += 3;
    return cp;
  }
  uint32_t cp = ((c & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
  p += 4;
  return cp;
}

void utf8_append(std::string& out, uint32_t cp);
inline std::string utf8_encode(uint32_t cp) {
  std::string s;
  utf8_append(s, cp);
  return s;
}

// The one message for a text file that is not UTF-8 (every corpus loader of the word LM
// and the sentence tasks; the char LM names the byte offset in its own words):
//   "<file>:<line>:<column>: invalid UTF-8 (byte 0xE9 at byte offset N); Cellscope reads text
//    as UTF-8: convert the file (e.g. iconv -f latin1 -t utf-8)"
// Line and column (in bytes) are 1-based. `bad` is the offset utf8_validate returned.
std::string utf8_error_message(const std::string& text, size_t bad, const std::string& file);
std::string utf8_error_message(const unsigned char* text, size_t n, size_t bad, const std::string& file);
// Throws UserError(utf8_error_message(...)) when `text` is not valid UTF-8.
void require_utf8(const std::string& text, const std::string& file);

// The byte-order-mark rule of every loader: a UTF-8 byte-order mark (EF BB BF) at the start of
// a file is not text and is skipped; anywhere else U+FEFF is an ordinary character. Line and
// column numbers in messages count from after a skipped mark (what an editor shows).
inline size_t utf8_bom_size(const unsigned char* p, size_t n) {
  return n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF ? 3 : 0;
}
// How every dataset loader reads a text file: the whole file (UserError naming it when it is
// unreadable), without a leading byte-order mark.
std::string read_text_file(const std::string& path);

// "<file>:<line>:<column>" of byte offset `at` of `text` (1-based; the column in bytes).
std::string text_position(const std::string& text, size_t at, const std::string& file);
std::string text_position(const unsigned char* text, size_t n, size_t at, const std::string& file);

// "<file>:<line>:<column>: NUL byte at byte offset N (a binary file? expected UTF-8 text)".
std::string nul_byte_message(const unsigned char* text, size_t n, size_t at, const std::string& file);
// Throws UserError(nul_byte_message(...)) at the first NUL byte, then require_utf8: the check
// of a file that must be UTF-8 text.
void require_utf8_text(const std::string& text, const std::string& file);

// Text that is printed to a terminal or in a table as a name (run labels, class labels) must not
// hold control characters (C0 including tab, DEL, C1: terminal escape sequences) nor the
// bidirectional formatting characters U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069 (they
// reorder what is shown). Returns the byte offset of the first one in valid UTF-8 `s`, or npos;
// `cp` receives its code point.
size_t find_unprintable_name_char(const std::string& s, uint32_t* cp);
// "U+001B (a control character)" / "U+202E (a bidirectional-text control)".
std::string describe_unprintable_name_char(uint32_t cp);

// Split a (valid) UTF-8 string into its code points, each as a UTF-8 string.
// Throws UserError on invalid UTF-8 (naming "text").
std::vector<std::string> utf8_symbols(const std::string& text);

}  // namespace cs
