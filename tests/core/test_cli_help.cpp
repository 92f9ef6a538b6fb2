// cellscope-cli's command line: -h and --help on every command and subcommand (the commands
// read from the top-level help, so a new one is covered without editing this file), and the
// option parser (app/cli/args.cpp, CLI11) as the commands see it.

#include <gtest/gtest.h>

#include <stdio.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli.h"  // cli::parse, cli::Args
#include "harness.h"
#include "options.h"  // cli::command_specs

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

// Runs PROGRAM ARGS (stdout captured, stderr into it) with ENV (NAME=VALUE words) before it; the exit status.
int run_program(const std::string& program, const std::vector<std::string>& args, std::string* out,
                const std::string& env = "") {
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string cmd = env.empty() ? "" : "env " + env + " ";
  cmd += quote(program);
  for (const auto& a : args) cmd += " " + quote(a);
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return -1;
  out->clear();
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out->append(buf, n);
  const int st = ::pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
}

}  // namespace

// cellscope-cli is a launcher (app/cli/launcher/launcher.cpp) that answers help and the version
// itself, without LibTorch, and executes cellscope-cli-full beside it for the rest. A copy of it
// alone in a folder (no cellscope-cli-full there) must answer every command's and subcommand's
// help, the bare command, --version and `presets --names` exactly as the program does (the same text,
// the same exit status), load no LibTorch library, and for anything else (analyze --help, whose kinds come from
// the core's registry, and any work) say which program it could not run, with exit 127.
TEST(CliHelp, theLauncherAnswersHelpWithoutLibTorchAsTheProgramDoes) {
  namespace fs = std::filesystem;
  const std::string full = fs::path(cstest::cli_path()).parent_path().string() + "/cellscope-cli-full";
  ASSERT_TRUE(fs::exists(full)) << full;
  const std::string alone = cstest::temp_dir() + "/launcher_alone/cellscope-cli";
  fs::create_directories(fs::path(alone).parent_path());
  fs::copy_file(cstest::cli_path(), alone, fs::copy_options::overwrite_existing);
  std::string libs;
  ASSERT_EQ(run_program(alone, {}, &libs, "LD_TRACE_LOADED_OBJECTS=1"), 0) << libs;
  ASSERT_TRUE(cstest::contains(libs, "libc.so")) << libs;
  ASSERT_FALSE(cstest::contains(libs, "libtorch") || cstest::contains(libs, "libc10")) << libs;

  // Every command's and subcommand's help from the copy alone (milliseconds each).
  std::vector<std::vector<std::string>> lines = {{"--help"}, {"-h"}, {"help"}, {"--version"}};
  for (const auto& c : listed_commands()) {
    if (c == "analyze") continue;
    for (const char* h : {"--help", "-h"}) {
      std::string help;
      ASSERT_EQ(run_program(alone, {c, h}, &help), 0) << c << " " << h << ": " << help;
      ASSERT_TRUE(cstest::contains(help, "usage: cellscope-cli " + c)) << c << " " << h << ": " << help;
      for (const auto& s : usage_subcommands(c, help)) lines.push_back({c, s, h});
    }
  }
  for (const auto& l : lines) {
    std::string out;
    ASSERT_EQ(run_program(alone, l, &out), 0) << l[0] << " " << out;
    ASSERT_TRUE(cstest::contains(out, l.size() == 1 ? "cellscope-cli" : "usage: cellscope-cli " + l[0])) << out;
  }
  ASSERT_GE(lines.size(), 24u);
  // And as the program answers them, the same text and exit status: a sample of each kind (each
  // run of the program loads LibTorch): plain, with a path filled in, a subcommand's, a composite,
  // a bare command that needs more (exit 2), help after other words, the version.
  const std::vector<std::vector<std::string>> sample = {
      {},
      {"--version"},
      {"train", "quick-gru", "--set", "training.steps=3", "--help"},
      {"datasets", "show", "-h"},
      {"export", "--help"},
      {"sweep"},
      {"cloze", "rerank", "--help"},
      {"presets", "--names"}};  // bash completion's CONFIG list, answered by the launcher too
  for (const auto& l : sample) {
    std::string what;
    for (auto& w : l) what += w + " ";
    std::string a, b;
    const int ra = run_program(alone, l, &a), rb = run_program(full, l, &b);
    EXPECT_EQ(ra, rb) << what << a;
    EXPECT_EQ(ra, l.size() <= 1 && (l.empty() || l[0] == "sweep") ? 2 : 0) << what;
    EXPECT_EQ(a, b) << what;
    if (l.size() == 2 && l[0] == "presets") {
      EXPECT_TRUE(cstest::contains(a, "quick-gru\n")) << a;
    }
  }
  for (const std::vector<std::string>& work :
       {std::vector<std::string>{"analyze", "--help"}, std::vector<std::string>{"info"},
        std::vector<std::string>{"validate", "--", "--help"}}) {
    std::string out;
    EXPECT_EQ(run_program(alone, work, &out), 127) << work[0] << out;
    EXPECT_TRUE(cstest::contains(
        out, "cannot run " + fs::path(alone).parent_path().string() + "/cellscope-cli-full: No such file or directory"))
        << out;
  }
  // Beside the program, the launcher runs it with the same arguments and exit status.
  std::string out;
  ASSERT_EQ(run_program(cstest::cli_path(), {"analyze", "--help"}, &out), 0) << out;
  ASSERT_TRUE(cstest::contains(out, "kinds:") && cstest::contains(out, "relevance")) << out;
  // every kind's name stands alone on its line, before its text (a name wider than the column ran into it:
  // "channel_attention_decoderthe decoder's ...")
  for (const char* kind : {"relevance", "channel_attention", "channel_attention_decoder", "gate_histogram"}) {
    bool alone_on_line = false;
    for (const std::string& line : cstest::split(out, '\n', true))
      if (line.rfind(std::string("  ") + kind, 0) == 0) {
        const size_t end = 2 + std::string(kind).size();
        alone_on_line = alone_on_line || line.size() == end || line[end] == ' ';
      }
    EXPECT_TRUE(alone_on_line) << kind << "\n" << out;
  }
  ASSERT_EQ(run_program(cstest::cli_path(), {"validate", "--", "--help"}, &out), 2) << out;
  ASSERT_TRUE(cstest::contains(out, "'--help' is neither a config file nor a preset")) << out;
}

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

// `help CMD [SUB]` is CMD [SUB] --help; an unknown command is named with the command it was
// probably meant to be (a prefix, or within two edits), the usage on stdout, exit 2.
TEST(CliHelp, helpCommandAndUnknownCommands) {
  std::string out, err, want;
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"train"}, std::vector<std::string>{"sweep", "run"},
        std::vector<std::string>{"export", "tensorboard"}}) {
    std::vector<std::string> help = {"help"}, opt = words;
    help.insert(help.end(), words.begin(), words.end());
    opt.push_back("--help");
    ASSERT_EQ(cstest::run_cli(opt, &want, &err), 0) << err;
    ASSERT_EQ(cstest::run_cli(help, &out, &err), 0) << err;
    ASSERT_EQ(out, want) << words[0];
  }
  ASSERT_EQ(cstest::run_cli({"help", "analyze"}, &out, &err), 0) << err;  // answered by the program
  ASSERT_TRUE(cstest::contains(out, "kinds:")) << out;
  struct Case {
    std::string word, meant;
  };
  for (const Case& c : {Case{"trian", "train"}, Case{"expor", "export"}, Case{"swep", "sweep"},
                        Case{"dataset", "datasets"}, Case{"gen", "generate"}, Case{"zzzzzz", ""}, Case{"x", ""}}) {
    ASSERT_EQ(cstest::run_cli({c.word, "quick-gru"}, &out, &err), 2) << c.word;
    const std::string named = "cellscope-cli: unknown command '" + c.word + "'";
    ASSERT_TRUE(cstest::contains(err, c.meant.empty() ? named + "\n" : named + " (did you mean '" + c.meant + "'?)"))
        << c.word << ": " << err;
    ASSERT_TRUE(cstest::contains(out, "commands:")) << out;
  }
  ASSERT_EQ(cstest::run_cli({"help", "trian"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "did you mean 'train'?")) << err;
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
  ASSERT_EQ(cstest::run_cli({"validate", "-1"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "'-1' is neither a config file nor a preset")) << err;
  ASSERT_EQ(cstest::run_cli({"validate", "--", "-x"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "'-x' is neither a config file nor a preset")) << err;
  // Before "--", one dash and a letter is a mistyped option (there are no short options but -h),
  // named as such rather than taken for a second CONFIG.
  ASSERT_EQ(cstest::run_cli({"train", "quick-gru", "-x"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "unknown option '-x' (the only short option is -h")) << err;
  ASSERT_EQ(cstest::run_cli({"validate", "-json"}, &out, &err), 2);
  ASSERT_TRUE(cstest::contains(err, "unknown option '-json'")) << err;
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

namespace test_cli_help {

namespace {

// The command words a path's help is asked with: "sweep run" -> sweep run; "bench --peer" -> bench.
std::vector<std::string> help_words(const std::string& path) {
  std::vector<std::string> w;
  for (const auto& s : cstest::split(path, ' ', false))
    if (s.rfind("--", 0) != 0) w.push_back(s);
  return w;
}

// The rows of a help's options blocks ("options:" or "options of PATH:", then "  --name ...").
std::set<std::string> listed_options(const std::string& help) {
  std::set<std::string> names;
  bool in_block = false;
  const std::regex row("^  --([a-z][a-z0-9-]*)( .*)?$");
  for (const auto& line : cstest::split(help, '\n', true)) {
    if (line == "options:" || (line.rfind("options of ", 0) == 0 && line.back() == ':')) {
      in_block = true;
      continue;
    }
    if (!in_block) continue;
    std::smatch m;
    if (std::regex_match(line, m, row)) names.insert(m[1]);
    else if (line.empty() || line[0] != ' ') in_block = false;
  }
  return names;
}

}  // namespace

// One declaration per option (app/cli/options.cpp): each command's help lists exactly the options
// its declarations do, every option its usage lines show is declared, and the parser accepts
// exactly the declared ones, refuses a value outside a closed set, and a command that reads an
// option it does not declare fails loudly. The drift the issue found (generate, cloze scores and
// cloze rerank accepted a --threads their help did not know) cannot recur.
TEST(CliHelp, everyOptionIsDeclaredOnceAndListedWhereItIsParsed) {
  std::map<std::string, std::set<std::string>> declared_by_command;  // first word -> every option
  size_t options = 0;
  for (const auto& spec : cli::command_specs()) {
    const auto words = help_words(spec.path);
    std::vector<std::string> ask = words;
    ask.push_back("--help");
    std::string out, err;
    ASSERT_EQ(cstest::run_cli(ask, &out, &err), 0) << spec.path << ": " << err;
    const std::set<std::string> listed = listed_options(out);
    for (const auto& o : spec.options) {
      declared_by_command[words[0]].insert(o.name);
      ++options;
      ASSERT_EQ(listed.count(o.name), o.hidden ? listed.count(o.name) : 1u)
          << spec.path << ": --" << o.name << " is declared but its help does not list it\n"
          << out;
      // The parser takes it: a flag alone, a valued option with a value (a closed set's first).
      std::vector<std::string> a = {"--" + o.name};
      if (!o.value.empty()) a.push_back(o.choices.empty() ? "1" : o.choices.front());
      const cli::Args args = cli::parse(a, spec.path);
      ASSERT_TRUE(args.has(o.name)) << spec.path << " --" << o.name;
      if (!o.choices.empty()) {
        try {
          cli::parse({"--" + o.name, "no-such-choice"}, spec.path);
          FAIL() << spec.path << " --" << o.name << " took a value outside " << o.value;
        } catch (const cli::UsageError& e) {
          ASSERT_TRUE(cstest::contains(e.what(), "--" + o.name + " is one of " + o.value + ", not 'no-such-choice'"))
              << e.what();
        }
      }
    }
    ASSERT_THROW(cli::parse({"--no-such-option"}, spec.path), cli::UsageError) << spec.path;
  }
  ASSERT_GE(options, 150u);
  // Every --option the usage lines of a command's help show is declared for that command.
  for (const auto& [cmd, names] : declared_by_command) {
    std::string out, err;
    ASSERT_EQ(cstest::run_cli({cmd, "--help"}, &out, &err), 0) << cmd << ": " << err;
    bool usage = false;
    for (const auto& line : cstest::split(out, '\n', true)) {
      const bool cont =
          usage && (line.rfind("  ", 0) == 0) && line.find_first_not_of(' ') != std::string::npos &&
          (line[line.find_first_not_of(' ')] == '[' || line.find("cellscope-cli " + cmd) != std::string::npos);
      usage = line.rfind("usage: cellscope-cli", 0) == 0 || cont;
      if (!usage) continue;
      const std::regex opt("--([a-z][a-z0-9-]*)");
      for (auto it = std::sregex_iterator(line.begin(), line.end(), opt); it != std::sregex_iterator(); ++it)
        if ((*it)[1] != "help") {  // -h / --help: every command's, answered before any parser
          ASSERT_EQ(names.count((*it)[1]), 1u)
              << cmd << ": the usage line shows --" << (*it)[1] << ", which no declaration of '" << cmd << "' has:\n"
              << line;
        }
    }
  }
  // The drift the issue found, by name.
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"generate"}, {"cloze", "scores"}, {"cloze", "rerank"}}) {
    std::vector<std::string> ask = words;
    ask.push_back("--help");
    std::string out, err;
    ASSERT_EQ(cstest::run_cli(ask, &out, &err), 0) << err;
    ASSERT_EQ(listed_options(out).count("threads"), 1u) << words[0] << "\n" << out;
  }
  // Reading an undeclared option is a programming error, not a silent default.
  const cli::Args info = cli::parse({"--json"}, "info");
  ASSERT_THROW(info.get("steps"), std::logic_error);
  ASSERT_THROW(info.has("steps"), std::logic_error);
  ASSERT_THROW(cli::command_spec("no such command"), std::logic_error);
  // `help --options`: one line per listed option, what completion reads.
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"help", "--options"}, &out, &err), 0) << err;
  ASSERT_TRUE(cstest::contains(out, "train\t--dist-backend\tgloo|nccl|auto\n")) << out;
  ASSERT_TRUE(cstest::contains(out, "sweep run\t--jobs\tK\n")) << out;
  ASSERT_FALSE(cstest::contains(out, "--peer-child")) << "a hidden option is listed";
}

}  // namespace test_cli_help
