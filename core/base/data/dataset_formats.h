// The dataset-format registry: every value of dataset.format, in one table.
//
// Design. DatasetFormat names each format a loader reads (plus "auto"); its enum_names are the
// choices of the dataset.format option (config/common_options.h binds it with t.choice). The
// registry (dataset_formats()) holds one row per format: its name, the tasks that read it, the
// file patterns "auto" detects it by, a one-line description and the loader that reads it. The
// loaders and tasks never compare format strings: they ask the registry which formats a task
// reads (check_format_for_task refuses the others with one message naming the task, the value
// and the accepted ones) and which format a path looks like (detect_dataset_format).
//
// Adding a format: add the enumerator and its name to DatasetFormat / enum_names, add its row
// to kFormats in dataset_formats.cpp (tasks, patterns, description, loader), and read it in the
// loader the row names. tests/core/test_dataset_formats.cpp checks that every row is read by a
// task and that the option's choices are the registry's names.
#pragma once
#include <string>
#include <vector>

#include "config/option_spec.h"

namespace cs {

enum class DatasetFormat {
  Auto,
  Text,
  PtbChar,
  Text8,
  PtbWord,
  Parallel,
  Gigaword,
  Headlines,
  Jsonl,
  PosNegLines,
  SubjLines,
  Aclimdb,
  SstTrees,
  Semeval2014Xml,
  Cbt
};
constexpr EnumNames<DatasetFormat, 15> enum_names(DatasetFormat) {
  return {{{DatasetFormat::Auto, "auto"},
           {DatasetFormat::Text, "text"},
           {DatasetFormat::PtbChar, "ptb_char"},
           {DatasetFormat::Text8, "text8"},
           {DatasetFormat::PtbWord, "ptb_word"},
           {DatasetFormat::Parallel, "parallel"},
           {DatasetFormat::Gigaword, "gigaword"},
           {DatasetFormat::Headlines, "headlines"},
           {DatasetFormat::Jsonl, "jsonl"},
           {DatasetFormat::PosNegLines, "pos_neg_lines"},
           {DatasetFormat::SubjLines, "subj_lines"},
           {DatasetFormat::Aclimdb, "aclimdb"},
           {DatasetFormat::SstTrees, "sst_trees"},
           {DatasetFormat::Semeval2014Xml, "semeval2014_xml"},
           {DatasetFormat::Cbt, "cbt"}}};
}

// How a path is recognised as a format by "auto" detection.
enum class PathMatch {
  IsDir,         // the path is a directory
  NameStarts,    // the path's file name starts with `arg`
  NameEnds,      // the path ends with `arg`
  DirHas,        // the path is a directory holding the file or directory `arg`
  DirHasEnding,  // the path is a directory holding an entry whose name ends with `arg`
  SiblingHas,    // the file name starts with `arg` and its directory (or the path, a directory) holds `arg2`
  Anything,      // any path: the task's fallback, tried after every other pattern
};
struct FilePattern {
  PathMatch match;
  const char* arg = "";
  const char* arg2 = "";
};
// Whether `path` matches the pattern, and the pattern in words ("a directory holding dev.txt").
bool path_matches(const FilePattern& p, const std::string& path);
std::string describe_pattern(const FilePattern& p);

struct DatasetFormatInfo {
  DatasetFormat format;
  std::vector<std::string> tasks;     // the tasks that read it
  std::vector<FilePattern> patterns;  // what "auto" detects it by (per task, in registry order)
  const char* description;            // one line
  const char* loader;                 // the function that reads it
  const char* name() const { return enum_name(format); }
};

// Every format but auto, in the order of enum_names.
const std::vector<DatasetFormatInfo>& dataset_formats();
// The row of a format; nullptr for auto.
const DatasetFormatInfo* dataset_format_info(DatasetFormat f);
// The format named `name`, or nullopt.
std::optional<DatasetFormat> dataset_format_named(const std::string& name);

// The formats `task` reads (registry order; auto not included).
std::vector<DatasetFormat> task_formats(const std::string& task);
// "auto, text, ptb_char or text8": what dataset.format may be for `task` (auto first).
std::string task_format_list(const std::string& task);
// Whether `task` reads `f` (auto: always).
bool task_reads_format(const std::string& task, DatasetFormat f);
// `f` when `task` reads it (or it is auto); otherwise throws UserError
// "dataset.format: 'x' is not a <task> format (task <task> reads auto, a, b or c)".
DatasetFormat check_format_for_task(DatasetFormat f, const std::string& task);
// The message check_format_for_task throws ("" when the format fits), without the
// "dataset.format: " prefix (for config checks, which name the path themselves).
std::string format_task_error(DatasetFormat f, const std::string& task);

// "auto" for `task`: the first format of the task whose pattern `path` matches (a fallback
// pattern, PathMatch::Anything, only when no other does). None: throws UserError
// "dataset.path: cannot tell the format of '<path>'; set dataset.format (a, b, ...)".
// `f` other than auto is returned as it is (check_format_for_task checks it).
DatasetFormat detect_dataset_format(const std::string& path, const std::string& task,
                                    DatasetFormat f = DatasetFormat::Auto);

// The help text of dataset.format: the formats each task reads, from the registry.
std::string dataset_format_help();

}  // namespace cs
