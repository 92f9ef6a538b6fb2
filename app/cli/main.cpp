// cellscope-cli: everything a user can do, headless. Exit status: 0 success,
// 1 the work failed (e.g. the loss became NaN), 2 bad input (usage, config, data).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "util/abandoned.h"
#include "util/cpu_cache.h"
#include "cli.h"
#include "util/error.h"

namespace {

void print_usage() {
  std::cout << "cellscope-cli " << CELLSCOPE_VERSION << " - train, compare and look inside recurrent cells\n\n"
            << "usage: cellscope-cli COMMAND [options]   (cellscope-cli COMMAND --help for details)\n\n"
            << "commands:\n"
            << "  info       LibTorch, BLAS, threads and CUDA in use\n"
            << "  datasets   known datasets and whether they are fetched\n"
            << "  fetch      download and convert the default corpora into the data cache\n"
            << "  presets    the bundled configurations\n"
            << "  validate   check a configuration and print every problem\n"
            << "  train      train a model (CONFIG is a JSON file or a preset name)\n"
            << "  eval       evaluate a run's checkpoint on a split\n"
            << "  label      print or set a run's label (its short name in tables and legends)\n"
            << "  params     parameter count of a configuration, by module\n"
            << "  bench      training-throughput benchmark of a cell\n"
            << "  analyze    the papers' analyses of a trained run (relevance, BPC by length)\n"
            << "  cv         k-fold cross-validation (sentence tasks): one run per fold + summary\n"
            << "  sweep      a grid of options x seeds as runs, resumable; the papers' tables from it\n"
            << "  generate   sample text from a char-LM or word-LM run, with per-token probabilities\n"
            << "  cloze      cloze reading comprehension: scores (a run's candidate probabilities, JSONL), rerank\n"
            << "  decode     beam-search decodes of a seq2seq run's split, with BLEU / ROUGE vs the lead baseline\n"
            << "  report     SPEC --out DIR: figures, tables, report.md and a manifest re-rendered from runs; --check DIR\n"
            << "  export     RUN_DIR --out DIR: a trained run for plain PyTorch (state_dict, config, vocabulary, reference batch)\n"
            << "             export tensorboard RUN_DIR|WORKSPACE --out LOGDIR: runs as TensorBoard event files\n"
            << "  --version  print the version\n";
}

}  // namespace


static int run_main(int argc, char** argv);

int main(int argc, char** argv) {
  const int rc = run_main(argc, argv);
  // A thread left running (a script cell's trial call that never returned, util/abandoned.h):
  // end without exit()'s static destructors, which would tear down what it still uses.
  if (cs::abandoned_threads() > 0) {
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(rc);
  }
  return rc;
}

static int run_main(int argc, char** argv) {
  cs::install_cpu_cache();  // large CPU blocks reused rather than page-faulted in every step (util/cpu_cache.h)
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "cellscope-cli " << CELLSCOPE_VERSION << "\n";
    return 0;
  }
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  static const std::map<std::string, int (*)(const std::vector<std::string>&)> commands = {
      {"info", cli::cmd_info},         {"datasets", cli::cmd_datasets}, {"presets", cli::cmd_presets},
      {"validate", cli::cmd_validate}, {"train", cli::cmd_train},       {"eval", cli::cmd_eval},
      {"params", cli::cmd_params},     {"bench", cli::cmd_bench},       {"analyze", cli::cmd_analyze},
      {"cv", cli::cmd_cv},             {"fetch", cli::cmd_fetch},
      {"sweep", cli::cmd_sweep},
      {"generate", cli::cmd_generate},
      {"cloze", cli::cmd_cloze},
      {"label", cli::cmd_label},
      {"decode", cli::cmd_decode},
      {"export", cli::cmd_export},
      {"report", cli::cmd_report},
  };
  auto it = commands.find(cmd);
  if (it == commands.end()) {
    std::cerr << "cellscope-cli: unknown command '" << cmd << "'\n\n";
    print_usage();
    return 2;
  }
  try {
    return it->second(rest);
  } catch (const cs::UserError& e) {
    std::cerr << "cellscope-cli " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const cli::UsageError& e) {
    std::cerr << "cellscope-cli " << cmd << ": " << e.what() << "\n(see: cellscope-cli " << cmd << " --help)\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "cellscope-cli " << cmd << ": out of memory (reduce the model, batch or sequence length)\n";
    return 1;
  } catch (const std::exception& e) {
    std::string w = e.what();
    std::cerr << "cellscope-cli " << cmd << ": error: " << w.substr(0, w.find("\nException raised from")) << "\n";
    return 1;
  }
}
