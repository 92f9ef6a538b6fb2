// cellscope-cli-full: everything a user can do, headless. Users run it as cellscope-cli, the
// launcher (launcher/launcher.cpp) that answers help without LibTorch and executes this program
// for the rest. Exit status: 0 success, 1 the work failed (e.g. the loss became NaN), 2 bad input
// (usage, config, data).
#include "program.h"

int main(int argc, char** argv) { return cli::program_main(argc, argv); }
