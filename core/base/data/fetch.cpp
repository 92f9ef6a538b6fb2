#include "data/fetch.h"

#include <sys/wait.h>

#include <cstdio>

#include "util/error.h"
#include "util/paths.h"

namespace cs {

namespace {

// POSIX shell single-quoting.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

}  // namespace

std::string fetch_hint() {
  return "run `cellscope-cli fetch` (or `bash " + fetch_script_path() + "`) to download and convert it into '" +
         data_cache_dir() + "' (needs the network once, and nodejs + npm)";
}

std::string FetchResult::error_summary() const {
  if (ok()) return "";
  std::string s;
  if (exit_code < 0) {
    s = "could not start '" + script + "'.";
  } else {
    s = "fetching into '" + dest + "' failed (" + script + " exited with status " + std::to_string(exit_code) + ")";
    // The script's diagnostics are the lines naming it ("fetch.sh: ...") and their indented details.
    std::string detail;
    bool in_error = false;
    for (const auto& l : output) {
      if (l.rfind("fetch.sh:", 0) == 0) in_error = true;
      if (in_error) detail += "\n  " + l;
    }
    if (detail.empty())
      for (size_t i = output.size() > 5 ? output.size() - 5 : 0; i < output.size(); ++i) detail += "\n  " + output[i];
    s += detail.empty() ? "." : ":" + detail;
  }
  s += "\nFix that (e.g. connect to the network) and retry with `cellscope-cli fetch` (or `bash " + script + " " +
       dest + "`); the converted files can also be copied by hand into '" + dest + "'.";
  return s;
}

FetchResult fetch_datasets(const std::string& dest_in, const std::function<void(const std::string&)>& on_line) {
  FetchResult r;
  r.script = fetch_script_path();
  r.dest = dest_in.empty() ? data_cache_dir() : dest_in;
  if (!file_exists(r.script))
    throw UserError("the dataset fetch script '" + r.script +
                    "' does not exist (reinstall cellscope, or set CELLSCOPE_FETCH_SCRIPT)");
  make_dirs(r.dest);
  const std::string cmd = "bash " + shell_quote(r.script) + " " + shell_quote(r.dest) + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  // fgets returns at each newline, so progress lines arrive as the script prints them.
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), p)) {
    line += buf;
    if (line.empty() || line.back() != '\n') continue;  // a longer line: keep reading
    line.pop_back();
    r.output.push_back(line);
    if (on_line) on_line(line);
    line.clear();
  }
  if (!line.empty()) {
    r.output.push_back(line);
    if (on_line) on_line(line);
  }
  const int st = ::pclose(p);
  r.exit_code = (st >= 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace cs
