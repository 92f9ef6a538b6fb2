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
  std::string text;  // what to print on stdout
  int status = 0;    // the exit status: 0, or 2 for a bare command that needs a subcommand or SPEC
};

// The answer to a command line (the words after the program's name) that asks for help or the
// version: the top-level usage for none, --help, -h or help; a command's text for CMD ... --help.
// std::nullopt when it asks for neither, and for `analyze --help`, whose list of kinds comes from
// the analysis registry of the core (the program answers it).
std::optional<HelpAnswer> help_for(const std::vector<std::string>& args);

// The top-level usage (cellscope-cli --help).
std::string usage_text();

}  // namespace cli
