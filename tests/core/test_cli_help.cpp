// cellscope-cli's command line: -h and --help on every command and subcommand (the commands
// read from the top-level help, so a new one is covered without editing this file), and the
// option parser (app/cli/args.cpp, CLI11) as the commands see it.

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "harness.h"

namespace test_cli_help {  // this file's own names in a unity build (tests/README.md)

using json = nlohmann::json;

namespace {

// The commands the top-level help lists ("  name   what it does" under "commands:").
std::vector<std::string> listed_commands() {
  std::string out, err;
  EXPECT_EQ(cstest::run_cli({"--help"}, &out, &err), 0) << err;
  std::vector<std::string> cmds;
  bool in_list = false;
  const std::regex row("^  ([a-z][a-z0-9-]*) +\\S.*");
  for (const auto& line : cstest::split(out, '\n', true)) {
    if (line == "commands:") in_list = true;
    std::smatch m;
    if (in_list && std::regex_match(line, m, row)) cmds.push_back(m[1]);
  }
  return cmds;
}

// The subcommands a command's usage lines name: "cellscope-cli CMD SUB ..." with SUB a lower-case
// word (not CONFIG, RUN_DIR, an option or [...]).
std::set<std::string> usage_subcommands(const std::string& cmd, const std::string& help) {
  std::set<std::string> subs;
  const std::regex use("cellscope-cli " + cmd + " ([a-z][a-z0-9-]*)\\b(?!-)");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), use); it != std::sregex_iterator(); ++it)
    subs.insert((*it)[1]);
  return subs;
}

// Runs ARGS -h and ARGS --help: exit 0, the usage line on stdout, nothing on stderr; returns the help.
std::string expect_help(const std::vector<std::string>& args, const std::string& usage) {
  std::string help;
  for (const char* h : {"-h", "--help"}) {
    std::vector<std::string> a = args;
    a.push_back(h);
    std::string out, err;
    std::string what;
    for (auto& s : a) what += s + " ";
    EXPECT_EQ(cstest::run_cli(a, &out, &err, 60000), 0) << what << err;
    EXPECT_TRUE(cstest::contains(out, "usage: ") && cstest::contains(out, usage)) << what << "\n" << out;
    EXPECT_TRUE(err.empty()) << what << err;
    if (!help.empty()) {
      EXPECT_EQ(out, help) << what << "differs from " << h;
    }
    help = out;
  }
  return help;
}

}  // namespace

TEST(CliHelp, everyCommandAndSubcommandAnswersHAndHelp) {
  const auto cmds = listed_commands();
  ASSERT_GE(cmds.size(), 16u) << "the top-level help lists too few commands";
  for (const char* must : {"train", "decode", "sweep", "cloze", "export", "datasets"})
    ASSERT_NE(std::find(cmds.begin(), cmds.end(), must), cmds.end()) << must;
  int subcommands = 0;
  for (const auto& c : cmds) {
    const std::string help = expect_help({c}, "cellscope-cli " + c);
    for (const auto& s : usage_subcommands(c, help)) {
      expect_help({c, s}, "cellscope-cli " + c + " " + s);
      ++subcommands;
    }
  }
  // sweep run/slurm/status/table/list, export tensorboard, cloze scores/rerank, datasets show/build
  ASSERT_GE(subcommands, 10);
}

TEST(CliHelp, helpAfterDoubleDashIsAnArgument) {
  std::string out, err;
  // After "--", --help is a CONFIG name, not a request for help.
  ASSERT_EQ(cstest::run_cli({"validate", "--", "--help"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "'--help' is neither a config file nor a preset")) << err;
  ASSERT_FALSE(cstest::contains(out, "usage:")) << out;
}

TEST(CliHelp, optionForms) {
  std::string out, err;
  // --key VALUE, --key=VALUE, repeated keys applied in order (the last --set of a key wins).
  ASSERT_EQ(cstest::run_cli({"validate", "quick-gru", "--set", "model.hidden=12", "--set=model.hidden=13", "--set",
                             "model.embed=9", "--json"},
                            &out, &err),
            0)
      << err;
  json j = cstest::json_object(out);
  ASSERT_EQ(j["resolved"]["model"]["hidden"], 13) << out;
  ASSERT_EQ(j["resolved"]["model"]["embed"], 9) << out;
  // A value that starts with '-' is the option's value (a negative number, a word).
  ASSERT_EQ(cstest::run_cli({"fetch", "--dest", "-1", "--dry-run"}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(out, "dest: -1\n")) << out;
  ASSERT_EQ(cstest::run_cli({"validate", "quick-gru", "--set", "--json"}, &out, &err), 2);  // --json is --set's value
  ASSERT_TRUE(cstest::contains(err, "--set '--json': expected SECTION.KEY=VALUE")) << err;
  ASSERT_EQ(cstest::run_cli({"fetch", "--dest=-x", "--dry-run"}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(out, "dest: -x\n")) << out;
  ASSERT_EQ(cstest::run_cli({"fetch", "--dest=", "--dry-run"}, &out, &err), 0) << err;  // the empty value
  ASSERT_TRUE(cstest::contains(out, "dest: \n")) << out;
  ASSERT_EQ(cstest::run_cli({"validate", "quick-gru", "--set", "training.lr=-1"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "training.lr")) << err;
  // A lone "-" and words starting with one '-' are positional; so is everything after "--".
  ASSERT_EQ(cstest::run_cli({"validate", "-"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "'-' is neither a config file nor a preset")) << err;
  ASSERT_EQ(cstest::run_cli({"validate", "-x"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "'-x' is neither a config file nor a preset")) << err;
  ASSERT_EQ(cstest::run_cli({"validate", "--json", "--", "--set"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "'--set' is neither a config file nor a preset")) << err;
  ASSERT_EQ(cstest::run_cli({"validate", "--", "quick-gru"}, &out, &err), 0) << err;
  ASSERT_EQ(out, "valid\n");
}

TEST(CliHelp, usageErrorsNameTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"validate", "quick-gru", "--bogus"}, "unknown option '--bogus'"},
      {{"validate", "quick-gru", "--bogus=3"}, "unknown option '--bogus'"},
      {{"validate", "quick-gru", "--json=yes"}, "--json takes no value"},
      {{"validate", "quick-gru", "--json="}, "--json takes no value"},
      {{"validate", "quick-gru", "--set"}, "--set needs a value"},
      {{"fetch", "--dry-run", "--dest"}, "--dest needs a value"},
      {{"eval", "somewhere", "--threads", "x"}, "--threads expects an integer, got 'x'"},
  };
  for (const auto& c : cases) {
    std::string out, err;
    ASSERT_EQ(cstest::run_cli(c.args, &out, &err), 2) << c.message << ": " << err;
    ASSERT_TRUE(cstest::contains(err, c.message)) << err;
    ASSERT_TRUE(cstest::contains(err, "(see: cellscope-cli " + c.args[0] + " --help)")) << err;
  }
}

}  // namespace test_cli_help
