#include "data/vocab.h"

#include "util/error.h"

namespace cs {
Vocab::Vocab() { add(kUnk); }
int32_t Vocab::add(const std::string& s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  int32_t id = static_cast<int32_t>(symbols_.size());
  symbols_.push_back(s);
  ids_[s] = id;
  return id;
}
int32_t Vocab::id(const std::string& s) const {
  auto it = ids_.find(s);
  return it == ids_.end() ? 0 : it->second;
}
const std::string& Vocab::symbol(int32_t id) const { return symbols_.at(static_cast<size_t>(id)); }
static std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c == ' ') o += "\\s";
    else o += c;
  }
  return o;
}
std::string Vocab::serialize() const {
  std::string o;
  for (size_t i = 1; i < symbols_.size(); ++i) o += esc(symbols_[i]) + "\n";
  return o;
}
Vocab Vocab::deserialize(const std::string& text, const std::string& src) {
  Vocab v;
  size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string raw = text.substr(pos, nl - pos), s;
    ++line;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size()) {
        char c = raw[++i];
        s += c == 'n' ? '\n' : c == 't' ? '\t' : c == 's' ? ' ' : c;
      } else {
        s += raw[i];
      }
    }
    if (s.empty()) throw UserError(src + ":" + std::to_string(line) + ": empty vocabulary entry");
    v.add(s);
    pos = nl + 1;
  }
  return v;
}
void Vocab::save(const std::string& path) const { atomic_write(path, serialize()); }
Vocab Vocab::load(const std::string& path) { return deserialize(read_file(path), path); }
}  // namespace cs
