// CSV as RFC 4180 writes and reads it: the one rule for every CSV Cellscope writes (analyses,
// sweep tables, decodes, the window's exports) and reads back (a figure's panels). Header-only,
// no Qt and no LibTorch: the widgets use it through the `cellscope_text` interface target.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace cs {

// One field: as it is, or quoted (quotes doubled) when it holds a comma, a quote, CR or LF.
inline std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

// The records of a CSV text, each a list of fields: a record ends at LF or CRLF outside quotes
// (a quoted CR or LF stays in its field), `""` inside quotes is one quote, and a final line
// break ends the last record (no empty record after it). A quote that opens in the middle of an
// unquoted field is kept as a character, as readers such as Python's csv module do.
inline std::vector<std::vector<std::string>> csv_records(std::string_view text) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> rec;
  std::string cur;
  bool quoted = false, field_started = false;
  auto end_field = [&] {
    rec.push_back(std::move(cur));
    cur.clear();
    field_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        cur += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        cur += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"' && !field_started) {
      quoted = field_started = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (c == '\r') ++i;
      end_field();
      out.push_back(std::move(rec));
      rec.clear();
    } else {
      cur += c;
      field_started = true;
    }
  }
  if (field_started || !cur.empty() || !rec.empty()) {
    end_field();
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace cs
