// cellscope-cli-full's main() as a function (program.cpp), LibTorch-free to include.
#pragma once

namespace cli {
// Everything main() does: the command named by argv[1] with the rest of argv, its exit status
// returned; a process with an abandoned thread (util/abandoned.h) ends here with std::_Exit.
int program_main(int argc, char** argv);
}  // namespace cli
