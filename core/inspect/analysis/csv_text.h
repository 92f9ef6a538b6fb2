// Text helpers shared by the analyses' CSV/JSON exports (results.cpp, kind_*.cpp).
#pragma once
#include <cmath>
#include <sstream>
#include <string>

namespace cs::analysis_text {

// One CSV field: quoted (with doubled quotes) only when it holds a comma, quote or line break.
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

// A number with 9 significant digits; "" for NaN/Inf (an empty CSV cell).
inline std::string num(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream o;
  o.precision(9);
  o << v;
  return o.str();
}

}  // namespace cs::analysis_text
