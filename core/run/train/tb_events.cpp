#include "train/tb_events.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <set>

#include "train/run_store.h"
#include "util/error.h"
#include "util/own_paths.h"
#include "util/fsync.h"

namespace cs::tb {

// ------------------------------------------------------------------ CRC32C and framing

namespace {
const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> t = [] {
    std::array<uint32_t, 256> a{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      a[i] = c;
    }
    return a;
  }();
  return t;
}

void put_le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto& t = crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string frame(const std::string& payload) {
  std::string s;
  s.reserve(payload.size() + 16);
  put_le(s, payload.size(), 8);
  put_le(s, mask_crc(crc32c(s.data(), 8)), 4);
  s += payload;
  put_le(s, mask_crc(crc32c(payload.data(), payload.size())), 4);
  return s;
}

Records read_records(const std::string& bytes) {
  Records r;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) {
      r.torn = true;
      break;
    }
    const uint64_t len = get_le(b + at, 8);
    if (get_le(b + at + 8, 4) != mask_crc(crc32c(b + at, 8))) {
      r.problem = "record at byte " + std::to_string(at) + ": length CRC mismatch";
      break;
    }
    if (len > bytes.size() - at - 12 || bytes.size() - at - 12 - len < 4) {
      r.torn = true;
      break;
    }
    if (get_le(b + at + 12 + len, 4) != mask_crc(crc32c(b + at + 12, len))) {
      r.problem = "record at byte " + std::to_string(at) + ": data CRC mismatch";
      break;
    }
    r.payloads.emplace_back(bytes, at + 12, len);
    at += 16 + len;
    r.good_bytes = at;
  }
  return r;
}

// ------------------------------------------------------------------ protobuf wire format

namespace {
// Field numbers: tensorboard/compat/proto/{event,summary,tensor,tensor_shape,types}.proto and
// tensorboard/plugins/hparams/plugin_data.proto, google/protobuf/struct.proto.
// clang-format off
enum : int {
  kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5,  // Event
  kSummaryValue = 1,                                                              // Summary
  kValueTag = 1, kValueSimple = 2, kValueTensor = 8, kValueMetadata = 9,          // Summary.Value
  kMetaPluginData = 1, kMetaDisplayName = 2, kMetaDataClass = 4,                  // SummaryMetadata
  kPluginName = 1, kPluginContent = 2,                                            // .PluginData
  kTensorDtype = 1, kTensorShape = 2, kTensorStringVal = 8,                       // TensorProto
  kShapeDim = 2, kDimSize = 1,                                                    // TensorShapeProto, .Dim
  kHpVersion = 1, kHpSessionStart = 3,                                            // HParamsPluginData
  kStartHparams = 1, kStartTimeSecs = 5,                                          // SessionStartInfo
  kMapKey = 1, kMapValue = 2,                                                     // a map entry
  kPbNumber = 2, kPbString = 3, kPbBool = 4,                                      // google.protobuf.Value
};
// clang-format on
constexpr int kDtFloat = 1, kDtString = 7;
constexpr int kDataClassTensor = 2;

void varint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
}
void key(std::string& s, int field, int wire) {
  varint(s, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire));
}
void put_varint_field(std::string& s, int field, int64_t v) {
  key(s, field, 0);
  varint(s, static_cast<uint64_t>(v));  // negative int64: ten bytes, two's complement
}
void put_double(std::string& s, int field, double v) {
  key(s, field, 1);
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  put_le(s, bits, 8);
}
void put_float(std::string& s, int field, float v) {
  key(s, field, 5);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  put_le(s, bits, 4);
}
void put_bytes(std::string& s, int field, const std::string& v) {
  key(s, field, 2);
  varint(s, v.size());
  s += v;
}

std::string event_head(double wall_time, int64_t step) {
  std::string e;
  put_double(e, kEventWallTime, wall_time);
  put_varint_field(e, kEventStep, step);
  return e;
}

std::string summary_event(double wall_time, int64_t step, const std::string& values) {
  std::string e = event_head(wall_time, step);
  put_bytes(e, kEventSummary, values);
  return e;
}

std::string plugin_metadata(const std::string& plugin, const std::string& content, const std::string& display) {
  std::string pd, md;
  put_bytes(pd, kPluginName, plugin);
  if (!content.empty()) put_bytes(pd, kPluginContent, content);
  put_bytes(md, kMetaPluginData, pd);
  if (!display.empty()) put_bytes(md, kMetaDisplayName, display);
  put_varint_field(md, kMetaDataClass, kDataClassTensor);
  return md;
}

void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  for (auto& [k, v] : j.items()) {
    const std::string name = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object() && !v.empty()) flatten(v, name, out);
    else out[name] = v;
  }
}

// Minimal reader for decode_head.
struct Reader {
  const unsigned char* p;
  const unsigned char* end;
  bool bad = false;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) break;
      const unsigned char c = *p++;
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    bad = true;
    return 0;
  }
  // Skips a field of wire type `w`; returns the bytes of a length-delimited one.
  std::string field(int w) {
    if (w == 0) varint();
    else if (w == 1 || w == 5) {
      const size_t n = w == 1 ? 8 : 4;
      if (static_cast<size_t>(end - p) < n) bad = true;
      else p += n;
    } else if (w == 2) {
      const uint64_t n = varint();
      if (bad || n > static_cast<uint64_t>(end - p)) {
        bad = true;
        return {};
      }
      std::string s(reinterpret_cast<const char*>(p), n);
      p += n;
      return s;
    } else {
      bad = true;
    }
    return {};
  }
};

// The first field `want` (length-delimited) of a message, "" when absent.
std::string first_bytes(const std::string& msg, int want) {
  Reader r{reinterpret_cast<const unsigned char*>(msg.data()),
           reinterpret_cast<const unsigned char*>(msg.data()) + msg.size()};
  while (r.p < r.end && !r.bad) {
    const uint64_t k = r.varint();
    const int f = static_cast<int>(k >> 3), w = static_cast<int>(k & 7);
    std::string b = r.field(w);
    if (f == want && w == 2 && !r.bad) return b;
  }
  return {};
}
}  // namespace

std::string file_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  put_bytes(e, kEventFileVersion, "brain.Event:2");
  return e;
}

std::string scalars_event(double wall_time, int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::string summary;
  for (auto& [tag, v] : values) {
    std::string val;
    put_bytes(val, kValueTag, tag);
    put_float(val, kValueSimple, std::isfinite(v) ? static_cast<float>(v) : std::numeric_limits<float>::quiet_NaN());
    put_bytes(summary, kSummaryValue, val);
  }
  return summary_event(wall_time, step, summary);
}

std::string text_event(double wall_time, int64_t step, const std::string& tag, const std::string& markdown) {
  std::string tensor;
  put_varint_field(tensor, kTensorDtype, kDtString);
  put_bytes(tensor, kTensorShape, "");  // a scalar: no dims
  put_bytes(tensor, kTensorStringVal, markdown);
  std::string val;
  put_bytes(val, kValueTag, tag);
  put_bytes(val, kValueMetadata, plugin_metadata("text", "", tag));
  put_bytes(val, kValueTensor, tensor);
  std::string summary;
  put_bytes(summary, kSummaryValue, val);
  return summary_event(wall_time, step, summary);
}

std::string hparams_event(double wall_time, const json& cfg) {
  std::map<std::string, json> leaves;
  flatten(cfg, "", leaves);
  std::string start;
  for (auto& [name, v] : leaves) {
    std::string value;
    if (v.is_null()) continue;
    if (v.is_boolean()) put_varint_field(value, kPbBool, v.get<bool>() ? 1 : 0);
    else if (v.is_number()) put_double(value, kPbNumber, v.get<double>());
    else if (v.is_string()) put_bytes(value, kPbString, v.get<std::string>());
    else put_bytes(value, kPbString, v.dump());
    std::string entry;
    put_bytes(entry, kMapKey, name);
    put_bytes(entry, kMapValue, value);
    put_bytes(start, kStartHparams, entry);
  }
  put_double(start, kStartTimeSecs, wall_time);
  std::string plugin_data;
  put_varint_field(plugin_data, kHpVersion, 0);
  put_bytes(plugin_data, kHpSessionStart, start);
  // The tensor the hparams plugin's own summaries carry: DT_FLOAT of shape [0].
  std::string dim, shape, tensor;
  put_varint_field(dim, kDimSize, 0);
  put_bytes(shape, kShapeDim, dim);
  put_varint_field(tensor, kTensorDtype, kDtFloat);
  put_bytes(tensor, kTensorShape, shape);
  std::string val;
  put_bytes(val, kValueTag, "_hparams_/session_start_info");
  put_bytes(val, kValueMetadata, plugin_metadata("hparams", plugin_data, ""));
  put_bytes(val, kValueTensor, tensor);
  std::string summary;
  put_bytes(summary, kSummaryValue, val);
  return summary_event(wall_time, 0, summary);
}

EventHead decode_head(const std::string& payload) {
  EventHead h;
  Reader r{reinterpret_cast<const unsigned char*>(payload.data()),
           reinterpret_cast<const unsigned char*>(payload.data()) + payload.size()};
  bool any = false;
  while (r.p < r.end && !r.bad) {
    const uint64_t k = r.varint();
    const int f = static_cast<int>(k >> 3), w = static_cast<int>(k & 7);
    if (f == kEventWallTime && w == 1 && r.end - r.p >= 8) {
      const uint64_t bits = get_le(r.p, 8);
      std::memcpy(&h.wall_time, &bits, 8);
      r.p += 8;
      any = true;
    } else if (f == kEventStep && w == 0) {
      h.step = static_cast<int64_t>(r.varint());
    } else if (f == kEventSummary && w == 2) {
      const std::string s = r.field(w);
      h.first_tag = first_bytes(first_bytes(s, kSummaryValue), kValueTag);
    } else {
      r.field(w);
    }
  }
  h.ok = any && !r.bad;
  return h;
}

// ------------------------------------------------------------------ records, names, times

std::string record_split(const MetricsRecord& r) { return r.eval ? (r.split.empty() ? "eval" : r.split) : "train"; }

std::vector<std::pair<std::string, double>> record_scalars(const MetricsRecord& r) {
  const std::string split = record_split(r);
  std::vector<std::pair<std::string, double>> out;
  for (auto& [k, v] : r.values) out.emplace_back(split + "/" + k, v);
  if (!r.eval) {
    out.emplace_back("train/epoch", r.epoch);
    if (r.has_train_flops()) out.emplace_back("train/train_flops", r.train_flops);
  }
  return out;
}

std::string config_markdown(const json& cfg) {
  // An indented block: markdown shows it as code, line for line.
  std::string md = "Resolved configuration (config.json):\n\n";
  const std::string text = cfg.dump(2);
  size_t at = 0;
  while (at <= text.size()) {
    const size_t nl = text.find('\n', at);
    md += "    " + text.substr(at, nl == std::string::npos ? std::string::npos : nl - at) + "\n";
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return md;
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  return buf;
}

std::string events_file_name(int64_t secs, const std::string& host, long pid, int n) {
  std::string h;
  for (char c : host) h += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_') ? c : '_';
  if (h.empty()) h = "localhost";
  return "events.out.tfevents." + std::to_string(secs) + "." + h + "." + std::to_string(pid) + "." + std::to_string(n);
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

double record_wall_time(const MetricsRecord& r, double anchor) {
  return r.has_wall_time() ? r.wall_time : anchor + r.elapsed;
}

double run_time_anchor(const std::string& run_dir, const std::vector<MetricsRecord>& records) {
  const std::string summary = join_path(run_dir, "summary.json");
  if (file_exists(summary)) {
    try {
      const json j = parse_json(read_file(summary), summary);
      const std::string started = j.is_object() ? j.value("started", "") : "";
      std::tm tm{};
      const char* end = strptime(started.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
      if (end && *end == '\0') {
        tm.tm_isdst = -1;  // now_iso() writes local time
        const std::time_t t = std::mktime(&tm);
        if (t != static_cast<std::time_t>(-1)) return static_cast<double>(t);
      }
    } catch (const std::exception&) {
      // a damaged summary: fall back to the file time
    }
  }
  struct stat st {};
  if (::stat(join_path(run_dir, "metrics.jsonl").c_str(), &st) == 0) {
    const double last = records.empty() ? 0.0 : records.back().elapsed;
    return static_cast<double>(st.st_mtime) - last;
  }
  return unix_now();
}

// ------------------------------------------------------------------ EventFile

namespace {
const std::string kPrefix = "events.out.tfevents.";

// The seconds field of an events file name, -1 when it is not one.
int64_t name_secs(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return -1;
  const size_t b = kPrefix.size(), e = name.find('.', b);
  if (e == std::string::npos || e == b) return -1;
  int64_t v = 0;
  for (size_t i = b; i < e; ++i) {
    if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

std::vector<std::string> events_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!dir_exists(dir)) return out;
  for (auto& n : list_dir(dir))
    if (name_secs(n) >= 0 && n.find(".tmp.") == std::string::npos) out.push_back(n);
  return out;
}

bool write_all(int fd, const std::string& s, std::string* err) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *err = n < 0 ? std::strerror(errno) : "short write";
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}
// A temporary copy that atomic_write of an events file leaves when its process is killed:
// "events.out.tfevents.<...>.tmp.<pid>", the only names start() removes besides its own trims.
bool own_temp_name(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return false;
  const size_t t = name.rfind(".tmp.");
  if (t == std::string::npos || t + 5 == name.size()) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(t + 5), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool regular_file_no_link(const std::string& p, std::string* why) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) {
    *why = std::strerror(errno);
    return false;
  }
  if (S_ISLNK(st.st_mode)) *why = "a symbolic link";
  else if (!S_ISREG(st.st_mode)) *why = "not a regular file";
  else return true;
  return false;
}

// Reads the events file `p` when it is provably one that a Cellscope run wrote: a regular file
// (not a link, a FIFO or a device: opened with O_NOFOLLOW | O_NONBLOCK and checked again by
// fstat), whole records with valid checksums (a torn last record allowed: a kill while writing),
// the first a file_version event and the second the hparams session_start_info that
// RunTensorBoard::start writes next. Anything else is not its own to trim (#52: a foreign file was
// rewritten, an unreadable one truncated, a FIFO hung the resume, a link to /dev/zero was read until
// memory ran out): false, and why.
bool read_own_events_file(const std::string& p, std::string* bytes, Records* rec, std::string* why) {
  if (!regular_file_no_link(p, why)) return false;
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = std::string("cannot read it: ") + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *why = "not a regular file";
    return false;
  }
  bytes->clear();
  bytes->reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = std::string("cannot read it: ") + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    bytes->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  *rec = read_records(*bytes);
  if (!rec->problem.empty()) {
    *why = "not a readable events file (" + rec->problem + ")";
    return false;
  }
  std::string version;
  put_bytes(version, kEventFileVersion, "brain.Event:2");
  const bool starts_as_ours =
      rec->payloads.size() >= 2 && rec->payloads[0].size() >= version.size() &&
      rec->payloads[0].compare(rec->payloads[0].size() - version.size(), version.size(), version) == 0 &&
      decode_head(rec->payloads[1]).first_tag == "_hparams_/session_start_info";
  if (!starts_as_ours) {
    *why = "not written by Cellscope (it does not start with the file_version and hparams records a run writes)";
    return false;
  }
  return true;
}
}  // namespace

EventFile::~EventFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool EventFile::open(const std::string& dir, double wall_time) {
  try {
    make_dirs(dir);
  } catch (const std::exception& e) {
    error_ = e.what();
    return false;
  }
  // Named after every file already there: TensorBoard reads them in name order, and a resumed
  // run's records must come after the earlier ones.
  int64_t secs = static_cast<int64_t>(std::floor(wall_time));
  for (auto& n : events_files(dir)) secs = std::max(secs, name_secs(n) + 1);
  static std::atomic<int> counter{0};  // several trainers may run in one process (the workbench)
  for (int tries = 0; tries < 1000; ++tries) {
    const std::string p = join_path(dir, events_file_name(secs, host_name(), static_cast<long>(::getpid()), counter++));
    fd_ = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      path_ = p;
      return write_event(file_version_event(wall_time));
    }
    if (errno != EEXIST) {
      error_ = "cannot create '" + p + "': " + std::strerror(errno);
      return false;
    }
  }
  error_ = "cannot create an events file in '" + dir + "'";
  return false;
}

bool EventFile::write_event(const std::string& event) {
  if (!ok()) {
    if (error_.empty()) error_ = "no events file open";
    return false;
  }
  std::string err;
  if (!write_all(fd_, frame(event), &err)) {
    error_ = "cannot write '" + path_ + "': " + err;
    return false;
  }
  return true;
}

// ------------------------------------------------------------------ RunTensorBoard

void RunTensorBoard::fail(const std::string& what) {
  if (error_.empty()) error_ = what;
}

std::vector<std::string> RunTensorBoard::take_notes() {
  std::vector<std::string> n;
  n.swap(notes_);
  return n;
}

std::string RunTensorBoard::take_error() {
  if (reported_ || error_.empty()) return "";
  reported_ = true;
  return error_;
}

void RunTensorBoard::start(const std::string& run_dir, const json& cfg, int64_t step,
                           const std::vector<MetricsRecord>& metrics) {
  const std::string dir = join_path(run_dir, "tensorboard");
  // How many records of each (step, split) the events files hold, after trimming them to `step`.
  std::map<std::pair<int64_t, std::string>, int64_t> have;
  try {
    // A process killed while rewriting a file below left its temporary copy (the run directory is
    // locked by this process, so no other one is writing them).
    // Only files this program provably wrote are removed or rewritten (#52): its own temporary
    // names, regular files only; events files that read_own_events_file accepts. Anything else in
    // the folder is left as it is, and said once in the run's log (notes()).
    std::string why;
    if (dir_exists(dir))
      for (auto& name : list_dir(dir))
        if (own_temp_name(name) && regular_file_no_link(join_path(dir, name), &why))
          ::unlink(join_path(dir, name).c_str());
    for (auto& name : events_files(dir)) {
      const std::string p = join_path(dir, name);
      std::string bytes;
      Records rec;
      if (!read_own_events_file(p, &bytes, &rec, &why)) {
        notes_.push_back("left '" + p + "' as it is: " + why);
        continue;
      }
      std::string kept;
      for (auto& payload : rec.payloads) {
        const EventHead h = decode_head(payload);
        if (h.ok && h.step > step) continue;
        kept += frame(payload);
        if (h.ok && !h.first_tag.empty()) {
          const auto slash = h.first_tag.find('/');
          ++have[{h.step, h.first_tag.substr(0, slash)}];
        }
      }
      if (kept.size() != bytes.size()) atomic_write(p, kept);
    }
  } catch (const std::exception& e) {
    fail(std::string("cannot trim the events files of '") + dir + "': " + e.what());
    return;
  }
  const double now = unix_now();
  if (!file_.open(dir, now)) {
    fail(file_.error());
    return;
  }
  if (!file_.write_event(hparams_event(now, cfg)) ||
      !file_.write_event(text_event(now, step, "config", config_markdown(cfg)))) {
    fail(file_.error());
    return;
  }
  // The records metrics.jsonl holds beyond what the events files hold, per (step, split): the
  // last ones of each group (the earlier ones are those already written).
  std::map<std::pair<int64_t, std::string>, int64_t> total;
  for (auto& r : metrics) ++total[{r.step, record_split(r)}];
  std::map<std::pair<int64_t, std::string>, int64_t> seen;
  const bool need_anchor = std::any_of(metrics.begin(), metrics.end(), [](auto& r) { return !r.has_wall_time(); });
  const double anchor = need_anchor ? run_time_anchor(run_dir, metrics) : 0;
  for (auto& r : metrics) {
    const auto k = std::make_pair(r.step, record_split(r));
    const int64_t index = seen[k]++;
    if (index < have[k]) continue;
    if (!file_.write_event(scalars_event(record_wall_time(r, anchor), r.step, record_scalars(r)))) {
      fail(file_.error());
      return;
    }
  }
}

void RunTensorBoard::add(const MetricsRecord& r) {
  if (!file_.ok()) return;
  if (!file_.write_event(scalars_event(record_wall_time(r, unix_now() - r.elapsed), r.step, record_scalars(r))))
    fail(file_.error());
}

// ------------------------------------------------------------------ export

std::vector<std::string> runs_to_export(const std::string& src) {
  if (!dir_exists(src)) throw UserError("'" + src + "' is not a directory (expected a run directory or a workspace)");
  if (file_exists(join_path(src, "config.json"))) return {src};
  std::vector<std::string> out;
  for (auto& n : list_dir(src)) {
    if (n.empty() || n[0] == '.') continue;  // a run being created (.<name>.creating-XXXXXX)
    const std::string d = join_path(src, n);
    if (dir_exists(d) && file_exists(join_path(d, "config.json"))) out.push_back(d);
  }
  if (out.empty())
    throw UserError("'" + src +
                    "' is neither a run directory (no config.json) nor a workspace (no subdirectory holds a "
                    "config.json)");
  return out;
}

std::string safe_run_name(const std::string& name) {
  std::string s;
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (ok) s += c;
    else if (s.empty() || s.back() != '_') s += '_';
  }
  while (!s.empty() && (s.back() == '_' || s.back() == '.')) s.pop_back();
  while (!s.empty() && s.front() == '.') s.erase(0, 1);
  return s.empty() ? "run" : s;
}

std::vector<std::string> export_tensorboard(const std::string& src, const std::string& out_dir) {
  struct Run {
    std::string dir, name;
    json cfg;
    std::vector<MetricsRecord> records;
  };
  std::vector<Run> runs;
  std::set<std::string> taken;
  for (auto& d : runs_to_export(src)) {
    RunStore store(d);
    Run r;
    r.dir = d;
    r.cfg = store.read_config();  // UserError naming the file when it is not JSON
    if (!r.cfg.is_object()) throw UserError("'" + store.path("config.json") + "' is not a JSON object");
    r.records = read_metrics(store.path("metrics.jsonl"));  // UserError "<path>:<line>: ..."
    std::string base = store.read_label();
    if (base.empty()) {
      std::string dn = d;
      while (dn.size() > 1 && dn.back() == '/') dn.pop_back();
      base = basename_of(dn);
    }
    base = safe_run_name(base);
    r.name = base;
    for (int i = 2; taken.count(r.name); ++i) r.name = base + "-" + std::to_string(i);
    taken.insert(r.name);
    const std::string target = join_path(out_dir, r.name);
    if (dir_exists(target) || file_exists(target))
      throw UserError("'" + target + "' already exists (exported before?); remove it or choose another --out");
    runs.push_back(std::move(r));
  }
  make_dirs(out_dir);
  std::vector<std::string> written;
  for (auto& r : runs) {
    const double anchor = run_time_anchor(r.dir, r.records);
    const double start = r.records.empty() ? anchor : std::min(anchor, record_wall_time(r.records.front(), anchor));
    const std::string target = join_path(out_dir, r.name);
    // A folder of this call's own (mkdtemp): the pid-named one it used before was emptied first,
    // whatever a user (or a run labelled so) kept under that name (#52).
    const std::string tmp = make_temp_dir_beside(target, "tmp");
    auto cleanup = [&] {
      for (auto& n : dir_exists(tmp) ? list_dir(tmp) : std::vector<std::string>{}) ::unlink(join_path(tmp, n).c_str());
      ::rmdir(tmp.c_str());
    };
    std::string bad;
    {
      EventFile f;
      bool ok = f.open(tmp, start) && f.write_event(hparams_event(start, r.cfg)) &&
                f.write_event(text_event(start, 0, "config", config_markdown(r.cfg)));
      for (size_t i = 0; ok && i < r.records.size(); ++i)
        ok = f.write_event(
            scalars_event(record_wall_time(r.records[i], anchor), r.records[i].step, record_scalars(r.records[i])));
      if (!ok) bad = f.error();
    }
    if (bad.empty()) {
      fsync_dir(tmp);
      if (::rename(tmp.c_str(), target.c_str()) != 0)
        bad = "cannot rename to '" + target + "': " + std::strerror(errno);
    }
    if (!bad.empty()) {
      cleanup();
      throw UserError("exporting '" + r.dir + "' to '" + target + "': " + bad);
    }
    written.push_back(target);
  }
  fsync_dir(out_dir);
  return written;
}

}  // namespace cs::tb
