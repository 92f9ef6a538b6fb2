// TensorBoard event files (core/run/train/tb_events.h, TENSORBOARD_NOTES.md): CRC32C against
// the iSCSI check vectors, TFRecord framing, and real runs read back by an independent reader
// (tests/core/tb_read.py: Python's protobuf with classes protoc compiles from
// tests/core/tb_proto/tb_minimal.proto) and compared with metrics.jsonl value by value.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "corpus_fixture.h"
#include "harness.h"
#include "tasks/task.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "train/tb_events.h"
#include "train/trainer.h"
#include "util/error.h"

namespace test_tensorboard {  // this file's own names in a unity build (tests/README.md)

using cs::json;
namespace tb = cs::tb;

namespace {

json small_config(const std::string& corpus, int steps, bool tensorboard = true) {
  return cs::load_and_resolve({{"task", "char_lm"},
                               {"dataset", {{"path", corpus}}},
                               {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 16}}},
                               {"training",
                                {{"batch", 4},
                                 {"bptt", 16},
                                 {"steps", steps},
                                 {"eval_every", 10},
                                 {"log_every", 5},
                                 {"checkpoint_every", 10},
                                 {"seed", 5},
                                 {"threads", 1},
                                 {"tensorboard", tensorboard}}}});
}

// A new run in `dir`, trained until `stop_at` (a stop, with its checkpoint) or the end.
void train_new(const json& cfg, const std::string& dir, int stop_at = -1,
               const std::function<void(const cs::MetricsRecord&)>& on_metrics = {}) {
  cs::seed_everything(cfg["training"]["seed"].get<uint64_t>());
  auto store = std::make_shared<cs::RunStore>(dir);
  auto task = cs::make_task(cfg, "");
  store->create();
  store->write_config(cfg);
  cs::atomic_write(store->path("vocab"), task->vocab_text());
  cs::Trainer t(cfg, std::move(task), store);
  cs::TrainerControl control;
  cs::TrainerCallbacks cb;
  cb.on_progress = [&](const cs::Progress& p) {
    if (p.step == stop_at) control.stop = true;
  };
  cb.on_metrics = on_metrics;
  t.run(&control, cb);
}

void resume(const json& cfg, const std::string& dir) {
  auto store = std::make_shared<cs::RunStore>(dir);
  cs::Trainer t(cfg, cs::make_task(cfg, dir), store);
  t.resume();
  t.run();
}

std::vector<std::string> events_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    if (it->path().filename().string().rfind("events.out.tfevents.", 0) == 0) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Why the Python reader cannot run here ("" when it can).
std::string reader_missing() {
  if (std::system("/usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1") != 0)
    return "/usr/bin/python3 lacks google.protobuf (Debian package python3-protobuf)";
  if (std::system("protoc --version >/dev/null 2>&1") != 0)
    return "protoc is missing (Debian package protobuf-compiler)";
  return "";
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// tb_read.py's JSON for these files; an empty object (and a test failure) when it fails.
json read_back(const std::vector<std::string>& files) {
  std::string cmd = "/usr/bin/python3 " + quoted(cstest::source_dir() + "/tests/core/tb_read.py") + " " +
                    quoted(cstest::source_dir() + "/tests/core/tb_proto");
  for (auto& f : files) cmd += " " + quoted(f);
  cmd += " 2>&1";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int rc = ::pclose(p);
    EXPECT_EQ(rc, 0) << out;
  }
  json j = cstest::json_object(out);
  EXPECT_TRUE(j.contains("files")) << out;
  return j;
}

// The events of every file, in file order.
std::vector<json> all_events(const json& read) {
  std::vector<json> out;
  for (auto& f : read.value("files", json::array()))
    for (auto& e : f.value("events", json::array())) out.push_back(e);
  return out;
}

// The scalars one metrics.jsonl line must give, worked out here from the JSON (not through the
// writer's record_scalars): tag -> the value as float (NaN for null).
std::map<std::string, double> expected_scalars(const json& line) {
  const bool eval = line.value("eval", false);
  const std::string split = eval ? line.value("split", std::string()) : "train";
  std::map<std::string, double> out;
  for (auto& [k, v] : line.items()) {
    if (k == "step" || k == "epoch" || k == "elapsed" || k == "eval" || k == "split" || k == "wall_time" ||
        k == "train_flops")
      continue;
    out[split + "/" + k] = v.is_null() ? NAN : static_cast<double>(static_cast<float>(v.get<double>()));
  }
  if (!eval) {
    out["train/epoch"] = static_cast<float>(line.at("epoch").get<double>());
    if (line.contains("train_flops"))
      out["train/train_flops"] = static_cast<float>(line.at("train_flops").get<double>());
  }
  return out;
}

// Every scalar event of `events` against the lines of metrics.jsonl, in order: step, wall time
// (`wall(line)`) and every value exactly.
void expect_scalars_match(const std::vector<json>& events, const std::vector<json>& lines,
                          const std::function<double(const json&)>& wall) {
  std::vector<json> scal;
  for (auto& e : events)
    if (e.contains("scalars")) scal.push_back(e);
  ASSERT_EQ(scal.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const json& e = scal[i];
    const json& l = lines[i];
    ASSERT_EQ(e.at("step").get<int64_t>(), l.at("step").get<int64_t>()) << i;
    char msg[96];
    std::snprintf(msg, sizeof msg, "wall time %.6f, expected %.6f", e.at("wall_time").get<double>(), wall(l));
    ASSERT_EQ(e.at("wall_time").get<double>(), wall(l)) << msg << " for " << l.dump();
    std::map<std::string, double> got;
    for (auto& tv : e.at("scalars")) {
      ASSERT_EQ(got.count(tv[0].get<std::string>()), 0u) << "tag twice in one event";
      got[tv[0].get<std::string>()] = tv[1].is_null() ? NAN : tv[1].get<double>();
    }
    const auto want = expected_scalars(l);
    ASSERT_EQ(got.size(), want.size()) << l.dump();
    for (auto& [tag, v] : want) {
      ASSERT_EQ(got.count(tag), 1u) << tag << " missing at step " << l["step"];
      if (std::isnan(v)) ASSERT_TRUE(std::isnan(got[tag])) << tag;
      else ASSERT_EQ(got[tag], v) << tag << " at step " << l["step"];
    }
  }
}

std::vector<json> metrics_lines(const std::string& run_dir) { return cs::read_json_lines(run_dir + "/metrics.jsonl"); }

void expect_header_events(const std::vector<json>& events, const json& cfg) {
  ASSERT_GE(events.size(), 3u);
  ASSERT_EQ(events[0].value("file_version", std::string()), "brain.Event:2");
  const json hp = events[1].value("hparams", json::object());
  ASSERT_EQ(hp.value("tag", std::string()), "_hparams_/session_start_info");
  ASSERT_EQ(hp.value("tensor_dtype", 0), 1);  // DT_FLOAT of shape [0], as the hparams plugin writes
  ASSERT_EQ(hp.value("tensor_dims", json::array()), json::array({0}));
  const json v = hp.value("values", json::object());
  ASSERT_EQ(v.value("training.lr", json()), json::array({"number_value", cfg["training"]["lr"]}));
  ASSERT_EQ(v.value("model.cell", json()), json::array({"string_value", "gru"}));
  ASSERT_EQ(v.value("model.hidden", json()), json::array({"number_value", 16.0}));
  ASSERT_EQ(v.value("training.tensorboard", json()), json::array({"bool_value", cfg["training"]["tensorboard"]}));
  // one value per leaf of the configuration that is not null
  size_t leaves = 0;
  std::function<void(const json&)> count = [&](const json& j) {
    for (auto& [k, x] : j.items()) {
      if (x.is_object() && !x.empty()) count(x);
      else if (!x.is_null()) ++leaves;
    }
  };
  count(cfg);
  ASSERT_EQ(v.size(), leaves);
  ASSERT_GT(hp.value("start_time_secs", 0.0), 1.6e9);
  const json texts = events[2].value("texts", json::array());
  ASSERT_EQ(texts.size(), 1u);
  ASSERT_EQ(texts[0].value("tag", std::string()), "config");
  ASSERT_EQ(texts[0].value("dtype", 0), 7);  // DT_STRING
  ASSERT_EQ(texts[0].value("dims", json({1})), json::array());
  ASSERT_EQ(texts[0].value("data_class", 0), 2);  // DATA_CLASS_TENSOR
  ASSERT_EQ(texts[0]["text"].size(), 1u);
  const std::string md = texts[0]["text"][0].get<std::string>();
  // every line of the configuration's JSON, as an indented code block
  for (auto& line : cstest::split(cfg.dump(2), '\n')) ASSERT_TRUE(cstest::contains(md, "    " + line + "\n")) << line;
}

}  // namespace

TEST(Tensorboard, crc32cCheckVectors) {
  // RFC 3720 (iSCSI), B.4
  const std::string zeros(32, '\0'), ones(32, '\xff');
  std::string up, down;
  for (int i = 0; i < 32; ++i) {
    up += static_cast<char>(i);
    down += static_cast<char>(31 - i);
  }
  ASSERT_EQ(tb::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  ASSERT_EQ(tb::crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  ASSERT_EQ(tb::crc32c(up.data(), up.size()), 0x46DD794Eu);
  ASSERT_EQ(tb::crc32c(down.data(), down.size()), 0x113FDB5Cu);
  ASSERT_EQ(tb::crc32c("123456789", 9), 0xE3069283u);
  ASSERT_EQ(tb::crc32c("", 0), 0u);
  // continued over pieces = over the whole
  ASSERT_EQ(tb::crc32c("6789", 4, tb::crc32c("12345", 5)), 0xE3069283u);
  // the mask: rotate right by 15, add 0xa282ead8 (mod 2^32)
  ASSERT_EQ(tb::mask_crc(0u), 0xa282ead8u);
  ASSERT_EQ(tb::mask_crc(0xE3069283u), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u);
  ASSERT_EQ(tb::mask_crc(0x00008000u), 0xa282ead9u);
}

TEST(Tensorboard, framingAndTornRecords) {
  const std::string payload = "hello, event";
  const std::string f = tb::frame(payload);
  ASSERT_EQ(f.size(), payload.size() + 16);
  auto le = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(f[at + i])) << (8 * i);
    return v;
  };
  ASSERT_EQ(le(0, 8), payload.size());
  ASSERT_EQ(le(8, 4), tb::mask_crc(tb::crc32c(f.data(), 8)));
  ASSERT_EQ(f.substr(12, payload.size()), payload);
  ASSERT_EQ(le(12 + payload.size(), 4), tb::mask_crc(tb::crc32c(payload.data(), payload.size())));

  std::string file;
  const std::vector<std::string> payloads = {"a", std::string(300, 'x'), "", "last one"};
  for (auto& p : payloads) file += tb::frame(p);
  auto r = tb::read_records(file);
  ASSERT_EQ(r.payloads, payloads);
  ASSERT_FALSE(r.torn);
  ASSERT_TRUE(r.problem.empty());
  ASSERT_EQ(r.good_bytes, file.size());
  // cut anywhere inside the last record: the others are read, the last is torn
  const size_t last = tb::frame("last one").size();
  for (size_t cut = 1; cut < last; ++cut) {
    auto t = tb::read_records(file.substr(0, file.size() - cut));
    ASSERT_TRUE(t.torn) << cut;
    ASSERT_TRUE(t.problem.empty()) << cut;
    ASSERT_EQ(t.payloads, std::vector<std::string>(payloads.begin(), payloads.end() - 1)) << cut;
    ASSERT_EQ(t.good_bytes, file.size() - last);
  }
  // a damaged byte is a CRC mismatch, not a torn record
  std::string bad = file;
  bad[tb::frame("a").size() + 20] ^= 1;
  auto b = tb::read_records(bad);
  ASSERT_FALSE(b.problem.empty());
  ASSERT_EQ(b.payloads.size(), 1u);
  // the event head the resume logic reads
  const auto h = tb::decode_head(tb::scalars_event(1234.5, 77, {{"valid/bpc", 2.5}}));
  ASSERT_TRUE(h.ok);
  ASSERT_EQ(h.step, 77);
  ASSERT_EQ(h.wall_time, 1234.5);
  ASSERT_EQ(h.first_tag, "valid/bpc");
}

TEST(Tensorboard, liveRunReadBackMatchesMetrics) {
  const std::string missing = reader_missing();
  if (!missing.empty()) FAIL() << missing << " (packaging/setup.sh installs it)";
  const auto corpus = cstest::write_text_fixture("tb_live.txt", 12000);
  const json cfg = small_config(corpus, 20);
  const std::string dir = cstest::temp_dir() + "/tb_live";
  // Live: when the trainer hands out a point, its event is already in the file (one write per
  // record, no buffer), after the three header records and every earlier point.
  size_t points = 0;
  std::string live_problem;
  train_new(cfg, dir, -1, [&](const cs::MetricsRecord& r) {
    ++points;
    const auto f = events_files(dir + "/tensorboard");
    const auto rec = f.size() == 1 ? tb::read_records(cstest::read_text(f[0])) : tb::Records{};
    const auto h = rec.payloads.empty() ? tb::EventHead{} : tb::decode_head(rec.payloads.back());
    if (live_problem.empty() &&
        (rec.payloads.size() != 3 + points || rec.torn || !h.ok || h.step != r.step || h.wall_time != r.wall_time))
      live_problem = "point " + std::to_string(points) + " (step " + std::to_string(r.step) +
                     "): " + std::to_string(rec.payloads.size()) + " records in the events file";
  });
  ASSERT_EQ(live_problem, "");
  ASSERT_GE(points, 6u);
  const auto files = events_files(dir + "/tensorboard");
  ASSERT_EQ(files.size(), 1u);
  const auto lines = metrics_lines(dir);
  ASSERT_GE(lines.size(), 6u);  // 4 training lines, 2 valid, 1 test
  const json read = read_back(files);
  ASSERT_FALSE(read["files"][0].value("torn", true));
  const auto events = all_events(read);
  expect_header_events(events, cfg);
  expect_scalars_match(events, lines, [](const json& l) { return l.at("wall_time").get<double>(); });
  // the tags a user looks for
  std::set<std::string> tags;
  for (auto& e : events)
    for (auto& tv : e.value("scalars", json::array())) tags.insert(tv[0].get<std::string>());
  for (auto t : {"train/loss", "train/bpc", "train/lr", "train/throughput", "valid/bpc", "test/bpc"})
    ASSERT_EQ(tags.count(t), 1u) << t;

  // A torn last record (a writer killed mid-record, or read while being written) is skipped
  // and every earlier record is read.
  for (int cut : {1, 3, 9}) {
    const std::string copy = cstest::temp_dir() + "/torn.events";
    const std::string bytes = cstest::read_text(files[0]);
    cstest::write_text(copy, bytes.substr(0, bytes.size() - cut));
    const json t = read_back({copy});
    ASSERT_TRUE(t["files"][0].value("torn", false)) << cut;
    const auto te = all_events(t);
    ASSERT_EQ(te.size(), events.size() - 1) << cut;
    for (size_t i = 0; i < te.size(); ++i) ASSERT_EQ(te[i], events[i]);
  }
}

TEST(Tensorboard, resumeAppendsAFileWithoutDuplicates) {
  const std::string missing = reader_missing();
  if (!missing.empty()) FAIL() << missing << " (packaging/setup.sh installs it)";
  const auto corpus = cstest::write_text_fixture("tb_resume.txt", 12000);
  const json cfg = small_config(corpus, 30);
  const std::string dir = cstest::temp_dir() + "/tb_resume";
  train_new(cfg, dir, 15);  // stopped at 15, with a checkpoint there
  // What a process killed after its checkpoint leaves: a line and an event past it.
  {
    cs::RunStore store(dir);
    store.append_metrics(json{{"step", 17}, {"epoch", 0.5}, {"elapsed", 9.0}, {"wall_time", 1.0}, {"loss", 3.0}});
    const auto f = events_files(dir + "/tensorboard");
    ASSERT_EQ(f.size(), 1u);
    std::FILE* fp = std::fopen(f[0].c_str(), "ab");
    const std::string rec = tb::frame(tb::scalars_event(1.0, 17, {{"train/loss", 3.0}}));
    std::fwrite(rec.data(), 1, rec.size(), fp);
    std::fwrite(rec.data(), 1, 5, fp);  // and a torn one
    std::fclose(fp);
  }
  resume(cfg, dir);
  const auto files = events_files(dir + "/tensorboard");
  ASSERT_EQ(files.size(), 2u);  // the resumed process writes a file of its own, named after the first
  const auto lines = metrics_lines(dir);
  ASSERT_EQ(lines.back().value("step", 0), 30);
  const json read = read_back(files);
  // the first file was trimmed to the checkpoint's step, the torn record dropped
  ASSERT_FALSE(read["files"][0].value("torn", true));
  for (auto& e : read["files"][0]["events"]) ASSERT_LE(e.value("step", 0), 15) << e.dump();
  const auto events = all_events(read);
  expect_header_events(events, cfg);
  // every metrics.jsonl line exactly once across both files, in order
  expect_scalars_match(events, lines, [](const json& l) { return l.at("wall_time").get<double>(); });
}

// A resume trims only the events files a Cellscope run provably wrote (#52): a foreign events file (another
// writer's records, past the checkpoint's step), a file of garbage, an unreadable one, a FIFO (the resume hung
// reading it), a symbolic link to /dev/zero (read until memory ran out) and a user's files whose names merely
// contain ".tmp." are left exactly as they were, each named once in the run's log; the run's own file is trimmed
// and the run's own leftover temporary copy removed, as before.
TEST(Tensorboard, resumeTouchesOnlyItsOwnEventsFiles) {
  const auto corpus = cstest::write_text_fixture("tb_own.txt", 12000);
  const json cfg = small_config(corpus, 30);
  const std::string dir = cstest::temp_dir() + "/tb_own", tbd = dir + "/tensorboard";
  train_new(cfg, dir, 15);
  const auto own = events_files(tbd);
  ASSERT_EQ(own.size(), 1u);
  {  // the run's own file gets a record past the checkpoint, which the resume must trim
    std::FILE* fp = std::fopen(own[0].c_str(), "ab");
    const std::string rec = tb::frame(tb::scalars_event(1.0, 17, {{"train/loss", 3.0}}));
    std::fwrite(rec.data(), 1, rec.size(), fp);
    std::fclose(fp);
  }
  const std::string foreign = tbd + "/events.out.tfevents.1.otherhost.77.0";
  const std::string foreign_bytes =
      tb::frame(tb::file_version_event(1.0)) + tb::frame(tb::scalars_event(1.0, 25, {{"mine/accuracy", 0.5}}));
  cstest::write_text(foreign, foreign_bytes);
  const std::string garbage = tbd + "/events.out.tfevents.2.junk.1.0";
  cstest::write_text(garbage, "hello, not records at all\n");
  const std::string unreadable = tbd + "/events.out.tfevents.3.locked.1.0";
  cstest::write_text(unreadable, foreign_bytes);
  ASSERT_EQ(::chmod(unreadable.c_str(), 0), 0);
  const std::string fifo = tbd + "/events.out.tfevents.4.fifo.1.0";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string zero = tbd + "/events.out.tfevents.5.zero.1.0";
  std::filesystem::create_symlink("/dev/zero", zero);
  const std::string notes = tbd + "/notes.tmp.txt", not_ours = tbd + "/events.out.tfevents.6.h.tmp.mine";
  cstest::write_text(notes, "user's");
  cstest::write_text(not_ours, "user's");
  const std::string own_tmp = own[0] + ".tmp.4242";  // what a kill inside atomic_write leaves
  cstest::write_text(own_tmp, "partial");

  resume(cfg, dir);
  ASSERT_EQ(metrics_lines(dir).back().value("step", 0), 30);
  EXPECT_EQ(cstest::read_text(foreign), foreign_bytes);
  EXPECT_EQ(cstest::read_text(garbage), "hello, not records at all\n");
  ::chmod(unreadable.c_str(), 0644);
  EXPECT_EQ(cstest::read_text(unreadable), foreign_bytes);
  EXPECT_TRUE(std::filesystem::is_fifo(std::filesystem::symlink_status(fifo)));
  EXPECT_TRUE(std::filesystem::is_symlink(std::filesystem::symlink_status(zero)));
  EXPECT_EQ(cstest::read_text(notes), "user's");
  EXPECT_EQ(cstest::read_text(not_ours), "user's");
  EXPECT_FALSE(std::filesystem::exists(own_tmp));
  // the run's own file: trimmed to the checkpoint's step
  const tb::Records rec = tb::read_records(cstest::read_text(own[0]));
  ASSERT_GE(rec.payloads.size(), 3u);
  for (auto& p : rec.payloads) EXPECT_LE(tb::decode_head(p).step, 15);
  // each file left alone is named in the log, once
  const std::string log = cstest::read_text(dir + "/log.txt");
  for (const std::string& f : {foreign, garbage, fifo, zero})
    EXPECT_EQ(cstest::count(log, "left '" + f + "' as it is"), 1) << f << "\n" << log;
  EXPECT_TRUE(cstest::contains(log, "a symbolic link")) << log;
  EXPECT_TRUE(cstest::contains(log, "not a regular file")) << log;
  EXPECT_TRUE(cstest::contains(log, "not written by Cellscope")) << log;
}

TEST(Tensorboard, runWithoutTensorboardIsFilledInOnResume) {
  const std::string missing = reader_missing();
  if (!missing.empty()) FAIL() << missing << " (packaging/setup.sh installs it)";
  const auto corpus = cstest::write_text_fixture("tb_off.txt", 12000);
  const std::string dir = cstest::temp_dir() + "/tb_off";
  train_new(small_config(corpus, 20, false), dir, 10);
  ASSERT_FALSE(std::filesystem::exists(dir + "/tensorboard"));
  ASSERT_GE(metrics_lines(dir).size(), 3u);
  const json on = small_config(corpus, 20, true);  // not an architecture change: may be turned on
  resume(on, dir);
  const auto files = events_files(dir + "/tensorboard");
  ASSERT_EQ(files.size(), 1u);
  const auto events = all_events(read_back(files));
  expect_header_events(events, on);
  expect_scalars_match(events, metrics_lines(dir), [](const json& l) { return l.at("wall_time").get<double>(); });
}

TEST(Tensorboard, writerErrorIsReportedOnceAndTrainingGoesOn) {
  const auto corpus = cstest::write_text_fixture("tb_err.txt", 12000);
  const json cfg = small_config(corpus, 10);
  const std::string dir = cstest::temp_dir() + "/tb_err";
  // tensorboard/ cannot be created: a file is in its place
  cs::seed_everything(5);
  auto store = std::make_shared<cs::RunStore>(dir);
  auto task = cs::make_task(cfg, "");
  store->create();
  store->write_config(cfg);
  cs::atomic_write(store->path("vocab"), task->vocab_text());
  cstest::write_text(dir + "/tensorboard", "in the way\n");
  cs::Trainer t(cfg, std::move(task), store);
  int reports = 0;
  cs::TrainerCallbacks cb;
  cb.on_log = [&](const std::string& s) { reports += cstest::contains(s, "tensorboard:") ? 1 : 0; };
  const auto out = t.run(nullptr, cb);
  ASSERT_EQ(out.summary.status, "finished");
  ASSERT_EQ(out.summary.step, 10);
  ASSERT_EQ(reports, 1);
  ASSERT_EQ(cstest::count(cstest::read_text(dir + "/log.txt"), "tensorboard:"), 1);
  ASSERT_EQ(cstest::read_text(dir + "/tensorboard"), "in the way\n");
}

TEST(Tensorboard, exportConvertsRunsOfAWorkspace) {
  const std::string missing = reader_missing();
  const auto corpus = cstest::write_text_fixture("tb_export.txt", 12000);
  const std::string ws = cstest::temp_dir() + "/tb_ws";
  const json cfg = small_config(corpus, 10, false);
  train_new(cfg, ws + "/run_a");
  train_new(cfg, ws + "/run_b");
  cs::RunStore(ws + "/run_a").write_label("GRU / small");
  // run_b as written before metrics.jsonl recorded a wall time
  std::string legacy;
  for (auto l : metrics_lines(ws + "/run_b")) {
    l.erase("wall_time");
    legacy += l.dump() + "\n";
  }
  cstest::write_text(ws + "/run_b/metrics.jsonl", legacy);
  const std::string logdir = cstest::temp_dir() + "/tb_logdir";
  // A user's files in LOGDIR, named as the export's temporary folders were (.NAME.tmp.PID, emptied
  // first, #52): they survive.
  const std::vector<std::string> planted = {logdir + "/notes.txt", logdir + "/.run_b.tmp.1/mine.txt",
                                            logdir + "/.GRU_small.tmp.22/mine.txt"};
  for (const auto& f : planted) cstest::write_text(f, "mine");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"export", "tensorboard", ws, "--out", logdir}, &out, &err), 0) << err;
  ASSERT_TRUE(std::filesystem::is_directory(logdir + "/GRU_small")) << out;
  ASSERT_TRUE(std::filesystem::is_directory(logdir + "/run_b")) << out;
  ASSERT_EQ(events_files(logdir + "/GRU_small").size(), 1u);
  for (const auto& f : planted) ASSERT_EQ(cstest::read_text(f), "mine") << f;
  for (auto& e : std::filesystem::directory_iterator(logdir)) {
    const std::string n = e.path().filename().string();
    ASSERT_TRUE(n[0] != '.' || n == ".run_b.tmp.1" || n == ".GRU_small.tmp.22")
        << "a temporary directory was left: " << n;
  }
  // exported again into the same LOGDIR: refused, nothing changed
  const std::string before = cstest::read_text(events_files(logdir + "/run_b")[0]);
  ASSERT_EQ(cstest::run_cli({"export", "tensorboard", ws + "/run_b", "--out", logdir}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "already exists")) << err;
  ASSERT_EQ(cstest::read_text(events_files(logdir + "/run_b")[0]), before);
  if (!missing.empty()) FAIL() << missing << " (packaging/setup.sh installs it)";
  // run_a: the wall times metrics.jsonl recorded
  const auto a = all_events(read_back(events_files(logdir + "/GRU_small")));
  expect_header_events(a, cfg);
  expect_scalars_match(a, metrics_lines(ws + "/run_a"), [](const json& l) { return l.at("wall_time").get<double>(); });
  // run_b: its start (summary.json "started", local time) + each line's elapsed seconds
  std::tm tm{};
  const std::string started = cstest::json_object(cstest::read_text(ws + "/run_b/summary.json")).value("started", "");
  ASSERT_NE(strptime(started.c_str(), "%Y-%m-%dT%H:%M:%S", &tm), nullptr) << started;
  tm.tm_isdst = -1;
  const double anchor = static_cast<double>(std::mktime(&tm));
  const auto b = all_events(read_back(events_files(logdir + "/run_b")));
  expect_header_events(b, cfg);
  expect_scalars_match(b, metrics_lines(ws + "/run_b"),
                       [&](const json& l) { return anchor + l.at("elapsed").get<double>(); });
}

TEST(Tensorboard, exportRefusesWhatIsNotARun) {
  std::string out, err;
  const std::string empty = cstest::temp_dir() + "/tb_empty";
  std::filesystem::create_directories(empty + "/sub");
  const std::string logdir = cstest::temp_dir() + "/tb_refused";
  ASSERT_EQ(cstest::run_cli({"export", "tensorboard", empty, "--out", logdir}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "neither a run directory")) << err;
  ASSERT_EQ(cstest::run_cli({"export", "tensorboard", empty + "/missing", "--out", logdir}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "is not a directory")) << err;
  ASSERT_EQ(cstest::run_cli({"export", "tensorboard", empty}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--out")) << err;
  ASSERT_EQ(cstest::run_cli({"export", "tensorboard", "--help"}, &out, &err), 0);
  ASSERT_TRUE(cstest::contains(out, "usage: cellscope-cli export tensorboard")) << out;
  ASSERT_EQ(cstest::run_cli({"export", "--help"}, &out, &err), 0);  // both forms
  ASSERT_TRUE(cstest::contains(out, "usage: cellscope-cli export tensorboard")) << out;
  ASSERT_TRUE(cstest::contains(out, "usage: cellscope-cli export RUN_DIR")) << out;
  // Anything else is the PyTorch export's RUN_DIR, refused by it.
  ASSERT_EQ(cstest::run_cli({"export", "frobnicate"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--out DIR is required")) << err;
  // a workspace with one damaged run: the message names the line, and no run is written
  const auto corpus = cstest::write_text_fixture("tb_bad.txt", 12000);
  const std::string ws = cstest::temp_dir() + "/tb_bad_ws";
  train_new(small_config(corpus, 5, false), ws + "/a_good");
  train_new(small_config(corpus, 5, false), ws + "/b_bad");
  cstest::write_text(ws + "/b_bad/metrics.jsonl", "{\"step\": 1}\nnot json\n{\"step\": 2}\n");
  ASSERT_EQ(cstest::run_cli({"export", "tensorboard", ws, "--out", logdir}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "b_bad/metrics.jsonl:2")) << err;
  ASSERT_FALSE(std::filesystem::exists(logdir + "/a_good"));
}

}  // namespace test_tensorboard
