// The cloze task's options, cross-field check and registration (the task: cloze.cpp).
#include "cells/registry.h"
#include "config/common_options.h"
#include "data/manifest.h"
#include "tasks/cloze.h"
#include "util/error.h"

namespace cs {

const OptionTable<ClozeOptions>& cloze_option_table() {
  using O = ClozeOptions;
  static const auto t = [] {
    OptionTable<O> t("");
    const std::vector<std::string> c = {"cloze"};
    t.choice(
         "model.reader", &O::reader,
         "aoa = the Attention-over-Attention Reader (Cui et al. 2017); m_aoa = the CRU paper's Modified AoA Reader: "
         "document word embeddings concatenated with freq(x) = count in D / |D| (eq. 15) and CoQ(x) = count in the "
         "query (eq. 16).")
        .tasks(c);
    t.choice("model.recurrent_init", &O::recurrent_init,
             "Initialisation of the reader's recurrent matrices (both encoders, both directions): orthogonal = each "
             "gate block of w_hh a random orthogonal matrix, as the AoA Reader (Cui et al. 2017, section 4.2, after "
             "Saxe et al. 2013; the reader presets' choice); cell = the cell's own uniform initialisation (the "
             "default: runs made before the option). Cells without a w_hh matrix (the MZUs, script cells) need cell.")
        .tasks(c);
    t.choice("dataset.blank", &O::blank,
             "The blank XXXXX of a query: token = its own vocabulary entry and embedding, as in CBT and the AoA "
             "Reader; unk = read as <unk>, sharing its embedding with every unknown word (what Cellscope did "
             "before; kept to measure the difference). A run keeps what its saved vocabulary says.")
        .tasks(c);
    t.field("dataset.lowercase", &O::lowercase,
            "Lower-case every word as dataset.tokenizer says (icu: every script; legacy: ASCII letters only); XXXXX "
            "stays.")
        .tasks(c);
    t.choice("dataset.tokenizer", &O::tokenizer,
             "The CBT files are read pre-tokenised (words split at blanks); this says how dataset.lowercase folds a "
             "word: icu = NFC and full Unicode lower-casing (\"ÜBER\" -> \"über\"); legacy = ASCII letters only (runs "
             "made before the option read as legacy).")
        .tasks(c);
    t.field("dataset.locale", &O::locale, locale_option_help()).tasks(c);
    t.field("dataset.min_freq", &O::min_freq, 1, 1e9, "Words seen fewer times in the training split map to <unk>.")
        .tasks(c);
    t.field("dataset.max_vocab", &O::max_vocab, 0, 1e9,
            "Vocabulary truncation by descending frequency in the training split (0 = all).")
        .tasks(c);
    t.field("training.eval_batch", &O::eval_batch, 1, 65536, "Questions per evaluation batch.").tasks(c);
    t.field("training.embed_l2", &O::embed_l2, 0, 1,
            "L2 penalty coefficient on the embedding matrix: loss += embed_l2 * sum(E^2) (Cui et al. 2017: 1e-4).")
        .tasks(c);
    return t;
  }();
  return t;
}

void register_cloze_task(std::vector<TaskInfo>& out) {
  TaskInfo t;
  t.name = "cloze";
  t.description =
      "Cloze-style reading comprehension (CRU paper, Table 3): AoA / Modified AoA Reader over the Children's Book Test "
      "format; metric: accuracy";
  t.unit = "questions";
  t.options = cloze_option_table().specs();
  t.check = [](const json& cfg, std::vector<ConfigError>& errs) {
    // A manifest dataset of another format is refused here (a dataset.format of another task by
    // validate_config); an unknown name is refused by resolve_dataset when the task is built (the
    // cloze defaults are built on first use).
    const DatasetOptions ds = read_dataset_options(cfg.at("dataset"));
    const bool has_path = ds.path && !ds.path->empty();
    if (!has_path) {
      json man;
      try {
        man = load_manifest();
      } catch (const std::exception&) {
        return;
      }
      if (const json* e = find_manifest_entry(man, ds.name)) {
        const std::string f = e->value("format", std::string());
        if (dataset_format_named(f) != DatasetFormat::Cbt)
          errs.push_back({"dataset.name", "'" + ds.name + "' is a " + f + " dataset; task cloze needs a cbt dataset (" +
                                              "e.g. moby-dick-cbt-cn), or set dataset.path to a CBT directory"});
      }
    }
  };
  t.make = [](const json& cfg, const std::string& run_dir) -> std::unique_ptr<Task> {
    return std::make_unique<ClozeTask>(cfg, run_dir);
  };
  out.push_back(std::move(t));
}

}  // namespace cs
