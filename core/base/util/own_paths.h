// Paths a command may remove: only what it made itself (issue 52's rule: no command removes, renames
// over or truncates a path it did not create in this invocation or that is not provably its own).
#pragma once
#include <string>

namespace cs {

// A new, empty directory beside `target` (same parent, so a rename onto `target` stays on one file
// system), named `.<name of target>.<what>-XXXXXX` with a suffix unique to this call (mkdtemp), mode
// 0755: a user's `target.tmp`, or a second command writing the same target at the same time, is never
// touched. Throws UserError naming the folder when it cannot be made. Defined in error.cpp.
std::string make_temp_dir_beside(const std::string& target, const std::string& what = "tmp");

// Puts the finished folder `fresh` (one of make_temp_dir_beside's) in place of `target`. Where `target`
// exists (the caller has checked that it is empty or provably its own earlier result), it is first
// renamed onto a new empty folder of this call's own (`.<name>.old-XXXXXX`), which is removed once
// `fresh` is in place. Defined in error.cpp.
void replace_dir_with(const std::string& fresh, const std::string& target);

}  // namespace cs
