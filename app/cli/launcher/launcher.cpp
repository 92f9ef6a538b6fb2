// cellscope-cli, the command users type: answers help and the version itself (help.h) and
// executes cellscope-cli-full, the program beside it, for everything else, with the same
// arguments, environment and process ID (execv: a signal sent to this PID reaches the program,
// and its exit status is the command's).
//
// Why two executables: LibTorch's start-up (loading some 300 libraries and registering its
// operators) costs about 0.7 CPU-s in every process that links it, whatever the process does.
// `--help`, the man page (help2man runs every command's --help) and bash completion (which reads
// the help texts at each first TAB) paid it for printing text. This launcher links no LibTorch,
// so they take milliseconds; the work itself pays nothing more than the exec.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "help.h"
#include "util/paths.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (const auto help = cli::help_for(args)) {
    std::cerr << help->error;
    std::cout << help->text;
    return help->status;
  }
  const std::string dir = cs::executable_dir();
  const std::string full = (dir.empty() ? std::string(".") : dir) + "/cellscope-cli-full";
  std::vector<char*> av(argv, argv + argc);
  av.push_back(nullptr);
  ::execv(full.c_str(), av.data());
  const int err = errno;
  std::cerr << "cellscope-cli: cannot run " << full << ": " << std::strerror(err)
            << " (the program that does the work, installed beside cellscope-cli; reinstall Cellscope)\n";
  return err == ENOENT ? 127 : 126;
}
