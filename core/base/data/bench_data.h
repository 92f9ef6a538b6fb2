// Loader benchmark for `cellscope-cli bench --data`.
#pragma once
#include <cstddef>

#include "config/json.h"

namespace cs {

// Writes a synthetic text8-like file (one line of lowercase words and spaces,
// `megabytes` * 10^6 bytes, so 100 gives text8's 100M characters) to a temp
// directory ($TMPDIR or /tmp), times load_char_corpus on it (format text8,
// file already in the page cache: this measures decoding, not the disk), and
// removes the file. Returns
//   {"megabytes", "bytes", "chars", "seconds", "mb_per_s", "vocab_size",
//    "train", "valid", "test", "rss_before_mb", "rss_after_mb", "peak_rss_delta_mb",
//    "peak_bytes_per_char", "write_seconds"}
// peak_rss_delta_mb is the growth of VmHWM (/proc/self/status) during the load;
// it includes the mapped file pages and the 4-byte ids. It reads 0 when the
// process had already peaked higher before the call.
json bench_char_loading(size_t megabytes);

}  // namespace cs
