// The CLI zygote of cellscope_core_tests: CLI processes without LibTorch's start-up.
//
// Starting cellscope-cli costs about 0.75 CPU-s before it does anything (1.9 s under ASan):
// the dynamic loader maps LibTorch's some 300 libraries and their static constructors register
// thousands of operators. The core tests start the CLI several hundred times, so that start-up
// was a large part of the suite's time. At the top of main(), while the test process is still
// single-threaded and has run nothing, it forks a zygote: a copy that has LibTorch loaded and
// initialised and then only waits. For each CLI process a test asks for, the zygote forks again
// and the new process runs the program's own main() (cli::program_main, app/cli/program.h) with
// the test's arguments, working directory, environment and standard streams, and its
// executable path set to cellscope-cli-full (so data files, the SentencePiece module and the
// workers it starts are found as the program finds them). It is a process of its own: its own
// PID, signals, exit status and exit (atexit handlers, LeakSanitizer's check, files flushed).
//
// What a forked process cannot have is what the libraries read from the environment when they
// were loaded (OpenMP's OMP_*, OpenBLAS's OPENBLAS_*, the sanitizers' options, LD_*, ...): when
// any such variable differs from what the test process started with, or CELLSCOPE_TEST_EXEC=1,
// or the zygote is not running, the program is executed as before (posix_spawn of cellscope-cli).
// Processes the CLI starts itself (sweep workers, data-parallel ranks, bench children) are always
// executed. tests/README.md, "How the core tests start the CLI".
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace cstest::zygote {
// Forks the zygote. Call first thing in main(): the process must be single-threaded (it is
// checked; otherwise no zygote and every CLI process is executed). `program` is the path of
// cellscope-cli-full, what the forked processes report as their executable.
void start(const std::string& program);
// A CLI process running `args` (argv[0] is `argv0`) with the given standard streams, or -1 when
// the zygote cannot make it (*why says why; the caller executes the program instead).
pid_t spawn(const std::string& argv0, const std::vector<std::string>& args, int in, int out, int err,
            std::string* why = nullptr);
// Whether `pid` is a process the zygote made (its parent is the zygote, not this process).
bool owns(pid_t pid);
// Waits up to timeout_ms (0: not at all) for such a process to end; true and its wait status
// (as waitpid gives it) once it has.
bool reap(pid_t pid, int* status, int timeout_ms);
// "on" or "off: <why>", for the log.
std::string state();
}  // namespace cstest::zygote
