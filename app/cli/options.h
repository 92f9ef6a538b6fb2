// Every option of cellscope-cli, declared once (issue #54 item 2): its name, whether it takes a
// value and what value, its help line with the default, its closed set of choices. The parser
// (args.cpp: parse(a, "train")) accepts exactly these, the help texts list them (help.cpp appends
// options_help() to each command's text), and the man page and bash completion read that list from
// the help (packaging/man/make-man.sh, packaging/completion/cellscope-cli), so none of the four can
// name an option another does not know. LibTorch-free: the launcher answers --help from it too.
// Notes: app/cli/CLI_NOTES.md, "One declaration per option".
#pragma once

#include <string>
#include <vector>

namespace cli {

struct OptionSpec {
  std::string name;                  // without the dashes: "run-dir"
  std::string value;                 // "" for a flag; else what it takes, as the help writes it: N, DIR
  std::string help;                  // one sentence, the default in it
  std::vector<std::string> choices;  // a closed set: the parser refuses any other value (else empty)
  bool hidden = false;               // the program's own (a worker's, a child process's): parsed, not listed
};

// One command line shape: "train", "sweep run", "cloze scores", "bench --peer" (bench's modes are
// picked by a flag, each with its own options).
struct CommandSpec {
  std::string path;
  std::vector<OptionSpec> options;
};

// Every declared command, in the order of the top-level usage.
const std::vector<CommandSpec>& command_specs();

// The declaration of PATH; std::logic_error for an undeclared one (a programming error).
const CommandSpec& command_spec(const std::string& path);

// The options block(s) of a help text: "options:" and one line per listed option of PATH, or, for
// several paths (or `titled`), an "options of PATH:" block each. Each line: two spaces, --name VALUE padded to a
// column, the help (wrapped, continuation lines indented to the column), the choices as VALUE.
std::string options_help(const std::vector<std::string>& paths, bool titled = false);

}  // namespace cli
