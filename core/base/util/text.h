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

}  // namespace cs
