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
  return json::parse(text, limit);
}

}  // namespace cs
