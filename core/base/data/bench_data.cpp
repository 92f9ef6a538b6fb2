#include "data/bench_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "data/char_corpus.h"
#include "util/error.h"

namespace cs {

namespace {

// kB value of a /proc/self/status field ("VmHWM", "VmRSS"); -1 if unavailable.
long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') return std::atol(line.c_str() + n + 1);
  return -1;
}

double mb(long kb) { return kb < 0 ? -1.0 : static_cast<double>(kb) / 1024.0; }

// Synthetic text8: words of 1..12 letters with a skewed letter distribution,
// separated by single spaces, no newline. Deterministic (fixed seed).
void write_synthetic(const std::string& path, size_t bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw UserError("bench: cannot create '" + path + "': " + std::strerror(errno));
  std::mt19937 rng(12345);
  // English-ish letter frequencies (per mille), a..z.
  const int freq[26] = {82, 15, 28, 43, 127, 22, 20, 61, 70, 2,  8, 40, 24,
                        67, 75, 19, 1,  60,  63, 91, 28, 10, 24, 2, 20, 1};
  std::discrete_distribution<int> letter(std::begin(freq), std::end(freq));
  std::uniform_int_distribution<int> wordlen(1, 12);
  std::string buf;
  const size_t chunk = 1 << 20;
  buf.reserve(chunk + 16);
  size_t written = 0;
  int left_in_word = wordlen(rng);
  while (written < bytes) {
    buf.clear();
    const size_t want = std::min(chunk, bytes - written);
    while (buf.size() < want) {
      if (left_in_word == 0) {
        buf += ' ';
        left_in_word = wordlen(rng);
      } else {
        buf += static_cast<char>('a' + letter(rng));
        --left_in_word;
      }
    }
    const char* p = buf.data();
    size_t left = buf.size();
    while (left > 0) {
      ssize_t w = ::write(fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        const int e = errno;
        ::close(fd);
        ::unlink(path.c_str());
        throw UserError("bench: cannot write '" + path + "': " + std::strerror(e));
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
    written += buf.size();
  }
  ::close(fd);
}

}  // namespace

json bench_char_loading(size_t megabytes) {
  if (megabytes == 0) throw UserError("bench --data: size must be at least 1 MB");
  std::string dir = env_or("TMPDIR", "/tmp");
  std::string tmpl = join_path(dir, "cellscope-bench-XXXXXX");
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  if (!::mkdtemp(name.data())) throw UserError("bench: cannot create a directory in '" + dir + "'");
  const std::string tdir = name.data();
  const std::string path = join_path(tdir, "text8");
  const size_t bytes = megabytes * 1000000ull;

  json r;
  try {
    using clk = std::chrono::steady_clock;
    auto t0 = clk::now();
    write_synthetic(path, bytes);
    auto t1 = clk::now();
    const long hwm0 = status_kb("VmHWM"), rss0 = status_kb("VmRSS");
    auto t2 = clk::now();
    size_t chars = 0, vocab = 0, ntr = 0, nv = 0, nt = 0;
    long hwm1 = -1, rss1 = -1;
    {
      DatasetOptions ds;
      ds.path = path;
      ds.format = DatasetFormat::Text8;
      CharCorpus c = load_char_corpus(ds);
      hwm1 = status_kb("VmHWM");
      ntr = c.train.size();
      nv = c.valid.size();
      nt = c.test.size();
      chars = ntr + nv + nt;
      vocab = c.vocab.size();
    }
    auto t3 = clk::now();
    rss1 = status_kb("VmRSS");
    const double secs = std::chrono::duration<double>(t3 - t2).count();
    r = {{"megabytes", megabytes},
         {"bytes", bytes},
         {"chars", chars},
         {"seconds", secs},
         {"mb_per_s", secs > 0 ? static_cast<double>(bytes) / 1e6 / secs : 0.0},
         {"vocab_size", vocab},
         {"train", ntr},
         {"valid", nv},
         {"test", nt},
         {"rss_before_mb", mb(rss0)},
         {"rss_after_mb", mb(rss1)},
         {"peak_rss_delta_mb", (hwm0 < 0 || hwm1 < 0) ? -1.0 : mb(hwm1 - hwm0)},
         {"peak_bytes_per_char",
          (hwm0 < 0 || hwm1 < 0 || chars == 0) ? -1.0 : static_cast<double>(hwm1 - hwm0) * 1024.0 / chars},
         {"write_seconds", std::chrono::duration<double>(t1 - t0).count()}};
  } catch (...) {
    ::unlink(path.c_str());
    ::rmdir(tdir.c_str());
    throw;
  }
  ::unlink(path.c_str());
  ::rmdir(tdir.c_str());
  return r;
}

}  // namespace cs
