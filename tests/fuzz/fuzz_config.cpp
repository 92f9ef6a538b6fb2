// Configuration parsing and validation, as `cellscope-cli validate CONFIG --set ...` does it.
// Input: zero or more --set strings, one per line, then a line "----", then the config JSON
// (no "----" line: the whole input is the config). Checked beyond "no crash":
//  * a config that validates resolves, and its resolution validates again and resolves to itself;
//  * load_and_resolve agrees with validate_config.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "config/json.h"
#include "config/schema.h"
#include "fuzz_common.h"
#include "util/error.h"

static void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz finding: %s\n", what);
    std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t sep = in.find("\n----\n");
  std::vector<std::string> sets;
  std::string doc = in;
  if (sep != std::string::npos) {
    doc = in.substr(sep + 6);
    size_t pos = 0;
    const std::string head = in.substr(0, sep);
    while (pos <= head.size() && sets.size() < 16) {
      size_t nl = head.find('\n', pos);
      if (nl == std::string::npos) nl = head.size();
      sets.push_back(head.substr(pos, nl - pos));
      pos = nl + 1;
    }
  }
  csfuzz::expect_only_user_errors([&] {
    cs::json cfg;
    try {
      cfg = cs::parse_json(doc, "'fuzz.json'");
    } catch (const cs::json::parse_error&) {
      return;  // the CLI's load_config_arg turns this into "'<file>' is not valid JSON: ..."
    }
    for (const auto& s : sets) cs::apply_override(cfg, s);
    const auto errs = cs::validate_config(cfg);
    bool threw = false;
    cs::json resolved;
    try {
      resolved = cs::load_and_resolve(cfg);
    } catch (const cs::UserError&) {
      threw = true;
    }
    check(threw == !errs.empty(), "load_and_resolve and validate_config disagree");
    if (threw) return;
    (void)resolved.dump();
    check(cs::validate_config(resolved).empty(), "a resolved config does not validate");
    check(cs::resolve_config(resolved) == resolved, "resolving a resolved config changes it");
  });
  return 0;
}
