// A read-only memory mapping of a whole file, for streaming corpus loaders:
// the kernel pages the file in as it is decoded, so a 100 MB corpus costs no
// 100 MB std::string copy (the pages are clean and can be dropped under pressure).
#pragma once
#include <cstddef>
#include <string>

namespace cs {

class MappedFile {
 public:
  // Throws UserError naming `path` when it is missing, a directory, or unreadable.
  // An empty file maps to size() == 0 (callers report "empty" themselves).
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cs
