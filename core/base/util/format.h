// Human-readable formatting shared by the CLI and the GUI (no Qt here).
#pragma once
#include <string>

namespace cs {

// Seconds as "42s", "3m07s" or "2h05m"; "?" for negative or non-finite values.
std::string format_duration(double seconds);

}  // namespace cs
