#include "config/json.h"

#include "util/error.h"

namespace cs {

json parse_json(const std::string& text, const std::string& what) {
  // The parser itself is iterative; the callback sees each value's depth before it is stored,
  // so at most kMaxJsonDepth levels are ever built.
  const json::parser_callback_t limit = [&what](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw UserError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return true;
  };
  try {
    return json::parse(text, limit);
  } catch (const json::out_of_range& e) {
    // A number too large for a double (1e400) is not a parse_error but out_of_range 406, which
    // no caller caught: exit 1 with library text (found by tests/fuzz/fuzz_config).
    throw UserError(what + ": a number is out of range (" + e.what() + ")");
  }
}

}  // namespace cs
