// Qt-free harness of the core test executable `cellscope_core_tests` (GoogleTest).
// Each tests/core/test_<name>.cpp holds the GoogleTest suite named after its stem in
// CamelCase (test_char_lm.cpp -> CharLm; a parameterised test's instantiation prefix is
// that name too), and CTest runs `cellscope_core_tests --gtest_filter=CharLm.*:CharLm/*`
// for each file (see tests/CMakeLists.txt and tests/README.md).
#pragma once
#include <nlohmann/json.hpp>
#include <sys/types.h>

#include <string>
#include <vector>

namespace cstest {
// Scratch directory unique to this test process (removed at exit unless CS_KEEP_TMP=1).
std::string temp_dir();
// Path of the built cellscope-cli and of the source tree.
std::string cli_path();
std::string source_dir();
// Run cellscope-cli with args (no shell); returns its exit code, fills stdout/stderr.
// -1 when it ran past timeout_ms (it is killed; *err = "timeout"), -2 when a signal ended it.
int run_cli(const std::vector<std::string>& args, std::string* out = nullptr, std::string* err = nullptr,
            int timeout_ms = 600000);

// A cellscope-cli process started without waiting, for tests that signal or kill it or run
// several at once (what QProcess did). stdout and stderr go to files in temp_dir(), so a
// chatty child never blocks on a full pipe; out()/err() read them.
class Process {
 public:
  Process() = default;
  ~Process();  // a process still running is killed (SIGKILL) and reaped
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  bool start(const std::vector<std::string>& args);  // false (and err() says why) when it cannot start
  pid_t pid() const { return pid_; }
  bool running();             // started and not ended yet (reaps it once it has ended)
  void signal(int sig);       // kill(pid, sig) while it runs
  bool wait(int timeout_ms);  // true when it has ended within timeout_ms
  bool normal_exit() const { return ended_ && exit_code_ >= 0; }  // ended by exit(), not by a signal
  int exit_code() const { return exit_code_; }  // its exit status; -2 when a signal ended it, -1 before the end
  std::string out() const;
  std::string err() const;

 private:
  pid_t pid_ = -1;
  bool ended_ = false;
  int exit_code_ = -1;
  std::string out_path_, err_path_, start_error_;
};

// Small file helpers for tests.
std::string read_text(const std::string& path);                      // "" when missing
void write_text(const std::string& path, const std::string& bytes);  // creates parent directories
bool contains(const std::string& haystack, const std::string& needle);
bool starts_with(const std::string& s, const std::string& prefix);
int count(const std::string& haystack, const std::string& needle);  // occurrences, not overlapping
// Lines of s split at '\n' (no empty ones, as QString::split(.., Qt::SkipEmptyParts)), and fields at `sep`.
std::vector<std::string> split(const std::string& s, char sep, bool skip_empty = false);
// The JSON object in `text` (as QJsonDocument::fromJson(..).object() did): an empty object
// when `text` is not valid JSON or not an object, so a check on it fails instead of throwing.
inline nlohmann::json json_object(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}
// The lines of a run's metrics.jsonl without the wall-clock fields ("elapsed", "throughput", "wall_time"):
// what must be identical between two runs of the same training.
std::vector<nlohmann::json> comparable_metrics(const std::string& run_dir);

// Sets an environment variable for one scope, restores (or unsets) it after.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value);
  ~EnvGuard();
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::string name_, old_;
  bool had_;
};
}  // namespace cstest
