#include "data/char_corpus.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "data/manifest.h"
#include "data/mapped_file.h"
#include "data/utf8.h"
#include "util/error.h"

namespace cs {

namespace {

constexpr size_t kMinSplitChars = 2;
constexpr size_t kSniffBytes = 64 * 1024;
constexpr double kMaxControlRatio = 0.05;
constexpr uint32_t kNumCodePoints = 0x110000;

// A mapped, checked UTF-8 file: `begin`/`end` exclude a leading BOM.
struct TextFile {
  std::unique_ptr<MappedFile> map;
  const unsigned char* begin = nullptr;
  const unsigned char* end = nullptr;
  size_t code_points = 0;  // of [begin, end)
  size_t crlf = 0;         // "\r\n" pairs (read as one "\n")
};

// Missing / empty / binary / invalid UTF-8 -> UserError naming the file.
TextFile open_text(const std::string& path) {
  TextFile f;
  f.map = std::make_unique<MappedFile>(path);
  const unsigned char* p = f.map->data();
  const size_t n = f.map->size();
  if (n == 0) throw UserError("dataset file '" + path + "' is empty");

  // Positions count from after a byte-order mark (data/utf8.h).
  const size_t skip = utf8_bom_size(p, n);

  // Binary sniff on the head: NUL bytes, or many C0 control characters other
  // than the whitespace ones (\t \n \v \f \r). Text in any script passes.
  const size_t sniff = std::min(n, kSniffBytes);
  size_t controls = 0;
  for (size_t i = 0; i < sniff; ++i) {
    const unsigned char c = p[i];
    if ((c < 0x20 && (c < 0x09 || c > 0x0D)) || c == 0x7F) ++controls;
  }
  // NUL bytes anywhere (memchr is vectorised, so this pass is cheap).
  if (const void* z = std::memchr(p, 0, n))
    throw UserError(nul_byte_message(p + skip, n - skip,
                                     static_cast<size_t>(static_cast<const unsigned char*>(z) - p) - skip, path));
  if (static_cast<double>(controls) > kMaxControlRatio * static_cast<double>(sniff))
    throw UserError("dataset file '" + path + "' looks binary (" + std::to_string(controls) +
                    " control characters in the first " + std::to_string(sniff) + " bytes); expected UTF-8 text");

  f.begin = p + skip;
  f.end = p + n;
  const size_t bad = utf8_validate(f.begin, n - skip, &f.code_points);
  if (bad != std::string::npos) throw UserError(utf8_error_message(f.begin, n - skip, bad, path));
  if (f.begin == f.end) throw UserError("dataset file '" + path + "' is empty (only a byte-order mark)");
  for (const unsigned char* q = f.begin; (q = static_cast<const unsigned char*>(std::memchr(q, '\r', f.end - q))); ++q)
    if (q + 1 < f.end && q[1] == '\n') ++f.crlf;
  return f;
}

// Decodes code points into provisional ids (order of first appearance), then
// remaps them to the final vocabulary in place. The train split is always
// decoded first, so the symbols seen in train are exactly the provisional ids
// created before end_train() was called.
class IdBuilder {
 public:
  IdBuilder() : prov_(kNumCodePoints, -1) {}

  inline int32_t id_of(uint32_t cp) {
    int32_t& id = prov_[cp];
    if (id < 0) {
      id = static_cast<int32_t>(cps_.size());
      cps_.push_back(cp);
    }
    return id;
  }
  void end_train() { train_symbols_ = cps_.size(); }

  // Build the vocabulary (or use the fixed one) and rewrite every split's ids.
  Vocab finish(const Vocab* fixed, std::initializer_list<std::vector<int32_t>*> splits) {
    Vocab vocab;
    std::vector<int32_t> final_id(cps_.size(), Vocab::kUnkId);
    if (fixed) {
      vocab = *fixed;
      for (size_t i = 0; i < cps_.size(); ++i) final_id[i] = vocab.id(utf8_encode(cps_[i]));
    } else {
      std::vector<size_t> order;
      for (size_t i = 0; i < train_symbols_; ++i) order.push_back(i);
      // Sorted by code point = sorted by UTF-8 bytes: ids do not depend on the
      // order of first appearance, so equal symbol sets give equal vocabularies.
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cps_[a] < cps_[b]; });
      for (size_t i : order) final_id[i] = vocab.add(utf8_encode(cps_[i]));
    }
    bool identity = true;
    for (size_t i = 0; i < final_id.size() && identity; ++i) identity = final_id[i] == static_cast<int32_t>(i);
    if (!identity) {
      const int32_t* map = final_id.data();
      for (auto* s : splits) {
        int32_t* d = s->data();
        const size_t n = s->size();
        for (size_t i = 0; i < n; ++i) d[i] = map[d[i]];
      }
    }
    return vocab;
  }

 private:
  std::vector<int32_t> prov_;  // code point -> provisional id (-1 unseen)
  std::vector<uint32_t> cps_;  // provisional id -> code point
  size_t train_symbols_ = 0;
};

void check_split(const std::string& path, const char* split, size_t have, bool allowed_empty, const std::string& hint) {
  if (have >= kMinSplitChars || (have == 0 && allowed_empty)) return;
  throw UserError("dataset file '" + path + "' is too small: the " + split + " split would hold " +
                  std::to_string(have) + " character(s), at least " + std::to_string(kMinSplitChars) + " are needed" +
                  hint);
}

// text and text8: one file, contiguous split [train | valid | test].
CharCorpus load_single(const std::string& path, DatasetFormat format, double vf, double tf, uint64_t max_chars,
                       const Vocab* fixed) {
  TextFile f = open_text(path);
  size_t n = f.code_points - f.crlf;
  if (max_chars > 0 && n > max_chars) n = static_cast<size_t>(max_chars);
  size_t nv, nt;
  const bool text8 = format == DatasetFormat::Text8;
  if (text8) {
    // 100M -> 90M/5M/5M exactly; other sizes keep 90/5/5.
    nv = n / 20;
    nt = n / 20;
  } else {
    nv = static_cast<size_t>(std::llround(static_cast<double>(n) * vf));
    nt = static_cast<size_t>(std::llround(static_cast<double>(n) * tf));
    if (nv + nt > n) nv = nt = 0;  // fractions are each <= 0.5 in the schema; guard anyway
  }
  const size_t ntr = n - nv - nt;
  const std::string hint = text8 ? std::string(" (text8 holds out 5% + 5%)")
                                 : std::string("; use a larger file or larger dataset fractions");
  check_split(path, "train", ntr, false, hint);
  check_split(path, "valid", nv, !text8 && vf == 0.0, hint);
  check_split(path, "test", nt, !text8 && tf == 0.0, hint);

  CharCorpus c;
  c.source = path;
  c.format = format;
  IdBuilder b;
  const unsigned char* p = f.begin;
  auto fill = [&](std::vector<int32_t>& out, size_t count) {
    out.resize(count);
    int32_t* d = out.data();
    int32_t* const end = d + count;
    // ASCII symbols go through a small local cache of provisional ids.
    int32_t ascii[128];
    std::fill(std::begin(ascii), std::end(ascii), -1);
    while (d < end) {
      const unsigned char ch = *p;
      if (ch < 0x80) {
        ++p;
        uint32_t cp = ch;
        if (cp == '\r' && p < f.end && *p == '\n') cp = *p++;  // CRLF -> LF
        int32_t id = ascii[cp];
        if (id < 0) id = ascii[cp] = b.id_of(cp);
        *d++ = id;
      } else {
        *d++ = b.id_of(utf8_next(p));
      }
    }
  };
  c.train.reserve(ntr);
  fill(c.train, ntr);
  b.end_train();
  fill(c.valid, nv);
  fill(c.test, nt);
  c.vocab = b.finish(fixed, {&c.train, &c.valid, &c.test});
  return c;
}

const char* kPtbSplits[3] = {"train", "valid", "test"};

// The three ptb.char files for a directory or for one of the files.
std::vector<std::string> ptb_files(const std::string& path) {
  std::string dir, prefix = "ptb.char.", suffix = ".txt";
  if (dir_exists(path)) {
    dir = path;
  } else {
    const std::string base = basename_of(path);
    const auto slash = path.find_last_of('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash);
    // "<prefix>{train,valid,test}<suffix>" with any prefix/suffix around the split word.
    bool found = false;
    for (const char* s : kPtbSplits) {
      const auto at = base.find(s);
      if (at != std::string::npos) {
        prefix = base.substr(0, at);
        suffix = base.substr(at + std::strlen(s));
        found = true;
        break;
      }
    }
    if (!found) {
      if (!file_exists(path)) throw UserError("dataset file '" + path + "' does not exist");
      throw UserError("dataset file '" + path +
                      "': ptb_char expects a directory holding ptb.char.{train,valid,test}.txt or one of those files");
    }
  }
  std::vector<std::string> out;
  for (const char* s : kPtbSplits) {
    const std::string f = join_path(dir, prefix + s + suffix);
    if (!file_exists(f))
      throw UserError("dataset file '" + f + "' does not exist (ptb_char needs the train, valid and test files in '" +
                      dir + "')");
    out.push_back(f);
  }
  return out;
}

// Parse a ptb.char file: space-separated single symbols, "_" = space, line end =
// "\n". With emit == nullptr it only counts the symbols (first pass).
template <typename Emit>
size_t parse_ptb(const TextFile& f, const std::string& path, size_t limit, Emit&& emit) {
  const unsigned char* p = f.begin;
  size_t produced = 0, line = 1;
  bool line_has_tokens = false;
  while (p < f.end && produced < limit) {
    const unsigned char c = *p;
    if (c == ' ' || c == '\r') {
      ++p;
      continue;
    }
    if (c == '\n') {
      if (line_has_tokens) {
        emit(uint32_t('\n'));
        ++produced;
      }
      line_has_tokens = false;
      ++line;
      ++p;
      continue;
    }
    const unsigned char* start = p;
    uint32_t cp = utf8_next(p);
    if (p < f.end && *p != ' ' && *p != '\n' && *p != '\r') {
      const unsigned char* e = p;
      while (e < f.end && *e != ' ' && *e != '\n' && *e != '\r' && e - start < 40) ++e;
      throw UserError("dataset file '" + path + "' line " + std::to_string(line) + ": token '" +
                      std::string(reinterpret_cast<const char*>(start), static_cast<size_t>(e - start)) +
                      "' is not a single character (ptb_char separates characters by spaces); use format text?");
    }
    emit(cp == '_' ? uint32_t(' ') : cp);
    ++produced;
    line_has_tokens = true;
  }
  if (line_has_tokens && produced < limit) {  // last line without a final newline
    emit(uint32_t('\n'));
    ++produced;
  }
  return produced;
}

CharCorpus load_ptb(const std::string& path, uint64_t max_chars, const Vocab* fixed) {
  const auto files = ptb_files(path);
  TextFile tf[3];
  size_t count[3];
  const size_t all = static_cast<size_t>(-1);
  for (int i = 0; i < 3; ++i) {
    tf[i] = open_text(files[i]);
    count[i] = parse_ptb(tf[i], files[i], all, [](uint32_t) {});
  }
  size_t limit[3] = {count[0], count[1], count[2]};
  const size_t total = count[0] + count[1] + count[2];
  if (max_chars > 0 && total > max_chars) {
    // Keep the corpus' own train:valid:test ratio.
    for (int i = 1; i < 3; ++i)
      limit[i] = static_cast<size_t>(static_cast<double>(count[i]) * static_cast<double>(max_chars) / total);
    limit[0] = static_cast<size_t>(max_chars) - limit[1] - limit[2];
  }
  for (int i = 0; i < 3; ++i)
    check_split(files[i], kPtbSplits[i], limit[i], false,
                max_chars > 0 ? std::string(" (after max_chars)") : std::string());
  CharCorpus c;
  c.source = path;
  c.format = DatasetFormat::PtbChar;
  IdBuilder b;
  std::vector<int32_t>* out[3] = {&c.train, &c.valid, &c.test};
  for (int i = 0; i < 3; ++i) {
    out[i]->reserve(limit[i]);
    parse_ptb(tf[i], files[i], limit[i], [&](uint32_t cp) { out[i]->push_back(b.id_of(cp)); });
    tf[i].map.reset();  // unmap as soon as a split is decoded
    if (i == 0) b.end_train();
  }
  c.vocab = b.finish(fixed, {&c.train, &c.valid, &c.test});
  return c;
}

}  // namespace

DatasetFormat detect_char_format(const std::string& path) { return detect_dataset_format(path, "char_lm"); }

CharCorpus load_char_corpus_file(const std::string& path, DatasetFormat format_in, double vf, double tf,
                                 uint64_t max_chars, const Vocab* fixed) {
  const DatasetFormat format = detect_dataset_format(path, "char_lm", check_format_for_task(format_in, "char_lm"));
  if (format == DatasetFormat::PtbChar) return load_ptb(path, max_chars, fixed);
  if (dir_exists(path))
    throw UserError("'" + path + "' is a directory; format " + to_string(format) + " expects a file");
  return load_single(path, format, vf, tf, max_chars, fixed);
}

CharCorpus load_char_corpus(const DatasetOptions& dataset, const Vocab* fixed_vocab) {
  const DatasetLocation loc = resolve_dataset(dataset);
  const double vf = dataset.valid_fraction, tf = dataset.test_fraction;
  if (vf < 0 || tf < 0 || vf + tf >= 1.0)
    throw UserError("dataset.valid_fraction + dataset.test_fraction must be >= 0 and < 1");
  const uint64_t mc = dataset.max_chars > 0 ? static_cast<uint64_t>(dataset.max_chars) : 0;
  return load_char_corpus_file(loc.path, loc.format, vf, tf, mc, fixed_vocab);
}

std::vector<std::pair<size_t, size_t>> line_spans(const std::vector<int32_t>& ids, int32_t newline_id) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t start = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == newline_id) {
      if (i > start) out.emplace_back(start, i);
      start = i + 1;
    }
  }
  if (ids.size() > start) out.emplace_back(start, ids.size());
  return out;
}

}  // namespace cs
