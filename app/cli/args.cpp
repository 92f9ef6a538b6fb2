// The option parser of every cellscope-cli command (cli.h `parse`), on CLI11 (Debian's
// libcli11-dev). CLI.hpp is heavy: this is the one file that includes it (and it stays out of the
// unity batches, app/cli/CMakeLists.txt). Design notes: app/cli/CLI_NOTES.md.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "cli.h"

namespace cli {

// ------------------------------------------------------------------ Args
void Args::require_declared(const std::string& k) const {
  if (command.empty()) return;
  for (const auto& o : command_spec(command).options)
    if (o.name == k) return;
  throw std::logic_error("cellscope-cli " + command + " reads --" + k +
                         ", which it does not declare (app/cli/options.cpp)");
}

bool Args::has(const std::string& k) const {
  require_declared(k);
  return opts.count(k) > 0;
}

std::string Args::get(const std::string& k, const std::string& def) const {
  require_declared(k);
  auto r = opts.equal_range(k);
  std::string v = def;
  for (auto it = r.first; it != r.second; ++it) v = it->second;  // last wins
  return v;
}

std::vector<std::string> Args::all(const std::string& k) const {
  require_declared(k);
  std::vector<std::string> v;
  auto r = opts.equal_range(k);
  for (auto it = r.first; it != r.second; ++it) v.push_back(it->second);
  return v;
}

long long Args::get_int(const std::string& k, long long def) const {
  if (!has(k)) return def;
  const std::string v = get(k);
  size_t pos = 0;
  long long x = 0;
  bool whole = false;
  try {
    x = std::stoll(v, &pos);
    whole = pos == v.size();
  } catch (const std::exception&) {  // not a number, or out of range
  }
  if (!whole) throw UsageError("--" + k + " expects an integer, got '" + v + "'");
  return x;
}

long long Args::get_int(const std::string& k, long long def, long long lo, long long hi) const {
  const long long x = get_int(k, def);
  if (has(k) && (x < lo || x > hi))
    throw UsageError("--" + k + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got " + get(k));
  return x;
}

// ------------------------------------------------------------------ parse
namespace {

// CLI11 reads "-x" as a short option and "--k=" as "--k" followed by its value in the next
// argument; cellscope-cli has no short options and "--k=" means the empty value. Such arguments
// reach CLI11 behind a marker byte, so that it sees them as plain words, and lose it afterwards.
constexpr char kMark = '\x1f';

bool needs_mark(const std::string& s) {
  if (!s.empty() && s[0] == kMark) return true;       // keeps the mapping one-to-one
  return s.size() > 1 && s[0] == '-' && s[1] != '-';  // "-1", "-x", "-h" as a value; a lone "-" is a word already
}

std::string unmark(const std::string& s) { return !s.empty() && s[0] == kMark ? s.substr(1) : s; }

// "--name" of an argument "--name" or "--name=value"; "" for anything else.
std::string long_name(const std::string& s) {
  if (s.size() < 3 || s.compare(0, 2, "--") != 0) return "";
  return s.substr(2, s.find('=') - 2);
}

bool listed(const std::vector<std::string>& v, const std::string& k) {
  return std::find(v.begin(), v.end(), k) != v.end();
}

// The parse of `a` with these flags and valued options (CLI11).
Args parse_lists(const std::vector<std::string>& a, const std::vector<std::string>& flags,
                 const std::vector<std::string>& valued) {
  Args out;
  CLI::App app;
  app.set_help_flag();     // help is the command's own text (want_help), not CLI11's
  app.allow_extras(true);  // unknown options come back in remaining(): refused below, by name
  app.allow_windows_style_options(false);
  std::vector<std::string> positional;
  app.add_option("positional", positional)->expected(0, CLI::detail::expected_max_vector_size);
  // Each occurrence in order: a multimap keeps the order of equal keys.
  for (const auto& k : flags)
    app.add_flag("--" + k)
        ->disable_flag_override()  // --flag=x is an error (ArgumentMismatch), named below
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->each([&out, k](const std::string&) { out.opts.emplace(k, "1"); });
  for (const auto& k : valued)
    app.add_option("--" + k)
        ->type_size(1)
        ->expected(1)
        ->allow_extra_args(false)  // --set A B: B is a positional, not a second value
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->each([&out, k](const std::string& v) { out.opts.emplace(k, unmark(v)); });

  // "-x" (one dash and a letter) where an option may stand: cellscope-cli has no short options
  // but -h, so it is a mistyped option, not a CONFIG or file (those go after "--"). An option's
  // value may look so ("--dest -x"); negative numbers ("-1") stay words.
  for (size_t i = 0; i < a.size() && a[i] != "--"; ++i) {
    const std::string& s = a[i];
    const bool value = i > 0 && a[i - 1].find('=') == std::string::npos && listed(valued, long_name(a[i - 1]));
    if (!value && s.size() > 1 && s[0] == '-' && std::isalpha(static_cast<unsigned char>(s[1])))
      throw UsageError("unknown option '" + s +
                       "' (the only short option is -h; a file or preset named so goes after --)");
  }
  std::vector<std::string> args;
  args.reserve(a.size());
  bool words_only = false;  // after "--": nothing is an option, so nothing needs a marker
  for (const auto& s : a) {
    if (!words_only && s == "--") words_only = true;
    if (needs_mark(s)) args.push_back(kMark + s);
    else if (!words_only && s.size() > 3 && s.back() == '=' && s.find('=') + 1 == s.size() && long_name(s).size() > 0)
      args.push_back(s + kMark);  // "--k=": the empty value, not the next argument
    else args.push_back(s);
  }
  std::reverse(args.begin(), args.end());  // CLI11's parse(vector) takes the arguments last first
  try {
    app.parse(args);
  } catch (const CLI::ArgumentMismatch&) {
    // A flag given a value, or a valued option without one (only the last argument can lack it:
    // an option's value is the next argument, whatever it looks like).
    bool after_mark = false;
    for (const auto& s : a) {
      if (s == "--") after_mark = true;
      const std::string k = long_name(s);
      if (!after_mark && s.find('=') != std::string::npos && listed(flags, k))
        throw UsageError("--" + k + " takes no value");
    }
    const std::string k = long_name(a.back());
    throw UsageError("--" + (k.empty() ? std::string("?") : k) + " needs a value");
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  for (const auto& s : app.remaining()) {
    if (s == "--") continue;  // CLI11 keeps the end-of-options mark among the extras
    const std::string k = long_name(s);
    throw UsageError("unknown option '--" + (k.empty() ? s : k) + "'");
  }
  for (const auto& p : positional) out.positional.push_back(unmark(p));
  return out;
}

}  // namespace

Args parse(const std::vector<std::string>& a, const std::string& command) {
  const CommandSpec& spec = command_spec(command);
  std::vector<std::string> flags, valued;
  for (const auto& o : spec.options) (o.value.empty() ? flags : valued).push_back(o.name);
  Args out = parse_lists(a, flags, valued);
  for (const auto& o : spec.options) {
    if (o.choices.empty()) continue;
    const auto r = out.opts.equal_range(o.name);
    for (auto it = r.first; it != r.second; ++it)
      if (std::find(o.choices.begin(), o.choices.end(), it->second) == o.choices.end())
        throw UsageError("--" + o.name + " is one of " + o.value + ", not '" + it->second + "'");
  }
  out.command = command;
  return out;
}

}  // namespace cli
