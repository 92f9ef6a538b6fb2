// cellscope-cli generate: text from a char-LM or word-LM run, with the model's
// probability of every token shown as shading (terminal colours, HTML) or listed (JSON).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "data/utf8.h"
#include "tasks/generate.h"
#include "tasks/task.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/sysinfo.h"

namespace cli {

namespace {

// 0 (sure) .. 5 (surprised): six steps of the surprisal shade (cs::surprisal_shade).
int shade_step(double p) { return static_cast<int>(std::lround(cs::surprisal_shade(p) * 5.0)); }

std::string shown(const cs::Generation& g, const cs::GeneratedToken& t, bool first) {
  if (g.task != "word_lm") return t.text;
  if (t.text == "<eos>") return "\n";
  return first ? t.text : " " + t.text;
}

std::string ansi(const cs::Generation& g) {
  static const int ramp[6] = {231, 224, 217, 210, 209, 203};  // xterm-256 backgrounds, white to red
  std::string s;
  bool line_start = true;
  for (auto& t : g.tokens) {
    std::string txt = shown(g, t, line_start);
    line_start = txt == "\n" || (!txt.empty() && txt.back() == '\n');
    if (txt == "\n") {
      s += "\n";
      continue;
    }
    s += "\033[30;48;5;" + std::to_string(ramp[shade_step(t.prob)]) + (t.from_seed ? ";4" : "") + "m" + txt + "\033[0m";
  }
  return s + "\n";
}

double parse_double(const Args& a, const std::string& k, double def) {
  if (!a.has(k)) return def;
  try {
    size_t used = 0;
    const std::string v = a.get(k);
    double x = std::stod(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    throw UsageError("--" + k + " expects a number, got '" + a.get(k) + "'");
  }
}

}  // namespace

int cmd_generate(const std::vector<std::string>& a) {
  auto args = parse(a, "generate");
  if (!args.positional.empty()) throw UsageError("unexpected argument '" + args.positional[0] + "'");
  apply_script_option(args);
  if (!args.has("run")) throw UsageError("--run DIR is required");
  cs::set_threads(static_cast<int>(args.get_int("threads", 0)));
  cs::GenerateOptions o;
  o.seed_text = args.get("seed-text");
  {
    const size_t bad =
        cs::utf8_validate(reinterpret_cast<const unsigned char*>(o.seed_text.data()), o.seed_text.size(), nullptr);
    if (bad != std::string::npos)
      throw UsageError("--seed-text is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
  }
  o.length = args.get_int("length", 200);
  o.temperature = parse_double(args, "temperature", 1.0);
  const long long seed = args.get_int("seed", 1);
  if (seed < 0) throw UsageError("--seed must be >= 0");
  o.seed = static_cast<uint64_t>(seed);
  o.top_k = args.get_int("top-k", 0);
  o.allow_unk = args.has("allow-unk");
  auto task = cs::load_run_task(args.get("run"), args.get("checkpoint", "best"));
  auto g = cs::generate(*task, o);
  if (g.unknown_seed_tokens > 0)
    std::cerr << "note: " << g.unknown_seed_tokens
              << " token(s) of the seed text are not in the run's vocabulary (fed as <unk>)\n";
  const std::string out = args.get("out");
  auto ends = [&](const std::string& ext) {
    return out.size() > ext.size() && out.substr(out.size() - ext.size()) == ext;
  };
  if (!out.empty()) {
    if (ends(".json")) cs::atomic_write(out, g.to_json().dump(2) + "\n");
    else if (ends(".html"))
      cs::atomic_write(out, g.to_html("Run: " + args.get("run") + ", temperature " + std::to_string(o.temperature) +
                                      ", seed " + std::to_string(o.seed) + "."));
    else if (ends(".txt")) cs::atomic_write(out, g.text() + "\n");
    else throw UsageError("--out must end in .txt, .json or .html");
    std::cout << "wrote " << out << "\n";
    return 0;
  }
  if (args.has("json")) {
    std::cout << g.to_json().dump(2) << "\n";
    return 0;
  }
  // --color forces it; else a terminal gets colour unless NO_COLOR is set to anything (no-color.org).
  const char* no_color = std::getenv("NO_COLOR");
  const bool color = args.has("color") || (!args.has("no-color") && !(no_color && *no_color) && isatty(STDOUT_FILENO));
  std::cout << (color ? ansi(g) : g.text() + "\n");
  const double bits = g.generated_bits_per_token();
  if (std::isfinite(bits))
    std::cerr << "(" << (g.task == "word_lm" ? "words" : "characters") << " generated: " << o.length << ", mean "
              << bits << " bits per token under the model)\n";
  return 0;
}

}  // namespace cli
