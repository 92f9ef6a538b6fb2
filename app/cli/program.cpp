// The whole of cellscope-cli-full's main() (main.cpp calls it): a function of the CLI library, so
// that the core tests can run it in processes forked from a zygote that has LibTorch loaded
// already (tests/core/harness.cpp), as the program itself runs it.
#include "program.h"

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
int run_main(int argc, char** argv) {
  cs::install_cpu_cache();  // large CPU blocks reused rather than page-faulted in every step (util/cpu_cache.h)
  // Help, the version and unknown commands, as the launcher answers them (help.h); analyze
  // --help (and help analyze) falls through to the command.
  const std::vector<std::string> words(argv + 1, argv + argc);
  if (const auto help = cli::help_for(words)) {  // help_for reads `help CMD` itself (help_as_option)
    std::cerr << help->error;
    std::cout << help->text;
    return help->status;
  }
  const std::vector<std::string> args = cli::help_as_option(words);
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  static const std::map<std::string, int (*)(const std::vector<std::string>&)> commands = {
      {"info", cli::cmd_info},         {"datasets", cli::cmd_datasets},
      {"presets", cli::cmd_presets},   {"validate", cli::cmd_validate},
      {"train", cli::cmd_train},       {"eval", cli::cmd_eval},
      {"params", cli::cmd_params},     {"bench", cli::cmd_bench},
      {"analyze", cli::cmd_analyze},   {"cv", cli::cmd_cv},
      {"fetch", cli::cmd_fetch},       {"sweep", cli::cmd_sweep},
      {"generate", cli::cmd_generate}, {"cloze", cli::cmd_cloze},
      {"label", cli::cmd_label},       {"status", cli::cmd_status},
      {"decode", cli::cmd_decode},     {"export", cli::cmd_export},
      {"report", cli::cmd_report},     {"import", cli::cmd_import},
  };
  auto it = commands.find(cmd);
  if (it == commands.end()) {  // listed in the usage (help.cpp) but not here
    std::cerr << "cellscope-cli: command '" << cmd << "' is not built into this program\n";
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
}  // namespace

namespace cli {
int program_main(int argc, char** argv) {
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
}  // namespace cli
