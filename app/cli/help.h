// The help of cellscope-cli: every command's text and which command line asks for it, in one place
// shared by the program and its launcher. Neither this header nor help.cpp includes LibTorch: the
// launcher (launcher/launcher.cpp) answers --help, the man page (help2man) and bash completion from
// it without loading LibTorch, whose start-up costs some 0.7 CPU-s in every process.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cli {

// Whether a command's arguments ask for its help: -h or --help before any "--".
bool want_help(const std::vector<std::string>& a);

struct HelpAnswer {
  std::string text;   // what to print on stdout
  std::string error;  // what to print on stderr first (an unknown command, with a suggestion)
  int status = 0;     // the exit status: 0; 2 for a bare command that needs a subcommand or SPEC,
                      // and for an unknown command
};

// The answer to a command line (the words after the program's name) that asks for help or the
// version, or names no command: the top-level usage for none, --help, -h or help; a command's
// text for CMD ... --help and for help CMD [SUB]; for an unknown command, an error naming it (and
// the command it was probably meant to be) with the usage, exit 2. std::nullopt for a command
// line the program is to run, and for `analyze --help`, whose list of kinds comes from the
// analysis registry of the core (the program answers it). Also `presets --names` (preset_names()).
std::optional<HelpAnswer> help_for(const std::vector<std::string>& args);

// `cellscope-cli help --options`: every listed option of every command (options.h), one per line:
// the command path (train, sweep run, bench --peer), a tab, --name, a tab, its VALUE ("" for a flag;
// a closed set as a|b|c). What bash completion reads.
std::string options_listing();

// `help CMD [SUB ...]` as `CMD [SUB ...] --help`; any other command line as it is.
std::vector<std::string> help_as_option(const std::vector<std::string>& args);

// The bundled presets' names (every *.json of RESOURCES/presets, sorted): `presets --names`, which
// help_for answers without LibTorch for bash completion, and the program's `presets`.
std::vector<std::string> preset_names();

// The commands of the top-level usage ("  name   what it does" under "commands:").
std::vector<std::string> command_names();

// The top-level usage (cellscope-cli --help).
std::string usage_text();

}  // namespace cli
