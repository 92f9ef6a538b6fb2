// Enum options (config/option_spec.h: OptionTable::choice over an enum class with its
// enum_names table): the schema entry, the JSON -> enum binding, the messages.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cells/cru.h"
#include "cells/mcrnn.h"
#include "cells/mzu.h"
#include "config/common_options.h"
#include "config/option_spec.h"
#include "config/schema.h"
#include "tasks/classify.h"
#include "tasks/cloze.h"
#include "tasks/seq2seq.h"
#include "tasks/word_lm.h"
#include "util/error.h"

namespace test_option_enums {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

enum class Shade { Dark, Light, Pale };
constexpr EnumNames<Shade, 3> enum_names(Shade) {
  // not the declaration order: the table's order is the schema's
  return {{{Shade::Light, "light"}, {Shade::Dark, "dark"}, {Shade::Pale, "pale"}}};
}
struct Paint {
  Shade shade = Shade::Dark;
  int64_t coats = 1;
};

OptionTable<Paint> paint_table() {
  OptionTable<Paint> t("model");
  t.choice("shade", &Paint::shade, "How dark.");
  t.field("coats", &Paint::coats, 1, 9, "Coats.");
  return t;
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

// One converted option: where it lives, a configuration it applies to, and how its bound
// value is read back as a name (through the option's own table).
struct Bound {
  std::string path;
  json base;  // a configuration (before resolve_config) the option applies to
  std::function<std::string(const json& resolved)> read;
};

json with_cell(const std::string& task, const std::string& cell) {
  return json{{"task", task}, {"model", {{"cell", cell}}}};
}

std::vector<Bound> bound_options() {
  const json gcn = with_cell("char_lm", "gcn_mzu"), sat = with_cell("char_lm", "sat_mzu");
  auto mzu = [](const json& r, const std::string& cell) { return mzu_option_table().read(r.at("model"), cell); };
  auto cru = [](const json& r) { return cru_option_table().read(r.at("model"), "cru_deep_enhanced"); };
  std::vector<Bound> v = {
      {"model.disagreement_scale", gcn, [&](const json& r) { return to_string(mzu(r, "gcn_mzu").disagreement_scale); }},
      {"model.disagreement_pairs", gcn, [&](const json& r) { return to_string(mzu(r, "gcn_mzu").disagreement_pairs); }},
      {"model.disagreement_form", gcn, [&](const json& r) { return to_string(mzu(r, "gcn_mzu").disagreement_form); }},
      {"model.ln_position", gcn, [&](const json& r) { return to_string(mzu(r, "gcn_mzu").ln_position); }},
      {"model.gcn_activation", gcn, [&](const json& r) { return to_string(mzu(r, "gcn_mzu").gcn_activation); }},
      {"model.gcn_edges", gcn, [&](const json& r) { return to_string(mzu(r, "gcn_mzu").gcn_edges); }},
      {"model.gcn_adjacency", gcn, [&](const json& r) { return to_string(mzu(r, "gcn_mzu").gcn_adjacency); }},
      {"model.sat_qkv", sat, [&](const json& r) { return to_string(mzu(r, "sat_mzu").sat_qkv); }},
      {"model.conv_window", with_cell("classify", "cru_deep_enhanced"),
       [&](const json& r) { return to_string(cru(r).conv_window); }},
      {"model.conv_activation", with_cell("classify", "cru_deep_enhanced"),
       [&](const json& r) { return to_string(cru(r).conv_activation); }},
      {"model.lstm_memory", with_cell("word_lm", "mcrnn"),
       [](const json& r) { return to_string(mcrnn_option_table().read(r.at("model")).lstm_memory); }},
      {"model.state_clamp", with_cell("word_lm", "mcrnn"),
       [](const json& r) { return to_string(mcrnn_option_table().read(r.at("model")).state_clamp); }},
      {"model.fc_activation", with_cell("classify", "gru"),
       [](const json& r) { return to_string(sentence_option_table(false).read(r).fc_activation); }},
      {"dataset.subset", with_cell("absa", "gru"),
       [](const json& r) { return to_string(sentence_option_table(true).read(r).subset); }},
      {"dataset.domain", with_cell("absa", "gru"),
       [](const json& r) { return to_string(sentence_option_table(true).read(r).domain); }},
      {"model.reader", with_cell("cloze", "gru"),
       [](const json& r) { return to_string(cloze_option_table().read(r).reader); }},
      {"model.recurrent_init", with_cell("cloze", "gru"),
       [](const json& r) { return to_string(cloze_option_table().read(r).recurrent_init); }},
      {"dataset.blank", with_cell("cloze", "gru"),
       [](const json& r) { return to_string(cloze_option_table().read(r).blank); }},
      {"dataset.eos", with_cell("word_lm", "lstm"),
       [](const json& r) { return to_string(word_lm_option_table().read(r).eos); }},
      {"dataset.subword", with_cell("seq2seq", "lstm"),
       [](const json& r) { return to_string(seq2seq_option_table().read(r).subword); }},
      {"training.optimizer", with_cell("word_lm", "lstm"),
       [](const json& r) { return to_string(read_training_options(r.at("training")).optimizer); }},
      {"task.test_decode", json{{"task", {{"name", "seq2seq"}}}, {"model", {{"cell", "lstm"}}}},
       [](const json& r) { return to_string(seq2seq_option_table().read(r).test_decode); }},
      {"dataset.tokenizer", with_cell("word_lm", "lstm"),
       [](const json& r) { return to_string(word_lm_option_table().read(r).tokenizer); }},
  };
  return v;
}

json with_value(json cfg, const std::string& path, const json& value) {
  const auto dot = path.find('.');
  cfg[path.substr(0, dot)][path.substr(dot + 1)] = value;
  return cfg;
}

// The errors about `path` (the bases above have no dataset for some tasks: other errors).
std::vector<ConfigError> errors_at(const std::vector<ConfigError>& errs, const std::string& path) {
  std::vector<ConfigError> v;
  for (const auto& e : errs)
    if (e.path == path) v.push_back(e);
  return v;
}

const OptionSpec* spec_of(const std::string& path) {
  for (const auto& o : all_options())
    if (o.path() == path) return &o;
  return nullptr;
}

}  // namespace

TEST(OptionEnums, spec_lists_the_table_in_order_with_the_default_name) {
  const auto specs = paint_table().specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].path(), "model.shade");
  EXPECT_EQ(specs[0].type, OptType::Enum);
  EXPECT_EQ(specs[0].choices, (std::vector<std::string>{"light", "dark", "pale"}));
  EXPECT_EQ(specs[0].default_value, json("dark"));
  EXPECT_EQ(specs[0].help, "How dark.");
  // a table with other defaults names its own default
  Paint pale;
  pale.shade = Shade::Pale;
  OptionTable<Paint> t("model", pale);
  t.choice("shade", &Paint::shade, "How dark.");
  EXPECT_EQ(t.specs()[0].default_value, json("pale"));
}

TEST(OptionEnums, names_round_trip) {
  for (const Shade s : {Shade::Dark, Shade::Light, Shade::Pale}) {
    EXPECT_EQ(enum_from_name<Shade>(to_string(s)), s) << enum_name(s);
    EXPECT_EQ(paint_table().read(json{{"shade", enum_name(s)}, {"coats", 2}}).shade, s) << enum_name(s);
  }
  EXPECT_FALSE(enum_from_name<Shade>("Dark").has_value());  // names are exact
  EXPECT_EQ(enum_choices<Shade>(), (std::vector<std::string>{"light", "dark", "pale"}));
  EXPECT_STREQ(enum_name(static_cast<Shade>(7)), "?");
}

TEST(OptionEnums, bad_value_gives_the_validators_message) {
  // not validated first (a partial config, a caller of read()): one UserError naming the option
  EXPECT_EQ(user_error_of([] {
              paint_table().read(json{{"shade", "teal"}, {"coats", 1}});
            }),
            "model.shade: expected one of: light, dark, pale; got \"teal\"");
  EXPECT_EQ(user_error_of([] {
              paint_table().read_partial(json{{"shade", 3}});
            }),
            "model.shade: expected one of: light, dark, pale; got 3");
  // the validator's message for a real enum option is the same text
  const json cfg = with_value(with_cell("char_lm", "gcn_mzu"), "model.gcn_activation", "gelu");
  const auto errs = validate_config(cfg);
  ASSERT_EQ(errs.size(), 1u);
  const std::string expected = "model.gcn_activation: expected one of: relu, tanh, sigmoid, identity; got \"gelu\"";
  EXPECT_EQ(errs[0].str(), expected);
  json unvalidated = resolve_config(with_cell("char_lm", "gcn_mzu"));
  unvalidated["model"]["gcn_activation"] = "gelu";
  EXPECT_EQ(user_error_of([&] { mzu_option_table().read(unvalidated.at("model"), "gcn_mzu"); }), expected);
}

TEST(OptionEnums, schema_lists_the_same_choices_as_before) {
  // The choices (in order) and defaults the string options had before they became enums:
  // the schema, `--set` errors and the GUI's combo boxes must list exactly these.
  const std::map<std::string, std::pair<std::vector<std::string>, std::string>> before = {
      {"model.disagreement_scale", {{"mean", "sum"}, "mean"}},
      {"model.disagreement_pairs", {{"all", "distinct"}, "all"}},
      {"model.disagreement_form", {{"cosine", "squared_cosine"}, "cosine"}},
      {"model.ln_position", {{"preact", "zones"}, "preact"}},
      {"model.gcn_activation", {{"relu", "tanh", "sigmoid", "identity"}, "relu"}},
      {"model.gcn_edges", {{"cosine", "relu_cosine"}, "cosine"}},
      {"model.gcn_adjacency", {{"cosine_plus_identity", "cosine"}, "cosine_plus_identity"}},
      {"model.sat_qkv", {{"shared", "per_zone"}, "shared"}},
      {"model.conv_window", {{"centered", "causal"}, "centered"}},
      {"model.conv_activation", {{"relu", "tanh", "identity"}, "relu"}},
      {"model.lstm_memory", {{"prev", "average"}, "prev"}},
      {"model.state_clamp", {{"auto", "off", "on"}, "auto"}},
      {"model.fc_activation", {{"relu", "tanh", "none"}, "relu"}},
      {"dataset.subset", {{"ds", "hds"}, "ds"}},
      // auto added since: dataset.name = semeval2014-laptops read the Restaurants files by default
      {"dataset.domain", {{"auto", "restaurants", "laptops"}, "auto"}},
      {"model.reader", {{"aoa", "m_aoa"}, "m_aoa"}},
      {"model.recurrent_init", {{"orthogonal", "cell"}, "cell"}},
      {"dataset.blank", {{"token", "unk"}, "token"}},
      {"dataset.eos", {{"paragraph", "line", "none"}, "paragraph"}},
      {"dataset.subword", {{"bpe", "unigram"}, "bpe"}},
      {"training.optimizer", {{"adam", "sgd", "asgd"}, "adam"}},
      {"task.test_decode", {{"greedy", "beam"}, "greedy"}},
      {"dataset.tokenizer", {{"icu", "legacy"}, "icu"}},
  };
  for (const auto& [path, want] : before) {
    int seen = 0;
    for (const auto& o : all_options()) {
      if (o.path() != path) continue;
      ++seen;
      EXPECT_EQ(o.type, OptType::Enum) << path;
      EXPECT_EQ(o.choices, want.first) << path;
      EXPECT_EQ(o.default_value, json(want.second)) << path;
    }
    EXPECT_GE(seen, 1) << path;
  }
  // and every converted option is tested here
  EXPECT_EQ(bound_options().size(), before.size());
  for (const auto& b : bound_options()) EXPECT_TRUE(before.count(b.path)) << b.path;
}

TEST(OptionEnums, every_choice_binds_to_its_value) {
  for (const auto& b : bound_options()) {
    const OptionSpec* spec = spec_of(b.path);
    ASSERT_TRUE(spec) << b.path;
    // the default binds to the value named by the schema's default
    EXPECT_EQ(b.read(resolve_config(b.base)), spec->default_value.get<std::string>()) << b.path;
    for (const auto& name : spec->choices) {
      const json cfg = with_value(b.base, b.path, name);
      EXPECT_TRUE(errors_at(validate_config(cfg), b.path).empty()) << b.path << "=" << name;
      EXPECT_EQ(b.read(resolve_config(cfg)), name) << b.path;
    }
    // a bad name: the validator's one error, and the same text from the binding
    const auto errs = errors_at(validate_config(with_value(b.base, b.path, "bogus")), b.path);
    ASSERT_EQ(errs.size(), 1u) << b.path;
    EXPECT_EQ(errs[0].message, choice_error(spec->choices, json("bogus")));
    json unvalidated = resolve_config(b.base);
    const auto dot = b.path.find('.');
    unvalidated[b.path.substr(0, dot)][b.path.substr(dot + 1)] = "bogus";
    EXPECT_EQ(user_error_of([&] { b.read(unvalidated); }), errs[0].str()) << b.path;
  }
}

}  // namespace test_option_enums
