// The JSON type of every config document, run file and result (nlohmann::json).
// A leaf header: include it instead of config/schema.h when only `json` is needed.
#pragma once
#include <nlohmann/json.hpp>

namespace cs {

using json = nlohmann::json;

}  // namespace cs
