#include "config/json.h"

#include <cstdint>
#include <vector>

#include "util/error.h"

namespace cs {

namespace {
// Where the parser is: one frame per open object or array, for the JSON path of an error that
// the library reports without one (a number out of double's range).
struct Frame {
  bool array = false;
  size_t index = 0;
  std::string key;
};

// One UTF-8 sequence of `len` bytes (2-4) at p: well-formed, shortest form, no surrogate.
bool valid_utf8(const char* p, size_t len) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  const unsigned char c = u[0];
  if (c < 0xC2 || c > 0xF4) return false;
  uint32_t cp = c & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
  for (size_t k = 1; k < len; ++k) {
    if ((u[k] & 0xC0) != 0x80) return false;
    cp = (cp << 6) | (u[k] & 0x3Fu);
  }
  const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  return cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

std::string path_of(const std::vector<Frame>& frames) {
  std::string p;
  for (const auto& f : frames) {
    if (f.array) p += "[" + std::to_string(f.index) + "]";
    else if (!f.key.empty()) p += (p.empty() ? "" : ".") + f.key;
  }
  return p.empty() ? "$" : p;  // "$": the document itself
}
}  // namespace

std::string json_error_text(const std::exception& e) {
  std::string m = e.what();
  // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error while ..."
  if (m.rfind("[json.exception.", 0) == 0) {
    const auto close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  if (m.rfind("parse error at ", 0) == 0) m = m.substr(15);
  for (const char* noise : {"syntax error while parsing value - ", "syntax error while parsing object key - ",
                            "syntax error while parsing object separator - ", "syntax error while parsing object - ",
                            "syntax error while parsing array - "}) {
    const auto at = m.find(noise);
    if (at != std::string::npos) m.erase(at, std::string(noise).size());
  }
  // The library quotes what it read, raw: bytes that are not UTF-8 are shown as \xHH so that
  // the message itself is text.
  std::string out;
  static const char* hex = "0123456789ABCDEF";
  for (size_t i = 0; i < m.size();) {
    const auto c = static_cast<unsigned char>(m[i]);
    size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (c >= 0x80 && (i + len > m.size() || !valid_utf8(m.data() + i, len))) len = 0;
    if (len == 0) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    } else {
      out.append(m, i, len);
      i += len;
    }
  }
  return out;
}

json parse_json(const std::string& text, const std::string& what) {
  // The parser itself is iterative; the callback sees each value's depth before it is stored,
  // so at most kMaxJsonDepth levels are ever built. It also follows the JSON path, for errors
  // the library reports without a position.
  std::vector<Frame> frames;
  const json::parser_callback_t limit = [&what, &frames](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth)
          throw UserError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        frames.push_back({event == json::parse_event_t::array_start, 0, {}});
        break;
      case json::parse_event_t::key:
        if (!frames.empty() && parsed.is_string()) frames.back().key = parsed.get<std::string>();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        if (!frames.empty() && frames.back().array) ++frames.back().index;
        break;
      case json::parse_event_t::value:
        if (!frames.empty() && frames.back().array) ++frames.back().index;
        break;
    }
    return true;
  };
  try {
    return json::parse(text, limit);
  } catch (const json::out_of_range& e) {
    // 406: a number beyond double's range (1e400). The library names neither line nor path.
    throw UserError(what + ": " + (frames.empty() ? std::string() : path_of(frames) + ": ") + json_error_text(e) +
                    " (a number must be finite, at most about 1.8e308 in magnitude)");
  }
}

}  // namespace cs
