#include "data/vocab.h"

#include <stdexcept>

#include "data/utf8.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace {
const char* kHeader = "cellscope-vocab";
const int kVersion = 1;

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}
}  // namespace

Vocab::Vocab() {
  symbols_.push_back(kUnk);
  index_.emplace(kUnk, kUnkId);
}

int32_t Vocab::add(const std::string& sym) {
  auto it = index_.find(sym);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<int32_t>(symbols_.size());
  symbols_.push_back(sym);
  index_.emplace(sym, id);
  return id;
}

int32_t Vocab::id(const std::string& sym) const {
  auto it = index_.find(sym);
  return it == index_.end() ? kUnkId : it->second;
}

const std::string& Vocab::symbol(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= symbols_.size())
    throw std::out_of_range("vocabulary id " + std::to_string(id) + " out of range (size " +
                            std::to_string(symbols_.size()) + ")");
  return symbols_[static_cast<size_t>(id)];
}

std::string Vocab::escape(const std::string& sym) {
  if (sym.empty()) return "\\e";
  std::string out;
  out.reserve(sym.size() + 2);
  static const char* hex = "0123456789ABCDEF";
  const auto* p = reinterpret_cast<const unsigned char*>(sym.data());
  const size_t n = sym.size();
  auto hex_byte = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c >= 0x80) {
      // A valid UTF-8 sequence is written as is; any other byte (Latin-1, a cut sequence) as
      // \xHH, so that every symbol round-trips and the file itself stays UTF-8.
      const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      if (i + len <= n && utf8_validate(p + i, len, nullptr) == std::string::npos) {
        out.append(sym, i, len);
        i += len;
      } else {
        hex_byte(c);
        ++i;
      }
      continue;
    }
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case ' ':
        out += "\\s";
        break;
      default:
        if (c < 0x20 || c == 0x7F) hex_byte(c);
        else out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string Vocab::serialize() const {
  std::string out =
      std::string(kHeader) + " " + std::to_string(kVersion) + " " + std::to_string(symbols_.size()) + "\n";
  for (const auto& s : symbols_) {
    out += escape(s);
    out += '\n';
  }
  return out;
}

Vocab Vocab::deserialize(const std::string& text_in, const std::string& source_name) {
  auto fail = [&](size_t line, const std::string& what) -> UserError {
    return UserError("vocabulary '" + source_name + "' line " + std::to_string(line) + ": " + what);
  };
  // A byte-order mark is skipped and CR LF read as LF, as in every text file Cellscope reads.
  const size_t bom = utf8_bom_size(reinterpret_cast<const unsigned char*>(text_in.data()), text_in.size());
  const std::string text = bom ? text_in.substr(bom) : text_in;
  try {
    require_utf8_text(text, source_name);  // "<file>:<line>:<column>: ..."
  } catch (const UserError& e) {
    throw UserError("vocabulary '" + source_name + "': " + e.what());
  }

  LineReader lines(text);  // a symbol's CR is written as \r, so a CR before LF is a line end
  std::string line;
  if (!lines.next(line)) throw UserError("vocabulary '" + source_name + "' is empty");
  // Header: "cellscope-vocab 1 N"
  const std::string prefix = std::string(kHeader) + " ";
  if (line.compare(0, prefix.size(), prefix) != 0)
    throw fail(1, "not a Cellscope vocabulary (expected a header 'cellscope-vocab 1 <count>')");
  size_t count = 0;
  {
    std::string rest = line.substr(prefix.size());
    auto sp = rest.find(' ');
    if (sp == std::string::npos) throw fail(1, "malformed header '" + line + "'");
    std::string ver = rest.substr(0, sp), cnt = rest.substr(sp + 1);
    if (ver != std::to_string(kVersion)) throw fail(1, "unsupported vocabulary format version '" + ver + "'");
    if (cnt.empty() || cnt.find_first_not_of("0123456789") != std::string::npos || cnt.size() > 12)
      throw fail(1, "malformed symbol count '" + cnt + "'");
    count = std::stoull(cnt);
    if (count == 0) throw fail(1, "symbol count is 0 (the vocabulary always holds <unk>)");
    // One symbol per line: a count above the number of bytes cannot be right, and reserving it
    // asked for gigabytes (found by tests/fuzz/fuzz_vocab: "cellscope-vocab 1 222222222").
    if (count > text.size())
      throw fail(
          1, "symbol count " + cnt + " is larger than the file (" + std::to_string(text.size()) + " bytes) can hold");
  }

  Vocab v;
  v.symbols_.clear();
  v.index_.clear();
  v.symbols_.reserve(count);
  while (lines.next(line)) {
    if (v.symbols_.size() == count) {
      if (line.empty() && lines.at_end()) break;  // tolerate one trailing blank line
      throw fail(lines.number(), "more symbols than the header's count " + std::to_string(count));
    }
    std::string sym;
    sym.reserve(line.size());
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (c != '\\') {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
          throw fail(lines.number(), "unescaped control character (byte " + std::to_string(static_cast<int>(c)) + ")");
        sym += c;
        continue;
      }
      if (i + 1 >= line.size()) throw fail(lines.number(), "dangling backslash at end of line");
      char e = line[++i];
      switch (e) {
        case '\\':
          sym += '\\';
          break;
        case 'n':
          sym += '\n';
          break;
        case 't':
          sym += '\t';
          break;
        case 'r':
          sym += '\r';
          break;
        case 's':
          sym += ' ';
          break;
        case 'e':
          if (line != "\\e") throw fail(lines.number(), "'\\e' (empty symbol) must be alone on its line");
          break;
        case 'x': {
          int hi = i + 1 < line.size() ? hexval(line[i + 1]) : -1;
          int lo = i + 2 < line.size() ? hexval(line[i + 2]) : -1;
          if (hi < 0 || lo < 0) throw fail(lines.number(), "'\\x' must be followed by two hex digits");
          sym += static_cast<char>(hi * 16 + lo);
          i += 2;
          break;
        }
        default:
          throw fail(lines.number(), std::string("unknown escape '\\") + e + "'");
      }
    }
    if (v.symbols_.empty() && sym != kUnk)
      throw fail(lines.number(), "the first symbol must be <unk> (id 0), found '" + line + "'");
    if (v.index_.count(sym)) throw fail(lines.number(), "duplicate symbol '" + line + "'");
    v.index_.emplace(sym, static_cast<int32_t>(v.symbols_.size()));
    v.symbols_.push_back(std::move(sym));
  }
  if (v.symbols_.size() != count)
    throw UserError("vocabulary '" + source_name + "' is truncated: header says " + std::to_string(count) +
                    " symbols, found " + std::to_string(v.symbols_.size()));
  return v;
}

void Vocab::save(const std::string& path) const { atomic_write(path, serialize()); }

Vocab Vocab::load(const std::string& path) {
  if (!file_exists(path)) throw UserError("vocabulary file '" + path + "' does not exist");
  return deserialize(read_file(path), path);
}

std::string Vocab::decode(const int32_t* ids, size_t n) const {
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = ids[i];
    if (id < 0 || static_cast<size_t>(id) >= symbols_.size()) out += kUnk;
    else out += symbols_[static_cast<size_t>(id)];
  }
  return out;
}

}  // namespace cs
