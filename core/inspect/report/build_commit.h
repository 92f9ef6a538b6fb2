// The git commit this program was built from (short hash, "-dirty" when tracked files differed
// from it, "" outside a git checkout): written at build time, not at configure time, so a build
// after a commit pins the new commit without re-running CMake (report manifests, `report --check`).
#pragma once

namespace cs {
const char* build_git_commit();
}  // namespace cs
