// The dataset-format registry (data/dataset_formats.h): every format is read by a task, a format
// outside a task's set is refused naming it and the accepted ones, "auto" tells each pattern
// apart, and dataset.format's choices are the registry's names.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "config/common_options.h"
#include "config/schema.h"
#include "data/dataset_formats.h"
#include "core_checks.h"
#include "harness.h"
#include "tasks/task.h"
#include "util/error.h"

namespace test_dataset_formats {  // this file's own names in a unity build (tests/README.md)

using cs::DatasetFormat;

namespace {

std::string tmp(const std::string& rel) { return cs::join_path(cstest::temp_dir(), "dataset_formats/" + rel); }

// Creates the file `rel` (and its directories) and returns its path.
std::string touch(const std::string& rel) {
  const std::string p = tmp(rel);
  cstest::write_text(p, "x\n");
  return p;
}

std::string detect(const std::string& path, const std::string& task) {
  return cs::to_string(cs::detect_dataset_format(path, task));
}

std::vector<std::string> registered_tasks() {
  std::vector<std::string> names;
  for (const auto& t : cs::task_registry()) names.push_back(t.name);
  return names;
}

}  // namespace

TEST(DatasetFormats, everyFormatIsReadByARegisteredTask) {
  const auto tasks = registered_tasks();
  // Every enumerator but auto has exactly one row, in the order of enum_names.
  const auto names = cs::enum_choices<DatasetFormat>();
  ASSERT_EQ(names.front(), "auto");
  ASSERT_EQ(cs::dataset_formats().size() + 1, names.size());
  for (size_t i = 0; i < cs::dataset_formats().size(); ++i) {
    const cs::DatasetFormatInfo& r = cs::dataset_formats()[i];
    EXPECT_EQ(r.name(), names[i + 1]);
    EXPECT_FALSE(r.tasks.empty()) << r.name();
    EXPECT_FALSE(r.patterns.empty()) << r.name();
    EXPECT_GT(std::string(r.description).size(), 10u) << r.name();
    EXPECT_GT(std::string(r.loader).size(), 5u) << r.name();
    for (const auto& t : r.tasks) {
      EXPECT_NE(std::find(tasks.begin(), tasks.end(), t), tasks.end()) << r.name() << ": no task " << t;
      EXPECT_TRUE(cs::task_reads_format(t, r.format));
      EXPECT_EQ(cs::check_format_for_task(r.format, t), r.format);
    }
    EXPECT_EQ(cs::dataset_format_info(r.format), &r);
    EXPECT_EQ(cs::dataset_format_named(r.name()), r.format);
  }
  EXPECT_EQ(cs::dataset_format_info(DatasetFormat::Auto), nullptr);
  EXPECT_FALSE(cs::dataset_format_named("csv").has_value());
  // Every registered task that reads a dataset accepts auto, and at least one format.
  for (const auto& t : tasks) {
    EXPECT_TRUE(cs::task_reads_format(t, DatasetFormat::Auto)) << t;
    EXPECT_FALSE(cs::task_formats(t).empty()) << t;
  }
}

TEST(DatasetFormats, aFormatOutsideTheTaskIsRefusedNamingTheAcceptedOnes) {
  EXPECT_EQ(cs::task_format_list("char_lm"), "auto, text, ptb_char or text8");
  EXPECT_EQ(cs::task_format_list("word_lm"), "auto, text or ptb_word");
  EXPECT_EQ(cs::task_format_list("seq2seq"), "auto, parallel, gigaword or headlines");
  EXPECT_EQ(cs::task_format_list("cloze"), "auto or cbt");
  cstest::expect_user_error([] { cs::check_format_for_task(DatasetFormat::PtbWord, "char_lm"); },
                            {"dataset.format", "'ptb_word'", "char_lm", "auto, text, ptb_char or text8"});
  cstest::expect_user_error([] { cs::check_format_for_task(DatasetFormat::Cbt, "classify"); },
                            {"'cbt'", "classify", "jsonl", "semeval2014_xml"});
  cstest::expect_user_error([] { cs::check_format_for_task(DatasetFormat::Text8, "cloze"); },
                            {"'text8' is not a cloze format", "auto or cbt"});
  EXPECT_EQ(cs::format_task_error(DatasetFormat::Cbt, "cloze"), "");
  EXPECT_EQ(cs::format_task_error(DatasetFormat::Auto, "seq2seq"), "");
  // Every format outside a task's set is refused, every one inside it accepted.
  for (const auto& t : registered_tasks())
    for (const auto& r : cs::dataset_formats()) {
      const bool in = std::find(r.tasks.begin(), r.tasks.end(), t) != r.tasks.end();
      EXPECT_EQ(cs::format_task_error(r.format, t).empty(), in) << t << " " << r.name();
    }
}

TEST(DatasetFormats, autoDetectsEachPattern) {
  // char_lm: a directory or ptb.char.* -> ptb_char; text8* -> text8; anything else -> text.
  EXPECT_EQ(detect(tmp("char"), "char_lm"), "text");  // not there yet: no pattern but the fallback
  touch("char/ptb.char.train.txt");
  EXPECT_EQ(detect(tmp("char"), "char_lm"), "ptb_char");
  EXPECT_EQ(detect(tmp("char/ptb.char.train.txt"), "char_lm"), "ptb_char");
  EXPECT_EQ(detect(touch("text8"), "char_lm"), "text8");
  EXPECT_EQ(detect(touch("book.txt"), "char_lm"), "text");
  // word_lm: a directory holding ptb.train.txt, or a ptb.* file next to one -> ptb_word.
  EXPECT_EQ(detect(tmp("word"), "word_lm"), "text");
  touch("word/ptb.train.txt");
  EXPECT_EQ(detect(tmp("word"), "word_lm"), "ptb_word");
  EXPECT_EQ(detect(touch("word/ptb.valid.txt"), "word_lm"), "ptb_word");
  EXPECT_EQ(detect(touch("word/other.txt"), "word_lm"), "text");
  // seq2seq: *.jsonl -> headlines; train.article.txt -> gigaword; anything else -> parallel.
  EXPECT_EQ(detect(touch("mails.jsonl"), "seq2seq"), "headlines");
  touch("giga/train.article.txt");
  EXPECT_EQ(detect(tmp("giga"), "seq2seq"), "gigaword");
  touch("iwslt/train.de");
  EXPECT_EQ(detect(tmp("iwslt"), "seq2seq"), "parallel");
  // classify / absa: one pattern each, and no fallback.
  EXPECT_EQ(detect(touch("spam.jsonl"), "classify"), "jsonl");
  EXPECT_EQ(detect(touch("spam.json"), "classify"), "jsonl");
  EXPECT_EQ(detect(touch("restaurants.xml"), "absa"), "semeval2014_xml");
  touch("mr/rt-polarity.pos");
  EXPECT_EQ(detect(tmp("mr"), "classify"), "pos_neg_lines");
  touch("subj/quote.tok.gt9.5000");
  EXPECT_EQ(detect(tmp("subj"), "classify"), "subj_lines");
  touch("imdb/train/pos/1_9.txt");
  EXPECT_EQ(detect(tmp("imdb"), "classify"), "aclimdb");
  touch("imdb2/aclImdb/train/pos/1_9.txt");
  EXPECT_EQ(detect(tmp("imdb2"), "classify"), "aclimdb");
  touch("sst/dev.txt");
  EXPECT_EQ(detect(tmp("sst"), "classify"), "sst_trees");
  touch("semeval/Laptop_Train_v2.xml");
  EXPECT_EQ(detect(tmp("semeval"), "absa"), "semeval2014_xml");
  touch("unknown/readme.md");
  cstest::expect_user_error([] { cs::detect_dataset_format(tmp("unknown"), "classify"); },
                            {"cannot tell the format", tmp("unknown"), "jsonl, pos_neg_lines", "semeval2014_xml"});
  // cloze: a CBT directory, whatever it holds.
  EXPECT_EQ(detect(tmp("unknown"), "cloze"), "cbt");
  // A format given is kept (check_format_for_task checks it).
  EXPECT_EQ(cs::detect_dataset_format(tmp("sst"), "classify", DatasetFormat::Jsonl), DatasetFormat::Jsonl);
  // Every row's patterns can be described.
  for (const auto& r : cs::dataset_formats())
    for (const auto& p : r.patterns) EXPECT_FALSE(cs::describe_pattern(p).empty()) << r.name();
}

TEST(DatasetFormats, theOptionsChoicesAreTheRegistrysNames) {
  std::vector<std::string> registry = {"auto"};
  for (const auto& r : cs::dataset_formats()) registry.push_back(r.name());
  const cs::OptionSpec* format = nullptr;
  const auto specs = cs::dataset_option_table().specs();
  for (const auto& s : specs)
    if (s.key == "format") format = &s;
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->type, cs::OptType::Enum);
  EXPECT_EQ(format->choices, registry);
  EXPECT_EQ(format->default_value, "auto");
  // The help lists each task's formats.
  for (const auto& r : cs::dataset_formats()) EXPECT_TRUE(cstest::contains(format->help, r.name())) << r.name();
  for (const char* t : {"char_lm", "word_lm", "seq2seq", "classify", "absa", "cloze"})
    EXPECT_TRUE(cstest::contains(format->help, std::string(t) + ": ")) << t;
  // The binding reads each name as its enumerator, and refuses others with the validator's message.
  for (const auto& r : cs::dataset_formats())
    EXPECT_EQ(cs::dataset_option_table().read_partial({{"format", r.name()}}).format, r.format);
  cstest::expect_user_error(
      [] {
        cs::dataset_option_table().read_partial({{"format", "csv"}});
      },
      {"dataset.format", "\"csv\"", "ptb_char"});
}

TEST(DatasetFormats, aConfigWithAnotherTasksFormatIsInvalid) {
  auto format_errors = [](const std::string& task, const std::string& format) {
    std::vector<std::string> v;
    const cs::json cfg = {{"task", {{"name", task}}}, {"dataset", {{"path", tmp("x")}, {"format", format}}}};
    for (const auto& e : cs::validate_config(cfg))
      if (e.path == "dataset.format") v.push_back(e.message);
    return v;
  };
  const auto errs = format_errors("char_lm", "cbt");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_TRUE(cstest::contains(errs[0], "'cbt' is not a char_lm format")) << errs[0];
  EXPECT_TRUE(cstest::contains(errs[0], "auto, text, ptb_char or text8")) << errs[0];
  EXPECT_TRUE(format_errors("char_lm", "text8").empty());
  EXPECT_TRUE(format_errors("cloze", "auto").empty());
  EXPECT_EQ(format_errors("cloze", "jsonl").size(), 1u);
}

}  // namespace test_dataset_formats
