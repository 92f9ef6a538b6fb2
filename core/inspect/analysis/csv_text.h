// Text helpers shared by the analyses' CSV/JSON exports (results.cpp, kind_*.cpp).
#pragma once
#include <cmath>
#include <sstream>
#include <string>

#include "util/csv.h"

namespace cs::analysis_text {

// One CSV field (RFC 4180, util/csv.h).
using cs::csv_field;

// A number with 9 significant digits; "" for NaN/Inf (an empty CSV cell).
inline std::string num(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream o;
  o.precision(9);
  o << v;
  return o.str();
}

}  // namespace cs::analysis_text
