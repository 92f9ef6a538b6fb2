#include "data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace cs {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) throw UserError("dataset file '" + path + "' does not exist");
    throw UserError("cannot access dataset file '" + path + "': " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw UserError("'" + path + "' is a directory, expected a dataset file");
  if (!S_ISREG(st.st_mode)) throw UserError("'" + path + "' is not a regular file");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError("cannot open dataset file '" + path + "': " + std::strerror(errno));
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    // MAP_POPULATE: map the (usually cached) pages in one batch instead of one fault per page.
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw UserError("cannot map dataset file '" + path + "': " + std::strerror(e));
    }
    // One sequential pass (or two): let the kernel read ahead aggressively.
    ::madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<const unsigned char*>(p);
  }
  ::close(fd);  // the mapping stays valid
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace cs
