// Symbol <-> id table shared by the char-LM (symbols = Unicode code points as
// UTF-8 strings) and the word-level tasks (symbols = tokens). Saved with every
// run (run_dir/vocab) so that resume/eval map text to the same ids.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace cs {

// Id 0 is always the unknown symbol "<unk>", present from construction. Adding
// the literal string "<unk>" returns 0 (the same entry), so a corpus token
// spelled "<unk>" (as in PTB word data) and unknown symbols share id 0.
//
// Serialized text format (UTF-8, '\n' line ends, written by serialize()):
//   line 1:    cellscope-vocab 1 <N>        header: format version 1, N symbols
//   line 2+i:  symbol with id i, escaped    for i = 0..N-1 (line 2 is "<unk>")
// Escapes, so that every symbol is exactly one visible line:
//   "\\" backslash   "\n" newline   "\t" tab   "\r" carriage return
//   "\s" space       "\e" the empty symbol
//   "\xHH" any other byte < 0x20 or 0x7F, and every byte >= 0x80 that is not part of a valid
//           UTF-8 sequence (two upper-case hex digits)
// Every other byte (valid multi-byte UTF-8 included) is written as is, so the file is always
// UTF-8 and every symbol, whatever its bytes, reads back as it was written. Malformed
// input (bad header, count mismatch, unknown escape, duplicate symbol, line 2
// not "<unk>", invalid UTF-8) throws UserError naming the source and line.
class Vocab {
 public:
  static constexpr const char* kUnk = "<unk>";
  static constexpr int32_t kUnkId = 0;

  Vocab();                                   // contains only <unk>
  int32_t add(const std::string& sym);       // returns the (new or existing) id
  int32_t id(const std::string& sym) const;  // kUnkId (0) when absent
  bool contains(const std::string& sym) const { return index_.count(sym) != 0; }
  const std::string& symbol(int32_t id) const;  // throws std::out_of_range on a bad id
  size_t size() const { return symbols_.size(); }
  const std::vector<std::string>& symbols() const { return symbols_; }

  std::string serialize() const;
  static Vocab deserialize(const std::string& text, const std::string& source_name);
  void save(const std::string& path) const;    // atomic (cs::atomic_write)
  static Vocab load(const std::string& path);  // UserError naming the file

  // Concatenate the symbols of ids (for showing samples); unknown ids render as "<unk>".
  std::string decode(const int32_t* ids, size_t n) const;
  std::string decode(const std::vector<int32_t>& ids) const { return decode(ids.data(), ids.size()); }

  bool operator==(const Vocab& o) const { return symbols_ == o.symbols_; }
  bool operator!=(const Vocab& o) const { return !(*this == o); }

  static std::string escape(const std::string& sym);

 private:
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, int32_t> index_;
};

}  // namespace cs
