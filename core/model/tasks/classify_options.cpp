// The sentence tasks' options (one table per task: classify, absa), their cross-field
// check and their registration; the tasks themselves are in classify.cpp.
#include <string>
#include <vector>

#include "cells/registry.h"
#include "config/common_options.h"
#include "data/tokenizer.h"
#include "tasks/classify.h"
#include "util/error.h"

namespace cs {
// ---------------------------------------------------------------- registration
namespace {

// A TextExampleOptions member (the loader's, data/text_datasets.h) as a member of SentenceOptions.
template <class T>
T SentenceOptions::*loader_member(T TextExampleOptions::*member) {
  return static_cast<T SentenceOptions::*>(member);
}

// The options both sentence tasks have ("dataset", "model", "training" paths).
template <class Table>
void add_sentence_common(Table& t) {
  using O = SentenceOptions;
  using L = TextExampleOptions;
  const std::vector<std::string> both = {"classify", "absa"};
  t.field("dataset.text_field", loader_member(&L::text_field), "JSONL: field holding the text.").tasks(both);
  t.field("dataset.label_field", loader_member(&L::label_field),
          "JSONL: field holding the label (string, integer or boolean).")
      .tasks(both);
  t.field(
       "dataset.split_field", loader_member(&L::split_field),
       "JSONL: field holding train/valid/test when the file has a split of its own (\"\" = ignore it and split by fractions).")
      .tasks(both);
  t.field("dataset.lowercase", &O::lowercase,
          "Lower-case words when tokenizing (tokenizer icu: every script; legacy: ASCII letters only).")
      .tasks(both);
  t.choice("dataset.tokenizer", &O::tokenizer, tokenizer_option_help()).tasks(both);
  t.field("dataset.locale", &O::locale, locale_option_help()).tasks(both);
  t.field("dataset.max_len", &O::max_len, 0, 1e9, "Keep only the first N tokens of each text (0 = all).").tasks(both);
  t.field("dataset.max_vocab", &O::max_vocab, 0, 1e9,
          "Vocabulary truncation by descending frequency in the training split (0 = all; CRU paper: 50,000 for IMDB).")
      .tasks(both);
  t.field("dataset.min_freq", &O::min_freq, 1, 1e9, "Words seen fewer times in the training split map to <unk>.")
      .tasks(both);
  t.field(
       "dataset.folds", &O::folds, 0, 100,
       "k-fold cross-validation: number of folds (0 = off; CRU paper: 10 for MR and SUBJ). `cellscope-cli cv` runs every fold.")
      .tasks(both);
  t.field("dataset.fold", &O::fold, 0, 99, "k-fold cross-validation: the fold used as the test part (0..folds-1).")
      .tasks(both);
  t.field("dataset.split_seed", &O::split_seed, 0, 4294967295.0,
          "Seed of the deterministic split (fractions, carved valid part, folds); independent of training.seed.")
      .tasks(both);
  t.field(
       "model.pretrained_embeddings", &O::pretrained_embeddings,
       "GloVe-format text file of word vectors (size model.embed) to initialise the embeddings; missing words stay random "
       "(coverage reported as pretrained_coverage). CRU paper: 200-d GloVe 840B for MR and SUBJ.")
      .tasks(both);
  t.field("model.freeze_embeddings", &O::freeze_embeddings,
          "Keep the embeddings fixed (the CRU paper fine-tunes them).")
      .tasks(both);
  t.choice("model.fc_activation", &O::fc_activation,
           "Activation of the fully connected layer (not stated in the CRU paper).")
      .tasks(both);
  t.field("training.eval_batch", &O::eval_batch, 1, 65536, "Sentences per evaluation batch.").tasks(both);
  t.field("training.embed_l2", &O::embed_l2, 0, 1,
          "L2 penalty coefficient on the embedding matrix: loss += embed_l2 * sum(E^2) (CRU paper: 1e-4).")
      .tasks(both);
}

}  // namespace

TokenizerOptions sentence_tokenizer_options(const SentenceOptions& o) {
  TokenizerOptions to;
  to.rules = o.tokenizer;
  to.locale = o.locale;
  to.legacy_rules = LegacyRules::Sentence;
  to.lowercase = o.lowercase;
  return to;
}

const OptionTable<SentenceOptions>& sentence_option_table(bool absa) {
  using O = SentenceOptions;
  static const auto classify = [] {
    OptionTable<O> t("");
    add_sentence_common(t);
    t.field("model.fc", &O::fc, 0, 65536,
            "Size of the fully connected layer after the encoder (CRU paper: 1024; 0 = none).")
        .tasks({"classify"});
    t.field("dataset.sst_classes", loader_member(&TextExampleOptions::sst_classes), 2, 5,
            "SST: 5 (fine-grained) or 2 (binary, neutral sentences dropped).")
        .tasks({"classify"});
    return t;
  }();
  static const auto absa_table = [] {
    O d;
    d.fc = 0;  // MZU paper: no fully connected layer for ABSA
    OptionTable<O> t("", d);
    add_sentence_common(t);
    t.field("model.fc", &O::fc, 0, 65536, "Optional fully connected layer before the softmax (MZU paper: none).")
        .tasks({"absa"});
    t.choice("dataset.subset", &O::subset,
             "ds = the full dataset; hds = the hard subset: sentences with several aspects of different polarities, "
             "one copy per aspect (MZU paper). With ds, evaluation also reports accuracy_hds.")
        .tasks({"absa"});
    t.choice("dataset.domain", loader_member(&TextExampleOptions::domain),
             "SemEval-2014 directory: which domain's Train/Test files to read (auto: the named dataset's, "
             "semeval2014-laptops or -restaurants; restaurants for a directory of your own).")
        .tasks({"absa"});
    t.field("dataset.drop_conflict", &O::drop_conflict,
            "Drop aspects labelled 'conflict' (the MZU paper keeps the four labels).")
        .tasks({"absa"});
    return t;
  }();
  return absa ? absa_table : classify;
}

static void sentence_check(const json& cfg, std::vector<ConfigError>& errs, const std::string& task) {
  const SentenceOptions o = sentence_option_table(task == "absa").read(cfg);
  const DatasetOptions ds = read_dataset_options(cfg.at("dataset"));
  const int64_t folds = o.folds, fold = o.fold;
  if (folds == 1) errs.push_back({"dataset.folds", "1 fold leaves nothing to train on (use 0 = off, or >= 2)"});
  if (folds > 1 && fold >= folds)
    errs.push_back({"dataset.fold", "fold " + std::to_string(fold) + " out of range for " + std::to_string(folds) +
                                        " folds (0.." + std::to_string(folds - 1) + ")"});
  if (task == "classify") {
    const int64_t c = o.sst_classes;
    if (c != 2 && c != 5) errs.push_back({"dataset.sst_classes", "expected 2 or 5, got " + std::to_string(c)});
  }
  const bool has_path = ds.path && !ds.path->empty();
  if (!has_path) {
    auto names = text_dataset_names(task);
    const std::string& n = ds.name;
    if (std::find(names.begin(), names.end(), n) == names.end()) {
      std::string l;
      for (auto& x : names) l += (l.empty() ? "" : ", ") + x;
      errs.push_back({"dataset.name",
                      "'" + n + "' is not a dataset for task " + task + " (known: " + l + "); or set dataset.path"});
    }
  }
}

void register_sentence_tasks(std::vector<TaskInfo>& out) {
  struct Def {
    const char* name;
    bool absa;
    const char* description;
  };
  const Def defs[] = {
      {"classify", false, "Sentence classification with a bidirectional encoder (CRU paper, Fig. 2); metric: accuracy"},
      {"absa", true, "Aspect-based sentiment analysis (MZU paper: SemEval-2014 Task 4, DS and HDS); metric: accuracy"},
  };
  for (const auto& d : defs) {
    TaskInfo t;
    t.name = d.name;
    t.description = d.description;
    t.unit = "sentences";
    t.options = sentence_option_table(d.absa).specs();
    const std::string name = d.name;
    const bool absa = d.absa;
    t.check = [name](const json& c, std::vector<ConfigError>& e) { sentence_check(c, e, name); };
    t.make = [absa](const json& cfg, const std::string& run_dir) -> std::unique_ptr<Task> {
      return std::make_unique<SentenceTask>(cfg, run_dir, absa);
    };
    out.push_back(std::move(t));
  }
}

}  // namespace cs
