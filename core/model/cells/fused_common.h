// Shared switch of the hand-written fast paths (fused_*.cpp): the environment variable
// CELLSCOPE_FAST=0 turns every fast path off (the autograd reference runs instead), e.g. to
// measure the speed-up (`CELLSCOPE_FAST=0 cellscope-cli bench ...`) or to rule a fast path out
// when a result looks wrong. Any other value, or unset, leaves them on.
#pragma once

namespace cs {

// False when CELLSCOPE_FAST is set to "0" (read at every call, so a test may change it).
bool fast_paths_enabled();

}  // namespace cs
