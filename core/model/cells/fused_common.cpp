#include "cells/fused_common.h"

#include <cstdlib>
#include <cstring>

namespace cs {

bool fast_paths_enabled() {
  const char* v = std::getenv("CELLSCOPE_FAST");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace cs
