#include "util/format.h"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace cs {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = static_cast<long>(s + 0.5);
  std::ostringstream o;
  if (t >= 3600) o << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else if (t >= 60) o << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  else o << t << "s";
  return o.str();
}

}  // namespace cs
