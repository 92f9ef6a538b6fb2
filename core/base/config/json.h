// The JSON type of every config document, run file and result (nlohmann::json).
// A leaf header: include it instead of config/schema.h when only `json` is needed.
#pragma once
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

namespace cs {

using json = nlohmann::json;

// Deepest nesting any JSON the program reads may have. The deepest documents Cellscope writes
// (configs, sweep specs, results) nest under 10 levels; 64 leaves room for hand-written ones.
inline constexpr int kMaxJsonDepth = 64;

// Every JSON the program reads goes through here: like json::parse (a syntax error still throws
// json::parse_error, which callers turn into their own message), but a document nested deeper than
// kMaxJsonDepth is refused with UserError("<what>: JSON nested deeper than 64 levels") while it is
// being parsed. Unbounded nesting crashed validation and training with a stack overflow: the
// recursive code that walks a value (dump, comparison, our validators) runs out of stack at
// 100,000 levels.
// A number beyond double's range (1e400), which the library reports as json::out_of_range with
// no position, is a UserError("<what>: <JSON path>: number overflow parsing '1e400' ...").
json parse_json(const std::string& text, const std::string& what);

// The message of a JSON library exception without its "[json.exception.parse_error.101] parse
// error at" prefix: "line 1, column 5: invalid literal; last read: 'x'". For the one-line
// messages that name a file.
std::string json_error_text(const std::exception& e);

}  // namespace cs
