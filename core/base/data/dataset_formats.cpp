#include "data/dataset_formats.h"

#include <algorithm>

#include "util/error.h"

namespace cs {

namespace {

using F = DatasetFormat;
using M = PathMatch;

// Tasks that read the sentence-level formats (data/text_datasets.h).
const std::vector<std::string> kSentenceTasks = {"classify", "absa"};

// The registry. Within a task "auto" tries the rows in this order (fallbacks last).
const std::vector<DatasetFormatInfo>& registry() {
  static const std::vector<DatasetFormatInfo> rows = {
      {F::Text,
       {"char_lm", "word_lm"},
       {{M::Anything}},
       "plain UTF-8 text, split by dataset.valid_fraction / test_fraction",
       "load_char_corpus (data/char_corpus.h), load_word_corpus (data/word_corpus.h)"},
      {F::PtbChar,
       {"char_lm"},
       {{M::IsDir}, {M::NameStarts, "ptb.char."}},
       "Mikolov's PTB characters: ptb.char.{train,valid,test}.txt, space-separated symbols",
       "load_char_corpus (data/char_corpus.h)"},
      {F::Text8,
       {"char_lm"},
       {{M::NameStarts, "text8"}},
       "one line of characters split 90/5/5 (Mahoney's text8)",
       "load_char_corpus (data/char_corpus.h)"},
      {F::PtbWord,
       {"word_lm"},
       {{M::SiblingHas, "ptb.", "ptb.train.txt"}},
       "Mikolov's PTB words: ptb.{train,valid,test}.txt, one sentence per line",
       "load_word_corpus (data/word_corpus.h)"},
      {F::Parallel,
       {"seq2seq"},
       {{M::Anything}},
       "a directory of {train,valid,test}.<source_lang> / .<target_lang>, one sentence per line",
       "load_parallel_dir (data/seq2seq_data.h)"},
      {F::Gigaword,
       {"seq2seq"},
       {{M::DirHas, "train.article.txt"}},
       "Gigaword article/headline pairs: {train,valid,test}.{article,title}.txt",
       "load_gigaword_dir (data/seq2seq_data.h)"},
      {F::Headlines,
       {"seq2seq"},
       {{M::NameEnds, ".jsonl"}},
       "headline generation from SpamAssassin mails (a spam-assassin.jsonl)",
       "load_headlines_jsonl (data/seq2seq_data.h)"},
      {F::Jsonl,
       kSentenceTasks,
       {{M::NameEnds, ".jsonl"}, {M::NameEnds, ".json"}},
       "one JSON object per line: text, label, optional split",
       "load_jsonl_examples (data/text_datasets.h)"},
      {F::PosNegLines,
       kSentenceTasks,
       {{M::DirHas, "rt-polarity.pos"}},
       "MR: rt-polarity.pos / .neg, one snippet per line (Latin-1)",
       "load_pos_neg_lines (data/text_datasets.h)"},
      {F::SubjLines,
       kSentenceTasks,
       {{M::DirHas, "quote.tok.gt9.5000"}},
       "SUBJ: quote.tok.gt9.5000 / plot.tok.gt9.5000, one sentence per line (Latin-1)",
       "load_subj_lines (data/text_datasets.h)"},
      {F::Aclimdb,
       kSentenceTasks,
       {{M::DirHas, "train/pos"}, {M::DirHas, "aclImdb/train/pos"}},
       "IMDB: {train,test}/{pos,neg}/<id>_<rating>.txt, one review per file",
       "load_aclimdb (data/text_datasets.h)"},
      {F::SstTrees,
       kSentenceTasks,
       {{M::DirHas, "dev.txt"}},
       "SST: {train,dev,test}.txt, one PTB-style tree per line",
       "load_sst_trees (data/text_datasets.h)"},
      {F::Semeval2014Xml,
       kSentenceTasks,
       {{M::NameEnds, ".xml"}, {M::DirHasEnding, ".xml"}},
       "SemEval-2014 Task 4 XML, one example per aspect term",
       "load_semeval_xml (data/text_datasets.h)"},
      {F::Cbt,
       {"cloze"},
       {{M::Anything}},
       "the Children's Book Test: cbtest_*_{train,valid_2000ex,test_2500ex}.txt",
       "load_cbt_dir (data/cbt_format.h)"},
  };
  return rows;
}

bool path_ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool reads(const DatasetFormatInfo& r, const std::string& task) {
  return std::find(r.tasks.begin(), r.tasks.end(), task) != r.tasks.end();
}

std::string join_names(const std::vector<DatasetFormat>& fs, const char* sep, const char* last_sep) {
  std::string s;
  for (size_t i = 0; i < fs.size(); ++i)
    s += (i == 0 ? "" : i + 1 == fs.size() ? last_sep : sep) + std::string(enum_name(fs[i]));
  return s;
}

}  // namespace

bool path_matches(const FilePattern& p, const std::string& path) {
  switch (p.match) {
    case M::IsDir:
      return dir_exists(path);
    case M::NameStarts:
      return basename_of(path).rfind(p.arg, 0) == 0;
    case M::NameEnds:
      return path_ends_with(path, p.arg);
    case M::DirHas:
      return dir_exists(path) && (file_exists(join_path(path, p.arg)) || dir_exists(join_path(path, p.arg)));
    case M::DirHasEnding:
      if (!dir_exists(path)) return false;
      for (const auto& n : list_dir(path))
        if (n.size() > std::string(p.arg).size() && path_ends_with(n, p.arg)) return true;
      return false;
    case M::SiblingHas: {
      if (dir_exists(path)) return file_exists(join_path(path, p.arg2));
      if (basename_of(path).rfind(p.arg, 0) != 0) return false;
      const auto slash = path.find_last_of('/');
      const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
      return dir_exists(dir) && file_exists(join_path(dir, p.arg2));
    }
    case M::Anything:
      return true;
  }
  return false;
}

std::string describe_pattern(const FilePattern& p) {
  const std::string a = p.arg;
  switch (p.match) {
    case M::IsDir:
      return "a directory";
    case M::NameStarts:
      return "a file name starting with " + a;
    case M::NameEnds:
      return "a path ending in " + a;
    case M::DirHas:
      return "a directory holding " + a;
    case M::DirHasEnding:
      return "a directory holding a *" + a + " file";
    case M::SiblingHas:
      return "a directory holding " + std::string(p.arg2) + ", or a " + a + "* file next to it";
    case M::Anything:
      return "anything else";
  }
  return "?";
}

const std::vector<DatasetFormatInfo>& dataset_formats() { return registry(); }

const DatasetFormatInfo* dataset_format_info(DatasetFormat f) {
  for (const auto& r : registry())
    if (r.format == f) return &r;
  return nullptr;
}

std::optional<DatasetFormat> dataset_format_named(const std::string& name) {
  return enum_from_name<DatasetFormat>(name);
}

std::vector<DatasetFormat> task_formats(const std::string& task) {
  std::vector<DatasetFormat> out;
  for (const auto& r : registry())
    if (reads(r, task)) out.push_back(r.format);
  return out;
}

std::string task_format_list(const std::string& task) {
  std::vector<DatasetFormat> fs = task_formats(task);
  fs.insert(fs.begin(), DatasetFormat::Auto);
  return join_names(fs, ", ", " or ");
}

bool task_reads_format(const std::string& task, DatasetFormat f) {
  if (f == DatasetFormat::Auto) return true;
  const DatasetFormatInfo* r = dataset_format_info(f);
  return r && reads(*r, task);
}

std::string format_task_error(DatasetFormat f, const std::string& task) {
  if (task_reads_format(task, f)) return "";
  return "'" + std::string(enum_name(f)) + "' is not a " + task + " format (task " + task + " reads " +
         task_format_list(task) + ")";
}

DatasetFormat check_format_for_task(DatasetFormat f, const std::string& task) {
  const std::string why = format_task_error(f, task);
  if (!why.empty()) throw UserError("dataset.format: " + why);
  return f;
}

DatasetFormat detect_dataset_format(const std::string& path, const std::string& task, DatasetFormat f) {
  if (f != DatasetFormat::Auto) return f;
  for (const bool fallback : {false, true})
    for (const auto& r : registry()) {
      if (!reads(r, task)) continue;
      for (const auto& p : r.patterns)
        if ((p.match == M::Anything) == fallback && path_matches(p, path)) return r.format;
    }
  throw UserError("dataset.path: cannot tell the format of '" + path + "'; set dataset.format (" +
                  join_names(task_formats(task), ", ", ", ") + ")");
}

std::string dataset_format_help() {
  std::vector<std::string> tasks;
  for (const auto& r : registry())
    for (const auto& t : r.tasks)
      if (std::find(tasks.begin(), tasks.end(), t) == tasks.end()) tasks.push_back(t);
  std::string s = "File format of the dataset: auto (told from the path, or the manifest's) or, per task, ";
  for (size_t i = 0; i < tasks.size(); ++i)
    s += (i == 0 ? "" : "; ") + tasks[i] + ": " + join_names(task_formats(tasks[i]), ", ", ", ");
  return s + ".";
}

}  // namespace cs
