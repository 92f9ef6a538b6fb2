// Configuration validation: every problem reported with its JSON path; defaults; overrides.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "config/common_options.h"
#include "config/schema.h"
#include "harness.h"
#include "util/error.h"

namespace test_config {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {
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
}  // namespace

TEST(Config, minimalConfigIsValidAndResolved) {
  json cfg = {{"task", "char_lm"}, {"model", {{"cell", "gru"}}}};
  ASSERT_TRUE(validate_config(cfg).empty()) << dump(validate_config(cfg));
  json r = resolve_config(cfg);
  ASSERT_EQ(r["task"]["name"].get<std::string>(), std::string("char_lm"));
  ASSERT_EQ(r["model"]["hidden"].get<int>(), 256);
  ASSERT_EQ(r["training"]["optimizer"].get<std::string>(), std::string("adam"));
  ASSERT_TRUE(r["training"].contains("bptt"));  // task-specific option filled in
  ASSERT_TRUE(!r["model"].contains("depth"));   // gru has no depth option
}

TEST(Config, everyProblemNamesItsPath) {
  json cfg = {{"task", "char_lm"},
              {"model", {{"cell", "gru"}, {"hiden", 5}, {"hidden", "big"}, {"layers", 0}, {"depth", 2}}},
              {"training", {{"lr", -1}, {"optimizer", "rmsprop"}, {"batch", 3.5}}},
              {"dataset", {{"valid_fraction", 0.9}}}};
  auto errs = validate_config(cfg);
  ASSERT_TRUE(has_error(errs, "model.hiden", "unknown option")) << dump(errs);
  ASSERT_TRUE(has_error(errs, "model.hidden", "expected an integer"));
  ASSERT_TRUE(has_error(errs, "model.layers", "[1,"));
  ASSERT_TRUE(has_error(errs, "model.depth", "not available for cell 'gru'"));
  ASSERT_TRUE(has_error(errs, "model.depth", "gru_dt"));  // says where it is available
  ASSERT_TRUE(has_error(errs, "training.lr"));
  ASSERT_TRUE(has_error(errs, "training.optimizer", "adam"));
  ASSERT_TRUE(has_error(errs, "training.batch", "integer"));
  ASSERT_TRUE(has_error(errs, "dataset.valid_fraction"));
  ASSERT_EQ(static_cast<int>(errs.size()), 8);
}

TEST(Config, unknownSectionAndCell) {
  auto errs = validate_config({{"modle", json::object()}});
  ASSERT_TRUE(has_error(errs, "modle", "unknown section"));
  errs = validate_config({{"model", {{"cell", "transformer"}}}});
  ASSERT_TRUE(has_error(errs, "model.cell", "gru"));
  errs = validate_config(json::array());
  ASSERT_TRUE(has_error(errs, "$"));
}

TEST(Config, optionAvailableForItsCell) {
  json cfg = {{"model", {{"cell", "gru_dt"}, {"depth", 3}, {"share_transition", true}}}};
  ASSERT_TRUE(validate_config(cfg).empty()) << dump(validate_config(cfg));
  ASSERT_EQ(resolve_config(cfg)["model"]["depth"].get<int>(), 3);
  auto errs = validate_config({{"model", {{"cell", "gru_dt"}, {"depth", -1}}}});
  ASSERT_TRUE(has_error(errs, "model.depth"));
}

TEST(Config, overrides) {
  json cfg = {{"model", {{"cell", "gru"}}}};
  apply_override(cfg, "model.hidden=512");
  apply_override(cfg, "model.cell=lstm");
  apply_override(cfg, "training.lr=3e-4");
  apply_override(cfg, "model.layer_norm=true");
  ASSERT_EQ(cfg["model"]["hidden"].get<int>(), 512);
  ASSERT_EQ(cfg["model"]["cell"].get<std::string>(), std::string("lstm"));
  ASSERT_DOUBLE_EQ(cfg["training"]["lr"].get<double>(), 3e-4);
  ASSERT_EQ(cfg["model"]["layer_norm"].get<bool>(), true);
  ASSERT_TRUE(validate_config(cfg).empty());
  bool threw = false;
  try {
    apply_override(cfg, "hidden512");
  } catch (const UserError& e) {
    threw = std::string(e.what()).find("SECTION.KEY=VALUE") != std::string::npos;
  }
  ASSERT_TRUE(threw);
}

// Found by tests/fuzz/fuzz_config (seeds/config/regression-set-on-array): --set on a config that is
// a JSON array threw nlohmann's type_error (the CLI's exit 1 with library text), not a UserError.
TEST(Config, overrideOnANonObjectConfigIsAUserError) {
  for (const char* doc : {"[1, 2]", "42", "\"text\""}) {
    json cfg = json::parse(doc);
    bool user_error = false;
    try {
      apply_override(cfg, "model.hidden=32");
    } catch (const UserError& e) {
      user_error = std::string(e.what()).find("not a JSON object") != std::string::npos;
    } catch (const std::exception&) {
    }
    ASSERT_TRUE(user_error) << doc;
  }
}

// Found by tests/fuzz/fuzz_config (seeds/config/regression-non-utf8-value): a wrongly typed value
// that is not UTF-8 made the validator's message (json::dump) throw type_error 316.
TEST(Config, nonUtf8ValueIsReportedNotThrown) {
  json cfg = {{"task", "char_lm"}, {"model", {{"cell", "gru"}, {"hidden", "\xd3^d"}}}};
  std::vector<ConfigError> errs;
  bool threw = false;
  try {
    errs = validate_config(cfg);
  } catch (const std::exception&) {
    threw = true;
  }
  ASSERT_FALSE(threw);
  ASSERT_FALSE(errs.empty());
  ASSERT_EQ(errs[0].path, std::string("model.hidden"));
}

// Found by tests/fuzz/fuzz_config (seeds/config/regression-number-overflow): a number too large for a
// double escaped parse_json as nlohmann's out_of_range 406 (not a parse_error), so exit 1.
TEST(Config, outOfRangeNumberIsAUserErrorNamingTheFile) {
  bool named = false;
  try {
    (void)parse_json("{\"training\": {\"lr\": 1e400}}", "'cfg.json'");
  } catch (const UserError& e) {
    named = std::string(e.what()).find("'cfg.json'") != std::string::npos;
  } catch (const std::exception&) {
  }
  ASSERT_TRUE(named);
}

TEST(Config, loadAndResolveListsEveryProblem) {
  bool threw = false;
  try {
    load_and_resolve({{"model", {{"hidden", 0}, {"embed", -3}}}});
  } catch (const UserError& e) {
    std::string w = e.what();
    threw = w.find("model.hidden") != std::string::npos && w.find("model.embed") != std::string::npos;
  }
  ASSERT_TRUE(threw);
}

TEST(Config, schemaHasHelpForEveryOption) {
  for (auto& o : all_options()) ASSERT_TRUE(!o.help.empty()) << o.path();
}

// A JSON document nested 100,000 levels deep crashed `validate` (and `train` through a manifest
// entry) with a stack overflow; every JSON the program reads is now bounded (kMaxJsonDepth).
TEST(Config, deeplyNestedJsonIsRefusedNotACrash) {
  const int n = 100000;
  const std::string deep = std::string(n, '[') + std::string(n, ']');
  const std::string cfg = cstest::temp_dir() + "/deep.json";
  cstest::write_text(cfg, R"({"model": {"cell": "gru", "hidden": )" + deep + "}}");
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"validate", cfg}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "nested deeper than 64 levels")) << err;
  ASSERT_TRUE(cstest::contains(err, cfg)) << err;
  // one argument may hold 128 KiB: 50,000 levels
  const std::string deep_arg = std::string(n / 2, '[') + std::string(n / 2, ']');
  ASSERT_EQ(cstest::run_cli({"validate", "quick-gru", "--set", "model.hidden=" + deep_arg}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "nested deeper than 64 levels")) << err;
  // inside a manifest entry
  const std::string manifest = cstest::temp_dir() + "/deep-manifest.json";
  cstest::write_text(manifest, R"({"version": 1, "datasets": [{"name": "x", "files": )" + deep + "}]}");
  cstest::EnvGuard g("CELLSCOPE_MANIFEST", manifest);
  ASSERT_EQ(cstest::run_cli({"train", "quick-gru", "--steps", "1", "--run-dir", cstest::temp_dir() + "/deep_run"}, &out,
                            &err),
            2)
      << err;
  ASSERT_TRUE(cstest::contains(err, "nested deeper than 64 levels")) << err;
  ASSERT_FALSE(std::filesystem::exists(cstest::temp_dir() + "/deep_run"));
  // 64 levels (two objects + 62 arrays) are accepted by the parser (the validator then names the
  // wrong type); 65 are not
  cstest::write_text(cfg,
                     R"({"model": {"cell": "gru", "hidden": )" + std::string(63, '[') + std::string(63, ']') + "}}");
  ASSERT_EQ(cstest::run_cli({"validate", cfg}, &out, &err), 2) << err;
  ASSERT_TRUE(cstest::contains(err, "nested deeper")) << err;
  const std::string ok = std::string(62, '[') + std::string(62, ']');
  cstest::write_text(cfg, R"({"model": {"cell": "gru", "hidden": )" + ok + "}}");
  ASSERT_EQ(cstest::run_cli({"validate", cfg}, &out, &err), 2) << err;
  ASSERT_FALSE(cstest::contains(err, "nested deeper")) << err;
  ASSERT_TRUE(cstest::contains(err, "model.hidden")) << err;
}

// The bookkeeping list (config/common_options.h) names only options that exist: a renamed
// option would otherwise silently start splitting seed groups again.
TEST(Config, bookkeepingOptionsAreDeclared) {
  std::set<std::string> declared = {"name", "description", "notes"};
  for (const cs::OptionSpec& o : cs::all_options()) declared.insert(o.section + "." + o.key);
  for (const cs::BookkeepingOption& b : cs::bookkeeping_options()) {
    EXPECT_TRUE(declared.count(b.key)) << b.key << " is not an option";
    EXPECT_TRUE(cs::is_bookkeeping_option(b.key));
    EXPECT_GT(std::string(b.why).size(), 5u) << b.key;
  }
  // What changes the learning or the reported numbers is never bookkeeping.
  for (const char* k : {"training.seed", "training.lr", "training.eval_every", "training.eval_batch", "model.hidden",
                        "model.script", "dataset.path"})
    EXPECT_FALSE(cs::is_bookkeeping_option(k)) << k;
}

}  // namespace test_config
