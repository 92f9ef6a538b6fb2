// Loaders for the sentence-level datasets (tasks classify and absa), in the
// formats researchers bring (none can be downloaded by Cellscope):
//   jsonl            one JSON object per line: {"text": ..., "label": ..., ["split": train|valid|test]}
//                    (SpamAssassin and State of the Union as converted by datasets/fetch.sh)
//   pos_neg_lines    MR: <dir>/rt-polarity.pos and rt-polarity.neg, one snippet per line, Latin-1
//   subj_lines       SUBJ: <dir>/quote.tok.gt9.5000 (subjective) and plot.tok.gt9.5000 (objective), Latin-1
//   aclimdb          IMDB: <dir>/{train,test}/{pos,neg}/<id>_<rating>.txt, one review per file ("<br />" = space)
//   sst_trees        SST: <dir>/{train,dev,test}.txt, one PTB-style tree per line; the root label is the
//                    sentence label (0-4), the leaves are the tokens
//   semeval2014_xml  SemEval-2014 Task 4: <sentence id><text/><aspectTerms><aspectTerm term polarity from to/>
//                    (one example per aspect term)
// Every malformed input throws UserError naming the file and the line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/common_options.h"
#include "config/json.h"

namespace cs {

struct TextExample {
  std::string text;
  std::string label;
  std::string split;          // "train" | "valid" | "test" when the source gives it, else ""
  std::string aspect;         // absa: the aspect term
  std::string group;          // absa: the sentence id (examples of one sentence share it)
  bool hard = false;          // absa: the sentence has aspects of different polarities (HDS)
  bool pretokenized = false;  // SST: text is space-separated tokens
};

std::vector<TextExample> load_jsonl_examples(const std::string& path, const std::string& text_field = "text",
                                             const std::string& label_field = "label",
                                             const std::string& split_field = "split");
std::vector<TextExample> load_pos_neg_lines(const std::string& dir);  // labels "pos", "neg"
std::vector<TextExample> load_subj_lines(const std::string& dir);     // labels "subjective", "objective"
std::vector<TextExample> load_aclimdb(const std::string& dir);        // labels "pos", "neg"; split train/test
// classes: 5 (labels "0".."4") or 2 (neutral dropped; "neg" for 0-1, "pos" for 3-4).
std::vector<TextExample> load_sst_trees(const std::string& dir, int classes);
// One SemEval-2014 XML file; `split` is stored in each example. Polarity labels as in the file
// (positive, negative, neutral, conflict); `hard` set per sentence.
std::vector<TextExample> load_semeval_xml(const std::string& file, const std::string& split);
// Parse one PTB-style tree: returns the root label and appends the leaves. `where` names file:line.
int parse_sst_tree(const std::string& line, std::vector<std::string>& leaves, const std::string& where);

// Mark `hard` on SemEval examples: sentences (same group) with >= 2 aspects of >= 2 different polarities.
void mark_hard_sentences(std::vector<TextExample>& ex);

// Where a classify/absa "dataset" section points: path and format (resolved from
// dataset.name via the known-dataset table when dataset.path is unset).
struct TextDatasetLocation {
  std::string name, path;
  DatasetFormat format = DatasetFormat::Auto;  // resolved: one of the task's (data/dataset_formats.h)
};
// `dataset`: the "dataset" section's options (read_dataset_options). A format the task does not
// read is refused naming the task and its formats; auto is told from the path (or the dataset).
TextDatasetLocation resolve_text_dataset(const DatasetOptions& dataset, const std::string& task);
// Dataset names usable by a task (for messages and the config check).
std::vector<std::string> text_dataset_names(const std::string& task);

// absa's dataset.domain: the SemEval-2014 domain whose Train/Test files a directory is read for. auto: the
// dataset's own (dataset.name = semeval2014-laptops: laptops; -restaurants, or a directory of your own:
// restaurants).
enum class AbsaDomain { Auto, Restaurants, Laptops };
constexpr EnumNames<AbsaDomain, 3> enum_names(AbsaDomain) {
  return {{{AbsaDomain::Auto, "auto"}, {AbsaDomain::Restaurants, "restaurants"}, {AbsaDomain::Laptops, "laptops"}}};
}

// How load_text_examples reads the sentence datasets: classify / absa's dataset.* keys. tasks/classify.h's
// SentenceOptions derives from it, so these members are the options' only defaults.
struct TextExampleOptions {
  std::string text_field = "text";  // jsonl: the field holding the text
  std::string label_field = "label";
  std::string split_field = "split";
  int64_t sst_classes = 5;               // sst_trees (classify)
  AbsaDomain domain = AbsaDomain::Auto;  // semeval2014_xml directories (absa)
};

// Load every example of a located dataset (split tags where the source has them).
std::vector<TextExample> load_text_examples(const TextDatasetLocation& loc, const TextExampleOptions& o);

}  // namespace cs
