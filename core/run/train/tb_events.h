// TensorBoard event files of a run (TENSORBOARD_NOTES.md): TFRecord framing with masked
// CRC32C, the few protobuf messages TensorBoard reads (Event, Summary, the text and hparams
// plugins' summaries) encoded by hand in wire format, and the two writers that use them: the
// live one the trainer feeds (RunTensorBoard) and the converter of finished runs
// (export_tensorboard). Qt-free, no LibTorch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/json.h"
#include "train/metrics.h"

namespace cs::tb {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), continuing from `crc` (0 to start).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
// TFRecord's masking: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t mask_crc(uint32_t crc);
// One TFRecord: uint64 length (little-endian), masked crc32c of those 8 bytes, the payload,
// masked crc32c of the payload.
std::string frame(const std::string& payload);

// The payloads of a TFRecord file's bytes, every CRC checked. A record cut short at the end (a
// writer killed mid-record, or a reader racing it) ends the list with `torn` set, as
// TensorBoard's reader stops there; a CRC mismatch elsewhere ends it with `problem` set.
// `good_bytes`: the length of the sound prefix.
struct Records {
  std::vector<std::string> payloads;
  size_t good_bytes = 0;
  bool torn = false;
  std::string problem;
};
Records read_records(const std::string& bytes);

// Serialized tensorboard.Event messages.
std::string file_version_event(double wall_time);  // file_version "brain.Event:2"
// One Event whose Summary holds one simple_value (float) per (tag, value).
std::string scalars_event(double wall_time, int64_t step, const std::vector<std::pair<std::string, double>>& values);
// A text-plugin summary: a scalar DT_STRING tensor holding `markdown`.
std::string text_event(double wall_time, int64_t step, const std::string& tag, const std::string& markdown);
// The hparams plugin's session_start_info: every leaf of `cfg` as "section.key" -> number,
// string or bool (arrays and objects as their JSON text; nulls left out).
std::string hparams_event(double wall_time, const json& cfg);

// What the resume logic needs of an Event: its step and wall time and the tag of its first
// summary value ("" for none). ok false for bytes that are not an Event this file wrote.
struct EventHead {
  bool ok = false;
  int64_t step = 0;
  double wall_time = 0;
  std::string first_tag;
};
EventHead decode_head(const std::string& payload);

// The scalars of one metrics.jsonl record: "<split>/<metric>" for every value (split "train"
// for training lines), plus train/epoch and train/train_flops (when known) on training lines.
// A non-finite value (null in metrics.jsonl) is written as NaN.
std::vector<std::pair<std::string, double>> record_scalars(const MetricsRecord& r);
// The split part of a record's tags: "train", "valid" or "test".
std::string record_split(const MetricsRecord& r);
// The resolved configuration as markdown (a code block of its JSON), for the text plugin.
std::string config_markdown(const json& cfg);

// events.out.tfevents.<secs>.<host>.<pid>.<n>; the host name made file-name safe.
std::string events_file_name(int64_t secs, const std::string& host, long pid, int n);
std::string host_name();
double unix_now();  // seconds since the epoch, system clock

// An events file opened for appending; every record is written with one write() and the file
// descriptor is not buffered, so a reader sees each record as soon as write() returns. Never
// throws: the first error is kept in error() and every later write is refused.
class EventFile {
 public:
  EventFile() = default;
  ~EventFile();
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;
  // A new file in `dir` (created if needed), named for `secs` but after every events file
  // already there (TensorBoard reads a directory's files in name order), and its first record:
  // the file_version event at `wall_time`.
  bool open(const std::string& dir, double wall_time);
  bool write_event(const std::string& event);
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }
  bool ok() const { return fd_ >= 0 && error_.empty(); }

 private:
  int fd_ = -1;
  std::string path_, error_;
};

// The live TensorBoard output of a run (RUN_DIR/tensorboard/), fed by the trainer. start():
//  - trims the events files already there to `step` (only those it can prove a Cellscope run wrote:
//    regular files starting with the records start() writes; anything else is left as it is and
//    named by take_notes()) (the step training continues from; their
//    records past it are the ones a killed process wrote after its last checkpoint and that
//    metrics.jsonl has dropped as well; a torn last record goes too), each rewritten atomically;
//  - opens a new events file: file_version, the hparams session_start_info and the resolved
//    configuration as text (at `step`);
//  - writes the records of `metrics` (metrics.jsonl as the trainer continues it) that the events
//    files lack: none for a new run, those of a run written before this feature or while it was
//    off, or the one record a kill fell between metrics.jsonl and the events file.
// add() writes one record. Nothing throws: the first I/O error is kept (take_error() hands it out
// once) and the writer stops; training goes on.
class RunTensorBoard {
 public:
  void start(const std::string& run_dir, const json& cfg, int64_t step, const std::vector<MetricsRecord>& metrics);
  void add(const MetricsRecord& r);
  // The first error, once ("" afterwards and when there was none).
  std::string take_error();
  // What start() left alone (a file in RUN_DIR/tensorboard that it cannot prove its own), once.
  std::vector<std::string> take_notes();
  bool active() const { return file_.ok(); }
  const std::string& path() const { return file_.path(); }

 private:
  EventFile file_;
  std::string error_;
  std::vector<std::string> notes_;
  bool reported_ = false;
  void fail(const std::string& what);
};

// The wall time a record is shown at: its own (metrics.jsonl "wall_time") where recorded, else
// `anchor` + its elapsed seconds (runs written before the field existed).
double record_wall_time(const MetricsRecord& r, double anchor);
// The anchor for a run directory's records without a wall time: summary.json's "started"
// (local time), else the modification time of metrics.jsonl less the last record's elapsed
// seconds, else the current time.
double run_time_anchor(const std::string& run_dir, const std::vector<MetricsRecord>& records);

// The runs `src` names: itself when it holds config.json, else its subdirectories that do
// (a workspace), in name order. UserError when there are none.
std::vector<std::string> runs_to_export(const std::string& src);
// A file-name-safe, non-empty version of a run's name (label or directory name).
std::string safe_run_name(const std::string& name);
// `cellscope-cli export tensorboard`: one subdirectory of `out_dir` per run of `src` (named by
// its label, else its directory name; made safe and unique), each with one events file built
// from config.json and metrics.jsonl. Every run is read and checked before anything is written;
// a subdirectory is built under a temporary name and renamed, so a failure leaves none
// half-written. An existing subdirectory of that name is refused (UserError). Returns the
// directories written.
std::vector<std::string> export_tensorboard(const std::string& src, const std::string& out_dir);

}  // namespace cs::tb
