// Bad input and limits: every bad input is exit 2 with ONE message
// naming the file and the JSON path or line, never exit 1 with the library's text; numbers the
// program or the machine cannot handle are refused by validation with the JSON path and limit.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "cells/registry.h"
#include "config/common_options.h"
#include "config/schema.h"
#include "data/manifest.h"
#include "data/text_datasets.h"
#include "data/word_corpus.h"
#include "harness.h"
#include "tasks/inspect.h"
#include "tasks/model_params.h"
#include "tasks/task.h"
#include "train/metrics.h"
#include "util/error.h"

namespace test_bad_input {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

std::string tmp(const std::string& rel) { return cstest::temp_dir() + "/bad/" + rel; }

bool has_error(const std::vector<ConfigError>& errs, const std::string& path, const std::string& fragment = "") {
  for (auto& e : errs)
    if (e.path == path && (fragment.empty() || e.message.find(fragment) != std::string::npos)) return true;
  return false;
}
std::string dump(const std::vector<ConfigError>& errs) {
  std::string s;
  for (auto& e : errs) s += e.str() + "\n";
  return s;
}

// The message of the UserError `f` throws ("" when it throws nothing or something else).
template <class F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("NOT A UserError: ") + e.what();
  }
  return "";
}

// exit 2, one line on stderr, naming `where`, without the JSON library's "[json.exception" text.
// (`lines` 2: train's "invalid configuration:" heading with the one problem under it)
void expect_one_message(int rc, const std::string& err, const std::string& where, int lines = 1) {
  EXPECT_EQ(rc, 2) << err;
  EXPECT_TRUE(cstest::contains(err, where)) << err;
  EXPECT_FALSE(cstest::contains(err, "json.exception")) << err;
  EXPECT_FALSE(cstest::contains(err, "Exception raised from")) << err;
  EXPECT_EQ(cstest::count(err, "\n"), lines) << err;
}

const json kQuick = {{"task", "char_lm"},
                     {"dataset", {{"name", "moby-dick"}, {"max_chars", 20000}}},
                     {"model", {{"cell", "gru"}, {"embed", 16}, {"hidden", 32}}},
                     {"training", {{"steps", 2}, {"threads", 1}}}};

}  // namespace

TEST(BadInput, outOfRangeFloatNamesFileAndPath) {
  // 1e400 is beyond double: the library threw out_of_range (exit 1, "[json.exception.out_of_range.406]").
  const std::string msg = user_error([] { parse_json("{\"training\": {\"lr\": 1e400}}", "'c.json'"); });
  ASSERT_TRUE(cstest::contains(msg, "'c.json': training.lr: number overflow parsing '1e400'")) << msg;
  ASSERT_TRUE(
      cstest::contains(user_error([] { parse_json("{\"a\": [1, 2, {\"b\": [0, -1e999]}]}", "x"); }), "x: a[2].b[1]:"));
  const std::string p = tmp("overflow.json");
  std::string text = kQuick.dump(1);
  text.replace(text.find("\"steps\": 2"), 10, "\"steps\": 2, \"lr\": 1e400");
  cstest::write_text(p, text);
  std::string out, err;
  for (const char* cmd : {"validate", "train", "params"})
    expect_one_message(cstest::run_cli({cmd, p}, &out, &err), err, p + "': training.lr");
  // and through --set
  expect_one_message(cstest::run_cli({"validate", "quick-gru", "--set", "training.lr=1e400"}, &out, &err), err,
                     "training.lr");
}

TEST(BadInput, syntaxErrorsAreOneCleanLine) {
  const std::string p = tmp("syntax.json");
  cstest::write_text(p, "{\"task\": \"char_lm\",\n \"model\": {\"hidden\": 12,,}}");
  std::string out, err;
  expect_one_message(cstest::run_cli({"validate", p}, &out, &err), err, p + "' is not valid JSON: line 2");
  cstest::write_text(p, std::string("\x00\x01\x02\xFF binary", 10));
  expect_one_message(cstest::run_cli({"validate", p}, &out, &err), err, p + "' is not valid JSON: line 1");
  cstest::write_text(p, "");
  expect_one_message(cstest::run_cli({"validate", p}, &out, &err), err, p + "' is not valid JSON");
}

TEST(BadInput, nonUtf8OptionValues) {
  std::string out, err;
  // --set: the value was taken as a string with the raw byte, and dumping the config threw
  // type_error 316 (exit 1).
  for (const char* cmd : {"validate", "train", "params"})
    expect_one_message(cstest::run_cli({cmd, "quick-gru", "--set", "model.cell=gr\xFFu"}, &out, &err), err,
                       "--set model.cell=...: not valid UTF-8 (byte 0xFF");
  expect_one_message(cstest::run_cli({"validate", "quick-gru", "--set", "training.devic\xE9=cpu"}, &out, &err), err,
                     "not valid UTF-8 (byte 0xE9");
  // in a config file: a parse error naming the file and the position
  const std::string p = tmp("latin1.json");
  cstest::write_text(p, "{\"task\": \"char_lm\", \"notes\": \"caf\xE9\"}");
  expect_one_message(cstest::run_cli({"validate", p}, &out, &err), err, p + "' is not valid JSON: line 1, column");
  // generate's seed text
  ASSERT_EQ(cstest::run_cli({"generate", "--run", tmp("nothing"), "--seed-text", "caf\xE9"}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "--seed-text is not valid UTF-8")) << err;
}

TEST(BadInput, unknownDevice) {
  for (const char* d : {"tpu", "cuda:", "cuda:x", "cuda:99999", "CPU", ""}) {
    json c = kQuick;
    c["training"]["device"] = d;
    ASSERT_TRUE(has_error(validate_config(c), "training.device", "not a device")) << d;
  }
  for (const char* d : {"cpu", "cuda", "cuda:0", "cuda:15"}) {
    json c = kQuick;
    c["training"]["device"] = d;
    ASSERT_FALSE(has_error(validate_config(c), "training.device")) << d << dump(validate_config(c));
  }
  std::string out, err;
  expect_one_message(cstest::run_cli({"validate", "quick-gru", "--set", "training.device=tpu"}, &out, &err), err,
                     "training.device: 'tpu' is not a device");
  const std::string run = tmp("device_run");
  expect_one_message(
      cstest::run_cli({"train", "quick-gru", "--run-dir", run, "--set", "training.device=cuda:x"}, &out, &err), err,
      "training.device", 2);
  ASSERT_FALSE(std::filesystem::exists(run));
}

TEST(BadInput, manifestEntries) {
  const std::string p = tmp("manifest.json");
  auto entry = [](const json& files) {
    return json{
        {"datasets", {{{"name", "x"}, {"format", "text"}, {"obtain", "user"}, {"path", "x.txt"}, {"files", files}}}}};
  };
  cstest::write_text(p, entry(json::array({"x.txt", 3})).dump());
  ASSERT_TRUE(cstest::contains(user_error([&] { load_manifest(p); }), "entry 0 ('x'): files[1] is not a file name"));
  cstest::write_text(p, entry(json::array({json::object()})).dump());
  ASSERT_TRUE(cstest::contains(user_error([&] { load_manifest(p); }), "files[0] is not a file name"));
  cstest::write_text(p, entry(json::array({"../../etc/passwd"})).dump());
  ASSERT_TRUE(cstest::contains(user_error([&] { load_manifest(p); }), "inside the data cache"));
  json m = entry(json::array({"x.txt"}));
  m["datasets"][0]["tasks"] = json::array({"char_lm", 7});
  cstest::write_text(p, m.dump());
  ASSERT_TRUE(cstest::contains(user_error([&] { load_manifest(p); }), "\"tasks\""));
  m["datasets"][0]["tasks"] = json::array({"char_lm"});
  m["datasets"][0]["licence"] = 12;
  cstest::write_text(p, m.dump());
  ASSERT_TRUE(cstest::contains(user_error([&] { load_manifest(p); }), "\"licence\" must be a string"));
  // through the CLI: `datasets` and a training that resolves dataset.name
  cstest::write_text(p, entry(json::array({"x.txt", 3})).dump());
  cstest::EnvGuard g("CELLSCOPE_MANIFEST", p);
  std::string out, err;
  expect_one_message(cstest::run_cli({"datasets"}, &out, &err), err, p + "' entry 0 ('x'): files[1]");
  expect_one_message(
      cstest::run_cli({"train", "quick-gru", "--run-dir", tmp("manifest_run"), "--set", "dataset.name=x"}, &out, &err),
      err, "files[1]");
}

TEST(BadInput, metricsLines) {
  const std::string p = tmp("metrics.jsonl");
  const std::string good = "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.0}\n";
  // a torn last line is skipped
  cstest::write_text(p, good + "{\"step\":3,\"lo");
  ASSERT_EQ(read_metrics(p).size(), size_t(2));
  ASSERT_EQ(read_json_lines(p).size(), size_t(2));
  // a malformed line in the middle was skipped silently: now an error naming file:line
  cstest::write_text(p, "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"lo\n{\"step\":3,\"loss\":2.0}\n");
  ASSERT_TRUE(cstest::starts_with(user_error([&] { read_metrics(p); }), p + ":2: malformed line"))
      << user_error([&] { read_metrics(p); });
  ASSERT_TRUE(cstest::starts_with(user_error([&] { read_json_lines(p); }), p + ":2:"));
  std::string problem;
  ASSERT_EQ(read_metrics(p, &problem).size(), size_t(1));  // the tolerant reader of live views
  ASSERT_TRUE(cstest::starts_with(problem, p + ":2:")) << problem;
  // empty lines do not count; a wrong type or a non-object line is an error with its line
  cstest::write_text(p, "{\"step\":1}\n\n[1,2]\n{\"step\":3}\n");
  ASSERT_TRUE(cstest::starts_with(user_error([&] { read_metrics(p); }), p + ":3: expected a JSON object"));
  cstest::write_text(p, "{\"step\":\"one\"}\n{\"step\":3}\n");
  ASSERT_TRUE(cstest::starts_with(user_error([&] { read_metrics(p); }), p + ":1: malformed metrics line"));
  problem = "x";
  cstest::write_text(p, good);
  ASSERT_EQ(read_metrics(p, &problem).size(), size_t(2));
  ASSERT_EQ(problem, std::string());
}

TEST(BadInput, integersBeyondInt64) {
  // dataset.max_chars allowed up to 1e300: 1e30 passed validation and was cast to int64 (UB).
  for (const char* v : {"1e30", "18446744073709551615", "9007199254740993"}) {
    json c = kQuick;
    c["dataset"]["max_chars"] = json::parse(v);
    ASSERT_TRUE(has_error(validate_config(c), "dataset.max_chars", "9007199254740992"))
        << v << dump(validate_config(c));
  }
  json c = kQuick;
  c["training"]["steps"] = 1e30;
  ASSERT_TRUE(has_error(validate_config(c), "training.steps"));
  c = kQuick;
  c["dataset"]["max_chars"] = 9007199254740992.0;
  ASSERT_TRUE(validate_config(c).empty()) << dump(validate_config(c));
}

TEST(BadInput, threadsAreClampedToTheMachine) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string note;
  ASSERT_EQ(effective_threads(0, &note), hw);
  ASSERT_EQ(note, std::string());
  ASSERT_EQ(effective_threads(1, &note), 1);
  ASSERT_EQ(effective_threads(hw, &note), hw);
  ASSERT_EQ(note, std::string());
  ASSERT_EQ(effective_threads(64 * hw, &note), hw);
  ASSERT_TRUE(cstest::contains(note, std::to_string(64 * hw) + " threads asked for")) << note;
  // the CLI uses it: 64x the cores ran (and crawled) with 64x the threads
  std::string out, err;
  const int many = std::min(64 * hw, 1024);  // within the option's range
  ASSERT_GT(many, hw);
  ASSERT_EQ(cstest::run_cli({"info", "--json", "--threads", std::to_string(many)}, &out, &err), 0) << err;
  ASSERT_EQ(cstest::json_object(out).value("intra_op_threads", 0), hw) << out;
  ASSERT_TRUE(cstest::contains(err, "warning: training.threads")) << err;
}

TEST(BadInput, memoryBeyondTheMachine) {
  const double have = physical_memory_bytes();
  ASSERT_GT(have, 0.0);
  // Every limit alone is allowed; together they need ~10^19 bytes.
  json c = kQuick;
  c["dataset"]["max_chars"] = 0;  // (a capped corpus is checked against the batch first)
  c["model"]["hidden"] = 65536;
  c["model"]["layers"] = 16;
  c["training"]["batch"] = 65536;
  c["training"]["bptt"] = 100000;
  auto errs = validate_config(c);
  ASSERT_TRUE(has_error(errs, "training.bptt", "more than this machine's")) << dump(errs);
  // parameters alone: 16 layers of 65536 x 131072 weights (~1 TiB with gradients)
  c["training"]["batch"] = 1;
  c["training"]["bptt"] = 1;
  errs = validate_config(c);
  ASSERT_TRUE(has_error(errs, "model.hidden", "GiB")) << dump(errs);
  std::string out, err;
  expect_one_message(
      cstest::run_cli({"validate", "quick-gru", "--set", "model.hidden=65536", "--set", "model.layers=16"}, &out, &err),
      err, "model.hidden: this configuration needs at least");
  // the benchmark's sizes are checked the same way, and their ranges (it allocated, then died)
  ASSERT_EQ(cstest::run_cli({"bench", "--hidden", "65536", "--embed", "65536", "--batch", "65536", "--seq", "100000"},
                            &out, &err),
            2);
  ASSERT_TRUE(cstest::contains(err, "this benchmark needs at least")) << err;
  ASSERT_EQ(cstest::run_cli({"bench", "--hidden", "1000000000"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--hidden expects an integer in [1, 65536]")) << err;
  ASSERT_EQ(cstest::run_cli({"info", "--threads", "99999999999"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "--threads expects an integer in [0, 1024]")) << err;
  // the paper-sized presets stay valid
  c = kQuick;
  c["model"]["hidden"] = 1536;
  c["training"]["batch"] = 256;
  c["training"]["bptt"] = 150;
  ASSERT_TRUE(validate_config(c).empty()) << dump(validate_config(c));
}

TEST(BadInput, memoryBoundIsBelowEveryCell) {
  // The bound must never exceed what a model really has, or a config that fits would be refused.
  for (const auto& name : cell_names()) {
    json c = kQuick;
    c["model"] = {{"cell", name}, {"embed", 24}, {"hidden", 48}, {"layers", 2}};
    if (!validate_config(c).empty()) continue;  // cells with constraints on these sizes
    const json r = resolve_config(c);
    int64_t total = 0;
    for (auto& kv : model_parameter_breakdown(r, 40)) total += kv.second;
    const double bound_params = training_memory_lower_bound(r, "char_lm").parameters / 8.0;
    ASSERT_LE(bound_params, static_cast<double>(total)) << name;
  }
}

TEST(BadInput, sstLabelOverflow) {
  const std::string dir = tmp("sst");
  cstest::write_text(dir + "/train.txt", "(99999999999 (2 good))\n");
  cstest::write_text(dir + "/dev.txt", "(1 (2 a))\n");
  cstest::write_text(dir + "/test.txt", "(1 (2 a))\n");
  // std::stoi threw std::out_of_range (exit 1)
  ASSERT_TRUE(cstest::contains(user_error([&] { load_sst_trees(dir, 5); }),
                               dir + "/train.txt:1: label 99999999999 out of range"));
  cstest::write_text(dir + "/train.txt", "(3 (2 caf\xE9))\n");
  ASSERT_TRUE(cstest::contains(user_error([&] { load_sst_trees(dir, 5); }), dir + "/train.txt:1:10: invalid UTF-8"));
}

TEST(BadInput, xmlCharacterReferences) {
  const std::string f = tmp("x.xml");
  auto xml = [](const std::string& text) {
    return "<sentences>\n<sentence id=\"1\"><text>" + text +
           "</text><aspectTerms><aspectTerm term=\"a\" polarity=\"positive\"/></aspectTerms></sentence>\n</sentences>\n";
  };
  // a surrogate or a code point beyond U+10FFFF made text that is not UTF-8 (then a vocabulary
  // that could not be read back); &#-5; a byte of garbage
  for (const char* ref : {"&#xD800;", "&#1114112;", "&#-5;", "&#0;", "&#x;", "&#12ab;", "&#99999999999999999999;"}) {
    cstest::write_text(f, xml(std::string("a ") + ref + " b"));
    ASSERT_TRUE(cstest::contains(user_error([&] { load_semeval_xml(f, ""); }), f + ":2")) << ref;
  }
  cstest::write_text(f, xml("caf&#233; &#x1F433;"));
  auto ex = load_semeval_xml(f, "");
  ASSERT_EQ(ex.at(0).text, std::string("caf\xC3\xA9 \xF0\x9F\x90\xB3"));
  cstest::write_text(f, xml("caf\xE9"));
  ASSERT_TRUE(cstest::contains(user_error([&] { load_semeval_xml(f, ""); }), f + ":2:27: invalid UTF-8"));
}

TEST(BadInput, wordSeedHonoursEos) {
  // word_lm_inspect compared dataset.eos with "never" (the values are paragraph, line, none):
  // with eos = none a seed's line break still fed <eos>, a token the corpus never had there.
  const std::string p = tmp("words.txt");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "call me ishmael\nsome years ago\n\n";
  cstest::write_text(p, text);
  auto stepper_symbols = [&](const std::string& eos, const std::string& seed) {
    json raw = {{"task", "word_lm"},
                {"dataset", {{"path", p}, {"format", "text"}, {"eos", eos}}},
                {"model", {{"cell", "gru"}, {"embed", 8}, {"hidden", 8}}},
                {"training", {{"threads", 1}}}};
    auto task = make_task(load_and_resolve(raw));
    std::string s;
    for (auto& t : task->token_stepper(seed).seed_symbols) s += (s.empty() ? "" : "|") + t;
    return s;
  };
  ASSERT_EQ(stepper_symbols("none", "Call me\nsome\n\nyears"), std::string("call|me|some|years"));
  ASSERT_EQ(stepper_symbols("line", "Call me\nsome\n\nyears"), std::string("call|me|<eos>|some|<eos>|years"));
  ASSERT_EQ(stepper_symbols("line", "Call me\n"), std::string("call|me|<eos>"));
  // paragraph: as the corpus, <eos> after a blank-line-separated paragraph, not after each line
  ASSERT_EQ(stepper_symbols("paragraph", "Call me\nsome\n\nyears"), std::string("call|me|some|<eos>|years"));
  // the tokeniser the corpus uses
  ASSERT_EQ(word_text_tokens("a b\n\nc\n", word_tokenizer_options(Tokenizer::Icu, true), WordEos::Paragraph).size(),
            size_t(5));  // a b <eos> c <eos>
}

// A run directory whose config.json was damaged by hand: one message naming the file, without the
// library's "[json.exception...]" text (run_store printed e.what() raw).
TEST(BadInput, damagedRunConfigIsOneMessage) {
  const std::string dir = cstest::temp_dir() + "/damaged_run";
  cstest::write_text(dir + "/config.json", "{\"task\": \"char_lm\",\n  \"model\": \n");
  std::string out, err;
  expect_one_message(cstest::run_cli({"eval", dir}, &out, &err), err, dir + "/config.json' is not valid JSON");
}

}  // namespace test_bad_input
