// Shared helpers of the fuzz targets (tests/fuzz/README.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace csfuzz {

// A private scratch directory for this process (created once, under $TMPDIR or /tmp,
// removed at exit). Loaders read files, so each input is written there first.
const std::string& scratch_dir();
// Write `data` to scratch_dir()/name (parent folders created) and return the path.
std::string write_file(const std::string& name, const std::string& data);
// Empty the scratch directory (between inputs that create several files).
void clear_scratch();
// Split an input into at most `max_parts` parts at the separator line "\n----\n"
// (the last part keeps any further separators).
std::vector<std::string> split_parts(const std::string& data, size_t max_parts);

// Write an "archive" input into scratch_dir()/`root`: parts (split_parts, at most
// `max_files`), each "<relative path>\n<content>". Paths are tamed: only [A-Za-z0-9._-]
// in each component, no empty, "." or ".." components, at most 4 deep and 64 bytes per
// component (an empty result becomes "f"). Returns the written paths in order.
std::vector<std::string> write_archive(const std::string& root, const std::string& data, size_t max_files);

// Run `body`; the expected error (cs::UserError: the CLI prints it and exits 2) is swallowed,
// anything else escaping aborts with the exception's type and text (a finding): a
// nlohmann::json type_error or parse_error that escapes a loader is exit 1 with library text
// (tests/core/test_bad_input.cpp). A target that calls parse_json itself handles its parse_error.
template <class F>
void expect_only_user_errors(F&& body);
[[noreturn]] void unexpected(const char* kind, const char* what);

}  // namespace csfuzz

#include <exception>
#include <typeinfo>
#include "util/error.h"

template <class F>
void csfuzz::expect_only_user_errors(F&& body) {
  try {
    body();
  } catch (const cs::UserError&) {
  } catch (const std::exception& e) {
    unexpected(typeid(e).name(), e.what());
  } catch (...) {
    unexpected("non-std exception", "");
  }
}
