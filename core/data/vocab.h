#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace cs {
// Symbol <-> id; id 0 is the explicit unknown symbol "<unk>".
class Vocab {
 public:
  static constexpr const char* kUnk = "<unk>";
  Vocab();
  int32_t add(const std::string& sym);
  int32_t id(const std::string& sym) const;
  const std::string& symbol(int32_t id) const;
  size_t size() const { return symbols_.size(); }
  std::string serialize() const;
  static Vocab deserialize(const std::string& text, const std::string& source_name);
  void save(const std::string& path) const;
  static Vocab load(const std::string& path);

 private:
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, int32_t> ids_;
};
}  // namespace cs
